// RUN: tilegrad opt %s -p 'scan-reductions' | filecheck %s

// dx[n, i] = Σ_{t < D - i} dy[n, i + t] (cumsum's backward): the extent is D - i and the body reads
// i and t only as i + t, so walking i down each element is the one after it plus dy[n, i]. The row
// loop stays parallel; the scan loop walks i = D - 1 - step, its first step reduces the whole
// (one-term) range as the tg.reduce did, each later one adds the term at t = 0 in float64.

builtin.module {
  func.func @suffix_sum(%dy: memref<?x?xf32> {tg.name = "dy", tg.role = "input", tg.dims = "N D"}, %dx: memref<?x?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N D"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %dy, %c0 : memref<?x?xf32>
    %d = memref.dim %dy, %c1 : memref<?x?xf32>
    tg.compute %dx over(%n, %d) {
    ^bb0(%i0: index, %i1: index):
      %zero = arith.constant 0.000000e+00 : f32
      %extent = arith.subi %d, %i1 : index
      %sum = tg.reduce "sum" over %extent from %zero {
      ^bb0(%r: index):
        %at = arith.addi %i1, %r : index
        %v = memref.load %dy[%i0, %at] : memref<?x?xf32>
        tg.yield %v : f32
      } : f32 -> f32
      tg.yield %sum : f32
    } : memref<?x?xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @suffix_sum(%dy: memref<?x?xf32> {tg.name = "dy", tg.role = "input", tg.dims = "N D"}, %dx: memref<?x?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N D"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %dy, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %d = memref.dim %dy, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = arith.constant 1 : index
// CHECK-NEXT:     scf.for %i0 = %0 to %n step %1 {
// CHECK-NEXT:       %2 = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:       %3 = scf.for %step = %0 to %d step %1 iter_args(%4 = %2) -> (f64) {
// CHECK-NEXT:         %5 = arith.subi %d, %1 : index
// CHECK-NEXT:         %i1 = arith.subi %5, %step : index
// CHECK-NEXT:         %6 = arith.cmpi eq, %step, %0 : index
// CHECK-NEXT:         %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %extent = arith.subi %d, %i1 : index
// CHECK-NEXT:         %7 = scf.if %6 -> (f64) {
// CHECK-NEXT:           %sum = tg.reduce "sum" over %extent from %zero {
// CHECK-NEXT:           ^bb0(%r: index):
// CHECK-NEXT:             %at = arith.addi %i1, %r : index
// CHECK-NEXT:             %v = memref.load %dy[%i0, %at] : memref<?x?xf32>
// CHECK-NEXT:             tg.yield %v : f32
// CHECK-NEXT:           } : f32 -> f32
// CHECK-NEXT:           %8 = arith.extf %sum : f32 to f64
// CHECK-NEXT:           scf.yield %8 : f64
// CHECK-NEXT:         } else {
// CHECK-NEXT:           %9 = arith.constant 0 : index
// CHECK-NEXT:           %at_1 = arith.addi %i1, %9 : index
// CHECK-NEXT:           %v_1 = memref.load %dy[%i0, %at_1] : memref<?x?xf32>
// CHECK-NEXT:           %10 = arith.extf %v_1 : f32 to f64
// CHECK-NEXT:           %11 = arith.addf %4, %10 : f64
// CHECK-NEXT:           %12 = arith.constant 0 : index
// CHECK-NEXT:           %13 = arith.cmpi sgt, %extent, %12 : index
// CHECK-NEXT:           %14 = arith.select %13, %11, %4 : f64
// CHECK-NEXT:           scf.yield %14 : f64
// CHECK-NEXT:         }
// CHECK-NEXT:         %15 = arith.truncf %7 : f64 to f32
// CHECK-NEXT:         memref.store %15, %dx[%i0, %i1] : memref<?x?xf32>
// CHECK-NEXT:         scf.yield %7 : f64
// CHECK-NEXT:       } {tg.loop = #tg.loop<scan, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
