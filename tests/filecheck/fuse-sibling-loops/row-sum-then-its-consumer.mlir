// RUN: tilegrad opt %s -p 'fuse-sibling-loops' | filecheck %s

// total[i] = the sum of row i of y, then dx[i, j] = y[i, j] * total[i]: the consumer reads the total at its
// own row, so the two stages share their loop over rows: one nest, each row's sum then that row's loop
// (one tg.stage left).

builtin.module {
  func.func @rows(%y: memref<?x?xf32>, %dx: memref<?x?xf32>, %total: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %y, %c0 : memref<?x?xf32>
    %m = memref.dim %y, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %n step %c1 {
      %s = scf.for %r = %c0 to %m step %c1 iter_args(%acc = %zero) -> (f32) {
        %v = memref.load %y[%i, %r] : memref<?x?xf32>
        %a = arith.addf %acc, %v : f32
        scf.yield %a : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s, %total[%i] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    scf.for %i2 = %c0 to %n step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %t = memref.load %total[%i2] : memref<?xf32>
        %w = memref.load %y[%i2, %j] : memref<?x?xf32>
        %p = arith.mulf %w, %t : f32
        memref.store %p, %dx[%i2, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @rows(%y: memref<?x?xf32>, %dx: memref<?x?xf32>, %total: memref<?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %y, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %y, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       %s = scf.for %r = %c0 to %m step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:         %v = memref.load %y[%i, %r] : memref<?x?xf32>
// CHECK-NEXT:         %a = arith.addf %acc, %v : f32
// CHECK-NEXT:         scf.yield %a : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %s, %total[%i] : memref<?xf32>
// CHECK-NEXT:       scf.for %j = %c0 to %m step %c1 {
// CHECK-NEXT:         %t = memref.load %total[%i] : memref<?xf32>
// CHECK-NEXT:         %w = memref.load %y[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         %p = arith.mulf %w, %t : f32
// CHECK-NEXT:         memref.store %p, %dx[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
