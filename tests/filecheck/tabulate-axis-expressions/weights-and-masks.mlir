// RUN: tilegrad opt %s -p 'tabulate-axis-expressions{elements=64 min_ops=3}' | filecheck %s

// A 3-tap gather along the columns, inside a tile loop around the rows (as tile-for-target and
// hoist-tile-loops leave a window): the tap's weight depends on the column and the tap only, so it is
// computed into a table of 3 x 21 floats (64 elements at most) before the row loop, the column loop
// strip-mined by 21 around it. The mask is not tabulated (a test stays a test), but its column tests
// are joined apart from its row test (which depends on the row and the tap).

builtin.module {
  func.func @gather_stage0(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                           %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %tile = arith.constant 4096 : index
    %half = arith.constant 5.000000e-01 : f32
    %zero = arith.constant 0.000000e+00 : f32
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %t = %c0 to %cols step %tile {
      scf.for %r = %c0 to %rows step %c1 {
        %t_next = arith.addi %t, %tile : index
        %t_end = arith.minsi %t_next, %cols : index
        scf.for %j = %t to %t_end step %c1 {
          %sum = scf.for %a = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (f32) {
            %p = arith.addi %j, %a : index
            %q = arith.subi %p, %c1 : index
            %row = arith.addi %r, %a : index
            %in_row = arith.cmpi slt, %row, %rows : index
            %in_left = arith.cmpi sge, %q, %c0 : index
            %in_right = arith.cmpi slt, %q, %cols : index
            %m0 = arith.andi %in_left, %in_row : i1
            %inside = arith.andi %m0, %in_right : i1
            %qi = arith.index_cast %q : index to i64
            %qf = arith.sitofp %qi : i64 to f32
            %s = arith.mulf %qf, %half : f32
            %fl = math.floor %s : f32
            %w = arith.subf %s, %fl : f32
            %lo = arith.maxsi %q, %c0 : index
            %hi = arith.subi %cols, %c1 : index
            %k = arith.minsi %lo, %hi : index
            %v = memref.load %x[%r, %k] : memref<?x?xf32>
            %wv = arith.mulf %w, %v : f32
            %term = arith.select %inside, %wv, %zero : f32
            %next = arith.addf %acc, %term : f32
            scf.yield %next : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          memref.store %sum, %y[%r, %j] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<parallel, axis = 0>}
    } {tg.loop = #tg.loop<tile, axis = 1>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @gather_stage0(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<63xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %tile = arith.constant 4096 : index
// CHECK-NEXT:     %half = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %cols = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %t = %c0 to %cols step %tile {
// CHECK-NEXT:       %t_next = arith.addi %t, %tile : index
// CHECK-NEXT:       %t_end = arith.minsi %t_next, %cols : index
// CHECK-NEXT:       %1 = arith.constant 21 : index
// CHECK-NEXT:       scf.for %2 = %t to %t_end step %1 {
// CHECK-NEXT:         %3 = arith.addi %2, %1 : index
// CHECK-NEXT:         %4 = arith.minsi %3, %t_end : index
// CHECK-NEXT:         %5 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %6 = %c0 to %c3 step %5 {
// CHECK-NEXT:           scf.for %7 = %2 to %4 step %5 {
// CHECK-NEXT:             %p = arith.addi %7, %6 : index
// CHECK-NEXT:             %q = arith.subi %p, %c1 : index
// CHECK-NEXT:             %qi = arith.index_cast %q : index to i64
// CHECK-NEXT:             %qf = arith.sitofp %qi : i64 to f32
// CHECK-NEXT:             %s = arith.mulf %qf, %half : f32
// CHECK-NEXT:             %fl = math.floor %s : f32
// CHECK-NEXT:             %w = arith.subf %s, %fl : f32
// CHECK-NEXT:             %8 = arith.subi %7, %2 : index
// CHECK-NEXT:             %9 = arith.subi %6, %c0 : index
// CHECK-NEXT:             %10 = arith.constant 21 : index
// CHECK-NEXT:             %11 = arith.muli %9, %10 : index
// CHECK-NEXT:             %12 = arith.addi %8, %11 : index
// CHECK-NEXT:             memref.store %w, %0[%12] : memref<63xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:           scf.for %j = %2 to %4 step %c1 {
// CHECK-NEXT:             %sum = scf.for %a = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:               %p_1 = arith.addi %j, %a : index
// CHECK-NEXT:               %q_1 = arith.subi %p_1, %c1 : index
// CHECK-NEXT:               %row = arith.addi %r, %a : index
// CHECK-NEXT:               %in_row = arith.cmpi slt, %row, %rows : index
// CHECK-NEXT:               %in_left = arith.cmpi sge, %q_1, %c0 : index
// CHECK-NEXT:               %in_right = arith.cmpi slt, %q_1, %cols : index
// CHECK-NEXT:               %13 = arith.andi %in_left, %in_right : i1
// CHECK-NEXT:               %inside = arith.andi %13, %in_row : i1
// CHECK-NEXT:               %14 = arith.subi %j, %2 : index
// CHECK-NEXT:               %15 = arith.subi %a, %c0 : index
// CHECK-NEXT:               %16 = arith.constant 21 : index
// CHECK-NEXT:               %17 = arith.muli %15, %16 : index
// CHECK-NEXT:               %18 = arith.addi %14, %17 : index
// CHECK-NEXT:               %w_1 = memref.load %0[%18] : memref<63xf32>
// CHECK-NEXT:               %lo = arith.maxsi %q_1, %c0 : index
// CHECK-NEXT:               %hi = arith.subi %cols, %c1 : index
// CHECK-NEXT:               %k = arith.minsi %lo, %hi : index
// CHECK-NEXT:               %v = memref.load %x[%r, %k] : memref<?x?xf32>
// CHECK-NEXT:               %wv = arith.mulf %w_1, %v : f32
// CHECK-NEXT:               %term = arith.select %inside, %wv, %zero : f32
// CHECK-NEXT:               %next = arith.addf %acc, %term : f32
// CHECK-NEXT:               scf.yield %next : f32
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:             memref.store %sum, %y[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
