// RUN: tilegrad opt %s -p 'pack-windowed-operands{panel_bytes=4096 columns=16}' | filecheck %s

// A stride-2 conv1d's grad_input as split-window-phases leaves it (tests/filecheck/split-window-phases/
// conv1d-stride-two.mlir): inside the loop over n, a loop over the phase of l; in it, the taps of the
// class the phase keeps, w[k, c, 2 j + residue] (residue made in the phase loop), and the window
// dy[n, k, clamp(l - j + quotient)]. w is copied to its panel in the phase loop, before the loop over
// c (the outermost loop its offset is made outside of), as w_panel[c Q + (k U + j)] with the taps
// 2 j + residue; the tile packs dy as for a stride-1 conv (conv1d_input_grad.mlir).

builtin.module {
  func.func @conv1d_dx(%dy: memref<?x?x?xf32> {tg.name = "dy", tg.role = "input"}, %w: memref<?x?x?xf32> {tg.name = "w", tg.role = "input"}, %dx: memref<?x?x?xf32> {tg.name = "dx", tg.role = "output"}) {
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
      %0 = arith.constant 0 : index
      %1 = arith.constant 2 : index
      %2 = arith.constant 1 : index
      scf.for %phase = %0 to %1 step %2 {
        %3 = arith.constant 1 : index
        %4 = arith.addi %phase, %3 : index
        %5 = arith.constant 2 : index
        %residue = arith.remsi %4, %5 : index
        %6 = arith.constant -1 : index
        %7 = arith.muli %residue, %6 : index
        %8 = arith.addi %phase, %7 : index
        %9 = arith.addi %8, %3 : index
        %quotient = arith.divsi %9, %5 : index
        %10 = arith.subi %c0, %phase : index
        %11 = arith.addi %10, %3 : index
        %12 = arith.constant 0 : index
        %13 = arith.cmpi slt, %11, %12 : index
        %14 = arith.addi %11, %6 : index
        %15 = arith.select %13, %14, %11 : index
        %16 = arith.divsi %15, %5 : index
        %17 = arith.subi %l_end, %phase : index
        %18 = arith.addi %17, %3 : index
        %19 = arith.cmpi slt, %18, %12 : index
        %20 = arith.addi %18, %6 : index
        %21 = arith.select %19, %20, %18 : index
        %l_end_1 = arith.divsi %21, %5 : index
        %22 = arith.subi %s_end, %residue : index
        %23 = arith.addi %22, %3 : index
        %24 = arith.cmpi slt, %23, %12 : index
        %25 = arith.addi %23, %6 : index
        %26 = arith.select %24, %25, %23 : index
        %27 = arith.divsi %26, %5 : index
        scf.for %c = %c0 to %c_end step %c1 {
          %tile = arith.constant 4096 : index
          scf.for %t = %16 to %l_end_1 step %tile {
            %t_next = arith.addi %t, %tile : index
            %t_end = arith.minsi %t_next, %l_end_1 : index
            scf.for %l = %t to %t_end step %c1 {
              %28 = arith.constant 2 : index
              %29 = arith.muli %l, %28 : index
              %l_1 = arith.addi %29, %phase : index
              %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
                %part = scf.for %j = %c0 to %27 step %c1 iter_args(%acc_j = %zero) -> (f32) {
                  %30 = arith.constant 2 : index
                  %31 = arith.muli %j, %30 : index
                  %j_1 = arith.addi %31, %residue : index
                  %l1 = arith.addi %l_1, %c1 : index
                  %o = arith.subi %l1, %j_1 : index
                  %32 = arith.constant -1 : index
                  %33 = arith.muli %j, %32 : index
                  %34 = arith.addi %l, %33 : index
                  %half = arith.addi %34, %quotient : index
                  %above = arith.cmpi sge, %half, %c0 : index
                  %rem = arith.constant 0 : index
                  %even = arith.constant true
                  %kept = arith.andi %above, %even : i1
                  %below = arith.cmpi slt, %half, %o_end : index
                  %inside = arith.andi %kept, %below : i1
                  %o_up = arith.maxsi %half, %c0 : index
                  %o_in = arith.minsi %o_up, %o_last : index
                  %dyv = memref.load %dy[%n, %k, %o_in] : memref<?x?x?xf32>
                  %wv = memref.load %w[%k, %c, %j_1] : memref<?x?x?xf32>
                  %p = arith.mulf %dyv, %wv : f32
                  %term = arith.select %inside, %p, %zero : f32
                  %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
                  scf.yield %acc_j_next : f32
                } {tg.loop = #tg.loop<reduce, axis = 0>}
                %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
                scf.yield %acc_next : f32
              } {tg.loop = #tg.loop<reduce, axis = 0>}
              memref.store %sum, %dx[%n, %c, %l_1] : memref<?x?x?xf32>
            } {tg.loop = #tg.loop<parallel, axis = 2>}
          } {tg.loop = #tg.loop<tile, axis = 2>}
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      }
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
// CHECK-NEXT:     scf.for %n = %c0 to %n_end step %c1 {
// CHECK-NEXT:       %2 = arith.constant 0 : index
// CHECK-NEXT:       %3 = arith.constant 2 : index
// CHECK-NEXT:       %4 = arith.constant 1 : index
// CHECK-NEXT:       scf.for %phase = %2 to %3 step %4 {
// CHECK-NEXT:         %5 = arith.constant 1 : index
// CHECK-NEXT:         %6 = arith.addi %phase, %5 : index
// CHECK-NEXT:         %7 = arith.constant 2 : index
// CHECK-NEXT:         %residue = arith.remsi %6, %7 : index
// CHECK-NEXT:         %8 = arith.constant -1 : index
// CHECK-NEXT:         %9 = arith.muli %residue, %8 : index
// CHECK-NEXT:         %10 = arith.addi %phase, %9 : index
// CHECK-NEXT:         %11 = arith.addi %10, %5 : index
// CHECK-NEXT:         %quotient = arith.divsi %11, %7 : index
// CHECK-NEXT:         %12 = arith.subi %c0, %phase : index
// CHECK-NEXT:         %13 = arith.addi %12, %5 : index
// CHECK-NEXT:         %14 = arith.constant 0 : index
// CHECK-NEXT:         %15 = arith.cmpi slt, %13, %14 : index
// CHECK-NEXT:         %16 = arith.addi %13, %8 : index
// CHECK-NEXT:         %17 = arith.select %15, %16, %13 : index
// CHECK-NEXT:         %18 = arith.divsi %17, %7 : index
// CHECK-NEXT:         %19 = arith.subi %l_end, %phase : index
// CHECK-NEXT:         %20 = arith.addi %19, %5 : index
// CHECK-NEXT:         %21 = arith.cmpi slt, %20, %14 : index
// CHECK-NEXT:         %22 = arith.addi %20, %8 : index
// CHECK-NEXT:         %23 = arith.select %21, %22, %20 : index
// CHECK-NEXT:         %l_end_1 = arith.divsi %23, %7 : index
// CHECK-NEXT:         %24 = arith.subi %s_end, %residue : index
// CHECK-NEXT:         %25 = arith.addi %24, %5 : index
// CHECK-NEXT:         %26 = arith.cmpi slt, %25, %14 : index
// CHECK-NEXT:         %27 = arith.addi %25, %8 : index
// CHECK-NEXT:         %28 = arith.select %26, %27, %25 : index
// CHECK-NEXT:         %29 = arith.divsi %28, %7 : index
// CHECK-NEXT:         %tile = arith.constant 4096 : index
// CHECK-NEXT:         %tile_1 = arith.constant 16 : index
// CHECK-NEXT:         %30 = arith.constant 1 : index
// CHECK-NEXT:         %31 = memref.dim %w, %30 : memref<?x?x?xf32>
// CHECK-NEXT:         %32 = arith.muli %k_end, %29 : index
// CHECK-NEXT:         %33 = arith.muli %31, %32 : index
// CHECK-NEXT:         %34 = arith.constant 1024 : index
// CHECK-NEXT:         %weight_fits = arith.cmpi sle, %33, %34 : index
// CHECK-NEXT:         scf.if %weight_fits {
// CHECK-NEXT:           %35 = arith.constant 0 : index
// CHECK-NEXT:           %36 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %37 = %35 to %31 step %36 {
// CHECK-NEXT:             scf.for %38 = %35 to %k_end step %36 {
// CHECK-NEXT:               %39 = arith.muli %37, %k_end : index
// CHECK-NEXT:               %40 = arith.addi %39, %38 : index
// CHECK-NEXT:               scf.for %41 = %35 to %29 step %36 {
// CHECK-NEXT:                 %42 = arith.muli %40, %29 : index
// CHECK-NEXT:                 %43 = arith.addi %42, %41 : index
// CHECK-NEXT:                 %44 = arith.constant 2 : index
// CHECK-NEXT:                 %45 = arith.muli %41, %44 : index
// CHECK-NEXT:                 %46 = arith.addi %45, %residue : index
// CHECK-NEXT:                 %47 = memref.load %w[%38, %37, %46] : memref<?x?x?xf32>
// CHECK-NEXT:                 memref.store %47, %weight_panel[%43] : memref<1024xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         }
// CHECK-NEXT:         %48 = arith.constant 0 : index
// CHECK-NEXT:         %49 = arith.constant 1 : index
// CHECK-NEXT:         %50 = arith.muli %49, %29 : index
// CHECK-NEXT:         %51 = arith.muli %k_end, %50 : index
// CHECK-NEXT:         %52 = arith.constant 64 : index
// CHECK-NEXT:         %53 = arith.cmpi sle, %50, %52 : index
// CHECK-NEXT:         %54 = arith.muli %31, %50 : index
// CHECK-NEXT:         %55 = arith.constant 1024 : index
// CHECK-NEXT:         %56 = arith.cmpi sle, %54, %55 : index
// CHECK-NEXT:         %57 = arith.ori %weight_fits, %56 : i1
// CHECK-NEXT:         %window_fits = arith.andi %53, %57 : i1
// CHECK-NEXT:         %58 = arith.constant 64 : index
// CHECK-NEXT:         %59 = arith.divsi %58, %50 : index
// CHECK-NEXT:         %60 = arith.constant 1024 : index
// CHECK-NEXT:         %61 = arith.muli %31, %50 : index
// CHECK-NEXT:         %62 = arith.constant 1 : index
// CHECK-NEXT:         %63 = arith.maxsi %61, %62 : index
// CHECK-NEXT:         %64 = arith.divsi %60, %63 : index
// CHECK-NEXT:         %65 = arith.minsi %59, %64 : index
// CHECK-NEXT:         %66 = arith.select %weight_fits, %59, %65 : index
// CHECK-NEXT:         %67 = arith.constant 1 : index
// CHECK-NEXT:         %block_sums = arith.maxsi %66, %67 : index
// CHECK-NEXT:         %68 = arith.constant 0 : index
// CHECK-NEXT:         %69 = arith.constant 1 : index
// CHECK-NEXT:         %70 = arith.maxsi %k_end, %69 : index
// CHECK-NEXT:         %71 = arith.select %window_fits, %block_sums, %70 : index
// CHECK-NEXT:         scf.for %72 = %68 to %70 step %71 {
// CHECK-NEXT:           %73 = arith.subi %k_end, %72 : index
// CHECK-NEXT:           %74 = arith.minsi %block_sums, %73 : index
// CHECK-NEXT:           %75 = arith.muli %74, %50 : index
// CHECK-NEXT:           %76 = arith.cmpi eq, %72, %68 : index
// CHECK-NEXT:           %77 = arith.constant true
// CHECK-NEXT:           %78 = arith.xori %weight_fits, %77 : i1
// CHECK-NEXT:           %79 = arith.andi %window_fits, %78 : i1
// CHECK-NEXT:           scf.if %79 {
// CHECK-NEXT:             %80 = arith.constant 0 : index
// CHECK-NEXT:             %81 = arith.constant 1 : index
// CHECK-NEXT:             scf.for %82 = %80 to %31 step %81 {
// CHECK-NEXT:               scf.for %83 = %80 to %74 step %81 {
// CHECK-NEXT:                 %84 = arith.muli %82, %74 : index
// CHECK-NEXT:                 %85 = arith.addi %84, %83 : index
// CHECK-NEXT:                 scf.for %86 = %80 to %29 step %81 {
// CHECK-NEXT:                   %87 = arith.muli %85, %29 : index
// CHECK-NEXT:                   %88 = arith.addi %87, %86 : index
// CHECK-NEXT:                   %89 = arith.addi %72, %83 : index
// CHECK-NEXT:                   %90 = arith.constant 2 : index
// CHECK-NEXT:                   %91 = arith.muli %86, %90 : index
// CHECK-NEXT:                   %92 = arith.addi %91, %residue : index
// CHECK-NEXT:                   %93 = memref.load %w[%89, %82, %92] : memref<?x?x?xf32>
// CHECK-NEXT:                   memref.store %93, %weight_panel[%88] : memref<1024xf32>
// CHECK-NEXT:                 } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:           }
// CHECK-NEXT:           %94 = arith.select %weight_fits, %51, %75 : index
// CHECK-NEXT:           %95 = arith.muli %72, %50 : index
// CHECK-NEXT:           %96 = arith.select %weight_fits, %95, %68 : index
// CHECK-NEXT:           scf.for %t = %18 to %l_end_1 step %tile_1 {
// CHECK-NEXT:             %t_next = arith.addi %t, %tile_1 : index
// CHECK-NEXT:             %t_end = arith.minsi %t_next, %l_end_1 : index
// CHECK-NEXT:             scf.if %window_fits {
// CHECK-NEXT:               %97 = arith.constant 16 : index
// CHECK-NEXT:               scf.for %98 = %t to %t_end step %97 {
// CHECK-NEXT:                 %99 = arith.addi %98, %97 : index
// CHECK-NEXT:                 %100 = arith.minsi %99, %t_end : index
// CHECK-NEXT:                 %101 = arith.subi %100, %98 : index
// CHECK-NEXT:                 scf.for %102 = %68 to %74 step %69 {
// CHECK-NEXT:                   scf.for %103 = %68 to %29 step %69 {
// CHECK-NEXT:                     %104 = arith.muli %102, %29 : index
// CHECK-NEXT:                     %105 = arith.addi %104, %103 : index
// CHECK-NEXT:                     scf.for %106 = %68 to %101 step %69 {
// CHECK-NEXT:                       %107 = arith.addi %72, %102 : index
// CHECK-NEXT:                       %108 = arith.addi %98, %106 : index
// CHECK-NEXT:                       %109 = arith.constant -1 : index
// CHECK-NEXT:                       %110 = arith.muli %103, %109 : index
// CHECK-NEXT:                       %111 = arith.addi %108, %110 : index
// CHECK-NEXT:                       %half = arith.addi %111, %quotient : index
// CHECK-NEXT:                       %above = arith.cmpi sge, %half, %c0 : index
// CHECK-NEXT:                       %even = arith.constant true
// CHECK-NEXT:                       %kept = arith.andi %above, %even : i1
// CHECK-NEXT:                       %below = arith.cmpi slt, %half, %o_end : index
// CHECK-NEXT:                       %inside = arith.andi %kept, %below : i1
// CHECK-NEXT:                       %o_up = arith.maxsi %half, %c0 : index
// CHECK-NEXT:                       %o_in = arith.minsi %o_up, %o_last : index
// CHECK-NEXT:                       %dyv = memref.load %dy[%n, %107, %o_in] : memref<?x?x?xf32>
// CHECK-NEXT:                       %112 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:                       %113 = arith.select %inside, %dyv, %112 : f32
// CHECK-NEXT:                       memref.store %113, %window_panel[%105, %106] : memref<64x16xf32>
// CHECK-NEXT:                     } {tg.loop = #tg.loop<copy, axis = 2>}
// CHECK-NEXT:                   } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:                 } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:                 scf.for %c = %c0 to %c_end step %c1 {
// CHECK-NEXT:                   %114 = arith.muli %c, %94 : index
// CHECK-NEXT:                   %115 = arith.addi %114, %96 : index
// CHECK-NEXT:                   scf.for %l = %68 to %101 step %c1 {
// CHECK-NEXT:                     %l_1 = arith.addi %98, %l : index
// CHECK-NEXT:                     %116 = arith.constant 2 : index
// CHECK-NEXT:                     %117 = arith.muli %l_1, %116 : index
// CHECK-NEXT:                     %l_2 = arith.addi %117, %phase : index
// CHECK-NEXT:                     %sum = scf.for %118 = %68 to %75 step %69 iter_args(%119 = %zero) -> (f32) {
// CHECK-NEXT:                       %120 = memref.load %window_panel[%118, %l] : memref<64x16xf32>
// CHECK-NEXT:                       %121 = arith.addi %115, %118 : index
// CHECK-NEXT:                       %122 = memref.load %weight_panel[%121] : memref<1024xf32>
// CHECK-NEXT:                       %123 = arith.mulf %120, %122 : f32
// CHECK-NEXT:                       %124 = arith.addf %119, %123 fastmath<reassoc> : f32
// CHECK-NEXT:                       scf.yield %124 : f32
// CHECK-NEXT:                     } {tg.loop = #tg.loop<reduce, axis = 1>}
// CHECK-NEXT:                     %125 = memref.load %dx[%n, %c, %l_2] : memref<?x?x?xf32>
// CHECK-NEXT:                     %126 = arith.addf %125, %sum fastmath<reassoc> : f32
// CHECK-NEXT:                     %127 = arith.select %76, %sum, %126 : f32
// CHECK-NEXT:                     memref.store %127, %dx[%n, %c, %l_2] : memref<?x?x?xf32>
// CHECK-NEXT:                   } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:                 } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:             } else {
// CHECK-NEXT:               scf.for %c_1 = %c0 to %c_end step %c1 {
// CHECK-NEXT:                 scf.for %l_3 = %t to %t_end step %c1 {
// CHECK-NEXT:                   %128 = arith.constant 2 : index
// CHECK-NEXT:                   %129 = arith.muli %l_3, %128 : index
// CHECK-NEXT:                   %l_4 = arith.addi %129, %phase : index
// CHECK-NEXT:                   %sum_1 = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:                     %part = scf.for %j = %c0 to %29 step %c1 iter_args(%acc_j = %zero) -> (f32) {
// CHECK-NEXT:                       %130 = arith.constant 2 : index
// CHECK-NEXT:                       %131 = arith.muli %j, %130 : index
// CHECK-NEXT:                       %j_1 = arith.addi %131, %residue : index
// CHECK-NEXT:                       %l1 = arith.addi %l_4, %c1 : index
// CHECK-NEXT:                       %o = arith.subi %l1, %j_1 : index
// CHECK-NEXT:                       %132 = arith.constant -1 : index
// CHECK-NEXT:                       %133 = arith.muli %j, %132 : index
// CHECK-NEXT:                       %134 = arith.addi %l_3, %133 : index
// CHECK-NEXT:                       %half_1 = arith.addi %134, %quotient : index
// CHECK-NEXT:                       %above_1 = arith.cmpi sge, %half_1, %c0 : index
// CHECK-NEXT:                       %rem = arith.constant 0 : index
// CHECK-NEXT:                       %even_1 = arith.constant true
// CHECK-NEXT:                       %kept_1 = arith.andi %above_1, %even_1 : i1
// CHECK-NEXT:                       %below_1 = arith.cmpi slt, %half_1, %o_end : index
// CHECK-NEXT:                       %inside_1 = arith.andi %kept_1, %below_1 : i1
// CHECK-NEXT:                       %o_up_1 = arith.maxsi %half_1, %c0 : index
// CHECK-NEXT:                       %o_in_1 = arith.minsi %o_up_1, %o_last : index
// CHECK-NEXT:                       %dyv_1 = memref.load %dy[%n, %k, %o_in_1] : memref<?x?x?xf32>
// CHECK-NEXT:                       %wv = memref.load %w[%k, %c_1, %j_1] : memref<?x?x?xf32>
// CHECK-NEXT:                       %p = arith.mulf %dyv_1, %wv : f32
// CHECK-NEXT:                       %term = arith.select %inside_1, %p, %zero : f32
// CHECK-NEXT:                       %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
// CHECK-NEXT:                       scf.yield %acc_j_next : f32
// CHECK-NEXT:                     } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:                     %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
// CHECK-NEXT:                     scf.yield %acc_next : f32
// CHECK-NEXT:                   } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:                   memref.store %sum_1, %dx[%n, %c_1, %l_4] : memref<?x?x?xf32>
// CHECK-NEXT:                 } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:               } {tg.loop = #tg.loop<parallel, axis = 1>, tg.cold}
// CHECK-NEXT:             }
// CHECK-NEXT:           } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:       }
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
