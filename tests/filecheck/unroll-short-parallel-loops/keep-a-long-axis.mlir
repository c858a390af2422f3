// RUN: tilegrad opt %s -p 'unroll-short-parallel-loops' | filecheck %s

// The axis has 5 values: not short, so the IR comes out as it went in.

builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C"},
               %out: memref<?x5xf32> {tg.name = "out", tg.role = "output", tg.dims = "N 5"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %c = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %n step %c1 {
      %c5 = arith.constant 5 : index
      scf.for %a = %c0 to %c5 step %c1 {
        %ai = arith.index_cast %a : index to i64
        %af = arith.sitofp %ai : i64 to f32
        %s = scf.for %r = %c0 to %c step %c1 iter_args(%acc = %zero) -> (f32) {
          %v = memref.load %x[%i, %r] : memref<?x?xf32>
          %p = arith.mulf %v, %af : f32
          %t = arith.addf %acc, %p : f32
          scf.yield %t : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s, %out[%i, %a] : memref<?x5xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C"}, %out: memref<?x5xf32> {tg.name = "out", tg.role = "output", tg.dims = "N 5"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %c = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       %c5 = arith.constant 5 : index
// CHECK-NEXT:       scf.for %a = %c0 to %c5 step %c1 {
// CHECK-NEXT:         %ai = arith.index_cast %a : index to i64
// CHECK-NEXT:         %af = arith.sitofp %ai : i64 to f32
// CHECK-NEXT:         %s = scf.for %r = %c0 to %c step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %v = memref.load %x[%i, %r] : memref<?x?xf32>
// CHECK-NEXT:           %p = arith.mulf %v, %af : f32
// CHECK-NEXT:           %t = arith.addf %acc, %p : f32
// CHECK-NEXT:           scf.yield %t : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s, %out[%i, %a] : memref<?x5xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
