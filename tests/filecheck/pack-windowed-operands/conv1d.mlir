// RUN: tilegrad opt %s -p 'pack-windowed-operands{panel_bytes=4096 columns=16}' | filecheck %s

// A conv1d as tile-for-target leaves it: y[n, k, b] = sum over c, j of where(0 <= b - 1 + j < L,
// x[n, c, clamp(b - 1 + j)] * w[k, c, j], 0). The loop over k moves inside the tile of positions
// (16 wide); where C x S rows fit the panel (4096 bytes: 64 rows of 16 float32), the tile first
// packs x, masked, as panel[(c, j), p] (q = c S + j: no division), and the sum is one flat sum of
// panel[q, b - t] * w_flat[k, q]; elsewhere the tile runs as it was.

builtin.module {
  func.func @conv1d(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input"},
                    %w: memref<?x?x?xf32> {tg.name = "w", tg.role = "input"},
                    %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %n_end = memref.dim %x, %c0 : memref<?x?x?xf32>
    %c_end = memref.dim %x, %c1 : memref<?x?x?xf32>
    %l_end = memref.dim %x, %c2 : memref<?x?x?xf32>
    %k_end = memref.dim %w, %c0 : memref<?x?x?xf32>
    %s_end = memref.dim %w, %c2 : memref<?x?x?xf32>
    %l_last = arith.subi %l_end, %c1 : index
    scf.for %n = %c0 to %n_end step %c1 {
      scf.for %k = %c0 to %k_end step %c1 {
        %tile = arith.constant 4096 : index
        scf.for %t = %c0 to %l_end step %tile {
          %t_next = arith.addi %t, %tile : index
          %t_end = arith.minsi %t_next, %l_end : index
          scf.for %b = %t to %t_end step %c1 {
            %sum = scf.for %c = %c0 to %c_end step %c1 iter_args(%acc = %zero) -> (f32) {
              %part = scf.for %j = %c0 to %s_end step %c1 iter_args(%acc_j = %zero) -> (f32) {
                %b1 = arith.subi %b, %c1 : index
                %l = arith.addi %b1, %j : index
                %above = arith.cmpi sge, %l, %c0 : index
                %below = arith.cmpi slt, %l, %l_end : index
                %inside = arith.andi %above, %below : i1
                %l_up = arith.maxsi %l, %c0 : index
                %l_in = arith.minsi %l_up, %l_last : index
                %xv = memref.load %x[%n, %c, %l_in] : memref<?x?x?xf32>
                %wv = memref.load %w[%k, %c, %j] : memref<?x?x?xf32>
                %p = arith.mulf %xv, %wv : f32
                %term = arith.select %inside, %p, %zero : f32
                %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
                scf.yield %acc_j_next : f32
              } {tg.loop = #tg.loop<reduce, axis = 0>}
              %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
              scf.yield %acc_next : f32
            } {tg.loop = #tg.loop<reduce, axis = 0>}
            memref.store %sum, %y[%n, %k, %b] : memref<?x?x?xf32>
          } {tg.loop = #tg.loop<parallel, axis = 2>}
        } {tg.loop = #tg.loop<tile, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @conv1d(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input"}, %w: memref<?x?x?xf32> {tg.name = "w", tg.role = "input"}, %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %w_flat = memref.collapse_shape %w {{\[\[}}0 : i64], [1 : i64, 2 : i64]] : memref<?x?x?xf32> into memref<?x?xf32>
// CHECK-NEXT:     %0 = memref.alloca() : memref<1x64x16xf32>
// CHECK-NEXT:     %window_panel = memref.collapse_shape %0 {{\[\[}}0 : i64, 1 : i64], [2 : i64]] : memref<1x64x16xf32> into memref<64x16xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %n_end = memref.dim %x, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %c_end = memref.dim %x, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %l_end = memref.dim %x, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %k_end = memref.dim %w, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %s_end = memref.dim %w, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %l_last = arith.subi %l_end, %c1 : index
// CHECK-NEXT:     scf.for %n = %c0 to %n_end step %c1 {
// CHECK-NEXT:       %tile = arith.constant 4096 : index
// CHECK-NEXT:       %tile_1 = arith.constant 16 : index
// CHECK-NEXT:       %1 = arith.constant 1 : index
// CHECK-NEXT:       %2 = arith.muli %1, %s_end : index
// CHECK-NEXT:       %3 = arith.muli %c_end, %2 : index
// CHECK-NEXT:       %4 = arith.constant 64 : index
// CHECK-NEXT:       %5 = arith.cmpi sle, %2, %4 : index
// CHECK-NEXT:       %6 = arith.constant 2 : index
// CHECK-NEXT:       %7 = memref.dim %w, %6 : memref<?x?x?xf32>
// CHECK-NEXT:       %8 = arith.cmpi eq, %7, %s_end : index
// CHECK-NEXT:       %9 = arith.andi %5, %8 : i1
// CHECK-NEXT:       %10 = arith.constant 1 : index
// CHECK-NEXT:       %11 = memref.dim %w, %10 : memref<?x?x?xf32>
// CHECK-NEXT:       %12 = arith.cmpi sle, %c_end, %11 : index
// CHECK-NEXT:       %window_fits = arith.andi %9, %12 : i1
// CHECK-NEXT:       %13 = arith.constant 64 : index
// CHECK-NEXT:       %14 = arith.divsi %13, %2 : index
// CHECK-NEXT:       %15 = arith.constant 1 : index
// CHECK-NEXT:       %block_sums = arith.maxsi %14, %15 : index
// CHECK-NEXT:       %16 = arith.constant 0 : index
// CHECK-NEXT:       %17 = arith.constant 1 : index
// CHECK-NEXT:       scf.for %t = %c0 to %l_end step %tile_1 {
// CHECK-NEXT:         %t_next = arith.addi %t, %tile_1 : index
// CHECK-NEXT:         %t_end = arith.minsi %t_next, %l_end : index
// CHECK-NEXT:         scf.if %window_fits {
// CHECK-NEXT:           %18 = arith.constant 16 : index
// CHECK-NEXT:           scf.for %19 = %t to %t_end step %18 {
// CHECK-NEXT:             %20 = arith.addi %19, %18 : index
// CHECK-NEXT:             %21 = arith.minsi %20, %t_end : index
// CHECK-NEXT:             %22 = arith.subi %21, %19 : index
// CHECK-NEXT:             scf.for %23 = %16 to %c_end step %block_sums {
// CHECK-NEXT:               %24 = arith.subi %c_end, %23 : index
// CHECK-NEXT:               %25 = arith.minsi %block_sums, %24 : index
// CHECK-NEXT:               %26 = arith.muli %25, %2 : index
// CHECK-NEXT:               %27 = arith.cmpi eq, %23, %16 : index
// CHECK-NEXT:               %28 = arith.muli %23, %2 : index
// CHECK-NEXT:               scf.for %29 = %16 to %25 step %17 {
// CHECK-NEXT:                 scf.for %30 = %16 to %s_end step %17 {
// CHECK-NEXT:                   %31 = arith.muli %29, %s_end : index
// CHECK-NEXT:                   %32 = arith.addi %31, %30 : index
// CHECK-NEXT:                   scf.for %33 = %16 to %22 step %17 {
// CHECK-NEXT:                     %34 = arith.addi %23, %29 : index
// CHECK-NEXT:                     %35 = arith.addi %19, %33 : index
// CHECK-NEXT:                     %b1 = arith.subi %35, %c1 : index
// CHECK-NEXT:                     %l = arith.addi %b1, %30 : index
// CHECK-NEXT:                     %above = arith.cmpi sge, %l, %c0 : index
// CHECK-NEXT:                     %below = arith.cmpi slt, %l, %l_end : index
// CHECK-NEXT:                     %inside = arith.andi %above, %below : i1
// CHECK-NEXT:                     %l_up = arith.maxsi %l, %c0 : index
// CHECK-NEXT:                     %l_in = arith.minsi %l_up, %l_last : index
// CHECK-NEXT:                     %xv = memref.load %x[%n, %34, %l_in] : memref<?x?x?xf32>
// CHECK-NEXT:                     %36 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:                     %37 = arith.select %inside, %xv, %36 : f32
// CHECK-NEXT:                     memref.store %37, %window_panel[%32, %33] : memref<64x16xf32>
// CHECK-NEXT:                   } {tg.loop = #tg.loop<copy, axis = 2>}
// CHECK-NEXT:                 } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:               scf.for %k = %c0 to %k_end step %c1 {
// CHECK-NEXT:                 scf.for %b = %16 to %22 step %c1 {
// CHECK-NEXT:                   %b_1 = arith.addi %19, %b : index
// CHECK-NEXT:                   %sum = scf.for %38 = %16 to %26 step %17 iter_args(%39 = %zero) -> (f32) {
// CHECK-NEXT:                     %40 = memref.load %window_panel[%38, %b] : memref<64x16xf32>
// CHECK-NEXT:                     %41 = arith.addi %28, %38 : index
// CHECK-NEXT:                     %42 = memref.load %w_flat[%k, %41] : memref<?x?xf32>
// CHECK-NEXT:                     %43 = arith.mulf %40, %42 : f32
// CHECK-NEXT:                     %44 = arith.addf %39, %43 fastmath<reassoc> : f32
// CHECK-NEXT:                     scf.yield %44 : f32
// CHECK-NEXT:                   } {tg.loop = #tg.loop<reduce, axis = 1>}
// CHECK-NEXT:                   %45 = memref.load %y[%n, %k, %b_1] : memref<?x?x?xf32>
// CHECK-NEXT:                   %46 = arith.addf %45, %sum fastmath<reassoc> : f32
// CHECK-NEXT:                   %47 = arith.select %27, %sum, %46 : f32
// CHECK-NEXT:                   memref.store %47, %y[%n, %k, %b_1] : memref<?x?x?xf32>
// CHECK-NEXT:                 } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:         } else {
// CHECK-NEXT:           scf.for %k_1 = %c0 to %k_end step %c1 {
// CHECK-NEXT:             scf.for %b_2 = %t to %t_end step %c1 {
// CHECK-NEXT:               %sum_1 = scf.for %c = %c0 to %c_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:                 %part = scf.for %j = %c0 to %s_end step %c1 iter_args(%acc_j = %zero) -> (f32) {
// CHECK-NEXT:                   %b1_1 = arith.subi %b_2, %c1 : index
// CHECK-NEXT:                   %l_1 = arith.addi %b1_1, %j : index
// CHECK-NEXT:                   %above_1 = arith.cmpi sge, %l_1, %c0 : index
// CHECK-NEXT:                   %below_1 = arith.cmpi slt, %l_1, %l_end : index
// CHECK-NEXT:                   %inside_1 = arith.andi %above_1, %below_1 : i1
// CHECK-NEXT:                   %l_up_1 = arith.maxsi %l_1, %c0 : index
// CHECK-NEXT:                   %l_in_1 = arith.minsi %l_up_1, %l_last : index
// CHECK-NEXT:                   %xv_1 = memref.load %x[%n, %c, %l_in_1] : memref<?x?x?xf32>
// CHECK-NEXT:                   %wv = memref.load %w[%k_1, %c, %j] : memref<?x?x?xf32>
// CHECK-NEXT:                   %p = arith.mulf %xv_1, %wv : f32
// CHECK-NEXT:                   %term = arith.select %inside_1, %p, %zero : f32
// CHECK-NEXT:                   %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
// CHECK-NEXT:                   scf.yield %acc_j_next : f32
// CHECK-NEXT:                 } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:                 %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
// CHECK-NEXT:                 scf.yield %acc_next : f32
// CHECK-NEXT:               } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:               memref.store %sum_1, %y[%n, %k_1, %b_2] : memref<?x?x?xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>, tg.cold}
// CHECK-NEXT:         }
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
