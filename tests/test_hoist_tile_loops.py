"""hoist-tile-loops: a tile loop that is a parallel loop's whole body moves outside it."""

import numpy as np
import pytest
import torch
from test_passes import assert_lines_in_order

import tilegrad
from tilegrad.pipeline import run_passes

ROWS_OF_TILES = """
builtin.module {
  func.func @scale(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
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
"""


def test_the_tile_loop_goes_outside_the_rows():
    text = str(run_passes(ROWS_OF_TILES, "hoist-tile-loops"))
    assert_lines_in_order(text, ["scf.for %t = %c0 to %cols step %tile {",
                                 "scf.for %r = %c0 to %rows step %c1 {",
                                 "%t_end = arith.minsi %t_next, %cols : index",
                                 "scf.for %j = %t to %t_end step %c1 {",
                                 "memref.store %w, %y[%r, %j] : memref<?x?xf32>",
                                 "} {tg.loop = #tg.loop<parallel, axis = 1>}",
                                 "} {tg.loop = #tg.loop<parallel, axis = 0>}",
                                 "} {tg.loop = #tg.loop<tile, axis = 1>}"])


@pytest.mark.parametrize("why, change", [
    ("the row loop holds more than the tile loop",
     ("scf.for %t = %c0", "%first = memref.load %x[%r, %c0] : memref<?x?xf32>\n      scf.for %t = %c0")),
    ("the stage's own loop (its blocks) stays outermost",
     ("} {tg.loop = #tg.loop<parallel, axis = 0>}", "} {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}")),
    ("a reduction's rows are not free to reorder",
     ("} {tg.loop = #tg.loop<parallel, axis = 0>}", "} {tg.loop = #tg.loop<reduce, axis = 0>}")),
])
def test_a_loop_that_is_not_only_a_parallel_frame_for_its_tiles_stays(why, change):
    text = ROWS_OF_TILES.replace(*change)
    out = str(run_passes(text, "hoist-tile-loops"))
    assert out.index("scf.for %r") < out.index("scf.for %t"), why


@pytest.mark.parametrize("mode", ["max", "avg_exclude_padding"])
def test_hoisted_tiles_match_the_kernel_without_the_pass_bitwise(without_pass, mode):
    from tilegrad.passes.hoist_tile_loops import HoistTileLoops

    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 13, 30)).astype(np.float32)
    args = dict(window=(3, 3), stride=(2, 2), padding=(1, 1))
    y, _ = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(x), *[list(v) for v in args.values()])
    call = dict(y=y.numpy(), dy=rng.standard_normal(tuple(y.shape)).astype(np.float32), x=x, mode=mode, **args)
    hoisted = tilegrad.compile("pooling_backward", "cpu")(**call)
    tiled = tilegrad.compile("pooling_backward", "cpu").ir("tiled", **call)
    assert tiled.index("#tg.loop<tile") > tiled.index("#tg.loop<parallel, axis = 2>")  # closes after the rows
    np.testing.assert_array_equal(hoisted, without_pass("pooling_backward", HoistTileLoops)(**call))
