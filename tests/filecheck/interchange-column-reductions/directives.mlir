// RUN: tilegrad opt %s -p 'interchange-column-reductions{directives="Reorder(stage=0, order=(\"r0\", 1)); Reorder(stage=1, order=(1, \"r0\"))"}' | filecheck %s

// The directives option: two stages, each a column sum (the sum's loop, reduction axis 0, inside the
// column loop, axis 1). Stage 0's Reorder puts the sum's loop 'r0' outside the column loop: it
// accumulates a stack row, as the pass decides by itself. Stage 1's names the loops in the order they
// have: its sum is left walking the column.

builtin.module {
  func.func @sums_stage0(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %c1 step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
          %v = memref.load %x[%r, %j] : memref<?x?xf32>
          %a = arith.addf %acc, %v : f32
          scf.yield %a : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
  func.func @sums_stage1(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %c1 step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
          %v = memref.load %x[%r, %j] : memref<?x?xf32>
          %a = arith.addf %acc, %v : f32
          scf.yield %a : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @sums_stage0(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %c1 step %c1 {
// CHECK-NEXT:       %1 = arith.constant 512 : index
// CHECK-NEXT:       scf.for %2 = %c0 to %m step %1 {
// CHECK-NEXT:         %3 = arith.addi %2, %1 : index
// CHECK-NEXT:         %4 = arith.minsi %3, %m : index
// CHECK-NEXT:         %5 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %6 = %2 to %4 step %5 {
// CHECK-NEXT:           %7 = arith.subi %6, %2 : index
// CHECK-NEXT:           memref.store %zero, %0[%7] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         scf.for %8 = %c0 to %n step %c1 {
// CHECK-NEXT:           scf.for %9 = %2 to %4 step %5 {
// CHECK-NEXT:             %10 = arith.subi %9, %2 : index
// CHECK-NEXT:             %11 = memref.load %0[%10] : memref<512xf32>
// CHECK-NEXT:             %v = memref.load %x[%8, %9] : memref<?x?xf32>
// CHECK-NEXT:             %a = arith.addf %11, %v : f32
// CHECK-NEXT:             memref.store %a, %0[%10] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         scf.for %j = %2 to %4 step %c1 {
// CHECK-NEXT:           %12 = arith.subi %j, %2 : index
// CHECK-NEXT:           %s = memref.load %0[%12] : memref<512xf32>
// CHECK-NEXT:           memref.store %s, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @sums_stage1(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %c1 step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %m step %c1 {
// CHECK-NEXT:         %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %v = memref.load %x[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:           %a = arith.addf %acc, %v : f32
// CHECK-NEXT:           scf.yield %a : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
