// RUN: tilegrad opt %s -p 'jam-sweep-terms{directives="Unroll(stage=0, factor=3)"}' | filecheck %s

// The directives option: the sweep Unroll names (stage 0, axis 0) adds 3 terms per pass over its stack
// rows, by the directive's factor, not the pass's terms option (8); the original sweep takes the rows left over.
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
        %v = memref.load %x[%r, %h] : memref<?x?xf32>
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
// CHECK-NEXT:     %0 = arith.constant 3 : index
// CHECK-NEXT:     %1 = arith.subi %rows, %c0 : index
// CHECK-NEXT:     %2 = arith.divui %1, %0 : index
// CHECK-NEXT:     %3 = arith.muli %2, %0 : index
// CHECK-NEXT:     %4 = arith.addi %c0, %3 : index
// CHECK-NEXT:     scf.for %5 = %c0 to %4 step %0 {
// CHECK-NEXT:       %6 = arith.constant 1 : index
// CHECK-NEXT:       %7 = arith.addi %5, %6 : index
// CHECK-NEXT:       %8 = arith.constant 2 : index
// CHECK-NEXT:       %9 = arith.addi %5, %8 : index
// CHECK-NEXT:       scf.for %10 = %c0 to %h_end step %c1 {
// CHECK-NEXT:         %b = memref.load %beta[%10] : memref<512xf32>
// CHECK-NEXT:         %d = memref.load %dy[%5, %10] : memref<?x?xf32>
// CHECK-NEXT:         %b2 = arith.addf %b, %d fastmath<contract> : f32
// CHECK-NEXT:         memref.store %b2, %beta[%10] : memref<512xf32>
// CHECK-NEXT:         %g = memref.load %gamma[%10] : memref<512xf32>
// CHECK-NEXT:         %v = memref.load %x[%5, %10] : memref<?x?xf32>
// CHECK-NEXT:         %p = arith.mulf %d, %v : f32
// CHECK-NEXT:         %g2 = arith.addf %g, %p fastmath<contract> : f32
// CHECK-NEXT:         memref.store %g2, %gamma[%10] : memref<512xf32>
// CHECK-NEXT:         %b_1 = memref.load %beta[%10] : memref<512xf32>
// CHECK-NEXT:         %d_1 = memref.load %dy[%7, %10] : memref<?x?xf32>
// CHECK-NEXT:         %b2_1 = arith.addf %b_1, %d_1 fastmath<contract> : f32
// CHECK-NEXT:         memref.store %b2_1, %beta[%10] : memref<512xf32>
// CHECK-NEXT:         %g_1 = memref.load %gamma[%10] : memref<512xf32>
// CHECK-NEXT:         %v_1 = memref.load %x[%7, %10] : memref<?x?xf32>
// CHECK-NEXT:         %p_1 = arith.mulf %d_1, %v_1 : f32
// CHECK-NEXT:         %g2_1 = arith.addf %g_1, %p_1 fastmath<contract> : f32
// CHECK-NEXT:         memref.store %g2_1, %gamma[%10] : memref<512xf32>
// CHECK-NEXT:         %b_2 = memref.load %beta[%10] : memref<512xf32>
// CHECK-NEXT:         %d_2 = memref.load %dy[%9, %10] : memref<?x?xf32>
// CHECK-NEXT:         %b2_2 = arith.addf %b_2, %d_2 fastmath<contract> : f32
// CHECK-NEXT:         memref.store %b2_2, %beta[%10] : memref<512xf32>
// CHECK-NEXT:         %g_2 = memref.load %gamma[%10] : memref<512xf32>
// CHECK-NEXT:         %v_2 = memref.load %x[%9, %10] : memref<?x?xf32>
// CHECK-NEXT:         %p_2 = arith.mulf %d_2, %v_2 : f32
// CHECK-NEXT:         %g2_2 = arith.addf %g_2, %p_2 fastmath<contract> : f32
// CHECK-NEXT:         memref.store %g2_2, %gamma[%10] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     scf.for %r = %4 to %rows step %c1 {
// CHECK-NEXT:       scf.for %h = %c0 to %h_end step %c1 {
// CHECK-NEXT:         %b_3 = memref.load %beta[%h] : memref<512xf32>
// CHECK-NEXT:         %d_3 = memref.load %dy[%r, %h] : memref<?x?xf32>
// CHECK-NEXT:         %b2_3 = arith.addf %b_3, %d_3 : f32
// CHECK-NEXT:         memref.store %b2_3, %beta[%h] : memref<512xf32>
// CHECK-NEXT:         %g_3 = memref.load %gamma[%h] : memref<512xf32>
// CHECK-NEXT:         %v_3 = memref.load %x[%r, %h] : memref<?x?xf32>
// CHECK-NEXT:         %p_3 = arith.mulf %d_3, %v_3 : f32
// CHECK-NEXT:         %g2_3 = arith.addf %g_3, %p_3 : f32
// CHECK-NEXT:         memref.store %g2_3, %gamma[%h] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
