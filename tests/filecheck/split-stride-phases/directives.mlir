// RUN: tilegrad opt %s -p 'split-stride-phases{directives="Partition(stage=0, by=\"residue\")"}' | filecheck %s

// The directives option: the strided loop of stride-two.mlir, named by Partition(stage=0, by='residue'),
// runs one phase per residue, as the pass splits it by itself.

builtin.module {
  func.func @gather(%dy: memref<?xf32>, %dx: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %dx, %c0 : memref<?xf32>
    scf.for %p = %c0 to %n step %c1 {
      %top = arith.addi %p, %c1 : index
      %o = arith.divsi %top, %c2 : index
      %cell = arith.remsi %top, %c2 : index
      %v = memref.load %dy[%o] : memref<?xf32>
      %k = arith.index_cast %cell : index to i64
      %f = arith.sitofp %k : i64 to f32
      %w = arith.mulf %v, %f : f32
      memref.store %w, %dx[%p] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @gather(%dy: memref<?xf32>, %dx: memref<?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %n = memref.dim %dx, %c0 : memref<?xf32>
// CHECK-NEXT:     %cell = arith.constant 0 : index
// CHECK-NEXT:     %cell_1 = arith.constant 1 : index
// CHECK-NEXT:     %0 = arith.constant -1 : index
// CHECK-NEXT:     %1 = arith.constant false
// CHECK-NEXT:     %2 = arith.constant 2 : index
// CHECK-NEXT:     %3 = arith.minsi %cell, %n : index
// CHECK-NEXT:     %4 = arith.cmpi slt, %n, %cell : index
// CHECK-NEXT:     %5 = arith.addi %n, %0 : index
// CHECK-NEXT:     %6 = arith.select %4, %5, %n : index
// CHECK-NEXT:     %7 = arith.divsi %6, %2 : index
// CHECK-NEXT:     %8 = arith.muli %7, %2 : index
// CHECK-NEXT:     %9 = arith.maxsi %3, %8 : index
// CHECK-NEXT:     %10 = arith.divsi %3, %2 : index
// CHECK-NEXT:     %11 = arith.divsi %9, %2 : index
// CHECK-NEXT:     scf.for %p = %c0 to %3 step %c1 {
// CHECK-NEXT:       %top = arith.addi %p, %c1 : index
// CHECK-NEXT:       %o = arith.divsi %top, %c2 : index
// CHECK-NEXT:       %cell_2 = arith.remsi %top, %c2 : index
// CHECK-NEXT:       %v = memref.load %dy[%o] : memref<?xf32>
// CHECK-NEXT:       %k = arith.index_cast %cell_2 : index to i64
// CHECK-NEXT:       %f = arith.sitofp %k : i64 to f32
// CHECK-NEXT:       %w = arith.mulf %v, %f : f32
// CHECK-NEXT:       memref.store %w, %dx[%p] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     scf.for %12 = %10 to %11 step %cell_1 {
// CHECK-NEXT:       %13 = arith.constant 2 : index
// CHECK-NEXT:       %14 = arith.muli %12, %13 : index
// CHECK-NEXT:       %15 = arith.constant 0 : index
// CHECK-NEXT:       %16 = arith.addi %14, %15 : index
// CHECK-NEXT:       %top_1 = arith.addi %16, %c1 : index
// CHECK-NEXT:       %o_1 = arith.addi %12, %cell : index
// CHECK-NEXT:       %v_1 = memref.load %dy[%o_1] : memref<?xf32>
// CHECK-NEXT:       %k_1 = arith.index_cast %cell_1 : index to i64
// CHECK-NEXT:       %f_1 = arith.sitofp %k_1 : i64 to f32
// CHECK-NEXT:       %w_1 = arith.mulf %v_1, %f_1 : f32
// CHECK-NEXT:       memref.store %w_1, %dx[%16] : memref<?xf32>
// CHECK-NEXT:       %17 = arith.constant 1 : index
// CHECK-NEXT:       %18 = arith.addi %14, %17 : index
// CHECK-NEXT:       %top_2 = arith.addi %18, %c1 : index
// CHECK-NEXT:       %o_2 = arith.addi %12, %cell_1 : index
// CHECK-NEXT:       %v_2 = memref.load %dy[%o_2] : memref<?xf32>
// CHECK-NEXT:       %k_2 = arith.index_cast %cell : index to i64
// CHECK-NEXT:       %f_2 = arith.sitofp %k_2 : i64 to f32
// CHECK-NEXT:       %w_2 = arith.mulf %v_2, %f_2 : f32
// CHECK-NEXT:       memref.store %w_2, %dx[%18] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     scf.for %p_1 = %9 to %n step %c1 {
// CHECK-NEXT:       %top_3 = arith.addi %p_1, %c1 : index
// CHECK-NEXT:       %o_3 = arith.divsi %top_3, %c2 : index
// CHECK-NEXT:       %cell_3 = arith.remsi %top_3, %c2 : index
// CHECK-NEXT:       %v_3 = memref.load %dy[%o_3] : memref<?xf32>
// CHECK-NEXT:       %k_3 = arith.index_cast %cell_3 : index to i64
// CHECK-NEXT:       %f_3 = arith.sitofp %k_3 : i64 to f32
// CHECK-NEXT:       %w_3 = arith.mulf %v_3, %f_3 : f32
// CHECK-NEXT:       memref.store %w_3, %dx[%p_1] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
