// RUN: tilegrad opt %s -p 'collapse-contiguous-rows' | filecheck %s

// s[n, c] = the sum of x over each H x W plane: the two nested sums become one sum over the plane's
// H*W elements of a row view.

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
        %t = scf.for %k = %c0 to %h step %c1 iter_args(%acc = %zero) -> (f32) {
          %z = arith.constant 0.000000e+00 : f32
          %row = scf.for %l = %c0 to %w step %c1 iter_args(%racc = %z) -> (f32) {
            %v = memref.load %x[%i, %j, %k, %l] : memref<?x?x?x?xf32>
            %a = arith.addf %racc, %v fastmath<reassoc> : f32
            scf.yield %a : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          %b = arith.addf %acc, %row fastmath<reassoc> : f32
          scf.yield %b : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %t, %s[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?x?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C H W"}, %y: memref<?x?x?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N C H W"}, %s: memref<?x?xf32> {tg.name = "s", tg.role = "output", tg.dims = "N C"}) {
// CHECK-NEXT:     %x_rows = memref.collapse_shape %x {{\[\[}}0 : i64], [1 : i64], [2 : i64, 3 : i64]] : memref<?x?x?x?xf32> into memref<?x?x?xf32>
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
// CHECK-NEXT:         %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %0 = arith.muli %h, %w : index
// CHECK-NEXT:         %t = scf.for %i_1 = %c0 to %0 step %c1 iter_args(%racc = %zero) -> (f32) {
// CHECK-NEXT:           %v = memref.load %x_rows[%i, %j, %i_1] : memref<?x?x?xf32>
// CHECK-NEXT:           %a = arith.addf %racc, %v fastmath<reassoc> : f32
// CHECK-NEXT:           scf.yield %a : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %t, %s[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
