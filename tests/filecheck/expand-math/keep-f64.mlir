// RUN: tilegrad opt %s -p 'expand-math' | filecheck %s

// A float64 exp keeps libm (math.exp): the IR comes out as it went in.

builtin.module {
  func.func @k(%x: memref<?xf64> {tg.name = "x", tg.role = "input"}, %y: memref<?xf64> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf64>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf64>
      %e = math.exp %v : f64
      memref.store %e, %y[%i] : memref<?xf64>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?xf64> {tg.name = "x", tg.role = "input"}, %y: memref<?xf64> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?xf64>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       %v = memref.load %x[%i] : memref<?xf64>
// CHECK-NEXT:       %e = math.exp %v : f64
// CHECK-NEXT:       memref.store %e, %y[%i] : memref<?xf64>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
