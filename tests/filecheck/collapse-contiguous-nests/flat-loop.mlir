// RUN: tilegrad opt %s -p 'collapse-contiguous-nests' | filecheck %s

// y = x * s[0] over contiguous N x C x W tensors: the three loops become one over N*C*W elements, x and y
// become 1-D arguments (dims "N*C*W"), and the load of s, which no loop variable indexes, stays.

builtin.module {
  func.func @k(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C W"},
               %s: memref<1xf32> {tg.name = "s", tg.role = "input", tg.dims = "1"},
               %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N C W"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %x, %c0 : memref<?x?x?xf32>
    %c = memref.dim %x, %c1 : memref<?x?x?xf32>
    %w = memref.dim %x, %c2 : memref<?x?x?xf32>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %c step %c1 {
        scf.for %k = %c0 to %w step %c1 {
          %v = memref.load %x[%i, %j, %k] : memref<?x?x?xf32>
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
// CHECK-NEXT:   func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N*C*W"}, %s: memref<1xf32> {tg.name = "s", tg.role = "input", tg.dims = "1"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N*C*W"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = memref.dim %x, %0 : memref<?xf32>
// CHECK-NEXT:     %2 = arith.constant 1 : index
// CHECK-NEXT:     scf.for %i = %0 to %1 step %2 {
// CHECK-NEXT:       %v = memref.load %x[%i] : memref<?xf32>
// CHECK-NEXT:       %scale = memref.load %s[%c0] : memref<1xf32>
// CHECK-NEXT:       %r = arith.mulf %v, %scale : f32
// CHECK-NEXT:       memref.store %r, %y[%i] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
