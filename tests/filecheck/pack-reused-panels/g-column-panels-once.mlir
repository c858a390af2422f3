// RUN: tilegrad opt %s -p 'pack-reused-panels{panel_bytes=1024 columns=8 groups=3 alias_bytes=64 once=1}' | filecheck %s

// G.T @ W as in g-column-blocks.mlir, with once=1: every column strip of w reads the row groups' own
// panels of g again, so they are packed once per call into a workspace the size of g (`g_panels`, an
// argument the call allocates: g's dims as its shape), each group's panel (g's rows x 2 columns, rows
// 2 apart) contiguous at element i x rows (tg.panel ... in %g_panels offset), before the strips' loop
// where it runs two strips or more (`packed_once`), else in the strip; the copy goes in blocks of up
// to 3 groups, one run of each row of g per block (as g-column-blocks.mlir's), and each group reads
// its panel at columns 0 and 1. The same loads in the same order: bitwise the per-strip kernel.

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
// CHECK-NEXT:   func.func @gt_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}, %g_panels: memref<?xf32> {tg.name = "g_panels", tg.role = "workspace", tg.shape = "{{\[\[}}\22mul\22, [\22dim\22, \22g\22, 0], [\22dim\22, \22g\22, 1]]]"}) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<256xf32>
// CHECK-NEXT:     %acc0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %g, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %v_end = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %h_end = memref.dim %w, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %1 = arith.constant 0 : index
// CHECK-NEXT:     %2 = arith.constant 1 : index
// CHECK-NEXT:     %3 = memref.dim %w, %1 : memref<?x?xf32>
// CHECK-NEXT:     %4 = arith.constant 256 : index
// CHECK-NEXT:     %5 = arith.maxsi %3, %2 : index
// CHECK-NEXT:     %6 = arith.divui %4, %5 : index
// CHECK-NEXT:     %7 = arith.constant 8 : index
// CHECK-NEXT:     %8 = arith.divui %6, %7 : index
// CHECK-NEXT:     %9 = arith.muli %8, %7 : index
// CHECK-NEXT:     %10 = arith.subi %h_end, %c0 : index
// CHECK-NEXT:     %11 = arith.maxsi %10, %2 : index
// CHECK-NEXT:     %12 = arith.cmpi sgt, %9, %1 : index
// CHECK-NEXT:     %panel_columns = arith.select %12, %9, %11 : index
// CHECK-NEXT:     %13 = arith.constant 0 : index
// CHECK-NEXT:     %14 = arith.constant 1 : index
// CHECK-NEXT:     %15 = memref.dim %g, %13 : memref<?x?xf32>
// CHECK-NEXT:     %16 = arith.constant 256 : index
// CHECK-NEXT:     %17 = arith.maxsi %15, %14 : index
// CHECK-NEXT:     %18 = arith.divui %16, %17 : index
// CHECK-NEXT:     %19 = arith.divui %18, %c2 : index
// CHECK-NEXT:     %20 = arith.constant 1 : index
// CHECK-NEXT:     %21 = memref.dim %g, %20 : memref<?x?xf32>
// CHECK-NEXT:     %22 = arith.constant 4 : index
// CHECK-NEXT:     %23 = arith.muli %21, %22 : index
// CHECK-NEXT:     %24 = arith.constant 64 : index
// CHECK-NEXT:     %25 = arith.remui %23, %24 : index
// CHECK-NEXT:     %26 = arith.cmpi eq, %25, %13 : index
// CHECK-NEXT:     %27 = arith.constant 3 : index
// CHECK-NEXT:     %28 = arith.select %26, %27, %14 : index
// CHECK-NEXT:     %29 = arith.minsi %19, %28 : index
// CHECK-NEXT:     %30 = arith.maxsi %29, %14 : index
// CHECK-NEXT:     %panel_columns_1 = arith.muli %30, %c2 : index
// CHECK-NEXT:     %31 = arith.constant 0 : index
// CHECK-NEXT:     %32 = memref.dim %g, %31 : memref<?x?xf32>
// CHECK-NEXT:     %33 = arith.constant 1 : index
// CHECK-NEXT:     %34 = memref.dim %g, %33 : memref<?x?xf32>
// CHECK-NEXT:     %35 = arith.constant 0 : index
// CHECK-NEXT:     %36 = arith.muli %32, %34 : index
// CHECK-NEXT:     %37 = arith.muli %35, %36 : index
// CHECK-NEXT:     %38 = arith.addi %c0, %panel_columns : index
// CHECK-NEXT:     %packed_once = arith.cmpi slt, %38, %h_end : index
// CHECK-NEXT:     scf.if %packed_once {
// CHECK-NEXT:       scf.for %39 = %c0 to %rows step %panel_columns_1 {
// CHECK-NEXT:         %40 = arith.addi %39, %panel_columns_1 : index
// CHECK-NEXT:         %41 = arith.minsi %40, %rows : index
// CHECK-NEXT:         %42 = arith.constant 0 : index
// CHECK-NEXT:         %43 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %44 = %42 to %32 step %43 {
// CHECK-NEXT:           scf.for %45 = %39 to %41 step %c2 {
// CHECK-NEXT:             %46 = arith.muli %45, %32 : index
// CHECK-NEXT:             %47 = arith.addi %37, %46 : index
// CHECK-NEXT:             %panel, %48 = tg.panel %g[%45, %c2] in %g_panels offset %47 : memref<?x?xf32>, memref<?xf32> -> memref<?x?xf32>
// CHECK-NEXT:             scf.if %48 {
// CHECK-NEXT:               scf.for %49 = %42 to %c2 step %43 {
// CHECK-NEXT:                 %50 = arith.addi %45, %49 : index
// CHECK-NEXT:                 %51 = memref.load %g[%44, %50] : memref<?x?xf32>
// CHECK-NEXT:                 memref.store %51, %panel[%44, %49] : memref<?x?xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:             }
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %t = %c0 to %h_end step %panel_columns {
// CHECK-NEXT:       %52 = arith.addi %t, %panel_columns : index
// CHECK-NEXT:       %53 = arith.minsi %52, %h_end : index
// CHECK-NEXT:       %54 = arith.subi %53, %t : index
// CHECK-NEXT:       %panel_1, %55 = tg.panel %w[%t, %54] in %0 : memref<?x?xf32>, memref<256xf32> -> memref<?x?xf32>
// CHECK-NEXT:       %56 = arith.constant 0 : index
// CHECK-NEXT:       %57 = arith.constant 1 : index
// CHECK-NEXT:       %58 = memref.dim %w, %56 : memref<?x?xf32>
// CHECK-NEXT:       scf.if %55 {
// CHECK-NEXT:         scf.for %59 = %56 to %58 step %57 {
// CHECK-NEXT:           scf.for %60 = %56 to %54 step %57 {
// CHECK-NEXT:             %61 = arith.addi %t, %60 : index
// CHECK-NEXT:             %62 = memref.load %w[%59, %61] : memref<?x?xf32>
// CHECK-NEXT:             memref.store %62, %panel_1[%59, %60] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.for %63 = %c0 to %rows step %panel_columns_1 {
// CHECK-NEXT:         %64 = arith.addi %63, %panel_columns_1 : index
// CHECK-NEXT:         %65 = arith.minsi %64, %rows : index
// CHECK-NEXT:         %66 = arith.constant true
// CHECK-NEXT:         %67 = arith.xori %packed_once, %66 : i1
// CHECK-NEXT:         scf.if %67 {
// CHECK-NEXT:           %68 = arith.constant 0 : index
// CHECK-NEXT:           %69 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %70 = %68 to %32 step %69 {
// CHECK-NEXT:             scf.for %71 = %63 to %65 step %c2 {
// CHECK-NEXT:               %72 = arith.muli %71, %32 : index
// CHECK-NEXT:               %73 = arith.addi %37, %72 : index
// CHECK-NEXT:               %panel_2, %74 = tg.panel %g[%71, %c2] in %g_panels offset %73 : memref<?x?xf32>, memref<?xf32> -> memref<?x?xf32>
// CHECK-NEXT:               scf.if %74 {
// CHECK-NEXT:                 scf.for %75 = %68 to %c2 step %69 {
// CHECK-NEXT:                   %76 = arith.addi %71, %75 : index
// CHECK-NEXT:                   %77 = memref.load %g[%70, %76] : memref<?x?xf32>
// CHECK-NEXT:                   memref.store %77, %panel_2[%70, %75] : memref<?x?xf32>
// CHECK-NEXT:                 } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:               }
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %i = %63 to %65 step %c2 {
// CHECK-NEXT:           %78 = arith.muli %i, %32 : index
// CHECK-NEXT:           %79 = arith.addi %37, %78 : index
// CHECK-NEXT:           %panel_3, %80 = tg.panel %g[%i, %c2] in %g_panels offset %79 : memref<?x?xf32>, memref<?xf32> -> memref<?x?xf32>
// CHECK-NEXT:           %i1 = arith.addi %i, %c1 : index
// CHECK-NEXT:           %tile = arith.constant 4096 : index
// CHECK-NEXT:           %t_next = arith.addi %t, %panel_columns : index
// CHECK-NEXT:           %t_end = arith.minsi %t_next, %h_end : index
// CHECK-NEXT:           scf.for %v = %c0 to %v_end step %c1 {
// CHECK-NEXT:             scf.for %h = %t to %t_end step %c1 {
// CHECK-NEXT:               %at = arith.subi %h, %t : index
// CHECK-NEXT:               %a0 = memref.load %acc0[%at] : memref<512xf32>
// CHECK-NEXT:               %81 = arith.constant 0 : index
// CHECK-NEXT:               %x0 = memref.load %panel_3[%v, %81] : memref<?x?xf32>
// CHECK-NEXT:               %82 = arith.subi %h, %t : index
// CHECK-NEXT:               %y0 = memref.load %panel_1[%v, %82] : memref<?x?xf32>
// CHECK-NEXT:               %p0 = arith.mulf %x0, %y0 : f32
// CHECK-NEXT:               %s0 = arith.addf %a0, %p0 : f32
// CHECK-NEXT:               memref.store %s0, %acc0[%at] : memref<512xf32>
// CHECK-NEXT:               %a1 = memref.load %acc1[%at] : memref<512xf32>
// CHECK-NEXT:               %83 = arith.constant 1 : index
// CHECK-NEXT:               %x1 = memref.load %panel_3[%v, %83] : memref<?x?xf32>
// CHECK-NEXT:               %84 = arith.subi %h, %t : index
// CHECK-NEXT:               %y1 = memref.load %panel_1[%v, %84] : memref<?x?xf32>
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
