// RUN: tilegrad opt %s -p 'outline-sibling-nests{stage_ops=1000 nest_ops=6 directives="Outline(stage=0)"}' | filecheck %s

// The directives option: the stage of keep-a-small-stage.mlir, under the same budget of 1000 ops it
// stays under, is outlined all the same because Outline names it: the second nest moves to a
// function of its own (as planes.mlir does with a budget of 10).
builtin.module {
  func.func @k(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "P H W"},
               %t: memref<?x?x?xf32> {tg.name = "t", tg.role = "temp", tg.dims = "P H W"},
               %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "P H W"},
               %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %two = arith.constant 2.000000e+00 : f32
    %np = memref.dim %x, %c0 : memref<?x?x?xf32>
    %nh = memref.dim %x, %c1 : memref<?x?x?xf32>
    %nw = memref.dim %x, %c2 : memref<?x?x?xf32>
    scf.for %p = %c0 to %np step %c1 {
      %q = arith.addi %p, %c0 : index
      scf.for %h = %c0 to %nh step %c1 {
        scf.for %w = %c0 to %nw step %c1 {
          %v = memref.load %x[%p, %h, %w] : memref<?x?x?xf32>
          %d = arith.mulf %v, %two : f32
          memref.store %d, %t[%p, %h, %w] : memref<?x?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
      scf.for %h2 = %c0 to %nh step %c1 {
        scf.for %w2 = %c0 to %nw step %c1 {
          %u = memref.load %t[%p, %h2, %w2] : memref<?x?x?xf32>
          %e = arith.addf %u, %two : f32
          %f = arith.mulf %e, %e : f32
          memref.store %f, %y[%q, %h2, %w2] : memref<?x?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "P H W"}, %t: memref<?x?x?xf32> {tg.name = "t", tg.role = "temp", tg.dims = "P H W"}, %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "P H W"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %two = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:     %np = memref.dim %x, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %nh = memref.dim %x, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %nw = memref.dim %x, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     func.call @k_nest0(%np, %nh, %nw, %x, %t, %status) : (index, index, index, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<8xi64>) -> ()
// CHECK-NEXT:     scf.for %p = %c0 to %np step %c1 {
// CHECK-NEXT:       %q = arith.addi %p, %c0 : index
// CHECK-NEXT:       scf.for %h2 = %c0 to %nh step %c1 {
// CHECK-NEXT:         scf.for %w2 = %c0 to %nw step %c1 {
// CHECK-NEXT:           %u = memref.load %t[%p, %h2, %w2] : memref<?x?x?xf32>
// CHECK-NEXT:           %e = arith.addf %u, %two : f32
// CHECK-NEXT:           %f = arith.mulf %e, %e : f32
// CHECK-NEXT:           memref.store %f, %y[%q, %h2, %w2] : memref<?x?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func private @k_nest0(%np: index, %nh: index, %nw: index, %x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "P H W"}, %t: memref<?x?x?xf32> {tg.name = "t", tg.role = "temp", tg.dims = "P H W"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %two = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:     scf.for %p = %c0 to %np step %c1 {
// CHECK-NEXT:       scf.for %h = %c0 to %nh step %c1 {
// CHECK-NEXT:         scf.for %w = %c0 to %nw step %c1 {
// CHECK-NEXT:           %v = memref.load %x[%p, %h, %w] : memref<?x?x?xf32>
// CHECK-NEXT:           %d = arith.mulf %v, %two : f32
// CHECK-NEXT:           memref.store %d, %t[%p, %h, %w] : memref<?x?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
