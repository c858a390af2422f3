// RUN: tilegrad opt %s -p 'chunk-row-sweeps{columns=32 rows=1}' | filecheck %s

// The chunk of 32 columns is sized for one stack row (rows=1); this sweep accumulates two (two sums
// over the same terms, as attention's dk and dv jammed in one sweep), so it takes 16 columns: the
// accumulators of a chunk stay 32 in all (the registers the chunk was sized for), in two loops of 8.

builtin.module {
  func.func @two_sums(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                      %dy: memref<?x?xf32> {tg.name = "dy", tg.role = "input"}) {
    %beta = memref.alloca() : memref<512xf32>
    %gamma = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %h_end = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %h = %c0 to %h_end step %c1 {
        %b = memref.load %beta[%h] : memref<512xf32>
        %d = memref.load %dy[%r, %h] : memref<?x?xf32>
        %b2 = arith.addf %b, %d : f32
        memref.store %b2, %beta[%h] : memref<512xf32>
        %g = memref.load %gamma[%h] : memref<512xf32>
        %v = memref.load %x[%r, %c0] : memref<?x?xf32>
        %p = arith.mulf %d, %v : f32
        %g2 = arith.addf %g, %p : f32
        memref.store %g2, %gamma[%h] : memref<512xf32>
      } {tg.loop = #tg.loop<row, axis = 0>}
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @two_sums(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %dy: memref<?x?xf32> {tg.name = "dy", tg.role = "input"}) {
// CHECK-NEXT:     %beta = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %gamma = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %h_end = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %0 = arith.constant 16 : index
// CHECK-NEXT:     %1 = arith.subi %h_end, %c0 : index
// CHECK-NEXT:     %2 = arith.divui %1, %0 : index
// CHECK-NEXT:     %3 = arith.muli %2, %0 : index
// CHECK-NEXT:     %4 = arith.addi %c0, %3 : index
// CHECK-NEXT:     scf.for %5 = %c0 to %4 step %0 {
// CHECK-NEXT:       scf.for %6 = %c0 to %rows step %c1 {
// CHECK-NEXT:         %7 = arith.constant 0 : index
// CHECK-NEXT:         %8 = arith.constant 8 : index
// CHECK-NEXT:         %9 = arith.addi %5, %7 : index
// CHECK-NEXT:         %10 = arith.addi %5, %8 : index
// CHECK-NEXT:         scf.for %11 = %9 to %10 step %c1 {
// CHECK-NEXT:           %b = memref.load %beta[%11] : memref<512xf32>
// CHECK-NEXT:           %d = memref.load %dy[%6, %11] : memref<?x?xf32>
// CHECK-NEXT:           %b2 = arith.addf %b, %d fastmath<contract> : f32
// CHECK-NEXT:           memref.store %b2, %beta[%11] : memref<512xf32>
// CHECK-NEXT:           %g = memref.load %gamma[%11] : memref<512xf32>
// CHECK-NEXT:           %v = memref.load %x[%6, %c0] : memref<?x?xf32>
// CHECK-NEXT:           %p = arith.mulf %d, %v : f32
// CHECK-NEXT:           %g2 = arith.addf %g, %p fastmath<contract> : f32
// CHECK-NEXT:           memref.store %g2, %gamma[%11] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         %12 = arith.constant 8 : index
// CHECK-NEXT:         %13 = arith.constant 16 : index
// CHECK-NEXT:         %14 = arith.addi %5, %12 : index
// CHECK-NEXT:         %15 = arith.addi %5, %13 : index
// CHECK-NEXT:         scf.for %16 = %14 to %15 step %c1 {
// CHECK-NEXT:           %b_1 = memref.load %beta[%16] : memref<512xf32>
// CHECK-NEXT:           %d_1 = memref.load %dy[%6, %16] : memref<?x?xf32>
// CHECK-NEXT:           %b2_1 = arith.addf %b_1, %d_1 fastmath<contract> : f32
// CHECK-NEXT:           memref.store %b2_1, %beta[%16] : memref<512xf32>
// CHECK-NEXT:           %g_1 = memref.load %gamma[%16] : memref<512xf32>
// CHECK-NEXT:           %v_1 = memref.load %x[%6, %c0] : memref<?x?xf32>
// CHECK-NEXT:           %p_1 = arith.mulf %d_1, %v_1 : f32
// CHECK-NEXT:           %g2_1 = arith.addf %g_1, %p_1 fastmath<contract> : f32
// CHECK-NEXT:           memref.store %g2_1, %gamma[%16] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 0>}
// CHECK-NEXT:     scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:       scf.for %h = %4 to %h_end step %c1 {
// CHECK-NEXT:         %b_2 = memref.load %beta[%h] : memref<512xf32>
// CHECK-NEXT:         %d_2 = memref.load %dy[%r, %h] : memref<?x?xf32>
// CHECK-NEXT:         %b2_2 = arith.addf %b_2, %d_2 : f32
// CHECK-NEXT:         memref.store %b2_2, %beta[%h] : memref<512xf32>
// CHECK-NEXT:         %g_2 = memref.load %gamma[%h] : memref<512xf32>
// CHECK-NEXT:         %v_2 = memref.load %x[%r, %c0] : memref<?x?xf32>
// CHECK-NEXT:         %p_2 = arith.mulf %d_2, %v_2 : f32
// CHECK-NEXT:         %g2_2 = arith.addf %g_2, %p_2 : f32
// CHECK-NEXT:         memref.store %g2_2, %gamma[%h] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
