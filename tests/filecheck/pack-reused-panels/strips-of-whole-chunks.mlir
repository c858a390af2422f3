// RUN: tilegrad opt %s -p 'pack-reused-panels{panel_bytes=6144 columns=8}' | filecheck %s

// g @ w as the cpu pipeline leaves it for this pass, its rows jammed 2 at a time and its sweeps
// chunked by 24 columns (a user's Split(stage=0, factor=24, tail='peel')), not the pass's columns=8:
// the column strips are whole chunks of the chunk loops in the tile: a panel of 6144 bytes holds 41
// columns of w's 37 rows, a strip of one chunk (24; 40 by columns=8 would leave 16 of every 40
// columns to the sweep of the columns left over), the last strip the matrix's last 21 columns.

builtin.module {
  func.func @gemm_forms_dx_stage0(%dy: memref<?x?xf32> {tg.name = "dy", tg.role = "input", tg.dims = "N M"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input", tg.dims = "M K"}, %dx: memref<?x?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N K"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}, %block_id: index {tg.name = "block_id", tg.role = "block_id"}) {
    %0 = memref.alloca() : memref<512xf32>
    %1 = memref.alloca() : memref<512xf32>
    %2 = arith.constant 0 : index
    %3 = memref.dim %dy, %2 : memref<?x?xf32>
    %4 = arith.constant 1 : index
    %5 = memref.dim %w, %4 : memref<?x?xf32>
    %6 = memref.dim %dy, %4 : memref<?x?xf32>
    %7 = arith.constant 2 : index
    %8 = arith.divui %3, %7 : index
    %9 = arith.remui %3, %7 : index
    %10 = arith.minsi %block_id, %9 : index
    %11 = arith.muli %block_id, %8 : index
    %12 = arith.addi %11, %10 : index
    %13 = arith.cmpi ult, %block_id, %9 : index
    %14 = arith.constant 1 : index
    %15 = arith.addi %8, %14 : index
    %16 = arith.select %13, %15, %8 : index
    %17 = arith.addi %12, %16 : index
    %18 = arith.constant 2 : index
    %19 = arith.subi %17, %12 : index
    %20 = arith.divui %19, %18 : index
    %21 = arith.muli %20, %18 : index
    %22 = arith.addi %12, %21 : index
    scf.for %23 = %12 to %22 step %18 {
      %24 = arith.constant 1 : index
      %25 = arith.addi %23, %24 : index
      %26 = arith.constant 21840 : index
      scf.for %27 = %2 to %5 step %26 {
        %28 = arith.addi %27, %26 : index
        %29 = arith.minsi %28, %5 : index
        %30 = arith.constant 512 : index
        scf.for %31 = %27 to %29 step %30 {
          %32 = arith.addi %31, %30 : index
          %33 = arith.minsi %32, %29 : index
          %34 = arith.constant 1 : index
          %35 = arith.constant 0.000000e+00 : f32
          scf.for %36 = %31 to %33 step %34 {
            %37 = arith.subi %36, %31 : index
            memref.store %35, %1[%37] : memref<512xf32>
            memref.store %35, %0[%37] : memref<512xf32>
          } {tg.loop = #tg.loop<row, axis = 0>}
          %38 = arith.constant 24 : index
          %39 = arith.subi %33, %31 : index
          %40 = arith.divui %39, %38 : index
          %41 = arith.muli %40, %38 : index
          %42 = arith.addi %31, %41 : index
          scf.for %43 = %31 to %42 step %38 {
            scf.for %44 = %2 to %6 step %4 {
              %45 = arith.constant 0 : index
              %46 = arith.constant 8 : index
              %47 = arith.addi %43, %45 : index
              %48 = arith.addi %43, %46 : index
              scf.for %49 = %47 to %48 step %34 {
                %50 = arith.subi %49, %31 : index
                %51 = memref.load %1[%50] : memref<512xf32>
                %52 = memref.load %0[%50] : memref<512xf32>
                %53 = memref.load %dy[%23, %44] : memref<?x?xf32>
                %54 = memref.load %dy[%25, %44] : memref<?x?xf32>
                %55 = memref.load %w[%44, %49] : memref<?x?xf32>
                %56 = memref.load %w[%44, %49] : memref<?x?xf32>
                %57 = arith.mulf %53, %55 fastmath<contract> : f32
                %58 = arith.mulf %54, %56 fastmath<contract> : f32
                %59 = arith.addf %51, %57 fastmath<contract> : f32
                %60 = arith.addf %52, %58 fastmath<contract> : f32
                memref.store %59, %1[%50] : memref<512xf32>
                memref.store %60, %0[%50] : memref<512xf32>
              } {tg.loop = #tg.loop<row, axis = 0>}
              %61 = arith.constant 8 : index
              %62 = arith.constant 16 : index
              %63 = arith.addi %43, %61 : index
              %64 = arith.addi %43, %62 : index
              scf.for %65 = %63 to %64 step %34 {
                %66 = arith.subi %65, %31 : index
                %67 = memref.load %1[%66] : memref<512xf32>
                %68 = memref.load %0[%66] : memref<512xf32>
                %69 = memref.load %dy[%23, %44] : memref<?x?xf32>
                %70 = memref.load %dy[%25, %44] : memref<?x?xf32>
                %71 = memref.load %w[%44, %65] : memref<?x?xf32>
                %72 = memref.load %w[%44, %65] : memref<?x?xf32>
                %73 = arith.mulf %69, %71 fastmath<contract> : f32
                %74 = arith.mulf %70, %72 fastmath<contract> : f32
                %75 = arith.addf %67, %73 fastmath<contract> : f32
                %76 = arith.addf %68, %74 fastmath<contract> : f32
                memref.store %75, %1[%66] : memref<512xf32>
                memref.store %76, %0[%66] : memref<512xf32>
              } {tg.loop = #tg.loop<row, axis = 0>}
              %77 = arith.constant 16 : index
              %78 = arith.constant 24 : index
              %79 = arith.addi %43, %77 : index
              %80 = arith.addi %43, %78 : index
              scf.for %81 = %79 to %80 step %34 {
                %82 = arith.subi %81, %31 : index
                %83 = memref.load %1[%82] : memref<512xf32>
                %84 = memref.load %0[%82] : memref<512xf32>
                %85 = memref.load %dy[%23, %44] : memref<?x?xf32>
                %86 = memref.load %dy[%25, %44] : memref<?x?xf32>
                %87 = memref.load %w[%44, %81] : memref<?x?xf32>
                %88 = memref.load %w[%44, %81] : memref<?x?xf32>
                %89 = arith.mulf %85, %87 fastmath<contract> : f32
                %90 = arith.mulf %86, %88 fastmath<contract> : f32
                %91 = arith.addf %83, %89 fastmath<contract> : f32
                %92 = arith.addf %84, %90 fastmath<contract> : f32
                memref.store %91, %1[%82] : memref<512xf32>
                memref.store %92, %0[%82] : memref<512xf32>
              } {tg.loop = #tg.loop<row, axis = 0>}
            } {tg.loop = #tg.loop<reduce, axis = 0>}
          } {tg.loop = #tg.loop<tile, axis = 0>}
          scf.for %93 = %2 to %6 step %4 {
            scf.for %94 = %42 to %33 step %34 {
              %95 = arith.subi %94, %31 : index
              %96 = memref.load %1[%95] : memref<512xf32>
              %97 = memref.load %0[%95] : memref<512xf32>
              %98 = memref.load %dy[%23, %93] : memref<?x?xf32>
              %99 = memref.load %dy[%25, %93] : memref<?x?xf32>
              %100 = memref.load %w[%93, %94] : memref<?x?xf32>
              %101 = memref.load %w[%93, %94] : memref<?x?xf32>
              %102 = arith.mulf %98, %100 fastmath<contract> : f32
              %103 = arith.mulf %99, %101 fastmath<contract> : f32
              %104 = arith.addf %96, %102 fastmath<reassoc,contract> : f32
              %105 = arith.addf %97, %103 fastmath<reassoc,contract> : f32
              memref.store %104, %1[%95] : memref<512xf32>
              memref.store %105, %0[%95] : memref<512xf32>
            } {tg.loop = #tg.loop<row, axis = 0>}
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          scf.for %106 = %31 to %33 step %4 {
            %107 = arith.constant 0.000000e+00 : f32
            %108 = arith.subi %106, %31 : index
            %109 = memref.load %1[%108] : memref<512xf32>
            %110 = memref.load %0[%108] : memref<512xf32>
            memref.store %109, %dx[%23, %106] : memref<?x?xf32>
            memref.store %110, %dx[%25, %106] : memref<?x?xf32>
          } {tg.loop = #tg.loop<parallel, axis = 1>}
        } {tg.loop = #tg.loop<tile, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    scf.for %i0 = %22 to %17 step %4 {
      %111 = arith.constant 21840 : index
      scf.for %112 = %2 to %5 step %111 {
        %113 = arith.addi %112, %111 : index
        %114 = arith.minsi %113, %5 : index
        %115 = arith.constant 512 : index
        scf.for %116 = %112 to %114 step %115 {
          %117 = arith.addi %116, %115 : index
          %118 = arith.minsi %117, %114 : index
          %119 = arith.constant 1 : index
          %120 = arith.constant 0.000000e+00 : f32
          scf.for %121 = %116 to %118 step %119 {
            %122 = arith.subi %121, %116 : index
            memref.store %120, %1[%122] : memref<512xf32>
          } {tg.loop = #tg.loop<row, axis = 0>}
          scf.for %123 = %2 to %6 step %4 {
            scf.for %124 = %116 to %118 step %119 {
              %125 = arith.subi %124, %116 : index
              %126 = memref.load %1[%125] : memref<512xf32>
              %127 = memref.load %dy[%i0, %123] : memref<?x?xf32>
              %128 = memref.load %w[%123, %124] : memref<?x?xf32>
              %129 = arith.mulf %127, %128 fastmath<contract> : f32
              %130 = arith.addf %126, %129 fastmath<reassoc,contract> : f32
              memref.store %130, %1[%125] : memref<512xf32>
            } {tg.loop = #tg.loop<row, axis = 0>}
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          scf.for %i1 = %116 to %118 step %4 {
            %131 = arith.constant 0.000000e+00 : f32
            %132 = arith.subi %i1, %116 : index
            %133 = memref.load %1[%132] : memref<512xf32>
            memref.store %133, %dx[%i0, %i1] : memref<?x?xf32>
          } {tg.loop = #tg.loop<parallel, axis = 1>}
        } {tg.loop = #tg.loop<tile, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @gemm_forms_dx_stage0(%dy: memref<?x?xf32> {tg.name = "dy", tg.role = "input", tg.dims = "N M"}, %w: memref<?x?xf32> {tg.name = "w", tg.role = "input", tg.dims = "M K"}, %dx: memref<?x?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N K"}, %status: memref<8xi64> {tg.name = "status", tg.role = "status"}, %block_id: index {tg.name = "block_id", tg.role = "block_id"}) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<1536xf32>
// CHECK-NEXT:     %1 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %2 = memref.alloca() : memref<512xf32>
// CHECK-NEXT:     %3 = arith.constant 0 : index
// CHECK-NEXT:     %4 = memref.dim %dy, %3 : memref<?x?xf32>
// CHECK-NEXT:     %5 = arith.constant 1 : index
// CHECK-NEXT:     %6 = memref.dim %w, %5 : memref<?x?xf32>
// CHECK-NEXT:     %7 = memref.dim %dy, %5 : memref<?x?xf32>
// CHECK-NEXT:     %8 = arith.constant 2 : index
// CHECK-NEXT:     %9 = arith.divui %4, %8 : index
// CHECK-NEXT:     %10 = arith.remui %4, %8 : index
// CHECK-NEXT:     %11 = arith.minsi %block_id, %10 : index
// CHECK-NEXT:     %12 = arith.muli %block_id, %9 : index
// CHECK-NEXT:     %13 = arith.addi %12, %11 : index
// CHECK-NEXT:     %14 = arith.cmpi ult, %block_id, %10 : index
// CHECK-NEXT:     %15 = arith.constant 1 : index
// CHECK-NEXT:     %16 = arith.addi %9, %15 : index
// CHECK-NEXT:     %17 = arith.select %14, %16, %9 : index
// CHECK-NEXT:     %18 = arith.addi %13, %17 : index
// CHECK-NEXT:     %19 = arith.constant 2 : index
// CHECK-NEXT:     %20 = arith.subi %18, %13 : index
// CHECK-NEXT:     %21 = arith.divui %20, %19 : index
// CHECK-NEXT:     %22 = arith.muli %21, %19 : index
// CHECK-NEXT:     %23 = arith.addi %13, %22 : index
// CHECK-NEXT:     %24 = arith.constant 0 : index
// CHECK-NEXT:     %25 = arith.constant 1 : index
// CHECK-NEXT:     %26 = memref.dim %w, %24 : memref<?x?xf32>
// CHECK-NEXT:     %27 = arith.constant 1536 : index
// CHECK-NEXT:     %28 = arith.maxsi %26, %25 : index
// CHECK-NEXT:     %29 = arith.divui %27, %28 : index
// CHECK-NEXT:     %30 = arith.constant 24 : index
// CHECK-NEXT:     %31 = arith.divui %29, %30 : index
// CHECK-NEXT:     %32 = arith.muli %31, %30 : index
// CHECK-NEXT:     %33 = arith.subi %6, %3 : index
// CHECK-NEXT:     %34 = arith.maxsi %33, %25 : index
// CHECK-NEXT:     %35 = arith.cmpi sgt, %32, %24 : index
// CHECK-NEXT:     %panel_columns = arith.select %35, %32, %34 : index
// CHECK-NEXT:     scf.for %36 = %3 to %6 step %panel_columns {
// CHECK-NEXT:       %37 = arith.addi %36, %panel_columns : index
// CHECK-NEXT:       %38 = arith.minsi %37, %6 : index
// CHECK-NEXT:       %39 = arith.subi %38, %36 : index
// CHECK-NEXT:       %panel, %40 = tg.panel %w[%36, %39] in %0 : memref<?x?xf32>, memref<1536xf32> -> memref<?x?xf32>
// CHECK-NEXT:       %41 = arith.constant 0 : index
// CHECK-NEXT:       %42 = arith.constant 1 : index
// CHECK-NEXT:       %43 = memref.dim %w, %41 : memref<?x?xf32>
// CHECK-NEXT:       scf.if %40 {
// CHECK-NEXT:         scf.for %44 = %41 to %43 step %42 {
// CHECK-NEXT:           scf.for %45 = %41 to %39 step %42 {
// CHECK-NEXT:             %46 = arith.addi %36, %45 : index
// CHECK-NEXT:             %47 = memref.load %w[%44, %46] : memref<?x?xf32>
// CHECK-NEXT:             memref.store %47, %panel[%44, %45] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<copy, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<copy, axis = 0>}
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.for %48 = %13 to %23 step %19 {
// CHECK-NEXT:         %49 = arith.constant 1 : index
// CHECK-NEXT:         %50 = arith.addi %48, %49 : index
// CHECK-NEXT:         %51 = arith.constant 21840 : index
// CHECK-NEXT:         %52 = arith.addi %36, %panel_columns : index
// CHECK-NEXT:         %53 = arith.minsi %52, %6 : index
// CHECK-NEXT:         %54 = arith.constant 512 : index
// CHECK-NEXT:         scf.for %55 = %36 to %53 step %54 {
// CHECK-NEXT:           %56 = arith.addi %55, %54 : index
// CHECK-NEXT:           %57 = arith.minsi %56, %53 : index
// CHECK-NEXT:           %58 = arith.constant 1 : index
// CHECK-NEXT:           %59 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:           scf.for %60 = %55 to %57 step %58 {
// CHECK-NEXT:             %61 = arith.subi %60, %55 : index
// CHECK-NEXT:             memref.store %59, %2[%61] : memref<512xf32>
// CHECK-NEXT:             memref.store %59, %1[%61] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           %62 = arith.constant 24 : index
// CHECK-NEXT:           %63 = arith.subi %57, %55 : index
// CHECK-NEXT:           %64 = arith.divui %63, %62 : index
// CHECK-NEXT:           %65 = arith.muli %64, %62 : index
// CHECK-NEXT:           %66 = arith.addi %55, %65 : index
// CHECK-NEXT:           scf.for %67 = %55 to %66 step %62 {
// CHECK-NEXT:             scf.for %68 = %3 to %7 step %5 {
// CHECK-NEXT:               %69 = arith.constant 0 : index
// CHECK-NEXT:               %70 = arith.constant 8 : index
// CHECK-NEXT:               %71 = arith.addi %67, %69 : index
// CHECK-NEXT:               %72 = arith.addi %67, %70 : index
// CHECK-NEXT:               scf.for %73 = %71 to %72 step %58 {
// CHECK-NEXT:                 %74 = arith.subi %73, %55 : index
// CHECK-NEXT:                 %75 = memref.load %2[%74] : memref<512xf32>
// CHECK-NEXT:                 %76 = memref.load %1[%74] : memref<512xf32>
// CHECK-NEXT:                 %77 = memref.load %dy[%48, %68] : memref<?x?xf32>
// CHECK-NEXT:                 %78 = memref.load %dy[%50, %68] : memref<?x?xf32>
// CHECK-NEXT:                 %79 = arith.subi %73, %36 : index
// CHECK-NEXT:                 %80 = memref.load %panel[%68, %79] : memref<?x?xf32>
// CHECK-NEXT:                 %81 = arith.subi %73, %36 : index
// CHECK-NEXT:                 %82 = memref.load %panel[%68, %81] : memref<?x?xf32>
// CHECK-NEXT:                 %83 = arith.mulf %77, %80 fastmath<contract> : f32
// CHECK-NEXT:                 %84 = arith.mulf %78, %82 fastmath<contract> : f32
// CHECK-NEXT:                 %85 = arith.addf %75, %83 fastmath<contract> : f32
// CHECK-NEXT:                 %86 = arith.addf %76, %84 fastmath<contract> : f32
// CHECK-NEXT:                 memref.store %85, %2[%74] : memref<512xf32>
// CHECK-NEXT:                 memref.store %86, %1[%74] : memref<512xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:               %87 = arith.constant 8 : index
// CHECK-NEXT:               %88 = arith.constant 16 : index
// CHECK-NEXT:               %89 = arith.addi %67, %87 : index
// CHECK-NEXT:               %90 = arith.addi %67, %88 : index
// CHECK-NEXT:               scf.for %91 = %89 to %90 step %58 {
// CHECK-NEXT:                 %92 = arith.subi %91, %55 : index
// CHECK-NEXT:                 %93 = memref.load %2[%92] : memref<512xf32>
// CHECK-NEXT:                 %94 = memref.load %1[%92] : memref<512xf32>
// CHECK-NEXT:                 %95 = memref.load %dy[%48, %68] : memref<?x?xf32>
// CHECK-NEXT:                 %96 = memref.load %dy[%50, %68] : memref<?x?xf32>
// CHECK-NEXT:                 %97 = arith.subi %91, %36 : index
// CHECK-NEXT:                 %98 = memref.load %panel[%68, %97] : memref<?x?xf32>
// CHECK-NEXT:                 %99 = arith.subi %91, %36 : index
// CHECK-NEXT:                 %100 = memref.load %panel[%68, %99] : memref<?x?xf32>
// CHECK-NEXT:                 %101 = arith.mulf %95, %98 fastmath<contract> : f32
// CHECK-NEXT:                 %102 = arith.mulf %96, %100 fastmath<contract> : f32
// CHECK-NEXT:                 %103 = arith.addf %93, %101 fastmath<contract> : f32
// CHECK-NEXT:                 %104 = arith.addf %94, %102 fastmath<contract> : f32
// CHECK-NEXT:                 memref.store %103, %2[%92] : memref<512xf32>
// CHECK-NEXT:                 memref.store %104, %1[%92] : memref<512xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:               %105 = arith.constant 16 : index
// CHECK-NEXT:               %106 = arith.constant 24 : index
// CHECK-NEXT:               %107 = arith.addi %67, %105 : index
// CHECK-NEXT:               %108 = arith.addi %67, %106 : index
// CHECK-NEXT:               scf.for %109 = %107 to %108 step %58 {
// CHECK-NEXT:                 %110 = arith.subi %109, %55 : index
// CHECK-NEXT:                 %111 = memref.load %2[%110] : memref<512xf32>
// CHECK-NEXT:                 %112 = memref.load %1[%110] : memref<512xf32>
// CHECK-NEXT:                 %113 = memref.load %dy[%48, %68] : memref<?x?xf32>
// CHECK-NEXT:                 %114 = memref.load %dy[%50, %68] : memref<?x?xf32>
// CHECK-NEXT:                 %115 = arith.subi %109, %36 : index
// CHECK-NEXT:                 %116 = memref.load %panel[%68, %115] : memref<?x?xf32>
// CHECK-NEXT:                 %117 = arith.subi %109, %36 : index
// CHECK-NEXT:                 %118 = memref.load %panel[%68, %117] : memref<?x?xf32>
// CHECK-NEXT:                 %119 = arith.mulf %113, %116 fastmath<contract> : f32
// CHECK-NEXT:                 %120 = arith.mulf %114, %118 fastmath<contract> : f32
// CHECK-NEXT:                 %121 = arith.addf %111, %119 fastmath<contract> : f32
// CHECK-NEXT:                 %122 = arith.addf %112, %120 fastmath<contract> : f32
// CHECK-NEXT:                 memref.store %121, %2[%110] : memref<512xf32>
// CHECK-NEXT:                 memref.store %122, %1[%110] : memref<512xf32>
// CHECK-NEXT:               } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:             } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<tile, axis = 0>}
// CHECK-NEXT:           scf.for %123 = %3 to %7 step %5 {
// CHECK-NEXT:             scf.for %124 = %66 to %57 step %58 {
// CHECK-NEXT:               %125 = arith.subi %124, %55 : index
// CHECK-NEXT:               %126 = memref.load %2[%125] : memref<512xf32>
// CHECK-NEXT:               %127 = memref.load %1[%125] : memref<512xf32>
// CHECK-NEXT:               %128 = memref.load %dy[%48, %123] : memref<?x?xf32>
// CHECK-NEXT:               %129 = memref.load %dy[%50, %123] : memref<?x?xf32>
// CHECK-NEXT:               %130 = arith.subi %124, %36 : index
// CHECK-NEXT:               %131 = memref.load %panel[%123, %130] : memref<?x?xf32>
// CHECK-NEXT:               %132 = arith.subi %124, %36 : index
// CHECK-NEXT:               %133 = memref.load %panel[%123, %132] : memref<?x?xf32>
// CHECK-NEXT:               %134 = arith.mulf %128, %131 fastmath<contract> : f32
// CHECK-NEXT:               %135 = arith.mulf %129, %133 fastmath<contract> : f32
// CHECK-NEXT:               %136 = arith.addf %126, %134 fastmath<reassoc,contract> : f32
// CHECK-NEXT:               %137 = arith.addf %127, %135 fastmath<reassoc,contract> : f32
// CHECK-NEXT:               memref.store %136, %2[%125] : memref<512xf32>
// CHECK-NEXT:               memref.store %137, %1[%125] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           scf.for %138 = %55 to %57 step %5 {
// CHECK-NEXT:             %139 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:             %140 = arith.subi %138, %55 : index
// CHECK-NEXT:             %141 = memref.load %2[%140] : memref<512xf32>
// CHECK-NEXT:             %142 = memref.load %1[%140] : memref<512xf32>
// CHECK-NEXT:             memref.store %141, %dx[%48, %138] : memref<?x?xf32>
// CHECK-NEXT:             memref.store %142, %dx[%50, %138] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     scf.for %i0 = %23 to %18 step %5 {
// CHECK-NEXT:       %143 = arith.constant 21840 : index
// CHECK-NEXT:       scf.for %144 = %3 to %6 step %143 {
// CHECK-NEXT:         %145 = arith.addi %144, %143 : index
// CHECK-NEXT:         %146 = arith.minsi %145, %6 : index
// CHECK-NEXT:         %147 = arith.constant 512 : index
// CHECK-NEXT:         scf.for %148 = %144 to %146 step %147 {
// CHECK-NEXT:           %149 = arith.addi %148, %147 : index
// CHECK-NEXT:           %150 = arith.minsi %149, %146 : index
// CHECK-NEXT:           %151 = arith.constant 1 : index
// CHECK-NEXT:           %152 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:           scf.for %153 = %148 to %150 step %151 {
// CHECK-NEXT:             %154 = arith.subi %153, %148 : index
// CHECK-NEXT:             memref.store %152, %2[%154] : memref<512xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           scf.for %155 = %3 to %7 step %5 {
// CHECK-NEXT:             scf.for %156 = %148 to %150 step %151 {
// CHECK-NEXT:               %157 = arith.subi %156, %148 : index
// CHECK-NEXT:               %158 = memref.load %2[%157] : memref<512xf32>
// CHECK-NEXT:               %159 = memref.load %dy[%i0, %155] : memref<?x?xf32>
// CHECK-NEXT:               %160 = memref.load %w[%155, %156] : memref<?x?xf32>
// CHECK-NEXT:               %161 = arith.mulf %159, %160 fastmath<contract> : f32
// CHECK-NEXT:               %162 = arith.addf %158, %161 fastmath<reassoc,contract> : f32
// CHECK-NEXT:               memref.store %162, %2[%157] : memref<512xf32>
// CHECK-NEXT:             } {tg.loop = #tg.loop<row, axis = 0>}
// CHECK-NEXT:           } {tg.loop = #tg.loop<reduce, axis = 0>}
// CHECK-NEXT:           scf.for %i1 = %148 to %150 step %5 {
// CHECK-NEXT:             %163 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:             %164 = arith.subi %i1, %148 : index
// CHECK-NEXT:             %165 = memref.load %2[%164] : memref<512xf32>
// CHECK-NEXT:             memref.store %165, %dx[%i0, %i1] : memref<?x?xf32>
// CHECK-NEXT:           } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:         } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
