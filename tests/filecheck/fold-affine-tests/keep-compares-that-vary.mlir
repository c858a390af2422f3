// RUN: tilegrad opt %s -p 'fold-affine-tests' | filecheck %s

// Both cells vary with the loop's variable ((2q + 1) - 3(q - 1) and (2q + 1) - 1): no compare folds, so the
// IR comes out as it went in.

builtin.module {
  func.func @phase(%dy: memref<?xf32> {tg.name = "dy", tg.role = "input"},
                   %dx: memref<?xf32> {tg.name = "dx", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %zero = arith.constant 0.000000e+00 : f32
    %n = memref.dim %dy, %c0 : memref<?xf32>
    %last = arith.subi %n, %c1 : index
    scf.for %q = %c0 to %n step %c1 {
      %twice = arith.muli %q, %c2 : index
      %top = arith.addi %twice, %c1 : index
      %before = arith.subi %q, %c1 : index
      %reach = arith.muli %before, %c3 : index
      %cell = arith.subi %top, %reach : index
      %in_window = arith.cmpi slt, %cell, %c3 : index
      %exists = arith.cmpi sge, %before, %c0 : index
      %both = arith.andi %exists, %in_window : i1
      %low = arith.maxsi %before, %c0 : index
      %at = arith.minsi %low, %last : index
      %v = memref.load %dy[%at] : memref<?xf32>
      %wide = arith.extf %v : f32 to f64
      %narrow = arith.truncf %wide : f64 to f32
      %term = arith.select %both, %narrow, %zero : f32
      %own = memref.load %dy[%q] : memref<?xf32>
      %own_cell = arith.subi %top, %c1 : index
      %own_inside = arith.cmpi slt, %own_cell, %c3 : index
      %own_term = arith.select %own_inside, %own, %zero : f32
      %sum = arith.addf %term, %own_term : f32
      memref.store %sum, %dx[%twice] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @phase(%dy: memref<?xf32> {tg.name = "dy", tg.role = "input"}, %dx: memref<?xf32> {tg.name = "dx", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %n = memref.dim %dy, %c0 : memref<?xf32>
// CHECK-NEXT:     %last = arith.subi %n, %c1 : index
// CHECK-NEXT:     scf.for %q = %c0 to %n step %c1 {
// CHECK-NEXT:       %twice = arith.muli %q, %c2 : index
// CHECK-NEXT:       %top = arith.addi %twice, %c1 : index
// CHECK-NEXT:       %before = arith.subi %q, %c1 : index
// CHECK-NEXT:       %reach = arith.muli %before, %c3 : index
// CHECK-NEXT:       %cell = arith.subi %top, %reach : index
// CHECK-NEXT:       %in_window = arith.cmpi slt, %cell, %c3 : index
// CHECK-NEXT:       %exists = arith.cmpi sge, %before, %c0 : index
// CHECK-NEXT:       %both = arith.andi %exists, %in_window : i1
// CHECK-NEXT:       %low = arith.maxsi %before, %c0 : index
// CHECK-NEXT:       %at = arith.minsi %low, %last : index
// CHECK-NEXT:       %v = memref.load %dy[%at] : memref<?xf32>
// CHECK-NEXT:       %wide = arith.extf %v : f32 to f64
// CHECK-NEXT:       %narrow = arith.truncf %wide : f64 to f32
// CHECK-NEXT:       %term = arith.select %both, %narrow, %zero : f32
// CHECK-NEXT:       %own = memref.load %dy[%q] : memref<?xf32>
// CHECK-NEXT:       %own_cell = arith.subi %top, %c1 : index
// CHECK-NEXT:       %own_inside = arith.cmpi slt, %own_cell, %c3 : index
// CHECK-NEXT:       %own_term = arith.select %own_inside, %own, %zero : f32
// CHECK-NEXT:       %sum = arith.addf %term, %own_term : f32
// CHECK-NEXT:       memref.store %sum, %dx[%twice] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
