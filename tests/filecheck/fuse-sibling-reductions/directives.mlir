// RUN: tilegrad opt %s -p 'fuse-sibling-reductions{directives="ComputeWith(stage=0, reductions=(2, 3))"}' | filecheck %s

// The directives option: two pairs of sums over the same rows, in two column loops (the stage's
// reductions 0 and 1 in the first, 2 and 3 in the second, in their order in the stage). By itself the
// pass merges each pair; only the pair the directive names, 2 and 3, sweeps its rows once (as if
// `ComputeWith(stage=0, reductions=(0, 1), fused=False)` had been given for the first).

builtin.module {
  func.func @k_stage0(%x: memref<?x?xf32>, %dy: memref<?x?xf32>, %db: memref<?xf32>, %dg: memref<?xf32>,
                      %sa: memref<?xf32>, %sb: memref<?xf32>) {
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
      %t = scf.for %r2 = %c0 to %n step %c1 iter_args(%acc2 = %zero) -> (f32) {
        %w = memref.load %dy[%r2, %c] : memref<?x?xf32>
        %u = memref.load %x[%r2, %c] : memref<?x?xf32>
        %p = arith.mulf %w, %u : f32
        %b = arith.addf %acc2, %p : f32
        scf.yield %b : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %t, %dg[%c] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    scf.for %c3 = %c0 to %m step %c1 {
      %s3 = scf.for %r3 = %c0 to %n step %c1 iter_args(%acc3 = %zero) -> (f32) {
        %v3 = memref.load %x[%r3, %c3] : memref<?x?xf32>
        %a3 = arith.addf %acc3, %v3 : f32
        scf.yield %a3 : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s3, %sa[%c3] : memref<?xf32>
      %t4 = scf.for %r4 = %c0 to %n step %c1 iter_args(%acc4 = %zero) -> (f32) {
        %v4 = memref.load %x[%r4, %c3] : memref<?x?xf32>
        %p4 = arith.mulf %v4, %v4 : f32
        %a4 = arith.addf %acc4, %p4 : f32
        scf.yield %a4 : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %t4, %sb[%c3] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k_stage0(%x: memref<?x?xf32>, %dy: memref<?x?xf32>, %db: memref<?xf32>, %dg: memref<?xf32>, %sa: memref<?xf32>, %sb: memref<?xf32>) {
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
// CHECK-NEXT:       %t = scf.for %r2 = %c0 to %n step %c1 iter_args(%acc2 = %zero) -> (f32) {
// CHECK-NEXT:         %w = memref.load %dy[%r2, %c] : memref<?x?xf32>
// CHECK-NEXT:         %u = memref.load %x[%r2, %c] : memref<?x?xf32>
// CHECK-NEXT:         %p = arith.mulf %w, %u : f32
// CHECK-NEXT:         %b = arith.addf %acc2, %p : f32
// CHECK-NEXT:         scf.yield %b : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %t, %dg[%c] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     scf.for %c3 = %c0 to %m step %c1 {
// CHECK-NEXT:       %s3, %t4 = scf.for %r4 = %c0 to %n step %c1 iter_args(%acc3 = %zero, %acc4 = %zero) -> (f32, f32) {
// CHECK-NEXT:         %v3 = memref.load %x[%r4, %c3] : memref<?x?xf32>
// CHECK-NEXT:         %a3 = arith.addf %acc3, %v3 : f32
// CHECK-NEXT:         %v4 = memref.load %x[%r4, %c3] : memref<?x?xf32>
// CHECK-NEXT:         %p4 = arith.mulf %v4, %v4 : f32
// CHECK-NEXT:         %a4 = arith.addf %acc4, %p4 : f32
// CHECK-NEXT:         scf.yield %a3, %a4 : f32, f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %s3, %sa[%c3] : memref<?xf32>
// CHECK-NEXT:       memref.store %t4, %sb[%c3] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
