// RUN: tilegrad opt %s -p 'unroll-short-reductions{directives="Unroll(stage=0, axis=0, factor=1); Unroll(stage=0, axis=1)"}' | filecheck %s

// The directives option: the window over axis 1 that Unroll names with factor 0 becomes straight-line
// code; the one over axis 0, which Unroll(factor=1) turns off, stays a loop though the pass would unroll it.

builtin.module {
  func.func @windows(%x: memref<?xf32>, %out: memref<2xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %zero = arith.constant 0.000000e+00 : f32
    %kept = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%k] : memref<?xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    %unrolled = scf.for %j = %c0 to %c2 step %c1 iter_args(%acc2 = %zero) -> (f32) {
      %v2 = memref.load %x[%j] : memref<?xf32>
      %a2 = arith.mulf %acc2, %v2 : f32
      scf.yield %a2 : f32
    } {tg.loop = #tg.loop<reduce, axis = 1>}
    memref.store %kept, %out[%c0] : memref<2xf32>
    memref.store %unrolled, %out[%c1] : memref<2xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @windows(%x: memref<?xf32>, %out: memref<2xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %kept = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:       %v = memref.load %x[%k] : memref<?xf32>
// CHECK-NEXT:       %a = arith.addf %acc, %v : f32
// CHECK-NEXT:       scf.yield %a : f32
// CHECK-NEXT:     } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     %j = arith.constant 0 : index
// CHECK-NEXT:     %v2 = memref.load %x[%j] : memref<?xf32>
// CHECK-NEXT:     %a2 = arith.mulf %zero, %v2 : f32
// CHECK-NEXT:     %j_1 = arith.constant 1 : index
// CHECK-NEXT:     %v2_1 = memref.load %x[%j_1] : memref<?xf32>
// CHECK-NEXT:     %a2_1 = arith.mulf %a2, %v2_1 : f32
// CHECK-NEXT:     memref.store %kept, %out[%c0] : memref<2xf32>
// CHECK-NEXT:     memref.store %a2_1, %out[%c1] : memref<2xf32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
