// RUN: tilegrad opt %s -p 'partition-clamped-loops' | filecheck %s

// A sum over positions whose reads branch-guarded-reads moved into a branch on the range test: a
// depthwise convolution's grad_weight, dw[j] = Σ_o dy[o] x[o - 1 + j], the term read only where
// 0 <= o - 1 + j < D (no clamp left). The sum's loop runs in three parts, and the middle one,
// o in [1 - j, D + 1 - j) clipped to [0, N), has the test true. The loop of a map beside it (y[o] =
// x[o - 1] where 0 <= o - 1 < D, the same kind of branch) stays whole, as does a sum of three
// constant terms (a window's fixed taps, which LLVM unrolls).

builtin.module {
  func.func @branched(%dy: memref<?xf32>, %x: memref<?xf32>, %dw: memref<?xf32>, %y: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %zero = arith.constant 0.000000e+00 : f32
    %n = memref.dim %dy, %c0 : memref<?xf32>
    %d = memref.dim %x, %c0 : memref<?xf32>
    %s = memref.dim %dw, %c0 : memref<?xf32>
    scf.for %j = %c0 to %s step %c1 {
      %sum = scf.for %o = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
        %base = arith.subi %o, %c1 : index
        %at = arith.addi %base, %j : index
        %lo = arith.cmpi sge, %at, %c0 : index
        %hi = arith.cmpi slt, %at, %d : index
        %in = arith.andi %lo, %hi : i1
        %t = scf.if %in -> (f32) {
          %g = memref.load %dy[%o] : memref<?xf32>
          %v = memref.load %x[%at] : memref<?xf32>
          %p = arith.mulf %g, %v : f32
          scf.yield %p : f32
        } else {
          scf.yield %zero : f32
        }
        %next = arith.addf %acc, %t fastmath<reassoc> : f32
        scf.yield %next : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %sum, %dw[%j] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    scf.for %q = %c0 to %n step %c1 {
      %base = arith.subi %q, %c1 : index
      %lo = arith.cmpi sge, %base, %c0 : index
      %hi = arith.cmpi slt, %base, %d : index
      %in = arith.andi %lo, %hi : i1
      %t = scf.if %in -> (f32) {
        %v = memref.load %x[%base] : memref<?xf32>
        scf.yield %v : f32
      } else {
        scf.yield %zero : f32
      }
      memref.store %t, %y[%q] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    scf.for %k = %c0 to %n step %c1 {
      %sum = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (f32) {
        %base = arith.subi %k, %c1 : index
        %at = arith.addi %base, %i : index
        %lo = arith.cmpi sge, %at, %c0 : index
        %hi = arith.cmpi slt, %at, %d : index
        %in = arith.andi %lo, %hi : i1
        %t = scf.if %in -> (f32) {
          %v = memref.load %x[%at] : memref<?xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        %next = arith.addf %acc, %t fastmath<reassoc> : f32
        scf.yield %next : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %sum, %y[%k] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 2 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @branched(%dy: memref<?xf32>, %x: memref<?xf32>, %dw: memref<?xf32>, %y: memref<?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %n = memref.dim %dy, %c0 : memref<?xf32>
// CHECK-NEXT:     %d = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     %s = memref.dim %dw, %c0 : memref<?xf32>
// CHECK-NEXT:     scf.for %j = %c0 to %s step %c1 {
// CHECK-NEXT:       %0 = arith.constant 0 : index
// CHECK-NEXT:       %1 = arith.constant -1 : index
// CHECK-NEXT:       %2 = arith.addi %1, %j : index
// CHECK-NEXT:       %3 = arith.subi %c0, %2 : index
// CHECK-NEXT:       %4 = arith.maxsi %c0, %3 : index
// CHECK-NEXT:       %5 = arith.addi %d, %1 : index
// CHECK-NEXT:       %6 = arith.subi %5, %2 : index
// CHECK-NEXT:       %7 = arith.constant 1 : index
// CHECK-NEXT:       %8 = arith.addi %6, %7 : index
// CHECK-NEXT:       %9 = arith.minsi %n, %8 : index
// CHECK-NEXT:       %10 = arith.minsi %4, %n : index
// CHECK-NEXT:       %11 = arith.minsi %9, %n : index
// CHECK-NEXT:       %12 = arith.maxsi %10, %11 : index
// CHECK-NEXT:       %sum = scf.for %o = %c0 to %10 step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:         %base = arith.subi %o, %c1 : index
// CHECK-NEXT:         %at = arith.addi %base, %j : index
// CHECK-NEXT:         %lo = arith.cmpi sge, %at, %c0 : index
// CHECK-NEXT:         %hi = arith.cmpi slt, %at, %d : index
// CHECK-NEXT:         %in = arith.andi %lo, %hi : i1
// CHECK-NEXT:         %t = scf.if %in -> (f32) {
// CHECK-NEXT:           %g = memref.load %dy[%o] : memref<?xf32>
// CHECK-NEXT:           %v = memref.load %x[%at] : memref<?xf32>
// CHECK-NEXT:           %p = arith.mulf %g, %v : f32
// CHECK-NEXT:           scf.yield %p : f32
// CHECK-NEXT:         } else {
// CHECK-NEXT:           scf.yield %zero : f32
// CHECK-NEXT:         }
// CHECK-NEXT:         %next = arith.addf %acc, %t fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %next : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       %sum_1 = scf.for %o_1 = %10 to %12 step %c1 iter_args(%acc_1 = %sum) -> (f32) {
// CHECK-NEXT:         %lo_1 = arith.constant true
// CHECK-NEXT:         %base_1 = arith.subi %o_1, %c1 : index
// CHECK-NEXT:         %at_1 = arith.addi %base_1, %j : index
// CHECK-NEXT:         %in_1 = arith.andi %lo_1, %lo_1 : i1
// CHECK-NEXT:         %t_1 = scf.if %in_1 -> (f32) {
// CHECK-NEXT:           %g_1 = memref.load %dy[%o_1] : memref<?xf32>
// CHECK-NEXT:           %v_1 = memref.load %x[%at_1] : memref<?xf32>
// CHECK-NEXT:           %p_1 = arith.mulf %g_1, %v_1 : f32
// CHECK-NEXT:           scf.yield %p_1 : f32
// CHECK-NEXT:         } else {
// CHECK-NEXT:           scf.yield %zero : f32
// CHECK-NEXT:         }
// CHECK-NEXT:         %next_1 = arith.addf %acc_1, %t_1 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %next_1 : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       %sum_2 = scf.for %o_2 = %12 to %n step %c1 iter_args(%acc_2 = %sum_1) -> (f32) {
// CHECK-NEXT:         %base_2 = arith.subi %o_2, %c1 : index
// CHECK-NEXT:         %at_2 = arith.addi %base_2, %j : index
// CHECK-NEXT:         %lo_2 = arith.cmpi sge, %at_2, %c0 : index
// CHECK-NEXT:         %hi_1 = arith.cmpi slt, %at_2, %d : index
// CHECK-NEXT:         %in_2 = arith.andi %lo_2, %hi_1 : i1
// CHECK-NEXT:         %t_2 = scf.if %in_2 -> (f32) {
// CHECK-NEXT:           %g_2 = memref.load %dy[%o_2] : memref<?xf32>
// CHECK-NEXT:           %v_2 = memref.load %x[%at_2] : memref<?xf32>
// CHECK-NEXT:           %p_2 = arith.mulf %g_2, %v_2 : f32
// CHECK-NEXT:           scf.yield %p_2 : f32
// CHECK-NEXT:         } else {
// CHECK-NEXT:           scf.yield %zero : f32
// CHECK-NEXT:         }
// CHECK-NEXT:         %next_2 = arith.addf %acc_2, %t_2 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %next_2 : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %sum_2, %dw[%j] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     scf.for %q = %c0 to %n step %c1 {
// CHECK-NEXT:       %base_3 = arith.subi %q, %c1 : index
// CHECK-NEXT:       %lo_3 = arith.cmpi sge, %base_3, %c0 : index
// CHECK-NEXT:       %hi_2 = arith.cmpi slt, %base_3, %d : index
// CHECK-NEXT:       %in_3 = arith.andi %lo_3, %hi_2 : i1
// CHECK-NEXT:       %t_3 = scf.if %in_3 -> (f32) {
// CHECK-NEXT:         %v_3 = memref.load %x[%base_3] : memref<?xf32>
// CHECK-NEXT:         scf.yield %v_3 : f32
// CHECK-NEXT:       } else {
// CHECK-NEXT:         scf.yield %zero : f32
// CHECK-NEXT:       }
// CHECK-NEXT:       memref.store %t_3, %y[%q] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     scf.for %k = %c0 to %n step %c1 {
// CHECK-NEXT:       %sum_3 = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc_3 = %zero) -> (f32) {
// CHECK-NEXT:         %base_4 = arith.subi %k, %c1 : index
// CHECK-NEXT:         %at_3 = arith.addi %base_4, %i : index
// CHECK-NEXT:         %lo_4 = arith.cmpi sge, %at_3, %c0 : index
// CHECK-NEXT:         %hi_3 = arith.cmpi slt, %at_3, %d : index
// CHECK-NEXT:         %in_4 = arith.andi %lo_4, %hi_3 : i1
// CHECK-NEXT:         %t_4 = scf.if %in_4 -> (f32) {
// CHECK-NEXT:           %v_4 = memref.load %x[%at_3] : memref<?xf32>
// CHECK-NEXT:           scf.yield %v_4 : f32
// CHECK-NEXT:         } else {
// CHECK-NEXT:           scf.yield %zero : f32
// CHECK-NEXT:         }
// CHECK-NEXT:         %next_3 = arith.addf %acc_3, %t_4 fastmath<reassoc> : f32
// CHECK-NEXT:         scf.yield %next_3 : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %sum_3, %y[%k] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 2 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
