// RUN: tilegrad opt %s -p 'distribute-row-nests' | filecheck %s

// Not distributed: the same row chain, but its first nest also adds into a total every row writes
// (tot[0], not indexed by the row): distributed, a row's contraction would read that total before
// the later rows of its tile added to it. And a row loop whose only nest is the contraction has
// nothing to distribute. Both are left as they are.

builtin.module {
  func.func @chain_stage0(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"},
                          %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"},
                          %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"},
                          %tot: memref<?xf32> {tg.name = "tot", tg.role = "temp"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %a, %c0 : memref<?x?xf32>
    %n_end = memref.dim %a, %c1 : memref<?x?xf32>
    %p_end = memref.dim %d, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %n = %c0 to %n_end step %c1 {
        %x = memref.load %a[%i, %n] : memref<?x?xf32>
        %old = memref.load %tot[%c0] : memref<?xf32>
        %new = arith.addf %old, %x : f32
        memref.store %new, %tot[%c0] : memref<?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
      scf.for %j = %c0 to %p_end step %c1 {
        %zero = arith.constant 0.000000e+00 : f32
        %dot = scf.for %n_2 = %c0 to %n_end step %c1 iter_args(%acc = %zero) -> (f32) {
          %x_2 = memref.load %a[%i, %n_2] : memref<?x?xf32>
          %t = memref.load %tot[%c0] : memref<?xf32>
          %dv = memref.load %d[%n_2, %j] : memref<?x?xf32>
          %u = arith.mulf %x_2, %t : f32
          %ud = arith.mulf %u, %dv : f32
          %sum = arith.addf %acc, %ud : f32
          scf.yield %sum : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %dot, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
  func.func @chain_stage1(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"},
                          %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"},
                          %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %a, %c0 : memref<?x?xf32>
    %n_end = memref.dim %a, %c1 : memref<?x?xf32>
    %p_end = memref.dim %d, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %p_end step %c1 {
        %zero = arith.constant 0.000000e+00 : f32
        %dot = scf.for %n_2 = %c0 to %n_end step %c1 iter_args(%acc = %zero) -> (f32) {
          %x_2 = memref.load %a[%i, %n_2] : memref<?x?xf32>
          %dv = memref.load %d[%n_2, %j] : memref<?x?xf32>
          %ud = arith.mulf %x_2, %dv : f32
          %sum = arith.addf %acc, %ud : f32
          scf.yield %sum : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %dot, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @chain_stage0(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"}, %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}, %tot: memref<?xf32> {tg.name = "tot", tg.role = "temp"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %n_end = memref.dim %a, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %p_end = memref.dim %d, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %i = %c0 to %rows step %c1 {
// CHECK-NEXT:       scf.for %n = %c0 to %n_end step %c1 {
// CHECK-NEXT:         %x = memref.load %a[%i, %n] : memref<?x?xf32>
// CHECK-NEXT:         %old = memref.load %tot[%c0] : memref<?xf32>
// CHECK-NEXT:         %new = arith.addf %old, %x : f32
// CHECK-NEXT:         memref.store %new, %tot[%c0] : memref<?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       scf.for %j = %c0 to %p_end step %c1 {
// CHECK-NEXT:         %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %dot = scf.for %n_1 = %c0 to %n_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %x_1 = memref.load %a[%i, %n_1] : memref<?x?xf32>
// CHECK-NEXT:           %t = memref.load %tot[%c0] : memref<?xf32>
// CHECK-NEXT:           %dv = memref.load %d[%n_1, %j] : memref<?x?xf32>
// CHECK-NEXT:           %u = arith.mulf %x_1, %t : f32
// CHECK-NEXT:           %ud = arith.mulf %u, %dv : f32
// CHECK-NEXT:           %sum = arith.addf %acc, %ud : f32
// CHECK-NEXT:           scf.yield %sum : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %dot, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @chain_stage1(%a: memref<?x?xf32> {tg.name = "a", tg.role = "input"}, %d: memref<?x?xf32> {tg.name = "d", tg.role = "input"}, %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %rows = memref.dim %a, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %n_end = memref.dim %a, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %p_end = memref.dim %d, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %i = %c0 to %rows step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %p_end step %c1 {
// CHECK-NEXT:         %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:         %dot = scf.for %n = %c0 to %n_end step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:           %x = memref.load %a[%i, %n] : memref<?x?xf32>
// CHECK-NEXT:           %dv = memref.load %d[%n, %j] : memref<?x?xf32>
// CHECK-NEXT:           %ud = arith.mulf %x, %dv : f32
// CHECK-NEXT:           %sum = arith.addf %acc, %ud : f32
// CHECK-NEXT:           scf.yield %sum : f32
// CHECK-NEXT:         } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:         memref.store %dot, %out[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
