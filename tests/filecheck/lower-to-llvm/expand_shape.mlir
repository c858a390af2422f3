// RUN: tilegrad opt %s -p 'lower-to-llvm{guard=true}' | filecheck %s

// A stack buffer seen as a matrix whose row length %q comes at run time (pack-windowed-reductions'
// panel): the view is the alloca's pointer with sizes [%r, %q] and strides [%q, 1], so panel[1, 2]
// is element %q + 2; the guard build first checks that %r x %q elements fit the buffer's 64.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"},
               %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %buffer = memref.alloca() : memref<64xf32>
    %q = memref.dim %x, %c0 : memref<?xf32>
    %r = arith.divsi %c64, %q : index
    %panel = memref.expand_shape %buffer [[0, 1]] output_shape [%r, %q] : memref<64xf32> into memref<?x?xf32>
    %v = memref.load %x[%c0] : memref<?xf32>
    memref.store %v, %panel[%c1, %c2] : memref<?x?xf32>
    %w = memref.load %panel[%c1, %c2] : memref<?x?xf32>
    memref.store %w, %y[%c0] : memref<?xf32>
    func.return
  }
}

// CHECK:      builtin.module attributes {tg.guard_messages = {"1048576" = "guard: stage k: argument 'x' is passed with stride {value} on axis {axis}, but its type states {limit}", "1048577" = "guard: stage k: argument 'y' is passed with stride {value} on axis {axis}, but its type states {limit}", "1048578" = "guard: stage k: argument 'status' is passed with stride {value} on axis {axis}, but its type states {limit}", "1048579" = "guard: stage k: arith.divsi of {value} by {limit} (undefined: a divisor of 0, or MIN / -1)", "1048580" = "guard: stage k: memref.expand_shape of stack row: axis {axis} split in {value} elements, more than its {limit}", "1048581" = "guard: stage k: load of x", "1048582" = "guard: stage k: store of stack row (split)", "1048583" = "guard: stage k: load of stack row (split)", "1048584" = "guard: stage k: store of y"}} {
// CHECK-NEXT:   llvm.func internal @k_impl(%0: !llvm.ptr {llvm.noalias}, %1: i64, %2: i64, %3: !llvm.ptr {llvm.noalias}, %4: i64, %5: i64, %6: !llvm.ptr {llvm.noalias}, %7: i64, %8: i64) {
// CHECK-NEXT:     %9 = llvm.mlir.constant(1048584) : i64
// CHECK-NEXT:     %10 = llvm.mlir.constant(1048583) : i64
// CHECK-NEXT:     %11 = llvm.mlir.constant(1048582) : i64
// CHECK-NEXT:     %12 = llvm.mlir.constant(1048581) : i64
// CHECK-NEXT:     %13 = llvm.mlir.constant(1048580) : i64
// CHECK-NEXT:     %14 = llvm.mlir.constant(1048579) : i64
// CHECK-NEXT:     %15 = llvm.mlir.constant(-1) : i64
// CHECK-NEXT:     %16 = llvm.mlir.constant(-9223372036854775808) : i64
// CHECK-NEXT:     %17 = llvm.mlir.constant(64) : i64
// CHECK-NEXT:     %18 = llvm.alloca %17 x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:     %19 = llvm.mlir.constant(0 : i8) : i8
// CHECK-NEXT:     %20 = llvm.mlir.constant(256) : i64
// CHECK-NEXT:     %21 = llvm.mlir.constant(false) : i1
// CHECK-NEXT:     %22 = llvm.bitcast %18 : !llvm.ptr to !llvm.ptr
// CHECK-NEXT:     llvm.call_intrinsic "llvm.memset.p0.i64"(%22, %19, %20, %21) : (!llvm.ptr, i8, i64, i1) -> ()
// CHECK-NEXT:     %23 = llvm.mlir.constant(64) : i64
// CHECK-NEXT:     %24 = llvm.mlir.constant(2) : i64
// CHECK-NEXT:     %25 = llvm.mlir.constant(1048578) : i64
// CHECK-NEXT:     %26 = llvm.mlir.constant(1048577) : i64
// CHECK-NEXT:     %27 = llvm.mlir.constant(1048576) : i64
// CHECK-NEXT:     %28 = llvm.mlir.constant(0) : i64
// CHECK-NEXT:     %29 = llvm.mlir.constant(true) : i1
// CHECK-NEXT:     %30 = llvm.mlir.constant(1) : i64
// CHECK-NEXT:     %31 = llvm.icmp "ugt" %1, %30 : i64
// CHECK-NEXT:     %32 = llvm.icmp "ne" %1, %28 : i64
// CHECK-NEXT:     %33 = llvm.and %29, %32 : i1
// CHECK-NEXT:     %34 = llvm.and %31, %33 : i1
// CHECK-NEXT:     %35 = llvm.icmp "ne" %2, %30 : i64
// CHECK-NEXT:     %36 = llvm.and %34, %35 : i1
// CHECK-NEXT:     %37 = llvm.select %36, %28, %28 : i1, i64
// CHECK-NEXT:     %38 = llvm.select %36, %2, %28 : i1, i64
// CHECK-NEXT:     %39 = llvm.select %36, %30, %28 : i1, i64
// CHECK-NEXT:     %40 = llvm.xor %36, %29 : i1
// CHECK-NEXT:     %41 = llvm.and %29, %40 : i1
// CHECK-NEXT:     llvm.cond_br %41, ^bb3, ^bb1
// CHECK-NEXT:   ^bb1:
// CHECK-NEXT:     %42 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %43 = llvm.icmp "eq" %42, %28 : i64
// CHECK-NEXT:     llvm.cond_br %43, ^bb2, ^bb4
// CHECK-NEXT:   ^bb2:
// CHECK-NEXT:     %44 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %27, %44 : i64, !llvm.ptr
// CHECK-NEXT:     %45 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %37, %45 : i64, !llvm.ptr
// CHECK-NEXT:     %46 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %38, %46 : i64, !llvm.ptr
// CHECK-NEXT:     %47 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %39, %47 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb3:
// CHECK-NEXT:     %48 = llvm.icmp "ugt" %4, %30 : i64
// CHECK-NEXT:     %49 = llvm.icmp "ne" %4, %28 : i64
// CHECK-NEXT:     %50 = llvm.and %29, %49 : i1
// CHECK-NEXT:     %51 = llvm.and %48, %50 : i1
// CHECK-NEXT:     %52 = llvm.icmp "ne" %5, %30 : i64
// CHECK-NEXT:     %53 = llvm.and %51, %52 : i1
// CHECK-NEXT:     %54 = llvm.select %53, %28, %28 : i1, i64
// CHECK-NEXT:     %55 = llvm.select %53, %5, %28 : i1, i64
// CHECK-NEXT:     %56 = llvm.select %53, %30, %28 : i1, i64
// CHECK-NEXT:     %57 = llvm.xor %53, %29 : i1
// CHECK-NEXT:     %58 = llvm.and %29, %57 : i1
// CHECK-NEXT:     llvm.cond_br %58, ^bb7, ^bb5
// CHECK-NEXT:   ^bb4:
// CHECK-NEXT:     llvm.return
// CHECK-NEXT:   ^bb5:
// CHECK-NEXT:     %59 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %60 = llvm.icmp "eq" %59, %28 : i64
// CHECK-NEXT:     llvm.cond_br %60, ^bb6, ^bb4
// CHECK-NEXT:   ^bb6:
// CHECK-NEXT:     %61 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %26, %61 : i64, !llvm.ptr
// CHECK-NEXT:     %62 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %54, %62 : i64, !llvm.ptr
// CHECK-NEXT:     %63 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %55, %63 : i64, !llvm.ptr
// CHECK-NEXT:     %64 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %56, %64 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb7:
// CHECK-NEXT:     %65 = llvm.icmp "ugt" %7, %30 : i64
// CHECK-NEXT:     %66 = llvm.icmp "ne" %7, %28 : i64
// CHECK-NEXT:     %67 = llvm.and %29, %66 : i1
// CHECK-NEXT:     %68 = llvm.and %65, %67 : i1
// CHECK-NEXT:     %69 = llvm.icmp "ne" %8, %30 : i64
// CHECK-NEXT:     %70 = llvm.and %68, %69 : i1
// CHECK-NEXT:     %71 = llvm.select %70, %28, %28 : i1, i64
// CHECK-NEXT:     %72 = llvm.select %70, %8, %28 : i1, i64
// CHECK-NEXT:     %73 = llvm.select %70, %30, %28 : i1, i64
// CHECK-NEXT:     %74 = llvm.xor %70, %29 : i1
// CHECK-NEXT:     %75 = llvm.and %29, %74 : i1
// CHECK-NEXT:     llvm.cond_br %75, ^bb10, ^bb8
// CHECK-NEXT:   ^bb8:
// CHECK-NEXT:     %76 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %77 = llvm.icmp "eq" %76, %28 : i64
// CHECK-NEXT:     llvm.cond_br %77, ^bb9, ^bb4
// CHECK-NEXT:   ^bb9:
// CHECK-NEXT:     %78 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %25, %78 : i64, !llvm.ptr
// CHECK-NEXT:     %79 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %71, %79 : i64, !llvm.ptr
// CHECK-NEXT:     %80 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %72, %80 : i64, !llvm.ptr
// CHECK-NEXT:     %81 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %73, %81 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb10:
// CHECK-NEXT:     %82 = llvm.icmp "eq" %1, %28 : i64
// CHECK-NEXT:     %83 = llvm.icmp "eq" %23, %16 : i64
// CHECK-NEXT:     %84 = llvm.icmp "eq" %1, %15 : i64
// CHECK-NEXT:     %85 = llvm.and %83, %84 : i1
// CHECK-NEXT:     %86 = llvm.or %82, %85 : i1
// CHECK-NEXT:     %87 = llvm.select %86, %28, %28 : i1, i64
// CHECK-NEXT:     %88 = llvm.select %86, %23, %28 : i1, i64
// CHECK-NEXT:     %89 = llvm.select %86, %1, %28 : i1, i64
// CHECK-NEXT:     %90 = llvm.xor %86, %29 : i1
// CHECK-NEXT:     %91 = llvm.and %29, %90 : i1
// CHECK-NEXT:     llvm.cond_br %91, ^bb13, ^bb11
// CHECK-NEXT:   ^bb11:
// CHECK-NEXT:     %92 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %93 = llvm.icmp "eq" %92, %28 : i64
// CHECK-NEXT:     llvm.cond_br %93, ^bb12, ^bb4
// CHECK-NEXT:   ^bb12:
// CHECK-NEXT:     %94 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %14, %94 : i64, !llvm.ptr
// CHECK-NEXT:     %95 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %87, %95 : i64, !llvm.ptr
// CHECK-NEXT:     %96 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %88, %96 : i64, !llvm.ptr
// CHECK-NEXT:     %97 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %89, %97 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb13:
// CHECK-NEXT:     %98 = llvm.sdiv %23, %1 : i64
// CHECK-NEXT:     %99 = llvm.mul %30, %1 : i64
// CHECK-NEXT:     %100 = llvm.mul %1, %98 : i64
// CHECK-NEXT:     %101 = llvm.icmp "ugt" %100, %23 : i64
// CHECK-NEXT:     %102 = llvm.select %101, %28, %28 : i1, i64
// CHECK-NEXT:     %103 = llvm.select %101, %100, %28 : i1, i64
// CHECK-NEXT:     %104 = llvm.select %101, %23, %28 : i1, i64
// CHECK-NEXT:     %105 = llvm.xor %101, %29 : i1
// CHECK-NEXT:     %106 = llvm.and %29, %105 : i1
// CHECK-NEXT:     llvm.cond_br %106, ^bb16, ^bb14
// CHECK-NEXT:   ^bb14:
// CHECK-NEXT:     %107 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %108 = llvm.icmp "eq" %107, %28 : i64
// CHECK-NEXT:     llvm.cond_br %108, ^bb15, ^bb4
// CHECK-NEXT:   ^bb15:
// CHECK-NEXT:     %109 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %13, %109 : i64, !llvm.ptr
// CHECK-NEXT:     %110 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %102, %110 : i64, !llvm.ptr
// CHECK-NEXT:     %111 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %103, %111 : i64, !llvm.ptr
// CHECK-NEXT:     %112 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %104, %112 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb16:
// CHECK-NEXT:     %113 = llvm.icmp "ult" %28, %1 : i64
// CHECK-NEXT:     %114 = llvm.xor %113, %29 : i1
// CHECK-NEXT:     %115 = llvm.select %114, %28, %28 : i1, i64
// CHECK-NEXT:     %116 = llvm.select %114, %28, %28 : i1, i64
// CHECK-NEXT:     %117 = llvm.select %114, %1, %28 : i1, i64
// CHECK-NEXT:     %118 = llvm.xor %114, %29 : i1
// CHECK-NEXT:     %119 = llvm.and %29, %118 : i1
// CHECK-NEXT:     llvm.cond_br %119, ^bb19, ^bb17
// CHECK-NEXT:   ^bb17:
// CHECK-NEXT:     %120 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %121 = llvm.icmp "eq" %120, %28 : i64
// CHECK-NEXT:     llvm.cond_br %121, ^bb18, ^bb4
// CHECK-NEXT:   ^bb18:
// CHECK-NEXT:     %122 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %12, %122 : i64, !llvm.ptr
// CHECK-NEXT:     %123 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %115, %123 : i64, !llvm.ptr
// CHECK-NEXT:     %124 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %116, %124 : i64, !llvm.ptr
// CHECK-NEXT:     %125 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %117, %125 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb19:
// CHECK-NEXT:     %126 = llvm.getelementptr %0[%28] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:     %127 = llvm.load %126 : !llvm.ptr -> f32
// CHECK-NEXT:     %128 = llvm.icmp "ult" %30, %98 : i64
// CHECK-NEXT:     %129 = llvm.xor %128, %29 : i1
// CHECK-NEXT:     %130 = llvm.icmp "ult" %24, %1 : i64
// CHECK-NEXT:     %131 = llvm.xor %130, %29 : i1
// CHECK-NEXT:     %132 = llvm.select %129, %28, %28 : i1, i64
// CHECK-NEXT:     %133 = llvm.select %129, %30, %28 : i1, i64
// CHECK-NEXT:     %134 = llvm.select %129, %98, %28 : i1, i64
// CHECK-NEXT:     %135 = llvm.xor %129, %29 : i1
// CHECK-NEXT:     %136 = llvm.and %29, %135 : i1
// CHECK-NEXT:     %137 = llvm.select %131, %30, %132 : i1, i64
// CHECK-NEXT:     %138 = llvm.select %131, %24, %133 : i1, i64
// CHECK-NEXT:     %139 = llvm.select %131, %1, %134 : i1, i64
// CHECK-NEXT:     %140 = llvm.xor %131, %29 : i1
// CHECK-NEXT:     %141 = llvm.and %136, %140 : i1
// CHECK-NEXT:     llvm.cond_br %141, ^bb22, ^bb20
// CHECK-NEXT:   ^bb20:
// CHECK-NEXT:     %142 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %143 = llvm.icmp "eq" %142, %28 : i64
// CHECK-NEXT:     llvm.cond_br %143, ^bb21, ^bb4
// CHECK-NEXT:   ^bb21:
// CHECK-NEXT:     %144 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %11, %144 : i64, !llvm.ptr
// CHECK-NEXT:     %145 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %137, %145 : i64, !llvm.ptr
// CHECK-NEXT:     %146 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %138, %146 : i64, !llvm.ptr
// CHECK-NEXT:     %147 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %139, %147 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb22:
// CHECK-NEXT:     %148 = llvm.mul %30, %99 : i64
// CHECK-NEXT:     %149 = llvm.add %148, %24 : i64
// CHECK-NEXT:     %150 = llvm.getelementptr %18[%149] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:     llvm.store %127, %150 : f32, !llvm.ptr
// CHECK-NEXT:     %151 = llvm.icmp "ult" %30, %98 : i64
// CHECK-NEXT:     %152 = llvm.xor %151, %29 : i1
// CHECK-NEXT:     %153 = llvm.icmp "ult" %24, %1 : i64
// CHECK-NEXT:     %154 = llvm.xor %153, %29 : i1
// CHECK-NEXT:     %155 = llvm.select %152, %28, %28 : i1, i64
// CHECK-NEXT:     %156 = llvm.select %152, %30, %28 : i1, i64
// CHECK-NEXT:     %157 = llvm.select %152, %98, %28 : i1, i64
// CHECK-NEXT:     %158 = llvm.xor %152, %29 : i1
// CHECK-NEXT:     %159 = llvm.and %29, %158 : i1
// CHECK-NEXT:     %160 = llvm.select %154, %30, %155 : i1, i64
// CHECK-NEXT:     %161 = llvm.select %154, %24, %156 : i1, i64
// CHECK-NEXT:     %162 = llvm.select %154, %1, %157 : i1, i64
// CHECK-NEXT:     %163 = llvm.xor %154, %29 : i1
// CHECK-NEXT:     %164 = llvm.and %159, %163 : i1
// CHECK-NEXT:     llvm.cond_br %164, ^bb25, ^bb23
// CHECK-NEXT:   ^bb23:
// CHECK-NEXT:     %165 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %166 = llvm.icmp "eq" %165, %28 : i64
// CHECK-NEXT:     llvm.cond_br %166, ^bb24, ^bb4
// CHECK-NEXT:   ^bb24:
// CHECK-NEXT:     %167 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %10, %167 : i64, !llvm.ptr
// CHECK-NEXT:     %168 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %160, %168 : i64, !llvm.ptr
// CHECK-NEXT:     %169 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %161, %169 : i64, !llvm.ptr
// CHECK-NEXT:     %170 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %162, %170 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb25:
// CHECK-NEXT:     %171 = llvm.mul %30, %99 : i64
// CHECK-NEXT:     %172 = llvm.add %171, %24 : i64
// CHECK-NEXT:     %173 = llvm.getelementptr %18[%172] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:     %174 = llvm.load %173 : !llvm.ptr -> f32
// CHECK-NEXT:     %175 = llvm.icmp "ult" %28, %4 : i64
// CHECK-NEXT:     %176 = llvm.xor %175, %29 : i1
// CHECK-NEXT:     %177 = llvm.select %176, %28, %28 : i1, i64
// CHECK-NEXT:     %178 = llvm.select %176, %28, %28 : i1, i64
// CHECK-NEXT:     %179 = llvm.select %176, %4, %28 : i1, i64
// CHECK-NEXT:     %180 = llvm.xor %176, %29 : i1
// CHECK-NEXT:     %181 = llvm.and %29, %180 : i1
// CHECK-NEXT:     llvm.cond_br %181, ^bb28, ^bb26
// CHECK-NEXT:   ^bb26:
// CHECK-NEXT:     %182 = llvm.load %6 : !llvm.ptr -> i64
// CHECK-NEXT:     %183 = llvm.icmp "eq" %182, %28 : i64
// CHECK-NEXT:     llvm.cond_br %183, ^bb27, ^bb4
// CHECK-NEXT:   ^bb27:
// CHECK-NEXT:     %184 = llvm.getelementptr %6[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %9, %184 : i64, !llvm.ptr
// CHECK-NEXT:     %185 = llvm.getelementptr %6[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %177, %185 : i64, !llvm.ptr
// CHECK-NEXT:     %186 = llvm.getelementptr %6[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %178, %186 : i64, !llvm.ptr
// CHECK-NEXT:     %187 = llvm.getelementptr %6[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     llvm.store %179, %187 : i64, !llvm.ptr
// CHECK-NEXT:     llvm.br ^bb4
// CHECK-NEXT:   ^bb28:
// CHECK-NEXT:     %188 = llvm.getelementptr %3[%28] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:     llvm.store %174, %188 : f32, !llvm.ptr
// CHECK-NEXT:     llvm.return
// CHECK-NEXT:   }
// CHECK-NEXT:   llvm.func @k(%189: !llvm.ptr, %190: i64, %191: !llvm.ptr) {
// CHECK-NEXT:     %192 = llvm.getelementptr %189[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %193 = llvm.load %192 : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %194 = llvm.getelementptr %189[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %195 = llvm.load %194 : !llvm.ptr -> i64
// CHECK-NEXT:     %196 = llvm.getelementptr %189[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %197 = llvm.load %196 : !llvm.ptr -> i64
// CHECK-NEXT:     %198 = llvm.getelementptr %189[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %199 = llvm.load %198 : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %200 = llvm.getelementptr %189[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %201 = llvm.load %200 : !llvm.ptr -> i64
// CHECK-NEXT:     %202 = llvm.getelementptr %189[5] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %203 = llvm.load %202 : !llvm.ptr -> i64
// CHECK-NEXT:     %204 = llvm.getelementptr %189[6] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %205 = llvm.load %204 : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %206 = llvm.getelementptr %189[7] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %207 = llvm.load %206 : !llvm.ptr -> i64
// CHECK-NEXT:     %208 = llvm.getelementptr %189[8] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:     %209 = llvm.load %208 : !llvm.ptr -> i64
// CHECK-NEXT:     llvm.call @k_impl(%193, %195, %197, %199, %201, %203, %205, %207, %209) : (!llvm.ptr, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:     llvm.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
