// RUN: tilegrad opt %s -p 'jam-row-sweeps{directives="UnrollJam(stage=0, axis=1, factor=2)"}' | filecheck %s

// A directive names a row loop inside the outermost one, whose rows share what they sweep: a
// convolution's output channels r (w[r, c, j] per row, x[b, c, o + j] shared) inside its batch loop b,
// interchanged as a sweep nest. b is no row loop to jam (its rows sweep images of their own, x[b]:
// the planner lists r); r is jammed by 2, each copy with its own stack row.

builtin.module {
  func.func @window(%x: memref<?x?x?xf32>, %w: memref<?x?x?xf32>, %y: memref<?x?x?xf32>) {
    %0 = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %ch = memref.dim %x, %c1 : memref<?x?x?xf32>
    %s = memref.dim %w, %c2 : memref<?x?x?xf32>
    %k = memref.dim %y, %c1 : memref<?x?x?xf32>
    %n = memref.dim %y, %c2 : memref<?x?x?xf32>
    %nb = memref.dim %y, %c0 : memref<?x?x?xf32>
    scf.for %b = %c0 to %nb step %c1 {
      scf.for %r = %c0 to %k step %c1 {
        %1 = arith.constant 512 : index
        scf.for %2 = %c0 to %n step %1 {
          %3 = arith.addi %2, %1 : index
          %4 = arith.minsi %3, %n : index
          %5 = arith.constant 1 : index
          scf.for %6 = %2 to %4 step %5 {
            %7 = arith.subi %6, %2 : index
            memref.store %zero, %0[%7] : memref<512xf32>
          } {tg.loop = #tg.loop<row, axis = 0>}
          scf.for %8 = %c0 to %ch step %c1 {
            scf.for %9 = %c0 to %s step %c1 {
              scf.for %10 = %2 to %4 step %5 {
                %11 = arith.subi %10, %2 : index
                %12 = memref.load %0[%11] : memref<512xf32>
                %at = arith.addi %10, %9 : index
                %v = memref.load %x[%b, %8, %at] : memref<?x?x?xf32>
                %wj = memref.load %w[%r, %8, %9] : memref<?x?x?xf32>
                %p = arith.mulf %v, %wj : f32
                %next = arith.addf %12, %p fastmath<reassoc> : f32
                memref.store %next, %0[%11] : memref<512xf32>
              } {tg.loop = #tg.loop<row, axis = 0>}
            } {tg.loop = #tg.loop<reduce, axis = 0>}
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          scf.for %o = %2 to %4 step %c1 {
            %13 = arith.subi %o, %2 : index
            %sum = memref.load %0[%13] : memref<512xf32>
            memref.store %sum, %y[%b, %r, %o] : memref<?x?x?xf32>
          } {tg.loop = #tg.loop<parallel, axis = 2>}
        } {tg.loop = #tg.loop<tile, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @window(%x: memref<?x?x?xf32>, %w: memref<?x?x?xf32>, %y: memref<?x?x?xf32>) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %ch = memref.dim %x, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %s = memref.dim %w, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %k = memref.dim %y, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %n = memref.dim %y, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %nb = memref.dim %y, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     scf.for %b = %c0 to %nb step %c1 {
// CHECK-NEXT:       %2 = arith.constant 2 : index
// CHECK-NEXT:       %3 = arith.subi %k, %c0 : index
// CHECK-NEXT:       %4 = arith.divui %3, %2 : index
// CHECK-NEXT:       %5 = arith.muli %4, %2 : index
// CHECK-NEXT:       %6 = arith.addi %c0, %5 : index
// CHECK-NEXT:       scf.for %7 = %c0 to %6 step %2 {
// CHECK-NEXT:         %8 = arith.constant 1 : index
// CHECK-NEXT:         %9 = arith.addi %7, %8 : index
// CHECK-NEXT:         %10 = arith.constant 512 : index
// CHECK-NEXT:         scf.for %11 = %c0 to %n step %10 {
// CHECK-NEXT:           %12 = arith.addi %11, %10 : index
// CHECK-NEXT:           %13 = arith.minsi %12, %n : index
// CHECK-NEXT:           %14 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %15 = %11 to %13 step %14 {
// CHECK-NEXT:             %16 = arith.subi %15, %11 : index
// CHECK-NEXT:             memref.store %zero, %1[%16] : memref<512xf32>
// CHECK-NEXT:             memref.store %zero, %0[%16] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           scf.for %17 = %c0 to %ch step %c1 {
// CHECK-NEXT:             scf.for %18 = %c0 to %s step %c1 {
// CHECK-NEXT:               scf.for %19 = %11 to %13 step %14 {
// CHECK-NEXT:                 %20 = arith.subi %19, %11 : index
// CHECK-NEXT:                 %21 = memref.load %1[%20] : memref<512xf32>
// CHECK-NEXT:                 %22 = memref.load %0[%20] : memref<512xf32>
// CHECK-NEXT:                 %at = arith.addi %19, %18 : index
// CHECK-NEXT:                 %v = memref.load %x[%b, %17, %at] : memref<?x?x?xf32>
// CHECK-NEXT:                 %v_1 = memref.load %x[%b, %17, %at] : memref<?x?x?xf32>
// CHECK-NEXT:                 %wj = memref.load %w[%7, %17, %18] : memref<?x?x?xf32>
// CHECK-NEXT:                 %wj_1 = memref.load %w[%9, %17, %18] : memref<?x?x?xf32>
// CHECK-NEXT:                 %p = arith.mulf %v, %wj : f32
// CHECK-NEXT:                 %p_1 = arith.mulf %v_1, %wj_1 : f32
// CHECK-NEXT:                 %next = arith.addf %21, %p fastmath<reassoc> : f32
// CHECK-NEXT:                 %next_1 = arith.addf %22, %p_1 fastmath<reassoc> : f32
// CHECK-NEXT:                 memref.store %next, %1[%20] : memref<512xf32>
// CHECK-NEXT:                 memref.store %next_1, %0[%20] : memref<512xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           scf.for %23 = %11 to %13 step %c1 {
// CHECK-NEXT:             %24 = arith.subi %23, %11 : index
// CHECK-NEXT:             %sum = memref.load %1[%24] : memref<512xf32>
// CHECK-NEXT:             %sum_1 = memref.load %0[%24] : memref<512xf32>
// CHECK-NEXT:             memref.store %sum, %y[%b, %7, %23] : memref<?x?x?xf32>
// CHECK-NEXT:             memref.store %sum_1, %y[%b, %9, %23] : memref<?x?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       scf.for %r = %6 to %k step %c1 {
// CHECK-NEXT:         %25 = arith.constant 512 : index
// CHECK-NEXT:         scf.for %26 = %c0 to %n step %25 {
// CHECK-NEXT:           %27 = arith.addi %26, %25 : index
// CHECK-NEXT:           %28 = arith.minsi %27, %n : index
// CHECK-NEXT:           %29 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %30 = %26 to %28 step %29 {
// CHECK-NEXT:             %31 = arith.subi %30, %26 : index
// CHECK-NEXT:             memref.store %zero, %1[%31] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           scf.for %32 = %c0 to %ch step %c1 {
// CHECK-NEXT:             scf.for %33 = %c0 to %s step %c1 {
// CHECK-NEXT:               scf.for %34 = %26 to %28 step %29 {
// CHECK-NEXT:                 %35 = arith.subi %34, %26 : index
// CHECK-NEXT:                 %36 = memref.load %1[%35] : memref<512xf32>
// CHECK-NEXT:                 %at_1 = arith.addi %34, %33 : index
// CHECK-NEXT:                 %v_2 = memref.load %x[%b, %32, %at_1] : memref<?x?x?xf32>
// CHECK-NEXT:                 %wj_2 = memref.load %w[%r, %32, %33] : memref<?x?x?xf32>
// CHECK-NEXT:                 %p_2 = arith.mulf %v_2, %wj_2 : f32
// CHECK-NEXT:                 %next_2 = arith.addf %36, %p_2 fastmath<reassoc> : f32
// CHECK-NEXT:                 memref.store %next_2, %1[%35] : memref<512xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           scf.for %o = %26 to %28 step %c1 {
// CHECK-NEXT:             %37 = arith.subi %o, %26 : index
// CHECK-NEXT:             %sum_2 = memref.load %1[%37] : memref<512xf32>
// CHECK-NEXT:             memref.store %sum_2, %y[%b, %r, %o] : memref<?x?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
