// RUN: tilegrad opt %s -p split-window-phases | filecheck %s

// Left as it is: the conv's term is not a product of two reads (dy's read squared: no contraction
// a panel would serve), so its `% 2 == 0` test is not split into phases.

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
                %p = arith.mulf %dyv, %dyv : f32
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
// CHECK-NEXT:       scf.for %c = %c0 to %c_end step %c1 {
// CHECK-NEXT:         %tile = arith.constant 4096 : index
// CHECK-NEXT:         scf.for %t = %c0 to %l_end step %tile {
// CHECK-NEXT:           %t_next = arith.addi %t, %tile : index
// CHECK-NEXT:           %t_end = arith.minsi %t_next, %l_end : index
// CHECK-NEXT:           scf.for %l = %t to %t_end step %c1 {
// CHECK-NEXT:             %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:               %part = scf.for %j = %c0 to %s_end step %c1 iter_args(%acc_j = %zero) -> (f32) {
// CHECK-NEXT:                 %l1 = arith.addi %l, %c1 : index
// CHECK-NEXT:                 %o = arith.subi %l1, %j : index
// CHECK-NEXT:                 %above = arith.cmpi sge, %o, %c0 : index
// CHECK-NEXT:                 %rem = arith.remsi %o, %c2 : index
// CHECK-NEXT:                 %even = arith.cmpi eq, %rem, %c0 : index
// CHECK-NEXT:                 %kept = arith.andi %above, %even : i1
// CHECK-NEXT:                 %half = arith.divsi %o, %c2 : index
// CHECK-NEXT:                 %below = arith.cmpi slt, %half, %o_end : index
// CHECK-NEXT:                 %inside = arith.andi %kept, %below : i1
// CHECK-NEXT:                 %o_up = arith.maxsi %half, %c0 : index
// CHECK-NEXT:                 %o_in = arith.minsi %o_up, %o_last : index
// CHECK-NEXT:                 %dyv = memref.load %dy[%n, %k, %o_in] : memref<?x?x?xf32>
// CHECK-NEXT:                 %wv = memref.load %w[%k, %c, %j] : memref<?x?x?xf32>
// CHECK-NEXT:                 %p = arith.mulf %dyv, %dyv : f32
// CHECK-NEXT:                 %term = arith.select %inside, %p, %zero : f32
// CHECK-NEXT:                 %acc_j_next = arith.addf %acc_j, %term fastmath<reassoc> : f32
// CHECK-NEXT:                 scf.yield %acc_j_next : f32
// CHECK-NEXT:               } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:               %acc_next = arith.addf %acc, %part fastmath<reassoc> : f32
// CHECK-NEXT:               scf.yield %acc_next : f32
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:             memref.store %sum, %dx[%n, %c, %l] : memref<?x?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
