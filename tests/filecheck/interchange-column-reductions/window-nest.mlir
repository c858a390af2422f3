// RUN: tilegrad opt %s -p 'interchange-column-reductions{directives="Reorder(stage=0, order=(\"r0\", 1))"}' | filecheck %s

// A convolution's sum nest, named by a Reorder with the sums outside: y[o] = Σ_c Σ_j x[c, o - 1 + j] w[c, j]
// (x's column read through a clamp). Its loops, c then j, run around a row loop over the tile: every
// term added to the one stack row, in c, j order (no partial sum per c); then y reads the row. Without
// the directive the pass leaves this nest as it is (tilegrad opt -p 'interchange-column-reductions'):
// its level c is in no range test, a contraction (window-sum-by-itself.mlir: a window's sum).

builtin.module {
  func.func @window(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %y: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %ch = memref.dim %x, %c0 : memref<?x?xf32>
    %d = memref.dim %x, %c1 : memref<?x?xf32>
    %s = memref.dim %w, %c1 : memref<?x?xf32>
    %n = memref.dim %y, %c0 : memref<?xf32>
    %top = arith.subi %d, %c1 : index
    scf.for %t = %c0 to %c1 step %c1 {
      scf.for %o = %c0 to %n step %c1 {
        %sum = scf.for %c = %c0 to %ch step %c1 iter_args(%acc = %zero) -> (f32) {
          %part = scf.for %j = %c0 to %s step %c1 iter_args(%acc2 = %zero) -> (f32) {
            %base = arith.subi %o, %c1 : index
            %at = arith.addi %base, %j : index
            %low = arith.maxsi %at, %c0 : index
            %safe = arith.minsi %low, %top : index
            %v = memref.load %x[%c, %safe] : memref<?x?xf32>
            %wj = memref.load %w[%c, %j] : memref<?x?xf32>
            %p = arith.mulf %v, %wj : f32
            %next = arith.addf %acc2, %p fastmath<reassoc> : f32
            scf.yield %next : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          %total = arith.addf %acc, %part fastmath<reassoc> : f32
          scf.yield %total : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %sum, %y[%o] : memref<?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @window(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %y: memref<?xf32>) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %ch = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %d = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %s = memref.dim %w, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %n = memref.dim %y, %c0 : memref<?xf32>
// CHECK-NEXT:     %top = arith.subi %d, %c1 : index
// CHECK-NEXT:     scf.for %t = %c0 to %c1 step %c1 {
// CHECK-NEXT:       %1 = arith.constant 512 : index
// CHECK-NEXT:       scf.for %2 = %c0 to %n step %1 {
// CHECK-NEXT:         %3 = arith.addi %2, %1 : index
// CHECK-NEXT:         %4 = arith.minsi %3, %n : index
// CHECK-NEXT:         %5 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %6 = %2 to %4 step %5 {
// CHECK-NEXT:           %7 = arith.subi %6, %2 : index
// CHECK-NEXT:           memref.store %zero, %0[%7] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         scf.for %8 = %c0 to %ch step %c1 {
// CHECK-NEXT:           scf.for %9 = %c0 to %s step %c1 {
// CHECK-NEXT:             scf.for %10 = %2 to %4 step %5 {
// CHECK-NEXT:               %11 = arith.subi %10, %2 : index
// CHECK-NEXT:               %12 = memref.load %0[%11] : memref<512xf32>
// CHECK-NEXT:               %base = arith.subi %10, %c1 : index
// CHECK-NEXT:               %at = arith.addi %base, %9 : index
// CHECK-NEXT:               %low = arith.maxsi %at, %c0 : index
// CHECK-NEXT:               %safe = arith.minsi %low, %top : index
// CHECK-NEXT:               %v = memref.load %x[%8, %safe] : memref<?x?xf32>
// CHECK-NEXT:               %wj = memref.load %w[%8, %9] : memref<?x?xf32>
// CHECK-NEXT:               %p = arith.mulf %v, %wj : f32
// CHECK-NEXT:               %next = arith.addf %12, %p fastmath<reassoc> : f32
// CHECK-NEXT:               memref.store %next, %0[%11] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         scf.for %o = %2 to %4 step %c1 {
// CHECK-NEXT:           %13 = arith.subi %o, %2 : index
// CHECK-NEXT:           %sum = memref.load %0[%13] : memref<512xf32>
// CHECK-NEXT:           memref.store %sum, %y[%o] : memref<?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
