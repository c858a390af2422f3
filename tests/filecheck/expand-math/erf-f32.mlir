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
// CHECK-NEXT:       %e_20 = arith.constant 4.000000e+00 : f32
// CHECK-NEXT:       %e_21 = arith.cmpf ogt, %e, %e_20 : f32
// CHECK-NEXT:       %e_22 = arith.constant 4.000000e+00 : f32
// CHECK-NEXT:       %e_23 = arith.select %e_21, %e_22, %e : f32
// CHECK-NEXT:       %e_24 = arith.mulf %e_23, %e_23 fastmath<contract> : f32
// CHECK-NEXT:       %e_25 = arith.constant -1.7285347e-05 : f32
// CHECK-NEXT:       %e_26 = arith.mulf %e_25, %e_23 fastmath<contract> : f32
// CHECK-NEXT:       %e_27 = arith.constant 0.000383197126 : f32
// CHECK-NEXT:       %e_28 = arith.addf %e_26, %e_27 fastmath<contract> : f32
// CHECK-NEXT:       %e_29 = arith.mulf %e_28, %e_24 fastmath<contract> : f32
// CHECK-NEXT:       %e_30 = arith.constant -0.00388396438 : f32
// CHECK-NEXT:       %e_31 = arith.mulf %e_30, %e_23 fastmath<contract> : f32
// CHECK-NEXT:       %e_32 = arith.constant 0.0242546219 : f32
// CHECK-NEXT:       %e_33 = arith.addf %e_31, %e_32 fastmath<contract> : f32
// CHECK-NEXT:       %e_34 = arith.addf %e_29, %e_33 fastmath<contract> : f32
// CHECK-NEXT:       %e_35 = arith.mulf %e_34, %e_23 fastmath<contract> : f32
// CHECK-NEXT:       %e_36 = arith.constant -0.106777877 : f32
// CHECK-NEXT:       %e_37 = arith.addf %e_35, %e_36 fastmath<contract> : f32
// CHECK-NEXT:       %e_38 = arith.mulf %e_37, %e_23 fastmath<contract> : f32
// CHECK-NEXT:       %e_39 = arith.constant -0.634846687 : f32
// CHECK-NEXT:       %e_40 = arith.addf %e_38, %e_39 fastmath<contract> : f32
// CHECK-NEXT:       %e_41 = arith.mulf %e_40, %e_23 fastmath<contract> : f32
// CHECK-NEXT:       %e_42 = arith.constant -0.128717512 : f32
// CHECK-NEXT:       %e_43 = arith.addf %e_41, %e_42 fastmath<contract> : f32
// CHECK-NEXT:       %e_44 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:       %e_45 = arith.mulf %e_43, %e_23 fastmath<contract> : f32
// CHECK-NEXT:       %e_46 = arith.subf %e_45, %e_23 fastmath<contract> : f32
// CHECK-NEXT:       %e_47 = arith.constant 1.44269502 : f32
// CHECK-NEXT:       %e_48 = arith.mulf %e_46, %e_47 fastmath<contract> : f32
// CHECK-NEXT:       %e_49 = arith.constant 0x4B400000 : f32
// CHECK-NEXT:       %e_50 = arith.addf %e_48, %e_49 fastmath<contract> : f32
// CHECK-NEXT:       %e_51 = arith.constant 0x4B400000 : f32
// CHECK-NEXT:       %e_52 = arith.subf %e_50, %e_51 fastmath<contract> : f32
// CHECK-NEXT:       %e_53 = arith.constant 0.693359375 : f32
// CHECK-NEXT:       %e_54 = arith.mulf %e_52, %e_53 fastmath<contract> : f32
// CHECK-NEXT:       %e_55 = arith.subf %e_46, %e_54 fastmath<contract> : f32
// CHECK-NEXT:       %e_56 = arith.constant -0.000212194442 : f32
// CHECK-NEXT:       %e_57 = arith.mulf %e_52, %e_56 fastmath<contract> : f32
// CHECK-NEXT:       %e_58 = arith.subf %e_55, %e_57 fastmath<contract> : f32
// CHECK-NEXT:       %e_59 = arith.constant 0.000198756912 : f32
// CHECK-NEXT:       %e_60 = arith.mulf %e_59, %e_58 fastmath<contract> : f32
// CHECK-NEXT:       %e_61 = arith.constant 0.00139819994 : f32
// CHECK-NEXT:       %e_62 = arith.addf %e_60, %e_61 fastmath<contract> : f32
// CHECK-NEXT:       %e_63 = arith.mulf %e_62, %e_58 fastmath<contract> : f32
// CHECK-NEXT:       %e_64 = arith.constant 0.00833345205 : f32
// CHECK-NEXT:       %e_65 = arith.addf %e_63, %e_64 fastmath<contract> : f32
// CHECK-NEXT:       %e_66 = arith.mulf %e_65, %e_58 fastmath<contract> : f32
// CHECK-NEXT:       %e_67 = arith.constant 0.0416657962 : f32
// CHECK-NEXT:       %e_68 = arith.addf %e_66, %e_67 fastmath<contract> : f32
// CHECK-NEXT:       %e_69 = arith.mulf %e_68, %e_58 fastmath<contract> : f32
// CHECK-NEXT:       %e_70 = arith.constant 0.166666657 : f32
// CHECK-NEXT:       %e_71 = arith.addf %e_69, %e_70 fastmath<contract> : f32
// CHECK-NEXT:       %e_72 = arith.mulf %e_71, %e_58 fastmath<contract> : f32
// CHECK-NEXT:       %e_73 = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:       %e_74 = arith.addf %e_72, %e_73 fastmath<contract> : f32
// CHECK-NEXT:       %e_75 = arith.mulf %e_58, %e_58 fastmath<contract> : f32
// CHECK-NEXT:       %e_76 = arith.mulf %e_74, %e_75 fastmath<contract> : f32
// CHECK-NEXT:       %e_77 = arith.addf %e_76, %e_58 fastmath<contract> : f32
// CHECK-NEXT:       %e_78 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:       %e_79 = arith.addf %e_77, %e_78 fastmath<contract> : f32
// CHECK-NEXT:       %e_80 = arith.bitcast %e_50 : f32 to i32
// CHECK-NEXT:       %e_81 = arith.constant 0x4B400000 : f32
// CHECK-NEXT:       %e_82 = arith.bitcast %e_81 : f32 to i32
// CHECK-NEXT:       %e_83 = arith.subi %e_80, %e_82 : i32
// CHECK-NEXT:       %e_84 = arith.constant 127 : i32
// CHECK-NEXT:       %e_85 = arith.addi %e_83, %e_84 : i32
// CHECK-NEXT:       %e_86 = arith.constant 23 : i32
// CHECK-NEXT:       %e_87 = arith.shli %e_85, %e_86 : i32
// CHECK-NEXT:       %e_88 = arith.bitcast %e_87 : i32 to f32
// CHECK-NEXT:       %e_89 = arith.mulf %e_79, %e_88 fastmath<contract> : f32
// CHECK-NEXT:       %e_90 = arith.subf %e_44, %e_89 fastmath<contract> : f32
// CHECK-NEXT:       %e_91 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       %e_92 = arith.cmpf olt, %v, %e_91 : f32
// CHECK-NEXT:       %e_93 = arith.negf %e_90 : f32
// CHECK-NEXT:       %e_94 = arith.select %e_92, %e_93, %e_90 : f32
// CHECK-NEXT:       %e_95 = arith.constant 0.927734375 : f32
// CHECK-NEXT:       %e_96 = arith.cmpf ogt, %e_23, %e_95 : f32
// CHECK-NEXT:       %e_97 = arith.select %e_96, %e_94, %e_19 : f32
// CHECK-NEXT:       memref.store %e_97, %y[%i] : memref<?xf32>
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
