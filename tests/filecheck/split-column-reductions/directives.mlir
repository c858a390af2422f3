// RUN: tilegrad opt %s -p 'split-column-reductions{num_blocks=2 directives="RFactor(stage=1, chunks=3); RFactor(stage=3, chunks=1)"}' | filecheck %s

// The directives option: two row stages, each followed by a column sum over the rows it walks (stages 1
// and 3 as the pass finds them). RFactor names stage 1's sum with 3 chunks in place of num_blocks=2: a
// 3-row workspace of partial rows, its row stage and partial sums by the same 3 chunks, a combine stage
// after. chunks=1 turns stage 3's split off: stages 2 and 3 stay as they were (renumbered 3 and 4).

builtin.module {
  func.func @two_pairs(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                       %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"},
                       %col: memref<?xf32> {tg.name = "col", tg.role = "output"},
                       %z: memref<?x?xf32> {tg.name = "z", tg.role = "output"},
                       %sq: memref<?xf32> {tg.name = "sq", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32>
        %w = arith.addf %v, %v : f32
        memref.store %w, %y[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    scf.for %d = %c0 to %m step %c1 {
      %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
        %u = memref.load %x[%r, %d] : memref<?x?xf32>
        %a = arith.addf %acc, %u : f32
        scf.yield %a : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s, %col[%d] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    scf.for %i2 = %c0 to %n step %c1 {
      scf.for %j2 = %c0 to %m step %c1 {
        %v2 = memref.load %x[%i2, %j2] : memref<?x?xf32>
        %w2 = arith.mulf %v2, %v2 : f32
        memref.store %w2, %z[%i2, %j2] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 2 : i64}
    scf.for %d2 = %c0 to %m step %c1 {
      %s2 = scf.for %r2 = %c0 to %n step %c1 iter_args(%acc2 = %zero) -> (f32) {
        %u2 = memref.load %x[%r2, %d2] : memref<?x?xf32>
        %q2 = arith.mulf %u2, %u2 : f32
        %a2 = arith.addf %acc2, %q2 : f32
        scf.yield %a2 : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s2, %sq[%d2] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 3 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @two_pairs(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}, %col: memref<?xf32> {tg.name = "col", tg.role = "output"}, %z: memref<?x?xf32> {tg.name = "z", tg.role = "output"}, %sq: memref<?xf32> {tg.name = "sq", tg.role = "output"}, %column_partials0: memref<3x?xf32, strided<[?, 1]>> {tg.name = "column_partials0", tg.role = "workspace", tg.shape = "[3, [\22dim\22, \22x\22, 1]]"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %0 = arith.constant 0 : index
// CHECK-NEXT:     %1 = arith.constant 1 : index
// CHECK-NEXT:     %2 = arith.constant 3 : index
// CHECK-NEXT:     %3 = arith.subi %2, %1 : index
// CHECK-NEXT:     %4 = arith.addi %n, %3 : index
// CHECK-NEXT:     %5 = arith.divui %4, %2 : index
// CHECK-NEXT:     %6 = arith.maxsi %5, %1 : index
// CHECK-NEXT:     %7 = arith.subi %6, %1 : index
// CHECK-NEXT:     %8 = arith.addi %n, %7 : index
// CHECK-NEXT:     %9 = arith.divui %8, %6 : index
// CHECK-NEXT:     scf.for %10 = %0 to %9 step %1 {
// CHECK-NEXT:       %11 = arith.muli %10, %6 : index
// CHECK-NEXT:       %12 = arith.addi %11, %6 : index
// CHECK-NEXT:       %13 = arith.minsi %12, %n : index
// CHECK-NEXT:       scf.for %i = %11 to %13 step %c1 {
// CHECK-NEXT:         scf.for %j = %c0 to %m step %c1 {
// CHECK-NEXT:           %v = memref.load %x[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:           %w = arith.addf %v, %v : f32
// CHECK-NEXT:           memref.store %w, %y[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     scf.for %14 = %0 to %9 step %1 {
// CHECK-NEXT:       %15 = arith.muli %14, %6 : index
// CHECK-NEXT:       %16 = arith.addi %15, %6 : index
// CHECK-NEXT:       %17 = arith.minsi %16, %n : index
// CHECK-NEXT:       scf.for %18 = %15 to %17 step %1 {
// CHECK-NEXT:         scf.for %19 = %c0 to %m step %c1 {
// CHECK-NEXT:           %20 = arith.cmpi eq, %18, %15 : index
// CHECK-NEXT:           %21 = memref.load %column_partials0[%14, %19] : memref<3x?xf32, strided<[?, 1]>>
// CHECK-NEXT:           %22 = arith.select %20, %zero, %21 : f32
// CHECK-NEXT:           %u = memref.load %x[%18, %19] : memref<?x?xf32>
// CHECK-NEXT:           %a = arith.addf %22, %u : f32
// CHECK-NEXT:           memref.store %a, %column_partials0[%14, %19] : memref<3x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     scf.for %d = %c0 to %m step %c1 {
// CHECK-NEXT:       %s = scf.for %23 = %0 to %9 step %1 iter_args(%24 = %zero) -> (f32) {
// CHECK-NEXT:         %25 = memref.load %column_partials0[%23, %d] : memref<3x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %26 = arith.addf %24, %25 : f32
// CHECK-NEXT:         scf.yield %26 : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %s, %col[%d] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 2 : i64}
// CHECK-NEXT:     scf.for %i2 = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j2 = %c0 to %m step %c1 {
// CHECK-NEXT:         %v2 = memref.load %x[%i2, %j2] : memref<?x?xf32>
// CHECK-NEXT:         %w2 = arith.mulf %v2, %v2 : f32
// CHECK-NEXT:         memref.store %w2, %z[%i2, %j2] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 3 : i64}
// CHECK-NEXT:     scf.for %d2 = %c0 to %m step %c1 {
// CHECK-NEXT:       %s2 = scf.for %r2 = %c0 to %n step %c1 iter_args(%acc2 = %zero) -> (f32) {
// CHECK-NEXT:         %u2 = memref.load %x[%r2, %d2] : memref<?x?xf32>
// CHECK-NEXT:         %q2 = arith.mulf %u2, %u2 : f32
// CHECK-NEXT:         %a2 = arith.addf %acc2, %q2 : f32
// CHECK-NEXT:         scf.yield %a2 : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %s2, %sq[%d2] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 4 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
