// RUN: tilegrad opt %s -p 'partition-clamped-loops{directives="Partition(stage=0)"}' | filecheck %s

// The directives option: the clamped window loop of clamped-window.mlir, named by Partition(stage=0)
// (axis 0, by clamp), is partitioned as the pass partitions it by itself.

builtin.module {
  func.func @clamped(%x: memref<?xf32>, %y: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %d = memref.dim %x, %c0 : memref<?xf32>
    %n = memref.dim %y, %c0 : memref<?xf32>
    scf.for %o = %c0 to %n step %c1 {
      %twice = arith.muli %o, %c2 : index
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
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = arith.constant -1 : index
// CHECK-NEXT:     %2 = arith.constant 1 : index
// CHECK-NEXT:     %3 = arith.constant 2 : index
// CHECK-NEXT:     %4 = arith.constant false
// CHECK-NEXT:     %5 = arith.subi %d, %c1 : index
// CHECK-NEXT:     %6 = arith.subi %5, %1 : index
// CHECK-NEXT:     %7 = arith.cmpi slt, %6, %0 : index
// CHECK-NEXT:     %8 = arith.addi %6, %1 : index
// CHECK-NEXT:     %9 = arith.select %7, %8, %6 : index
// CHECK-NEXT:     %10 = arith.divsi %9, %3 : index
// CHECK-NEXT:     %11 = arith.addi %10, %2 : index
// CHECK-NEXT:     %12 = arith.minsi %n, %11 : index
// CHECK-NEXT:     %13 = arith.addi %d, %1 : index
// CHECK-NEXT:     %14 = arith.subi %13, %1 : index
// CHECK-NEXT:     %15 = arith.cmpi slt, %14, %0 : index
// CHECK-NEXT:     %16 = arith.addi %14, %1 : index
// CHECK-NEXT:     %17 = arith.select %15, %16, %14 : index
// CHECK-NEXT:     %18 = arith.divsi %17, %3 : index
// CHECK-NEXT:     %19 = arith.addi %18, %2 : index
// CHECK-NEXT:     %20 = arith.minsi %12, %19 : index
// CHECK-NEXT:     %21 = arith.minsi %2, %n : index
// CHECK-NEXT:     %22 = arith.minsi %20, %n : index
// CHECK-NEXT:     %23 = arith.maxsi %21, %22 : index
// CHECK-NEXT:     scf.for %o = %c0 to %21 step %c1 {
// CHECK-NEXT:       %twice = arith.muli %o, %c2 : index
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
// CHECK-NEXT:     scf.for %o_1 = %21 to %23 step %c1 {
// CHECK-NEXT:       %above_1 = arith.constant true
// CHECK-NEXT:       %twice_1 = arith.muli %o_1, %c2 : index
// CHECK-NEXT:       %at_1 = arith.subi %twice_1, %c1 : index
// CHECK-NEXT:       %last_1 = arith.subi %d, %c1 : index
// CHECK-NEXT:       %v_1 = memref.load %x[%at_1] : memref<?xf32>
// CHECK-NEXT:       %inside_1 = arith.andi %above_1, %above_1 : i1
// CHECK-NEXT:       %w_1 = arith.select %inside_1, %v_1, %zero : f32
// CHECK-NEXT:       memref.store %w_1, %y[%o_1] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     scf.for %o_2 = %23 to %n step %c1 {
// CHECK-NEXT:       %twice_2 = arith.muli %o_2, %c2 : index
// CHECK-NEXT:       %at_2 = arith.subi %twice_2, %c1 : index
// CHECK-NEXT:       %last_2 = arith.subi %d, %c1 : index
// CHECK-NEXT:       %low_1 = arith.maxsi %at_2, %c0 : index
// CHECK-NEXT:       %safe_1 = arith.minsi %low_1, %last_2 : index
// CHECK-NEXT:       %v_2 = memref.load %x[%safe_1] : memref<?xf32>
// CHECK-NEXT:       %above_2 = arith.cmpi sge, %at_2, %c0 : index
// CHECK-NEXT:       %below_1 = arith.cmpi slt, %at_2, %d : index
// CHECK-NEXT:       %inside_2 = arith.andi %above_2, %below_1 : i1
// CHECK-NEXT:       %w_2 = arith.select %inside_2, %v_2, %zero : f32
// CHECK-NEXT:       memref.store %w_2, %y[%o_2] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
