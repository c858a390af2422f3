// RUN: tilegrad opt %s -p 'jam-row-sweeps{rows=4}' | filecheck %s

// out[i, h] = sum_v g[i, v] * w[v, h], each row summed into a stack row: the main loop runs 4 rows at a
// time in one sweep of w (one v loop, one h loop, each w[v, h] loaded once per row copy, a stack row per
// copy, each sum adding its terms in the same order as before). A row stores only its own elements,
// over them, and reads nothing it writes, so it may run again: the rows the 4 do not divide run in the
// last step, its copies past the end clamped to the last row (min(i + k, rows - 1): tail clamp), and
// no loop is left over; the jammed loop keeps the stage mark.

builtin.module {
  func.func @g_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"},
                       %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %acc = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %g, %c0 : memref<?x?xf32>
    %v_end = memref.dim %w, %c0 : memref<?x?xf32>
    %h_end = memref.dim %w, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %h = %c0 to %h_end step %c1 {
        memref.store %zero, %acc[%h] : memref<512xf32>
      } {tg.loop = #tg.loop<row, axis = 0>}
      scf.for %v = %c0 to %v_end step %c1 {
        scf.for %h = %c0 to %h_end step %c1 {
          %a = memref.load %acc[%h] : memref<512xf32>
          %x = memref.load %g[%i, %v] : memref<?x?xf32>
          %y = memref.load %w[%v, %h] : memref<?x?xf32>
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %a, %p fastmath<reassoc> : f32
          memref.store %s, %acc[%h] : memref<512xf32>
        } {tg.loop = #tg.loop<row, axis = 0>}
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      scf.for %h = %c0 to %h_end step %c1 {
        %a = memref.load %acc[%h] : memref<512xf32>
        memref.store %a, %out[%i, %h] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @g_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
// CHECK-NEXT:     %acc = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc_1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc_2 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc_3 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %g, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %v_end = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %h_end = memref.dim %w, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %0 = arith.constant 4 : index
// CHECK-NEXT:     %1 = arith.subi %rows, %c0 : index
// CHECK-NEXT:     %2 = arith.divui %1, %0 : index
// CHECK-NEXT:     %3 = arith.muli %2, %0 : index
// CHECK-NEXT:     %4 = arith.addi %c0, %3 : index
// CHECK-NEXT:     %5 = arith.constant 1 : index
// CHECK-NEXT:     %6 = arith.subi %rows, %5 : index
// CHECK-NEXT:     scf.for %7 = %c0 to %rows step %0 {
// CHECK-NEXT:       %8 = arith.constant 1 : index
// CHECK-NEXT:       %9 = arith.addi %7, %8 : index
// CHECK-NEXT:       %10 = arith.minsi %9, %6 : index
// CHECK-NEXT:       %11 = arith.constant 2 : index
// CHECK-NEXT:       %12 = arith.addi %7, %11 : index
// CHECK-NEXT:       %13 = arith.minsi %12, %6 : index
// CHECK-NEXT:       %14 = arith.constant 3 : index
// CHECK-NEXT:       %15 = arith.addi %7, %14 : index
// CHECK-NEXT:       %16 = arith.minsi %15, %6 : index
// CHECK-NEXT:       scf.for %17 = %c0 to %h_end step %c1 {
// CHECK-NEXT:         memref.store %zero, %acc_3[%17] : memref<512xf32>
// CHECK-NEXT:         memref.store %zero, %acc_2[%17] : memref<512xf32>
// CHECK-NEXT:         memref.store %zero, %acc_1[%17] : memref<512xf32>
// CHECK-NEXT:         memref.store %zero, %acc[%17] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:       scf.for %18 = %c0 to %v_end step %c1 {
// CHECK-NEXT:         scf.for %19 = %c0 to %h_end step %c1 {
// CHECK-NEXT:           %a = memref.load %acc_3[%19] : memref<512xf32>
// CHECK-NEXT:           %a_1 = memref.load %acc_2[%19] : memref<512xf32>
// CHECK-NEXT:           %a_2 = memref.load %acc_1[%19] : memref<512xf32>
// CHECK-NEXT:           %a_3 = memref.load %acc[%19] : memref<512xf32>
// CHECK-NEXT:           %x = memref.load %g[%7, %18] : memref<?x?xf32>
// CHECK-NEXT:           %x_1 = memref.load %g[%10, %18] : memref<?x?xf32>
// CHECK-NEXT:           %x_2 = memref.load %g[%13, %18] : memref<?x?xf32>
// CHECK-NEXT:           %x_3 = memref.load %g[%16, %18] : memref<?x?xf32>
// CHECK-NEXT:           %y = memref.load %w[%18, %19] : memref<?x?xf32>
// CHECK-NEXT:           %y_1 = memref.load %w[%18, %19] : memref<?x?xf32>
// CHECK-NEXT:           %y_2 = memref.load %w[%18, %19] : memref<?x?xf32>
// CHECK-NEXT:           %y_3 = memref.load %w[%18, %19] : memref<?x?xf32>
// CHECK-NEXT:           %p = arith.mulf %x, %y : f32
// CHECK-NEXT:           %p_1 = arith.mulf %x_1, %y_1 : f32
// CHECK-NEXT:           %p_2 = arith.mulf %x_2, %y_2 : f32
// CHECK-NEXT:           %p_3 = arith.mulf %x_3, %y_3 : f32
// CHECK-NEXT:           %s = arith.addf %a, %p fastmath<reassoc> : f32
// CHECK-NEXT:           %s_1 = arith.addf %a_1, %p_1 fastmath<reassoc> : f32
// CHECK-NEXT:           %s_2 = arith.addf %a_2, %p_2 fastmath<reassoc> : f32
// CHECK-NEXT:           %s_3 = arith.addf %a_3, %p_3 fastmath<reassoc> : f32
// CHECK-NEXT:           memref.store %s, %acc_3[%19] : memref<512xf32>
// CHECK-NEXT:           memref.store %s_1, %acc_2[%19] : memref<512xf32>
// CHECK-NEXT:           memref.store %s_2, %acc_1[%19] : memref<512xf32>
// CHECK-NEXT:           memref.store %s_3, %acc[%19] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       scf.for %20 = %c0 to %h_end step %c1 {
// CHECK-NEXT:         %a_4 = memref.load %acc_3[%20] : memref<512xf32>
// CHECK-NEXT:         %a_5 = memref.load %acc_2[%20] : memref<512xf32>
// CHECK-NEXT:         %a_6 = memref.load %acc_1[%20] : memref<512xf32>
// CHECK-NEXT:         %a_7 = memref.load %acc[%20] : memref<512xf32>
// CHECK-NEXT:         memref.store %a_4, %out[%7, %20] : memref<?x?xf32>
// CHECK-NEXT:         memref.store %a_5, %out[%10, %20] : memref<?x?xf32>
// CHECK-NEXT:         memref.store %a_6, %out[%13, %20] : memref<?x?xf32>
// CHECK-NEXT:         memref.store %a_7, %out[%16, %20] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
