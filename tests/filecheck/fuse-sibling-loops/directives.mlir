// RUN: tilegrad opt %s -p 'fuse-sibling-loops{directives="ComputeWith(stage=0, nests=(0, 1)); ComputeWith(stage=1, nests=(0, 1), fused=False)"}' | filecheck %s

// The directives option: stages 0 and 1 walk x's rows, stages 2 and 3 w's elements; by itself the pass
// fuses each pair into one stage (ComputeWith(stage=0, nests=(0, 1)) and ComputeWith(stage=1, nests=(0,
// 1)), the stages it would become). The first is named: y and t are written in one nest. The second is
// turned off: u's and v's loops stay two stages (numbered 1 and 2 after the fused one).

builtin.module {
  func.func @pairs(%x: memref<?x?xf32>, %w: memref<?xf32>, %y: memref<?x?xf32>, %t: memref<?x?xf32>,
                   %u: memref<?xf32>, %v: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %k = memref.dim %w, %c0 : memref<?xf32>
    %two = arith.constant 2.000000e+00 : f32
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %a = memref.load %x[%i, %j] : memref<?x?xf32>
        %b = arith.mulf %a, %two : f32
        memref.store %b, %y[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    scf.for %i2 = %c0 to %n step %c1 {
      scf.for %j2 = %c0 to %m step %c1 {
        %a2 = memref.load %x[%i2, %j2] : memref<?x?xf32>
        %b2 = arith.addf %a2, %two : f32
        memref.store %b2, %t[%i2, %j2] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    scf.for %e = %c0 to %k step %c1 {
      %c = memref.load %w[%e] : memref<?xf32>
      %d = arith.mulf %c, %two : f32
      memref.store %d, %u[%e] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 2 : i64}
    scf.for %e2 = %c0 to %k step %c1 {
      %c2 = memref.load %w[%e2] : memref<?xf32>
      %d2 = arith.addf %c2, %two : f32
      memref.store %d2, %v[%e2] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 3 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @pairs(%x: memref<?x?xf32>, %w: memref<?xf32>, %y: memref<?x?xf32>, %t: memref<?x?xf32>, %u: memref<?xf32>, %v: memref<?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %k = memref.dim %w, %c0 : memref<?xf32>
// CHECK-NEXT:     %two = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %m step %c1 {
// CHECK-NEXT:         %a = memref.load %x[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         %b = arith.mulf %a, %two : f32
// CHECK-NEXT:         memref.store %b, %y[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         %a2 = memref.load %x[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:         %b2 = arith.addf %a2, %two : f32
// CHECK-NEXT:         memref.store %b2, %t[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     scf.for %e = %c0 to %k step %c1 {
// CHECK-NEXT:       %c = memref.load %w[%e] : memref<?xf32>
// CHECK-NEXT:       %d = arith.mulf %c, %two : f32
// CHECK-NEXT:       memref.store %d, %u[%e] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     scf.for %e2 = %c0 to %k step %c1 {
// CHECK-NEXT:       %c2 = memref.load %w[%e2] : memref<?xf32>
// CHECK-NEXT:       %d2 = arith.addf %c2, %two : f32
// CHECK-NEXT:       memref.store %d2, %v[%e2] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 2 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
