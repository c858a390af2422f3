// RUN: tilegrad opt %s -p 'jam-row-sweeps' | filecheck %s

// The row's sums read w[i, h], data of its own row: no sweep the rows share, so the IR comes out as it
// went in.

builtin.module {
  func.func @g_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"},
                       %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %acc = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %g, %c0 : memref<?x?xf32>
    %v_end = memref.dim %w, %c0 : memref<?x?xf32>
    %h_end = memref.dim %w, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %h = %c0 to %h_end step %c1 {
        memref.store %zero, %acc[%h] : memref<512xf32>
      } {tg.loop = #tg.loop<row, axis = 0>}
      scf.for %v = %c0 to %v_end step %c1 {
        scf.for %h = %c0 to %h_end step %c1 {
          %a = memref.load %acc[%h] : memref<512xf32>
          %x = memref.load %g[%i, %v] : memref<?x?xf32>
          %y = memref.load %w[%i, %h] : memref<?x?xf32>
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %a, %p fastmath<reassoc> : f32
          memref.store %s, %acc[%h] : memref<512xf32>
        } {tg.loop = #tg.loop<row, axis = 0>}
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      scf.for %h = %c0 to %h_end step %c1 {
        %a = memref.load %acc[%h] : memref<512xf32>
        memref.store %a, %out[%i, %h] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @g_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
// CHECK-NEXT:     %acc = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %g, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %v_end = memref.dim %w, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %h_end = memref.dim %w, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     scf.for %i = %c0 to %rows step %c1 {
// CHECK-NEXT:       scf.for %h = %c0 to %h_end step %c1 {
// CHECK-NEXT:         memref.store %zero, %acc[%h] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:       scf.for %v = %c0 to %v_end step %c1 {
// CHECK-NEXT:         scf.for %h_1 = %c0 to %h_end step %c1 {
// CHECK-NEXT:           %a = memref.load %acc[%h_1] : memref<512xf32>
// CHECK-NEXT:           %x = memref.load %g[%i, %v] : memref<?x?xf32>
// CHECK-NEXT:           %y = memref.load %w[%i, %h_1] : memref<?x?xf32>
// CHECK-NEXT:           %p = arith.mulf %x, %y : f32
// CHECK-NEXT:           %s = arith.addf %a, %p fastmath<reassoc> : f32
// CHECK-NEXT:           memref.store %s, %acc[%h_1] : memref<512xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:       scf.for %h_2 = %c0 to %h_end step %c1 {
// CHECK-NEXT:         %a_1 = memref.load %acc[%h_2] : memref<512xf32>
// CHECK-NEXT:         memref.store %a_1, %out[%i, %h_2] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
