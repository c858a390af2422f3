// RUN: tilegrad opt %s -p 'fuse-sibling-loops' | filecheck %s

// t = 2 x by rows, then out[i, j] = sum_k t[i, k] * w[k, j]: each row's sums sweep all of the matrix w, which
// the rows share when the stage runs on its own; fused, every row would sweep w alone. The stages stay
// apart and the IR comes out as it went in.

builtin.module {
  func.func @rows(%x: memref<?x?xf32>, %t: memref<?x?xf32>, %v: memref<?xf32>, %w: memref<?x?xf32>,
                  %out: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %o = memref.dim %out, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %a = memref.load %x[%i, %j] : memref<?x?xf32>
        %b = arith.addf %a, %a : f32
        memref.store %b, %t[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    scf.for %i2 = %c0 to %n step %c1 {
      scf.for %j2 = %c0 to %o step %c1 {
        %s = scf.for %k = %c0 to %m step %c1 iter_args(%acc = %zero) -> (f32) {
          %p = memref.load %t[%i2, %k] : memref<?x?xf32>
          %q = memref.load %w[%k, %j2] : memref<?x?xf32>
          %pq = arith.mulf %p, %q : f32
          %r = arith.addf %acc, %pq : f32
          scf.yield %r : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s, %out[%i2, %j2] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @rows(%x: memref<?x?xf32>, %t: memref<?x?xf32>, %v: memref<?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %o = memref.dim %out, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %m step %c1 {
// CHECK-NEXT:         %a = memref.load %x[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         %b = arith.addf %a, %a : f32
// CHECK-NEXT:         memref.store %b, %t[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     scf.for %i2 = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j2 = %c0 to %o step %c1 {
// CHECK-NEXT:         %s = scf.for %k = %c0 to %m step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %p = memref.load %t[%i2, %k] : memref<?x?xf32>
// CHECK-NEXT:           %q = memref.load %w[%k, %j2] : memref<?x?xf32>
// CHECK-NEXT:           %pq = arith.mulf %p, %q : f32
// CHECK-NEXT:           %r = arith.addf %acc, %pq : f32
// CHECK-NEXT:           scf.yield %r : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s, %out[%i2, %j2] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
