// RUN: tilegrad opt %s -p 'collapse-contiguous-rows' | filecheck %s

// The map's innermost loop stops short of W (at W - 1): the pair does not walk whole planes, so it
// keeps both loops and the IR comes out as it went in.

builtin.module {
  func.func @k(%x: memref<?x?x?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C H W"},
               %y: memref<?x?x?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N C H W"},
               %s: memref<?x?xf32> {tg.name = "s", tg.role = "output", tg.dims = "N C"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %n = memref.dim %x, %c0 : memref<?x?x?x?xf32>
    %c = memref.dim %x, %c1 : memref<?x?x?x?xf32>
    %h = memref.dim %x, %c2 : memref<?x?x?x?xf32>
    %w = memref.dim %x, %c3 : memref<?x?x?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32

    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %c step %c1 {
        scf.for %k = %c0 to %h step %c1 {
          %w1 = arith.subi %w, %c1 : index
          scf.for %l = %c0 to %w1 step %c1 {
            %v = memref.load %x[%i, %j, %k, %l] : memref<?x?x?x?xf32>
            %r = arith.mulf %v, %v : f32
            memref.store %r, %y[%i, %j, %k, %l] : memref<?x?x?x?xf32>
          } {tg.loop = #tg.loop<parallel, axis = 3>}
        } {tg.loop = #tg.loop<parallel, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?x?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C H W"}, %y: memref<?x?x?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N C H W"}, %s: memref<?x?xf32> {tg.name = "s", tg.role = "output", tg.dims = "N C"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?x?x?xf32>
// CHECK-NEXT:     %c = memref.dim %x, %c1 : memref<?x?x?x?xf32>
// CHECK-NEXT:     %h = memref.dim %x, %c2 : memref<?x?x?x?xf32>
// CHECK-NEXT:     %w = memref.dim %x, %c3 : memref<?x?x?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %c step %c1 {
// CHECK-NEXT:         scf.for %k = %c0 to %h step %c1 {
// CHECK-NEXT:           %w1 = arith.subi %w, %c1 : index
// CHECK-NEXT:           scf.for %l = %c0 to %w1 step %c1 {
// CHECK-NEXT:             %v = memref.load %x[%i, %j, %k, %l] : memref<?x?x?x?xf32>
// CHECK-NEXT:             %r = arith.mulf %v, %v : f32
// CHECK-NEXT:             memref.store %r, %y[%i, %j, %k, %l] : memref<?x?x?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 3>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
