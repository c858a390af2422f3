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
// CHECK-NEXT:     %2 = arith.constant 1 : index
// CHECK-NEXT:     %3 = memref.dim %w, %2 : memref<?x?x?xf32>
// CHECK-NEXT:     %4 = arith.muli %k_end, %s_end : index
// CHECK-NEXT:     %5 = arith.muli %3, %4 : index
// CHECK-NEXT:     %6 = arith.constant 1024 : index
// CHECK-NEXT:     %weight_fits = arith.cmpi sle, %5, %6 : index
// CHECK-NEXT:     scf.if %weight_fits {
// CHECK-NEXT:       %7 = arith.constant 0 : index
// CHECK-NEXT:       %8 = arith.constant 1 : index
// CHECK-NEXT:       scf.for %9 = %7 to %3 step %8 {
// CHECK-NEXT:         scf.for %10 = %7 to %k_end step %8 {
// CHECK-NEXT:           %11 = arith.muli %9, %k_end : index
// CHECK-NEXT:           %12 = arith.addi %11, %10 : index
// CHECK-NEXT:           scf.for %13 = %7 to %s_end step %8 {
// CHECK-NEXT:             %14 = arith.muli %12, %s_end : index
// CHECK-NEXT:             %15 = arith.addi %14, %13 : index
// CHECK-NEXT:             %16 = memref.load %w[%10, %9, %13] : memref<?x?x?xf32>
// CHECK-NEXT:             memref.store %16, %weight_panel[%15] : memref<1024xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:     }
// CHECK-NEXT:     %17 = arith.constant 0 : index
// CHECK-NEXT:     scf.for %n = %c0 to %n_end step %c1 {
// CHECK-NEXT:       %18 = arith.constant 1 : index
// CHECK-NEXT:       %19 = arith.muli %18, %s_end : index
// CHECK-NEXT:       %20 = arith.muli %k_end, %19 : index
// CHECK-NEXT:       %21 = arith.constant 64 : index
// CHECK-NEXT:       %22 = arith.cmpi sle, %19, %21 : index
// CHECK-NEXT:       %23 = arith.muli %3, %19 : index
// CHECK-NEXT:       %24 = arith.constant 1024 : index
// CHECK-NEXT:       %25 = arith.cmpi sle, %23, %24 : index
// CHECK-NEXT:       %26 = arith.ori %weight_fits, %25 : i1
// CHECK-NEXT:       %window_fits = arith.andi %22, %26 : i1
// CHECK-NEXT:       %27 = arith.constant 64 : index
// CHECK-NEXT:       %28 = arith.divsi %27, %19 : index
// CHECK-NEXT:       %29 = arith.constant 1024 : index
// CHECK-NEXT:       %30 = arith.muli %3, %19 : index
// CHECK-NEXT:       %31 = arith.constant 1 : index
// CHECK-NEXT:       %32 = arith.maxsi %30, %31 : index
// CHECK-NEXT:       %33 = arith.divsi %29, %32 : index
// CHECK-NEXT:       %34 = arith.minsi %28, %33 : index
// CHECK-NEXT:       %35 = arith.select %weight_fits, %28, %34 : index
// CHECK-NEXT:       %36 = arith.constant 1 : index
// CHECK-NEXT:       %block_sums = arith.maxsi %35, %36 : index
// CHECK-NEXT:       %37 = arith.constant 0 : index
// CHECK-NEXT:       %38 = arith.constant 1 : index
// CHECK-NEXT:       %39 = arith.maxsi %k_end, %38 : index
// CHECK-NEXT:       %40 = arith.select %window_fits, %block_sums, %39 : index
// CHECK-NEXT:       scf.for %41 = %37 to %39 step %40 {
// CHECK-NEXT:         %42 = arith.subi %k_end, %41 : index
// CHECK-NEXT:         %43 = arith.minsi %block_sums, %42 : index
// CHECK-NEXT:         %44 = arith.muli %43, %19 : index
// CHECK-NEXT:         %45 = arith.cmpi eq, %41, %37 : index
// CHECK-NEXT:         %46 = arith.constant true
// CHECK-NEXT:         %47 = arith.xori %weight_fits, %46 : i1
// CHECK-NEXT:         %48 = arith.andi %window_fits, %47 : i1
// CHECK-NEXT:         scf.if %48 {
// CHECK-NEXT:           %49 = arith.constant 0 : index
// CHECK-NEXT:           %50 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %51 = %49 to %3 step %50 {
// CHECK-NEXT:             scf.for %52 = %49 to %43 step %50 {
// CHECK-NEXT:               %53 = arith.muli %51, %43 : index
// CHECK-NEXT:               %54 = arith.addi %53, %52 : index
// CHECK-NEXT:               scf.for %55 = %49 to %s_end step %50 {
// CHECK-NEXT:                 %56 = arith.muli %54, %s_end : index
// CHECK-NEXT:                 %57 = arith.addi %56, %55 : index
// CHECK-NEXT:                 %58 = arith.addi %41, %52 : index
// CHECK-NEXT:                 %59 = memref.load %w[%58, %51, %55] : memref<?x?x?xf32>
// CHECK-NEXT:                 memref.store %59, %weight_panel[%57] : memref<1024xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         }
// CHECK-NEXT:         %60 = arith.select %weight_fits, %20, %44 : index
// CHECK-NEXT:         %61 = arith.muli %41, %19 : index
// CHECK-NEXT:         %62 = arith.select %weight_fits, %61, %37 : index
// CHECK-NEXT:         %tile = arith.constant 4096 : index
// CHECK-NEXT:         %tile_1 = arith.constant 16 : index
// CHECK-NEXT:         scf.for %t = %c0 to %l_end step %tile_1 {
// CHECK-NEXT:           %t_next = arith.addi %t, %tile_1 : index
// CHECK-NEXT:           %t_end = arith.minsi %t_next, %l_end : index
// CHECK-NEXT:           scf.if %window_fits {
// CHECK-NEXT:             %63 = arith.constant 16 : index
// CHECK-NEXT:             scf.for %64 = %t to %t_end step %63 {
// CHECK-NEXT:               %65 = arith.addi %64, %63 : index
// CHECK-NEXT:               %66 = arith.minsi %65, %t_end : index
// CHECK-NEXT:               %67 = arith.subi %66, %64 : index
// CHECK-NEXT:               scf.for %68 = %37 to %43 step %38 {
// CHECK-NEXT:                 scf.for %69 = %37 to %s_end step %38 {
// CHECK-NEXT:                   %70 = arith.muli %68, %s_end : index
// CHECK-NEXT:                   %71 = arith.addi %70, %69 : index
// CHECK-NEXT:                   scf.for %72 = %37 to %67 step %38 {
// CHECK-NEXT:                     %73 = arith.addi %41, %68 : index
// CHECK-NEXT:                     %74 = arith.addi %64, %72 : index
// CHECK-NEXT:                     %l1 = arith.addi %74, %c1 : index
// CHECK-NEXT:                     %o = arith.subi %l1, %69 : index
// CHECK-NEXT:                     %above = arith.cmpi sge, %o, %c0 : index
// CHECK-NEXT:                     %below = arith.cmpi slt, %o, %o_end : index
// CHECK-NEXT:                     %inside = arith.andi %above, %below : i1
// CHECK-NEXT:                     %o_up = arith.maxsi %o, %c0 : index
// CHECK-NEXT:                     %o_in = arith.minsi %o_up, %o_last : index
// CHECK-NEXT:                     %dyv = memref.load %dy[%n, %73, %o_in] : memref<?x?x?xf32>
// CHECK-NEXT:                     %75 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:                     %76 = arith.select %inside, %dyv, %75 : f32
// CHECK-NEXT:                     memref.store %76, %window_panel[%71, %72] : memref<64x16xf32>
// CHECK-NEXT:                   } {tg.loop = #tg.loop<copy, axis = 2>}
// CHECK-NEXT:                 } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:               scf.for %c = %c0 to %c_end step %c1 {
// CHECK-NEXT:                 %77 = arith.muli %c, %60 : index
// CHECK-NEXT:                 %78 = arith.addi %77, %62 : index
// CHECK-NEXT:                 scf.for %l = %37 to %67 step %c1 {
// CHECK-NEXT:                   %l_1 = arith.addi %64, %l : index
// CHECK-NEXT:                   %sum = scf.for %79 = %37 to %44 step %38 iter_args(%80 = %zero) -> (f32) {
// CHECK-NEXT:                     %81 = memref.load %window_panel[%79, %l] : memref<64x16xf32>
// CHECK-NEXT:                     %82 = arith.addi %78, %79 : index
// CHECK-NEXT:                     %83 = memref.load %weight_panel[%82] : memref<1024xf32>
// CHECK-NEXT:                     %84 = arith.mulf %81, %83 : f32
// CHECK-NEXT:                     %85 = arith.addf %80, %84 fastmath<reassoc> : f32
// CHECK-NEXT:                     scf.yield %85 : f32
// CHECK-NEXT:                   } {tg.loop = #tg.loop<reduce, axis = 1>}
// CHECK-NEXT:                   %86 = memref.load %dx[%n, %c, %l_1] : memref<?x?x?xf32>
// CHECK-NEXT:                   %87 = arith.addf %86, %sum fastmath<reassoc> : f32
// CHECK-NEXT:                   %88 = arith.select %45, %sum, %87 : f32
// CHECK-NEXT:                   memref.store %88, %dx[%n, %c, %l_1] : memref<?x?x?xf32>
// CHECK-NEXT:                 } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:           } else {
// CHECK-NEXT:             scf.for %c_1 = %c0 to %c_end step %c1 {
// CHECK-NEXT:               scf.for %l_2 = %t to %t_end step %c1 {
// CHECK-NEXT:                 %sum_1 = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:                   %part = scf.for %j = %c0 to %s_end step %c1 iter_args(%acc_j = %zero) -> (f32) {
// CHECK-NEXT:                     %l1_1 = arith.addi %l_2, %c1 : index
// CHECK-NEXT:                     %o_1 = arith.subi %l1_1, %j : index
// CHECK-NEXT:                     %above_1 = arith.cmpi sge, %o_1, %c0 : index
// CHECK-NEXT:                     %below_1 = arith.cmpi slt, %o_1, %o_end : index
// CHECK-NEXT:                     %inside_1 = arith.andi %above_1, %below_1 : i1
// CHECK-NEXT:                     %o_up_1 = arith.maxsi %o_1, %c0 : index
// CHECK-NEXT:                     %o_in_1 = arith.minsi %o_up_1, %o_last : index
// CHECK-NEXT:                     %dyv_1 = memref.load %dy[%n, %k, %o_in_1] : memref<?x?x?xf32>
// CHECK-NEXT:                     %wv = memref.load %w[%k, %c_1, %j] : memref<?x?x?xf32>
// CHECK-NEXT:                     %p = arith.mulf %dyv_1, %wv : f32
// CHECK-NEXT:                     %term = arith.select %inside_1, %p, %zero : f32
// CHECK-NEXT:                     %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
// CHECK-NEXT:                     scf.yield %acc_j_next : f32
// CHECK-NEXT:                   } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:                   %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
// CHECK-NEXT:                   scf.yield %acc_next : f32
// CHECK-NEXT:                 } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:                 memref.store %sum_1, %dx[%n, %c_1, %l_2] : memref<?x?x?xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<parallel, axis = 1>, tg.cold}
// CHECK-NEXT:           }
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
