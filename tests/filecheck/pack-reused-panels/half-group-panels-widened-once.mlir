// RUN: tilegrad opt %s -p 'pack-reused-panels{panel_bytes=1024 columns=8 groups=3 alias_bytes=64 once=1}' | filecheck %s

// g-column-panels-once.mlir in float16 (every value read widened to float32): the row groups' own panels
// of g are packed once per call as there, widened, into a float32 workspace of g's size (`g_panels32`,
// blocks of 3 groups where they fit 1024 bytes at 4 bytes an element), and the strips of w into
// `w_panel32`; the sweeps read both in float32 and their extf go. A half matrix's panels are float32 only
// where they are in a workspace of its size: they always pack.

builtin.module {
  func.func @gt_times_w(%g: memref<?x?xf16> {tg.name = "g", tg.role = "input"},
                       %w: memref<?x?xf16> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?xf16> {tg.name = "out", tg.role = "output"}) {
    %acc0 = memref.alloca() : memref<512xf32>
    %acc1 = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %g, %c1 : memref<?x?xf16>
    %v_end = memref.dim %w, %c0 : memref<?x?xf16>
    %h_end = memref.dim %w, %c1 : memref<?x?xf16>
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
            %x0h = memref.load %g[%v, %i] : memref<?x?xf16>
            %x0 = arith.extf %x0h : f16 to f32
            %y0h = memref.load %w[%v, %h] : memref<?x?xf16>
            %y0 = arith.extf %y0h : f16 to f32
            %p0 = arith.mulf %x0, %y0 : f32
            %s0 = arith.addf %a0, %p0 : f32
            memref.store %s0, %acc0[%at] : memref<512xf32>
            %a1 = memref.load %acc1[%at] : memref<512xf32>
            %x1h = memref.load %g[%v, %i1] : memref<?x?xf16>
            %x1 = arith.extf %x1h : f16 to f32
            %y1h = memref.load %w[%v, %h] : memref<?x?xf16>
            %y1 = arith.extf %y1h : f16 to f32
            %p1 = arith.mulf %x1, %y1 : f32
            %s1 = arith.addf %a1, %p1 : f32
            memref.store %s1, %acc1[%at] : memref<512xf32>
          } {tg.loop = #tg.loop<row, axis = 0>}
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        scf.for %h = %t to %t_end step %c1 {
          %at = arith.subi %h, %t : index
          %a0 = memref.load %acc0[%at] : memref<512xf32>
          %a0h = arith.truncf %a0 : f32 to f16
          memref.store %a0h, %out[%i, %h] : memref<?x?xf16>
          %a1 = memref.load %acc1[%at] : memref<512xf32>
          %a1h = arith.truncf %a1 : f32 to f16
          memref.store %a1h, %out[%i1, %h] : memref<?x?xf16>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @gt_times_w(%g: memref<?x?xf16> {tg.name = "g", tg.role = "input"}, %w: memref<?x?xf16> {tg.name = "w", tg.role = "input"}, %out: memref<?x?xf16> {tg.name = "out", tg.role = "output"}, %w_panel32: memref<?xf32> {tg.name = "w_panel32", tg.role = "workspace", tg.shape = "{{\[\[}}\22mul\22, 1, [\22max\22, 256, [\22mul\22, [\22dim\22, \22w\22, 0], 8]]]]"}, %g_panels32: memref<?xf32> {tg.name = "g_panels32", tg.role = "workspace", tg.shape = "{{\[\[}}\22mul\22, [\22dim\22, \22g\22, 0], [\22dim\22, \22g\22, 1]]]"}) {
// CHECK-NEXT:     %acc0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %g, %c1 : memref<?x?xf16>
// CHECK-NEXT:     %v_end = memref.dim %w, %c0 : memref<?x?xf16>
// CHECK-NEXT:     %h_end = memref.dim %w, %c1 : memref<?x?xf16>
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = arith.constant 0 : index
// CHECK-NEXT:     %2 = arith.constant 1 : index
// CHECK-NEXT:     %3 = memref.dim %w, %1 : memref<?x?xf16>
// CHECK-NEXT:     %4 = arith.constant 256 : index
// CHECK-NEXT:     %5 = arith.maxsi %3, %2 : index
// CHECK-NEXT:     %6 = arith.divui %4, %5 : index
// CHECK-NEXT:     %7 = arith.constant 8 : index
// CHECK-NEXT:     %8 = arith.divui %6, %7 : index
// CHECK-NEXT:     %9 = arith.muli %8, %7 : index
// CHECK-NEXT:     %10 = arith.cmpi sgt, %9, %1 : index
// CHECK-NEXT:     %panel_columns = arith.select %10, %9, %7 : index
// CHECK-NEXT:     %11 = arith.constant 0 : index
// CHECK-NEXT:     %12 = arith.constant 1 : index
// CHECK-NEXT:     %13 = memref.dim %g, %11 : memref<?x?xf16>
// CHECK-NEXT:     %14 = arith.constant 256 : index
// CHECK-NEXT:     %15 = arith.maxsi %13, %12 : index
// CHECK-NEXT:     %16 = arith.divui %14, %15 : index
// CHECK-NEXT:     %17 = arith.divui %16, %c2 : index
// CHECK-NEXT:     %18 = arith.constant 1 : index
// CHECK-NEXT:     %19 = memref.dim %g, %18 : memref<?x?xf16>
// CHECK-NEXT:     %20 = arith.constant 2 : index
// CHECK-NEXT:     %21 = arith.muli %19, %20 : index
// CHECK-NEXT:     %22 = arith.constant 64 : index
// CHECK-NEXT:     %23 = arith.remui %21, %22 : index
// CHECK-NEXT:     %24 = arith.cmpi eq, %23, %11 : index
// CHECK-NEXT:     %25 = arith.constant 3 : index
// CHECK-NEXT:     %26 = arith.select %24, %25, %12 : index
// CHECK-NEXT:     %27 = arith.minsi %17, %26 : index
// CHECK-NEXT:     %28 = arith.maxsi %27, %12 : index
// CHECK-NEXT:     %panel_columns_1 = arith.muli %28, %c2 : index
// CHECK-NEXT:     %29 = arith.constant 0 : index
// CHECK-NEXT:     %30 = memref.dim %g, %29 : memref<?x?xf16>
// CHECK-NEXT:     %31 = arith.constant 1 : index
// CHECK-NEXT:     %32 = memref.dim %g, %31 : memref<?x?xf16>
// CHECK-NEXT:     %33 = arith.constant 0 : index
// CHECK-NEXT:     %34 = arith.muli %30, %32 : index
// CHECK-NEXT:     %35 = arith.muli %33, %34 : index
// CHECK-NEXT:     %36 = arith.addi %c0, %panel_columns : index
// CHECK-NEXT:     %packed_once = arith.cmpi slt, %36, %h_end : index
// CHECK-NEXT:     scf.if %packed_once {
// CHECK-NEXT:       scf.for %37 = %c0 to %rows step %panel_columns_1 {
// CHECK-NEXT:         %38 = arith.addi %37, %panel_columns_1 : index
// CHECK-NEXT:         %39 = arith.minsi %38, %rows : index
// CHECK-NEXT:         %40 = arith.constant 0 : index
// CHECK-NEXT:         %41 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %42 = %40 to %30 step %41 {
// CHECK-NEXT:           scf.for %43 = %37 to %39 step %c2 {
// CHECK-NEXT:             %44 = arith.muli %43, %30 : index
// CHECK-NEXT:             %45 = arith.addi %35, %44 : index
// CHECK-NEXT:             %panel, %46 = tg.panel %g[%43, %c2] in %g_panels32 offset %45 : memref<?x?xf16>, memref<?xf32> -> memref<?x?xf32>
// CHECK-NEXT:             scf.if %46 {
// CHECK-NEXT:               scf.for %47 = %40 to %c2 step %41 {
// CHECK-NEXT:                 %48 = arith.addi %43, %47 : index
// CHECK-NEXT:                 %49 = memref.load %g[%42, %48] : memref<?x?xf16>
// CHECK-NEXT:                 %50 = arith.extf %49 : f16 to f32
// CHECK-NEXT:                 memref.store %50, %panel[%42, %47] : memref<?x?xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:             }
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %t = %c0 to %h_end step %panel_columns {
// CHECK-NEXT:       %51 = arith.addi %t, %panel_columns : index
// CHECK-NEXT:       %52 = arith.minsi %51, %h_end : index
// CHECK-NEXT:       %53 = arith.subi %52, %t : index
// CHECK-NEXT:       %panel_1, %54 = tg.panel %w[%t, %53] in %w_panel32 offset %0 : memref<?x?xf16>, memref<?xf32> -> memref<?x?xf32>
// CHECK-NEXT:       %55 = arith.constant 0 : index
// CHECK-NEXT:       %56 = arith.constant 1 : index
// CHECK-NEXT:       %57 = memref.dim %w, %55 : memref<?x?xf16>
// CHECK-NEXT:       scf.if %54 {
// CHECK-NEXT:         scf.for %58 = %55 to %57 step %56 {
// CHECK-NEXT:           scf.for %59 = %55 to %53 step %56 {
// CHECK-NEXT:             %60 = arith.addi %t, %59 : index
// CHECK-NEXT:             %61 = memref.load %w[%58, %60] : memref<?x?xf16>
// CHECK-NEXT:             %62 = arith.extf %61 : f16 to f32
// CHECK-NEXT:             memref.store %62, %panel_1[%58, %59] : memref<?x?xf32>
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
// CHECK-NEXT:           scf.for %70 = %68 to %30 step %69 {
// CHECK-NEXT:             scf.for %71 = %63 to %65 step %c2 {
// CHECK-NEXT:               %72 = arith.muli %71, %30 : index
// CHECK-NEXT:               %73 = arith.addi %35, %72 : index
// CHECK-NEXT:               %panel_2, %74 = tg.panel %g[%71, %c2] in %g_panels32 offset %73 : memref<?x?xf16>, memref<?xf32> -> memref<?x?xf32>
// CHECK-NEXT:               scf.if %74 {
// CHECK-NEXT:                 scf.for %75 = %68 to %c2 step %69 {
// CHECK-NEXT:                   %76 = arith.addi %71, %75 : index
// CHECK-NEXT:                   %77 = memref.load %g[%70, %76] : memref<?x?xf16>
// CHECK-NEXT:                   %78 = arith.extf %77 : f16 to f32
// CHECK-NEXT:                   memref.store %78, %panel_2[%70, %75] : memref<?x?xf32>
// CHECK-NEXT:                 } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:               }
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %i = %63 to %65 step %c2 {
// CHECK-NEXT:           %79 = arith.muli %i, %30 : index
// CHECK-NEXT:           %80 = arith.addi %35, %79 : index
// CHECK-NEXT:           %panel_3, %81 = tg.panel %g[%i, %c2] in %g_panels32 offset %80 : memref<?x?xf16>, memref<?xf32> -> memref<?x?xf32>
// CHECK-NEXT:           %i1 = arith.addi %i, %c1 : index
// CHECK-NEXT:           %tile = arith.constant 4096 : index
// CHECK-NEXT:           %t_next = arith.addi %t, %panel_columns : index
// CHECK-NEXT:           %t_end = arith.minsi %t_next, %h_end : index
// CHECK-NEXT:           scf.for %v = %c0 to %v_end step %c1 {
// CHECK-NEXT:             scf.for %h = %t to %t_end step %c1 {
// CHECK-NEXT:               %at = arith.subi %h, %t : index
// CHECK-NEXT:               %a0 = memref.load %acc0[%at] : memref<512xf32>
// CHECK-NEXT:               %82 = arith.constant 0 : index
// CHECK-NEXT:               %x0 = memref.load %panel_3[%v, %82] : memref<?x?xf32>
// CHECK-NEXT:               %83 = arith.subi %h, %t : index
// CHECK-NEXT:               %y0 = memref.load %panel_1[%v, %83] : memref<?x?xf32>
// CHECK-NEXT:               %p0 = arith.mulf %x0, %y0 : f32
// CHECK-NEXT:               %s0 = arith.addf %a0, %p0 : f32
// CHECK-NEXT:               memref.store %s0, %acc0[%at] : memref<512xf32>
// CHECK-NEXT:               %a1 = memref.load %acc1[%at] : memref<512xf32>
// CHECK-NEXT:               %84 = arith.constant 1 : index
// CHECK-NEXT:               %x1 = memref.load %panel_3[%v, %84] : memref<?x?xf32>
// CHECK-NEXT:               %85 = arith.subi %h, %t : index
// CHECK-NEXT:               %y1 = memref.load %panel_1[%v, %85] : memref<?x?xf32>
// CHECK-NEXT:               %p1 = arith.mulf %x1, %y1 : f32
// CHECK-NEXT:               %s1 = arith.addf %a1, %p1 : f32
// CHECK-NEXT:               memref.store %s1, %acc1[%at] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           scf.for %h_1 = %t to %t_end step %c1 {
// CHECK-NEXT:             %at_1 = arith.subi %h_1, %t : index
// CHECK-NEXT:             %a0_1 = memref.load %acc0[%at_1] : memref<512xf32>
// CHECK-NEXT:             %a0h = arith.truncf %a0_1 : f32 to f16
// CHECK-NEXT:             memref.store %a0h, %out[%i, %h_1] : memref<?x?xf16>
// CHECK-NEXT:             %a1_1 = memref.load %acc1[%at_1] : memref<512xf32>
// CHECK-NEXT:             %a1h = arith.truncf %a1_1 : f32 to f16
// CHECK-NEXT:             memref.store %a1h, %out[%i1, %h_1] : memref<?x?xf16>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
