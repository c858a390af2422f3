// RUN: tilegrad opt %s -p split-window-phases | filecheck %s

// A stride-2 conv1d's grad_input as tile-for-target leaves it: dx[n, c, l] = sum over k, j of
// where(o >= 0 & o % 2 == 0 & o / 2 < OL, dy[n, k, clamp(o / 2)] * w[k, c, j], 0), o = l + 1 - j.
// Inside the stage's outermost loop (n), a loop over the phase ph in [0, 2) of l runs the rest
// once: r = (ph + 1) mod 2 the taps' class the test keeps, m = (ph - r + 1) / 2; l = 2 q + ph over
// q in [⌈(0 - ph)/2⌉, ⌈(L - ph)/2⌉) (the tile walks q), j = 2 u + r over u in [0, ⌈(S - r)/2⌉);
// o / 2 is q - u + m, o % 2 is 0 and its test true, o >= 0 the quotient's test q - u + m >= 0 (o is
// twice it: the test beside the clamp max(o / 2, 0), which branch-guarded-reads drops).

builtin.module {
  func.func @conv1d_dx(%dy: memref<?x?x?xf32> {tg.name = "dy", tg.role = "input"},
                       %w: memref<?x?x?xf32> {tg.name = "w", tg.role = "input"},
                       %dx: memref<?x?x?xf32> {tg.name = "dx", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %n_end = memref.dim %dx, %c0 : memref<?x?x?xf32>
    %c_end = memref.dim %dx, %c1 : memref<?x?x?xf32>
    %l_end = memref.dim %dx, %c2 : memref<?x?x?xf32>
    %k_end = memref.dim %dy, %c1 : memref<?x?x?xf32>
    %o_end = memref.dim %dy, %c2 : memref<?x?x?xf32>
    %s_end = memref.dim %w, %c2 : memref<?x?x?xf32>
    %o_last = arith.subi %o_end, %c1 : index
    scf.for %n = %c0 to %n_end step %c1 {
      scf.for %c = %c0 to %c_end step %c1 {
        %tile = arith.constant 4096 : index
        scf.for %t = %c0 to %l_end step %tile {
          %t_next = arith.addi %t, %tile : index
          %t_end = arith.minsi %t_next, %l_end : index
          scf.for %l = %t to %t_end step %c1 {
            %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
              %part = scf.for %j = %c0 to %s_end step %c1 iter_args(%acc_j = %zero) -> (f32) {
                %l1 = arith.addi %l, %c1 : index
                %o = arith.subi %l1, %j : index
                %above = arith.cmpi sge, %o, %c0 : index
                %rem = arith.remsi %o, %c2 : index
                %even = arith.cmpi eq, %rem, %c0 : index
                %kept = arith.andi %above, %even : i1
                %half = arith.divsi %o, %c2 : index
                %below = arith.cmpi slt, %half, %o_end : index
                %inside = arith.andi %kept, %below : i1
                %o_up = arith.maxsi %half, %c0 : index
                %o_in = arith.minsi %o_up, %o_last : index
                %dyv = memref.load %dy[%n, %k, %o_in] : memref<?x?x?xf32>
                %wv = memref.load %w[%k, %c, %j] : memref<?x?x?xf32>
                %p = arith.mulf %dyv, %wv : f32
                %term = arith.select %inside, %p, %zero : f32
                %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
                scf.yield %acc_j_next : f32
              } {tg.loop = #tg.loop<reduce, axis = 0>}
              %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
              scf.yield %acc_next : f32
            } {tg.loop = #tg.loop<reduce, axis = 0>}
            memref.store %sum, %dx[%n, %c, %l] : memref<?x?x?xf32>
          } {tg.loop = #tg.loop<parallel, axis = 2>}
        } {tg.loop = #tg.loop<tile, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @conv1d_dx(%dy: memref<?x?x?xf32> {tg.name = "dy", tg.role = "input"}, %w: memref<?x?x?xf32> {tg.name = "w", tg.role = "input"}, %dx: memref<?x?x?xf32> {tg.name = "dx", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %n_end = memref.dim %dx, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %c_end = memref.dim %dx, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %l_end = memref.dim %dx, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %k_end = memref.dim %dy, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %o_end = memref.dim %dy, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %s_end = memref.dim %w, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %o_last = arith.subi %o_end, %c1 : index
// CHECK-NEXT:     scf.for %n = %c0 to %n_end step %c1 {
// CHECK-NEXT:       %0 = arith.constant 0 : index
// CHECK-NEXT:       %1 = arith.constant 2 : index
// CHECK-NEXT:       %2 = arith.constant 1 : index
// CHECK-NEXT:       scf.for %phase = %0 to %1 step %2 {
// CHECK-NEXT:         %3 = arith.constant 1 : index
// CHECK-NEXT:         %4 = arith.addi %phase, %3 : index
// CHECK-NEXT:         %5 = arith.constant 2 : index
// CHECK-NEXT:         %residue = arith.remsi %4, %5 : index
// CHECK-NEXT:         %6 = arith.constant -1 : index
// CHECK-NEXT:         %7 = arith.muli %residue, %6 : index
// CHECK-NEXT:         %8 = arith.addi %phase, %7 : index
// CHECK-NEXT:         %9 = arith.addi %8, %3 : index
// CHECK-NEXT:         %quotient = arith.divsi %9, %5 : index
// CHECK-NEXT:         %10 = arith.subi %c0, %phase : index
// CHECK-NEXT:         %11 = arith.addi %10, %3 : index
// CHECK-NEXT:         %12 = arith.constant 0 : index
// CHECK-NEXT:         %13 = arith.cmpi slt, %11, %12 : index
// CHECK-NEXT:         %14 = arith.addi %11, %6 : index
// CHECK-NEXT:         %15 = arith.select %13, %14, %11 : index
// CHECK-NEXT:         %16 = arith.divsi %15, %5 : index
// CHECK-NEXT:         %17 = arith.subi %l_end, %phase : index
// CHECK-NEXT:         %18 = arith.addi %17, %3 : index
// CHECK-NEXT:         %19 = arith.cmpi slt, %18, %12 : index
// CHECK-NEXT:         %20 = arith.addi %18, %6 : index
// CHECK-NEXT:         %21 = arith.select %19, %20, %18 : index
// CHECK-NEXT:         %l_end_1 = arith.divsi %21, %5 : index
// CHECK-NEXT:         %22 = arith.subi %s_end, %residue : index
// CHECK-NEXT:         %23 = arith.addi %22, %3 : index
// CHECK-NEXT:         %24 = arith.cmpi slt, %23, %12 : index
// CHECK-NEXT:         %25 = arith.addi %23, %6 : index
// CHECK-NEXT:         %26 = arith.select %24, %25, %23 : index
// CHECK-NEXT:         %27 = arith.divsi %26, %5 : index
// CHECK-NEXT:         scf.for %c = %c0 to %c_end step %c1 {
// CHECK-NEXT:           %tile = arith.constant 4096 : index
// CHECK-NEXT:           scf.for %t = %16 to %l_end_1 step %tile {
// CHECK-NEXT:             %t_next = arith.addi %t, %tile : index
// CHECK-NEXT:             %t_end = arith.minsi %t_next, %l_end_1 : index
// CHECK-NEXT:             scf.for %l = %t to %t_end step %c1 {
// CHECK-NEXT:               %28 = arith.constant 2 : index
// CHECK-NEXT:               %29 = arith.muli %l, %28 : index
// CHECK-NEXT:               %l_1 = arith.addi %29, %phase : index
// CHECK-NEXT:               %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:                 %part = scf.for %j = %c0 to %27 step %c1 iter_args(%acc_j = %zero) -> (f32) {
// CHECK-NEXT:                   %30 = arith.constant 2 : index
// CHECK-NEXT:                   %31 = arith.muli %j, %30 : index
// CHECK-NEXT:                   %j_1 = arith.addi %31, %residue : index
// CHECK-NEXT:                   %l1 = arith.addi %l_1, %c1 : index
// CHECK-NEXT:                   %o = arith.subi %l1, %j_1 : index
// CHECK-NEXT:                   %32 = arith.constant -1 : index
// CHECK-NEXT:                   %33 = arith.muli %j, %32 : index
// CHECK-NEXT:                   %34 = arith.addi %l, %33 : index
// CHECK-NEXT:                   %half = arith.addi %34, %quotient : index
// CHECK-NEXT:                   %above = arith.cmpi sge, %half, %c0 : index
// CHECK-NEXT:                   %rem = arith.constant 0 : index
// CHECK-NEXT:                   %even = arith.constant true
// CHECK-NEXT:                   %kept = arith.andi %above, %even : i1
// CHECK-NEXT:                   %below = arith.cmpi slt, %half, %o_end : index
// CHECK-NEXT:                   %inside = arith.andi %kept, %below : i1
// CHECK-NEXT:                   %o_up = arith.maxsi %half, %c0 : index
// CHECK-NEXT:                   %o_in = arith.minsi %o_up, %o_last : index
// CHECK-NEXT:                   %dyv = memref.load %dy[%n, %k, %o_in] : memref<?x?x?xf32>
// CHECK-NEXT:                   %wv = memref.load %w[%k, %c, %j_1] : memref<?x?x?xf32>
// CHECK-NEXT:                   %p = arith.mulf %dyv, %wv : f32
// CHECK-NEXT:                   %term = arith.select %inside, %p, %zero : f32
// CHECK-NEXT:                   %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
// CHECK-NEXT:                   scf.yield %acc_j_next : f32
// CHECK-NEXT:                 } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:                 %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
// CHECK-NEXT:                 scf.yield %acc_next : f32
// CHECK-NEXT:               } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:               memref.store %sum, %dx[%n, %c, %l_1] : memref<?x?x?xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       }
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
