// RUN: tilegrad opt %s -p 'pack-reused-panels{panel_bytes=1024 columns=8 groups=3 alias_bytes=64}' | filecheck %s

// G.T @ W: each row group (2 rows a step) reads its own columns of g, g[v, i] and g[v, i + 1]. With
// groups=3 the row groups run in blocks of up to 3 groups (6 columns of g; fewer where g's rows would
// overflow the panel, and one group where g's rows are not a multiple of alias_bytes long), each block
// first copying its columns of every row of g in one run into a panel the block's groups read at
// column i - start (+ 1). w is packed strip by strip as in groups-sweeping-w.mlir.

builtin.module {
  func.func @gt_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"},
                       %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %acc0 = memref.alloca() : memref<512xf32>
    %acc1 = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %g, %c1 : memref<?x?xf32>
    %v_end = memref.dim %w, %c0 : memref<?x?xf32>
    %h_end = memref.dim %w, %c1 : memref<?x?xf32>
    %c2 = arith.constant 2 : index
    scf.for %i = %c0 to %rows step %c2 {
      %i1 = arith.addi %i, %c1 : index
      %tile = arith.constant 4096 : index
      scf.for %t = %c0 to %h_end step %tile {
        %t_next = arith.addi %t, %tile : index
        %t_end = arith.minsi %t_next, %h_end : index
        scf.for %v = %c0 to %v_end step %c1 {
          scf.for %h = %t to %t_end step %c1 {
            %at = arith.subi %h, %t : index
            %a0 = memref.load %acc0[%at] : memref<512xf32>
            %x0 = memref.load %g[%v, %i] : memref<?x?xf32>
            %y0 = memref.load %w[%v, %h] : memref<?x?xf32>
            %p0 = arith.mulf %x0, %y0 : f32
            %s0 = arith.addf %a0, %p0 : f32
            memref.store %s0, %acc0[%at] : memref<512xf32>
            %a1 = memref.load %acc1[%at] : memref<512xf32>
            %x1 = memref.load %g[%v, %i1] : memref<?x?xf32>
            %y1 = memref.load %w[%v, %h] : memref<?x?xf32>
            %p1 = arith.mulf %x1, %y1 : f32
            %s1 = arith.addf %a1, %p1 : f32
            memref.store %s1, %acc1[%at] : memref<512xf32>
          } {tg.loop = #tg.loop<row, axis = 0>}
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        scf.for %h = %t to %t_end step %c1 {
          %at = arith.subi %h, %t : index
          %a0 = memref.load %acc0[%at] : memref<512xf32>
          memref.store %a0, %out[%i, %h] : memref<?x?xf32>
          %a1 = memref.load %acc1[%at] : memref<512xf32>
          memref.store %a1, %out[%i1, %h] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @gt_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<256xf32>
// CHECK-NEXT:     %1 = memref.alloca() : memref<256xf32>
// CHECK-NEXT:     %acc0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %g, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %v_end = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %h_end = memref.dim %w, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %2 = arith.constant 0 : index
// CHECK-NEXT:     %3 = arith.constant 1 : index
// CHECK-NEXT:     %4 = memref.dim %w, %2 : memref<?x?xf32>
// CHECK-NEXT:     %5 = arith.constant 256 : index
// CHECK-NEXT:     %6 = arith.maxsi %4, %3 : index
// CHECK-NEXT:     %7 = arith.divui %5, %6 : index
// CHECK-NEXT:     %8 = arith.constant 8 : index
// CHECK-NEXT:     %9 = arith.divui %7, %8 : index
// CHECK-NEXT:     %10 = arith.muli %9, %8 : index
// CHECK-NEXT:     %11 = arith.subi %h_end, %c0 : index
// CHECK-NEXT:     %12 = arith.maxsi %11, %3 : index
// CHECK-NEXT:     %13 = arith.cmpi sgt, %10, %2 : index
// CHECK-NEXT:     %panel_columns = arith.select %13, %10, %12 : index
// CHECK-NEXT:     scf.for %t = %c0 to %h_end step %panel_columns {
// CHECK-NEXT:       %14 = arith.addi %t, %panel_columns : index
// CHECK-NEXT:       %15 = arith.minsi %14, %h_end : index
// CHECK-NEXT:       %16 = arith.subi %15, %t : index
// CHECK-NEXT:       %panel, %17 = tg.panel %w[%t, %16] in %1 : memref<?x?xf32>, memref<256xf32> -> memref<?x?xf32>
// CHECK-NEXT:       %18 = arith.constant 0 : index
// CHECK-NEXT:       %19 = arith.constant 1 : index
// CHECK-NEXT:       %20 = memref.dim %w, %18 : memref<?x?xf32>
// CHECK-NEXT:       scf.if %17 {
// CHECK-NEXT:         scf.for %21 = %18 to %20 step %19 {
// CHECK-NEXT:           scf.for %22 = %18 to %16 step %19 {
// CHECK-NEXT:             %23 = arith.addi %t, %22 : index
// CHECK-NEXT:             %24 = memref.load %w[%21, %23] : memref<?x?xf32>
// CHECK-NEXT:             memref.store %24, %panel[%21, %22] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       }
// CHECK-NEXT:       %25 = arith.constant 0 : index
// CHECK-NEXT:       %26 = arith.constant 1 : index
// CHECK-NEXT:       %27 = memref.dim %g, %25 : memref<?x?xf32>
// CHECK-NEXT:       %28 = arith.constant 256 : index
// CHECK-NEXT:       %29 = arith.maxsi %27, %26 : index
// CHECK-NEXT:       %30 = arith.divui %28, %29 : index
// CHECK-NEXT:       %31 = arith.divui %30, %c2 : index
// CHECK-NEXT:       %32 = arith.constant 1 : index
// CHECK-NEXT:       %33 = memref.dim %g, %32 : memref<?x?xf32>
// CHECK-NEXT:       %34 = arith.constant 4 : index
// CHECK-NEXT:       %35 = arith.muli %33, %34 : index
// CHECK-NEXT:       %36 = arith.constant 64 : index
// CHECK-NEXT:       %37 = arith.remui %35, %36 : index
// CHECK-NEXT:       %38 = arith.cmpi eq, %37, %25 : index
// CHECK-NEXT:       %39 = arith.constant 3 : index
// CHECK-NEXT:       %40 = arith.select %38, %39, %26 : index
// CHECK-NEXT:       %41 = arith.minsi %31, %40 : index
// CHECK-NEXT:       %42 = arith.maxsi %41, %26 : index
// CHECK-NEXT:       %panel_columns_1 = arith.muli %42, %c2 : index
// CHECK-NEXT:       scf.for %43 = %c0 to %rows step %panel_columns_1 {
// CHECK-NEXT:         %44 = arith.addi %43, %panel_columns_1 : index
// CHECK-NEXT:         %45 = arith.minsi %44, %rows : index
// CHECK-NEXT:         %46 = arith.subi %45, %43 : index
// CHECK-NEXT:         %panel_1, %47 = tg.panel %g[%43, %46] in %0 : memref<?x?xf32>, memref<256xf32> -> memref<?x?xf32>
// CHECK-NEXT:         %48 = arith.constant 0 : index
// CHECK-NEXT:         %49 = arith.constant 1 : index
// CHECK-NEXT:         %50 = memref.dim %g, %48 : memref<?x?xf32>
// CHECK-NEXT:         scf.if %47 {
// CHECK-NEXT:           scf.for %51 = %48 to %50 step %49 {
// CHECK-NEXT:             scf.for %52 = %48 to %46 step %49 {
// CHECK-NEXT:               %53 = arith.addi %43, %52 : index
// CHECK-NEXT:               %54 = memref.load %g[%51, %53] : memref<?x?xf32>
// CHECK-NEXT:               memref.store %54, %panel_1[%51, %52] : memref<?x?xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %i = %43 to %45 step %c2 {
// CHECK-NEXT:           %i1 = arith.addi %i, %c1 : index
// CHECK-NEXT:           %tile = arith.constant 4096 : index
// CHECK-NEXT:           %t_next = arith.addi %t, %panel_columns : index
// CHECK-NEXT:           %t_end = arith.minsi %t_next, %h_end : index
// CHECK-NEXT:           scf.for %v = %c0 to %v_end step %c1 {
// CHECK-NEXT:             scf.for %h = %t to %t_end step %c1 {
// CHECK-NEXT:               %at = arith.subi %h, %t : index
// CHECK-NEXT:               %a0 = memref.load %acc0[%at] : memref<512xf32>
// CHECK-NEXT:               %55 = arith.subi %i, %43 : index
// CHECK-NEXT:               %56 = arith.constant 0 : index
// CHECK-NEXT:               %57 = arith.addi %55, %56 : index
// CHECK-NEXT:               %x0 = memref.load %panel_1[%v, %57] : memref<?x?xf32>
// CHECK-NEXT:               %58 = arith.subi %h, %t : index
// CHECK-NEXT:               %y0 = memref.load %panel[%v, %58] : memref<?x?xf32>
// CHECK-NEXT:               %p0 = arith.mulf %x0, %y0 : f32
// CHECK-NEXT:               %s0 = arith.addf %a0, %p0 : f32
// CHECK-NEXT:               memref.store %s0, %acc0[%at] : memref<512xf32>
// CHECK-NEXT:               %a1 = memref.load %acc1[%at] : memref<512xf32>
// CHECK-NEXT:               %59 = arith.subi %i, %43 : index
// CHECK-NEXT:               %60 = arith.constant 1 : index
// CHECK-NEXT:               %61 = arith.addi %59, %60 : index
// CHECK-NEXT:               %x1 = memref.load %panel_1[%v, %61] : memref<?x?xf32>
// CHECK-NEXT:               %62 = arith.subi %h, %t : index
// CHECK-NEXT:               %y1 = memref.load %panel[%v, %62] : memref<?x?xf32>
// CHECK-NEXT:               %p1 = arith.mulf %x1, %y1 : f32
// CHECK-NEXT:               %s1 = arith.addf %a1, %p1 : f32
// CHECK-NEXT:               memref.store %s1, %acc1[%at] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           scf.for %h_1 = %t to %t_end step %c1 {
// CHECK-NEXT:             %at_1 = arith.subi %h_1, %t : index
// CHECK-NEXT:             %a0_1 = memref.load %acc0[%at_1] : memref<512xf32>
// CHECK-NEXT:             memref.store %a0_1, %out[%i, %h_1] : memref<?x?xf32>
// CHECK-NEXT:             %a1_1 = memref.load %acc1[%at_1] : memref<512xf32>
// CHECK-NEXT:             memref.store %a1_1, %out[%i1, %h_1] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
