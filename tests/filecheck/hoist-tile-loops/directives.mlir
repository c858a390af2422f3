// RUN: tilegrad opt %s -p 'hoist-tile-loops{directives="Reorder(stage=0, order=(1, 0)); Reorder(stage=1, order=(0, 1))"}' | filecheck %s

// The directives option: two stages, each a row loop (axis 0) whose whole body is a tile loop (axis 1).
// Stage 0's Reorder puts the tile loop outside, as the pass decides by itself; stage 1's names the
// loops in the order they have: the row loop stays outside.

builtin.module {
  func.func @scale_stage0(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                          %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %tile = arith.constant 64 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %t = %c0 to %cols step %tile {
        %t_next = arith.addi %t, %tile : index
        %t_end = arith.minsi %t_next, %cols : index
        scf.for %j = %t to %t_end step %c1 {
          %v = memref.load %x[%r, %j] : memref<?x?xf32>
          %w = arith.addf %v, %v : f32
          memref.store %w, %y[%r, %j] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
  func.func @scale_stage1(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                          %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %tile = arith.constant 64 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %t = %c0 to %cols step %tile {
        %t_next = arith.addi %t, %tile : index
        %t_end = arith.minsi %t_next, %cols : index
        scf.for %j = %t to %t_end step %c1 {
          %v = memref.load %x[%r, %j] : memref<?x?xf32>
          %w = arith.addf %v, %v : f32
          memref.store %w, %y[%r, %j] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @scale_stage0(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %tile = arith.constant 64 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %cols = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %t = %c0 to %cols step %tile {
// CHECK-NEXT:       scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:         %t_next = arith.addi %t, %tile : index
// CHECK-NEXT:         %t_end = arith.minsi %t_next, %cols : index
// CHECK-NEXT:         scf.for %j = %t to %t_end step %c1 {
// CHECK-NEXT:           %v = memref.load %x[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:           %w = arith.addf %v, %v : f32
// CHECK-NEXT:           memref.store %w, %y[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @scale_stage1(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"}, %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %tile = arith.constant 64 : index
// CHECK-NEXT:     %rows = memref.dim %x, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %cols = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %r = %c0 to %rows step %c1 {
// CHECK-NEXT:       scf.for %t = %c0 to %cols step %tile {
// CHECK-NEXT:         %t_next = arith.addi %t, %tile : index
// CHECK-NEXT:         %t_end = arith.minsi %t_next, %cols : index
// CHECK-NEXT:         scf.for %j = %t to %t_end step %c1 {
// CHECK-NEXT:           %v = memref.load %x[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:           %w = arith.addf %v, %v : f32
// CHECK-NEXT:           memref.store %w, %y[%r, %j] : memref<?x?xf32>
// CHECK-NEXT:         } {tg.loop = #tg.loop<parallel, axis = 1>}
// CHECK-NEXT:       } {tg.loop = #tg.loop<tile, axis = 1>}
// CHECK-NEXT:     } {tg.loop = #tg.loop<parallel, axis = 0>}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
