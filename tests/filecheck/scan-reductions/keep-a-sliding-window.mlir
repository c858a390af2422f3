// RUN: tilegrad opt %s -p 'scan-reductions' | filecheck %s

// y[n, i] = Σ_{t < i + 1} x[n, i + t]: the extent grows with i and so does the start of the range
// (i + t over i + 1 terms: [i, 2i + 1)), so no element is the one before it plus a term. Not a scan:
// the IR comes out as it went in.

builtin.module {
  func.func @window(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N D"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N D"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %d = memref.dim %x, %c1 : memref<?x?xf32>
    tg.compute %y over(%n, %d) {
    ^bb0(%i0: index, %i1: index):
      %zero = arith.constant 0.000000e+00 : f32
      %one = arith.constant 1 : index
      %extent = arith.addi %i1, %one : index
      %sum = tg.reduce "sum" over %extent from %zero {
      ^bb0(%r: index):
        %at = arith.addi %i1, %r : index
        %v = memref.load %x[%i0, %at] : memref<?x?xf32>
        tg.yield %v : f32
      } : f32 -> f32
      tg.yield %sum : f32
    } : memref<?x?xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @window(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N D"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N D"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %d = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     tg.compute %y over(%n, %d) {
// CHECK-NEXT:     ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:       %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %one = arith.constant 1 : index
// CHECK-NEXT:       %extent = arith.addi %i1, %one : index
// CHECK-NEXT:       %sum = tg.reduce "sum" over %extent from %zero {
// CHECK-NEXT:       ^bb0(%r: index):
// CHECK-NEXT:         %at = arith.addi %i1, %r : index
// CHECK-NEXT:         %v = memref.load %x[%i0, %at] : memref<?x?xf32>
// CHECK-NEXT:         tg.yield %v : f32
// CHECK-NEXT:       } : f32 -> f32
// CHECK-NEXT:       tg.yield %sum : f32
// CHECK-NEXT:     } : memref<?x?xf32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
