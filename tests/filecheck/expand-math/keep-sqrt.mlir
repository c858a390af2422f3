// RUN: tilegrad opt %s -p 'expand-math' | filecheck %s

// A square root, floor, |x| or max/min is one instruction on the host (vsqrtps, vroundps, ...): expand-math
// leaves it as it is.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf32>
      %e = math.sqrt %v : f32
      memref.store %e, %y[%i] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       %v = memref.load %x[%i] : memref<?xf32>
// CHECK-NEXT:       %e = math.sqrt %v : f32
// CHECK-NEXT:       memref.store %e, %y[%i] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
