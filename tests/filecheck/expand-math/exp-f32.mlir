// RUN: tilegrad opt %s -p 'expand-math' | filecheck %s

// A float32 exp becomes Cephes' expf in arith ops: clamp the argument, range-reduce by ln 2 (split in a
// high and a low part), a degree-5 polynomial, and scale by 2^n built in the exponent bits; exp(-inf) = 0,
// exp(x > 88.72...) = inf and NaN stay as libm has them.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf32>
      %e = math.exp %v : f32
      memref.store %e, %y[%i] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?xf32>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       %v = memref.load %x[%i] : memref<?xf32>
// CHECK-NEXT:       %e = arith.constant 1.000000e+02 : f32
// CHECK-NEXT:       %e_1 = arith.constant -1.040000e+02 : f32
// CHECK-NEXT:       %e_2 = arith.cmpf ogt, %v, %e : f32
// CHECK-NEXT:       %e_3 = arith.select %e_2, %e, %v : f32
// CHECK-NEXT:       %e_4 = arith.cmpf olt, %e_3, %e_1 : f32
// CHECK-NEXT:       %e_5 = arith.select %e_4, %e_1, %e_3 : f32
// CHECK-NEXT:       %e_6 = arith.constant 1.44269502 : f32
// CHECK-NEXT:       %e_7 = arith.mulf %e_5, %e_6 fastmath<contract> : f32
// CHECK-NEXT:       %e_8 = arith.constant 0x4B400000 : f32
// CHECK-NEXT:       %e_9 = arith.addf %e_7, %e_8 fastmath<contract> : f32
// CHECK-NEXT:       %e_10 = arith.constant 0x4B400000 : f32
// CHECK-NEXT:       %e_11 = arith.subf %e_9, %e_10 fastmath<contract> : f32
// CHECK-NEXT:       %e_12 = arith.constant 0.693359375 : f32
// CHECK-NEXT:       %e_13 = arith.mulf %e_11, %e_12 fastmath<contract> : f32
// CHECK-NEXT:       %e_14 = arith.subf %e_5, %e_13 fastmath<contract> : f32
// CHECK-NEXT:       %e_15 = arith.constant -0.000212194442 : f32
// CHECK-NEXT:       %e_16 = arith.mulf %e_11, %e_15 fastmath<contract> : f32
// CHECK-NEXT:       %e_17 = arith.subf %e_14, %e_16 fastmath<contract> : f32
// CHECK-NEXT:       %e_18 = arith.constant 0.000198756912 : f32
// CHECK-NEXT:       %e_19 = arith.mulf %e_18, %e_17 fastmath<contract> : f32
// CHECK-NEXT:       %e_20 = arith.constant 0.00139819994 : f32
// CHECK-NEXT:       %e_21 = arith.addf %e_19, %e_20 fastmath<contract> : f32
// CHECK-NEXT:       %e_22 = arith.mulf %e_21, %e_17 fastmath<contract> : f32
// CHECK-NEXT:       %e_23 = arith.constant 0.00833345205 : f32
// CHECK-NEXT:       %e_24 = arith.addf %e_22, %e_23 fastmath<contract> : f32
// CHECK-NEXT:       %e_25 = arith.mulf %e_24, %e_17 fastmath<contract> : f32
// CHECK-NEXT:       %e_26 = arith.constant 0.0416657962 : f32
// CHECK-NEXT:       %e_27 = arith.addf %e_25, %e_26 fastmath<contract> : f32
// CHECK-NEXT:       %e_28 = arith.mulf %e_27, %e_17 fastmath<contract> : f32
// CHECK-NEXT:       %e_29 = arith.constant 0.166666657 : f32
// CHECK-NEXT:       %e_30 = arith.addf %e_28, %e_29 fastmath<contract> : f32
// CHECK-NEXT:       %e_31 = arith.mulf %e_30, %e_17 fastmath<contract> : f32
// CHECK-NEXT:       %e_32 = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:       %e_33 = arith.addf %e_31, %e_32 fastmath<contract> : f32
// CHECK-NEXT:       %e_34 = arith.mulf %e_17, %e_17 fastmath<contract> : f32
// CHECK-NEXT:       %e_35 = arith.mulf %e_33, %e_34 fastmath<contract> : f32
// CHECK-NEXT:       %e_36 = arith.addf %e_35, %e_17 fastmath<contract> : f32
// CHECK-NEXT:       %e_37 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:       %e_38 = arith.addf %e_36, %e_37 fastmath<contract> : f32
// CHECK-NEXT:       %e_39 = arith.bitcast %e_9 : f32 to i32
// CHECK-NEXT:       %e_40 = arith.constant 0x4B400000 : f32
// CHECK-NEXT:       %e_41 = arith.bitcast %e_40 : f32 to i32
// CHECK-NEXT:       %e_42 = arith.subi %e_39, %e_41 : i32
// CHECK-NEXT:       %e_43 = arith.constant 1 : i32
// CHECK-NEXT:       %e_44 = arith.shrsi %e_42, %e_43 : i32
// CHECK-NEXT:       %e_45 = arith.constant 127 : i32
// CHECK-NEXT:       %e_46 = arith.addi %e_44, %e_45 : i32
// CHECK-NEXT:       %e_47 = arith.constant 23 : i32
// CHECK-NEXT:       %e_48 = arith.shli %e_46, %e_47 : i32
// CHECK-NEXT:       %e_49 = arith.bitcast %e_48 : i32 to f32
// CHECK-NEXT:       %e_50 = arith.mulf %e_38, %e_49 fastmath<contract> : f32
// CHECK-NEXT:       %e_51 = arith.subi %e_42, %e_44 : i32
// CHECK-NEXT:       %e_52 = arith.constant 127 : i32
// CHECK-NEXT:       %e_53 = arith.addi %e_51, %e_52 : i32
// CHECK-NEXT:       %e_54 = arith.constant 23 : i32
// CHECK-NEXT:       %e_55 = arith.shli %e_53, %e_54 : i32
// CHECK-NEXT:       %e_56 = arith.bitcast %e_55 : i32 to f32
// CHECK-NEXT:       %e_57 = arith.mulf %e_50, %e_56 fastmath<contract> : f32
// CHECK-NEXT:       memref.store %e_57, %y[%i] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
