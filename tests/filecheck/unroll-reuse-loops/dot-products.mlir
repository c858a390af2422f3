// RUN: tilegrad opt %s -p 'unroll-reuse-loops{unroll=2 jam_rows=2}' | filecheck %s

// out[i, j] = sum_r x[i, r] * w[j, r]: every j re-reads x's row i, every i re-reads w. j runs 2 at a time
// and i 2 at a time, four copies of the reduction side by side (fuse-sibling-reductions then jams them
// into one sweep); an iteration may run again (it stores only out[i, j] and reads no out), so the copies
// past the end repeat the last j and the last i (clamped with arith.minsi).

builtin.module {
  func.func @logits(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %k = memref.dim %x, %c1 : memref<?x?xf32>
    %v = memref.dim %w, %c0 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %v step %c1 {
        %s = scf.for %r = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
          %a = memref.load %x[%i, %r] : memref<?x?xf32>
          %b = memref.load %w[%j, %r] : memref<?x?xf32>
          %p = arith.mulf %a, %b : f32
          %t = arith.addf %acc, %p : f32
          scf.yield %t : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @logits(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %v = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %0 = arith.constant 2 : index
// CHECK-NEXT:     %1 = arith.subi %rows, %c0 : index
// CHECK-NEXT:     %2 = arith.divui %1, %0 : index
// CHECK-NEXT:     %3 = arith.muli %2, %0 : index
// CHECK-NEXT:     %4 = arith.addi %c0, %3 : index
// CHECK-NEXT:     %5 = arith.constant 1 : index
// CHECK-NEXT:     %6 = arith.subi %rows, %5 : index
// CHECK-NEXT:     scf.for %7 = %c0 to %rows step %0 {
// CHECK-NEXT:       %8 = arith.constant 1 : index
// CHECK-NEXT:       %9 = arith.addi %7, %8 : index
// CHECK-NEXT:       %10 = arith.minsi %9, %6 : index
// CHECK-NEXT:       %11 = arith.constant 2 : index
// CHECK-NEXT:       %12 = arith.subi %v, %c0 : index
// CHECK-NEXT:       %13 = arith.divui %12, %11 : index
// CHECK-NEXT:       %14 = arith.muli %13, %11 : index
// CHECK-NEXT:       %15 = arith.addi %c0, %14 : index
// CHECK-NEXT:       %16 = arith.constant 1 : index
// CHECK-NEXT:       %17 = arith.subi %v, %16 : index
// CHECK-NEXT:       scf.for %18 = %c0 to %v step %11 {
// CHECK-NEXT:         %s = scf.for %r = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %a = memref.load %x[%7, %r] : memref<?x?xf32>
// CHECK-NEXT:           %b = memref.load %w[%18, %r] : memref<?x?xf32>
// CHECK-NEXT:           %p = arith.mulf %a, %b : f32
// CHECK-NEXT:           %t = arith.addf %acc, %p : f32
// CHECK-NEXT:           scf.yield %t : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         %s_1 = scf.for %r_1 = %c0 to %k step %c1 iter_args(%acc_1 = %zero) -> (f32) {
// CHECK-NEXT:           %a_1 = memref.load %x[%10, %r_1] : memref<?x?xf32>
// CHECK-NEXT:           %b_1 = memref.load %w[%18, %r_1] : memref<?x?xf32>
// CHECK-NEXT:           %p_1 = arith.mulf %a_1, %b_1 : f32
// CHECK-NEXT:           %t_1 = arith.addf %acc_1, %p_1 : f32
// CHECK-NEXT:           scf.yield %t_1 : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s, %out[%7, %18] : memref<?x?xf32>
// CHECK-NEXT:         memref.store %s_1, %out[%10, %18] : memref<?x?xf32>
// CHECK-NEXT:         %19 = arith.constant 1 : index
// CHECK-NEXT:         %20 = arith.addi %18, %19 : index
// CHECK-NEXT:         %21 = arith.minsi %20, %17 : index
// CHECK-NEXT:         %s_2 = scf.for %r_2 = %c0 to %k step %c1 iter_args(%acc_2 = %zero) -> (f32) {
// CHECK-NEXT:           %a_2 = memref.load %x[%7, %r_2] : memref<?x?xf32>
// CHECK-NEXT:           %b_2 = memref.load %w[%21, %r_2] : memref<?x?xf32>
// CHECK-NEXT:           %p_2 = arith.mulf %a_2, %b_2 : f32
// CHECK-NEXT:           %t_2 = arith.addf %acc_2, %p_2 : f32
// CHECK-NEXT:           scf.yield %t_2 : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         %s_3 = scf.for %r_3 = %c0 to %k step %c1 iter_args(%acc_3 = %zero) -> (f32) {
// CHECK-NEXT:           %a_3 = memref.load %x[%10, %r_3] : memref<?x?xf32>
// CHECK-NEXT:           %b_3 = memref.load %w[%21, %r_3] : memref<?x?xf32>
// CHECK-NEXT:           %p_3 = arith.mulf %a_3, %b_3 : f32
// CHECK-NEXT:           %t_3 = arith.addf %acc_3, %p_3 : f32
// CHECK-NEXT:           scf.yield %t_3 : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %s_2, %out[%7, %21] : memref<?x?xf32>
// CHECK-NEXT:         memref.store %s_3, %out[%10, %21] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
