// RUN: tilegrad opt %s -p 'pack-windowed-operands{panel_bytes=4096 columns=16}' | filecheck %s

// A conv1d's grad_input as tile-for-target leaves it: dx[n, c, l] = sum over k, j of
// where(0 <= l + 1 - j < L2, dy[n, k, clamp(l + 1 - j)] * w[k, c, j], 0): the window's sum
// variable j with coefficient -1, and w indexed by the sums k, j with the output's channel c
// between them (w[k, q] is no view of w). The loop over c moves inside the tile of positions; w is
// copied once, before the stage, to a stack panel as w_panel[c Q + (k S + j)] where C x K x S
// elements fit (4096 bytes: 1024 float32); where that and K x S panel rows fit (64 of 16 float32),
// the tile packs dy, masked, as panel[(k, j), p] and the sum is one flat sum of
// panel[q, l - t] * w_panel[c Q + q]; elsewhere the tile runs as it was.

builtin.module {
  func.func @conv1d_dx(%dy: memref<?x?x?xf32> {tg.name = "dy", tg.role = "input"},
                       %w: memref<?x?x?xf32> {tg.name = "w", tg.role = "input"},
                       %dx: memref<?x?x?xf32> {tg.name = "dx", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %n_end = memref.dim %dx, %c0 : memref<?x?x?xf32>
    %c_end = memref.dim %dx, %c1 : memref<?x?x?xf32>
    %l_end = memref.dim %dx, %c2 : memref<?x?x?xf32>
    %k_end = memref.dim %dy, %c1 : memref<?x?x?xf32>
    %o_end = memref.dim %dy, %c2 : memref<?x?x?xf32>
    %s_end = memref.dim %w, %c2 : memref<?x?x?xf32>
    %o_last = arith.subi %o_end, %c1 : index
    scf.for %n = %c0 to %n_end step %c1 {
      scf.for %c = %c0 to %c_end step %c1 {
        %tile = arith.constant 4096 : index
        scf.for %t = %c0 to %l_end step %tile {
          %t_next = arith.addi %t, %tile : index
          %t_end = arith.minsi %t_next, %l_end : index
          scf.for %l = %t to %t_end step %c1 {
            %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
              %part = scf.for %j = %c0 to %s_end step %c1 iter_args(%acc_j = %zero) -> (f32) {
                %l1 = arith.addi %l, %c1 : index
                %o = arith.subi %l1, %j : index
                %above = arith.cmpi sge, %o, %c0 : index
                %below = arith.cmpi slt, %o, %o_end : index
                %inside = arith.andi %above, %below : i1
                %o_up = arith.maxsi %o, %c0 : index
                %o_in = arith.minsi %o_up, %o_last : index
                %dyv = memref.load %dy[%n, %k, %o_in] : memref<?x?x?xf32>
                %wv = memref.load %w[%k, %c, %j] : memref<?x?x?xf32>
                %p = arith.mulf %dyv, %wv : f32
                %term = arith.select %inside, %p, %zero : f32
                %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
                scf.yield %acc_j_next : f32
              } {tg.loop = #tg.loop<reduce, axis = 0>}
              %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
              scf.yield %acc_next : f32
            } {tg.loop = #tg.loop<reduce, axis = 0>}
            memref.store %sum, %dx[%n, %c, %l] : memref<?x?x?xf32>
          } {tg.loop = #tg.loop<parallel, axis = 2>}
        } {tg.loop = #tg.loop<tile, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @conv1d_dx(%dy: memref<?x?x?xf32> {tg.name = "dy", tg.role = "input"}, %w: memref<?x?x?xf32> {tg.name = "w", tg.role = "input"}, %dx: memref<?x?x?xf32> {tg.name = "dx", tg.role = "output"}) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<1x64x16xf32>
// CHECK-NEXT:     %window_panel = memref.collapse_shape %0 {{\[\[}}0 : i64, 1 : i64], [2 : i64]] : memref<1x64x16xf32> into memref<64x16xf32>
// CHECK-NEXT:     %1 = memref.alloca() : memref<1x1024xf32>
// CHECK-NEXT:     %weight_panel = memref.collapse_shape %1 {{\[\[}}0 : i64, 1 : i64]] : memref<1x1024xf32> into memref<1024xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %n_end = memref.dim %dx, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %c_end = memref.dim %dx, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %l_end = memref.dim %dx, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %k_end = memref.dim %dy, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %o_end = memref.dim %dy, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %s_end = memref.dim %w, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %o_last = arith.subi %o_end, %c1 : index
// CHECK-NEXT:     %2 = arith.constant 0 : index
// CHECK-NEXT:     %3 = arith.constant 1 : index
// CHECK-NEXT:     %4 = arith.constant 1 : index
// CHECK-NEXT:     %5 = memref.dim %w, %4 : memref<?x?x?xf32>
// CHECK-NEXT:     %6 = arith.muli %k_end, %s_end : index
// CHECK-NEXT:     %7 = arith.muli %5, %6 : index
// CHECK-NEXT:     %8 = arith.constant 1024 : index
// CHECK-NEXT:     %9 = arith.cmpi sle, %7, %8 : index
// CHECK-NEXT:     %10 = arith.constant 64 : index
// CHECK-NEXT:     %11 = arith.cmpi sle, %6, %10 : index
// CHECK-NEXT:     %window_fits = arith.andi %9, %11 : i1
// CHECK-NEXT:     scf.if %window_fits {
// CHECK-NEXT:       scf.for %12 = %2 to %5 step %3 {
// CHECK-NEXT:         scf.for %13 = %2 to %k_end step %3 {
// CHECK-NEXT:           %14 = arith.muli %12, %k_end : index
// CHECK-NEXT:           %15 = arith.addi %14, %13 : index
// CHECK-NEXT:           scf.for %16 = %2 to %s_end step %3 {
// CHECK-NEXT:             %17 = arith.muli %15, %s_end : index
// CHECK-NEXT:             %18 = arith.addi %17, %16 : index
// CHECK-NEXT:             %19 = memref.load %w[%13, %12, %16] : memref<?x?x?xf32>
// CHECK-NEXT:             memref.store %19, %weight_panel[%18] : memref<1024xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %n = %c0 to %n_end step %c1 {
// CHECK-NEXT:       %tile = arith.constant 4096 : index
// CHECK-NEXT:       %tile_1 = arith.constant 16 : index
// CHECK-NEXT:       %20 = arith.muli %k_end, %s_end : index
// CHECK-NEXT:       scf.for %t = %c0 to %l_end step %tile_1 {
// CHECK-NEXT:         %t_next = arith.addi %t, %tile_1 : index
// CHECK-NEXT:         %t_end = arith.minsi %t_next, %l_end : index
// CHECK-NEXT:         scf.if %window_fits {
// CHECK-NEXT:           %21 = arith.constant 0 : index
// CHECK-NEXT:           %22 = arith.constant 1 : index
// CHECK-NEXT:           %23 = arith.constant 16 : index
// CHECK-NEXT:           scf.for %24 = %t to %t_end step %23 {
// CHECK-NEXT:             %25 = arith.addi %24, %23 : index
// CHECK-NEXT:             %26 = arith.minsi %25, %t_end : index
// CHECK-NEXT:             %27 = arith.subi %26, %24 : index
// CHECK-NEXT:             scf.for %28 = %21 to %k_end step %22 {
// CHECK-NEXT:               scf.for %29 = %21 to %s_end step %22 {
// CHECK-NEXT:                 %30 = arith.muli %28, %s_end : index
// CHECK-NEXT:                 %31 = arith.addi %30, %29 : index
// CHECK-NEXT:                 scf.for %32 = %21 to %27 step %22 {
// CHECK-NEXT:                   %33 = arith.addi %24, %32 : index
// CHECK-NEXT:                   %l1 = arith.addi %33, %c1 : index
// CHECK-NEXT:                   %o = arith.subi %l1, %29 : index
// CHECK-NEXT:                   %above = arith.cmpi sge, %o, %c0 : index
// CHECK-NEXT:                   %below = arith.cmpi slt, %o, %o_end : index
// CHECK-NEXT:                   %inside = arith.andi %above, %below : i1
// CHECK-NEXT:                   %o_up = arith.maxsi %o, %c0 : index
// CHECK-NEXT:                   %o_in = arith.minsi %o_up, %o_last : index
// CHECK-NEXT:                   %dyv = memref.load %dy[%n, %28, %o_in] : memref<?x?x?xf32>
// CHECK-NEXT:                   %34 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:                   %35 = arith.select %inside, %dyv, %34 : f32
// CHECK-NEXT:                   memref.store %35, %window_panel[%31, %32] : memref<64x16xf32>
// CHECK-NEXT:                 } {tg.loop = #tg.loop<copy, axis = 2>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:             scf.for %c = %c0 to %c_end step %c1 {
// CHECK-NEXT:               %36 = arith.muli %c, %20 : index
// CHECK-NEXT:               scf.for %l = %21 to %27 step %c1 {
// CHECK-NEXT:                 %l_1 = arith.addi %24, %l : index
// CHECK-NEXT:                 %sum = scf.for %37 = %21 to %20 step %22 iter_args(%38 = %zero) -> (f32) {
// CHECK-NEXT:                   %39 = memref.load %window_panel[%37, %l] : memref<64x16xf32>
// CHECK-NEXT:                   %40 = arith.addi %36, %37 : index
// CHECK-NEXT:                   %41 = memref.load %weight_panel[%40] : memref<1024xf32>
// CHECK-NEXT:                   %42 = arith.mulf %39, %41 : f32
// CHECK-NEXT:                   %43 = arith.addf %38, %42 fastmath<reassoc> : f32
// CHECK-NEXT:                   scf.yield %43 : f32
// CHECK-NEXT:                 } {tg.loop = #tg.loop<reduce, axis = 1>}
// CHECK-NEXT:                 memref.store %sum, %dx[%n, %c, %l_1] : memref<?x?x?xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:         } else {
// CHECK-NEXT:           scf.for %c_1 = %c0 to %c_end step %c1 {
// CHECK-NEXT:             scf.for %l_2 = %t to %t_end step %c1 {
// CHECK-NEXT:               %sum_1 = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:                 %part = scf.for %j = %c0 to %s_end step %c1 iter_args(%acc_j = %zero) -> (f32) {
// CHECK-NEXT:                   %l1_1 = arith.addi %l_2, %c1 : index
// CHECK-NEXT:                   %o_1 = arith.subi %l1_1, %j : index
// CHECK-NEXT:                   %above_1 = arith.cmpi sge, %o_1, %c0 : index
// CHECK-NEXT:                   %below_1 = arith.cmpi slt, %o_1, %o_end : index
// CHECK-NEXT:                   %inside_1 = arith.andi %above_1, %below_1 : i1
// CHECK-NEXT:                   %o_up_1 = arith.maxsi %o_1, %c0 : index
// CHECK-NEXT:                   %o_in_1 = arith.minsi %o_up_1, %o_last : index
// CHECK-NEXT:                   %dyv_1 = memref.load %dy[%n, %k, %o_in_1] : memref<?x?x?xf32>
// CHECK-NEXT:                   %wv = memref.load %w[%k, %c_1, %j] : memref<?x?x?xf32>
// CHECK-NEXT:                   %p = arith.mulf %dyv_1, %wv : f32
// CHECK-NEXT:                   %term = arith.select %inside_1, %p, %zero : f32
// CHECK-NEXT:                   %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
// CHECK-NEXT:                   scf.yield %acc_j_next : f32
// CHECK-NEXT:                 } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:                 %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
// CHECK-NEXT:                 scf.yield %acc_next : f32
// CHECK-NEXT:               } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:               memref.store %sum_1, %dx[%n, %c_1, %l_2] : memref<?x?x?xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:         }
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
