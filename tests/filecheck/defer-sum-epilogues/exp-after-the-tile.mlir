// RUN: tilegrad opt %s -p 'defer-sum-epilogues' | filecheck %s

// Each dot product's epilogue applies exp to the sum: the sums of a whole tile are stored first, and the
// exp runs after them over the tile in a loop of its own (which vectorizes); nothing is computed twice.

builtin.module {
  func.func @dots(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                  %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                  %m: memref<?xf32> {tg.name = "m", tg.role = "input"},
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
          %row_max = memref.load %m[%i] : memref<?xf32>
          %shifted = arith.subf %sum, %row_max : f32
          %e = math.exp %shifted : f32
          memref.store %e, %out[%i, %j] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<parallel, axis = 0>}
    } {tg.loop = #tg.loop<tile, axis = 1>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @dots(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"}, %m: memref<?xf32> {tg.name = "m", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
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
// CHECK-NEXT:           %row_max = memref.load %m[%0] : memref<?xf32>
// CHECK-NEXT:           %shifted = arith.subf %2, %row_max : f32
// CHECK-NEXT:           %e = math.exp %shifted : f32
// CHECK-NEXT:           memref.store %e, %out[%0, %1] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
