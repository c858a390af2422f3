// RUN: tilegrad opt %s -p 'interchange-column-reductions' | filecheck %s

// out[0, j] = sum_r x[j, r], a sum along a row, already reads x contiguously: the IR comes out as it went
// in.

builtin.module {
  func.func @column_sum(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %c1 step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
          %v = memref.load %x[%j, %r] : memref<?x?xf32>
          %a = arith.addf %acc, %v : f32
          scf.yield %a : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @column_sum(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %c1 step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %m step %c1 {
// CHECK-NEXT:         %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %v = memref.load %x[%j, %r] : memref<?x?xf32>
// CHECK-NEXT:           %a = arith.addf %acc, %v : f32
// CHECK-NEXT:           scf.yield %a : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
