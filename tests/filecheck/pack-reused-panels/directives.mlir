// RUN: tilegrad opt %s -p 'pack-reused-panels{panel_bytes=1024 columns=8 directives="Stage(stage=0, tensor=\"w\", at=1, memory=\"panel\")"}' | filecheck %s

// The directives option: w, which every row group of groups-sweeping-w.mlir sweeps, named by
// Stage(memory='panel') in stage 0, is packed strip by strip into a stack panel, as the pass packs it
// by itself.

builtin.module {
  func.func @g_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"},
                       %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %acc0 = memref.alloca() : memref<512xf32>
    %acc1 = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %g, %c0 : memref<?x?xf32>
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
            %x0 = memref.load %g[%i, %v] : memref<?x?xf32>
            %y0 = memref.load %w[%v, %h] : memref<?x?xf32>
            %p0 = arith.mulf %x0, %y0 : f32
            %s0 = arith.addf %a0, %p0 : f32
            memref.store %s0, %acc0[%at] : memref<512xf32>
            %a1 = memref.load %acc1[%at] : memref<512xf32>
            %x1 = memref.load %g[%i1, %v] : memref<?x?xf32>
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
// CHECK-NEXT:   func.func @g_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<256xf32>
// CHECK-NEXT:     %acc0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %g, %c0 : memref<?x?xf32>
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
// CHECK-NEXT:     scf.for %t = %c0 to %h_end step %panel_columns {
// CHECK-NEXT:       %13 = arith.addi %t, %panel_columns : index
// CHECK-NEXT:       %14 = arith.minsi %13, %h_end : index
// CHECK-NEXT:       %15 = arith.subi %14, %t : index
// CHECK-NEXT:       %panel, %16 = tg.panel %w[%t, %15] in %0 : memref<?x?xf32>, memref<256xf32> -> memref<?x?xf32>
// CHECK-NEXT:       %17 = arith.constant 0 : index
// CHECK-NEXT:       %18 = arith.constant 1 : index
// CHECK-NEXT:       %19 = memref.dim %w, %17 : memref<?x?xf32>
// CHECK-NEXT:       scf.if %16 {
// CHECK-NEXT:         scf.for %20 = %17 to %19 step %18 {
// CHECK-NEXT:           scf.for %21 = %17 to %15 step %18 {
// CHECK-NEXT:             %22 = arith.addi %t, %21 : index
// CHECK-NEXT:             %23 = memref.load %w[%20, %22] : memref<?x?xf32>
// CHECK-NEXT:             memref.store %23, %panel[%20, %21] : memref<?x?xf32>
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
// CHECK-NEXT:             %x0 = memref.load %g[%i, %v] : memref<?x?xf32>
// CHECK-NEXT:             %24 = arith.subi %h, %t : index
// CHECK-NEXT:             %y0 = memref.load %panel[%v, %24] : memref<?x?xf32>
// CHECK-NEXT:             %p0 = arith.mulf %x0, %y0 : f32
// CHECK-NEXT:             %s0 = arith.addf %a0, %p0 : f32
// CHECK-NEXT:             memref.store %s0, %acc0[%at] : memref<512xf32>
// CHECK-NEXT:             %a1 = memref.load %acc1[%at] : memref<512xf32>
// CHECK-NEXT:             %x1 = memref.load %g[%i1, %v] : memref<?x?xf32>
// CHECK-NEXT:             %25 = arith.subi %h, %t : index
// CHECK-NEXT:             %y1 = memref.load %panel[%v, %25] : memref<?x?xf32>
// CHECK-NEXT:             %p1 = arith.mulf %x1, %y1 : f32
// CHECK-NEXT:             %s1 = arith.addf %a1, %p1 : f32
// CHECK-NEXT:             memref.store %s1, %acc1[%at] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         scf.for %h_1 = %t to %t_end step %c1 {
// CHECK-NEXT:           %at_1 = arith.subi %h_1, %t : index
// CHECK-NEXT:           %a0_1 = memref.load %acc0[%at_1] : memref<512xf32>
// CHECK-NEXT:           memref.store %a0_1, %out[%i, %h_1] : memref<?x?xf32>
// CHECK-NEXT:           %a1_1 = memref.load %acc1[%at_1] : memref<512xf32>
// CHECK-NEXT:           memref.store %a1_1, %out[%i1, %h_1] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
