// RUN: tilegrad opt %s -p 'fuse-sibling-loops' | filecheck %s

// The same stages without exchange_loops: their outer loops (1 and N) differ, so nothing fuses and the
// IR comes out as it went in.

builtin.module {
  func.func @channels(%x: memref<?x?x?xf32>, %s: memref<1x?xf32>, %dx: memref<?x?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %x, %c0 : memref<?x?x?xf32>
    %ch = memref.dim %x, %c1 : memref<?x?x?xf32>
    %hw = memref.dim %x, %c2 : memref<?x?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %u = %c0 to %c1 step %c1 {
      scf.for %c = %c0 to %ch step %c1 {
        %t = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
          %row = scf.for %k = %c0 to %hw step %c1 iter_args(%acc2 = %acc) -> (f32) {
            %v = memref.load %x[%r, %c, %k] : memref<?x?x?xf32>
            %a = arith.addf %acc2, %v : f32
            scf.yield %a : f32
          } {tg.loop = #tg.loop<reduce, axis = 1>}
          scf.yield %row : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %t, %s[%u, %c] : memref<1x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %ch step %c1 {
        scf.for %k2 = %c0 to %hw step %c1 {
          %w = memref.load %x[%i, %j, %k2] : memref<?x?x?xf32>
          %m = memref.load %s[%c0, %j] : memref<1x?xf32>
          %p = arith.mulf %w, %m : f32
          memref.store %p, %dx[%i, %j, %k2] : memref<?x?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @channels(%x: memref<?x?x?xf32>, %s: memref<1x?xf32>, %dx: memref<?x?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?x?xf32>
// CHECK-NEXT:     %ch = memref.dim %x, %c1 : memref<?x?x?xf32>
// CHECK-NEXT:     %hw = memref.dim %x, %c2 : memref<?x?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %u = %c0 to %c1 step %c1 {
// CHECK-NEXT:       scf.for %c = %c0 to %ch step %c1 {
// CHECK-NEXT:         %t = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %row = scf.for %k = %c0 to %hw step %c1 iter_args(%acc2 = %acc) -> (f32) {
// CHECK-NEXT:             %v = memref.load %x[%r, %c, %k] : memref<?x?x?xf32>
// CHECK-NEXT:             %a = arith.addf %acc2, %v : f32
// CHECK-NEXT:             scf.yield %a : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 1>}
// CHECK-NEXT:           scf.yield %row : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %t, %s[%u, %c] : memref<1x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %ch step %c1 {
// CHECK-NEXT:         scf.for %k2 = %c0 to %hw step %c1 {
// CHECK-NEXT:           %w = memref.load %x[%i, %j, %k2] : memref<?x?x?xf32>
// CHECK-NEXT:           %m = memref.load %s[%c0, %j] : memref<1x?xf32>
// CHECK-NEXT:           %p = arith.mulf %w, %m : f32
// CHECK-NEXT:           memref.store %p, %dx[%i, %j, %k2] : memref<?x?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 2>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
