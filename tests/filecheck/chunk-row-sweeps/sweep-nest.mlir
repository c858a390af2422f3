// RUN: tilegrad opt %s -p 'chunk-row-sweeps{columns=8 lanes=8}' | filecheck %s

// A sweep nest of two jammed rows (a convolution's, interchanged with its sums over channels c and taps
// j around the row loop, then jammed): the chunk loop goes around the whole nest, so each chunk's
// accumulators stay in registers for all of c and j; the columns left over run as one more chunk, into
// stack rows of its own, ending at the last column (tail guard; in the nest as it was where the row is
// narrower than a chunk).

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
// CHECK-NEXT:     %2 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %3 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %ch = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %s = memref.dim %w, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %k = memref.dim %y, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %n = memref.dim %y, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %4 = arith.constant 2 : index
// CHECK-NEXT:     %5 = arith.subi %k, %c0 : index
// CHECK-NEXT:     %6 = arith.divui %5, %4 : index
// CHECK-NEXT:     %7 = arith.muli %6, %4 : index
// CHECK-NEXT:     %8 = arith.addi %c0, %7 : index
// CHECK-NEXT:     scf.for %9 = %c0 to %8 step %4 {
// CHECK-NEXT:       %10 = arith.constant 1 : index
// CHECK-NEXT:       %11 = arith.addi %9, %10 : index
// CHECK-NEXT:       %12 = arith.constant 512 : index
// CHECK-NEXT:       scf.for %13 = %c0 to %n step %12 {
// CHECK-NEXT:         %14 = arith.addi %13, %12 : index
// CHECK-NEXT:         %15 = arith.minsi %14, %n : index
// CHECK-NEXT:         %16 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %17 = %13 to %15 step %16 {
// CHECK-NEXT:           %18 = arith.subi %17, %13 : index
// CHECK-NEXT:           memref.store %zero, %3[%18] : memref<512xf32>
// CHECK-NEXT:           memref.store %zero, %2[%18] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         %19 = arith.constant 8 : index
// CHECK-NEXT:         %20 = arith.subi %15, %13 : index
// CHECK-NEXT:         %21 = arith.divui %20, %19 : index
// CHECK-NEXT:         %22 = arith.muli %21, %19 : index
// CHECK-NEXT:         %23 = arith.addi %13, %22 : index
// CHECK-NEXT:         scf.for %24 = %13 to %23 step %19 {
// CHECK-NEXT:           scf.for %25 = %c0 to %ch step %c1 {
// CHECK-NEXT:             scf.for %26 = %c0 to %s step %c1 {
// CHECK-NEXT:               %27 = arith.constant 0 : index
// CHECK-NEXT:               %28 = arith.constant 8 : index
// CHECK-NEXT:               %29 = arith.addi %24, %27 : index
// CHECK-NEXT:               %30 = arith.addi %24, %28 : index
// CHECK-NEXT:               scf.for %31 = %29 to %30 step %16 {
// CHECK-NEXT:                 %32 = arith.subi %31, %13 : index
// CHECK-NEXT:                 %33 = memref.load %3[%32] : memref<512xf32>
// CHECK-NEXT:                 %34 = memref.load %2[%32] : memref<512xf32>
// CHECK-NEXT:                 %at = arith.addi %31, %26 : index
// CHECK-NEXT:                 %v = memref.load %x[%25, %at] : memref<?x?xf32>
// CHECK-NEXT:                 %v_1 = memref.load %x[%25, %at] : memref<?x?xf32>
// CHECK-NEXT:                 %wj = memref.load %w[%9, %25, %26] : memref<?x?x?xf32>
// CHECK-NEXT:                 %wj_1 = memref.load %w[%11, %25, %26] : memref<?x?x?xf32>
// CHECK-NEXT:                 %p = arith.mulf %v, %wj : f32
// CHECK-NEXT:                 %p_1 = arith.mulf %v_1, %wj_1 : f32
// CHECK-NEXT:                 %next = arith.addf %33, %p fastmath<contract> : f32
// CHECK-NEXT:                 %next_1 = arith.addf %34, %p_1 fastmath<contract> : f32
// CHECK-NEXT:                 memref.store %next, %3[%32] : memref<512xf32>
// CHECK-NEXT:                 memref.store %next_1, %2[%32] : memref<512xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 0>}
// CHECK-NEXT:         %35 = arith.cmpi slt, %23, %15 : index
// CHECK-NEXT:         %36 = arith.cmpi slt, %13, %23 : index
// CHECK-NEXT:         %37 = arith.andi %35, %36 : i1
// CHECK-NEXT:         scf.if %37 {
// CHECK-NEXT:           %38 = arith.constant 8 : index
// CHECK-NEXT:           %39 = arith.subi %15, %38 : index
// CHECK-NEXT:           %40 = arith.subi %39, %13 : index
// CHECK-NEXT:           %41 = arith.subi %15, %13 : index
// CHECK-NEXT:           %42 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %43 = %40 to %41 step %42 {
// CHECK-NEXT:             %44 = memref.load %3[%43] : memref<512xf32>
// CHECK-NEXT:             memref.store %44, %1[%43] : memref<512xf32>
// CHECK-NEXT:             %45 = memref.load %2[%43] : memref<512xf32>
// CHECK-NEXT:             memref.store %45, %0[%43] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:           scf.for %46 = %c0 to %ch step %c1 {
// CHECK-NEXT:             scf.for %47 = %c0 to %s step %c1 {
// CHECK-NEXT:               %48 = arith.constant 0 : index
// CHECK-NEXT:               %49 = arith.constant 8 : index
// CHECK-NEXT:               %50 = arith.addi %39, %48 : index
// CHECK-NEXT:               %51 = arith.addi %39, %49 : index
// CHECK-NEXT:               scf.for %52 = %50 to %51 step %16 {
// CHECK-NEXT:                 %53 = arith.subi %52, %13 : index
// CHECK-NEXT:                 %54 = memref.load %1[%53] : memref<512xf32>
// CHECK-NEXT:                 %55 = memref.load %0[%53] : memref<512xf32>
// CHECK-NEXT:                 %at_1 = arith.addi %52, %47 : index
// CHECK-NEXT:                 %v_2 = memref.load %x[%46, %at_1] : memref<?x?xf32>
// CHECK-NEXT:                 %v_3 = memref.load %x[%46, %at_1] : memref<?x?xf32>
// CHECK-NEXT:                 %wj_2 = memref.load %w[%9, %46, %47] : memref<?x?x?xf32>
// CHECK-NEXT:                 %wj_3 = memref.load %w[%11, %46, %47] : memref<?x?x?xf32>
// CHECK-NEXT:                 %p_2 = arith.mulf %v_2, %wj_2 : f32
// CHECK-NEXT:                 %p_3 = arith.mulf %v_3, %wj_3 : f32
// CHECK-NEXT:                 %next_2 = arith.addf %54, %p_2 fastmath<contract> : f32
// CHECK-NEXT:                 %next_3 = arith.addf %55, %p_3 fastmath<contract> : f32
// CHECK-NEXT:                 memref.store %next_2, %1[%53] : memref<512xf32>
// CHECK-NEXT:                 memref.store %next_3, %0[%53] : memref<512xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           %56 = arith.subi %23, %13 : index
// CHECK-NEXT:           %57 = arith.subi %15, %13 : index
// CHECK-NEXT:           %58 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %59 = %56 to %57 step %58 {
// CHECK-NEXT:             %60 = memref.load %1[%59] : memref<512xf32>
// CHECK-NEXT:             memref.store %60, %3[%59] : memref<512xf32>
// CHECK-NEXT:             %61 = memref.load %0[%59] : memref<512xf32>
// CHECK-NEXT:             memref.store %61, %2[%59] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:         } else {
// CHECK-NEXT:           scf.for %62 = %c0 to %ch step %c1 {
// CHECK-NEXT:             scf.for %63 = %c0 to %s step %c1 {
// CHECK-NEXT:               scf.for %64 = %23 to %15 step %16 {
// CHECK-NEXT:                 %65 = arith.subi %64, %13 : index
// CHECK-NEXT:                 %66 = memref.load %3[%65] : memref<512xf32>
// CHECK-NEXT:                 %67 = memref.load %2[%65] : memref<512xf32>
// CHECK-NEXT:                 %at_2 = arith.addi %64, %63 : index
// CHECK-NEXT:                 %v_4 = memref.load %x[%62, %at_2] : memref<?x?xf32>
// CHECK-NEXT:                 %v_5 = memref.load %x[%62, %at_2] : memref<?x?xf32>
// CHECK-NEXT:                 %wj_4 = memref.load %w[%9, %62, %63] : memref<?x?x?xf32>
// CHECK-NEXT:                 %wj_5 = memref.load %w[%11, %62, %63] : memref<?x?x?xf32>
// CHECK-NEXT:                 %p_4 = arith.mulf %v_4, %wj_4 : f32
// CHECK-NEXT:                 %p_5 = arith.mulf %v_5, %wj_5 : f32
// CHECK-NEXT:                 %next_4 = arith.addf %66, %p_4 fastmath<reassoc> : f32
// CHECK-NEXT:                 %next_5 = arith.addf %67, %p_5 fastmath<reassoc> : f32
// CHECK-NEXT:                 memref.store %next_4, %3[%65] : memref<512xf32>
// CHECK-NEXT:                 memref.store %next_5, %2[%65] : memref<512xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %68 = %13 to %15 step %c1 {
// CHECK-NEXT:           %69 = arith.subi %68, %13 : index
// CHECK-NEXT:           %sum = memref.load %3[%69] : memref<512xf32>
// CHECK-NEXT:           %sum_1 = memref.load %2[%69] : memref<512xf32>
// CHECK-NEXT:           memref.store %sum, %y[%9, %68] : memref<?x?xf32>
// CHECK-NEXT:           memref.store %sum_1, %y[%11, %68] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     scf.for %r = %8 to %k step %c1 {
// CHECK-NEXT:       %70 = arith.constant 512 : index
// CHECK-NEXT:       scf.for %71 = %c0 to %n step %70 {
// CHECK-NEXT:         %72 = arith.addi %71, %70 : index
// CHECK-NEXT:         %73 = arith.minsi %72, %n : index
// CHECK-NEXT:         %74 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %75 = %71 to %73 step %74 {
// CHECK-NEXT:           %76 = arith.subi %75, %71 : index
// CHECK-NEXT:           memref.store %zero, %3[%76] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:         scf.for %77 = %c0 to %ch step %c1 {
// CHECK-NEXT:           scf.for %78 = %c0 to %s step %c1 {
// CHECK-NEXT:             scf.for %79 = %71 to %73 step %74 {
// CHECK-NEXT:               %80 = arith.subi %79, %71 : index
// CHECK-NEXT:               %81 = memref.load %3[%80] : memref<512xf32>
// CHECK-NEXT:               %at_3 = arith.addi %79, %78 : index
// CHECK-NEXT:               %v_6 = memref.load %x[%77, %at_3] : memref<?x?xf32>
// CHECK-NEXT:               %wj_6 = memref.load %w[%r, %77, %78] : memref<?x?x?xf32>
// CHECK-NEXT:               %p_6 = arith.mulf %v_6, %wj_6 : f32
// CHECK-NEXT:               %next_6 = arith.addf %81, %p_6 fastmath<reassoc> : f32
// CHECK-NEXT:               memref.store %next_6, %3[%80] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         scf.for %o = %71 to %73 step %c1 {
// CHECK-NEXT:           %82 = arith.subi %o, %71 : index
// CHECK-NEXT:           %sum_2 = memref.load %3[%82] : memref<512xf32>
// CHECK-NEXT:           memref.store %sum_2, %y[%r, %o] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
