// RUN: tilegrad opt %s -p 'pack-windowed-reductions{panel_bytes=4096}' | filecheck %s

// A conv1d's grad_weight as tile-for-target leaves it: dw[k, c, j] = sum over n, o of
// where(0 <= o - 1 + j < L, dy[n, k, o] * x[n, c, clamp(o - 1 + j)], 0), the loop over k split over
// cores. Where 16 positions of all C x S columns fit the panel (4096 bytes: 1024 float32), the
// core's dw[k, q] start at 0; per n and block of B = min(O, 1024 / (C S)) positions o0.. the block
// packs x, masked, as panel[p, (c, j)] (q = c S + j: no division), then adds one GEMM, for k, q:
// dw_flat[k, q] += sum over p of dy[n, k, o0 + p] * panel[p, q] (dy's last index alone is a sum
// variable: blocks of one n); elsewhere the stage runs as it was.

builtin.module {
  func.func @conv1d_dw(%dy: memref<?x?x?xf32> {tg.name = "dy", tg.role = "input"},
                       %x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input"},
                       %dw: memref<?x?x?xf32> {tg.name = "dw", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %n_end = memref.dim %x, %c0 : memref<?x?x?xf32>
    %c_end = memref.dim %x, %c1 : memref<?x?x?xf32>
    %l_end = memref.dim %x, %c2 : memref<?x?x?xf32>
    %k_end = memref.dim %dy, %c1 : memref<?x?x?xf32>
    %o_end = memref.dim %dy, %c2 : memref<?x?x?xf32>
    %s_end = memref.dim %dw, %c2 : memref<?x?x?xf32>
    %l_last = arith.subi %l_end, %c1 : index
    scf.for %k = %c0 to %k_end step %c1 {
      scf.for %c = %c0 to %c_end step %c1 {
        %tile = arith.constant 4096 : index
        scf.for %t = %c0 to %s_end step %tile {
          %t_next = arith.addi %t, %tile : index
          %t_end = arith.minsi %t_next, %s_end : index
          scf.for %j = %t to %t_end step %c1 {
            %sum = scf.for %n = %c0 to %n_end step %c1 iter_args(%acc = %zero) -> (f32) {
              %part = scf.for %o = %c0 to %o_end step %c1 iter_args(%acc_o = %zero) -> (f32) {
                %o1 = arith.subi %o, %c1 : index
                %l = arith.addi %o1, %j : index
                %above = arith.cmpi sge, %l, %c0 : index
                %below = arith.cmpi slt, %l, %l_end : index
                %inside = arith.andi %above, %below : i1
                %dyv = memref.load %dy[%n, %k, %o] : memref<?x?x?xf32>
                %l_up = arith.maxsi %l, %c0 : index
                %l_in = arith.minsi %l_up, %l_last : index
                %xv = memref.load %x[%n, %c, %l_in] : memref<?x?x?xf32>
                %p = arith.mulf %dyv, %xv : f32
                %term = arith.select %inside, %p, %zero : f32
                %acc_o_next = arith.addf %acc_o, %term fastmath<reassoc> : f32
                scf.yield %acc_o_next : f32
              } {tg.loop = #tg.loop<reduce, axis = 0>}
              %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
              scf.yield %acc_next : f32
            } {tg.loop = #tg.loop<reduce, axis = 0>}
            memref.store %sum, %dw[%k, %c, %j] : memref<?x?x?xf32>
          } {tg.loop = #tg.loop<parallel, axis = 2>}
        } {tg.loop = #tg.loop<tile, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @conv1d_dw(%dy: memref<?x?x?xf32> {tg.name = "dy", tg.role = "input"}, %x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input"}, %dw: memref<?x?x?xf32> {tg.name = "dw", tg.role = "output"}) {
// CHECK-NEXT:     %dw_flat = memref.collapse_shape %dw {{\[\[}}0 : i64], [1 : i64, 2 : i64]] : memref<?x?x?xf32> into memref<?x?xf32>
// CHECK-NEXT:     %0 = memref.alloca() : memref<1024xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %n_end = memref.dim %x, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %c_end = memref.dim %x, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %l_end = memref.dim %x, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %k_end = memref.dim %dy, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %o_end = memref.dim %dy, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %s_end = memref.dim %dw, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %l_last = arith.subi %l_end, %c1 : index
// CHECK-NEXT:     %1 = arith.constant 0 : index
// CHECK-NEXT:     %2 = arith.constant 1 : index
// CHECK-NEXT:     %3 = arith.muli %2, %s_end : index
// CHECK-NEXT:     %4 = arith.subi %c_end, %c0 : index
// CHECK-NEXT:     %5 = arith.muli %4, %3 : index
// CHECK-NEXT:     %6 = arith.muli %c0, %3 : index
// CHECK-NEXT:     %7 = arith.constant 1 : index
// CHECK-NEXT:     %8 = memref.dim %dw, %7 : memref<?x?x?xf32>
// CHECK-NEXT:     %9 = arith.muli %8, %3 : index
// CHECK-NEXT:     %10 = arith.constant 1024 : index
// CHECK-NEXT:     %11 = arith.maxsi %9, %2 : index
// CHECK-NEXT:     %12 = arith.divsi %10, %11 : index
// CHECK-NEXT:     %13 = arith.constant 16 : index
// CHECK-NEXT:     %14 = arith.cmpi sge, %12, %13 : index
// CHECK-NEXT:     %15 = arith.constant 1 : index
// CHECK-NEXT:     %16 = memref.dim %dw, %15 : memref<?x?x?xf32>
// CHECK-NEXT:     %17 = arith.cmpi sle, %c_end, %16 : index
// CHECK-NEXT:     %18 = arith.andi %14, %17 : i1
// CHECK-NEXT:     %19 = arith.constant 2 : index
// CHECK-NEXT:     %20 = memref.dim %dw, %19 : memref<?x?x?xf32>
// CHECK-NEXT:     %21 = arith.cmpi eq, %20, %s_end : index
// CHECK-NEXT:     %window_fits = arith.andi %18, %21 : i1
// CHECK-NEXT:     %22 = arith.minsi %o_end, %12 : index
// CHECK-NEXT:     %23 = arith.constant 1024 : index
// CHECK-NEXT:     %24 = arith.maxsi %5, %2 : index
// CHECK-NEXT:     %25 = arith.divsi %23, %24 : index
// CHECK-NEXT:     %window_panel = memref.expand_shape %0 {{\[\[}}0 : i64, 1 : i64]] output_shape [%25, %5] : memref<1024xf32> into memref<?x?xf32>
// CHECK-NEXT:     scf.if %window_fits {
// CHECK-NEXT:       %26 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       scf.for %27 = %c0 to %k_end step %c1 {
// CHECK-NEXT:         scf.for %28 = %1 to %5 step %2 {
// CHECK-NEXT:           %29 = arith.addi %6, %28 : index
// CHECK-NEXT:           memref.store %26, %dw_flat[%27, %29] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       scf.for %30 = %1 to %n_end step %2 {
// CHECK-NEXT:         scf.for %31 = %1 to %o_end step %22 {
// CHECK-NEXT:           %32 = arith.addi %31, %22 : index
// CHECK-NEXT:           %33 = arith.minsi %32, %o_end : index
// CHECK-NEXT:           %34 = arith.subi %33, %31 : index
// CHECK-NEXT:           %35 = arith.muli %2, %34 : index
// CHECK-NEXT:           scf.for %36 = %c0 to %c_end step %2 {
// CHECK-NEXT:             scf.for %37 = %1 to %s_end step %2 {
// CHECK-NEXT:               %38 = arith.subi %36, %c0 : index
// CHECK-NEXT:               %39 = arith.muli %38, %s_end : index
// CHECK-NEXT:               %40 = arith.addi %39, %37 : index
// CHECK-NEXT:               scf.for %41 = %1 to %2 step %2 {
// CHECK-NEXT:                 scf.for %42 = %1 to %34 step %2 {
// CHECK-NEXT:                   %43 = arith.addi %31, %42 : index
// CHECK-NEXT:                   %o1 = arith.subi %43, %c1 : index
// CHECK-NEXT:                   %l = arith.addi %o1, %37 : index
// CHECK-NEXT:                   %above = arith.cmpi sge, %l, %c0 : index
// CHECK-NEXT:                   %below = arith.cmpi slt, %l, %l_end : index
// CHECK-NEXT:                   %inside = arith.andi %above, %below : i1
// CHECK-NEXT:                   %l_up = arith.maxsi %l, %c0 : index
// CHECK-NEXT:                   %l_in = arith.minsi %l_up, %l_last : index
// CHECK-NEXT:                   %xv = memref.load %x[%30, %36, %l_in] : memref<?x?x?xf32>
// CHECK-NEXT:                   %44 = arith.select %inside, %xv, %26 : f32
// CHECK-NEXT:                   %45 = arith.muli %41, %34 : index
// CHECK-NEXT:                   %46 = arith.addi %45, %42 : index
// CHECK-NEXT:                   memref.store %44, %window_panel[%46, %40] : memref<?x?xf32>
// CHECK-NEXT:                 } {tg.loop = #tg.loop<copy, axis = 2>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:           scf.for %47 = %c0 to %k_end step %c1 {
// CHECK-NEXT:             scf.for %48 = %1 to %5 step %2 {
// CHECK-NEXT:               %49 = scf.for %50 = %1 to %35 step %2 iter_args(%51 = %26) -> (f32) {
// CHECK-NEXT:                 %52 = arith.addi %31, %50 : index
// CHECK-NEXT:                 %53 = memref.load %dy[%30, %47, %52] : memref<?x?x?xf32>
// CHECK-NEXT:                 %54 = memref.load %window_panel[%50, %48] : memref<?x?xf32>
// CHECK-NEXT:                 %55 = arith.mulf %53, %54 : f32
// CHECK-NEXT:                 %56 = arith.addf %51, %55 fastmath<reassoc> : f32
// CHECK-NEXT:                 scf.yield %56 : f32
// CHECK-NEXT:               } {tg.loop = #tg.loop<reduce, axis = 1>}
// CHECK-NEXT:               %57 = arith.addi %6, %48 : index
// CHECK-NEXT:               %58 = memref.load %dw_flat[%47, %57] : memref<?x?xf32>
// CHECK-NEXT:               %59 = arith.addf %58, %49 fastmath<reassoc> : f32
// CHECK-NEXT:               memref.store %59, %dw_flat[%47, %57] : memref<?x?xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:     } else {
// CHECK-NEXT:       scf.for %k = %c0 to %k_end step %c1 {
// CHECK-NEXT:         scf.for %c = %c0 to %c_end step %c1 {
// CHECK-NEXT:           %tile = arith.constant 4096 : index
// CHECK-NEXT:           scf.for %t = %c0 to %s_end step %tile {
// CHECK-NEXT:             %t_next = arith.addi %t, %tile : index
// CHECK-NEXT:             %t_end = arith.minsi %t_next, %s_end : index
// CHECK-NEXT:             scf.for %j = %t to %t_end step %c1 {
// CHECK-NEXT:               %sum = scf.for %n = %c0 to %n_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:                 %part = scf.for %o = %c0 to %o_end step %c1 iter_args(%acc_o = %zero) -> (f32) {
// CHECK-NEXT:                   %o1_1 = arith.subi %o, %c1 : index
// CHECK-NEXT:                   %l_1 = arith.addi %o1_1, %j : index
// CHECK-NEXT:                   %above_1 = arith.cmpi sge, %l_1, %c0 : index
// CHECK-NEXT:                   %below_1 = arith.cmpi slt, %l_1, %l_end : index
// CHECK-NEXT:                   %inside_1 = arith.andi %above_1, %below_1 : i1
// CHECK-NEXT:                   %dyv = memref.load %dy[%n, %k, %o] : memref<?x?x?xf32>
// CHECK-NEXT:                   %l_up_1 = arith.maxsi %l_1, %c0 : index
// CHECK-NEXT:                   %l_in_1 = arith.minsi %l_up_1, %l_last : index
// CHECK-NEXT:                   %xv_1 = memref.load %x[%n, %c, %l_in_1] : memref<?x?x?xf32>
// CHECK-NEXT:                   %p = arith.mulf %dyv, %xv_1 : f32
// CHECK-NEXT:                   %term = arith.select %inside_1, %p, %zero : f32
// CHECK-NEXT:                   %acc_o_next = arith.addf %acc_o, %term fastmath<reassoc> : f32
// CHECK-NEXT:                   scf.yield %acc_o_next : f32
// CHECK-NEXT:                 } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:                 %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
// CHECK-NEXT:                 scf.yield %acc_next : f32
// CHECK-NEXT:               } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:               memref.store %sum, %dw[%k, %c, %j] : memref<?x?x?xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64, tg.cold}
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
