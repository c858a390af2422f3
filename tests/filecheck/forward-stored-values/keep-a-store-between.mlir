// RUN: tilegrad opt %s -p 'forward-stored-values' | filecheck %s

// A store to t[0] between the store of t[i] and its load may change the element: the load stays and
// the IR comes out as it went in.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"},
               %t: memref<?xf32> {tg.name = "t", tg.role = "temp"},
               %u: memref<?xf32> {tg.name = "u", tg.role = "temp"},
               %y: memref<?xf32> {tg.name = "y", tg.role = "output"},
               %z: memref<?xf32> {tg.name = "z", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf32>
      %s = arith.mulf %v, %v : f32
      memref.store %s, %t[%i] : memref<?xf32>
      memref.store %v, %t[%c0] : memref<?xf32>
      %w = memref.load %t[%i] : memref<?xf32>
      %r = arith.addf %w, %v : f32
      memref.store %r, %y[%i] : memref<?xf32>
      %w2 = memref.load %t[%i] : memref<?xf32>
      memref.store %w2, %z[%i] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"}, %t: memref<?xf32> {tg.name = "t", tg.role = "temp"}, %u: memref<?xf32> {tg.name = "u", tg.role = "temp"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"}, %z: memref<?xf32> {tg.name = "z", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       %v = memref.load %x[%i] : memref<?xf32>
// CHECK-NEXT:       %s = arith.mulf %v, %v : f32
// CHECK-NEXT:       memref.store %s, %t[%i] : memref<?xf32>
// CHECK-NEXT:       memref.store %v, %t[%c0] : memref<?xf32>
// CHECK-NEXT:       %w = memref.load %t[%i] : memref<?xf32>
// CHECK-NEXT:       %r = arith.addf %w, %v : f32
// CHECK-NEXT:       memref.store %r, %y[%i] : memref<?xf32>
// CHECK-NEXT:       %w2 = memref.load %t[%i] : memref<?xf32>
// CHECK-NEXT:       memref.store %w2, %z[%i] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
