// RUN: tilegrad opt %s -p 'branch-guarded-reads' | filecheck %s

// The condition only tests o - 1 >= 0: it does not keep the read inside x from above, so the clamp
// stays and the IR comes out as it went in.

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
      %inside = arith.andi %above, %above : i1
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
// CHECK-NEXT:       %last = arith.subi %d, %c1 : index
// CHECK-NEXT:       %low = arith.maxsi %at, %c0 : index
// CHECK-NEXT:       %safe = arith.minsi %low, %last : index
// CHECK-NEXT:       %v = memref.load %x[%safe] : memref<?xf32>
// CHECK-NEXT:       %twice = arith.addf %v, %v : f32
// CHECK-NEXT:       %above = arith.cmpi sge, %at, %c0 : index
// CHECK-NEXT:       %below = arith.cmpi slt, %at, %d : index
// CHECK-NEXT:       %inside = arith.andi %above, %above : i1
// CHECK-NEXT:       %w = arith.select %inside, %twice, %zero : f32
// CHECK-NEXT:       memref.store %w, %y[%o] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
