// RUN: tilegrad opt %s -p 'overlap-vector-tails{directives="Split(stage=0, axis=1, factor=8, tail=\"shift_inwards\")"}' | filecheck %s

// The directives option: the short map loop of short-map.mlir (stage 0, axis 1) ends on an overlapping
// vector of the directive's factor, 8 iterations, not of the pass's vector option (16).

builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N W"},
               %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "N W"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %w = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %w step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32>
        %d = arith.addf %v, %v : f32
        memref.store %d, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N W"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "N W"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %w = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       %0 = arith.constant 8 : index
// CHECK-NEXT:       %1 = arith.subi %w, %c0 : index
// CHECK-NEXT:       %2 = arith.constant 0 : index
// CHECK-NEXT:       %3 = arith.maxsi %1, %2 : index
// CHECK-NEXT:       %4 = arith.constant 0 : index
// CHECK-NEXT:       %5 = arith.addi %3, %4 : index
// CHECK-NEXT:       %6 = arith.constant 1 : index
// CHECK-NEXT:       %7 = arith.divui %5, %6 : index
// CHECK-NEXT:       %8 = arith.divui %7, %0 : index
// CHECK-NEXT:       %9 = arith.muli %8, %0 : index
// CHECK-NEXT:       %10 = arith.cmpi sge, %7, %0 : index
// CHECK-NEXT:       %11 = arith.constant 32 : index
// CHECK-NEXT:       %12 = arith.cmpi slt, %7, %11 : index
// CHECK-NEXT:       %13 = arith.andi %10, %12 : i1
// CHECK-NEXT:       %14 = arith.cmpi slt, %9, %7 : index
// CHECK-NEXT:       %15 = arith.andi %13, %14 : i1
// CHECK-NEXT:       scf.if %15 {
// CHECK-NEXT:         %16 = arith.divui %7, %0 : index
// CHECK-NEXT:         %17 = arith.constant 1 : index
// CHECK-NEXT:         %18 = arith.addi %16, %17 : index
// CHECK-NEXT:         %19 = arith.constant 0 : index
// CHECK-NEXT:         %20 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %21 = %19 to %18 step %20 {
// CHECK-NEXT:           %22 = arith.constant 8 : index
// CHECK-NEXT:           %23 = arith.subi %7, %22 : index
// CHECK-NEXT:           %24 = arith.constant 8 : index
// CHECK-NEXT:           %25 = arith.muli %21, %24 : index
// CHECK-NEXT:           %26 = arith.minsi %25, %23 : index
// CHECK-NEXT:           %27 = arith.constant 0 : index
// CHECK-NEXT:           %28 = arith.constant 8 : index
// CHECK-NEXT:           %29 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %30 = %27 to %28 step %29 {
// CHECK-NEXT:             %31 = arith.addi %26, %30 : index
// CHECK-NEXT:             %32 = arith.constant 1 : index
// CHECK-NEXT:             %33 = arith.muli %31, %32 : index
// CHECK-NEXT:             %34 = arith.addi %c0, %33 : index
// CHECK-NEXT:             %v = memref.load %x[%i, %34] : memref<?x?xf32>
// CHECK-NEXT:             %d = arith.addf %v, %v : f32
// CHECK-NEXT:             memref.store %d, %out[%i, %34] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } else {
// CHECK-NEXT:         scf.for %j = %c0 to %w step %c1 {
// CHECK-NEXT:           %v_1 = memref.load %x[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:           %d_1 = arith.addf %v_1, %v_1 : f32
// CHECK-NEXT:           memref.store %d_1, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       }
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
