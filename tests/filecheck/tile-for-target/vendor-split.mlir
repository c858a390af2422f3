// RUN: tilegrad opt %s -p 'tile-for-target{target=cpu num_blocks=2 vendor_split=true}' | filecheck %s

// The cpu case with vendor_split: each block takes N / 2 elements and the last block the remainder
// too (the vendor's split), instead of the balanced split that spreads the remainder one element each.

builtin.module {
  func.func @axpy(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %two = arith.constant 2.000000e+00 : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %y[%i] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module attributes {tg.tiling_plan = "{\22target\22: {\22name\22: \22cpu\22, {{.*}}}, \22num_blocks\22: 2, \22stages\22: [{\22index\22: 0, \22kind\22: \22parallel\22, \22split\22: \22outer axis split over cores (vendor: the remainder to the last core)\22, \22tiles\22: {\220\22: 32768}, \22buffers\22: [], \22double_buffered\22: false, \22extent\22: [\22dim\22, \22x\22, 0], \22balanced\22: false, \22cores\22: null, \22fusable\22: [], \22copies\22: [], \22tensors\22: [], \22remains\22: []}], \22resident\22: [], \22workspace_temps\22: {}, \22direct_gm\22: {}, \22streamed\22: {}, \22panels\22: {}, \22schedule\22: {{\[\[}}\22Parallel(stage=0, balance='vendor')\22, \22planner\22]]}"} {
// CHECK-NEXT:   func.func @axpy_stage0(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N"}, %block_id: index {tg.name = "block_id", tg.role = "block_id"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %two = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     %0 = arith.constant 2 : index
// CHECK-NEXT:     %1 = arith.divui %n, %0 : index
// CHECK-NEXT:     %2 = arith.muli %block_id, %1 : index
// CHECK-NEXT:     %3 = arith.constant 1 : index
// CHECK-NEXT:     %4 = arith.cmpi eq, %block_id, %3 : index
// CHECK-NEXT:     %5 = arith.addi %2, %1 : index
// CHECK-NEXT:     %6 = arith.select %4, %n, %5 : index
// CHECK-NEXT:     %7 = arith.constant 32768 : index
// CHECK-NEXT:     scf.for %8 = %2 to %6 step %7 {
// CHECK-NEXT:       %9 = arith.addi %8, %7 : index
// CHECK-NEXT:       %10 = arith.minsi %9, %6 : index
// CHECK-NEXT:       scf.for %i = %8 to %10 step %c1 {
// CHECK-NEXT:         %v = memref.load %x[%i] : memref<?xf32>
// CHECK-NEXT:         %w = arith.mulf %v, %two : f32
// CHECK-NEXT:         memref.store %w, %y[%i] : memref<?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
