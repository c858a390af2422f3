// RUN: tilegrad opt %s -p 'fuse-sibling-loops{contractions=false}' | filecheck %s

// ga[i, j] = sum_r a[r, i] * b[r, j] beside gc[i, j] = sum_r c[r, i] * e[r, j] (attention backward's dk
// and dv): two contractions over the same (i, j) that read different tensors on both sides. Joined,
// one register tile would hold both sums' accumulators and each term load four operands: with
// contractions=false they stay two stages and the IR comes out as it went in.

builtin.module {
  func.func @products(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %e: memref<?x?xf32>,
                      %ga: memref<?x?xf32>, %gc: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %a, %c0 : memref<?x?xf32>
    %m = memref.dim %a, %c1 : memref<?x?xf32>
    %k = memref.dim %b, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %m step %c1 {
      scf.for %j = %c0 to %k step %c1 {
        %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
          %x = memref.load %a[%r, %i] : memref<?x?xf32>
          %y = memref.load %b[%r, %j] : memref<?x?xf32>
          %xy = arith.mulf %x, %y : f32
          %t = arith.addf %acc, %xy : f32
          scf.yield %t : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s, %ga[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    scf.for %i2 = %c0 to %m step %c1 {
      scf.for %j2 = %c0 to %k step %c1 {
        %s2 = scf.for %r2 = %c0 to %n step %c1 iter_args(%acc2 = %zero) -> (f32) {
          %x2 = memref.load %c[%r2, %i2] : memref<?x?xf32>
          %y2 = memref.load %e[%r2, %j2] : memref<?x?xf32>
          %xy2 = arith.mulf %x2, %y2 : f32
          %t2 = arith.addf %acc2, %xy2 : f32
          scf.yield %t2 : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s2, %gc[%i2, %j2] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @products(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %e: memref<?x?xf32>, %ga: memref<?x?xf32>, %gc: memref<?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %a, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %k = memref.dim %b, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %m step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %k step %c1 {
// CHECK-NEXT:         %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %x = memref.load %a[%r, %i] : memref<?x?xf32>
// CHECK-NEXT:           %y = memref.load %b[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:           %xy = arith.mulf %x, %y : f32
// CHECK-NEXT:           %t = arith.addf %acc, %xy : f32
// CHECK-NEXT:           scf.yield %t : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s, %ga[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     scf.for %i2 = %c0 to %m step %c1 {
// CHECK-NEXT:       scf.for %j2 = %c0 to %k step %c1 {
// CHECK-NEXT:         %s2 = scf.for %r2 = %c0 to %n step %c1 iter_args(%acc2 = %zero) -> (f32) {
// CHECK-NEXT:           %x2 = memref.load %c[%r2, %i2] : memref<?x?xf32>
// CHECK-NEXT:           %y2 = memref.load %e[%r2, %j2] : memref<?x?xf32>
// CHECK-NEXT:           %xy2 = arith.mulf %x2, %y2 : f32
// CHECK-NEXT:           %t2 = arith.addf %acc2, %xy2 : f32
// CHECK-NEXT:           scf.yield %t2 : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s2, %gc[%i2, %j2] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
