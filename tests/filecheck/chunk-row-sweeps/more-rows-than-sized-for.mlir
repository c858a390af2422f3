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
// CHECK-NEXT:     %gamma_tail = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %beta_tail = memref.alloca() : memref<512xf32>
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
// CHECK-NEXT:     %17 = arith.cmpi slt, %4, %h_end : index
// CHECK-NEXT:     %18 = arith.cmpi slt, %c0, %4 : index
// CHECK-NEXT:     %19 = arith.andi %17, %18 : i1
// CHECK-NEXT:     scf.if %19 {
// CHECK-NEXT:       %20 = arith.constant 16 : index
// CHECK-NEXT:       %21 = arith.subi %h_end, %20 : index
// CHECK-NEXT:       %22 = arith.subi %21, %c0 : index
// CHECK-NEXT:       %23 = arith.subi %h_end, %c0 : index
// CHECK-NEXT:       %24 = arith.constant 1 : index
// CHECK-NEXT:       scf.for %25 = %22 to %23 step %24 {
// CHECK-NEXT:         %26 = memref.load %beta[%25] : memref<512xf32>
// CHECK-NEXT:         memref.store %26, %beta_tail[%25] : memref<512xf32>
// CHECK-NEXT:         %27 = memref.load %gamma[%25] : memref<512xf32>
// CHECK-NEXT:         memref.store %27, %gamma_tail[%25] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       scf.for %28 = %c0 to %rows step %c1 {
// CHECK-NEXT:         %29 = arith.constant 0 : index
// CHECK-NEXT:         %30 = arith.constant 8 : index
// CHECK-NEXT:         %31 = arith.addi %21, %29 : index
// CHECK-NEXT:         %32 = arith.addi %21, %30 : index
// CHECK-NEXT:         scf.for %33 = %31 to %32 step %c1 {
// CHECK-NEXT:           %b_2 = memref.load %beta_tail[%33] : memref<512xf32>
// CHECK-NEXT:           %d_2 = memref.load %dy[%28, %33] : memref<?x?xf32>
// CHECK-NEXT:           %b2_2 = arith.addf %b_2, %d_2 fastmath<contract> : f32
// CHECK-NEXT:           memref.store %b2_2, %beta_tail[%33] : memref<512xf32>
// CHECK-NEXT:           %g_2 = memref.load %gamma_tail[%33] : memref<512xf32>
// CHECK-NEXT:           %v_2 = memref.load %x[%28, %c0] : memref<?x?xf32>
// CHECK-NEXT:           %p_2 = arith.mulf %d_2, %v_2 : f32
// CHECK-NEXT:           %g2_2 = arith.addf %g_2, %p_2 fastmath<contract> : f32
// CHECK-NEXT:           memref.store %g2_2, %gamma_tail[%33] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         %34 = arith.constant 8 : index
// CHECK-NEXT:         %35 = arith.constant 16 : index
// CHECK-NEXT:         %36 = arith.addi %21, %34 : index
// CHECK-NEXT:         %37 = arith.addi %21, %35 : index
// CHECK-NEXT:         scf.for %38 = %36 to %37 step %c1 {
// CHECK-NEXT:           %b_3 = memref.load %beta_tail[%38] : memref<512xf32>
// CHECK-NEXT:           %d_3 = memref.load %dy[%28, %38] : memref<?x?xf32>
// CHECK-NEXT:           %b2_3 = arith.addf %b_3, %d_3 fastmath<contract> : f32
// CHECK-NEXT:           memref.store %b2_3, %beta_tail[%38] : memref<512xf32>
// CHECK-NEXT:           %g_3 = memref.load %gamma_tail[%38] : memref<512xf32>
// CHECK-NEXT:           %v_3 = memref.load %x[%28, %c0] : memref<?x?xf32>
// CHECK-NEXT:           %p_3 = arith.mulf %d_3, %v_3 : f32
// CHECK-NEXT:           %g2_3 = arith.addf %g_3, %p_3 fastmath<contract> : f32
// CHECK-NEXT:           memref.store %g2_3, %gamma_tail[%38] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       %39 = arith.subi %4, %c0 : index
// CHECK-NEXT:       %40 = arith.subi %h_end, %c0 : index
// CHECK-NEXT:       %41 = arith.constant 1 : index
// CHECK-NEXT:       scf.for %42 = %39 to %40 step %41 {
// CHECK-NEXT:         %43 = memref.load %beta_tail[%42] : memref<512xf32>
// CHECK-NEXT:         memref.store %43, %beta[%42] : memref<512xf32>
// CHECK-NEXT:         %44 = memref.load %gamma_tail[%42] : memref<512xf32>
// CHECK-NEXT:         memref.store %44, %gamma[%42] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:     } else {
// CHECK-NEXT:       scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:         scf.for %h = %4 to %h_end step %c1 {
// CHECK-NEXT:           %b_4 = memref.load %beta[%h] : memref<512xf32>
// CHECK-NEXT:           %d_4 = memref.load %dy[%r, %h] : memref<?x?xf32>
// CHECK-NEXT:           %b2_4 = arith.addf %b_4, %d_4 : f32
// CHECK-NEXT:           memref.store %b2_4, %beta[%h] : memref<512xf32>
// CHECK-NEXT:           %g_4 = memref.load %gamma[%h] : memref<512xf32>
// CHECK-NEXT:           %v_4 = memref.load %x[%r, %c0] : memref<?x?xf32>
// CHECK-NEXT:           %p_4 = arith.mulf %d_4, %v_4 : f32
// CHECK-NEXT:           %g2_4 = arith.addf %g_4, %p_4 : f32
// CHECK-NEXT:           memref.store %g2_4, %gamma[%h] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
