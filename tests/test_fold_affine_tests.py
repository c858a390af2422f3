"""fold-affine-tests: a compare whose sides differ by a constant over the loop is folded, and the
window term it switched off (its read, its clamp) is erased."""

import numpy as np
import pytest
import torch
from test_passes import assert_lines_in_order

import tilegrad
from tilegrad.pipeline import run_passes

# one phase of a stride-2 window gather: the term of window q - 1 cannot reach 2q (its cell would
# be (2q + 1) - 2(q - 1) = 3, outside a window of 3); the term of window q can (cell 1)
PHASE = """
builtin.module {
  func.func @phase(%dy: memref<?xf32> {tg.name = "dy", tg.role = "input"},
                   %dx: memref<?xf32> {tg.name = "dx", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %zero = arith.constant 0.000000e+00 : f32
    %n = memref.dim %dy, %c0 : memref<?xf32>
    %last = arith.subi %n, %c1 : index
    scf.for %q = %c0 to %n step %c1 {
      %twice = arith.muli %q, %c2 : index
      %top = arith.addi %twice, %c1 : index
      %before = arith.subi %q, %c1 : index
      %reach = arith.muli %before, %c2 : index
      %cell = arith.subi %top, %reach : index
      %in_window = arith.cmpi slt, %cell, %c3 : index
      %exists = arith.cmpi sge, %before, %c0 : index
      %both = arith.andi %exists, %in_window : i1
      %low = arith.maxsi %before, %c0 : index
      %at = arith.minsi %low, %last : index
      %v = memref.load %dy[%at] : memref<?xf32>
      %wide = arith.extf %v : f32 to f64
      %narrow = arith.truncf %wide : f64 to f32
      %term = arith.select %both, %narrow, %zero : f32
      %own = memref.load %dy[%q] : memref<?xf32>
      %own_cell = arith.subi %top, %twice : index
      %own_inside = arith.cmpi slt, %own_cell, %c3 : index
      %own_term = arith.select %own_inside, %own, %zero : f32
      %sum = arith.addf %term, %own_term : f32
      memref.store %sum, %dx[%twice] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}
"""


def test_a_term_a_phase_cannot_reach_is_erased_with_its_read_and_clamp():
    text = str(run_passes(PHASE, "fold-affine-tests"))
    loop = text[text.index("scf.for"):]
    assert "arith.maxsi" not in loop and "arith.minsi" not in loop and "arith.extf" not in loop
    assert loop.count("memref.load") == 1  # dy[q]; the clamped read of window q - 1 is gone
    assert "arith.cmpi" not in loop  # both window tests were constants: 3 < 3 and 1 < 3
    assert_lines_in_order(loop, ["%own = memref.load %dy[%q] : memref<?xf32>",
                                 "%sum = arith.addf %zero, %own : f32",
                                 "memref.store %sum, %dx[%twice] : memref<?xf32>"])


def test_a_compare_that_varies_over_the_loop_stays():
    varying = PHASE.replace("%own_cell = arith.subi %top, %twice : index", "%own_cell = arith.subi %top, %c1 : index")
    text = str(run_passes(varying, "fold-affine-tests"))
    assert "%own_inside = arith.cmpi slt, %own_cell, %c3 : index" in text  # 2q < 3 depends on q
    assert "arith.select %own_inside" in text


@pytest.mark.parametrize("mode", ["max", "avg_include_padding"])
@pytest.mark.parametrize("size, window, stride, padding", [(9, 3, 2, 1), (10, 3, 2, 1), (11, 5, 3, 2)])
def test_folded_windows_match_the_unfolded_kernel_bitwise(without_pass, mode, size, window, stride, padding):
    from tilegrad.passes.fold_affine_tests import FoldAffineTests

    rng = np.random.default_rng(size)
    x = rng.standard_normal((2, 3, size, size + 3)).astype(np.float32)
    args = dict(window=(window,) * 2, stride=(stride,) * 2, padding=(padding,) * 2)
    y, _ = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(x), *[list(v) for v in args.values()])
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    call = dict(y=y.numpy(), dy=dy, x=x, mode=mode, **args)
    folded = tilegrad.compile("pooling_backward", "cpu")(**call)
    assert "arith.maxsi" in tilegrad.compile("pooling_backward", "cpu").ir("tiled", **call)
    unfolded = without_pass("pooling_backward", FoldAffineTests)(**call)
    np.testing.assert_array_equal(folded, unfolded)


def test_bounds_built_from_constants_are_constants():
    """IndexBuilder folds index arithmetic on constants (the per-phase offsets the compares above
    are written with), and builds nothing for it before the loop."""
    from test_passes import parse
    from xdsl.dialects import scf

    from tilegrad.passes.common import constant_index
    from tilegrad.passes.loop_affine import IndexBuilder

    module = parse(PHASE)
    loop = next(o for o in module.walk() if isinstance(o, scf.ForOp))
    before = set(loop.parent_block().ops)
    at = IndexBuilder(loop)
    assert constant_index(at.floordiv(at.const(-3), 2)) == -2  # ⌊-3/2⌋, through a select on a compare
    assert constant_index(at.ceildiv(at.const(7), 2)) == 4
    built = [o.name for o in loop.parent_block().ops if o not in before]
    assert built and set(built) == {"arith.constant"}  # no divsi, select or cmpi before the loop
