// RUN: tilegrad opt %s -p 'overlap-vector-tails' | filecheck %s

// The map reads out, which it writes: an element written twice could read its new value, so the IR comes
// out as it went in.

builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N W"},
               %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "N W"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %w = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %w step %c1 {
        %v = memref.load %out[%i, %j] : memref<?x?xf32>
        %d = arith.addf %v, %v : f32
        memref.store %d, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N W"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "N W"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %w = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %w step %c1 {
// CHECK-NEXT:         %v = memref.load %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         %d = arith.addf %v, %v : f32
// CHECK-NEXT:         memref.store %d, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
