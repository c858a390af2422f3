// RUN: tilegrad opt %s -p 'chunk-row-sweeps{columns=8 lanes=8}' | filecheck %s

// A sweep nest of two jammed rows (a convolution's, interchanged with its sums over channels c and taps
// j around the row loop, then jammed): the chunk loop goes around the whole nest, so each chunk's
// accumulators stay in registers for all of c and j; the columns left over run in the nest as it was.

builtin.module {
  func.func @window(%x: memref<?x?xf32>, %w: memref<?x?x?xf32>, %y: memref<?x?xf32>) {
    %0 = memref.alloca() : memref<512xf32>
    %1 = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %ch = memref.dim %x, %c0 : memref<?x?xf32>
    %s = memref.dim %w, %c2 : memref<?x?x?xf32>
    %k = memref.dim %y, %c0 : memref<?x?xf32>
    %n = memref.dim %y, %c1 : memref<?x?xf32>
    %2 = arith.constant 2 : index
    %3 = arith.subi %k, %c0 : index
    %4 = arith.divui %3, %2 : index
    %5 = arith.muli %4, %2 : index
    %6 = arith.addi %c0, %5 : index
    scf.for %7 = %c0 to %6 step %2 {
      %8 = arith.constant 1 : index
      %9 = arith.addi %7, %8 : index
      %10 = arith.constant 512 : index
      scf.for %11 = %c0 to %n step %10 {
        %12 = arith.addi %11, %10 : index
        %13 = arith.minsi %12, %n : index
        %14 = arith.constant 1 : index
        scf.for %15 = %11 to %13 step %14 {
          %16 = arith.subi %15, %11 : index
          memref.store %zero, %1[%16] : memref<512xf32>
          memref.store %zero, %0[%16] : memref<512xf32>
        } {tg.loop = #tg.loop<row, axis = 0>}
        scf.for %17 = %c0 to %ch step %c1 {
          scf.for %18 = %c0 to %s step %c1 {
            scf.for %19 = %11 to %13 step %14 {
              %20 = arith.subi %19, %11 : index
              %21 = memref.load %1[%20] : memref<512xf32>
              %22 = memref.load %0[%20] : memref<512xf32>
              %at = arith.addi %19, %18 : index
              %v = memref.load %x[%17, %at] : memref<?x?xf32>
              %v_1 = memref.load %x[%17, %at] : memref<?x?xf32>
              %wj = memref.load %w[%7, %17, %18] : memref<?x?x?xf32>
              %wj_1 = memref.load %w[%9, %17, %18] : memref<?x?x?xf32>
              %p = arith.mulf %v, %wj : f32
              %p_1 = arith.mulf %v_1, %wj_1 : f32
              %next = arith.addf %21, %p fastmath<reassoc> : f32
              %next_1 = arith.addf %22, %p_1 fastmath<reassoc> : f32
              memref.store %next, %1[%20] : memref<512xf32>
              memref.store %next_1, %0[%20] : memref<512xf32>
            } {tg.loop = #tg.loop<row, axis = 0>}
          } {tg.loop = #tg.loop<reduce, axis = 0>}
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        scf.for %23 = %11 to %13 step %c1 {
          %24 = arith.subi %23, %11 : index
          %sum = memref.load %1[%24] : memref<512xf32>
          %sum_1 = memref.load %0[%24] : memref<512xf32>
          memref.store %sum, %y[%7, %23] : memref<?x?xf32>
          memref.store %sum_1, %y[%9, %23] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    scf.for %r = %6 to %k step %c1 {
      %25 = arith.constant 512 : index
      scf.for %26 = %c0 to %n step %25 {
        %27 = arith.addi %26, %25 : index
        %28 = arith.minsi %27, %n : index
        %29 = arith.constant 1 : index
        scf.for %30 = %26 to %28 step %29 {
          %31 = arith.subi %30, %26 : index
          memref.store %zero, %1[%31] : memref<512xf32>
        } {tg.loop = #tg.loop<row, axis = 0>}
        scf.for %32 = %c0 to %ch step %c1 {
          scf.for %33 = %c0 to %s step %c1 {
            scf.for %34 = %26 to %28 step %29 {
              %35 = arith.subi %34, %26 : index
              %36 = memref.load %1[%35] : memref<512xf32>
              %at_1 = arith.addi %34, %33 : index
              %v_2 = memref.load %x[%32, %at_1] : memref<?x?xf32>
              %wj_2 = memref.load %w[%r, %32, %33] : memref<?x?x?xf32>
              %p_2 = arith.mulf %v_2, %wj_2 : f32
              %next_2 = arith.addf %36, %p_2 fastmath<reassoc> : f32
              memref.store %next_2, %1[%35] : memref<512xf32>
            } {tg.loop = #tg.loop<row, axis = 0>}
          } {tg.loop = #tg.loop<reduce, axis = 0>}
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        scf.for %o = %26 to %28 step %c1 {
          %37 = arith.subi %o, %26 : index
          %sum_2 = memref.load %1[%37] : memref<512xf32>
          memref.store %sum_2, %y[%r, %o] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @window(%x: memref<?x?xf32>, %w: memref<?x?x?xf32>, %y: memref<?x?xf32>) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %ch = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %s = memref.dim %w, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %k = memref.dim %y, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %n = memref.dim %y, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %2 = arith.constant 2 : index
// CHECK-NEXT:     %3 = arith.subi %k, %c0 : index
// CHECK-NEXT:     %4 = arith.divui %3, %2 : index
// CHECK-NEXT:     %5 = arith.muli %4, %2 : index
// CHECK-NEXT:     %6 = arith.addi %c0, %5 : index
// CHECK-NEXT:     scf.for %7 = %c0 to %6 step %2 {
// CHECK-NEXT:       %8 = arith.constant 1 : index
// CHECK-NEXT:       %9 = arith.addi %7, %8 : index
// CHECK-NEXT:       %10 = arith.constant 512 : index
// CHECK-NEXT:       scf.for %11 = %c0 to %n step %10 {
// CHECK-NEXT:         %12 = arith.addi %11, %10 : index
// CHECK-NEXT:         %13 = arith.minsi %12, %n : index
// CHECK-NEXT:         %14 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %15 = %11 to %13 step %14 {
// CHECK-NEXT:           %16 = arith.subi %15, %11 : index
// CHECK-NEXT:           memref.store %zero, %1[%16] : memref<512xf32>
// CHECK-NEXT:           memref.store %zero, %0[%16] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         %17 = arith.constant 8 : index
// CHECK-NEXT:         %18 = arith.subi %13, %11 : index
// CHECK-NEXT:         %19 = arith.divui %18, %17 : index
// CHECK-NEXT:         %20 = arith.muli %19, %17 : index
// CHECK-NEXT:         %21 = arith.addi %11, %20 : index
// CHECK-NEXT:         scf.for %22 = %11 to %21 step %17 {
// CHECK-NEXT:           scf.for %23 = %c0 to %ch step %c1 {
// CHECK-NEXT:             scf.for %24 = %c0 to %s step %c1 {
// CHECK-NEXT:               %25 = arith.constant 0 : index
// CHECK-NEXT:               %26 = arith.constant 8 : index
// CHECK-NEXT:               %27 = arith.addi %22, %25 : index
// CHECK-NEXT:               %28 = arith.addi %22, %26 : index
// CHECK-NEXT:               scf.for %29 = %27 to %28 step %14 {
// CHECK-NEXT:                 %30 = arith.subi %29, %11 : index
// CHECK-NEXT:                 %31 = memref.load %1[%30] : memref<512xf32>
// CHECK-NEXT:                 %32 = memref.load %0[%30] : memref<512xf32>
// CHECK-NEXT:                 %at = arith.addi %29, %24 : index
// CHECK-NEXT:                 %v = memref.load %x[%23, %at] : memref<?x?xf32>
// CHECK-NEXT:                 %v_1 = memref.load %x[%23, %at] : memref<?x?xf32>
// CHECK-NEXT:                 %wj = memref.load %w[%7, %23, %24] : memref<?x?x?xf32>
// CHECK-NEXT:                 %wj_1 = memref.load %w[%9, %23, %24] : memref<?x?x?xf32>
// CHECK-NEXT:                 %p = arith.mulf %v, %wj : f32
// CHECK-NEXT:                 %p_1 = arith.mulf %v_1, %wj_1 : f32
// CHECK-NEXT:                 %next = arith.addf %31, %p fastmath<contract> : f32
// CHECK-NEXT:                 %next_1 = arith.addf %32, %p_1 fastmath<contract> : f32
// CHECK-NEXT:                 memref.store %next, %1[%30] : memref<512xf32>
// CHECK-NEXT:                 memref.store %next_1, %0[%30] : memref<512xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 0>}
// CHECK-NEXT:         scf.for %33 = %c0 to %ch step %c1 {
// CHECK-NEXT:           scf.for %34 = %c0 to %s step %c1 {
// CHECK-NEXT:             scf.for %35 = %21 to %13 step %14 {
// CHECK-NEXT:               %36 = arith.subi %35, %11 : index
// CHECK-NEXT:               %37 = memref.load %1[%36] : memref<512xf32>
// CHECK-NEXT:               %38 = memref.load %0[%36] : memref<512xf32>
// CHECK-NEXT:               %at_1 = arith.addi %35, %34 : index
// CHECK-NEXT:               %v_2 = memref.load %x[%33, %at_1] : memref<?x?xf32>
// CHECK-NEXT:               %v_3 = memref.load %x[%33, %at_1] : memref<?x?xf32>
// CHECK-NEXT:               %wj_2 = memref.load %w[%7, %33, %34] : memref<?x?x?xf32>
// CHECK-NEXT:               %wj_3 = memref.load %w[%9, %33, %34] : memref<?x?x?xf32>
// CHECK-NEXT:               %p_2 = arith.mulf %v_2, %wj_2 : f32
// CHECK-NEXT:               %p_3 = arith.mulf %v_3, %wj_3 : f32
// CHECK-NEXT:               %next_2 = arith.addf %37, %p_2 fastmath<reassoc> : f32
// CHECK-NEXT:               %next_3 = arith.addf %38, %p_3 fastmath<reassoc> : f32
// CHECK-NEXT:               memref.store %next_2, %1[%36] : memref<512xf32>
// CHECK-NEXT:               memref.store %next_3, %0[%36] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         scf.for %39 = %11 to %13 step %c1 {
// CHECK-NEXT:           %40 = arith.subi %39, %11 : index
// CHECK-NEXT:           %sum = memref.load %1[%40] : memref<512xf32>
// CHECK-NEXT:           %sum_1 = memref.load %0[%40] : memref<512xf32>
// CHECK-NEXT:           memref.store %sum, %y[%7, %39] : memref<?x?xf32>
// CHECK-NEXT:           memref.store %sum_1, %y[%9, %39] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     scf.for %r = %6 to %k step %c1 {
// CHECK-NEXT:       %41 = arith.constant 512 : index
// CHECK-NEXT:       scf.for %42 = %c0 to %n step %41 {
// CHECK-NEXT:         %43 = arith.addi %42, %41 : index
// CHECK-NEXT:         %44 = arith.minsi %43, %n : index
// CHECK-NEXT:         %45 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %46 = %42 to %44 step %45 {
// CHECK-NEXT:           %47 = arith.subi %46, %42 : index
// CHECK-NEXT:           memref.store %zero, %1[%47] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         scf.for %48 = %c0 to %ch step %c1 {
// CHECK-NEXT:           scf.for %49 = %c0 to %s step %c1 {
// CHECK-NEXT:             scf.for %50 = %42 to %44 step %45 {
// CHECK-NEXT:               %51 = arith.subi %50, %42 : index
// CHECK-NEXT:               %52 = memref.load %1[%51] : memref<512xf32>
// CHECK-NEXT:               %at_2 = arith.addi %50, %49 : index
// CHECK-NEXT:               %v_4 = memref.load %x[%48, %at_2] : memref<?x?xf32>
// CHECK-NEXT:               %wj_4 = memref.load %w[%r, %48, %49] : memref<?x?x?xf32>
// CHECK-NEXT:               %p_4 = arith.mulf %v_4, %wj_4 : f32
// CHECK-NEXT:               %next_4 = arith.addf %52, %p_4 fastmath<reassoc> : f32
// CHECK-NEXT:               memref.store %next_4, %1[%51] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         scf.for %o = %42 to %44 step %c1 {
// CHECK-NEXT:           %53 = arith.subi %o, %42 : index
// CHECK-NEXT:           %sum_2 = memref.load %1[%53] : memref<512xf32>
// CHECK-NEXT:           memref.store %sum_2, %y[%r, %o] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
