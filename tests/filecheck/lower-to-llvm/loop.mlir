// RUN: tilegrad opt %s -p 'lower-to-llvm' | filecheck %s

// y = x + x over a 1-D loop: @k_impl takes each memref as its descriptor's fields (noalias pointers), the
// loop becomes blocks with a counter (nsw), the accesses getelementptr inbounds; @k, the entry the
// runtime calls, unpacks the fields from an array of arguments.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %y[%i] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   llvm.func internal @k_impl(%0: !llvm.ptr {llvm.noalias}, %1: i64, %2: i64, %3: !llvm.ptr {llvm.noalias}, %4: i64, %5: i64) {
// CHECK-NEXT:     %6 = llvm.mlir.constant(0) : i64
// CHECK-NEXT:     %7 = llvm.mlir.constant(1) : i64
// CHECK-NEXT:     llvm.br ^bb1(%6 : i64)
// CHECK-NEXT:   ^bb1(%8: i64):
// CHECK-NEXT:     %9 = llvm.icmp "slt" %8, %1 : i64
// CHECK-NEXT:     llvm.cond_br %9, ^bb2, ^bb3
// CHECK-NEXT:   ^bb2:
// CHECK-NEXT:     %10 = llvm.getelementptr inbounds %0[%8] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:     %11 = llvm.load %10 : !llvm.ptr -> f32
// CHECK-NEXT:     %12 = llvm.fadd %11, %11 : f32
// CHECK-NEXT:     %13 = llvm.getelementptr inbounds %3[%8] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:     llvm.store %12, %13 : f32, !llvm.ptr
// CHECK-NEXT:     %14 = llvm.add %8, %7 overflow<nsw> : i64
// CHECK-NEXT:     llvm.br ^bb1(%14 : i64)
// CHECK-NEXT:   ^bb3:
// CHECK-NEXT:     llvm.return
// CHECK-NEXT:   }
// CHECK-NEXT:   llvm.func @k(%15: !llvm.ptr, %16: i64, %17: !llvm.ptr) {
// CHECK-NEXT:     %18 = llvm.getelementptr %15[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %19 = llvm.load %18 : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %20 = llvm.getelementptr %15[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %21 = llvm.load %20 : !llvm.ptr -> i64
// CHECK-NEXT:     %22 = llvm.getelementptr %15[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %23 = llvm.load %22 : !llvm.ptr -> i64
// CHECK-NEXT:     %24 = llvm.getelementptr %15[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %25 = llvm.load %24 : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %26 = llvm.getelementptr %15[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %27 = llvm.load %26 : !llvm.ptr -> i64
// CHECK-NEXT:     %28 = llvm.getelementptr %15[5] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %29 = llvm.load %28 : !llvm.ptr -> i64
// CHECK-NEXT:     llvm.call @k_impl(%19, %21, %23, %25, %27, %29) : (!llvm.ptr, i64, i64, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:     llvm.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
