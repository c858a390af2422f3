// RUN: tilegrad opt %s -p 'fuse-elementwise' | filecheck %s

// A temporary whose body is a reduction stays a stage of its own: recomputing the row sum for every
// element that reads it would multiply its cost. The IR comes out as it went in.

builtin.module {
  func.func @k(%y: memref<?x?xf32> {tg.name = "y", tg.role = "input", tg.dims = "N C"}, %dx: memref<?x?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N C"}, %total: memref<?xf32> {tg.name = "total", tg.role = "temp", tg.dims = "N"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %y, %c0 : memref<?x?xf32>
    %c = memref.dim %y, %c1 : memref<?x?xf32>
    tg.compute %total over(%n) {
    ^bb0(%i: index):
      %zero = arith.constant 0.000000e+00 : f32
      %sum = tg.reduce "sum" short over %c from %zero {
      ^bb0(%r: index):
        %v = memref.load %y[%i, %r] : memref<?x?xf32>
        tg.yield %v : f32
      } : f32 -> f32
      tg.yield %sum : f32
    } : memref<?xf32>
    tg.compute %dx over(%n, %c) {
    ^bb0(%a: index, %b: index):
      %v = memref.load %y[%a, %b] : memref<?x?xf32>
      %s = memref.load %total[%a] : memref<?xf32>
      %q = arith.divf %v, %s : f32
      tg.yield %q : f32
    } : memref<?x?xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%y: memref<?x?xf32> {tg.name = "y", tg.role = "input", tg.dims = "N C"}, %dx: memref<?x?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N C"}, %total: memref<?xf32> {tg.name = "total", tg.role = "temp", tg.dims = "N"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %y, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %c = memref.dim %y, %c1 : memref<?x?xf32>
// CHECK-NEXT:     tg.compute %total over(%n) {
// CHECK-NEXT:     ^bb0(%i: index):
// CHECK-NEXT:       %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %sum = tg.reduce "sum" short over %c from %zero {
// CHECK-NEXT:       ^bb0(%r: index):
// CHECK-NEXT:         %v = memref.load %y[%i, %r] : memref<?x?xf32>
// CHECK-NEXT:         tg.yield %v : f32
// CHECK-NEXT:       } : f32 -> f32
// CHECK-NEXT:       tg.yield %sum : f32
// CHECK-NEXT:     } : memref<?xf32>
// CHECK-NEXT:     tg.compute %dx over(%n, %c) {
// CHECK-NEXT:     ^bb0(%a: index, %b: index):
// CHECK-NEXT:       %v_1 = memref.load %y[%a, %b] : memref<?x?xf32>
// CHECK-NEXT:       %s = memref.load %total[%a] : memref<?xf32>
// CHECK-NEXT:       %q = arith.divf %v_1, %s : f32
// CHECK-NEXT:       tg.yield %q : f32
// CHECK-NEXT:     } : memref<?x?xf32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
