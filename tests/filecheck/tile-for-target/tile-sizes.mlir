// RUN: tilegrad opt %s -p 'tile-for-target{target=ascend910b num_blocks=2 tile_role="parallel" tile_sizes=128}' | filecheck %s

// The same kernel with the tile size given by the schedule (tile_role="parallel" tile_sizes=128) instead
// of the one the planner picks: the UB buffers hold one 128-element tile each, single buffered.

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

// CHECK:      builtin.module attributes {tg.tiling_plan = "{\22target\22: {\22name\22: \22ascend910b\22, {{.*}}}, \22num_blocks\22: 2, \22stages\22: [{\22index\22: 0, \22kind\22: \22parallel\22, \22split\22: \22outer axis split over cores (balanced)\22, \22tiles\22: {\220\22: 128}, \22buffers\22: [{\22name\22: \22x\22, \22stage\22: 0, \22shape\22: [128], \22slots\22: 1, \22element_bytes\22: 4, \22copies\22: \22in\22, \22packed\22: false, \22align\22: 32, \22affine\22: {}, \22offset\22: 0, \22min_bytes\22: null}, {\22name\22: \22y\22, \22stage\22: 0, \22shape\22: [128], \22slots\22: 1, \22element_bytes\22: 4, \22copies\22: \22out\22, \22packed\22: false, \22align\22: 32, \22affine\22: {}, \22offset\22: 512, \22min_bytes\22: null}], \22double_buffered\22: false, \22extent\22: [\22dim\22, \22x\22, 0], \22balanced\22: true, \22cores\22: null, \22fusable\22: [], \22copies\22: [{\22tensor\22: \22x\22, \22direction\22: \22in\22, \22element_bytes\22: 4, \22length\22: [\22sub\22, [\22min\22, [\22add\22, [\22var\22, 1], 128], [\22add\22, [\22add\22, [\22mul\22, [\22var\22, 0], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]], [\22min\22, [\22var\22, 0], [\22mod\22, [\22dim\22, \22x\22, 0], 2]]], [\22add\22, [\22mul\22, [\22gt\22, [\22mod\22, [\22dim\22, \22x\22, 0], 2], [\22var\22, 0]], [\22add\22, [\22floordiv\22, [\22dim\22, \22x\22, 0], 2], 1]], [\22mul\22, [\22sub\22, 1, [\22gt\22, [\22mod\22, [\22dim\22, \22x\22, 0], 2], [\22var\22, 0]]], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]]]]], [\22var\22, 1]], \22loops\22: {{\[\[}}0, 2, 1], {{\[\[}}\22add\22, [\22mul\22, [\22var\22, 0], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]], [\22min\22, [\22var\22, 0], [\22mod\22, [\22dim\22, \22x\22, 0], 2]]], [\22add\22, [\22add\22, [\22mul\22, [\22var\22, 0], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]], [\22min\22, [\22var\22, 0], [\22mod\22, [\22dim\22, \22x\22, 0], 2]]], [\22add\22, [\22mul\22, [\22gt\22, [\22mod\22, [\22dim\22, \22x\22, 0], 2], [\22var\22, 0]], [\22add\22, [\22floordiv\22, [\22dim\22, \22x\22, 0], 2], 1]], [\22mul\22, [\22sub\22, 1, [\22gt\22, [\22mod\22, [\22dim\22, \22x\22, 0], 2], [\22var\22, 0]]], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]]]], 128]], \22when\22: []}, {\22tensor\22: \22y\22, \22direction\22: \22out\22, \22element_bytes\22: 4, \22length\22: [\22sub\22, [\22min\22, [\22add\22, [\22var\22, 1], 128], [\22add\22, [\22add\22, [\22mul\22, [\22var\22, 0], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]], [\22min\22, [\22var\22, 0], [\22mod\22, [\22dim\22, \22x\22, 0], 2]]], [\22add\22, [\22mul\22, [\22gt\22, [\22mod\22, [\22dim\22, \22x\22, 0], 2], [\22var\22, 0]], [\22add\22, [\22floordiv\22, [\22dim\22, \22x\22, 0], 2], 1]], [\22mul\22, [\22sub\22, 1, [\22gt\22, [\22mod\22, [\22dim\22, \22x\22, 0], 2], [\22var\22, 0]]], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]]]]], [\22var\22, 1]], \22loops\22: {{\[\[}}0, 2, 1], {{\[\[}}\22add\22, [\22mul\22, [\22var\22, 0], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]], [\22min\22, [\22var\22, 0], [\22mod\22, [\22dim\22, \22x\22, 0], 2]]], [\22add\22, [\22add\22, [\22mul\22, [\22var\22, 0], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]], [\22min\22, [\22var\22, 0], [\22mod\22, [\22dim\22, \22x\22, 0], 2]]], [\22add\22, [\22mul\22, [\22gt\22, [\22mod\22, [\22dim\22, \22x\22, 0], 2], [\22var\22, 0]], [\22add\22, [\22floordiv\22, [\22dim\22, \22x\22, 0], 2], 1]], [\22mul\22, [\22sub\22, 1, [\22gt\22, [\22mod\22, [\22dim\22, \22x\22, 0], 2], [\22var\22, 0]]], [\22floordiv\22, [\22dim\22, \22x\22, 0], 2]]]], 128]], \22when\22: []}], \22tensors\22: [{\22name\22: \22x\22, \22reads\22: true, \22writes\22: false, \22element_bytes\22: 4, \22size\22: [\22mul\22, 1, [\22dim\22, \22x\22, 0]]}, {\22name\22: \22y\22, \22reads\22: false, \22writes\22: true, \22element_bytes\22: 4, \22size\22: [\22mul\22, 1, [\22dim\22, \22y\22, 0]]}], \22remains\22: []}], \22resident\22: [], \22workspace_temps\22: {}, \22direct_gm\22: {}, \22streamed\22: {}, \22panels\22: {}, \22schedule\22: {{\[\[}}\22Parallel(stage=0)\22, \22planner\22]]}"} {
// CHECK-NEXT:   func.func @axpy_stage0(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N"}, %block_id: index {tg.name = "block_id", tg.role = "block_id"}, %ub: memref<196608xi8> {tg.name = "ub", tg.role = "ub"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %two = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     %0 = arith.constant 2 : index
// CHECK-NEXT:     %1 = arith.divui %n, %0 : index
// CHECK-NEXT:     %2 = arith.remui %n, %0 : index
// CHECK-NEXT:     %3 = arith.minsi %block_id, %2 : index
// CHECK-NEXT:     %4 = arith.muli %block_id, %1 : index
// CHECK-NEXT:     %5 = arith.addi %4, %3 : index
// CHECK-NEXT:     %6 = arith.cmpi ult, %block_id, %2 : index
// CHECK-NEXT:     %7 = arith.constant 1 : index
// CHECK-NEXT:     %8 = arith.addi %1, %7 : index
// CHECK-NEXT:     %9 = arith.select %6, %8, %1 : index
// CHECK-NEXT:     %10 = arith.addi %5, %9 : index
// CHECK-NEXT:     %11 = arith.constant 128 : index
// CHECK-NEXT:     %12 = tg.ub_alloc %ub[0] "x" : memref<196608xi8> -> memref<128xf32>
// CHECK-NEXT:     %13 = tg.ub_alloc %ub[512] "y" : memref<196608xi8> -> memref<128xf32>
// CHECK-NEXT:     scf.for %14 = %5 to %10 step %11 {
// CHECK-NEXT:       %15 = arith.addi %14, %11 : index
// CHECK-NEXT:       %16 = arith.minsi %15, %10 : index
// CHECK-NEXT:       %17 = arith.constant 0 : index
// CHECK-NEXT:       %18 = arith.subi %16, %14 : index
// CHECK-NEXT:       tg.copy "gm_to_ub" %x[%14] to %12[%17] len %18 : memref<?xf32>, memref<128xf32>
// CHECK-NEXT:       %19 = arith.constant 0 : index
// CHECK-NEXT:       scf.for %i = %14 to %16 step %c1 {
// CHECK-NEXT:         %20 = arith.subi %i, %14 : index
// CHECK-NEXT:         %v = memref.load %12[%20] : memref<128xf32>
// CHECK-NEXT:         %w = arith.mulf %v, %two : f32
// CHECK-NEXT:         %21 = arith.subi %i, %14 : index
// CHECK-NEXT:         memref.store %w, %13[%21] : memref<128xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       %22 = arith.subi %16, %14 : index
// CHECK-NEXT:       tg.copy "ub_to_gm" %13[%19] to %y[%14] len %22 : memref<128xf32>, memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
