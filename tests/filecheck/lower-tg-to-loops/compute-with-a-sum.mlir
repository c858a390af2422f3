// RUN: tilegrad opt %s -p 'lower-tg-to-loops' | filecheck %s

// dx[i, j] = y[i, j] * sum_r y[i, r]: the compute becomes a parallel loop per axis (tagged with its
// axis and stage), the short sum an scf.for carrying its accumulator, the yield a store.

builtin.module {
  func.func @k(%y: memref<?x?xf32> {tg.name = "y", tg.role = "input", tg.dims = "N C"}, %dx: memref<?x?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N C"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %y, %c0 : memref<?x?xf32>
    %c = memref.dim %y, %c1 : memref<?x?xf32>
    tg.compute %dx over(%n, %c) {
    ^bb0(%i: index, %j: index):
      %zero = arith.constant 0.000000e+00 : f32
      %sum = tg.reduce "sum" short over %c from %zero {
      ^bb0(%r: index):
        %v = memref.load %y[%i, %r] : memref<?x?xf32>
        tg.yield %v : f32
      } : f32 -> f32
      %w = memref.load %y[%i, %j] : memref<?x?xf32>
      %p = arith.mulf %w, %sum : f32
      tg.yield %p : f32
    } : memref<?x?xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%y: memref<?x?xf32> {tg.name = "y", tg.role = "input", tg.dims = "N C"}, %dx: memref<?x?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N C"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %y, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %c = memref.dim %y, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = arith.constant 1 : index
// CHECK-NEXT:     scf.for %i = %0 to %n step %1 {
// CHECK-NEXT:       scf.for %j = %0 to %c step %1 {
// CHECK-NEXT:         %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %sum = arith.constant 0 : index
// CHECK-NEXT:         %sum_1 = arith.constant 1 : index
// CHECK-NEXT:         %sum_2 = scf.for %r = %sum to %c step %sum_1 iter_args(%2 = %zero) -> (f32) {
// CHECK-NEXT:           %v = memref.load %y[%i, %r] : memref<?x?xf32>
// CHECK-NEXT:           %3 = arith.addf %2, %v fastmath<reassoc> : f32
// CHECK-NEXT:           scf.yield %3 : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         %w = memref.load %y[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         %p = arith.mulf %w, %sum_2 : f32
// CHECK-NEXT:         memref.store %p, %dx[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
