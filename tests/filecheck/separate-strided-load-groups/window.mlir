// RUN: tilegrad opt %s -p 'separate-strided-load-groups' | filecheck %s

// A window 3 wide at stride 2 reads x[2j], x[2j + 1], x[2j + 2]: each name's loads become one whole
// interleave group (through an alias of x, tg.opaque_alias), none a gather.

builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N W"},
               %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "N O"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %out, %c0 : memref<?x?xf32>
    %o = memref.dim %out, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c1 to %o step %c1 {
        %s = arith.muli %j, %c2 : index
        %left = arith.subi %s, %c1 : index
        %right = arith.addi %s, %c1 : index
        %a = memref.load %x[%i, %left] : memref<?x?xf32>
        %b = memref.load %x[%i, %s] : memref<?x?xf32>
        %c = memref.load %x[%i, %right] : memref<?x?xf32>
        %ab = arith.maximumf %a, %b : f32
        %abc = arith.maximumf %ab, %c : f32
        %nan = arith.cmpf une, %b, %b : f32
        %r = arith.select %nan, %b, %abc : f32
        memref.store %r, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N W"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "N O"}) {
// CHECK-NEXT:     %x_1 = tg.opaque_alias %x : memref<?x?xf32> -> memref<?x?xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %n = memref.dim %out, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %o = memref.dim %out, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j = %c1 to %o step %c1 {
// CHECK-NEXT:         %s = arith.muli %j, %c2 : index
// CHECK-NEXT:         %left = arith.subi %s, %c1 : index
// CHECK-NEXT:         %right = arith.addi %s, %c1 : index
// CHECK-NEXT:         %a = memref.load %x[%i, %left] : memref<?x?xf32>
// CHECK-NEXT:         %b = memref.load %x[%i, %s] : memref<?x?xf32>
// CHECK-NEXT:         %b_1 = memref.load %x_1[%i, %s] : memref<?x?xf32>
// CHECK-NEXT:         %c = memref.load %x_1[%i, %right] : memref<?x?xf32>
// CHECK-NEXT:         %ab = arith.maximumf %a, %b : f32
// CHECK-NEXT:         %abc = arith.maximumf %ab, %c : f32
// CHECK-NEXT:         %nan = arith.cmpf une, %b, %b : f32
// CHECK-NEXT:         %r = arith.select %nan, %b_1, %abc : f32
// CHECK-NEXT:         memref.store %r, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
