// RUN: tilegrad opt %s -p 'partition-clamped-loops' | filecheck %s

// y[o] = x[o] where the fast version's test holds, else the stage as written: y[o] = x[clamp(o + j - 1)]
// over a window j, in a version marked tg.cold. Its clamps would make o a window loop and j an
// innermost loop to partition; cold, both are left as they are (the fast version has no clamp).

builtin.module {
  func.func @cold(%x: memref<?xf32>, %y: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %d = memref.dim %x, %c0 : memref<?xf32>
    %n = memref.dim %y, %c0 : memref<?xf32>
    %last = arith.subi %d, %c1 : index
    %fits = arith.cmpi sle, %n, %d : index
    scf.for %o = %c0 to %n step %c1 {
      scf.if %fits {
        %v = memref.load %x[%o] : memref<?xf32>
        memref.store %v, %y[%o] : memref<?xf32>
      } else {
        scf.for %j = %c0 to %c3 step %c1 {
          %at = arith.addi %o, %j : index
          %left = arith.subi %at, %c1 : index
          %low = arith.maxsi %left, %c0 : index
          %safe = arith.minsi %low, %last : index
          %w = memref.load %x[%safe] : memref<?xf32>
          memref.store %w, %y[%o] : memref<?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>, tg.cold}
      }
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @cold(%x: memref<?xf32>, %y: memref<?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %d = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     %n = memref.dim %y, %c0 : memref<?xf32>
// CHECK-NEXT:     %last = arith.subi %d, %c1 : index
// CHECK-NEXT:     %fits = arith.cmpi sle, %n, %d : index
// CHECK-NEXT:     scf.for %o = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.if %fits {
// CHECK-NEXT:         %v = memref.load %x[%o] : memref<?xf32>
// CHECK-NEXT:         memref.store %v, %y[%o] : memref<?xf32>
// CHECK-NEXT:       } else {
// CHECK-NEXT:         scf.for %j = %c0 to %c3 step %c1 {
// CHECK-NEXT:           %at = arith.addi %o, %j : index
// CHECK-NEXT:           %left = arith.subi %at, %c1 : index
// CHECK-NEXT:           %low = arith.maxsi %left, %c0 : index
// CHECK-NEXT:           %safe = arith.minsi %low, %last : index
// CHECK-NEXT:           %w = memref.load %x[%safe] : memref<?xf32>
// CHECK-NEXT:           memref.store %w, %y[%o] : memref<?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>, tg.cold}
// CHECK-NEXT:       }
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
