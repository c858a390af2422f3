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
// CHECK-NEXT:     %11 = arith.constant 16 : index
// CHECK-NEXT:     %12 = arith.muli %3, %11 : index
// CHECK-NEXT:     %13 = arith.maxsi %12, %2 : index
// CHECK-NEXT:     %14 = arith.divsi %10, %13 : index
// CHECK-NEXT:     %15 = arith.maxsi %2, %14 : index
// CHECK-NEXT:     %16 = arith.constant 1024 : index
// CHECK-NEXT:     %17 = arith.maxsi %9, %2 : index
// CHECK-NEXT:     %18 = arith.divsi %16, %17 : index
// CHECK-NEXT:     %19 = arith.constant 16 : index
// CHECK-NEXT:     %20 = arith.cmpi sge, %18, %19 : index
// CHECK-NEXT:     %block_channels = arith.select %20, %8, %15 : index
// CHECK-NEXT:     %21 = arith.constant 1024 : index
// CHECK-NEXT:     %22 = arith.muli %block_channels, %3 : index
// CHECK-NEXT:     %23 = arith.maxsi %22, %2 : index
// CHECK-NEXT:     %24 = arith.divsi %21, %23 : index
// CHECK-NEXT:     %25 = arith.constant 16 : index
// CHECK-NEXT:     %26 = arith.cmpi sge, %24, %25 : index
// CHECK-NEXT:     %27 = arith.constant 1 : index
// CHECK-NEXT:     %28 = memref.dim %dw, %27 : memref<?x?x?xf32>
// CHECK-NEXT:     %29 = arith.cmpi sle, %c_end, %28 : index
// CHECK-NEXT:     %30 = arith.andi %26, %29 : i1
// CHECK-NEXT:     %31 = arith.constant 2 : index
// CHECK-NEXT:     %32 = memref.dim %dw, %31 : memref<?x?x?xf32>
// CHECK-NEXT:     %33 = arith.cmpi eq, %32, %s_end : index
// CHECK-NEXT:     %window_fits = arith.andi %30, %33 : i1
// CHECK-NEXT:     %34 = arith.minsi %o_end, %24 : index
// CHECK-NEXT:     scf.if %window_fits {
// CHECK-NEXT:       %35 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       scf.for %36 = %c0 to %k_end step %c1 {
// CHECK-NEXT:         scf.for %37 = %1 to %5 step %2 {
// CHECK-NEXT:           %38 = arith.addi %6, %37 : index
// CHECK-NEXT:           memref.store %35, %dw_flat[%36, %38] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       scf.for %39 = %c0 to %c_end step %block_channels {
// CHECK-NEXT:         %40 = arith.addi %39, %block_channels : index
// CHECK-NEXT:         %41 = arith.minsi %40, %c_end : index
// CHECK-NEXT:         %42 = arith.subi %41, %39 : index
// CHECK-NEXT:         %43 = arith.muli %42, %3 : index
// CHECK-NEXT:         %44 = arith.muli %39, %3 : index
// CHECK-NEXT:         %45 = arith.constant 1024 : index
// CHECK-NEXT:         %46 = arith.maxsi %43, %2 : index
// CHECK-NEXT:         %47 = arith.divsi %45, %46 : index
// CHECK-NEXT:         %window_panel = memref.expand_shape %0 {{\[\[}}0 : i64, 1 : i64]] output_shape [%47, %43] : memref<1024xf32> into memref<?x?xf32>
// CHECK-NEXT:         scf.for %48 = %1 to %n_end step %2 {
// CHECK-NEXT:           scf.for %49 = %1 to %o_end step %34 {
// CHECK-NEXT:             %50 = arith.addi %49, %34 : index
// CHECK-NEXT:             %51 = arith.minsi %50, %o_end : index
// CHECK-NEXT:             %52 = arith.subi %51, %49 : index
// CHECK-NEXT:             %53 = arith.muli %2, %52 : index
// CHECK-NEXT:             scf.for %54 = %39 to %41 step %2 {
// CHECK-NEXT:               scf.for %55 = %1 to %s_end step %2 {
// CHECK-NEXT:                 %56 = arith.subi %54, %39 : index
// CHECK-NEXT:                 %57 = arith.muli %56, %s_end : index
// CHECK-NEXT:                 %58 = arith.addi %57, %55 : index
// CHECK-NEXT:                 scf.for %59 = %1 to %2 step %2 {
// CHECK-NEXT:                   scf.for %60 = %1 to %52 step %2 {
// CHECK-NEXT:                     %61 = arith.addi %49, %60 : index
// CHECK-NEXT:                     %o1 = arith.subi %61, %c1 : index
// CHECK-NEXT:                     %l = arith.addi %o1, %55 : index
// CHECK-NEXT:                     %above = arith.cmpi sge, %l, %c0 : index
// CHECK-NEXT:                     %below = arith.cmpi slt, %l, %l_end : index
// CHECK-NEXT:                     %inside = arith.andi %above, %below : i1
// CHECK-NEXT:                     %l_up = arith.maxsi %l, %c0 : index
// CHECK-NEXT:                     %l_in = arith.minsi %l_up, %l_last : index
// CHECK-NEXT:                     %xv = memref.load %x[%48, %54, %l_in] : memref<?x?x?xf32>
// CHECK-NEXT:                     %62 = arith.select %inside, %xv, %35 : f32
// CHECK-NEXT:                     %63 = arith.muli %59, %52 : index
// CHECK-NEXT:                     %64 = arith.addi %63, %60 : index
// CHECK-NEXT:                     memref.store %62, %window_panel[%64, %58] : memref<?x?xf32>
// CHECK-NEXT:                   } {tg.loop = #tg.loop<copy, axis = 2>}
// CHECK-NEXT:                 } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:             scf.for %65 = %c0 to %k_end step %c1 {
// CHECK-NEXT:               scf.for %66 = %1 to %43 step %2 {
// CHECK-NEXT:                 %67 = scf.for %68 = %1 to %53 step %2 iter_args(%69 = %35) -> (f32) {
// CHECK-NEXT:                   %70 = arith.addi %49, %68 : index
// CHECK-NEXT:                   %71 = memref.load %dy[%48, %65, %70] : memref<?x?x?xf32>
// CHECK-NEXT:                   %72 = memref.load %window_panel[%68, %66] : memref<?x?xf32>
// CHECK-NEXT:                   %73 = arith.mulf %71, %72 : f32
// CHECK-NEXT:                   %74 = arith.addf %69, %73 fastmath<reassoc> : f32
// CHECK-NEXT:                   scf.yield %74 : f32
// CHECK-NEXT:                 } {tg.loop = #tg.loop<reduce, axis = 1>}
// CHECK-NEXT:                 %75 = arith.addi %44, %66 : index
// CHECK-NEXT:                 %76 = memref.load %dw_flat[%65, %75] : memref<?x?xf32>
// CHECK-NEXT:                 %77 = arith.addf %76, %67 fastmath<reassoc> : f32
// CHECK-NEXT:                 memref.store %77, %dw_flat[%65, %75] : memref<?x?xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
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
