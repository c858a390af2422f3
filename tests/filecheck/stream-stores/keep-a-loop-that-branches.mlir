// RUN: tilegrad opt %s -p 'stream-stores{min_bytes=1}' | filecheck %s

// The row loop stores to y in a branch too: it is left alone (even with min_bytes=1) and the IR comes out
// as it went in.

builtin.module {
  func.func @k(%x: memref<?x?xf32, strided<[?, 1]>> {tg.name = "x", tg.role = "input"},
               %y: memref<?x?xf32, strided<[?, 1]>> {tg.name = "y", tg.role = "output"},
               %z: memref<?x?xf32, strided<[?, 1]>> {tg.name = "z", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32, strided<[?, 1]>>
    %m = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, 1]>>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        %w = arith.mulf %v, %v : f32
        %b = arith.cmpf ogt, %v, %v : f32
        scf.if %b { memref.store %w, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>> }
        memref.store %w, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        %old = memref.load %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        %sum = arith.addf %old, %w : f32
        memref.store %sum, %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
      }
    }
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?xf32, strided<[?, 1]>> {tg.name = "x", tg.role = "input"}, %y: memref<?x?xf32, strided<[?, 1]>> {tg.name = "y", tg.role = "output"}, %z: memref<?x?xf32, strided<[?, 1]>> {tg.name = "z", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %m step %c1 {
// CHECK-NEXT:         %v = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %w = arith.mulf %v, %v : f32
// CHECK-NEXT:         %b = arith.cmpf ogt, %v, %v : f32
// CHECK-NEXT:         scf.if %b {
// CHECK-NEXT:           memref.store %w, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         }
// CHECK-NEXT:         memref.store %w, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %old = memref.load %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %sum = arith.addf %old, %w : f32
// CHECK-NEXT:         memref.store %sum, %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
