// RUN: tilegrad opt %s -p 'branch-guarded-reads' | filecheck %s

// y[o] = where(0 <= o - 1 < D, 2 x[clamp(o - 1)], 0): the read runs in a branch on that condition, without
// its clamp; the other side yields 0.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"},
               %y: memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %d = memref.dim %x, %c0 : memref<?xf32>
    scf.for %o = %c0 to %d step %c1 {
      %at = arith.subi %o, %c1 : index
      %last = arith.subi %d, %c1 : index
      %low = arith.maxsi %at, %c0 : index
      %safe = arith.minsi %low, %last : index
      %v = memref.load %x[%safe] : memref<?xf32>
      %twice = arith.addf %v, %v : f32
      %above = arith.cmpi sge, %at, %c0 : index
      %below = arith.cmpi slt, %at, %d : index
      %inside = arith.andi %above, %below : i1
      %w = arith.select %inside, %twice, %zero : f32
      memref.store %w, %y[%o] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %d = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     scf.for %o = %c0 to %d step %c1 {
// CHECK-NEXT:       %at = arith.subi %o, %c1 : index
// CHECK-NEXT:       %above = arith.cmpi sge, %at, %c0 : index
// CHECK-NEXT:       %below = arith.cmpi slt, %at, %d : index
// CHECK-NEXT:       %inside = arith.andi %above, %below : i1
// CHECK-NEXT:       %w = scf.if %inside -> (f32) {
// CHECK-NEXT:         %v = memref.load %x[%at] : memref<?xf32>
// CHECK-NEXT:         %twice = arith.addf %v, %v : f32
// CHECK-NEXT:         scf.yield %twice : f32
// CHECK-NEXT:       } else {
// CHECK-NEXT:         scf.yield %zero : f32
// CHECK-NEXT:       }
// CHECK-NEXT:       memref.store %w, %y[%o] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
