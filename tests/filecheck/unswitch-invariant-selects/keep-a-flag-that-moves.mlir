// RUN: tilegrad opt %s -p 'unswitch-invariant-selects' | filecheck %s

// The flag is read at the column (flag[j]): it changes with the loop, so the IR comes out as it went in.

builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
               %flag: memref<?xf32> {tg.name = "flag", tg.role = "temp"},
               %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %f = memref.load %flag[%j] : memref<?xf32>
        %zero = arith.constant 0.000000e+00 : f32
        %bad = arith.cmpf une, %f, %zero : f32
        %v = memref.load %x[%r, %j] : memref<?x?xf32>
        %a = arith.mulf %v, %v : f32
        %b = arith.mulf %a, %v : f32
        %c = arith.addf %b, %a : f32
        %d = arith.mulf %c, %c : f32
        %e = arith.subf %d, %v : f32
        %picked = arith.select %bad, %e, %v : f32
        memref.store %picked, %y[%r, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %flag: memref<?xf32> {tg.name = "flag", tg.role = "temp"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %cols = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %cols step %c1 {
// CHECK-NEXT:         %f = memref.load %flag[%j] : memref<?xf32>
// CHECK-NEXT:         %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %bad = arith.cmpf une, %f, %zero : f32
// CHECK-NEXT:         %v = memref.load %x[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:         %a = arith.mulf %v, %v : f32
// CHECK-NEXT:         %b = arith.mulf %a, %v : f32
// CHECK-NEXT:         %c = arith.addf %b, %a : f32
// CHECK-NEXT:         %d = arith.mulf %c, %c : f32
// CHECK-NEXT:         %e = arith.subf %d, %v : f32
// CHECK-NEXT:         %picked = arith.select %bad, %e, %v : f32
// CHECK-NEXT:         memref.store %picked, %y[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
