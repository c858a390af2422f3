// RUN: tilegrad opt %s -p 'defer-sum-epilogues{directives="Distribute(stage=0); Distribute(stage=1, distributed=False)"}' | filecheck %s

// The directives option: two stages of exp-after-the-tile.mlir's dot products under exp. Stage 0's
// row loop, named by Distribute(stage=0) (axis 0), stores the sums and applies exp in a loop of its
// own after it, as the pass does by itself; stage 1's, turned off (distributed=False), is left as it
// is: exp with each sum.

builtin.module {
  func.func @dots_stage0(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                         %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                         %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %k_end = memref.dim %x, %c1 : memref<?x?xf32>
    %j_end = memref.dim %w, %c0 : memref<?x?xf32>
    %tile = arith.constant 64 : index
    scf.for %t = %c0 to %j_end step %tile {
      scf.for %i = %c0 to %rows step %c1 {
        %t_next = arith.addi %t, %tile : index
        %t_end = arith.minsi %t_next, %j_end : index
        scf.for %j = %t to %t_end step %c1 {
          %zero = arith.constant 0.000000e+00 : f32
          %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
            %a = memref.load %x[%i, %k] : memref<?x?xf32>
            %b = memref.load %w[%j, %k] : memref<?x?xf32>
            %p = arith.mulf %a, %b : f32
            %s = arith.addf %acc, %p : f32
            scf.yield %s : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          %e = math.exp %sum : f32
          memref.store %e, %out[%i, %j] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<parallel, axis = 0>}
    } {tg.loop = #tg.loop<tile, axis = 1>}
    func.return
  }
  func.func @dots_stage1(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                         %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                         %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %k_end = memref.dim %x, %c1 : memref<?x?xf32>
    %j_end = memref.dim %w, %c0 : memref<?x?xf32>
    %tile = arith.constant 64 : index
    scf.for %t = %c0 to %j_end step %tile {
      scf.for %i = %c0 to %rows step %c1 {
        %t_next = arith.addi %t, %tile : index
        %t_end = arith.minsi %t_next, %j_end : index
        scf.for %j = %t to %t_end step %c1 {
          %zero = arith.constant 0.000000e+00 : f32
          %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
            %a = memref.load %x[%i, %k] : memref<?x?xf32>
            %b = memref.load %w[%j, %k] : memref<?x?xf32>
            %p = arith.mulf %a, %b : f32
            %s = arith.addf %acc, %p : f32
            scf.yield %s : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          %e = math.exp %sum : f32
          memref.store %e, %out[%i, %j] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<parallel, axis = 0>}
    } {tg.loop = #tg.loop<tile, axis = 1>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @dots_stage0(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k_end = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %j_end = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %tile = arith.constant 64 : index
// CHECK-NEXT:     scf.for %t = %c0 to %j_end step %tile {
// CHECK-NEXT:       scf.for %i = %c0 to %rows step %c1 {
// CHECK-NEXT:         %t_next = arith.addi %t, %tile : index
// CHECK-NEXT:         %t_end = arith.minsi %t_next, %j_end : index
// CHECK-NEXT:         scf.for %j = %t to %t_end step %c1 {
// CHECK-NEXT:           %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:           %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:             %a = memref.load %x[%i, %k] : memref<?x?xf32>
// CHECK-NEXT:             %b = memref.load %w[%j, %k] : memref<?x?xf32>
// CHECK-NEXT:             %p = arith.mulf %a, %b : f32
// CHECK-NEXT:             %s = arith.addf %acc, %p : f32
// CHECK-NEXT:             scf.yield %s : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           memref.store %sum, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       scf.for %0 = %c0 to %rows step %c1 {
// CHECK-NEXT:         %t_next_1 = arith.addi %t, %tile : index
// CHECK-NEXT:         %t_end_1 = arith.minsi %t_next_1, %j_end : index
// CHECK-NEXT:         scf.for %1 = %t to %t_end_1 step %c1 {
// CHECK-NEXT:           %2 = memref.load %out[%0, %1] : memref<?x?xf32>
// CHECK-NEXT:           %e = math.exp %2 : f32
// CHECK-NEXT:           memref.store %e, %out[%0, %1] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @dots_stage1(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k_end = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %j_end = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %tile = arith.constant 64 : index
// CHECK-NEXT:     scf.for %t = %c0 to %j_end step %tile {
// CHECK-NEXT:       scf.for %i = %c0 to %rows step %c1 {
// CHECK-NEXT:         %t_next = arith.addi %t, %tile : index
// CHECK-NEXT:         %t_end = arith.minsi %t_next, %j_end : index
// CHECK-NEXT:         scf.for %j = %t to %t_end step %c1 {
// CHECK-NEXT:           %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:           %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:             %a = memref.load %x[%i, %k] : memref<?x?xf32>
// CHECK-NEXT:             %b = memref.load %w[%j, %k] : memref<?x?xf32>
// CHECK-NEXT:             %p = arith.mulf %a, %b : f32
// CHECK-NEXT:             %s = arith.addf %acc, %p : f32
// CHECK-NEXT:             scf.yield %s : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           %e = math.exp %sum : f32
// CHECK-NEXT:           memref.store %e, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
