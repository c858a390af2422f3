// RUN: tilegrad opt %s -p 'jam-row-sweeps{rows=2}' | filecheck %s

// out[b, k, h] = sum_v w[k, v] * col[b, v, h] (a convolution over its packed window, im2col): the
// batch loop's rows share w[k, v], one scalar per term, but each sweeps a panel of its own (col[b]),
// so it is not jammed; the output channels inside it, whose rows sweep the same col[b], are.

builtin.module {
  func.func @w_times_col(%col: memref<?x?x?xf32> {tg.name = "col", tg.role = "input"},
                       %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %acc = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %batch = memref.dim %col, %c0 : memref<?x?x?xf32>
    %rows = memref.dim %w, %c0 : memref<?x?xf32>
    %v_end = memref.dim %w, %c1 : memref<?x?xf32>
    %h_end = memref.dim %col, %c2 : memref<?x?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %b = %c0 to %batch step %c1 {
      scf.for %i = %c0 to %rows step %c1 {
        scf.for %h = %c0 to %h_end step %c1 {
          memref.store %zero, %acc[%h] : memref<512xf32>
        } {tg.loop = #tg.loop<row, axis = 0>}
        scf.for %v = %c0 to %v_end step %c1 {
          scf.for %h = %c0 to %h_end step %c1 {
            %s0 = memref.load %acc[%h] : memref<512xf32>
            %x = memref.load %w[%i, %v] : memref<?x?xf32>
            %y = memref.load %col[%b, %v, %h] : memref<?x?x?xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %s0, %p fastmath<reassoc> : f32
            memref.store %s, %acc[%h] : memref<512xf32>
          } {tg.loop = #tg.loop<row, axis = 0>}
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        scf.for %h = %c0 to %h_end step %c1 {
          %s1 = memref.load %acc[%h] : memref<512xf32>
          memref.store %s1, %out[%b, %i, %h] : memref<?x?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @w_times_col(%col: memref<?x?x?xf32> {tg.name = "col", tg.role = "input"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"}, %out: memref<?x?x?xf32> {tg.name = "out", tg.role = "output"}) {
// CHECK-NEXT:     %acc = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %acc_1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %batch = memref.dim %col, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %rows = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %v_end = memref.dim %w, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %h_end = memref.dim %col, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %b = %c0 to %batch step %c1 {
// CHECK-NEXT:       %0 = arith.constant 2 : index
// CHECK-NEXT:       %1 = arith.subi %rows, %c0 : index
// CHECK-NEXT:       %2 = arith.divui %1, %0 : index
// CHECK-NEXT:       %3 = arith.muli %2, %0 : index
// CHECK-NEXT:       %4 = arith.addi %c0, %3 : index
// CHECK-NEXT:       %5 = arith.constant 1 : index
// CHECK-NEXT:       %6 = arith.subi %rows, %5 : index
// CHECK-NEXT:       scf.for %7 = %c0 to %rows step %0 {
// CHECK-NEXT:         %8 = arith.constant 1 : index
// CHECK-NEXT:         %9 = arith.addi %7, %8 : index
// CHECK-NEXT:         %10 = arith.minsi %9, %6 : index
// CHECK-NEXT:         scf.for %11 = %c0 to %h_end step %c1 {
// CHECK-NEXT:           memref.store %zero, %acc_1[%11] : memref<512xf32>
// CHECK-NEXT:           memref.store %zero, %acc[%11] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         scf.for %12 = %c0 to %v_end step %c1 {
// CHECK-NEXT:           scf.for %13 = %c0 to %h_end step %c1 {
// CHECK-NEXT:             %s0 = memref.load %acc_1[%13] : memref<512xf32>
// CHECK-NEXT:             %s0_1 = memref.load %acc[%13] : memref<512xf32>
// CHECK-NEXT:             %x = memref.load %w[%7, %12] : memref<?x?xf32>
// CHECK-NEXT:             %x_1 = memref.load %w[%10, %12] : memref<?x?xf32>
// CHECK-NEXT:             %y = memref.load %col[%b, %12, %13] : memref<?x?x?xf32>
// CHECK-NEXT:             %y_1 = memref.load %col[%b, %12, %13] : memref<?x?x?xf32>
// CHECK-NEXT:             %p = arith.mulf %x, %y : f32
// CHECK-NEXT:             %p_1 = arith.mulf %x_1, %y_1 : f32
// CHECK-NEXT:             %s = arith.addf %s0, %p fastmath<reassoc> : f32
// CHECK-NEXT:             %s_1 = arith.addf %s0_1, %p_1 fastmath<reassoc> : f32
// CHECK-NEXT:             memref.store %s, %acc_1[%13] : memref<512xf32>
// CHECK-NEXT:             memref.store %s_1, %acc[%13] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         scf.for %14 = %c0 to %h_end step %c1 {
// CHECK-NEXT:           %s1 = memref.load %acc_1[%14] : memref<512xf32>
// CHECK-NEXT:           %s1_1 = memref.load %acc[%14] : memref<512xf32>
// CHECK-NEXT:           memref.store %s1, %out[%b, %7, %14] : memref<?x?x?xf32>
// CHECK-NEXT:           memref.store %s1_1, %out[%b, %10, %14] : memref<?x?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
