// RUN: tilegrad opt %s -p 'pack-reused-panels{panel_bytes=1024 columns=8 groups=3 directives="Stage(stage=0, tensor=\"g\", memory=\"panel\", groups=1)"}' | filecheck %s

// The directives option: Stage(..., groups=1) names the row groups' own panel of g-column-blocks.mlir and
// turns the blocks off: each group packs its own two columns of g (and w, not named, is not packed).

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
// CHECK-NEXT:     %0 = memref.alloca() : memref<32xf32>
// CHECK-NEXT:     %acc0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %g, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %v_end = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %h_end = memref.dim %w, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     scf.for %i = %c0 to %rows step %c2 {
// CHECK-NEXT:       %panel, %1 = tg.panel %g[%i, %c2] in %0 : memref<?x?xf32>, memref<32xf32> -> memref<?x?xf32>
// CHECK-NEXT:       %2 = arith.constant 0 : index
// CHECK-NEXT:       %3 = arith.constant 1 : index
// CHECK-NEXT:       %4 = memref.dim %g, %2 : memref<?x?xf32>
// CHECK-NEXT:       scf.if %1 {
// CHECK-NEXT:         scf.for %5 = %2 to %4 step %3 {
// CHECK-NEXT:           scf.for %6 = %2 to %c2 step %3 {
// CHECK-NEXT:             %7 = arith.addi %i, %6 : index
// CHECK-NEXT:             %8 = memref.load %g[%5, %7] : memref<?x?xf32>
// CHECK-NEXT:             memref.store %8, %panel[%5, %6] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       }
// CHECK-NEXT:       %i1 = arith.addi %i, %c1 : index
// CHECK-NEXT:       %tile = arith.constant 4096 : index
// CHECK-NEXT:       scf.for %t = %c0 to %h_end step %tile {
// CHECK-NEXT:         %t_next = arith.addi %t, %tile : index
// CHECK-NEXT:         %t_end = arith.minsi %t_next, %h_end : index
// CHECK-NEXT:         scf.for %v = %c0 to %v_end step %c1 {
// CHECK-NEXT:           scf.for %h = %t to %t_end step %c1 {
// CHECK-NEXT:             %at = arith.subi %h, %t : index
// CHECK-NEXT:             %a0 = memref.load %acc0[%at] : memref<512xf32>
// CHECK-NEXT:             %9 = arith.constant 0 : index
// CHECK-NEXT:             %x0 = memref.load %panel[%v, %9] : memref<?x?xf32>
// CHECK-NEXT:             %y0 = memref.load %w[%v, %h] : memref<?x?xf32>
// CHECK-NEXT:             %p0 = arith.mulf %x0, %y0 : f32
// CHECK-NEXT:             %s0 = arith.addf %a0, %p0 : f32
// CHECK-NEXT:             memref.store %s0, %acc0[%at] : memref<512xf32>
// CHECK-NEXT:             %a1 = memref.load %acc1[%at] : memref<512xf32>
// CHECK-NEXT:             %10 = arith.constant 1 : index
// CHECK-NEXT:             %x1 = memref.load %panel[%v, %10] : memref<?x?xf32>
// CHECK-NEXT:             %y1 = memref.load %w[%v, %h] : memref<?x?xf32>
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
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
