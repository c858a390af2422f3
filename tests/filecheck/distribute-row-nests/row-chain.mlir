// RUN: tilegrad opt %s -p 'distribute-row-nests{budget=4096 granule=10}' | filecheck %s

// A row's chain t[i, :] = a[i] @ b.T (dot products), s[i] = sum_n t[i, n] c[i, n], out[i, :] = s[i] t[i, :] @ d
// in one row loop: three nests, the last a contraction (a column loop around a sum reading d[n, j], which
// every row shares). Every tensor written (t, s, out) is indexed by the row at one position, so the rows
// touch disjoint elements: the row loop runs by tiles of rows (as many as keep the tile's stored rows,
// 4 N + 4 + 4 P bytes each, within the budget, a multiple of the granule, at least one granule: sized at
// run time), each nest over the tile in a loop of its own, with the index arithmetic it uses (%n_end)
// copied into it and the rest dropped; the sum's store stays with its nest.

builtin.module {
  func.func @chain_stage0(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"},
                          %b: memref<?x?xf32> {tg.name = "b", tg.role = "input"},
                          %c: memref<?x?xf32> {tg.name = "c", tg.role = "input"},
                          %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"},
                          %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"},
                          %t: memref<?x?xf32> {tg.name = "t", tg.role = "temp"},
                          %s: memref<?xf32> {tg.name = "s", tg.role = "temp"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %a, %c0 : memref<?x?xf32>
    %k_end = memref.dim %a, %c1 : memref<?x?xf32>
    %p_end = memref.dim %d, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      %n_end = memref.dim %b, %c0 : memref<?x?xf32>
      scf.for %n = %c0 to %n_end step %c1 {
        %zero = arith.constant 0.000000e+00 : f32
        %dot = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
          %x = memref.load %a[%i, %k] : memref<?x?xf32>
          %y = memref.load %b[%n, %k] : memref<?x?xf32>
          %xy = arith.mulf %x, %y : f32
          %sum = arith.addf %acc, %xy : f32
          scf.yield %sum : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %dot, %t[%i, %n] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
      %zero_1 = arith.constant 0.000000e+00 : f32
      %row_sum = scf.for %n_1 = %c0 to %n_end step %c1 iter_args(%acc_1 = %zero_1) -> (f32) {
        %tv = memref.load %t[%i, %n_1] : memref<?x?xf32>
        %cv = memref.load %c[%i, %n_1] : memref<?x?xf32>
        %tc = arith.mulf %tv, %cv : f32
        %sum_1 = arith.addf %acc_1, %tc : f32
        scf.yield %sum_1 : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %row_sum, %s[%i] : memref<?xf32>
      scf.for %j = %c0 to %p_end step %c1 {
        %zero_2 = arith.constant 0.000000e+00 : f32
        %dot_2 = scf.for %n_2 = %c0 to %n_end step %c1 iter_args(%acc_2 = %zero_2) -> (f32) {
          %tv_2 = memref.load %t[%i, %n_2] : memref<?x?xf32>
          %sv = memref.load %s[%i] : memref<?xf32>
          %dv = memref.load %d[%n_2, %j] : memref<?x?xf32>
          %u = arith.mulf %sv, %tv_2 : f32
          %ud = arith.mulf %u, %dv : f32
          %sum_2 = arith.addf %acc_2, %ud : f32
          scf.yield %sum_2 : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %dot_2, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @chain_stage0(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"}, %b: memref<?x?xf32> {tg.name = "b", tg.role = "input"}, %c: memref<?x?xf32> {tg.name = "c", tg.role = "input"}, %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}, %t: memref<?x?xf32> {tg.name = "t", tg.role = "temp"}, %s: memref<?xf32> {tg.name = "s", tg.role = "temp"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k_end = memref.dim %a, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %p_end = memref.dim %d, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = arith.constant 4 : index
// CHECK-NEXT:     %2 = arith.constant 1 : index
// CHECK-NEXT:     %3 = memref.dim %t, %2 : memref<?x?xf32>
// CHECK-NEXT:     %4 = arith.muli %1, %3 : index
// CHECK-NEXT:     %5 = arith.addi %0, %4 : index
// CHECK-NEXT:     %6 = arith.constant 4 : index
// CHECK-NEXT:     %7 = arith.addi %5, %6 : index
// CHECK-NEXT:     %8 = arith.constant 4 : index
// CHECK-NEXT:     %9 = arith.constant 1 : index
// CHECK-NEXT:     %10 = memref.dim %out, %9 : memref<?x?xf32>
// CHECK-NEXT:     %11 = arith.muli %8, %10 : index
// CHECK-NEXT:     %12 = arith.addi %7, %11 : index
// CHECK-NEXT:     %13 = arith.constant 1 : index
// CHECK-NEXT:     %14 = arith.maxsi %12, %13 : index
// CHECK-NEXT:     %15 = arith.constant 4096 : index
// CHECK-NEXT:     %16 = arith.divui %15, %14 : index
// CHECK-NEXT:     %17 = arith.constant 10 : index
// CHECK-NEXT:     %18 = arith.divui %16, %17 : index
// CHECK-NEXT:     %19 = arith.constant 10 : index
// CHECK-NEXT:     %20 = arith.muli %18, %19 : index
// CHECK-NEXT:     %21 = arith.constant 10 : index
// CHECK-NEXT:     %22 = arith.maxsi %20, %21 : index
// CHECK-NEXT:     scf.for %23 = %c0 to %rows step %22 {
// CHECK-NEXT:       %24 = arith.addi %23, %22 : index
// CHECK-NEXT:       %25 = arith.minsi %24, %rows : index
// CHECK-NEXT:       scf.for %26 = %23 to %25 step %c1 {
// CHECK-NEXT:         %n_end = memref.dim %b, %c0 : memref<?x?xf32>
// CHECK-NEXT:         scf.for %n = %c0 to %n_end step %c1 {
// CHECK-NEXT:           %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:           %dot = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:             %x = memref.load %a[%26, %k] : memref<?x?xf32>
// CHECK-NEXT:             %y = memref.load %b[%n, %k] : memref<?x?xf32>
// CHECK-NEXT:             %xy = arith.mulf %x, %y : f32
// CHECK-NEXT:             %sum = arith.addf %acc, %xy : f32
// CHECK-NEXT:             scf.yield %sum : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           memref.store %dot, %t[%26, %n] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       scf.for %27 = %23 to %25 step %c1 {
// CHECK-NEXT:         %n_end_1 = memref.dim %b, %c0 : memref<?x?xf32>
// CHECK-NEXT:         %zero_1 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %row_sum = scf.for %n_1 = %c0 to %n_end_1 step %c1 iter_args(%acc_1 = %zero_1) -> (f32) {
// CHECK-NEXT:           %tv = memref.load %t[%27, %n_1] : memref<?x?xf32>
// CHECK-NEXT:           %cv = memref.load %c[%27, %n_1] : memref<?x?xf32>
// CHECK-NEXT:           %tc = arith.mulf %tv, %cv : f32
// CHECK-NEXT:           %sum_1 = arith.addf %acc_1, %tc : f32
// CHECK-NEXT:           scf.yield %sum_1 : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %row_sum, %s[%27] : memref<?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       scf.for %28 = %23 to %25 step %c1 {
// CHECK-NEXT:         %n_end_2 = memref.dim %b, %c0 : memref<?x?xf32>
// CHECK-NEXT:         scf.for %j = %c0 to %p_end step %c1 {
// CHECK-NEXT:           %zero_2 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:           %dot_1 = scf.for %n_2 = %c0 to %n_end_2 step %c1 iter_args(%acc_2 = %zero_2) -> (f32) {
// CHECK-NEXT:             %tv_1 = memref.load %t[%28, %n_2] : memref<?x?xf32>
// CHECK-NEXT:             %sv = memref.load %s[%28] : memref<?xf32>
// CHECK-NEXT:             %dv = memref.load %d[%n_2, %j] : memref<?x?xf32>
// CHECK-NEXT:             %u = arith.mulf %sv, %tv_1 : f32
// CHECK-NEXT:             %ud = arith.mulf %u, %dv : f32
// CHECK-NEXT:             %sum_2 = arith.addf %acc_2, %ud : f32
// CHECK-NEXT:             scf.yield %sum_2 : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           memref.store %dot_1, %out[%28, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
