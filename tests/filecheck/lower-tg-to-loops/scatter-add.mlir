// RUN: tilegrad opt %s -p 'lower-tg-to-loops' | filecheck %s

// out[idx[r], e] += g[r, e] where keep: a fill stage, then the scatter's loop nest, whose row index is
// range-checked before it writes (an index outside the 10 rows reports code 1 in the status buffer).

builtin.module {
  func.func @k(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input", tg.dims = "B E"}, %idx: memref<?xi64> {tg.name = "idx", tg.role = "input", tg.dims = "B"}, %out: memref<10x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "10 E"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c10 = arith.constant 10 : index
    %b = memref.dim %g, %c0 : memref<?x?xf32>
    %e = memref.dim %g, %c1 : memref<?x?xf32>
    tg.compute %out over(%c10, %e) {
    ^bb0(%i0: index, %i1: index):
      %zero = arith.constant 0.000000e+00 : f32
      tg.yield %zero : f32
    } : memref<10x?xf32>
    tg.scatter_add %out over(%b, %e) code 1 {
    ^bb0(%r0: index, %r1: index):
      %raw = memref.load %idx[%r0] : memref<?xi64>
      %row = arith.index_cast %raw : i64 to index
      %v = memref.load %g[%r0, %r1] : memref<?x?xf32>
      %keep = arith.constant true
      tg.yield %row, %r1, %v, %keep : index, index, f32, i1
    } : memref<10x?xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input", tg.dims = "B E"}, %idx: memref<?xi64> {tg.name = "idx", tg.role = "input", tg.dims = "B"}, %out: memref<10x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "10 E"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c10 = arith.constant 10 : index
// CHECK-NEXT:     %b = memref.dim %g, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %e = memref.dim %g, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = arith.constant 1 : index
// CHECK-NEXT:     scf.for %i0 = %0 to %c10 step %1 {
// CHECK-NEXT:       scf.for %i1 = %0 to %e step %1 {
// CHECK-NEXT:         %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         memref.store %zero, %out[%i0, %i1] : memref<10x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     %2 = arith.constant 0 : index
// CHECK-NEXT:     %3 = arith.constant 1 : index
// CHECK-NEXT:     scf.for %r0 = %2 to %b step %3 {
// CHECK-NEXT:       %raw = memref.load %idx[%r0] : memref<?xi64>
// CHECK-NEXT:       %row = arith.index_cast %raw : i64 to index
// CHECK-NEXT:       %4 = arith.constant true
// CHECK-NEXT:       %5 = arith.constant 0 : index
// CHECK-NEXT:       %6 = memref.dim %out, %5 : memref<10x?xf32>
// CHECK-NEXT:       %7 = arith.constant 0 : index
// CHECK-NEXT:       %8 = arith.cmpi sge, %row, %7 : index
// CHECK-NEXT:       %9 = arith.cmpi slt, %row, %6 : index
// CHECK-NEXT:       %10 = arith.andi %8, %9 : i1
// CHECK-NEXT:       %11 = arith.andi %4, %10 : i1
// CHECK-NEXT:       scf.if %11 {
// CHECK-NEXT:         %12 = arith.constant 0 : index
// CHECK-NEXT:         %13 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %r1 = %12 to %e step %13 {
// CHECK-NEXT:           %v = memref.load %g[%r0, %r1] : memref<?x?xf32>
// CHECK-NEXT:           %keep = arith.constant true
// CHECK-NEXT:           scf.if %keep {
// CHECK-NEXT:             %14 = memref.load %out[%row, %r1] : memref<10x?xf32>
// CHECK-NEXT:             %15 = arith.addf %14, %v : f32
// CHECK-NEXT:             memref.store %15, %out[%row, %r1] {tg.scatter_store} : memref<10x?xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         } {tg.loop = #tg.loop<scatter, axis = 1>}
// CHECK-NEXT:       } else {
// CHECK-NEXT:         %16 = arith.constant 1 : i64
// CHECK-NEXT:         %17 = arith.constant 0 : index
// CHECK-NEXT:         memref.store %16, %status[%17] : memref<8xi64>
// CHECK-NEXT:       }{tg.in_range}
// CHECK-NEXT:     } {tg.loop = #tg.loop<scatter, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
