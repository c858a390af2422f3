// RUN: tilegrad opt %s -p 'interchange-column-reductions' | filecheck %s

// A window's sum, with no directive: a depthwise convolution's grad_input over its taps alone,
// dx[h, w] = Σ_i Σ_j dy[h + 1 - i, w + 1 - j] k[i, j] where 0 <= h + 1 - i < H and 0 <= w + 1 - j < W
// (the reads clamped). Every level's variable is in a range test, so the pass interchanges it by
// itself: the loops i, j run around a row loop over the tile, each term added to the stack row; then
// dx reads the row. A nest with a level no test reads (window-nest.mlir's channels) stays as it is.

builtin.module {
  func.func @window(%dy: memref<?x?xf32>, %k: memref<?x?xf32>, %dx: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %hh = memref.dim %dy, %c0 : memref<?x?xf32>
    %ww = memref.dim %dy, %c1 : memref<?x?xf32>
    %r = memref.dim %k, %c0 : memref<?x?xf32>
    %s = memref.dim %k, %c1 : memref<?x?xf32>
    %oh = memref.dim %dx, %c0 : memref<?x?xf32>
    %ow = memref.dim %dx, %c1 : memref<?x?xf32>
    %toph = arith.subi %hh, %c1 : index
    %topw = arith.subi %ww, %c1 : index
    scf.for %h = %c0 to %oh step %c1 {
      scf.for %w = %c0 to %ow step %c1 {
        %sum = scf.for %i = %c0 to %r step %c1 iter_args(%acc = %zero) -> (f32) {
          %part = scf.for %j = %c0 to %s step %c1 iter_args(%acc2 = %zero) -> (f32) {
            %bh = arith.addi %h, %c1 : index
            %y = arith.subi %bh, %i : index
            %bw = arith.addi %w, %c1 : index
            %x = arith.subi %bw, %j : index
            %t0 = arith.cmpi sge, %y, %c0 : index
            %t1 = arith.cmpi slt, %y, %hh : index
            %t2 = arith.cmpi sge, %x, %c0 : index
            %t3 = arith.cmpi slt, %x, %ww : index
            %a0 = arith.andi %t0, %t1 : i1
            %a1 = arith.andi %t2, %t3 : i1
            %in = arith.andi %a0, %a1 : i1
            %ly = arith.maxsi %y, %c0 : index
            %sy = arith.minsi %ly, %toph : index
            %lx = arith.maxsi %x, %c0 : index
            %sx = arith.minsi %lx, %topw : index
            %v = memref.load %dy[%sy, %sx] : memref<?x?xf32>
            %kij = memref.load %k[%i, %j] : memref<?x?xf32>
            %p = arith.mulf %v, %kij : f32
            %term = arith.select %in, %p, %zero : f32
            %next = arith.addf %acc2, %term fastmath<reassoc> : f32
            scf.yield %next : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          %total = arith.addf %acc, %part fastmath<reassoc> : f32
          scf.yield %total : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %sum, %dx[%h, %w] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @window(%dy: memref<?x?xf32>, %k: memref<?x?xf32>, %dx: memref<?x?xf32>) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %hh = memref.dim %dy, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %ww = memref.dim %dy, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %r = memref.dim %k, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %s = memref.dim %k, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %oh = memref.dim %dx, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %ow = memref.dim %dx, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %toph = arith.subi %hh, %c1 : index
// CHECK-NEXT:     %topw = arith.subi %ww, %c1 : index
// CHECK-NEXT:     scf.for %h = %c0 to %oh step %c1 {
// CHECK-NEXT:       %1 = arith.constant 512 : index
// CHECK-NEXT:       scf.for %2 = %c0 to %ow step %1 {
// CHECK-NEXT:         %3 = arith.addi %2, %1 : index
// CHECK-NEXT:         %4 = arith.minsi %3, %ow : index
// CHECK-NEXT:         %5 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %6 = %2 to %4 step %5 {
// CHECK-NEXT:           %7 = arith.subi %6, %2 : index
// CHECK-NEXT:           memref.store %zero, %0[%7] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         scf.for %8 = %c0 to %r step %c1 {
// CHECK-NEXT:           scf.for %9 = %c0 to %s step %c1 {
// CHECK-NEXT:             scf.for %10 = %2 to %4 step %5 {
// CHECK-NEXT:               %11 = arith.subi %10, %2 : index
// CHECK-NEXT:               %12 = memref.load %0[%11] : memref<512xf32>
// CHECK-NEXT:               %bh = arith.addi %h, %c1 : index
// CHECK-NEXT:               %y = arith.subi %bh, %8 : index
// CHECK-NEXT:               %bw = arith.addi %10, %c1 : index
// CHECK-NEXT:               %x = arith.subi %bw, %9 : index
// CHECK-NEXT:               %t0 = arith.cmpi sge, %y, %c0 : index
// CHECK-NEXT:               %t1 = arith.cmpi slt, %y, %hh : index
// CHECK-NEXT:               %t2 = arith.cmpi sge, %x, %c0 : index
// CHECK-NEXT:               %t3 = arith.cmpi slt, %x, %ww : index
// CHECK-NEXT:               %a0 = arith.andi %t0, %t1 : i1
// CHECK-NEXT:               %a1 = arith.andi %t2, %t3 : i1
// CHECK-NEXT:               %in = arith.andi %a0, %a1 : i1
// CHECK-NEXT:               %ly = arith.maxsi %y, %c0 : index
// CHECK-NEXT:               %sy = arith.minsi %ly, %toph : index
// CHECK-NEXT:               %lx = arith.maxsi %x, %c0 : index
// CHECK-NEXT:               %sx = arith.minsi %lx, %topw : index
// CHECK-NEXT:               %v = memref.load %dy[%sy, %sx] : memref<?x?xf32>
// CHECK-NEXT:               %kij = memref.load %k[%8, %9] : memref<?x?xf32>
// CHECK-NEXT:               %p = arith.mulf %v, %kij : f32
// CHECK-NEXT:               %term = arith.select %in, %p, %zero : f32
// CHECK-NEXT:               %next = arith.addf %12, %term fastmath<reassoc> : f32
// CHECK-NEXT:               memref.store %next, %0[%11] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         scf.for %w = %2 to %4 step %c1 {
// CHECK-NEXT:           %13 = arith.subi %w, %2 : index
// CHECK-NEXT:           %sum = memref.load %0[%13] : memref<512xf32>
// CHECK-NEXT:           memref.store %sum, %dx[%h, %w] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
