// RUN: tilegrad opt %s -p 'unswitch-invariant-selects{directives="Specialize(stage=0, axis=1, condition=\"une(flag[i0], 0.0)\"); Specialize(stage=0, axis=1, condition=\"une(mask[i0], 0.0)\", versioned=False)"}' | filecheck %s

// The directives option: two column loops, each with a select on a row flag (the pass would version
// both). The one Specialize names by its test on flag runs in two copies chosen by it; the one on mask,
// which versioned=False turns off, stays one loop with its select.

builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
               %flag: memref<?xf32> {tg.name = "flag", tg.role = "temp"},
               %mask: memref<?xf32> {tg.name = "mask", tg.role = "temp"},
               %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"},
               %z: memref<?x?xf32> {tg.name = "z", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %f = memref.load %flag[%r] : memref<?xf32>
        %bad = arith.cmpf une, %f, %zero : f32
        %v = memref.load %x[%r, %j] : memref<?x?xf32>
        %a = arith.mulf %v, %v : f32
        %b = arith.mulf %a, %v : f32
        %c = arith.addf %b, %a : f32
        %picked = arith.select %bad, %c, %v : f32
        memref.store %picked, %y[%r, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
      scf.for %j2 = %c0 to %cols step %c1 {
        %m = memref.load %mask[%r] : memref<?xf32>
        %odd = arith.cmpf une, %m, %zero : f32
        %w = memref.load %x[%r, %j2] : memref<?x?xf32>
        %p = arith.mulf %w, %w : f32
        %q = arith.mulf %p, %w : f32
        %s = arith.addf %q, %p : f32
        %chosen = arith.select %odd, %s, %w : f32
        memref.store %chosen, %z[%r, %j2] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %flag: memref<?xf32> {tg.name = "flag", tg.role = "temp"}, %mask: memref<?xf32> {tg.name = "mask", tg.role = "temp"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}, %z: memref<?x?xf32> {tg.name = "z", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %cols = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:       %0 = arith.cmpi slt, %c0, %cols : index
// CHECK-NEXT:       scf.if %0 {
// CHECK-NEXT:         %f = memref.load %flag[%r] : memref<?xf32>
// CHECK-NEXT:         %bad = arith.cmpf une, %f, %zero : f32
// CHECK-NEXT:         scf.if %bad {
// CHECK-NEXT:           scf.for %j = %c0 to %cols step %c1 {
// CHECK-NEXT:             %v = memref.load %x[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:             %a = arith.mulf %v, %v : f32
// CHECK-NEXT:             %b = arith.mulf %a, %v : f32
// CHECK-NEXT:             %c = arith.addf %b, %a : f32
// CHECK-NEXT:             memref.store %c, %y[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:         } else {
// CHECK-NEXT:           scf.for %j_1 = %c0 to %cols step %c1 {
// CHECK-NEXT:             %v_1 = memref.load %x[%r, %j_1] : memref<?x?xf32>
// CHECK-NEXT:             memref.store %v_1, %y[%r, %j_1] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.for %j2 = %c0 to %cols step %c1 {
// CHECK-NEXT:         %m = memref.load %mask[%r] : memref<?xf32>
// CHECK-NEXT:         %odd = arith.cmpf une, %m, %zero : f32
// CHECK-NEXT:         %w = memref.load %x[%r, %j2] : memref<?x?xf32>
// CHECK-NEXT:         %p = arith.mulf %w, %w : f32
// CHECK-NEXT:         %q = arith.mulf %p, %w : f32
// CHECK-NEXT:         %s = arith.addf %q, %p : f32
// CHECK-NEXT:         %chosen = arith.select %odd, %s, %w : f32
// CHECK-NEXT:         memref.store %chosen, %z[%r, %j2] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
