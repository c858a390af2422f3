// RUN: tilegrad opt %s -p 'stream-stores{min_bytes=4096}' | filecheck %s

// y = x * x is an output the stage only writes (z is read too): where the tensors span 4096 bytes or more
// and a row 256 elements or more, y's row is stored in whole 64-byte lines with non-temporal stores
// (through a stack line of 16 floats), in an order chosen from where y sits in a page beside x and z;
// the unaligned head and the tail of each row run the original loop with plain stores.

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
        %old = memref.load %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        %sum = arith.addf %old, %w : f32
        memref.store %sum, %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
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
// CHECK-NEXT:       %26 = tg.align_peel %y[%i, %c0] limit %3 alignment 64 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %27 = arith.select %25, %26, %3 : index
// CHECK-NEXT:       %28 = arith.addi %c0, %27 : index
// CHECK-NEXT:       %29 = arith.subi %m, %28 : index
// CHECK-NEXT:       %30 = arith.constant 16 : index
// CHECK-NEXT:       %31 = arith.divui %29, %30 : index
// CHECK-NEXT:       %32 = arith.muli %31, %30 : index
// CHECK-NEXT:       %33 = arith.addi %28, %32 : index
// CHECK-NEXT:       %34 = tg.address_offset %y[%i, %c0] modulo 4096 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %35 = tg.address_offset %x[%i, %c0] modulo 4096 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %36 = tg.address_offset %z[%i, %c0] modulo 4096 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       %37 = arith.subi %34, %35 : index
// CHECK-NEXT:       %38 = arith.constant 4095 : index
// CHECK-NEXT:       %39 = arith.andi %37, %38 : index
// CHECK-NEXT:       %40 = arith.cmpi ne, %39, %2 : index
// CHECK-NEXT:       %41 = arith.cmpi ult, %39, %23 : index
// CHECK-NEXT:       %42 = arith.andi %40, %41 : i1
// CHECK-NEXT:       %43 = arith.subi %34, %36 : index
// CHECK-NEXT:       %44 = arith.andi %43, %38 : index
// CHECK-NEXT:       %45 = arith.cmpi ne, %44, %2 : index
// CHECK-NEXT:       %46 = arith.cmpi ult, %44, %23 : index
// CHECK-NEXT:       %47 = arith.andi %45, %46 : i1
// CHECK-NEXT:       %48 = arith.ori %42, %47 : i1
// CHECK-NEXT:       %49 = arith.subi %35, %34 : index
// CHECK-NEXT:       %50 = arith.andi %49, %38 : index
// CHECK-NEXT:       %51 = arith.cmpi ne, %50, %2 : index
// CHECK-NEXT:       %52 = arith.cmpi ult, %50, %23 : index
// CHECK-NEXT:       %53 = arith.andi %51, %52 : i1
// CHECK-NEXT:       %54 = arith.subi %36, %34 : index
// CHECK-NEXT:       %55 = arith.andi %54, %38 : index
// CHECK-NEXT:       %56 = arith.cmpi ne, %55, %2 : index
// CHECK-NEXT:       %57 = arith.cmpi ult, %55, %23 : index
// CHECK-NEXT:       %58 = arith.andi %56, %57 : i1
// CHECK-NEXT:       %59 = arith.ori %53, %58 : i1
// CHECK-NEXT:       %60 = arith.andi %48, %59 : i1
// CHECK-NEXT:       %61 = arith.addi %31, %7 : index
// CHECK-NEXT:       %62 = arith.constant 2 : index
// CHECK-NEXT:       %63 = arith.divui %61, %62 : index
// CHECK-NEXT:       scf.for %64 = %2 to %62 step %7 {
// CHECK-NEXT:         %65 = arith.cmpi eq, %64, %2 : index
// CHECK-NEXT:         %66 = arith.select %65, %c0, %33 : index
// CHECK-NEXT:         %67 = arith.select %65, %28, %m : index
// CHECK-NEXT:         scf.for %j = %66 to %67 step %c1 {
// CHECK-NEXT:           %v = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:           %w = arith.mulf %v, %v : f32
// CHECK-NEXT:           memref.store %w, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:           %old = memref.load %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:           %sum = arith.addf %old, %w : f32
// CHECK-NEXT:           memref.store %sum, %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         }
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 0>}
// CHECK-NEXT:       scf.for %68 = %28 to %33 step %30 {
// CHECK-NEXT:         %69 = arith.subi %68, %28 : index
// CHECK-NEXT:         %70 = arith.divui %69, %30 : index
// CHECK-NEXT:         %71 = arith.subi %31, %7 : index
// CHECK-NEXT:         %72 = arith.subi %71, %70 : index
// CHECK-NEXT:         %73 = arith.muli %70, %62 : index
// CHECK-NEXT:         %74 = arith.subi %70, %63 : index
// CHECK-NEXT:         %75 = arith.muli %74, %62 : index
// CHECK-NEXT:         %76 = arith.addi %75, %7 : index
// CHECK-NEXT:         %77 = arith.cmpi ult, %70, %63 : index
// CHECK-NEXT:         %78 = arith.select %77, %73, %76 : index
// CHECK-NEXT:         %79 = arith.select %48, %72, %70 : index
// CHECK-NEXT:         %80 = arith.select %60, %78, %79 : index
// CHECK-NEXT:         %81 = arith.muli %80, %30 : index
// CHECK-NEXT:         %82 = arith.addi %28, %81 : index
// CHECK-NEXT:         tg.assume_aligned %y[%i, %82] alignment 64 : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %83 = arith.constant 0 : index
// CHECK-NEXT:         %84 = arith.constant 16 : index
// CHECK-NEXT:         %85 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %86 = %83 to %84 step %85 {
// CHECK-NEXT:           %87 = arith.addi %82, %86 : index
// CHECK-NEXT:           %v_1 = memref.load %x[%i, %87] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:           %w_1 = arith.mulf %v_1, %v_1 : f32
// CHECK-NEXT:           memref.store %w_1, %0[%86] : memref<16xf32>
// CHECK-NEXT:           %old_1 = memref.load %z[%i, %87] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:           %sum_1 = arith.addf %old_1, %w_1 : f32
// CHECK-NEXT:           memref.store %sum_1, %z[%i, %87] : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         }
// CHECK-NEXT:         %88 = arith.constant 0 : index
// CHECK-NEXT:         %89 = arith.addi %82, %88 : index
// CHECK-NEXT:         %90 = memref.load %0[%88] : memref<16xf32>
// CHECK-NEXT:         memref.store %90, %y[%i, %89] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %91 = arith.constant 1 : index
// CHECK-NEXT:         %92 = arith.addi %82, %91 : index
// CHECK-NEXT:         %93 = memref.load %0[%91] : memref<16xf32>
// CHECK-NEXT:         memref.store %93, %y[%i, %92] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %94 = arith.constant 2 : index
// CHECK-NEXT:         %95 = arith.addi %82, %94 : index
// CHECK-NEXT:         %96 = memref.load %0[%94] : memref<16xf32>
// CHECK-NEXT:         memref.store %96, %y[%i, %95] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %97 = arith.constant 3 : index
// CHECK-NEXT:         %98 = arith.addi %82, %97 : index
// CHECK-NEXT:         %99 = memref.load %0[%97] : memref<16xf32>
// CHECK-NEXT:         memref.store %99, %y[%i, %98] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %100 = arith.constant 4 : index
// CHECK-NEXT:         %101 = arith.addi %82, %100 : index
// CHECK-NEXT:         %102 = memref.load %0[%100] : memref<16xf32>
// CHECK-NEXT:         memref.store %102, %y[%i, %101] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %103 = arith.constant 5 : index
// CHECK-NEXT:         %104 = arith.addi %82, %103 : index
// CHECK-NEXT:         %105 = memref.load %0[%103] : memref<16xf32>
// CHECK-NEXT:         memref.store %105, %y[%i, %104] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %106 = arith.constant 6 : index
// CHECK-NEXT:         %107 = arith.addi %82, %106 : index
// CHECK-NEXT:         %108 = memref.load %0[%106] : memref<16xf32>
// CHECK-NEXT:         memref.store %108, %y[%i, %107] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %109 = arith.constant 7 : index
// CHECK-NEXT:         %110 = arith.addi %82, %109 : index
// CHECK-NEXT:         %111 = memref.load %0[%109] : memref<16xf32>
// CHECK-NEXT:         memref.store %111, %y[%i, %110] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %112 = arith.constant 8 : index
// CHECK-NEXT:         %113 = arith.addi %82, %112 : index
// CHECK-NEXT:         %114 = memref.load %0[%112] : memref<16xf32>
// CHECK-NEXT:         memref.store %114, %y[%i, %113] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %115 = arith.constant 9 : index
// CHECK-NEXT:         %116 = arith.addi %82, %115 : index
// CHECK-NEXT:         %117 = memref.load %0[%115] : memref<16xf32>
// CHECK-NEXT:         memref.store %117, %y[%i, %116] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %118 = arith.constant 10 : index
// CHECK-NEXT:         %119 = arith.addi %82, %118 : index
// CHECK-NEXT:         %120 = memref.load %0[%118] : memref<16xf32>
// CHECK-NEXT:         memref.store %120, %y[%i, %119] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %121 = arith.constant 11 : index
// CHECK-NEXT:         %122 = arith.addi %82, %121 : index
// CHECK-NEXT:         %123 = memref.load %0[%121] : memref<16xf32>
// CHECK-NEXT:         memref.store %123, %y[%i, %122] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %124 = arith.constant 12 : index
// CHECK-NEXT:         %125 = arith.addi %82, %124 : index
// CHECK-NEXT:         %126 = memref.load %0[%124] : memref<16xf32>
// CHECK-NEXT:         memref.store %126, %y[%i, %125] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %127 = arith.constant 13 : index
// CHECK-NEXT:         %128 = arith.addi %82, %127 : index
// CHECK-NEXT:         %129 = memref.load %0[%127] : memref<16xf32>
// CHECK-NEXT:         memref.store %129, %y[%i, %128] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %130 = arith.constant 14 : index
// CHECK-NEXT:         %131 = arith.addi %82, %130 : index
// CHECK-NEXT:         %132 = memref.load %0[%130] : memref<16xf32>
// CHECK-NEXT:         memref.store %132, %y[%i, %131] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:         %133 = arith.constant 15 : index
// CHECK-NEXT:         %134 = arith.addi %82, %133 : index
// CHECK-NEXT:         %135 = memref.load %0[%133] : memref<16xf32>
// CHECK-NEXT:         memref.store %135, %y[%i, %134] {nontemporal = true} : memref<?x?xf32, strided<[?, 1]>>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
