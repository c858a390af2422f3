// RUN: tilegrad opt %s -p 'chunk-row-sweeps' | filecheck %s

// Both terms read only their own column (x[r, h]): chunked, each pass would read 64 bytes of every row,
// so the IR comes out as it went in.

builtin.module {
  func.func @two_sums(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                      %dy: memref<?x?xf32> {tg.name = "dy", tg.role = "input"}) {
    %beta = memref.alloca() : memref<512xf32>
    %gamma = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %h_end = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %h = %c0 to %h_end step %c1 {
        %b = memref.load %beta[%h] : memref<512xf32>
        %d = memref.load %dy[%r, %h] : memref<?x?xf32>
        %b2 = arith.addf %b, %d : f32
        memref.store %b2, %beta[%h] : memref<512xf32>
        %g = memref.load %gamma[%h] : memref<512xf32>
        %v = memref.load %x[%r, %h] : memref<?x?xf32>
        %p = arith.mulf %d, %v : f32
        %g2 = arith.addf %g, %p : f32
        memref.store %g2, %gamma[%h] : memref<512xf32>
      } {tg.loop = #tg.loop<row, axis = 0>}
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @two_sums(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %dy: memref<?x?xf32> {tg.name = "dy", tg.role = "input"}) {
// CHECK-NEXT:     %beta = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %gamma = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %h_end = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:       scf.for %h = %c0 to %h_end step %c1 {
// CHECK-NEXT:         %b = memref.load %beta[%h] : memref<512xf32>
// CHECK-NEXT:         %d = memref.load %dy[%r, %h] : memref<?x?xf32>
// CHECK-NEXT:         %b2 = arith.addf %b, %d : f32
// CHECK-NEXT:         memref.store %b2, %beta[%h] : memref<512xf32>
// CHECK-NEXT:         %g = memref.load %gamma[%h] : memref<512xf32>
// CHECK-NEXT:         %v = memref.load %x[%r, %h] : memref<?x?xf32>
// CHECK-NEXT:         %p = arith.mulf %d, %v : f32
// CHECK-NEXT:         %g2 = arith.addf %g, %p : f32
// CHECK-NEXT:         memref.store %g2, %gamma[%h] : memref<512xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
