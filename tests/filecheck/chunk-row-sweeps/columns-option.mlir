// RUN: tilegrad opt %s -p 'chunk-row-sweeps{columns=8}' | filecheck %s

// The same sweep in chunks of 8 columns, one vector: one loop per chunk.

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
// CHECK-NEXT:     %0 = arith.constant 8 : index
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
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 0>}
// CHECK-NEXT:     %12 = arith.cmpi slt, %4, %h_end : index
// CHECK-NEXT:     %13 = arith.cmpi slt, %c0, %4 : index
// CHECK-NEXT:     %14 = arith.andi %12, %13 : i1
// CHECK-NEXT:     scf.if %14 {
// CHECK-NEXT:       %15 = arith.constant 8 : index
// CHECK-NEXT:       %16 = arith.subi %h_end, %15 : index
// CHECK-NEXT:       %17 = arith.subi %16, %c0 : index
// CHECK-NEXT:       %18 = arith.subi %h_end, %c0 : index
// CHECK-NEXT:       %19 = arith.constant 1 : index
// CHECK-NEXT:       scf.for %20 = %17 to %18 step %19 {
// CHECK-NEXT:         %21 = memref.load %beta[%20] : memref<512xf32>
// CHECK-NEXT:         memref.store %21, %beta_tail[%20] : memref<512xf32>
// CHECK-NEXT:         %22 = memref.load %gamma[%20] : memref<512xf32>
// CHECK-NEXT:         memref.store %22, %gamma_tail[%20] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       scf.for %23 = %c0 to %rows step %c1 {
// CHECK-NEXT:         %24 = arith.constant 0 : index
// CHECK-NEXT:         %25 = arith.constant 8 : index
// CHECK-NEXT:         %26 = arith.addi %16, %24 : index
// CHECK-NEXT:         %27 = arith.addi %16, %25 : index
// CHECK-NEXT:         scf.for %28 = %26 to %27 step %c1 {
// CHECK-NEXT:           %b_1 = memref.load %beta_tail[%28] : memref<512xf32>
// CHECK-NEXT:           %d_1 = memref.load %dy[%23, %28] : memref<?x?xf32>
// CHECK-NEXT:           %b2_1 = arith.addf %b_1, %d_1 fastmath<contract> : f32
// CHECK-NEXT:           memref.store %b2_1, %beta_tail[%28] : memref<512xf32>
// CHECK-NEXT:           %g_1 = memref.load %gamma_tail[%28] : memref<512xf32>
// CHECK-NEXT:           %v_1 = memref.load %x[%23, %c0] : memref<?x?xf32>
// CHECK-NEXT:           %p_1 = arith.mulf %d_1, %v_1 : f32
// CHECK-NEXT:           %g2_1 = arith.addf %g_1, %p_1 fastmath<contract> : f32
// CHECK-NEXT:           memref.store %g2_1, %gamma_tail[%28] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       %29 = arith.subi %4, %c0 : index
// CHECK-NEXT:       %30 = arith.subi %h_end, %c0 : index
// CHECK-NEXT:       %31 = arith.constant 1 : index
// CHECK-NEXT:       scf.for %32 = %29 to %30 step %31 {
// CHECK-NEXT:         %33 = memref.load %beta_tail[%32] : memref<512xf32>
// CHECK-NEXT:         memref.store %33, %beta[%32] : memref<512xf32>
// CHECK-NEXT:         %34 = memref.load %gamma_tail[%32] : memref<512xf32>
// CHECK-NEXT:         memref.store %34, %gamma[%32] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:     } else {
// CHECK-NEXT:       scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:         scf.for %h = %4 to %h_end step %c1 {
// CHECK-NEXT:           %b_2 = memref.load %beta[%h] : memref<512xf32>
// CHECK-NEXT:           %d_2 = memref.load %dy[%r, %h] : memref<?x?xf32>
// CHECK-NEXT:           %b2_2 = arith.addf %b_2, %d_2 : f32
// CHECK-NEXT:           memref.store %b2_2, %beta[%h] : memref<512xf32>
// CHECK-NEXT:           %g_2 = memref.load %gamma[%h] : memref<512xf32>
// CHECK-NEXT:           %v_2 = memref.load %x[%r, %c0] : memref<?x?xf32>
// CHECK-NEXT:           %p_2 = arith.mulf %d_2, %v_2 : f32
// CHECK-NEXT:           %g2_2 = arith.addf %g_2, %p_2 : f32
// CHECK-NEXT:           memref.store %g2_2, %gamma[%h] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
