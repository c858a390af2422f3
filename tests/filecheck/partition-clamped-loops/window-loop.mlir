// RUN: tilegrad opt %s -p 'partition-clamped-loops' | filecheck %s

// A window loop, jammed by 2 (a convolution's columns): y[o] = Σ_j x[o - 1 + j] w[j] for j in [0, S),
// each term tested 0 <= o - 1 + j < D (the read clamped), the second column a clamped copy
// min(o + 1, N - 1). The tap loop's variable j is taken at its extremes: the middle part runs
// o in [1, D - S + 1), clipped to the loop and to the copy's o + 1 <= N - 1, its start and end moved
// to lb + a multiple of 2; there the tests are true and the clamps gone. The first and last parts
// keep the body as it was.

builtin.module {
  func.func @window(%x: memref<?xf32>, %w: memref<?xf32>, %y: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %d = memref.dim %x, %c0 : memref<?xf32>
    %s = memref.dim %w, %c0 : memref<?xf32>
    %n = memref.dim %y, %c0 : memref<?xf32>
    %last = arith.subi %n, %c1 : index
    scf.for %o = %c0 to %n step %c2 {
      %o1 = arith.addi %o, %c1 : index
      %o2 = arith.minsi %o1, %last : index
      %a, %b = scf.for %j = %c0 to %s step %c1 iter_args(%acc = %zero, %acc2 = %zero) -> (f32, f32) {
        %wj = memref.load %w[%j] : memref<?xf32>
        %base = arith.subi %o, %c1 : index
        %at = arith.addi %base, %j : index
        %above = arith.cmpi sge, %at, %c0 : index
        %below = arith.cmpi slt, %at, %d : index
        %inside = arith.andi %above, %below : i1
        %top = arith.subi %d, %c1 : index
        %low = arith.maxsi %at, %c0 : index
        %safe = arith.minsi %low, %top : index
        %v = memref.load %x[%safe] : memref<?xf32>
        %p = arith.mulf %v, %wj : f32
        %t = arith.select %inside, %p, %zero : f32
        %sum = arith.addf %acc, %t fastmath<reassoc> : f32
        %base2 = arith.subi %o2, %c1 : index
        %at2 = arith.addi %base2, %j : index
        %above2 = arith.cmpi sge, %at2, %c0 : index
        %below2 = arith.cmpi slt, %at2, %d : index
        %inside2 = arith.andi %above2, %below2 : i1
        %low2 = arith.maxsi %at2, %c0 : index
        %safe2 = arith.minsi %low2, %top : index
        %v2 = memref.load %x[%safe2] : memref<?xf32>
        %p2 = arith.mulf %v2, %wj : f32
        %t2 = arith.select %inside2, %p2, %zero : f32
        %sum2 = arith.addf %acc2, %t2 fastmath<reassoc> : f32
        scf.yield %sum, %sum2 : f32, f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %a, %y[%o] : memref<?xf32>
      memref.store %b, %y[%o2] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 1>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @window(%x: memref<?xf32>, %w: memref<?xf32>, %y: memref<?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %d = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     %s = memref.dim %w, %c0 : memref<?xf32>
// CHECK-NEXT:     %n = memref.dim %y, %c0 : memref<?xf32>
// CHECK-NEXT:     %last = arith.subi %n, %c1 : index
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = arith.constant 1 : index
// CHECK-NEXT:     %2 = arith.subi %last, %1 : index
// CHECK-NEXT:     %3 = arith.addi %2, %1 : index
// CHECK-NEXT:     %4 = arith.minsi %n, %3 : index
// CHECK-NEXT:     %5 = arith.constant -1 : index
// CHECK-NEXT:     %6 = arith.addi %s, %5 : index
// CHECK-NEXT:     %7 = arith.addi %5, %6 : index
// CHECK-NEXT:     %8 = arith.addi %d, %5 : index
// CHECK-NEXT:     %9 = arith.subi %8, %7 : index
// CHECK-NEXT:     %10 = arith.addi %9, %1 : index
// CHECK-NEXT:     %11 = arith.minsi %4, %10 : index
// CHECK-NEXT:     %12 = arith.addi %s, %5 : index
// CHECK-NEXT:     %13 = arith.addi %5, %12 : index
// CHECK-NEXT:     %14 = arith.subi %d, %c1 : index
// CHECK-NEXT:     %15 = arith.subi %14, %13 : index
// CHECK-NEXT:     %16 = arith.addi %15, %1 : index
// CHECK-NEXT:     %17 = arith.minsi %11, %16 : index
// CHECK-NEXT:     %18 = arith.addi %s, %5 : index
// CHECK-NEXT:     %19 = arith.addi %0, %18 : index
// CHECK-NEXT:     %20 = arith.addi %d, %5 : index
// CHECK-NEXT:     %21 = arith.subi %20, %19 : index
// CHECK-NEXT:     %22 = arith.addi %21, %1 : index
// CHECK-NEXT:     %23 = arith.minsi %17, %22 : index
// CHECK-NEXT:     %24 = arith.addi %s, %5 : index
// CHECK-NEXT:     %25 = arith.addi %0, %24 : index
// CHECK-NEXT:     %26 = arith.subi %14, %25 : index
// CHECK-NEXT:     %27 = arith.addi %26, %1 : index
// CHECK-NEXT:     %28 = arith.minsi %23, %27 : index
// CHECK-NEXT:     %29 = arith.constant 2 : index
// CHECK-NEXT:     %30 = arith.constant false
// CHECK-NEXT:     %31 = arith.subi %28, %c0 : index
// CHECK-NEXT:     %32 = arith.cmpi slt, %31, %0 : index
// CHECK-NEXT:     %33 = arith.addi %31, %5 : index
// CHECK-NEXT:     %34 = arith.select %32, %33, %31 : index
// CHECK-NEXT:     %35 = arith.divsi %34, %29 : index
// CHECK-NEXT:     %36 = arith.muli %35, %29 : index
// CHECK-NEXT:     %37 = arith.addi %c0, %36 : index
// CHECK-NEXT:     %38 = arith.minsi %29, %n : index
// CHECK-NEXT:     %39 = arith.minsi %37, %n : index
// CHECK-NEXT:     %40 = arith.maxsi %38, %39 : index
// CHECK-NEXT:     scf.for %o = %c0 to %38 step %c2 {
// CHECK-NEXT:       %o1 = arith.addi %o, %c1 : index
// CHECK-NEXT:       %o2 = arith.minsi %o1, %last : index
// CHECK-NEXT:       %41 = arith.subi %o, %c1 : index
// CHECK-NEXT:       %42 = arith.constant 0 : index
// CHECK-NEXT:       %43 = arith.addi %41, %42 : index
// CHECK-NEXT:       %44 = arith.subi %c0, %43 : index
// CHECK-NEXT:       %45 = arith.maxsi %c0, %44 : index
// CHECK-NEXT:       %46 = arith.constant -1 : index
// CHECK-NEXT:       %47 = arith.addi %d, %46 : index
// CHECK-NEXT:       %48 = arith.subi %47, %43 : index
// CHECK-NEXT:       %49 = arith.constant 1 : index
// CHECK-NEXT:       %50 = arith.addi %48, %49 : index
// CHECK-NEXT:       %51 = arith.minsi %s, %50 : index
// CHECK-NEXT:       %52 = arith.subi %d, %c1 : index
// CHECK-NEXT:       %53 = arith.subi %52, %43 : index
// CHECK-NEXT:       %54 = arith.addi %53, %49 : index
// CHECK-NEXT:       %55 = arith.minsi %51, %54 : index
// CHECK-NEXT:       %56 = arith.subi %o2, %c1 : index
// CHECK-NEXT:       %57 = arith.addi %56, %42 : index
// CHECK-NEXT:       %58 = arith.subi %c0, %57 : index
// CHECK-NEXT:       %59 = arith.maxsi %45, %58 : index
// CHECK-NEXT:       %60 = arith.addi %d, %46 : index
// CHECK-NEXT:       %61 = arith.subi %60, %57 : index
// CHECK-NEXT:       %62 = arith.addi %61, %49 : index
// CHECK-NEXT:       %63 = arith.minsi %55, %62 : index
// CHECK-NEXT:       %64 = arith.subi %52, %57 : index
// CHECK-NEXT:       %65 = arith.addi %64, %49 : index
// CHECK-NEXT:       %66 = arith.minsi %63, %65 : index
// CHECK-NEXT:       %67 = arith.minsi %59, %s : index
// CHECK-NEXT:       %68 = arith.minsi %66, %s : index
// CHECK-NEXT:       %69 = arith.maxsi %67, %68 : index
// CHECK-NEXT:       %a, %b = scf.for %j = %c0 to %67 step %c1 iter_args(%acc = %zero, %acc2 = %zero) -> (f32, f32) {
// CHECK-NEXT:         %wj = memref.load %w[%j] : memref<?xf32>
// CHECK-NEXT:         %base = arith.subi %o, %c1 : index
// CHECK-NEXT:         %at = arith.addi %base, %j : index
// CHECK-NEXT:         %above = arith.cmpi sge, %at, %c0 : index
// CHECK-NEXT:         %below = arith.cmpi slt, %at, %d : index
// CHECK-NEXT:         %inside = arith.andi %above, %below : i1
// CHECK-NEXT:         %top = arith.subi %d, %c1 : index
// CHECK-NEXT:         %low = arith.maxsi %at, %c0 : index
// CHECK-NEXT:         %safe = arith.minsi %low, %top : index
// CHECK-NEXT:         %v = memref.load %x[%safe] : memref<?xf32>
// CHECK-NEXT:         %p = arith.mulf %v, %wj : f32
// CHECK-NEXT:         %t = arith.select %inside, %p, %zero : f32
// CHECK-NEXT:         %sum = arith.addf %acc, %t fastmath<reassoc> : f32
// CHECK-NEXT:         %base2 = arith.subi %o2, %c1 : index
// CHECK-NEXT:         %at2 = arith.addi %base2, %j : index
// CHECK-NEXT:         %above2 = arith.cmpi sge, %at2, %c0 : index
// CHECK-NEXT:         %below2 = arith.cmpi slt, %at2, %d : index
// CHECK-NEXT:         %inside2 = arith.andi %above2, %below2 : i1
// CHECK-NEXT:         %low2 = arith.maxsi %at2, %c0 : index
// CHECK-NEXT:         %safe2 = arith.minsi %low2, %top : index
// CHECK-NEXT:         %v2 = memref.load %x[%safe2] : memref<?xf32>
// CHECK-NEXT:         %p2 = arith.mulf %v2, %wj : f32
// CHECK-NEXT:         %t2 = arith.select %inside2, %p2, %zero : f32
// CHECK-NEXT:         %sum2 = arith.addf %acc2, %t2 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %sum, %sum2 : f32, f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       %a_1, %b_1 = scf.for %j_1 = %67 to %69 step %c1 iter_args(%acc_1 = %a, %acc2_1 = %b) -> (f32, f32) {
// CHECK-NEXT:         %above_1 = arith.constant true
// CHECK-NEXT:         %wj_1 = memref.load %w[%j_1] : memref<?xf32>
// CHECK-NEXT:         %base_1 = arith.subi %o, %c1 : index
// CHECK-NEXT:         %at_1 = arith.addi %base_1, %j_1 : index
// CHECK-NEXT:         %inside_1 = arith.andi %above_1, %above_1 : i1
// CHECK-NEXT:         %top_1 = arith.subi %d, %c1 : index
// CHECK-NEXT:         %v_1 = memref.load %x[%at_1] : memref<?xf32>
// CHECK-NEXT:         %p_1 = arith.mulf %v_1, %wj_1 : f32
// CHECK-NEXT:         %t_1 = arith.select %inside_1, %p_1, %zero : f32
// CHECK-NEXT:         %sum_1 = arith.addf %acc_1, %t_1 fastmath<reassoc> : f32
// CHECK-NEXT:         %base2_1 = arith.subi %o2, %c1 : index
// CHECK-NEXT:         %at2_1 = arith.addi %base2_1, %j_1 : index
// CHECK-NEXT:         %inside2_1 = arith.andi %above_1, %above_1 : i1
// CHECK-NEXT:         %v2_1 = memref.load %x[%at2_1] : memref<?xf32>
// CHECK-NEXT:         %p2_1 = arith.mulf %v2_1, %wj_1 : f32
// CHECK-NEXT:         %t2_1 = arith.select %inside2_1, %p2_1, %zero : f32
// CHECK-NEXT:         %sum2_1 = arith.addf %acc2_1, %t2_1 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %sum_1, %sum2_1 : f32, f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       %a_2, %b_2 = scf.for %j_2 = %69 to %s step %c1 iter_args(%acc_2 = %a_1, %acc2_2 = %b_1) -> (f32, f32) {
// CHECK-NEXT:         %wj_2 = memref.load %w[%j_2] : memref<?xf32>
// CHECK-NEXT:         %base_2 = arith.subi %o, %c1 : index
// CHECK-NEXT:         %at_2 = arith.addi %base_2, %j_2 : index
// CHECK-NEXT:         %above_2 = arith.cmpi sge, %at_2, %c0 : index
// CHECK-NEXT:         %below_1 = arith.cmpi slt, %at_2, %d : index
// CHECK-NEXT:         %inside_2 = arith.andi %above_2, %below_1 : i1
// CHECK-NEXT:         %top_2 = arith.subi %d, %c1 : index
// CHECK-NEXT:         %low_1 = arith.maxsi %at_2, %c0 : index
// CHECK-NEXT:         %safe_1 = arith.minsi %low_1, %top_2 : index
// CHECK-NEXT:         %v_2 = memref.load %x[%safe_1] : memref<?xf32>
// CHECK-NEXT:         %p_2 = arith.mulf %v_2, %wj_2 : f32
// CHECK-NEXT:         %t_2 = arith.select %inside_2, %p_2, %zero : f32
// CHECK-NEXT:         %sum_2 = arith.addf %acc_2, %t_2 fastmath<reassoc> : f32
// CHECK-NEXT:         %base2_2 = arith.subi %o2, %c1 : index
// CHECK-NEXT:         %at2_2 = arith.addi %base2_2, %j_2 : index
// CHECK-NEXT:         %above2_1 = arith.cmpi sge, %at2_2, %c0 : index
// CHECK-NEXT:         %below2_1 = arith.cmpi slt, %at2_2, %d : index
// CHECK-NEXT:         %inside2_2 = arith.andi %above2_1, %below2_1 : i1
// CHECK-NEXT:         %low2_1 = arith.maxsi %at2_2, %c0 : index
// CHECK-NEXT:         %safe2_1 = arith.minsi %low2_1, %top_2 : index
// CHECK-NEXT:         %v2_2 = memref.load %x[%safe2_1] : memref<?xf32>
// CHECK-NEXT:         %p2_2 = arith.mulf %v2_2, %wj_2 : f32
// CHECK-NEXT:         %t2_2 = arith.select %inside2_2, %p2_2, %zero : f32
// CHECK-NEXT:         %sum2_2 = arith.addf %acc2_2, %t2_2 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %sum_2, %sum2_2 : f32, f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %a_2, %y[%o] : memref<?xf32>
// CHECK-NEXT:       memref.store %b_2, %y[%o2] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     scf.for %o_1 = %38 to %40 step %c2 {
// CHECK-NEXT:       %above_3 = arith.constant true
// CHECK-NEXT:       %o1_1 = arith.addi %o_1, %c1 : index
// CHECK-NEXT:       %a_3, %b_3 = scf.for %j_3 = %c0 to %s step %c1 iter_args(%acc_3 = %zero, %acc2_3 = %zero) -> (f32, f32) {
// CHECK-NEXT:         %wj_3 = memref.load %w[%j_3] : memref<?xf32>
// CHECK-NEXT:         %base_3 = arith.subi %o_1, %c1 : index
// CHECK-NEXT:         %at_3 = arith.addi %base_3, %j_3 : index
// CHECK-NEXT:         %inside_3 = arith.andi %above_3, %above_3 : i1
// CHECK-NEXT:         %top_3 = arith.subi %d, %c1 : index
// CHECK-NEXT:         %v_3 = memref.load %x[%at_3] : memref<?xf32>
// CHECK-NEXT:         %p_3 = arith.mulf %v_3, %wj_3 : f32
// CHECK-NEXT:         %t_3 = arith.select %inside_3, %p_3, %zero : f32
// CHECK-NEXT:         %sum_3 = arith.addf %acc_3, %t_3 fastmath<reassoc> : f32
// CHECK-NEXT:         %base2_3 = arith.subi %o1_1, %c1 : index
// CHECK-NEXT:         %at2_3 = arith.addi %base2_3, %j_3 : index
// CHECK-NEXT:         %inside2_3 = arith.andi %above_3, %above_3 : i1
// CHECK-NEXT:         %v2_3 = memref.load %x[%at2_3] : memref<?xf32>
// CHECK-NEXT:         %p2_3 = arith.mulf %v2_3, %wj_3 : f32
// CHECK-NEXT:         %t2_3 = arith.select %inside2_3, %p2_3, %zero : f32
// CHECK-NEXT:         %sum2_3 = arith.addf %acc2_3, %t2_3 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %sum_3, %sum2_3 : f32, f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %a_3, %y[%o_1] : memref<?xf32>
// CHECK-NEXT:       memref.store %b_3, %y[%o1_1] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     scf.for %o_2 = %40 to %n step %c2 {
// CHECK-NEXT:       %o1_2 = arith.addi %o_2, %c1 : index
// CHECK-NEXT:       %o2_1 = arith.minsi %o1_2, %last : index
// CHECK-NEXT:       %70 = arith.subi %o_2, %c1 : index
// CHECK-NEXT:       %71 = arith.constant 0 : index
// CHECK-NEXT:       %72 = arith.addi %70, %71 : index
// CHECK-NEXT:       %73 = arith.subi %c0, %72 : index
// CHECK-NEXT:       %74 = arith.maxsi %c0, %73 : index
// CHECK-NEXT:       %75 = arith.constant -1 : index
// CHECK-NEXT:       %76 = arith.addi %d, %75 : index
// CHECK-NEXT:       %77 = arith.subi %76, %72 : index
// CHECK-NEXT:       %78 = arith.constant 1 : index
// CHECK-NEXT:       %79 = arith.addi %77, %78 : index
// CHECK-NEXT:       %80 = arith.minsi %s, %79 : index
// CHECK-NEXT:       %81 = arith.subi %d, %c1 : index
// CHECK-NEXT:       %82 = arith.subi %81, %72 : index
// CHECK-NEXT:       %83 = arith.addi %82, %78 : index
// CHECK-NEXT:       %84 = arith.minsi %80, %83 : index
// CHECK-NEXT:       %85 = arith.subi %o2_1, %c1 : index
// CHECK-NEXT:       %86 = arith.addi %85, %71 : index
// CHECK-NEXT:       %87 = arith.subi %c0, %86 : index
// CHECK-NEXT:       %88 = arith.maxsi %74, %87 : index
// CHECK-NEXT:       %89 = arith.addi %d, %75 : index
// CHECK-NEXT:       %90 = arith.subi %89, %86 : index
// CHECK-NEXT:       %91 = arith.addi %90, %78 : index
// CHECK-NEXT:       %92 = arith.minsi %84, %91 : index
// CHECK-NEXT:       %93 = arith.subi %81, %86 : index
// CHECK-NEXT:       %94 = arith.addi %93, %78 : index
// CHECK-NEXT:       %95 = arith.minsi %92, %94 : index
// CHECK-NEXT:       %96 = arith.minsi %88, %s : index
// CHECK-NEXT:       %97 = arith.minsi %95, %s : index
// CHECK-NEXT:       %98 = arith.maxsi %96, %97 : index
// CHECK-NEXT:       %a_4, %b_4 = scf.for %j_4 = %c0 to %96 step %c1 iter_args(%acc_4 = %zero, %acc2_4 = %zero) -> (f32, f32) {
// CHECK-NEXT:         %wj_4 = memref.load %w[%j_4] : memref<?xf32>
// CHECK-NEXT:         %base_4 = arith.subi %o_2, %c1 : index
// CHECK-NEXT:         %at_4 = arith.addi %base_4, %j_4 : index
// CHECK-NEXT:         %above_4 = arith.cmpi sge, %at_4, %c0 : index
// CHECK-NEXT:         %below_2 = arith.cmpi slt, %at_4, %d : index
// CHECK-NEXT:         %inside_4 = arith.andi %above_4, %below_2 : i1
// CHECK-NEXT:         %top_4 = arith.subi %d, %c1 : index
// CHECK-NEXT:         %low_2 = arith.maxsi %at_4, %c0 : index
// CHECK-NEXT:         %safe_2 = arith.minsi %low_2, %top_4 : index
// CHECK-NEXT:         %v_4 = memref.load %x[%safe_2] : memref<?xf32>
// CHECK-NEXT:         %p_4 = arith.mulf %v_4, %wj_4 : f32
// CHECK-NEXT:         %t_4 = arith.select %inside_4, %p_4, %zero : f32
// CHECK-NEXT:         %sum_4 = arith.addf %acc_4, %t_4 fastmath<reassoc> : f32
// CHECK-NEXT:         %base2_4 = arith.subi %o2_1, %c1 : index
// CHECK-NEXT:         %at2_4 = arith.addi %base2_4, %j_4 : index
// CHECK-NEXT:         %above2_2 = arith.cmpi sge, %at2_4, %c0 : index
// CHECK-NEXT:         %below2_2 = arith.cmpi slt, %at2_4, %d : index
// CHECK-NEXT:         %inside2_4 = arith.andi %above2_2, %below2_2 : i1
// CHECK-NEXT:         %low2_2 = arith.maxsi %at2_4, %c0 : index
// CHECK-NEXT:         %safe2_2 = arith.minsi %low2_2, %top_4 : index
// CHECK-NEXT:         %v2_4 = memref.load %x[%safe2_2] : memref<?xf32>
// CHECK-NEXT:         %p2_4 = arith.mulf %v2_4, %wj_4 : f32
// CHECK-NEXT:         %t2_4 = arith.select %inside2_4, %p2_4, %zero : f32
// CHECK-NEXT:         %sum2_4 = arith.addf %acc2_4, %t2_4 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %sum_4, %sum2_4 : f32, f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       %a_5, %b_5 = scf.for %j_5 = %96 to %98 step %c1 iter_args(%acc_5 = %a_4, %acc2_5 = %b_4) -> (f32, f32) {
// CHECK-NEXT:         %above_5 = arith.constant true
// CHECK-NEXT:         %wj_5 = memref.load %w[%j_5] : memref<?xf32>
// CHECK-NEXT:         %base_5 = arith.subi %o_2, %c1 : index
// CHECK-NEXT:         %at_5 = arith.addi %base_5, %j_5 : index
// CHECK-NEXT:         %inside_5 = arith.andi %above_5, %above_5 : i1
// CHECK-NEXT:         %top_5 = arith.subi %d, %c1 : index
// CHECK-NEXT:         %v_5 = memref.load %x[%at_5] : memref<?xf32>
// CHECK-NEXT:         %p_5 = arith.mulf %v_5, %wj_5 : f32
// CHECK-NEXT:         %t_5 = arith.select %inside_5, %p_5, %zero : f32
// CHECK-NEXT:         %sum_5 = arith.addf %acc_5, %t_5 fastmath<reassoc> : f32
// CHECK-NEXT:         %base2_5 = arith.subi %o2_1, %c1 : index
// CHECK-NEXT:         %at2_5 = arith.addi %base2_5, %j_5 : index
// CHECK-NEXT:         %inside2_5 = arith.andi %above_5, %above_5 : i1
// CHECK-NEXT:         %v2_5 = memref.load %x[%at2_5] : memref<?xf32>
// CHECK-NEXT:         %p2_5 = arith.mulf %v2_5, %wj_5 : f32
// CHECK-NEXT:         %t2_5 = arith.select %inside2_5, %p2_5, %zero : f32
// CHECK-NEXT:         %sum2_5 = arith.addf %acc2_5, %t2_5 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %sum_5, %sum2_5 : f32, f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       %a_6, %b_6 = scf.for %j_6 = %98 to %s step %c1 iter_args(%acc_6 = %a_5, %acc2_6 = %b_5) -> (f32, f32) {
// CHECK-NEXT:         %wj_6 = memref.load %w[%j_6] : memref<?xf32>
// CHECK-NEXT:         %base_6 = arith.subi %o_2, %c1 : index
// CHECK-NEXT:         %at_6 = arith.addi %base_6, %j_6 : index
// CHECK-NEXT:         %above_6 = arith.cmpi sge, %at_6, %c0 : index
// CHECK-NEXT:         %below_3 = arith.cmpi slt, %at_6, %d : index
// CHECK-NEXT:         %inside_6 = arith.andi %above_6, %below_3 : i1
// CHECK-NEXT:         %top_6 = arith.subi %d, %c1 : index
// CHECK-NEXT:         %low_3 = arith.maxsi %at_6, %c0 : index
// CHECK-NEXT:         %safe_3 = arith.minsi %low_3, %top_6 : index
// CHECK-NEXT:         %v_6 = memref.load %x[%safe_3] : memref<?xf32>
// CHECK-NEXT:         %p_6 = arith.mulf %v_6, %wj_6 : f32
// CHECK-NEXT:         %t_6 = arith.select %inside_6, %p_6, %zero : f32
// CHECK-NEXT:         %sum_6 = arith.addf %acc_6, %t_6 fastmath<reassoc> : f32
// CHECK-NEXT:         %base2_6 = arith.subi %o2_1, %c1 : index
// CHECK-NEXT:         %at2_6 = arith.addi %base2_6, %j_6 : index
// CHECK-NEXT:         %above2_3 = arith.cmpi sge, %at2_6, %c0 : index
// CHECK-NEXT:         %below2_3 = arith.cmpi slt, %at2_6, %d : index
// CHECK-NEXT:         %inside2_6 = arith.andi %above2_3, %below2_3 : i1
// CHECK-NEXT:         %low2_3 = arith.maxsi %at2_6, %c0 : index
// CHECK-NEXT:         %safe2_3 = arith.minsi %low2_3, %top_6 : index
// CHECK-NEXT:         %v2_6 = memref.load %x[%safe2_3] : memref<?xf32>
// CHECK-NEXT:         %p2_6 = arith.mulf %v2_6, %wj_6 : f32
// CHECK-NEXT:         %t2_6 = arith.select %inside2_6, %p2_6, %zero : f32
// CHECK-NEXT:         %sum2_6 = arith.addf %acc2_6, %t2_6 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %sum_6, %sum2_6 : f32, f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %a_6, %y[%o_2] : memref<?xf32>
// CHECK-NEXT:       memref.store %b_6, %y[%o2_1] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
