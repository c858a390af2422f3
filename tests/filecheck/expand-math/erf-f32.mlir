// RUN: tilegrad opt %s -p 'expand-math' | filecheck %s

// A float32 erf becomes N. Juffa's erff in arith ops, both sides computed and one selected (no branch,
// no division): x + x P(x^2) up to |x| = 475/512, above it 1 - exp(t Q(t) - t), t = |x|, with exp
// itself expanded as Cephes' expf and the sign of x put back by a select.

builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf32>
      %e = math.erf %v : f32
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
// CHECK-NEXT:       %e = math.absf %v : f32
// CHECK-NEXT:       %e_1 = arith.mulf %v, %v fastmath<contract> : f32
// CHECK-NEXT:       %e_2 = arith.constant -0.000596761703 : f32
// CHECK-NEXT:       %e_3 = arith.mulf %e_2, %e_1 fastmath<contract> : f32
// CHECK-NEXT:       %e_4 = arith.constant 0.00499119423 : f32
// CHECK-NEXT:       %e_5 = arith.addf %e_3, %e_4 fastmath<contract> : f32
// CHECK-NEXT:       %e_6 = arith.mulf %e_5, %e_1 fastmath<contract> : f32
// CHECK-NEXT:       %e_7 = arith.constant -0.0267681349 : f32
// CHECK-NEXT:       %e_8 = arith.addf %e_6, %e_7 fastmath<contract> : f32
// CHECK-NEXT:       %e_9 = arith.mulf %e_8, %e_1 fastmath<contract> : f32
// CHECK-NEXT:       %e_10 = arith.constant 0.112819925 : f32
// CHECK-NEXT:       %e_11 = arith.addf %e_9, %e_10 fastmath<contract> : f32
// CHECK-NEXT:       %e_12 = arith.mulf %e_11, %e_1 fastmath<contract> : f32
// CHECK-NEXT:       %e_13 = arith.constant -0.376125336 : f32
// CHECK-NEXT:       %e_14 = arith.addf %e_12, %e_13 fastmath<contract> : f32
// CHECK-NEXT:       %e_15 = arith.mulf %e_14, %e_1 fastmath<contract> : f32
// CHECK-NEXT:       %e_16 = arith.constant 0.128379166 : f32
// CHECK-NEXT:       %e_17 = arith.addf %e_15, %e_16 fastmath<contract> : f32
// CHECK-NEXT:       %e_18 = arith.mulf %e_17, %v fastmath<contract> : f32
// CHECK-NEXT:       %e_19 = arith.addf %e_18, %v fastmath<contract> : f32
// CHECK-NEXT:       %e_20 = arith.constant -1.7285347e-05 : f32
// CHECK-NEXT:       %e_21 = arith.mulf %e_20, %e fastmath<contract> : f32
// CHECK-NEXT:       %e_22 = arith.constant 0.000383197126 : f32
// CHECK-NEXT:       %e_23 = arith.addf %e_21, %e_22 fastmath<contract> : f32
// CHECK-NEXT:       %e_24 = arith.mulf %e_23, %e_1 fastmath<contract> : f32
// CHECK-NEXT:       %e_25 = arith.constant -0.00388396438 : f32
// CHECK-NEXT:       %e_26 = arith.mulf %e_25, %e fastmath<contract> : f32
// CHECK-NEXT:       %e_27 = arith.constant 0.0242546219 : f32
// CHECK-NEXT:       %e_28 = arith.addf %e_26, %e_27 fastmath<contract> : f32
// CHECK-NEXT:       %e_29 = arith.addf %e_24, %e_28 fastmath<contract> : f32
// CHECK-NEXT:       %e_30 = arith.mulf %e_29, %e fastmath<contract> : f32
// CHECK-NEXT:       %e_31 = arith.constant -0.106777877 : f32
// CHECK-NEXT:       %e_32 = arith.addf %e_30, %e_31 fastmath<contract> : f32
// CHECK-NEXT:       %e_33 = arith.mulf %e_32, %e fastmath<contract> : f32
// CHECK-NEXT:       %e_34 = arith.constant -0.634846687 : f32
// CHECK-NEXT:       %e_35 = arith.addf %e_33, %e_34 fastmath<contract> : f32
// CHECK-NEXT:       %e_36 = arith.mulf %e_35, %e fastmath<contract> : f32
// CHECK-NEXT:       %e_37 = arith.constant -0.128717512 : f32
// CHECK-NEXT:       %e_38 = arith.addf %e_36, %e_37 fastmath<contract> : f32
// CHECK-NEXT:       %e_39 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:       %e_40 = arith.mulf %e_38, %e fastmath<contract> : f32
// CHECK-NEXT:       %e_41 = arith.subf %e_40, %e fastmath<contract> : f32
// CHECK-NEXT:       %e_42 = arith.constant 1.000000e+02 : f32
// CHECK-NEXT:       %e_43 = arith.constant -1.040000e+02 : f32
// CHECK-NEXT:       %e_44 = arith.cmpf ogt, %e_41, %e_42 : f32
// CHECK-NEXT:       %e_45 = arith.select %e_44, %e_42, %e_41 : f32
// CHECK-NEXT:       %e_46 = arith.cmpf olt, %e_45, %e_43 : f32
// CHECK-NEXT:       %e_47 = arith.select %e_46, %e_43, %e_45 : f32
// CHECK-NEXT:       %e_48 = arith.constant 1.44269502 : f32
// CHECK-NEXT:       %e_49 = arith.mulf %e_47, %e_48 fastmath<contract> : f32
// CHECK-NEXT:       %e_50 = arith.constant 0x4B400000 : f32
// CHECK-NEXT:       %e_51 = arith.addf %e_49, %e_50 fastmath<contract> : f32
// CHECK-NEXT:       %e_52 = arith.constant 0x4B400000 : f32
// CHECK-NEXT:       %e_53 = arith.subf %e_51, %e_52 fastmath<contract> : f32
// CHECK-NEXT:       %e_54 = arith.constant 0.693359375 : f32
// CHECK-NEXT:       %e_55 = arith.mulf %e_53, %e_54 fastmath<contract> : f32
// CHECK-NEXT:       %e_56 = arith.subf %e_47, %e_55 fastmath<contract> : f32
// CHECK-NEXT:       %e_57 = arith.constant -0.000212194442 : f32
// CHECK-NEXT:       %e_58 = arith.mulf %e_53, %e_57 fastmath<contract> : f32
// CHECK-NEXT:       %e_59 = arith.subf %e_56, %e_58 fastmath<contract> : f32
// CHECK-NEXT:       %e_60 = arith.constant 0.000198756912 : f32
// CHECK-NEXT:       %e_61 = arith.mulf %e_60, %e_59 fastmath<contract> : f32
// CHECK-NEXT:       %e_62 = arith.constant 0.00139819994 : f32
// CHECK-NEXT:       %e_63 = arith.addf %e_61, %e_62 fastmath<contract> : f32
// CHECK-NEXT:       %e_64 = arith.mulf %e_63, %e_59 fastmath<contract> : f32
// CHECK-NEXT:       %e_65 = arith.constant 0.00833345205 : f32
// CHECK-NEXT:       %e_66 = arith.addf %e_64, %e_65 fastmath<contract> : f32
// CHECK-NEXT:       %e_67 = arith.mulf %e_66, %e_59 fastmath<contract> : f32
// CHECK-NEXT:       %e_68 = arith.constant 0.0416657962 : f32
// CHECK-NEXT:       %e_69 = arith.addf %e_67, %e_68 fastmath<contract> : f32
// CHECK-NEXT:       %e_70 = arith.mulf %e_69, %e_59 fastmath<contract> : f32
// CHECK-NEXT:       %e_71 = arith.constant 0.166666657 : f32
// CHECK-NEXT:       %e_72 = arith.addf %e_70, %e_71 fastmath<contract> : f32
// CHECK-NEXT:       %e_73 = arith.mulf %e_72, %e_59 fastmath<contract> : f32
// CHECK-NEXT:       %e_74 = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:       %e_75 = arith.addf %e_73, %e_74 fastmath<contract> : f32
// CHECK-NEXT:       %e_76 = arith.mulf %e_59, %e_59 fastmath<contract> : f32
// CHECK-NEXT:       %e_77 = arith.mulf %e_75, %e_76 fastmath<contract> : f32
// CHECK-NEXT:       %e_78 = arith.addf %e_77, %e_59 fastmath<contract> : f32
// CHECK-NEXT:       %e_79 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:       %e_80 = arith.addf %e_78, %e_79 fastmath<contract> : f32
// CHECK-NEXT:       %e_81 = arith.bitcast %e_51 : f32 to i32
// CHECK-NEXT:       %e_82 = arith.constant 0x4B400000 : f32
// CHECK-NEXT:       %e_83 = arith.bitcast %e_82 : f32 to i32
// CHECK-NEXT:       %e_84 = arith.subi %e_81, %e_83 : i32
// CHECK-NEXT:       %e_85 = arith.constant 1 : i32
// CHECK-NEXT:       %e_86 = arith.shrsi %e_84, %e_85 : i32
// CHECK-NEXT:       %e_87 = arith.constant 127 : i32
// CHECK-NEXT:       %e_88 = arith.addi %e_86, %e_87 : i32
// CHECK-NEXT:       %e_89 = arith.constant 23 : i32
// CHECK-NEXT:       %e_90 = arith.shli %e_88, %e_89 : i32
// CHECK-NEXT:       %e_91 = arith.bitcast %e_90 : i32 to f32
// CHECK-NEXT:       %e_92 = arith.mulf %e_80, %e_91 fastmath<contract> : f32
// CHECK-NEXT:       %e_93 = arith.subi %e_84, %e_86 : i32
// CHECK-NEXT:       %e_94 = arith.constant 127 : i32
// CHECK-NEXT:       %e_95 = arith.addi %e_93, %e_94 : i32
// CHECK-NEXT:       %e_96 = arith.constant 23 : i32
// CHECK-NEXT:       %e_97 = arith.shli %e_95, %e_96 : i32
// CHECK-NEXT:       %e_98 = arith.bitcast %e_97 : i32 to f32
// CHECK-NEXT:       %e_99 = arith.mulf %e_92, %e_98 fastmath<contract> : f32
// CHECK-NEXT:       %e_100 = arith.subf %e_39, %e_99 fastmath<contract> : f32
// CHECK-NEXT:       %e_101 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %e_102 = arith.cmpf olt, %v, %e_101 : f32
// CHECK-NEXT:       %e_103 = arith.negf %e_100 : f32
// CHECK-NEXT:       %e_104 = arith.select %e_102, %e_103, %e_100 : f32
// CHECK-NEXT:       %e_105 = arith.constant 0.927734375 : f32
// CHECK-NEXT:       %e_106 = arith.cmpf ogt, %e, %e_105 : f32
// CHECK-NEXT:       %e_107 = arith.select %e_106, %e_104, %e_19 : f32
// CHECK-NEXT:       memref.store %e_107, %y[%i] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
