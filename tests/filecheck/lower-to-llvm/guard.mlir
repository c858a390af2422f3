// RUN: tilegrad opt %s -p 'lower-to-llvm{guard=true}' | filecheck %s

// The same loop in the guard build: each argument's stride is checked against its type, each load and
// store's index against its tensor's extent, and the counter against overflow; no poison-making flags
// (nsw, inbounds). A failed check stores its code and values in the status buffer (unless an earlier one
// did) and returns; the codes' messages are a module attribute.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
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

// CHECK:      builtin.module attributes {tg.guard_messages = {"1048576" = "guard: stage k: argument 'x' is passed with stride {value} on axis {axis}, but its type states {limit}", "1048577" = "guard: stage k: argument 'y' is passed with stride {value} on axis {axis}, but its type states {limit}", "1048578" = "guard: stage k: argument 'status' is passed with stride {value} on axis {axis}, but its type states {limit}", "1048579" = "guard: stage k: load of x", "1048580" = "guard: stage k: store of y"}} {
// CHECK-NEXT:   llvm.func internal @k_impl(%0: !llvm.ptr {llvm.noalias}, %1: i64, %2: i64, %3: !llvm.ptr {llvm.noalias}, %4: i64, %5: i64, %6: !llvm.ptr {llvm.noalias}, %7: i64, %8: i64) {
// CHECK-NEXT:     %9 = llvm.mlir.constant(1048580) : i64
// CHECK-NEXT:     %10 = llvm.mlir.constant(1048579) : i64
// CHECK-NEXT:     %11 = llvm.mlir.constant(1048578) : i64
// CHECK-NEXT:     %12 = llvm.mlir.constant(1048577) : i64
// CHECK-NEXT:     %13 = llvm.mlir.constant(1048576) : i64
// CHECK-NEXT:     %14 = llvm.mlir.constant(0) : i64
// CHECK-NEXT:     %15 = llvm.mlir.constant(true) : i1
// CHECK-NEXT:     %16 = llvm.mlir.constant(1) : i64
// CHECK-NEXT:     %17 = llvm.icmp "ugt" %1, %16 : i64
// CHECK-NEXT:     %18 = llvm.icmp "ne" %1, %14 : i64
// CHECK-NEXT:     %19 = llvm.and %15, %18 : i1
// CHECK-NEXT:     %20 = llvm.and %17, %19 : i1
// CHECK-NEXT:     %21 = llvm.icmp "ne" %2, %16 : i64
// CHECK-NEXT:     %22 = llvm.and %20, %21 : i1
// CHECK-NEXT:     %23 = llvm.select %22, %14, %14 : i1, i64
// CHECK-NEXT:     %24 = llvm.select %22, %2, %14 : i1, i64
// CHECK-NEXT:     %25 = llvm.select %22, %16, %14 : i1, i64
// CHECK-NEXT:     %26 = llvm.xor %22, %15 : i1
// CHECK-NEXT:     %27 = llvm.and %15, %26 : i1
// CHECK-NEXT:     llvm.cond_br %27, ^bb3, ^bb1
// CHECK-NEXT:   ^bb1:
// CHECK-NEXT:     %28 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %29 = llvm.icmp "eq" %28, %14 : i64
// CHECK-NEXT:     llvm.cond_br %29, ^bb2, ^bb4
// CHECK-NEXT:   ^bb2:
// CHECK-NEXT:     %30 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %13, %30 : i64, !llvm.ptr
// CHECK-NEXT:     %31 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %23, %31 : i64, !llvm.ptr
// CHECK-NEXT:     %32 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %24, %32 : i64, !llvm.ptr
// CHECK-NEXT:     %33 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %25, %33 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb3:
// CHECK-NEXT:     %34 = llvm.icmp "ugt" %4, %16 : i64
// CHECK-NEXT:     %35 = llvm.icmp "ne" %4, %14 : i64
// CHECK-NEXT:     %36 = llvm.and %15, %35 : i1
// CHECK-NEXT:     %37 = llvm.and %34, %36 : i1
// CHECK-NEXT:     %38 = llvm.icmp "ne" %5, %16 : i64
// CHECK-NEXT:     %39 = llvm.and %37, %38 : i1
// CHECK-NEXT:     %40 = llvm.select %39, %14, %14 : i1, i64
// CHECK-NEXT:     %41 = llvm.select %39, %5, %14 : i1, i64
// CHECK-NEXT:     %42 = llvm.select %39, %16, %14 : i1, i64
// CHECK-NEXT:     %43 = llvm.xor %39, %15 : i1
// CHECK-NEXT:     %44 = llvm.and %15, %43 : i1
// CHECK-NEXT:     llvm.cond_br %44, ^bb7, ^bb5
// CHECK-NEXT:   ^bb4:
// CHECK-NEXT:     llvm.return
// CHECK-NEXT:   ^bb5:
// CHECK-NEXT:     %45 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %46 = llvm.icmp "eq" %45, %14 : i64
// CHECK-NEXT:     llvm.cond_br %46, ^bb6, ^bb4
// CHECK-NEXT:   ^bb6:
// CHECK-NEXT:     %47 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %12, %47 : i64, !llvm.ptr
// CHECK-NEXT:     %48 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %40, %48 : i64, !llvm.ptr
// CHECK-NEXT:     %49 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %41, %49 : i64, !llvm.ptr
// CHECK-NEXT:     %50 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %42, %50 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb7:
// CHECK-NEXT:     %51 = llvm.icmp "ugt" %7, %16 : i64
// CHECK-NEXT:     %52 = llvm.icmp "ne" %7, %14 : i64
// CHECK-NEXT:     %53 = llvm.and %15, %52 : i1
// CHECK-NEXT:     %54 = llvm.and %51, %53 : i1
// CHECK-NEXT:     %55 = llvm.icmp "ne" %8, %16 : i64
// CHECK-NEXT:     %56 = llvm.and %54, %55 : i1
// CHECK-NEXT:     %57 = llvm.select %56, %14, %14 : i1, i64
// CHECK-NEXT:     %58 = llvm.select %56, %8, %14 : i1, i64
// CHECK-NEXT:     %59 = llvm.select %56, %16, %14 : i1, i64
// CHECK-NEXT:     %60 = llvm.xor %56, %15 : i1
// CHECK-NEXT:     %61 = llvm.and %15, %60 : i1
// CHECK-NEXT:     llvm.cond_br %61, ^bb10, ^bb8
// CHECK-NEXT:   ^bb8:
// CHECK-NEXT:     %62 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %63 = llvm.icmp "eq" %62, %14 : i64
// CHECK-NEXT:     llvm.cond_br %63, ^bb9, ^bb4
// CHECK-NEXT:   ^bb9:
// CHECK-NEXT:     %64 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %11, %64 : i64, !llvm.ptr
// CHECK-NEXT:     %65 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %57, %65 : i64, !llvm.ptr
// CHECK-NEXT:     %66 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %58, %66 : i64, !llvm.ptr
// CHECK-NEXT:     %67 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %59, %67 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb10:
// CHECK-NEXT:     llvm.br ^bb11(%14 : i64)
// CHECK-NEXT:   ^bb11(%68: i64):
// CHECK-NEXT:     %69 = llvm.icmp "slt" %68, %1 : i64
// CHECK-NEXT:     llvm.cond_br %69, ^bb12, ^bb13
// CHECK-NEXT:   ^bb12:
// CHECK-NEXT:     %70 = llvm.icmp "ult" %68, %1 : i64
// CHECK-NEXT:     %71 = llvm.xor %70, %15 : i1
// CHECK-NEXT:     %72 = llvm.select %71, %14, %14 : i1, i64
// CHECK-NEXT:     %73 = llvm.select %71, %68, %14 : i1, i64
// CHECK-NEXT:     %74 = llvm.select %71, %1, %14 : i1, i64
// CHECK-NEXT:     %75 = llvm.xor %71, %15 : i1
// CHECK-NEXT:     %76 = llvm.and %15, %75 : i1
// CHECK-NEXT:     llvm.cond_br %76, ^bb16, ^bb14
// CHECK-NEXT:   ^bb13:
// CHECK-NEXT:     llvm.return
// CHECK-NEXT:   ^bb14:
// CHECK-NEXT:     %77 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %78 = llvm.icmp "eq" %77, %14 : i64
// CHECK-NEXT:     llvm.cond_br %78, ^bb15, ^bb4
// CHECK-NEXT:   ^bb15:
// CHECK-NEXT:     %79 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %10, %79 : i64, !llvm.ptr
// CHECK-NEXT:     %80 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %72, %80 : i64, !llvm.ptr
// CHECK-NEXT:     %81 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %73, %81 : i64, !llvm.ptr
// CHECK-NEXT:     %82 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %74, %82 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb16:
// CHECK-NEXT:     %83 = llvm.getelementptr %0[%68] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:     %84 = llvm.load %83 : !llvm.ptr -> f32
// CHECK-NEXT:     %85 = llvm.fadd %84, %84 : f32
// CHECK-NEXT:     %86 = llvm.icmp "ult" %68, %4 : i64
// CHECK-NEXT:     %87 = llvm.xor %86, %15 : i1
// CHECK-NEXT:     %88 = llvm.select %87, %14, %14 : i1, i64
// CHECK-NEXT:     %89 = llvm.select %87, %68, %14 : i1, i64
// CHECK-NEXT:     %90 = llvm.select %87, %4, %14 : i1, i64
// CHECK-NEXT:     %91 = llvm.xor %87, %15 : i1
// CHECK-NEXT:     %92 = llvm.and %15, %91 : i1
// CHECK-NEXT:     llvm.cond_br %92, ^bb19, ^bb17
// CHECK-NEXT:   ^bb17:
// CHECK-NEXT:     %93 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %94 = llvm.icmp "eq" %93, %14 : i64
// CHECK-NEXT:     llvm.cond_br %94, ^bb18, ^bb4
// CHECK-NEXT:   ^bb18:
// CHECK-NEXT:     %95 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %9, %95 : i64, !llvm.ptr
// CHECK-NEXT:     %96 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %88, %96 : i64, !llvm.ptr
// CHECK-NEXT:     %97 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %89, %97 : i64, !llvm.ptr
// CHECK-NEXT:     %98 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %90, %98 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb19:
// CHECK-NEXT:     %99 = llvm.getelementptr %3[%68] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:     llvm.store %85, %99 : f32, !llvm.ptr
// CHECK-NEXT:     %100 = llvm.add %68, %16 : i64
// CHECK-NEXT:     %101 = llvm.icmp "slt" %100, %68 : i64
// CHECK-NEXT:     %102 = llvm.select %101, %1, %100 : i1, i64
// CHECK-NEXT:     llvm.br ^bb11(%102 : i64)
// CHECK-NEXT:   }
// CHECK-NEXT:   llvm.func @k(%103: !llvm.ptr, %104: i64, %105: !llvm.ptr) {
// CHECK-NEXT:     %106 = llvm.getelementptr %103[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %107 = llvm.load %106 : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %108 = llvm.getelementptr %103[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %109 = llvm.load %108 : !llvm.ptr -> i64
// CHECK-NEXT:     %110 = llvm.getelementptr %103[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %111 = llvm.load %110 : !llvm.ptr -> i64
// CHECK-NEXT:     %112 = llvm.getelementptr %103[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %113 = llvm.load %112 : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %114 = llvm.getelementptr %103[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %115 = llvm.load %114 : !llvm.ptr -> i64
// CHECK-NEXT:     %116 = llvm.getelementptr %103[5] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %117 = llvm.load %116 : !llvm.ptr -> i64
// CHECK-NEXT:     %118 = llvm.getelementptr %103[6] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %119 = llvm.load %118 : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %120 = llvm.getelementptr %103[7] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %121 = llvm.load %120 : !llvm.ptr -> i64
// CHECK-NEXT:     %122 = llvm.getelementptr %103[8] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %123 = llvm.load %122 : !llvm.ptr -> i64
// CHECK-NEXT:     llvm.call @k_impl(%107, %109, %111, %113, %115, %117, %119, %121, %123) : (!llvm.ptr, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:     llvm.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
