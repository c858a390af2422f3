// RUN: tilegrad opt %s -p 'pack-reused-panels{panel_bytes=1024 columns=8}' | filecheck %s

// groups-sweeping-w.mlir in bfloat16 (every value read widened to float32, the sums float32, each output
// rounded once): both of w's strips and the rows of g the groups broadcast are float32 panels. Each strip
// of w is copied widened into a float32 workspace of w's size (`w_panel32`, from its start: a strip as
// wide as panel_bytes allows at 4 bytes an element); the rows of g the row groups read (%i and %i + 1 of
// every group, from the first group's first row to the last's second) are copied widened once, before
// the loops, into `g_rows32` where g has them; the sweeps read both in float32 and their extf go.

builtin.module {
  func.func @g_times_w(%g: memref<?x?xbf16> {tg.name = "g", tg.role = "input"},
                       %w: memref<?x?xbf16> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?xbf16> {tg.name = "out", tg.role = "output"}) {
    %acc0 = memref.alloca() : memref<512xf32>
    %acc1 = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %g, %c0 : memref<?x?xbf16>
    %v_end = memref.dim %w, %c0 : memref<?x?xbf16>
    %h_end = memref.dim %w, %c1 : memref<?x?xbf16>
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
            %x0h = memref.load %g[%i, %v] : memref<?x?xbf16>
            %x0 = arith.extf %x0h : bf16 to f32
            %y0h = memref.load %w[%v, %h] : memref<?x?xbf16>
            %y0 = arith.extf %y0h : bf16 to f32
            %p0 = arith.mulf %x0, %y0 : f32
            %s0 = arith.addf %a0, %p0 : f32
            memref.store %s0, %acc0[%at] : memref<512xf32>
            %a1 = memref.load %acc1[%at] : memref<512xf32>
            %x1h = memref.load %g[%i1, %v] : memref<?x?xbf16>
            %x1 = arith.extf %x1h : bf16 to f32
            %y1h = memref.load %w[%v, %h] : memref<?x?xbf16>
            %y1 = arith.extf %y1h : bf16 to f32
            %p1 = arith.mulf %x1, %y1 : f32
            %s1 = arith.addf %a1, %p1 : f32
            memref.store %s1, %acc1[%at] : memref<512xf32>
          } {tg.loop = #tg.loop<row, axis = 0>}
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        scf.for %h = %t to %t_end step %c1 {
          %at = arith.subi %h, %t : index
          %a0 = memref.load %acc0[%at] : memref<512xf32>
          %a0h = arith.truncf %a0 : f32 to bf16
          memref.store %a0h, %out[%i, %h] : memref<?x?xbf16>
          %a1 = memref.load %acc1[%at] : memref<512xf32>
          %a1h = arith.truncf %a1 : f32 to bf16
          memref.store %a1h, %out[%i1, %h] : memref<?x?xbf16>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @g_times_w(%g: memref<?x?xbf16> {tg.name = "g", tg.role = "input"}, %w: memref<?x?xbf16> {tg.name = "w", tg.role = "input"}, %out: memref<?x?xbf16> {tg.name = "out", tg.role = "output"}, %w_panel32: memref<?xf32> {tg.name = "w_panel32", tg.role = "workspace", tg.shape = "{{\[\[}}\22mul\22, 1, [\22max\22, 256, [\22mul\22, [\22dim\22, \22w\22, 0], 8]]]]"}, %g_rows32: memref<?xf32> {tg.name = "g_rows32", tg.role = "workspace", tg.shape = "{{\[\[}}\22mul\22, [\22dim\22, \22g\22, 0], [\22dim\22, \22g\22, 1]]]"}) {
// CHECK-NEXT:     %acc0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %g, %c0 : memref<?x?xbf16>
// CHECK-NEXT:     %v_end = memref.dim %w, %c0 : memref<?x?xbf16>
// CHECK-NEXT:     %h_end = memref.dim %w, %c1 : memref<?x?xbf16>
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = arith.constant 0 : index
// CHECK-NEXT:     %2 = arith.constant 1 : index
// CHECK-NEXT:     %3 = memref.dim %w, %1 : memref<?x?xbf16>
// CHECK-NEXT:     %4 = arith.constant 256 : index
// CHECK-NEXT:     %5 = arith.maxsi %3, %2 : index
// CHECK-NEXT:     %6 = arith.divui %4, %5 : index
// CHECK-NEXT:     %7 = arith.constant 8 : index
// CHECK-NEXT:     %8 = arith.divui %6, %7 : index
// CHECK-NEXT:     %9 = arith.muli %8, %7 : index
// CHECK-NEXT:     %10 = arith.cmpi sgt, %9, %1 : index
// CHECK-NEXT:     %panel_columns = arith.select %10, %9, %7 : index
// CHECK-NEXT:     %11 = arith.constant 0 : index
// CHECK-NEXT:     %12 = memref.dim %g, %11 : memref<?x?xbf16>
// CHECK-NEXT:     %13 = arith.constant 1 : index
// CHECK-NEXT:     %14 = memref.dim %g, %13 : memref<?x?xbf16>
// CHECK-NEXT:     %15 = arith.constant 0 : index
// CHECK-NEXT:     %16 = arith.constant 0 : index
// CHECK-NEXT:     %rows_1, %17 = tg.panel %g[%16, %14] in %g_rows32 offset %15 : memref<?x?xbf16>, memref<?xf32> -> memref<?x?xf32>
// CHECK-NEXT:     %18 = arith.subi %rows, %c0 : index
// CHECK-NEXT:     %19 = arith.constant 1 : index
// CHECK-NEXT:     %20 = arith.addi %18, %19 : index
// CHECK-NEXT:     %21 = arith.constant 2 : index
// CHECK-NEXT:     %22 = arith.divsi %20, %21 : index
// CHECK-NEXT:     %23 = arith.constant 2 : index
// CHECK-NEXT:     %24 = arith.muli %22, %23 : index
// CHECK-NEXT:     %25 = arith.constant 0 : index
// CHECK-NEXT:     %26 = arith.addi %24, %25 : index
// CHECK-NEXT:     %27 = arith.addi %c0, %26 : index
// CHECK-NEXT:     %28 = arith.maxsi %27, %c0 : index
// CHECK-NEXT:     %29 = arith.minsi %28, %12 : index
// CHECK-NEXT:     %30 = arith.constant 0 : index
// CHECK-NEXT:     %31 = arith.constant 1 : index
// CHECK-NEXT:     scf.if %17 {
// CHECK-NEXT:       scf.for %32 = %c0 to %29 step %31 {
// CHECK-NEXT:         scf.for %33 = %30 to %14 step %31 {
// CHECK-NEXT:           %34 = memref.load %g[%32, %33] : memref<?x?xbf16>
// CHECK-NEXT:           %35 = arith.extf %34 : bf16 to f32
// CHECK-NEXT:           memref.store %35, %rows_1[%32, %33] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %t = %c0 to %h_end step %panel_columns {
// CHECK-NEXT:       %36 = arith.addi %t, %panel_columns : index
// CHECK-NEXT:       %37 = arith.minsi %36, %h_end : index
// CHECK-NEXT:       %38 = arith.subi %37, %t : index
// CHECK-NEXT:       %panel, %39 = tg.panel %w[%t, %38] in %w_panel32 offset %0 : memref<?x?xbf16>, memref<?xf32> -> memref<?x?xf32>
// CHECK-NEXT:       %40 = arith.constant 0 : index
// CHECK-NEXT:       %41 = arith.constant 1 : index
// CHECK-NEXT:       %42 = memref.dim %w, %40 : memref<?x?xbf16>
// CHECK-NEXT:       scf.if %39 {
// CHECK-NEXT:         scf.for %43 = %40 to %42 step %41 {
// CHECK-NEXT:           scf.for %44 = %40 to %38 step %41 {
// CHECK-NEXT:             %45 = arith.addi %t, %44 : index
// CHECK-NEXT:             %46 = memref.load %w[%43, %45] : memref<?x?xbf16>
// CHECK-NEXT:             %47 = arith.extf %46 : bf16 to f32
// CHECK-NEXT:             memref.store %47, %panel[%43, %44] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.for %i = %c0 to %rows step %c2 {
// CHECK-NEXT:         %i1 = arith.addi %i, %c1 : index
// CHECK-NEXT:         %tile = arith.constant 4096 : index
// CHECK-NEXT:         %t_next = arith.addi %t, %panel_columns : index
// CHECK-NEXT:         %t_end = arith.minsi %t_next, %h_end : index
// CHECK-NEXT:         scf.for %v = %c0 to %v_end step %c1 {
// CHECK-NEXT:           scf.for %h = %t to %t_end step %c1 {
// CHECK-NEXT:             %at = arith.subi %h, %t : index
// CHECK-NEXT:             %a0 = memref.load %acc0[%at] : memref<512xf32>
// CHECK-NEXT:             %x0 = memref.load %rows_1[%i, %v] : memref<?x?xf32>
// CHECK-NEXT:             %48 = arith.subi %h, %t : index
// CHECK-NEXT:             %y0 = memref.load %panel[%v, %48] : memref<?x?xf32>
// CHECK-NEXT:             %p0 = arith.mulf %x0, %y0 : f32
// CHECK-NEXT:             %s0 = arith.addf %a0, %p0 : f32
// CHECK-NEXT:             memref.store %s0, %acc0[%at] : memref<512xf32>
// CHECK-NEXT:             %a1 = memref.load %acc1[%at] : memref<512xf32>
// CHECK-NEXT:             %x1 = memref.load %rows_1[%i1, %v] : memref<?x?xf32>
// CHECK-NEXT:             %49 = arith.subi %h, %t : index
// CHECK-NEXT:             %y1 = memref.load %panel[%v, %49] : memref<?x?xf32>
// CHECK-NEXT:             %p1 = arith.mulf %x1, %y1 : f32
// CHECK-NEXT:             %s1 = arith.addf %a1, %p1 : f32
// CHECK-NEXT:             memref.store %s1, %acc1[%at] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         scf.for %h_1 = %t to %t_end step %c1 {
// CHECK-NEXT:           %at_1 = arith.subi %h_1, %t : index
// CHECK-NEXT:           %a0_1 = memref.load %acc0[%at_1] : memref<512xf32>
// CHECK-NEXT:           %a0h = arith.truncf %a0_1 : f32 to bf16
// CHECK-NEXT:           memref.store %a0h, %out[%i, %h_1] : memref<?x?xbf16>
// CHECK-NEXT:           %a1_1 = memref.load %acc1[%at_1] : memref<512xf32>
// CHECK-NEXT:           %a1h = arith.truncf %a1_1 : f32 to bf16
// CHECK-NEXT:           memref.store %a1h, %out[%i1, %h_1] : memref<?x?xbf16>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
