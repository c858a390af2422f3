// RUN: tilegrad opt %s -p 'expand-math' | filecheck %s

// A float64 exp becomes fdlibm's e_exp.c in arith ops: clamp to [-746, 710], k = round(x / ln 2) by the
// 1.5 * 2^52 rounder, r = x - k ln2 (high and low parts), c = r - r^2 P(r^2) with a degree-4 P,
// exp(r) = 1 - ((lo - r c / (2 - c)) - hi), scaled by 2^k as two factors built in the exponent bits (i64).

builtin.module {
  func.func @k(%x: memref<?xf64> {tg.name = "x", tg.role = "input"}, %y: memref<?xf64> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf64>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf64>
      %e = math.exp %v : f64
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
// CHECK-NEXT:       %e = arith.constant 7.100000e+02 : f64
// CHECK-NEXT:       %e_1 = arith.constant -7.460000e+02 : f64
// CHECK-NEXT:       %e_2 = arith.cmpf ogt, %v, %e : f64
// CHECK-NEXT:       %e_3 = arith.select %e_2, %e, %v : f64
// CHECK-NEXT:       %e_4 = arith.cmpf olt, %e_3, %e_1 : f64
// CHECK-NEXT:       %e_5 = arith.select %e_4, %e_1, %e_3 : f64
// CHECK-NEXT:       %e_6 = arith.constant 1.4426950408889634 : f64
// CHECK-NEXT:       %e_7 = arith.mulf %e_5, %e_6 fastmath<contract> : f64
// CHECK-NEXT:       %e_8 = arith.constant 0x4338000000000000 : f64
// CHECK-NEXT:       %e_9 = arith.addf %e_7, %e_8 fastmath<contract> : f64
// CHECK-NEXT:       %e_10 = arith.constant 0x4338000000000000 : f64
// CHECK-NEXT:       %e_11 = arith.subf %e_9, %e_10 fastmath<contract> : f64
// CHECK-NEXT:       %e_12 = arith.constant 0.69314718036912382 : f64
// CHECK-NEXT:       %e_13 = arith.mulf %e_11, %e_12 fastmath<contract> : f64
// CHECK-NEXT:       %e_14 = arith.subf %e_5, %e_13 fastmath<contract> : f64
// CHECK-NEXT:       %e_15 = arith.constant 1.9082149292705877e-10 : f64
// CHECK-NEXT:       %e_16 = arith.mulf %e_11, %e_15 fastmath<contract> : f64
// CHECK-NEXT:       %e_17 = arith.subf %e_14, %e_16 fastmath<contract> : f64
// CHECK-NEXT:       %e_18 = arith.mulf %e_17, %e_17 fastmath<contract> : f64
// CHECK-NEXT:       %e_19 = arith.constant 4.1381367970572385e-08 : f64
// CHECK-NEXT:       %e_20 = arith.mulf %e_19, %e_18 fastmath<contract> : f64
// CHECK-NEXT:       %e_21 = arith.constant -1.6533902205465252e-06 : f64
// CHECK-NEXT:       %e_22 = arith.addf %e_20, %e_21 fastmath<contract> : f64
// CHECK-NEXT:       %e_23 = arith.mulf %e_22, %e_18 fastmath<contract> : f64
// CHECK-NEXT:       %e_24 = arith.constant 6.6137563214379344e-05 : f64
// CHECK-NEXT:       %e_25 = arith.addf %e_23, %e_24 fastmath<contract> : f64
// CHECK-NEXT:       %e_26 = arith.mulf %e_25, %e_18 fastmath<contract> : f64
// CHECK-NEXT:       %e_27 = arith.constant -0.0027777777777015593 : f64
// CHECK-NEXT:       %e_28 = arith.addf %e_26, %e_27 fastmath<contract> : f64
// CHECK-NEXT:       %e_29 = arith.mulf %e_28, %e_18 fastmath<contract> : f64
// CHECK-NEXT:       %e_30 = arith.constant 0.16666666666666602 : f64
// CHECK-NEXT:       %e_31 = arith.addf %e_29, %e_30 fastmath<contract> : f64
// CHECK-NEXT:       %e_32 = arith.mulf %e_18, %e_31 fastmath<contract> : f64
// CHECK-NEXT:       %e_33 = arith.subf %e_17, %e_32 fastmath<contract> : f64
// CHECK-NEXT:       %e_34 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_35 = arith.mulf %e_17, %e_33 fastmath<contract> : f64
// CHECK-NEXT:       %e_36 = arith.constant 2.000000e+00 : f64
// CHECK-NEXT:       %e_37 = arith.subf %e_36, %e_33 fastmath<contract> : f64
// CHECK-NEXT:       %e_38 = arith.divf %e_35, %e_37 : f64
// CHECK-NEXT:       %e_39 = arith.subf %e_16, %e_38 fastmath<contract> : f64
// CHECK-NEXT:       %e_40 = arith.subf %e_39, %e_14 fastmath<contract> : f64
// CHECK-NEXT:       %e_41 = arith.subf %e_34, %e_40 fastmath<contract> : f64
// CHECK-NEXT:       %e_42 = arith.bitcast %e_9 : f64 to i64
// CHECK-NEXT:       %e_43 = arith.constant 0x4338000000000000 : f64
// CHECK-NEXT:       %e_44 = arith.bitcast %e_43 : f64 to i64
// CHECK-NEXT:       %e_45 = arith.subi %e_42, %e_44 : i64
// CHECK-NEXT:       %e_46 = arith.constant 1 : i64
// CHECK-NEXT:       %e_47 = arith.shrsi %e_45, %e_46 : i64
// CHECK-NEXT:       %e_48 = arith.constant 1023 : i64
// CHECK-NEXT:       %e_49 = arith.addi %e_47, %e_48 : i64
// CHECK-NEXT:       %e_50 = arith.constant 52 : i64
// CHECK-NEXT:       %e_51 = arith.shli %e_49, %e_50 : i64
// CHECK-NEXT:       %e_52 = arith.bitcast %e_51 : i64 to f64
// CHECK-NEXT:       %e_53 = arith.mulf %e_41, %e_52 fastmath<contract> : f64
// CHECK-NEXT:       %e_54 = arith.subi %e_45, %e_47 : i64
// CHECK-NEXT:       %e_55 = arith.constant 1023 : i64
// CHECK-NEXT:       %e_56 = arith.addi %e_54, %e_55 : i64
// CHECK-NEXT:       %e_57 = arith.constant 52 : i64
// CHECK-NEXT:       %e_58 = arith.shli %e_56, %e_57 : i64
// CHECK-NEXT:       %e_59 = arith.bitcast %e_58 : i64 to f64
// CHECK-NEXT:       %e_60 = arith.mulf %e_53, %e_59 fastmath<contract> : f64
// CHECK-NEXT:       memref.store %e_60, %y[%i] : memref<?xf64>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
