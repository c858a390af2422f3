// RUN: tilegrad opt %s -p 'pack-reused-panels{panel_bytes=1024 columns=8}' | filecheck %s

// A batched product's row groups (2 rows a step, inside the batch loop over %b) that each sweep the
// same columns of the matrix w[b]: the panel packs that matrix, its leading index fixed outside the
// row groups (tg.panel %w at(%b)); the copy and the groups read w[b] through it.

builtin.module {
  func.func @a_times_w(%a: memref<?x?x?xf32> {tg.name = "a", tg.role = "input"},
                       %w: memref<?x?x?xf32> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %acc0 = memref.alloca() : memref<512xf32>
    %acc1 = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %batch = memref.dim %a, %c0 : memref<?x?x?xf32>
    %rows = memref.dim %a, %c1 : memref<?x?x?xf32>
    %v_end = memref.dim %w, %c1 : memref<?x?x?xf32>
    %h_end = memref.dim %w, %c2 : memref<?x?x?xf32>
    scf.for %b = %c0 to %batch step %c1 {
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
              %x0 = memref.load %a[%b, %i, %v] : memref<?x?x?xf32>
              %y0 = memref.load %w[%b, %v, %h] : memref<?x?x?xf32>
              %p0 = arith.mulf %x0, %y0 : f32
              %s0 = arith.addf %a0, %p0 : f32
              memref.store %s0, %acc0[%at] : memref<512xf32>
              %a1 = memref.load %acc1[%at] : memref<512xf32>
              %x1 = memref.load %a[%b, %i1, %v] : memref<?x?x?xf32>
              %y1 = memref.load %w[%b, %v, %h] : memref<?x?x?xf32>
              %p1 = arith.mulf %x1, %y1 : f32
              %s1 = arith.addf %a1, %p1 : f32
              memref.store %s1, %acc1[%at] : memref<512xf32>
            } {tg.loop = #tg.loop<row, axis = 0>}
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          scf.for %h = %t to %t_end step %c1 {
            %at = arith.subi %h, %t : index
            %a0 = memref.load %acc0[%at] : memref<512xf32>
            memref.store %a0, %out[%b, %i, %h] : memref<?x?x?xf32>
            %a1 = memref.load %acc1[%at] : memref<512xf32>
            memref.store %a1, %out[%b, %i1, %h] : memref<?x?x?xf32>
          } {tg.loop = #tg.loop<parallel, axis = 2>}
        } {tg.loop = #tg.loop<tile, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @a_times_w(%a: memref<?x?x?xf32> {tg.name = "a", tg.role = "input"}, %w: memref<?x?x?xf32> {tg.name = "w", tg.role = "input"}, %out: memref<?x?x?xf32> {tg.name = "out", tg.role = "output"}) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<256xf32>
// CHECK-NEXT:     %acc0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %batch = memref.dim %a, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %rows = memref.dim %a, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %v_end = memref.dim %w, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %h_end = memref.dim %w, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     scf.for %b = %c0 to %batch step %c1 {
// CHECK-NEXT:       %1 = arith.constant 0 : index
// CHECK-NEXT:       %2 = arith.constant 1 : index
// CHECK-NEXT:       %3 = arith.constant 1 : index
// CHECK-NEXT:       %4 = memref.dim %w, %3 : memref<?x?x?xf32>
// CHECK-NEXT:       %5 = arith.constant 256 : index
// CHECK-NEXT:       %6 = arith.maxsi %4, %2 : index
// CHECK-NEXT:       %7 = arith.divui %5, %6 : index
// CHECK-NEXT:       %8 = arith.constant 8 : index
// CHECK-NEXT:       %9 = arith.divui %7, %8 : index
// CHECK-NEXT:       %10 = arith.muli %9, %8 : index
// CHECK-NEXT:       %11 = arith.subi %h_end, %c0 : index
// CHECK-NEXT:       %12 = arith.maxsi %11, %2 : index
// CHECK-NEXT:       %13 = arith.cmpi sgt, %10, %1 : index
// CHECK-NEXT:       %panel_columns = arith.select %13, %10, %12 : index
// CHECK-NEXT:       scf.for %t = %c0 to %h_end step %panel_columns {
// CHECK-NEXT:         %14 = arith.addi %t, %panel_columns : index
// CHECK-NEXT:         %15 = arith.minsi %14, %h_end : index
// CHECK-NEXT:         %16 = arith.subi %15, %t : index
// CHECK-NEXT:         %panel, %17 = tg.panel %w at(%b) [%t, %16] in %0 : memref<?x?x?xf32>, memref<256xf32> -> memref<?x?xf32>
// CHECK-NEXT:         %18 = arith.constant 0 : index
// CHECK-NEXT:         %19 = arith.constant 1 : index
// CHECK-NEXT:         %20 = arith.constant 1 : index
// CHECK-NEXT:         %21 = memref.dim %w, %20 : memref<?x?x?xf32>
// CHECK-NEXT:         scf.if %17 {
// CHECK-NEXT:           scf.for %22 = %18 to %21 step %19 {
// CHECK-NEXT:             scf.for %23 = %18 to %16 step %19 {
// CHECK-NEXT:               %24 = arith.addi %t, %23 : index
// CHECK-NEXT:               %25 = memref.load %w[%b, %22, %24] : memref<?x?x?xf32>
// CHECK-NEXT:               memref.store %25, %panel[%22, %23] : memref<?x?xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<copy, axis = 2>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %i = %c0 to %rows step %c2 {
// CHECK-NEXT:           %i1 = arith.addi %i, %c1 : index
// CHECK-NEXT:           %tile = arith.constant 4096 : index
// CHECK-NEXT:           %t_next = arith.addi %t, %panel_columns : index
// CHECK-NEXT:           %t_end = arith.minsi %t_next, %h_end : index
// CHECK-NEXT:           scf.for %v = %c0 to %v_end step %c1 {
// CHECK-NEXT:             scf.for %h = %t to %t_end step %c1 {
// CHECK-NEXT:               %at = arith.subi %h, %t : index
// CHECK-NEXT:               %a0 = memref.load %acc0[%at] : memref<512xf32>
// CHECK-NEXT:               %x0 = memref.load %a[%b, %i, %v] : memref<?x?x?xf32>
// CHECK-NEXT:               %26 = arith.subi %h, %t : index
// CHECK-NEXT:               %y0 = memref.load %panel[%v, %26] : memref<?x?xf32>
// CHECK-NEXT:               %p0 = arith.mulf %x0, %y0 : f32
// CHECK-NEXT:               %s0 = arith.addf %a0, %p0 : f32
// CHECK-NEXT:               memref.store %s0, %acc0[%at] : memref<512xf32>
// CHECK-NEXT:               %a1 = memref.load %acc1[%at] : memref<512xf32>
// CHECK-NEXT:               %x1 = memref.load %a[%b, %i1, %v] : memref<?x?x?xf32>
// CHECK-NEXT:               %27 = arith.subi %h, %t : index
// CHECK-NEXT:               %y1 = memref.load %panel[%v, %27] : memref<?x?xf32>
// CHECK-NEXT:               %p1 = arith.mulf %x1, %y1 : f32
// CHECK-NEXT:               %s1 = arith.addf %a1, %p1 : f32
// CHECK-NEXT:               memref.store %s1, %acc1[%at] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           scf.for %h_1 = %t to %t_end step %c1 {
// CHECK-NEXT:             %at_1 = arith.subi %h_1, %t : index
// CHECK-NEXT:             %a0_1 = memref.load %acc0[%at_1] : memref<512xf32>
// CHECK-NEXT:             memref.store %a0_1, %out[%b, %i, %h_1] : memref<?x?x?xf32>
// CHECK-NEXT:             %a1_1 = memref.load %acc1[%at_1] : memref<512xf32>
// CHECK-NEXT:             memref.store %a1_1, %out[%b, %i1, %h_1] : memref<?x?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
