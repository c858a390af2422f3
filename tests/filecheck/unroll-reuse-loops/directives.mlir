// RUN: tilegrad opt %s -p 'unroll-reuse-loops{directives="UnrollJam(stage=0, axis=1, factor=2)"}' | filecheck %s

// The directives option: the j loop UnrollJam names (stage 0, axis 1) runs 2 at a time, by the directive's
// factor, not the pass's unroll option (8); the row loop around it (axis 0), which the directives do not
// name, stays one row at a time (no jam_rows).
builtin.module {
  func.func @logits(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %k = memref.dim %x, %c1 : memref<?x?xf32>
    %v = memref.dim %w, %c0 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %v step %c1 {
        %s = scf.for %r = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
          %a = memref.load %x[%i, %r] : memref<?x?xf32>
          %b = memref.load %w[%j, %r] : memref<?x?xf32>
          %p = arith.mulf %a, %b : f32
          %t = arith.addf %acc, %p : f32
          scf.yield %t : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @logits(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %v = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %rows step %c1 {
// CHECK-NEXT:       %0 = arith.constant 2 : index
// CHECK-NEXT:       %1 = arith.subi %v, %c0 : index
// CHECK-NEXT:       %2 = arith.divui %1, %0 : index
// CHECK-NEXT:       %3 = arith.muli %2, %0 : index
// CHECK-NEXT:       %4 = arith.addi %c0, %3 : index
// CHECK-NEXT:       %5 = arith.constant 1 : index
// CHECK-NEXT:       %6 = arith.subi %v, %5 : index
// CHECK-NEXT:       scf.for %7 = %c0 to %v step %0 {
// CHECK-NEXT:         %s = scf.for %r = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %a = memref.load %x[%i, %r] : memref<?x?xf32>
// CHECK-NEXT:           %b = memref.load %w[%7, %r] : memref<?x?xf32>
// CHECK-NEXT:           %p = arith.mulf %a, %b : f32
// CHECK-NEXT:           %t = arith.addf %acc, %p : f32
// CHECK-NEXT:           scf.yield %t : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s, %out[%i, %7] : memref<?x?xf32>
// CHECK-NEXT:         %8 = arith.constant 1 : index
// CHECK-NEXT:         %9 = arith.addi %7, %8 : index
// CHECK-NEXT:         %10 = arith.minsi %9, %6 : index
// CHECK-NEXT:         %s_1 = scf.for %r_1 = %c0 to %k step %c1 iter_args(%acc_1 = %zero) -> (f32) {
// CHECK-NEXT:           %a_1 = memref.load %x[%i, %r_1] : memref<?x?xf32>
// CHECK-NEXT:           %b_1 = memref.load %w[%10, %r_1] : memref<?x?xf32>
// CHECK-NEXT:           %p_1 = arith.mulf %a_1, %b_1 : f32
// CHECK-NEXT:           %t_1 = arith.addf %acc_1, %p_1 : f32
// CHECK-NEXT:           scf.yield %t_1 : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s_1, %out[%i, %10] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
