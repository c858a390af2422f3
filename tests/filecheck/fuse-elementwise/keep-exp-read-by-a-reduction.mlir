// RUN: tilegrad opt %s -p 'fuse-elementwise' | filecheck %s

// An elementwise temporary with transcendental math (e = exp(x)) that a reduction reads is not
// inlined: each of the reduction's terms would recompute the exp. The IR comes out as it went in.

builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C"}, %s: memref<?xf32> {tg.name = "s", tg.role = "output", tg.dims = "N"}, %e: memref<?x?xf32> {tg.name = "e", tg.role = "temp", tg.dims = "N C"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %c = memref.dim %x, %c1 : memref<?x?xf32>
    tg.compute %e over(%n, %c) {
    ^bb0(%a: index, %b: index):
      %v = memref.load %x[%a, %b] : memref<?x?xf32>
      %ev = math.exp %v : f32
      tg.yield %ev : f32
    } : memref<?x?xf32>
    tg.compute %s over(%n) {
    ^bb0(%i: index):
      %zero = arith.constant 0.000000e+00 : f32
      %sum = tg.reduce "sum" short over %c from %zero {
      ^bb0(%r: index):
        %v = memref.load %e[%i, %r] : memref<?x?xf32>
        tg.yield %v : f32
      } : f32 -> f32
      tg.yield %sum : f32
    } : memref<?xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C"}, %s: memref<?xf32> {tg.name = "s", tg.role = "output", tg.dims = "N"}, %e: memref<?x?xf32> {tg.name = "e", tg.role = "temp", tg.dims = "N C"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %c = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     tg.compute %e over(%n, %c) {
// CHECK-NEXT:     ^bb0(%a: index, %b: index):
// CHECK-NEXT:       %v = memref.load %x[%a, %b] : memref<?x?xf32>
// CHECK-NEXT:       %ev = math.exp %v : f32
// CHECK-NEXT:       tg.yield %ev : f32
// CHECK-NEXT:     } : memref<?x?xf32>
// CHECK-NEXT:     tg.compute %s over(%n) {
// CHECK-NEXT:     ^bb0(%i: index):
// CHECK-NEXT:       %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %sum = tg.reduce "sum" short over %c from %zero {
// CHECK-NEXT:       ^bb0(%r: index):
// CHECK-NEXT:         %v_1 = memref.load %e[%i, %r] : memref<?x?xf32>
// CHECK-NEXT:         tg.yield %v_1 : f32
// CHECK-NEXT:       } : f32 -> f32
// CHECK-NEXT:       tg.yield %sum : f32
// CHECK-NEXT:     } : memref<?xf32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
