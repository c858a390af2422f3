// RUN: tilegrad opt %s -p 'split-stride-phases' | filecheck %s

// The divisor is a function argument, not a constant: no phases to split, the IR comes out as it went in.

builtin.module {
  func.func @gather(%dy: memref<?xf32>, %dx: memref<?xf32>, %s: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %dx, %c0 : memref<?xf32>
    scf.for %p = %c0 to %n step %c1 {
      %top = arith.addi %p, %c1 : index
      %o = arith.divsi %top, %s : index
      %cell = arith.remsi %top, %s : index
      %v = memref.load %dy[%o] : memref<?xf32>
      %k = arith.index_cast %cell : index to i64
      %f = arith.sitofp %k : i64 to f32
      %w = arith.mulf %v, %f : f32
      memref.store %w, %dx[%p] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @gather(%dy: memref<?xf32>, %dx: memref<?xf32>, %s: index) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %n = memref.dim %dx, %c0 : memref<?xf32>
// CHECK-NEXT:     scf.for %p = %c0 to %n step %c1 {
// CHECK-NEXT:       %top = arith.addi %p, %c1 : index
// CHECK-NEXT:       %o = arith.divsi %top, %s : index
// CHECK-NEXT:       %cell = arith.remsi %top, %s : index
// CHECK-NEXT:       %v = memref.load %dy[%o] : memref<?xf32>
// CHECK-NEXT:       %k = arith.index_cast %cell : index to i64
// CHECK-NEXT:       %f = arith.sitofp %k : i64 to f32
// CHECK-NEXT:       %w = arith.mulf %v, %f : f32
// CHECK-NEXT:       memref.store %w, %dx[%p] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
