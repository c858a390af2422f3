// RUN: tilegrad opt %s -p 'distribute-row-nests{directives="Distribute(stage=0, factor=20); Distribute(stage=1, distributed=False)"}' | filecheck %s

// The directives option: two stages of a row's two nests (t[i, :] = a[i] @ b.T, then out[i, :] = t[i] @ d).
// Stage 0's row loop, named with factor=20, runs by tiles of 20 rows (a constant: no size computed);
// stage 1's, turned off (distributed=False), is left as it is.

builtin.module {
  func.func @chain_stage0(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"},
                          %b: memref<?x?xf32> {tg.name = "b", tg.role = "input"},
                          %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"},
                          %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"},
                          %t: memref<?x?xf32> {tg.name = "t", tg.role = "temp"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %a, %c0 : memref<?x?xf32>
    %k_end = memref.dim %a, %c1 : memref<?x?xf32>
    %n_end = memref.dim %b, %c0 : memref<?x?xf32>
    %p_end = memref.dim %d, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
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
      scf.for %j = %c0 to %p_end step %c1 {
        %zero_2 = arith.constant 0.000000e+00 : f32
        %dot_2 = scf.for %n_2 = %c0 to %n_end step %c1 iter_args(%acc_2 = %zero_2) -> (f32) {
          %tv = memref.load %t[%i, %n_2] : memref<?x?xf32>
          %dv = memref.load %d[%n_2, %j] : memref<?x?xf32>
          %td = arith.mulf %tv, %dv : f32
          %sum_2 = arith.addf %acc_2, %td : f32
          scf.yield %sum_2 : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %dot_2, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
  func.func @chain_stage1(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"},
                          %b: memref<?x?xf32> {tg.name = "b", tg.role = "input"},
                          %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"},
                          %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"},
                          %t: memref<?x?xf32> {tg.name = "t", tg.role = "temp"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %a, %c0 : memref<?x?xf32>
    %k_end = memref.dim %a, %c1 : memref<?x?xf32>
    %n_end = memref.dim %b, %c0 : memref<?x?xf32>
    %p_end = memref.dim %d, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
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
      scf.for %j = %c0 to %p_end step %c1 {
        %zero_2 = arith.constant 0.000000e+00 : f32
        %dot_2 = scf.for %n_2 = %c0 to %n_end step %c1 iter_args(%acc_2 = %zero_2) -> (f32) {
          %tv = memref.load %t[%i, %n_2] : memref<?x?xf32>
          %dv = memref.load %d[%n_2, %j] : memref<?x?xf32>
          %td = arith.mulf %tv, %dv : f32
          %sum_2 = arith.addf %acc_2, %td : f32
          scf.yield %sum_2 : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %dot_2, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @chain_stage0(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"}, %b: memref<?x?xf32> {tg.name = "b", tg.role = "input"}, %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}, %t: memref<?x?xf32> {tg.name = "t", tg.role = "temp"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k_end = memref.dim %a, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %n_end = memref.dim %b, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %p_end = memref.dim %d, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %0 = arith.constant 20 : index
// CHECK-NEXT:     scf.for %1 = %c0 to %rows step %0 {
// CHECK-NEXT:       %2 = arith.addi %1, %0 : index
// CHECK-NEXT:       %3 = arith.minsi %2, %rows : index
// CHECK-NEXT:       scf.for %4 = %1 to %3 step %c1 {
// CHECK-NEXT:         scf.for %n = %c0 to %n_end step %c1 {
// CHECK-NEXT:           %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:           %dot = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:             %x = memref.load %a[%4, %k] : memref<?x?xf32>
// CHECK-NEXT:             %y = memref.load %b[%n, %k] : memref<?x?xf32>
// CHECK-NEXT:             %xy = arith.mulf %x, %y : f32
// CHECK-NEXT:             %sum = arith.addf %acc, %xy : f32
// CHECK-NEXT:             scf.yield %sum : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           memref.store %dot, %t[%4, %n] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       scf.for %5 = %1 to %3 step %c1 {
// CHECK-NEXT:         scf.for %j = %c0 to %p_end step %c1 {
// CHECK-NEXT:           %zero_1 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:           %dot_1 = scf.for %n_1 = %c0 to %n_end step %c1 iter_args(%acc_1 = %zero_1) -> (f32) {
// CHECK-NEXT:             %tv = memref.load %t[%5, %n_1] : memref<?x?xf32>
// CHECK-NEXT:             %dv = memref.load %d[%n_1, %j] : memref<?x?xf32>
// CHECK-NEXT:             %td = arith.mulf %tv, %dv : f32
// CHECK-NEXT:             %sum_1 = arith.addf %acc_1, %td : f32
// CHECK-NEXT:             scf.yield %sum_1 : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           memref.store %dot_1, %out[%5, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @chain_stage1(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"}, %b: memref<?x?xf32> {tg.name = "b", tg.role = "input"}, %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}, %t: memref<?x?xf32> {tg.name = "t", tg.role = "temp"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k_end = memref.dim %a, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %n_end = memref.dim %b, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %p_end = memref.dim %d, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %i = %c0 to %rows step %c1 {
// CHECK-NEXT:       scf.for %n = %c0 to %n_end step %c1 {
// CHECK-NEXT:         %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %dot = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %x = memref.load %a[%i, %k] : memref<?x?xf32>
// CHECK-NEXT:           %y = memref.load %b[%n, %k] : memref<?x?xf32>
// CHECK-NEXT:           %xy = arith.mulf %x, %y : f32
// CHECK-NEXT:           %sum = arith.addf %acc, %xy : f32
// CHECK-NEXT:           scf.yield %sum : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %dot, %t[%i, %n] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       scf.for %j = %c0 to %p_end step %c1 {
// CHECK-NEXT:         %zero_1 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %dot_1 = scf.for %n_1 = %c0 to %n_end step %c1 iter_args(%acc_1 = %zero_1) -> (f32) {
// CHECK-NEXT:           %tv = memref.load %t[%i, %n_1] : memref<?x?xf32>
// CHECK-NEXT:           %dv = memref.load %d[%n_1, %j] : memref<?x?xf32>
// CHECK-NEXT:           %td = arith.mulf %tv, %dv : f32
// CHECK-NEXT:           %sum_1 = arith.addf %acc_1, %td : f32
// CHECK-NEXT:           scf.yield %sum_1 : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %dot_1, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
