// RUN: tilegrad opt %s -p 'unroll-short-reductions' | filecheck %s

// A sum whose trip count is not a constant (x's length) stays a loop: the IR comes out as it went in.

builtin.module {
  func.func @windows(%x: memref<?xf32>, %out: memref<2xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c100 = arith.constant 100 : index
    %zero = arith.constant 0.000000e+00 : f32
    %d = memref.dim %x, %c0 : memref<?xf32>
    %short = scf.for %k = %c0 to %d step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%k] : memref<?xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    %long = scf.for %k2 = %c0 to %c100 step %c1 iter_args(%acc2 = %zero) -> (f32) {
      %v2 = memref.load %x[%k2] : memref<?xf32>
      %a2 = arith.addf %acc2, %v2 : f32
      scf.yield %a2 : f32
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    memref.store %short, %out[%c0] : memref<2xf32>
    memref.store %long, %out[%c1] : memref<2xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @windows(%x: memref<?xf32>, %out: memref<2xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %c100 = arith.constant 100 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %d = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     %short = scf.for %k = %c0 to %d step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:       %v = memref.load %x[%k] : memref<?xf32>
// CHECK-NEXT:       %a = arith.addf %acc, %v : f32
// CHECK-NEXT:       scf.yield %a : f32
// CHECK-NEXT:     } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     %long = scf.for %k2 = %c0 to %c100 step %c1 iter_args(%acc2 = %zero) -> (f32) {
// CHECK-NEXT:       %v2 = memref.load %x[%k2] : memref<?xf32>
// CHECK-NEXT:       %a2 = arith.addf %acc2, %v2 : f32
// CHECK-NEXT:       scf.yield %a2 : f32
// CHECK-NEXT:     } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     memref.store %short, %out[%c0] : memref<2xf32>
// CHECK-NEXT:     memref.store %long, %out[%c1] : memref<2xf32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
