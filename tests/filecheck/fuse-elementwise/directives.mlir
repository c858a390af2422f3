// RUN: tilegrad opt %s -p 'fuse-elementwise{directives="Inline(stage=0, tensor=\"y\"); Inline(stage=1, tensor=\"z\", inlined=False)"}' | filecheck %s

// The directives option, on keep-an-operand-of-a-contraction.mlir's IR, each decision turned the
// other way: y (stage 0), which the pass keeps stored, is inlined into every term of the contraction
// (Inline(stage=0, tensor='y')); z (stage 1), which it inlines, stays stored (inlined=False).

builtin.module {
  func.func @k(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input", tg.dims = "M K"}, %b: memref<?x?xf32> {tg.name = "b", tg.role = "input", tg.dims = "M K"}, %c: memref<?x?xf32> {tg.name = "c", tg.role = "input", tg.dims = "M K"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input", tg.dims = "K N"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "M N"}, %rows: memref<?xf32> {tg.name = "rows", tg.role = "output", tg.dims = "M"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "temp", tg.dims = "M K"}, %z: memref<?x?xf32> {tg.name = "z", tg.role = "temp", tg.dims = "M K"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = memref.dim %a, %c0 : memref<?x?xf32>
    %k = memref.dim %a, %c1 : memref<?x?xf32>
    %n = memref.dim %w, %c1 : memref<?x?xf32>
    tg.compute %y over(%m, %k) {
    ^bb0(%i: index, %j: index):
      %av = memref.load %a[%i, %j] : memref<?x?xf32>
      %bv = memref.load %b[%i, %j] : memref<?x?xf32>
      %cv = memref.load %c[%i, %j] : memref<?x?xf32>
      %p = arith.mulf %av, %bv : f32
      %d = arith.subf %p, %cv : f32
      tg.yield %d : f32
    } : memref<?x?xf32>
    tg.compute %z over(%m, %k) {
    ^bb0(%i: index, %j: index):
      %av = memref.load %a[%i, %j] : memref<?x?xf32>
      %bv = memref.load %b[%i, %j] : memref<?x?xf32>
      %p = arith.mulf %av, %bv : f32
      tg.yield %p : f32
    } : memref<?x?xf32>
    tg.compute %out over(%m, %n) {
    ^bb0(%i: index, %j: index):
      %zero = arith.constant 0.000000e+00 : f32
      %sum = tg.reduce "sum" short over %k from %zero {
      ^bb0(%r: index):
        %yv = memref.load %y[%i, %r] : memref<?x?xf32>
        %wv = memref.load %w[%r, %j] : memref<?x?xf32>
        %t = arith.mulf %yv, %wv : f32
        tg.yield %t : f32
      } : f32 -> f32
      tg.yield %sum : f32
    } : memref<?x?xf32>
    tg.compute %rows over(%m) {
    ^bb0(%i: index):
      %zero = arith.constant 0.000000e+00 : f32
      %sum = tg.reduce "sum" short over %k from %zero {
      ^bb0(%r: index):
        %zv = memref.load %z[%i, %r] : memref<?x?xf32>
        tg.yield %zv : f32
      } : f32 -> f32
      tg.yield %sum : f32
    } : memref<?xf32>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input", tg.dims = "M K"}, %b: memref<?x?xf32> {tg.name = "b", tg.role = "input", tg.dims = "M K"}, %c: memref<?x?xf32> {tg.name = "c", tg.role = "input", tg.dims = "M K"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input", tg.dims = "K N"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "M N"}, %rows: memref<?xf32> {tg.name = "rows", tg.role = "output", tg.dims = "M"}, %z: memref<?x?xf32> {tg.name = "z", tg.role = "temp", tg.dims = "M K"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %m = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %k = memref.dim %a, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %n = memref.dim %w, %c1 : memref<?x?xf32>
// CHECK-NEXT:     tg.compute %z over(%m, %k) {
// CHECK-NEXT:     ^bb0(%i: index, %j: index):
// CHECK-NEXT:       %av = memref.load %a[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       %bv = memref.load %b[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       %p = arith.mulf %av, %bv : f32
// CHECK-NEXT:       tg.yield %p : f32
// CHECK-NEXT:     } : memref<?x?xf32>
// CHECK-NEXT:     tg.compute %out over(%m, %n) {
// CHECK-NEXT:     ^bb0(%i_1: index, %j_1: index):
// CHECK-NEXT:       %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %sum = tg.reduce "sum" short over %k from %zero {
// CHECK-NEXT:       ^bb0(%r: index):
// CHECK-NEXT:         %av_1 = memref.load %a[%i_1, %r] : memref<?x?xf32>
// CHECK-NEXT:         %bv_1 = memref.load %b[%i_1, %r] : memref<?x?xf32>
// CHECK-NEXT:         %cv = memref.load %c[%i_1, %r] : memref<?x?xf32>
// CHECK-NEXT:         %p_1 = arith.mulf %av_1, %bv_1 : f32
// CHECK-NEXT:         %d = arith.subf %p_1, %cv : f32
// CHECK-NEXT:         %wv = memref.load %w[%r, %j_1] : memref<?x?xf32>
// CHECK-NEXT:         %t = arith.mulf %d, %wv : f32
// CHECK-NEXT:         tg.yield %t : f32
// CHECK-NEXT:       } : f32 -> f32
// CHECK-NEXT:       tg.yield %sum : f32
// CHECK-NEXT:     } : memref<?x?xf32>
// CHECK-NEXT:     tg.compute %rows over(%m) {
// CHECK-NEXT:     ^bb0(%i_2: index):
// CHECK-NEXT:       %zero_1 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %sum_1 = tg.reduce "sum" short over %k from %zero_1 {
// CHECK-NEXT:       ^bb0(%r_1: index):
// CHECK-NEXT:         %zv = memref.load %z[%i_2, %r_1] : memref<?x?xf32>
// CHECK-NEXT:         tg.yield %zv : f32
// CHECK-NEXT:       } : f32 -> f32
// CHECK-NEXT:       tg.yield %sum_1 : f32
// CHECK-NEXT:     } : memref<?xf32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
