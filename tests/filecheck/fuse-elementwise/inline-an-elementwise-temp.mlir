// RUN: tilegrad opt %s -p 'fuse-elementwise' | filecheck %s

// dx = dy * t where t = x * x is a temporary of its own: its body is cloned into the load of t, and t
// (the compute and the function argument) goes away.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"}, %dy: memref<?xf32> {tg.name = "dy", tg.role = "input", tg.dims = "N"}, %dx: memref<?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N"}, %t: memref<?xf32> {tg.name = "t", tg.role = "temp", tg.dims = "N"}) {
    %c0 = arith.constant 0 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    tg.compute %t over(%n) {
    ^bb0(%i: index):
      %a = memref.load %x[%i] : memref<?xf32>
      %sq = arith.mulf %a, %a : f32
      tg.yield %sq : f32
    } : memref<?xf32>
    tg.compute %dx over(%n) {
    ^bb0(%j: index):
      %g = memref.load %dy[%j] : memref<?xf32>
      %s = memref.load %t[%j] : memref<?xf32>
      %p = arith.mulf %g, %s : f32
      tg.yield %p : f32
    } : memref<?xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"}, %dy: memref<?xf32> {tg.name = "dy", tg.role = "input", tg.dims = "N"}, %dx: memref<?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     tg.compute %dx over(%n) {
// CHECK-NEXT:     ^bb0(%j: index):
// CHECK-NEXT:       %g = memref.load %dy[%j] : memref<?xf32>
// CHECK-NEXT:       %a = memref.load %x[%j] : memref<?xf32>
// CHECK-NEXT:       %sq = arith.mulf %a, %a : f32
// CHECK-NEXT:       %p = arith.mulf %g, %sq : f32
// CHECK-NEXT:       tg.yield %p : f32
// CHECK-NEXT:     } : memref<?xf32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
