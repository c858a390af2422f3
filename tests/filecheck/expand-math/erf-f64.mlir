// RUN: tilegrad opt %s -p 'expand-math' | filecheck %s

// A float64 erf becomes Cephes' ndtr.c: x T(x^2)/U(x^2) for |x| <= 1, else 1 - exp(-a^2) P(a)/Q(a) with
// a = |x| capped at 6, signed by selects (NaN stays NaN); its exp stays a float64 math.exp (libm).

builtin.module {
  func.func @k(%x: memref<?xf64> {tg.name = "x", tg.role = "input"}, %y: memref<?xf64> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf64>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf64>
      %e = math.erf %v : f64
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
// CHECK-NEXT:       %e = arith.mulf %v, %v fastmath<contract> : f64
// CHECK-NEXT:       %e_1 = arith.constant 9.6049737398705162 : f64
// CHECK-NEXT:       %e_2 = arith.mulf %e_1, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_3 = arith.constant 90.026019720384269 : f64
// CHECK-NEXT:       %e_4 = arith.addf %e_2, %e_3 fastmath<contract> : f64
// CHECK-NEXT:       %e_5 = arith.mulf %e_4, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_6 = arith.constant 2232.0053459468431 : f64
// CHECK-NEXT:       %e_7 = arith.addf %e_5, %e_6 fastmath<contract> : f64
// CHECK-NEXT:       %e_8 = arith.mulf %e_7, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_9 = arith.constant 7003.3251411280507 : f64
// CHECK-NEXT:       %e_10 = arith.addf %e_8, %e_9 fastmath<contract> : f64
// CHECK-NEXT:       %e_11 = arith.mulf %e_10, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_12 = arith.constant 55592.301301039493 : f64
// CHECK-NEXT:       %e_13 = arith.addf %e_11, %e_12 fastmath<contract> : f64
// CHECK-NEXT:       %e_14 = arith.mulf %v, %e_13 fastmath<contract> : f64
// CHECK-NEXT:       %e_15 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_16 = arith.mulf %e_15, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_17 = arith.constant 33.561714164750313 : f64
// CHECK-NEXT:       %e_18 = arith.addf %e_16, %e_17 fastmath<contract> : f64
// CHECK-NEXT:       %e_19 = arith.mulf %e_18, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_20 = arith.constant 521.35794978015269 : f64
// CHECK-NEXT:       %e_21 = arith.addf %e_19, %e_20 fastmath<contract> : f64
// CHECK-NEXT:       %e_22 = arith.mulf %e_21, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_23 = arith.constant 4594.3238297098014 : f64
// CHECK-NEXT:       %e_24 = arith.addf %e_22, %e_23 fastmath<contract> : f64
// CHECK-NEXT:       %e_25 = arith.mulf %e_24, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_26 = arith.constant 22629.000061389095 : f64
// CHECK-NEXT:       %e_27 = arith.addf %e_25, %e_26 fastmath<contract> : f64
// CHECK-NEXT:       %e_28 = arith.mulf %e_27, %e fastmath<contract> : f64
// CHECK-NEXT:       %e_29 = arith.constant 49267.394260863592 : f64
// CHECK-NEXT:       %e_30 = arith.addf %e_28, %e_29 fastmath<contract> : f64
// CHECK-NEXT:       %e_31 = arith.divf %e_14, %e_30 : f64
// CHECK-NEXT:       %e_32 = math.absf %v : f64
// CHECK-NEXT:       %e_33 = arith.constant 6.000000e+00 : f64
// CHECK-NEXT:       %e_34 = arith.cmpf ogt, %e_32, %e_33 : f64
// CHECK-NEXT:       %e_35 = arith.constant 6.000000e+00 : f64
// CHECK-NEXT:       %e_36 = arith.select %e_34, %e_35, %e_32 : f64
// CHECK-NEXT:       %e_37 = arith.mulf %e_36, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_38 = arith.negf %e_37 : f64
// CHECK-NEXT:       %e_39 = math.exp %e_38 : f64
// CHECK-NEXT:       %e_40 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_41 = arith.constant 2.4619698147353052e-10 : f64
// CHECK-NEXT:       %e_42 = arith.mulf %e_41, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_43 = arith.constant 0.56418956483106886 : f64
// CHECK-NEXT:       %e_44 = arith.addf %e_42, %e_43 fastmath<contract> : f64
// CHECK-NEXT:       %e_45 = arith.mulf %e_44, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_46 = arith.constant 7.4632105644226989 : f64
// CHECK-NEXT:       %e_47 = arith.addf %e_45, %e_46 fastmath<contract> : f64
// CHECK-NEXT:       %e_48 = arith.mulf %e_47, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_49 = arith.constant 48.637197098568137 : f64
// CHECK-NEXT:       %e_50 = arith.addf %e_48, %e_49 fastmath<contract> : f64
// CHECK-NEXT:       %e_51 = arith.mulf %e_50, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_52 = arith.constant 196.5208329560771 : f64
// CHECK-NEXT:       %e_53 = arith.addf %e_51, %e_52 fastmath<contract> : f64
// CHECK-NEXT:       %e_54 = arith.mulf %e_53, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_55 = arith.constant 526.44519499547732 : f64
// CHECK-NEXT:       %e_56 = arith.addf %e_54, %e_55 fastmath<contract> : f64
// CHECK-NEXT:       %e_57 = arith.mulf %e_56, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_58 = arith.constant 934.52852717195765 : f64
// CHECK-NEXT:       %e_59 = arith.addf %e_57, %e_58 fastmath<contract> : f64
// CHECK-NEXT:       %e_60 = arith.mulf %e_59, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_61 = arith.constant 1027.5518868951572 : f64
// CHECK-NEXT:       %e_62 = arith.addf %e_60, %e_61 fastmath<contract> : f64
// CHECK-NEXT:       %e_63 = arith.mulf %e_62, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_64 = arith.constant 557.53533536939938 : f64
// CHECK-NEXT:       %e_65 = arith.addf %e_63, %e_64 fastmath<contract> : f64
// CHECK-NEXT:       %e_66 = arith.mulf %e_39, %e_65 fastmath<contract> : f64
// CHECK-NEXT:       %e_67 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_68 = arith.mulf %e_67, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_69 = arith.constant 13.228195115474499 : f64
// CHECK-NEXT:       %e_70 = arith.addf %e_68, %e_69 fastmath<contract> : f64
// CHECK-NEXT:       %e_71 = arith.mulf %e_70, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_72 = arith.constant 86.707214088598974 : f64
// CHECK-NEXT:       %e_73 = arith.addf %e_71, %e_72 fastmath<contract> : f64
// CHECK-NEXT:       %e_74 = arith.mulf %e_73, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_75 = arith.constant 354.93777888781989 : f64
// CHECK-NEXT:       %e_76 = arith.addf %e_74, %e_75 fastmath<contract> : f64
// CHECK-NEXT:       %e_77 = arith.mulf %e_76, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_78 = arith.constant 975.70850174320549 : f64
// CHECK-NEXT:       %e_79 = arith.addf %e_77, %e_78 fastmath<contract> : f64
// CHECK-NEXT:       %e_80 = arith.mulf %e_79, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_81 = arith.constant 1823.9091668790973 : f64
// CHECK-NEXT:       %e_82 = arith.addf %e_80, %e_81 fastmath<contract> : f64
// CHECK-NEXT:       %e_83 = arith.mulf %e_82, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_84 = arith.constant 2246.3376081871097 : f64
// CHECK-NEXT:       %e_85 = arith.addf %e_83, %e_84 fastmath<contract> : f64
// CHECK-NEXT:       %e_86 = arith.mulf %e_85, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_87 = arith.constant 1656.6630919416134 : f64
// CHECK-NEXT:       %e_88 = arith.addf %e_86, %e_87 fastmath<contract> : f64
// CHECK-NEXT:       %e_89 = arith.mulf %e_88, %e_36 fastmath<contract> : f64
// CHECK-NEXT:       %e_90 = arith.constant 557.53534081772773 : f64
// CHECK-NEXT:       %e_91 = arith.addf %e_89, %e_90 fastmath<contract> : f64
// CHECK-NEXT:       %e_92 = arith.divf %e_66, %e_91 : f64
// CHECK-NEXT:       %e_93 = arith.subf %e_40, %e_92 fastmath<contract> : f64
// CHECK-NEXT:       %e_94 = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:       %e_95 = arith.cmpf ogt, %v, %e_94 : f64
// CHECK-NEXT:       %e_96 = arith.select %e_95, %e_93, %v : f64
// CHECK-NEXT:       %e_97 = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:       %e_98 = arith.cmpf olt, %v, %e_97 : f64
// CHECK-NEXT:       %e_99 = arith.negf %e_93 : f64
// CHECK-NEXT:       %e_100 = arith.select %e_98, %e_99, %e_96 : f64
// CHECK-NEXT:       %e_101 = math.absf %v : f64
// CHECK-NEXT:       %e_102 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:       %e_103 = arith.cmpf ole, %e_101, %e_102 : f64
// CHECK-NEXT:       %e_104 = arith.select %e_103, %e_31, %e_100 : f64
// CHECK-NEXT:       memref.store %e_104, %y[%i] : memref<?xf64>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
