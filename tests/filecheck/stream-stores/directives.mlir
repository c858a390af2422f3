// RUN: tilegrad opt %s -p 'stream-stores{min_bytes=4096 directives="Store(stage=0, tensor=\"z\")"}' | filecheck %s

// The directives option: y and z are both outputs the stage only writes, each stored by a loop of its
// own; only z, the one the Store directive names, is stored in whole lines with streaming stores. y's
// loop stays as it was, as if `Store(stage=0, tensor='y', nontemporal=False)` had been given.

builtin.module {
  func.func @k(%x: memref<?x?xf32, strided<[?, 1]>> {tg.name = "x", tg.role = "input"},
               %y: memref<?x?xf32, strided<[?, 1]>> {tg.name = "y", tg.role = "output"},
               %z: memref<?x?xf32, strided<[?, 1]>> {tg.name = "z", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32, strided<[?, 1]>>
    %m = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, 1]>>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        %w = arith.mulf %v, %v : f32
        memref.store %w, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
      }
      scf.for %j = %c0 to %m step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        %w = arith.addf %v, %v : f32
        memref.store %w, %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
      }
    }
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?x?xf32, strided<[?, 1]>> {tg.name = "x", tg.role = "input"}, %y: memref<?x?xf32, strided<[?, 1]>> {tg.name = "y", tg.role = "output"}, %z: memref<?x?xf32, strided<[?, 1]>> {tg.name = "z", tg.role = "output"}) {
// CHECK-NEXT:     %0 = memref.alloca() : memref<16xf32>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:     %m = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       scf.for %j = %c0 to %m step %c1 {
// CHECK-NEXT:         %v = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %w = arith.mulf %v, %v : f32
// CHECK-NEXT:         memref.store %w, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       }
// CHECK-NEXT:       %1 = arith.subi %m, %c0 : index
// CHECK-NEXT:       %2 = arith.constant 0 : index
// CHECK-NEXT:       %3 = arith.maxsi %1, %2 : index
// CHECK-NEXT:       %4 = arith.constant 4 : index
// CHECK-NEXT:       %5 = memref.dim %x, %2 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %6 = arith.muli %4, %5 : index
// CHECK-NEXT:       %7 = arith.constant 1 : index
// CHECK-NEXT:       %8 = memref.dim %x, %7 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %9 = arith.muli %6, %8 : index
// CHECK-NEXT:       %10 = arith.addi %2, %9 : index
// CHECK-NEXT:       %11 = memref.dim %y, %2 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %12 = arith.muli %4, %11 : index
// CHECK-NEXT:       %13 = memref.dim %y, %7 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %14 = arith.muli %12, %13 : index
// CHECK-NEXT:       %15 = arith.addi %10, %14 : index
// CHECK-NEXT:       %16 = memref.dim %z, %2 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %17 = arith.muli %4, %16 : index
// CHECK-NEXT:       %18 = memref.dim %z, %7 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %19 = arith.muli %17, %18 : index
// CHECK-NEXT:       %20 = arith.addi %15, %19 : index
// CHECK-NEXT:       %21 = arith.constant 4096 : index
// CHECK-NEXT:       %22 = arith.cmpi sge, %20, %21 : index
// CHECK-NEXT:       %23 = arith.constant 256 : index
// CHECK-NEXT:       %24 = arith.cmpi sge, %3, %23 : index
// CHECK-NEXT:       %25 = arith.andi %22, %24 : i1
// CHECK-NEXT:       %26 = tg.align_peel %z[%i, %c0] limit %3 alignment 64 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %27 = arith.select %25, %26, %3 : index
// CHECK-NEXT:       %28 = arith.addi %c0, %27 : index
// CHECK-NEXT:       %29 = arith.subi %m, %28 : index
// CHECK-NEXT:       %30 = arith.constant 16 : index
// CHECK-NEXT:       %31 = arith.divui %29, %30 : index
// CHECK-NEXT:       %32 = arith.muli %31, %30 : index
// CHECK-NEXT:       %33 = arith.addi %28, %32 : index
// CHECK-NEXT:       %34 = tg.address_offset %z[%i, %c0] modulo 4096 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %35 = tg.address_offset %x[%i, %c0] modulo 4096 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %36 = arith.subi %34, %35 : index
// CHECK-NEXT:       %37 = arith.constant 4095 : index
// CHECK-NEXT:       %38 = arith.andi %36, %37 : index
// CHECK-NEXT:       %39 = arith.cmpi ne, %38, %2 : index
// CHECK-NEXT:       %40 = arith.cmpi ult, %38, %23 : index
// CHECK-NEXT:       %41 = arith.andi %39, %40 : i1
// CHECK-NEXT:       %42 = arith.subi %35, %34 : index
// CHECK-NEXT:       %43 = arith.andi %42, %37 : index
// CHECK-NEXT:       %44 = arith.cmpi ne, %43, %2 : index
// CHECK-NEXT:       %45 = arith.cmpi ult, %43, %23 : index
// CHECK-NEXT:       %46 = arith.andi %44, %45 : i1
// CHECK-NEXT:       %47 = arith.andi %41, %46 : i1
// CHECK-NEXT:       %48 = arith.addi %31, %7 : index
// CHECK-NEXT:       %49 = arith.constant 2 : index
// CHECK-NEXT:       %50 = arith.divui %48, %49 : index
// CHECK-NEXT:       scf.for %51 = %2 to %49 step %7 {
// CHECK-NEXT:         %52 = arith.cmpi eq, %51, %2 : index
// CHECK-NEXT:         %53 = arith.select %52, %c0, %33 : index
// CHECK-NEXT:         %54 = arith.select %52, %28, %m : index
// CHECK-NEXT:         scf.for %j_1 = %53 to %54 step %c1 {
// CHECK-NEXT:           %v_1 = memref.load %x[%i, %j_1] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:           %w_1 = arith.addf %v_1, %v_1 : f32
// CHECK-NEXT:           memref.store %w_1, %z[%i, %j_1] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         }
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 0>}
// CHECK-NEXT:       scf.for %55 = %28 to %33 step %30 {
// CHECK-NEXT:         %56 = arith.subi %55, %28 : index
// CHECK-NEXT:         %57 = arith.divui %56, %30 : index
// CHECK-NEXT:         %58 = arith.subi %31, %7 : index
// CHECK-NEXT:         %59 = arith.subi %58, %57 : index
// CHECK-NEXT:         %60 = arith.muli %57, %49 : index
// CHECK-NEXT:         %61 = arith.subi %57, %50 : index
// CHECK-NEXT:         %62 = arith.muli %61, %49 : index
// CHECK-NEXT:         %63 = arith.addi %62, %7 : index
// CHECK-NEXT:         %64 = arith.cmpi ult, %57, %50 : index
// CHECK-NEXT:         %65 = arith.select %64, %60, %63 : index
// CHECK-NEXT:         %66 = arith.select %41, %59, %57 : index
// CHECK-NEXT:         %67 = arith.select %47, %65, %66 : index
// CHECK-NEXT:         %68 = arith.muli %67, %30 : index
// CHECK-NEXT:         %69 = arith.addi %28, %68 : index
// CHECK-NEXT:         tg.assume_aligned %z[%i, %69] alignment 64 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %70 = arith.constant 0 : index
// CHECK-NEXT:         %71 = arith.constant 16 : index
// CHECK-NEXT:         %72 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %73 = %70 to %71 step %72 {
// CHECK-NEXT:           %74 = arith.addi %69, %73 : index
// CHECK-NEXT:           %v_2 = memref.load %x[%i, %74] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:           %w_2 = arith.addf %v_2, %v_2 : f32
// CHECK-NEXT:           memref.store %w_2, %0[%73] : memref<16xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:         %75 = arith.constant 0 : index
// CHECK-NEXT:         %76 = arith.addi %69, %75 : index
// CHECK-NEXT:         %77 = memref.load %0[%75] : memref<16xf32>
// CHECK-NEXT:         memref.store %77, %z[%i, %76] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %78 = arith.constant 1 : index
// CHECK-NEXT:         %79 = arith.addi %69, %78 : index
// CHECK-NEXT:         %80 = memref.load %0[%78] : memref<16xf32>
// CHECK-NEXT:         memref.store %80, %z[%i, %79] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %81 = arith.constant 2 : index
// CHECK-NEXT:         %82 = arith.addi %69, %81 : index
// CHECK-NEXT:         %83 = memref.load %0[%81] : memref<16xf32>
// CHECK-NEXT:         memref.store %83, %z[%i, %82] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %84 = arith.constant 3 : index
// CHECK-NEXT:         %85 = arith.addi %69, %84 : index
// CHECK-NEXT:         %86 = memref.load %0[%84] : memref<16xf32>
// CHECK-NEXT:         memref.store %86, %z[%i, %85] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %87 = arith.constant 4 : index
// CHECK-NEXT:         %88 = arith.addi %69, %87 : index
// CHECK-NEXT:         %89 = memref.load %0[%87] : memref<16xf32>
// CHECK-NEXT:         memref.store %89, %z[%i, %88] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %90 = arith.constant 5 : index
// CHECK-NEXT:         %91 = arith.addi %69, %90 : index
// CHECK-NEXT:         %92 = memref.load %0[%90] : memref<16xf32>
// CHECK-NEXT:         memref.store %92, %z[%i, %91] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %93 = arith.constant 6 : index
// CHECK-NEXT:         %94 = arith.addi %69, %93 : index
// CHECK-NEXT:         %95 = memref.load %0[%93] : memref<16xf32>
// CHECK-NEXT:         memref.store %95, %z[%i, %94] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %96 = arith.constant 7 : index
// CHECK-NEXT:         %97 = arith.addi %69, %96 : index
// CHECK-NEXT:         %98 = memref.load %0[%96] : memref<16xf32>
// CHECK-NEXT:         memref.store %98, %z[%i, %97] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %99 = arith.constant 8 : index
// CHECK-NEXT:         %100 = arith.addi %69, %99 : index
// CHECK-NEXT:         %101 = memref.load %0[%99] : memref<16xf32>
// CHECK-NEXT:         memref.store %101, %z[%i, %100] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %102 = arith.constant 9 : index
// CHECK-NEXT:         %103 = arith.addi %69, %102 : index
// CHECK-NEXT:         %104 = memref.load %0[%102] : memref<16xf32>
// CHECK-NEXT:         memref.store %104, %z[%i, %103] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %105 = arith.constant 10 : index
// CHECK-NEXT:         %106 = arith.addi %69, %105 : index
// CHECK-NEXT:         %107 = memref.load %0[%105] : memref<16xf32>
// CHECK-NEXT:         memref.store %107, %z[%i, %106] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %108 = arith.constant 11 : index
// CHECK-NEXT:         %109 = arith.addi %69, %108 : index
// CHECK-NEXT:         %110 = memref.load %0[%108] : memref<16xf32>
// CHECK-NEXT:         memref.store %110, %z[%i, %109] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %111 = arith.constant 12 : index
// CHECK-NEXT:         %112 = arith.addi %69, %111 : index
// CHECK-NEXT:         %113 = memref.load %0[%111] : memref<16xf32>
// CHECK-NEXT:         memref.store %113, %z[%i, %112] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %114 = arith.constant 13 : index
// CHECK-NEXT:         %115 = arith.addi %69, %114 : index
// CHECK-NEXT:         %116 = memref.load %0[%114] : memref<16xf32>
// CHECK-NEXT:         memref.store %116, %z[%i, %115] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %117 = arith.constant 14 : index
// CHECK-NEXT:         %118 = arith.addi %69, %117 : index
// CHECK-NEXT:         %119 = memref.load %0[%117] : memref<16xf32>
// CHECK-NEXT:         memref.store %119, %z[%i, %118] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %120 = arith.constant 15 : index
// CHECK-NEXT:         %121 = arith.addi %69, %120 : index
// CHECK-NEXT:         %122 = memref.load %0[%120] : memref<16xf32>
// CHECK-NEXT:         memref.store %122, %z[%i, %121] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
