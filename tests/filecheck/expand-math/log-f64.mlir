// RUN: tilegrad opt %s -p 'expand-math' | filecheck %s

// A float64 log becomes fdlibm's e_log.c in arith ops: a denormal scaled by 2^54 first, x = 2^k (1 + f)
// with 1 + f in [sqrt(1/2), sqrt(2)) from the bits (i64), s = f / (2 + f), R(s^2) in even and odd halves,
// then selects for 0 (-inf), below 0 (NaN), inf and NaN.

builtin.module {
  func.func @k(%x: memref<?xf64> {tg.name = "x", tg.role = "input"}, %y: memref<?xf64> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf64>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf64>
      %e = math.log %v : f64
      memref.store %e, %y[%i] : memref<?xf64>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @k(%x: memref<?xf64> {tg.name = "x", tg.role = "input"}, %y: memref<?xf64> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %x, %c0 : memref<?xf64>
// CHECK-NEXT:     scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:       %v = memref.load %x[%i] : memref<?xf64>
// CHECK-NEXT:       %e = arith.constant 2.2250738585072014e-308 : f64
// CHECK-NEXT:       %e_1 = arith.cmpf olt, %v, %e : f64
// CHECK-NEXT:       %e_2 = arith.constant 0x4350000000000000 : f64
// CHECK-NEXT:       %e_3 = arith.mulf %v, %e_2 fastmath<contract> : f64
// CHECK-NEXT:       %e_4 = arith.select %e_1, %e_3, %v : f64
// CHECK-NEXT:       %e_5 = arith.bitcast %e_4 : f64 to i64
// CHECK-NEXT:       %e_6 = arith.constant 52 : i64
// CHECK-NEXT:       %e_7 = arith.shrsi %e_5, %e_6 : i64
// CHECK-NEXT:       %e_8 = arith.constant 1022 : i64
// CHECK-NEXT:       %e_9 = arith.subi %e_7, %e_8 : i64
// CHECK-NEXT:       %e_10 = arith.constant 54 : i64
// CHECK-NEXT:       %e_11 = arith.constant 0 : i64
// CHECK-NEXT:       %e_12 = arith.select %e_1, %e_10, %e_11 : i64
// CHECK-NEXT:       %e_13 = arith.subi %e_9, %e_12 : i64
// CHECK-NEXT:       %e_14 = arith.constant 4503599627370495 : i64
// CHECK-NEXT:       %e_15 = arith.andi %e_5, %e_14 : i64
// CHECK-NEXT:       %e_16 = arith.constant 4602678819172646912 : i64
// CHECK-NEXT:       %e_17 = arith.ori %e_15, %e_16 : i64
// CHECK-NEXT:       %e_18 = arith.bitcast %e_17 : i64 to f64
// CHECK-NEXT:       %e_19 = arith.constant 0.70710678118654757 : f64
// CHECK-NEXT:       %e_20 = arith.cmpf olt, %e_18, %e_19 : f64
// CHECK-NEXT:       %e_21 = arith.constant 1 : i64
// CHECK-NEXT:       %e_22 = arith.constant 0 : i64
// CHECK-NEXT:       %e_23 = arith.select %e_20, %e_21, %e_22 : i64
// CHECK-NEXT:       %e_24 = arith.subi %e_13, %e_23 : i64
// CHECK-NEXT:       %e_25 = arith.addf %e_18, %e_18 fastmath<contract> : f64
// CHECK-NEXT:       %e_26 = arith.select %e_20, %e_25, %e_18 : f64
// CHECK-NEXT:       %e_27 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_28 = arith.subf %e_26, %e_27 fastmath<contract> : f64
// CHECK-NEXT:       %e_29 = arith.sitofp %e_24 : i64 to f64
// CHECK-NEXT:       %e_30 = arith.constant 2.000000e+00 : f64
// CHECK-NEXT:       %e_31 = arith.addf %e_30, %e_28 fastmath<contract> : f64
// CHECK-NEXT:       %e_32 = arith.divf %e_28, %e_31 : f64
// CHECK-NEXT:       %e_33 = arith.mulf %e_32, %e_32 fastmath<contract> : f64
// CHECK-NEXT:       %e_34 = arith.mulf %e_33, %e_33 fastmath<contract> : f64
// CHECK-NEXT:       %e_35 = arith.constant 0.14798198605116586 : f64
// CHECK-NEXT:       %e_36 = arith.mulf %e_35, %e_34 fastmath<contract> : f64
// CHECK-NEXT:       %e_37 = arith.constant 0.1818357216161805 : f64
// CHECK-NEXT:       %e_38 = arith.addf %e_36, %e_37 fastmath<contract> : f64
// CHECK-NEXT:       %e_39 = arith.mulf %e_38, %e_34 fastmath<contract> : f64
// CHECK-NEXT:       %e_40 = arith.constant 0.28571428743662391 : f64
// CHECK-NEXT:       %e_41 = arith.addf %e_39, %e_40 fastmath<contract> : f64
// CHECK-NEXT:       %e_42 = arith.mulf %e_41, %e_34 fastmath<contract> : f64
// CHECK-NEXT:       %e_43 = arith.constant 0.66666666666667351 : f64
// CHECK-NEXT:       %e_44 = arith.addf %e_42, %e_43 fastmath<contract> : f64
// CHECK-NEXT:       %e_45 = arith.mulf %e_33, %e_44 fastmath<contract> : f64
// CHECK-NEXT:       %e_46 = arith.constant 0.15313837699209373 : f64
// CHECK-NEXT:       %e_47 = arith.mulf %e_46, %e_34 fastmath<contract> : f64
// CHECK-NEXT:       %e_48 = arith.constant 0.22222198432149784 : f64
// CHECK-NEXT:       %e_49 = arith.addf %e_47, %e_48 fastmath<contract> : f64
// CHECK-NEXT:       %e_50 = arith.mulf %e_49, %e_34 fastmath<contract> : f64
// CHECK-NEXT:       %e_51 = arith.constant 0.39999999999409419 : f64
// CHECK-NEXT:       %e_52 = arith.addf %e_50, %e_51 fastmath<contract> : f64
// CHECK-NEXT:       %e_53 = arith.mulf %e_34, %e_52 fastmath<contract> : f64
// CHECK-NEXT:       %e_54 = arith.addf %e_45, %e_53 fastmath<contract> : f64
// CHECK-NEXT:       %e_55 = arith.constant 5.000000e-01 : f64
// CHECK-NEXT:       %e_56 = arith.mulf %e_55, %e_28 fastmath<contract> : f64
// CHECK-NEXT:       %e_57 = arith.mulf %e_56, %e_28 fastmath<contract> : f64
// CHECK-NEXT:       %e_58 = arith.addf %e_57, %e_54 fastmath<contract> : f64
// CHECK-NEXT:       %e_59 = arith.mulf %e_32, %e_58 fastmath<contract> : f64
// CHECK-NEXT:       %e_60 = arith.constant 1.9082149292705877e-10 : f64
// CHECK-NEXT:       %e_61 = arith.mulf %e_29, %e_60 fastmath<contract> : f64
// CHECK-NEXT:       %e_62 = arith.addf %e_59, %e_61 fastmath<contract> : f64
// CHECK-NEXT:       %e_63 = arith.constant 0.69314718036912382 : f64
// CHECK-NEXT:       %e_64 = arith.mulf %e_29, %e_63 fastmath<contract> : f64
// CHECK-NEXT:       %e_65 = arith.subf %e_57, %e_62 fastmath<contract> : f64
// CHECK-NEXT:       %e_66 = arith.subf %e_65, %e_28 fastmath<contract> : f64
// CHECK-NEXT:       %e_67 = arith.subf %e_64, %e_66 fastmath<contract> : f64
// CHECK-NEXT:       %e_68 = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:       %e_69 = arith.cmpf oeq, %v, %e_68 : f64
// CHECK-NEXT:       %e_70 = arith.constant 0xfff0000000000000 : f64
// CHECK-NEXT:       %e_71 = arith.select %e_69, %e_70, %e_67 : f64
// CHECK-NEXT:       %e_72 = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:       %e_73 = arith.cmpf olt, %v, %e_72 : f64
// CHECK-NEXT:       %e_74 = arith.constant 0x7ff8000000000000 : f64
// CHECK-NEXT:       %e_75 = arith.select %e_73, %e_74, %e_71 : f64
// CHECK-NEXT:       %e_76 = arith.constant 0x7ff0000000000000 : f64
// CHECK-NEXT:       %e_77 = arith.cmpf oeq, %v, %e_76 : f64
// CHECK-NEXT:       %e_78 = arith.select %e_77, %v, %e_75 : f64
// CHECK-NEXT:       %e_79 = arith.cmpf uno, %v, %v : f64
// CHECK-NEXT:       %e_80 = arith.select %e_79, %v, %e_78 : f64
// CHECK-NEXT:       memref.store %e_80, %y[%i] : memref<?xf64>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
