// RUN: tilegrad opt %s -p 'defer-sum-epilogues' | filecheck %s

// An epilogue without a math function (a square): a second pass over the tile costs more than it saves,
// so the IR comes out as it went in.

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
          %e = arith.mulf %shifted, %shifted : f32
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
// CHECK-NEXT:           %row_max = memref.load %m[%i] : memref<?xf32>
// CHECK-NEXT:           %shifted = arith.subf %sum, %row_max : f32
// CHECK-NEXT:           %e = arith.mulf %shifted, %shifted : f32
// CHECK-NEXT:           memref.store %e, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
