// RUN: tilegrad opt %s -p 'split-column-reductions{num_blocks=2}' | filecheck %s

// The column sum alone, with no row stage over the same rows beside it: the IR comes out as it went in.

builtin.module {
  func.func @row_and_column(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                            %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"},
                            %col: memref<?xf32> {tg.name = "col", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %d = %c0 to %m step %c1 {
      %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
        %u = memref.load %x[%r, %d] : memref<?x?xf32>
        %a = arith.addf %acc, %u : f32
        scf.yield %a : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s, %col[%d] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @row_and_column(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}, %col: memref<?xf32> {tg.name = "col", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %d = %c0 to %m step %c1 {
// CHECK-NEXT:       %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:         %u = memref.load %x[%r, %d] : memref<?x?xf32>
// CHECK-NEXT:         %a = arith.addf %acc, %u : f32
// CHECK-NEXT:         scf.yield %a : f32
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       memref.store %s, %col[%d] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
