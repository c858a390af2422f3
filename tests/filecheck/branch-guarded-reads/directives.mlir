// RUN: tilegrad opt %s -p 'branch-guarded-reads{directives="Specialize(stage=0, condition=\"x in bounds\"); Specialize(stage=0, condition=\"w in bounds\", versioned=False)"}' | filecheck %s

// The directives option: y[o] = where(0 <= o - 1 < D, 2 x[clamp(o - 1)], 0) + where(0 <= o - 1 < D,
// w[clamp(o - 1)], 0), two selects the pass would both branch. The read of x that Specialize names runs in a
// branch, unclamped; the read of w, which versioned=False turns off, keeps its clamp and its select.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"},
               %w: memref<?xf32> {tg.name = "w", tg.role = "input", tg.dims = "N"},
               %y: memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %d = memref.dim %x, %c0 : memref<?xf32>
    scf.for %o = %c0 to %d step %c1 {
      %at = arith.subi %o, %c1 : index
      %above = arith.cmpi sge, %at, %c0 : index
      %below = arith.cmpi slt, %at, %d : index
      %inside = arith.andi %above, %below : i1
      %last = arith.subi %d, %c1 : index
      %low = arith.maxsi %at, %c0 : index
      %safe = arith.minsi %low, %last : index
      %v = memref.load %x[%safe] : memref<?xf32>
      %twice = arith.addf %v, %v : f32
      %from_x = arith.select %inside, %twice, %zero : f32
      %last2 = arith.subi %d, %c1 : index
      %low2 = arith.maxsi %at, %c0 : index
      %safe2 = arith.minsi %low2, %last2 : index
      %u = memref.load %w[%safe2] : memref<?xf32>
      %from_w = arith.select %inside, %u, %zero : f32
      %sum = arith.addf %from_x, %from_w : f32
      memref.store %sum, %y[%o] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"}, %w: memref<?xf32> {tg.name = "w", tg.role = "input", tg.dims = "N"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %d = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     scf.for %o = %c0 to %d step %c1 {
// CHECK-NEXT:       %at = arith.subi %o, %c1 : index
// CHECK-NEXT:       %above = arith.cmpi sge, %at, %c0 : index
// CHECK-NEXT:       %below = arith.cmpi slt, %at, %d : index
// CHECK-NEXT:       %inside = arith.andi %above, %below : i1
// CHECK-NEXT:       %from_x = scf.if %inside -> (f32) {
// CHECK-NEXT:         %v = memref.load %x[%at] : memref<?xf32>
// CHECK-NEXT:         %twice = arith.addf %v, %v : f32
// CHECK-NEXT:         scf.yield %twice : f32
// CHECK-NEXT:       } else {
// CHECK-NEXT:         scf.yield %zero : f32
// CHECK-NEXT:       }
// CHECK-NEXT:       %last2 = arith.subi %d, %c1 : index
// CHECK-NEXT:       %low2 = arith.maxsi %at, %c0 : index
// CHECK-NEXT:       %safe2 = arith.minsi %low2, %last2 : index
// CHECK-NEXT:       %u = memref.load %w[%safe2] : memref<?xf32>
// CHECK-NEXT:       %from_w = arith.select %inside, %u, %zero : f32
// CHECK-NEXT:       %sum = arith.addf %from_x, %from_w : f32
// CHECK-NEXT:       memref.store %sum, %y[%o] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
