// RUN: tilegrad opt %s -p 'partition-clamped-loops' | filecheck %s

// A stride-1 window's index written `(o + 1 - j) // 1` (a conv's grad_input at stride 1, its stride a
// constant 1): the division is its operand, so the window loop over o is partitioned around its tap loop
// j as if it were not there, and the middle part has no tests and no clamps.

builtin.module {
  func.func @window(%dy: memref<?xf32>, %w: memref<?xf32>, %dx: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %m = memref.dim %dy, %c0 : memref<?xf32>
    %s = memref.dim %w, %c0 : memref<?xf32>
    %n = memref.dim %dx, %c0 : memref<?xf32>
    %top = arith.subi %m, %c1 : index
    scf.for %o = %c0 to %n step %c1 {
      %sum = scf.for %j = %c0 to %s step %c1 iter_args(%acc = %zero) -> (f32) {
        %shifted = arith.addi %o, %c1 : index
        %at = arith.subi %shifted, %j : index
        %q = arith.divsi %at, %c1 : index
        %above = arith.cmpi sge, %at, %c0 : index
        %below = arith.cmpi slt, %q, %m : index
        %inside = arith.andi %above, %below : i1
        %low = arith.maxsi %q, %c0 : index
        %safe = arith.minsi %low, %top : index
        %v = memref.load %dy[%safe] : memref<?xf32>
        %wj = memref.load %w[%j] : memref<?xf32>
        %p = arith.mulf %v, %wj : f32
        %t = arith.select %inside, %p, %zero : f32
        %next = arith.addf %acc, %t fastmath<reassoc> : f32
        scf.yield %next : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %sum, %dx[%o] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 1>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @window(%dy: memref<?xf32>, %w: memref<?xf32>, %dx: memref<?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %m = memref.dim %dy, %c0 : memref<?xf32>
// CHECK-NEXT:     %s = memref.dim %w, %c0 : memref<?xf32>
// CHECK-NEXT:     %n = memref.dim %dx, %c0 : memref<?xf32>
// CHECK-NEXT:     %top = arith.subi %m, %c1 : index
// CHECK-NEXT:     %0 = arith.constant -1 : index
// CHECK-NEXT:     %1 = arith.addi %s, %0 : index
// CHECK-NEXT:     %2 = arith.constant 0 : index
// CHECK-NEXT:     %3 = arith.constant 1 : index
// CHECK-NEXT:     %4 = arith.subi %3, %1 : index
// CHECK-NEXT:     %5 = arith.subi %c0, %4 : index
// CHECK-NEXT:     %6 = arith.maxsi %c0, %5 : index
// CHECK-NEXT:     %7 = arith.addi %m, %0 : index
// CHECK-NEXT:     %8 = arith.subi %7, %3 : index
// CHECK-NEXT:     %9 = arith.addi %8, %3 : index
// CHECK-NEXT:     %10 = arith.minsi %n, %9 : index
// CHECK-NEXT:     %11 = arith.addi %s, %0 : index
// CHECK-NEXT:     %12 = arith.subi %3, %11 : index
// CHECK-NEXT:     %13 = arith.divsi %12, %c1 : index
// CHECK-NEXT:     %14 = arith.subi %c0, %13 : index
// CHECK-NEXT:     %15 = arith.maxsi %6, %14 : index
// CHECK-NEXT:     %16 = arith.subi %top, %3 : index
// CHECK-NEXT:     %17 = arith.addi %16, %3 : index
// CHECK-NEXT:     %18 = arith.minsi %10, %17 : index
// CHECK-NEXT:     %19 = arith.minsi %15, %n : index
// CHECK-NEXT:     %20 = arith.minsi %18, %n : index
// CHECK-NEXT:     %21 = arith.maxsi %19, %20 : index
// CHECK-NEXT:     scf.for %o = %c0 to %19 step %c1 {
// CHECK-NEXT:       %sum = scf.for %j = %c0 to %s step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:         %shifted = arith.addi %o, %c1 : index
// CHECK-NEXT:         %at = arith.subi %shifted, %j : index
// CHECK-NEXT:         %q = arith.divsi %at, %c1 : index
// CHECK-NEXT:         %above = arith.cmpi sge, %at, %c0 : index
// CHECK-NEXT:         %below = arith.cmpi slt, %q, %m : index
// CHECK-NEXT:         %inside = arith.andi %above, %below : i1
// CHECK-NEXT:         %low = arith.maxsi %q, %c0 : index
// CHECK-NEXT:         %safe = arith.minsi %low, %top : index
// CHECK-NEXT:         %v = memref.load %dy[%safe] : memref<?xf32>
// CHECK-NEXT:         %wj = memref.load %w[%j] : memref<?xf32>
// CHECK-NEXT:         %p = arith.mulf %v, %wj : f32
// CHECK-NEXT:         %t = arith.select %inside, %p, %zero : f32
// CHECK-NEXT:         %next = arith.addf %acc, %t fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %next : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %sum, %dx[%o] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     scf.for %o_1 = %19 to %21 step %c1 {
// CHECK-NEXT:       %above_1 = arith.constant true
// CHECK-NEXT:       %sum_1 = scf.for %j_1 = %c0 to %s step %c1 iter_args(%acc_1 = %zero) -> (f32) {
// CHECK-NEXT:         %shifted_1 = arith.addi %o_1, %c1 : index
// CHECK-NEXT:         %at_1 = arith.subi %shifted_1, %j_1 : index
// CHECK-NEXT:         %q_1 = arith.divsi %at_1, %c1 : index
// CHECK-NEXT:         %inside_1 = arith.andi %above_1, %above_1 : i1
// CHECK-NEXT:         %v_1 = memref.load %dy[%q_1] : memref<?xf32>
// CHECK-NEXT:         %wj_1 = memref.load %w[%j_1] : memref<?xf32>
// CHECK-NEXT:         %p_1 = arith.mulf %v_1, %wj_1 : f32
// CHECK-NEXT:         %t_1 = arith.select %inside_1, %p_1, %zero : f32
// CHECK-NEXT:         %next_1 = arith.addf %acc_1, %t_1 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %next_1 : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %sum_1, %dx[%o_1] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     scf.for %o_2 = %21 to %n step %c1 {
// CHECK-NEXT:       %sum_2 = scf.for %j_2 = %c0 to %s step %c1 iter_args(%acc_2 = %zero) -> (f32) {
// CHECK-NEXT:         %shifted_2 = arith.addi %o_2, %c1 : index
// CHECK-NEXT:         %at_2 = arith.subi %shifted_2, %j_2 : index
// CHECK-NEXT:         %q_2 = arith.divsi %at_2, %c1 : index
// CHECK-NEXT:         %above_2 = arith.cmpi sge, %at_2, %c0 : index
// CHECK-NEXT:         %below_1 = arith.cmpi slt, %q_2, %m : index
// CHECK-NEXT:         %inside_2 = arith.andi %above_2, %below_1 : i1
// CHECK-NEXT:         %low_1 = arith.maxsi %q_2, %c0 : index
// CHECK-NEXT:         %safe_1 = arith.minsi %low_1, %top : index
// CHECK-NEXT:         %v_2 = memref.load %dy[%safe_1] : memref<?xf32>
// CHECK-NEXT:         %wj_2 = memref.load %w[%j_2] : memref<?xf32>
// CHECK-NEXT:         %p_2 = arith.mulf %v_2, %wj_2 : f32
// CHECK-NEXT:         %t_2 = arith.select %inside_2, %p_2, %zero : f32
// CHECK-NEXT:         %next_2 = arith.addf %acc_2, %t_2 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %next_2 : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %sum_2, %dx[%o_2] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
