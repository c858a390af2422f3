// RUN: tilegrad opt %s -p 'expand-math' | filecheck %s

// A float64 tanh becomes Cephes' tanh.c: x + x z P(z)/Q(z) (z = x^2) below |x| = 0.625, above it
// 1 - 2 / (exp(2|x|) + 1) with the sign of x put back, exp itself expanded as fdlibm's; a select picks.

builtin.module {
  func.func @k(%x: memref<?xf64> {tg.name = "x", tg.role = "input"}, %y: memref<?xf64> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf64>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf64>
      %e = math.tanh %v : f64
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
// CHECK-NEXT:       %e = math.absf %v : f64
// CHECK-NEXT:       %e_1 = arith.mulf %v, %v fastmath<contract> : f64
// CHECK-NEXT:       %e_2 = arith.constant -0.96439917942505227 : f64
// CHECK-NEXT:       %e_3 = arith.mulf %e_2, %e_1 fastmath<contract> : f64
// CHECK-NEXT:       %e_4 = arith.constant -99.287723100191855 : f64
// CHECK-NEXT:       %e_5 = arith.addf %e_3, %e_4 fastmath<contract> : f64
// CHECK-NEXT:       %e_6 = arith.mulf %e_5, %e_1 fastmath<contract> : f64
// CHECK-NEXT:       %e_7 = arith.constant -1614.6876844170845 : f64
// CHECK-NEXT:       %e_8 = arith.addf %e_6, %e_7 fastmath<contract> : f64
// CHECK-NEXT:       %e_9 = arith.mulf %e_1, %e_8 fastmath<contract> : f64
// CHECK-NEXT:       %e_10 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_11 = arith.mulf %e_10, %e_1 fastmath<contract> : f64
// CHECK-NEXT:       %e_12 = arith.constant 112.81167849163293 : f64
// CHECK-NEXT:       %e_13 = arith.addf %e_11, %e_12 fastmath<contract> : f64
// CHECK-NEXT:       %e_14 = arith.mulf %e_13, %e_1 fastmath<contract> : f64
// CHECK-NEXT:       %e_15 = arith.constant 2235.4883906010045 : f64
// CHECK-NEXT:       %e_16 = arith.addf %e_14, %e_15 fastmath<contract> : f64
// CHECK-NEXT:       %e_17 = arith.mulf %e_16, %e_1 fastmath<contract> : f64
// CHECK-NEXT:       %e_18 = arith.constant 4844.063053251255 : f64
// CHECK-NEXT:       %e_19 = arith.addf %e_17, %e_18 fastmath<contract> : f64
// CHECK-NEXT:       %e_20 = arith.divf %e_9, %e_19 : f64
// CHECK-NEXT:       %e_21 = arith.mulf %v, %e_20 fastmath<contract> : f64
// CHECK-NEXT:       %e_22 = arith.addf %e_21, %v fastmath<contract> : f64
// CHECK-NEXT:       %e_23 = arith.addf %e, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_24 = arith.constant 7.100000e+02 : f64
// CHECK-NEXT:       %e_25 = arith.constant -7.460000e+02 : f64
// CHECK-NEXT:       %e_26 = arith.cmpf ogt, %e_23, %e_24 : f64
// CHECK-NEXT:       %e_27 = arith.select %e_26, %e_24, %e_23 : f64
// CHECK-NEXT:       %e_28 = arith.cmpf olt, %e_27, %e_25 : f64
// CHECK-NEXT:       %e_29 = arith.select %e_28, %e_25, %e_27 : f64
// CHECK-NEXT:       %e_30 = arith.constant 1.4426950408889634 : f64
// CHECK-NEXT:       %e_31 = arith.mulf %e_29, %e_30 fastmath<contract> : f64
// CHECK-NEXT:       %e_32 = arith.constant 0x4338000000000000 : f64
// CHECK-NEXT:       %e_33 = arith.addf %e_31, %e_32 fastmath<contract> : f64
// CHECK-NEXT:       %e_34 = arith.constant 0x4338000000000000 : f64
// CHECK-NEXT:       %e_35 = arith.subf %e_33, %e_34 fastmath<contract> : f64
// CHECK-NEXT:       %e_36 = arith.constant 0.69314718036912382 : f64
// CHECK-NEXT:       %e_37 = arith.mulf %e_35, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_38 = arith.subf %e_29, %e_37 fastmath<contract> : f64
// CHECK-NEXT:       %e_39 = arith.constant 1.9082149292705877e-10 : f64
// CHECK-NEXT:       %e_40 = arith.mulf %e_35, %e_39 fastmath<contract> : f64
// CHECK-NEXT:       %e_41 = arith.subf %e_38, %e_40 fastmath<contract> : f64
// CHECK-NEXT:       %e_42 = arith.mulf %e_41, %e_41 fastmath<contract> : f64
// CHECK-NEXT:       %e_43 = arith.constant 4.1381367970572385e-08 : f64
// CHECK-NEXT:       %e_44 = arith.mulf %e_43, %e_42 fastmath<contract> : f64
// CHECK-NEXT:       %e_45 = arith.constant -1.6533902205465252e-06 : f64
// CHECK-NEXT:       %e_46 = arith.addf %e_44, %e_45 fastmath<contract> : f64
// CHECK-NEXT:       %e_47 = arith.mulf %e_46, %e_42 fastmath<contract> : f64
// CHECK-NEXT:       %e_48 = arith.constant 6.6137563214379344e-05 : f64
// CHECK-NEXT:       %e_49 = arith.addf %e_47, %e_48 fastmath<contract> : f64
// CHECK-NEXT:       %e_50 = arith.mulf %e_49, %e_42 fastmath<contract> : f64
// CHECK-NEXT:       %e_51 = arith.constant -0.0027777777777015593 : f64
// CHECK-NEXT:       %e_52 = arith.addf %e_50, %e_51 fastmath<contract> : f64
// CHECK-NEXT:       %e_53 = arith.mulf %e_52, %e_42 fastmath<contract> : f64
// CHECK-NEXT:       %e_54 = arith.constant 0.16666666666666602 : f64
// CHECK-NEXT:       %e_55 = arith.addf %e_53, %e_54 fastmath<contract> : f64
// CHECK-NEXT:       %e_56 = arith.mulf %e_42, %e_55 fastmath<contract> : f64
// CHECK-NEXT:       %e_57 = arith.subf %e_41, %e_56 fastmath<contract> : f64
// CHECK-NEXT:       %e_58 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_59 = arith.mulf %e_41, %e_57 fastmath<contract> : f64
// CHECK-NEXT:       %e_60 = arith.constant 2.000000e+00 : f64
// CHECK-NEXT:       %e_61 = arith.subf %e_60, %e_57 fastmath<contract> : f64
// CHECK-NEXT:       %e_62 = arith.divf %e_59, %e_61 : f64
// CHECK-NEXT:       %e_63 = arith.subf %e_40, %e_62 fastmath<contract> : f64
// CHECK-NEXT:       %e_64 = arith.subf %e_63, %e_38 fastmath<contract> : f64
// CHECK-NEXT:       %e_65 = arith.subf %e_58, %e_64 fastmath<contract> : f64
// CHECK-NEXT:       %e_66 = arith.bitcast %e_33 : f64 to i64
// CHECK-NEXT:       %e_67 = arith.constant 0x4338000000000000 : f64
// CHECK-NEXT:       %e_68 = arith.bitcast %e_67 : f64 to i64
// CHECK-NEXT:       %e_69 = arith.subi %e_66, %e_68 : i64
// CHECK-NEXT:       %e_70 = arith.constant 1 : i64
// CHECK-NEXT:       %e_71 = arith.shrsi %e_69, %e_70 : i64
// CHECK-NEXT:       %e_72 = arith.constant 1023 : i64
// CHECK-NEXT:       %e_73 = arith.addi %e_71, %e_72 : i64
// CHECK-NEXT:       %e_74 = arith.constant 52 : i64
// CHECK-NEXT:       %e_75 = arith.shli %e_73, %e_74 : i64
// CHECK-NEXT:       %e_76 = arith.bitcast %e_75 : i64 to f64
// CHECK-NEXT:       %e_77 = arith.mulf %e_65, %e_76 fastmath<contract> : f64
// CHECK-NEXT:       %e_78 = arith.subi %e_69, %e_71 : i64
// CHECK-NEXT:       %e_79 = arith.constant 1023 : i64
// CHECK-NEXT:       %e_80 = arith.addi %e_78, %e_79 : i64
// CHECK-NEXT:       %e_81 = arith.constant 52 : i64
// CHECK-NEXT:       %e_82 = arith.shli %e_80, %e_81 : i64
// CHECK-NEXT:       %e_83 = arith.bitcast %e_82 : i64 to f64
// CHECK-NEXT:       %e_84 = arith.mulf %e_77, %e_83 fastmath<contract> : f64
// CHECK-NEXT:       %e_85 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_86 = arith.constant 2.000000e+00 : f64
// CHECK-NEXT:       %e_87 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_88 = arith.addf %e_84, %e_87 fastmath<contract> : f64
// CHECK-NEXT:       %e_89 = arith.divf %e_86, %e_88 : f64
// CHECK-NEXT:       %e_90 = arith.subf %e_85, %e_89 fastmath<contract> : f64
// CHECK-NEXT:       %e_91 = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:       %e_92 = arith.cmpf olt, %v, %e_91 : f64
// CHECK-NEXT:       %e_93 = arith.negf %e_90 : f64
// CHECK-NEXT:       %e_94 = arith.select %e_92, %e_93, %e_90 : f64
// CHECK-NEXT:       %e_95 = arith.constant 6.250000e-01 : f64
// CHECK-NEXT:       %e_96 = arith.cmpf olt, %e, %e_95 : f64
// CHECK-NEXT:       %e_97 = arith.select %e_96, %e_22, %e_94 : f64
// CHECK-NEXT:       memref.store %e_97, %y[%i] : memref<?xf64>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
