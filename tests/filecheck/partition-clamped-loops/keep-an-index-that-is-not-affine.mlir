// RUN: tilegrad opt %s -p 'partition-clamped-loops' | filecheck %s

// y[o] = x[o * o - 1] where 0 <= o * o - 1 < D, through a clamp: the index does not move affinely with o,
// so no range of o passes every test; the IR comes out as it went in.

builtin.module {
  func.func @clamped(%x: memref<?xf32>, %y: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %d = memref.dim %x, %c0 : memref<?xf32>
    %n = memref.dim %y, %c0 : memref<?xf32>
    scf.for %o = %c0 to %n step %c1 {
      %twice = arith.muli %o, %o : index
      %at = arith.subi %twice, %c1 : index
      %last = arith.subi %d, %c1 : index
      %low = arith.maxsi %at, %c0 : index
      %safe = arith.minsi %low, %last : index
      %v = memref.load %x[%safe] : memref<?xf32>
      %above = arith.cmpi sge, %at, %c0 : index
      %below = arith.cmpi slt, %at, %d : index
      %inside = arith.andi %above, %below : i1
      %w = arith.select %inside, %v, %zero : f32
      memref.store %w, %y[%o] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @clamped(%x: memref<?xf32>, %y: memref<?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %d = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     %n = memref.dim %y, %c0 : memref<?xf32>
// CHECK-NEXT:     scf.for %o = %c0 to %n step %c1 {
// CHECK-NEXT:       %twice = arith.muli %o, %o : index
// CHECK-NEXT:       %at = arith.subi %twice, %c1 : index
// CHECK-NEXT:       %last = arith.subi %d, %c1 : index
// CHECK-NEXT:       %low = arith.maxsi %at, %c0 : index
// CHECK-NEXT:       %safe = arith.minsi %low, %last : index
// CHECK-NEXT:       %v = memref.load %x[%safe] : memref<?xf32>
// CHECK-NEXT:       %above = arith.cmpi sge, %at, %c0 : index
// CHECK-NEXT:       %below = arith.cmpi slt, %at, %d : index
// CHECK-NEXT:       %inside = arith.andi %above, %below : i1
// CHECK-NEXT:       %w = arith.select %inside, %v, %zero : f32
// CHECK-NEXT:       memref.store %w, %y[%o] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
