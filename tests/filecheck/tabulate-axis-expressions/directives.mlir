// RUN: tilegrad opt %s -p 'tabulate-axis-expressions{directives="Table(stage=0, axis=2, elements=0); Table(stage=1, axis=2, elements=32)"}' | filecheck %s

// The directives option: two stages, each a batch of rows and a 2-tap gather whose weight depends on the column and the
// tap only. Stage 0's Table turns the tables off (the weight stays where it is computed); stage 1's
// asks for tables of 32 elements at most: the column loop is strip-mined by 16 (2 taps x 16).

builtin.module {
  func.func @gather_stage0(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input"},
                           %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %batch = memref.dim %x, %c0 : memref<?x?x?xf32>
    %rows = memref.dim %x, %c1 : memref<?x?x?xf32>
    %cols = memref.dim %x, %c2 : memref<?x?x?xf32>
    scf.for %n = %c0 to %batch step %c1 {
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %sum = scf.for %a = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
          %p = arith.addi %j, %a : index
          %pi = arith.index_cast %p : index to i64
          %pf = arith.sitofp %pi : i64 to f32
          %fl = math.floor %pf : f32
          %w = arith.subf %pf, %fl : f32
          %w2 = arith.mulf %w, %w : f32
          %v = memref.load %x[%n, %r, %j] : memref<?x?x?xf32>
          %wv = arith.mulf %w2, %v : f32
          %next = arith.addf %acc, %wv : f32
          scf.yield %next : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %sum, %y[%n, %r, %j] : memref<?x?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 2>}
    } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
  func.func @gather_stage1(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input"},
                           %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %batch = memref.dim %x, %c0 : memref<?x?x?xf32>
    %rows = memref.dim %x, %c1 : memref<?x?x?xf32>
    %cols = memref.dim %x, %c2 : memref<?x?x?xf32>
    scf.for %n = %c0 to %batch step %c1 {
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %sum = scf.for %a = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
          %p = arith.addi %j, %a : index
          %pi = arith.index_cast %p : index to i64
          %pf = arith.sitofp %pi : i64 to f32
          %fl = math.floor %pf : f32
          %w = arith.subf %pf, %fl : f32
          %w2 = arith.mulf %w, %w : f32
          %v = memref.load %x[%n, %r, %j] : memref<?x?x?xf32>
          %wv = arith.mulf %w2, %v : f32
          %next = arith.addf %acc, %wv : f32
          scf.yield %next : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %sum, %y[%n, %r, %j] : memref<?x?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 2>}
    } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @gather_stage0(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %batch = memref.dim %x, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %rows = memref.dim %x, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %cols = memref.dim %x, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     scf.for %n = %c0 to %batch step %c1 {
// CHECK-NEXT:       scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:         scf.for %j = %c0 to %cols step %c1 {
// CHECK-NEXT:           %sum = scf.for %a = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:             %p = arith.addi %j, %a : index
// CHECK-NEXT:             %pi = arith.index_cast %p : index to i64
// CHECK-NEXT:             %pf = arith.sitofp %pi : i64 to f32
// CHECK-NEXT:             %fl = math.floor %pf : f32
// CHECK-NEXT:             %w = arith.subf %pf, %fl : f32
// CHECK-NEXT:             %w2 = arith.mulf %w, %w : f32
// CHECK-NEXT:             %v = memref.load %x[%n, %r, %j] : memref<?x?x?xf32>
// CHECK-NEXT:             %wv = arith.mulf %w2, %v : f32
// CHECK-NEXT:             %next = arith.addf %acc, %wv : f32
// CHECK-NEXT:             scf.yield %next : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           memref.store %sum, %y[%n, %r, %j] : memref<?x?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @gather_stage1(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<32xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %batch = memref.dim %x, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %rows = memref.dim %x, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %cols = memref.dim %x, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     scf.for %n = %c0 to %batch step %c1 {
// CHECK-NEXT:       %1 = arith.constant 16 : index
// CHECK-NEXT:       scf.for %2 = %c0 to %cols step %1 {
// CHECK-NEXT:         %3 = arith.addi %2, %1 : index
// CHECK-NEXT:         %4 = arith.minsi %3, %cols : index
// CHECK-NEXT:         %5 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %6 = %c0 to %c2 step %5 {
// CHECK-NEXT:           scf.for %7 = %2 to %4 step %5 {
// CHECK-NEXT:             %p = arith.addi %7, %6 : index
// CHECK-NEXT:             %pi = arith.index_cast %p : index to i64
// CHECK-NEXT:             %pf = arith.sitofp %pi : i64 to f32
// CHECK-NEXT:             %fl = math.floor %pf : f32
// CHECK-NEXT:             %w = arith.subf %pf, %fl : f32
// CHECK-NEXT:             %w2 = arith.mulf %w, %w : f32
// CHECK-NEXT:             %8 = arith.subi %7, %2 : index
// CHECK-NEXT:             %9 = arith.subi %6, %c0 : index
// CHECK-NEXT:             %10 = arith.constant 16 : index
// CHECK-NEXT:             %11 = arith.muli %9, %10 : index
// CHECK-NEXT:             %12 = arith.addi %8, %11 : index
// CHECK-NEXT:             memref.store %w2, %0[%12] : memref<32xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:           scf.for %j = %2 to %4 step %c1 {
// CHECK-NEXT:             %sum = scf.for %a = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:               %13 = arith.subi %j, %2 : index
// CHECK-NEXT:               %14 = arith.subi %a, %c0 : index
// CHECK-NEXT:               %15 = arith.constant 16 : index
// CHECK-NEXT:               %16 = arith.muli %14, %15 : index
// CHECK-NEXT:               %17 = arith.addi %13, %16 : index
// CHECK-NEXT:               %w2_1 = memref.load %0[%17] : memref<32xf32>
// CHECK-NEXT:               %v = memref.load %x[%n, %r, %j] : memref<?x?x?xf32>
// CHECK-NEXT:               %wv = arith.mulf %w2_1, %v : f32
// CHECK-NEXT:               %next = arith.addf %acc, %wv : f32
// CHECK-NEXT:               scf.yield %next : f32
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:             memref.store %sum, %y[%n, %r, %j] : memref<?x?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 2>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
