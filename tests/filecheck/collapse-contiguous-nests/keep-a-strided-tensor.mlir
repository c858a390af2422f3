// RUN: tilegrad opt %s -p 'collapse-contiguous-nests' | filecheck %s

// The same nest with x strided (rows apart in memory): a flat index is not its address, so the nest
// keeps its three loops and the IR comes out as it went in.

builtin.module {
  func.func @k(%x: memref<?x?x?xf32, strided<[?, ?, 1]>> {tg.name = "x", tg.role = "input", tg.dims = "N C W"},
               %s: memref<1xf32> {tg.name = "s", tg.role = "input", tg.dims = "1"},
               %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N C W"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %x, %c0 : memref<?x?x?xf32, strided<[?, ?, 1]>>
    %c = memref.dim %x, %c1 : memref<?x?x?xf32, strided<[?, ?, 1]>>
    %w = memref.dim %x, %c2 : memref<?x?x?xf32, strided<[?, ?, 1]>>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %c step %c1 {
        scf.for %k = %c0 to %w step %c1 {
          %v = memref.load %x[%i, %j, %k] : memref<?x?x?xf32, strided<[?, ?, 1]>>
          %scale = memref.load %s[%c0] : memref<1xf32>
          %r = arith.mulf %v, %scale : f32
          memref.store %r, %y[%i, %j, %k] : memref<?x?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?x?xf32, strided<[?, ?, 1]>> {tg.name = "x", tg.role = "input", tg.dims = "N C W"}, %s: memref<1xf32> {tg.name = "s", tg.role = "input", tg.dims = "1"}, %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N C W"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?x?xf32, strided<[?, ?, 1]>>
// CHECK-NEXT:     %c = memref.dim %x, %c1 : memref<?x?x?xf32, strided<[?, ?, 1]>>
// CHECK-NEXT:     %w = memref.dim %x, %c2 : memref<?x?x?xf32, strided<[?, ?, 1]>>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %c step %c1 {
// CHECK-NEXT:         scf.for %k = %c0 to %w step %c1 {
// CHECK-NEXT:           %v = memref.load %x[%i, %j, %k] : memref<?x?x?xf32, strided<[?, ?, 1]>>
// CHECK-NEXT:           %scale = memref.load %s[%c0] : memref<1xf32>
// CHECK-NEXT:           %r = arith.mulf %v, %scale : f32
// CHECK-NEXT:           memref.store %r, %y[%i, %j, %k] : memref<?x?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
