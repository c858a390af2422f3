// RUN: tilegrad opt %s -p 'fuse-sibling-reductions' | filecheck %s

// The second sum reads db, where the first sum's result is stored: it must run after the store, so the
// two loops stay apart and the IR comes out as it went in.

builtin.module {
  func.func @two_sums(%x: memref<?x?xf32>, %dy: memref<?x?xf32>, %db: memref<?xf32>, %dg: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %c = %c0 to %m step %c1 {
      %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
        %v = memref.load %dy[%r, %c] : memref<?x?xf32>
        %a = arith.addf %acc, %v : f32
        scf.yield %a : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s, %db[%c] : memref<?xf32>
      %n2 = memref.dim %x, %c0 : memref<?x?xf32>
      %t = scf.for %r2 = %c0 to %n2 step %c1 iter_args(%acc2 = %zero) -> (f32) {
        %w = memref.load %db[%r2] : memref<?xf32>
        %u = memref.load %x[%r2, %c] : memref<?x?xf32>
        %p = arith.mulf %w, %u : f32
        %b = arith.addf %acc2, %p : f32
        scf.yield %b : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %t, %dg[%c] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @two_sums(%x: memref<?x?xf32>, %dy: memref<?x?xf32>, %db: memref<?xf32>, %dg: memref<?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %c = %c0 to %m step %c1 {
// CHECK-NEXT:       %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:         %v = memref.load %dy[%r, %c] : memref<?x?xf32>
// CHECK-NEXT:         %a = arith.addf %acc, %v : f32
// CHECK-NEXT:         scf.yield %a : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %s, %db[%c] : memref<?xf32>
// CHECK-NEXT:       %n2 = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:       %t = scf.for %r2 = %c0 to %n2 step %c1 iter_args(%acc2 = %zero) -> (f32) {
// CHECK-NEXT:         %w = memref.load %db[%r2] : memref<?xf32>
// CHECK-NEXT:         %u = memref.load %x[%r2, %c] : memref<?x?xf32>
// CHECK-NEXT:         %p = arith.mulf %w, %u : f32
// CHECK-NEXT:         %b = arith.addf %acc2, %p : f32
// CHECK-NEXT:         scf.yield %b : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %t, %dg[%c] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
