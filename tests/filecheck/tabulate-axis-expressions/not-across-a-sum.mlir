// RUN: tilegrad opt %s -p 'tabulate-axis-expressions{elements=64}' | filecheck %s

// The same weight (of the column and the tap only), but the loop around the column loop is a sum's
// (an interchanged column sum adding row k into y): strip-mining the column loop would move its chunk
// loop around the sum's, so the table could only be filled inside it, once per column and tap as the
// weight is computed now: nothing changes.

builtin.module {
  func.func @sum_stage0(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                        %y: memref<?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.000000e+00 : f32
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %n = %c0 to %c1 step %c1 {
      scf.for %k = %c0 to %rows step %c1 {
        scf.for %j = %c0 to %cols step %c1 {
          %sum = scf.for %a = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
            %p = arith.addi %j, %a : index
            %pi = arith.index_cast %p : index to i64
            %pf = arith.sitofp %pi : i64 to f32
            %fl = math.floor %pf : f32
            %w = arith.subf %pf, %fl : f32
            %w2 = arith.mulf %w, %w : f32
            %v = memref.load %x[%k, %j] : memref<?x?xf32>
            %wv = arith.mulf %w2, %v : f32
            %next = arith.addf %acc, %wv : f32
            scf.yield %next : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          %old = memref.load %y[%j] : memref<?xf32>
          %new = arith.addf %old, %sum : f32
          memref.store %new, %y[%j] : memref<?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 0>}
      } {tg.loop = #tg.loop<reduce, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @sum_stage0(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %cols = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %n = %c0 to %c1 step %c1 {
// CHECK-NEXT:       scf.for %k = %c0 to %rows step %c1 {
// CHECK-NEXT:         scf.for %j = %c0 to %cols step %c1 {
// CHECK-NEXT:           %sum = scf.for %a = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:             %p = arith.addi %j, %a : index
// CHECK-NEXT:             %pi = arith.index_cast %p : index to i64
// CHECK-NEXT:             %pf = arith.sitofp %pi : i64 to f32
// CHECK-NEXT:             %fl = math.floor %pf : f32
// CHECK-NEXT:             %w = arith.subf %pf, %fl : f32
// CHECK-NEXT:             %w2 = arith.mulf %w, %w : f32
// CHECK-NEXT:             %v = memref.load %x[%k, %j] : memref<?x?xf32>
// CHECK-NEXT:             %wv = arith.mulf %w2, %v : f32
// CHECK-NEXT:             %next = arith.addf %acc, %wv : f32
// CHECK-NEXT:             scf.yield %next : f32
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           %old = memref.load %y[%j] : memref<?xf32>
// CHECK-NEXT:           %new = arith.addf %old, %sum : f32
// CHECK-NEXT:           memref.store %new, %y[%j] : memref<?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<reduce, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
