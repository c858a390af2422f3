// RUN: tilegrad opt %s -p 'reorder-for-reuse{cache_bytes=4096 directives="Reorder(stage=0, order=(1, 0)); Reorder(stage=1, order=(0, 1))"}' | filecheck %s

// The directives option: two stages of logits, each row i reading all of w through the tile loop over
// w's rows (axis 1) inside the row loop (axis 0). Stage 0's Reorder puts the tile loop outside, sized
// to the cache budget, as the pass decides by itself; stage 1's names the loops in the order they have:
// each row streams all of w (only the tiler's constant moves out of the row loop, as it does for every
// such nest).

builtin.module {
  func.func @logits_stage0(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %k = memref.dim %x, %c1 : memref<?x?xf32>
    %v = memref.dim %w, %c0 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %rows step %c1 {
      %c64 = arith.constant 64 : index
      scf.for %t0 = %c0 to %v step %c64 {
        %end = arith.addi %t0, %c64 : index
        %stop = arith.minsi %end, %v : index
        scf.for %j = %t0 to %stop step %c1 {
          %s = scf.for %r = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
            %a = memref.load %x[%i, %r] : memref<?x?xf32>
            %b = memref.load %w[%j, %r] : memref<?x?xf32>
            %p = arith.mulf %a, %b : f32
            %t = arith.addf %acc, %p : f32
            scf.yield %t : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          memref.store %s, %out[%i, %j] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
  func.func @logits_stage1(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %k = memref.dim %x, %c1 : memref<?x?xf32>
    %v = memref.dim %w, %c0 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %rows step %c1 {
      %c64 = arith.constant 64 : index
      scf.for %t0 = %c0 to %v step %c64 {
        %end = arith.addi %t0, %c64 : index
        %stop = arith.minsi %end, %v : index
        scf.for %j = %t0 to %stop step %c1 {
          %s = scf.for %r = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
            %a = memref.load %x[%i, %r] : memref<?x?xf32>
            %b = memref.load %w[%j, %r] : memref<?x?xf32>
            %p = arith.mulf %a, %b : f32
            %t = arith.addf %acc, %p : f32
            scf.yield %t : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          memref.store %s, %out[%i, %j] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @logits_stage0(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %v = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %c64 = arith.constant 64 : index
// CHECK-NEXT:     %0 = arith.constant 1024 : index
// CHECK-NEXT:     %fit = arith.divui %0, %k : index
// CHECK-NEXT:     %1 = arith.constant 16 : index
// CHECK-NEXT:     %reuse_tile = arith.maxsi %fit, %1 : index
// CHECK-NEXT:     scf.for %t0 = %c0 to %v step %reuse_tile {
// CHECK-NEXT:       scf.for %i = %c0 to %rows step %c1 {
// CHECK-NEXT:         %end = arith.addi %t0, %reuse_tile : index
// CHECK-NEXT:         %stop = arith.minsi %end, %v : index
// CHECK-NEXT:         scf.for %j = %t0 to %stop step %c1 {
// CHECK-NEXT:           %s = scf.for %r = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:             %a = memref.load %x[%i, %r] : memref<?x?xf32>
// CHECK-NEXT:             %b = memref.load %w[%j, %r] : memref<?x?xf32>
// CHECK-NEXT:             %p = arith.mulf %a, %b : f32
// CHECK-NEXT:             %t = arith.addf %acc, %p : f32
// CHECK-NEXT:             scf.yield %t : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           memref.store %s, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @logits_stage1(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %v = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %c64 = arith.constant 64 : index
// CHECK-NEXT:     scf.for %i = %c0 to %rows step %c1 {
// CHECK-NEXT:       scf.for %t0 = %c0 to %v step %c64 {
// CHECK-NEXT:         %end = arith.addi %t0, %c64 : index
// CHECK-NEXT:         %stop = arith.minsi %end, %v : index
// CHECK-NEXT:         scf.for %j = %t0 to %stop step %c1 {
// CHECK-NEXT:           %s = scf.for %r = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:             %a = memref.load %x[%i, %r] : memref<?x?xf32>
// CHECK-NEXT:             %b = memref.load %w[%j, %r] : memref<?x?xf32>
// CHECK-NEXT:             %p = arith.mulf %a, %b : f32
// CHECK-NEXT:             %t = arith.addf %acc, %p : f32
// CHECK-NEXT:             scf.yield %t : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           memref.store %s, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
