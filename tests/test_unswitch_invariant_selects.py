"""unswitch-invariant-selects: a loop with a select on a data test that does not change in it runs
as two copies, one per side, chosen once before it."""

import numpy as np
import pytest
import torch
from test_passes import assert_lines_in_order

import tilegrad
from tilegrad.pipeline import run_passes

FLAGGED_ROWS = """
builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
               %flag: memref<?xf32> {tg.name = "flag", tg.role = "temp"},
               %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %f = memref.load %flag[%r] : memref<?xf32>
        %zero = arith.constant 0.000000e+00 : f32
        %bad = arith.cmpf une, %f, %zero : f32
        %v = memref.load %x[%r, %j] : memref<?x?xf32>
        %a = arith.mulf %v, %v : f32
        %b = arith.mulf %a, %v : f32
        %c = arith.addf %b, %a : f32
        %d = arith.mulf %c, %c : f32
        %e = arith.subf %d, %v : f32
        %picked = arith.select %bad, %e, %v : f32
        memref.store %picked, %y[%r, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}
"""


def test_the_column_loop_runs_in_two_copies_chosen_by_the_row_flag():
    text = str(run_passes(FLAGGED_ROWS, "unswitch-invariant-selects"))
    assert_lines_in_order(text, [
        "scf.for %r = %c0 to %rows step %c1 {",
        "arith.cmpi slt, %c0, %cols : index",  # read the flag only where the loop runs
        "scf.if", "%f = memref.load %flag[%r] : memref<?xf32>",
        "%bad = arith.cmpf une, %f, %zero : f32",
        "scf.if %bad {",
        "scf.for %j = %c0 to %cols step %c1 {", "arith.subf", "memref.store", "} else {",
        "scf.for %j_1 = %c0 to %cols step %c1 {", "memref.store"], whole=False)
    false_copy = text[text.index("} else {", text.index("scf.if %bad")):]
    false_copy = false_copy[:false_copy.index("tg.loop = #tg.loop<parallel, axis = 1>")]
    assert "arith.mulf" not in false_copy and "arith.select" not in false_copy  # the chain is gone
    assert "arith.select" not in text


@pytest.mark.parametrize("why, change", [
    ("the flag moves with the loop", ("%flag[%r]", "%flag[%j]")),
    ("the loop writes the flag's tensor",
     ("memref.store %picked, %y[%r, %j]", "memref.store %v, %flag[%j] : memref<?xf32>\n"
                                          "        memref.store %picked, %y[%r, %j]")),
    ("the flag is an input the output may overlap (in place)", ('tg.name = "flag", tg.role = "temp"',
                                                                'tg.name = "flag", tg.role = "input"')),
    ("a test on indices alone is for the passes that split by index ranges",
     ("%bad = arith.cmpf une, %f, %zero : f32", "%bad = arith.cmpi slt, %r, %c1 : index")),
    ("the chain a copy would drop is small",
     ("%picked = arith.select %bad, %e, %v", "%picked = arith.select %bad, %a, %v")),
])
def test_a_select_that_is_not_worth_or_not_safe_to_version_stays(why, change):
    out = str(run_passes(FLAGGED_ROWS.replace(*change), "unswitch-invariant-selects"))
    assert "scf.if" not in out and "arith.select" in out, why


@pytest.fixture(scope="module")
def planes_with_and_without_nan():
    """Max pooling 2-D (padded, stride 2) on planes of which some hold a NaN: both copies run."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 15, 13)).astype(np.float32)
    x[0, 1, 4, 5] = np.nan
    x[1, 2, 0, 0] = np.nan  # (a corner: the padded edge)
    x[1, 0, 7, 3:6] = 2.0  # ties
    attrs = dict(window=(3, 3), stride=(2, 2), padding=(1, 1))
    y, _ = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(x), *[list(v) for v in attrs.values()])
    call = dict(y=y.numpy(), dy=rng.standard_normal(tuple(y.shape)).astype(np.float32), x=x, mode="max", **attrs)
    return call


def test_max_pooling_versions_its_scan_on_the_plane_flag(planes_with_and_without_nan):
    tiled = tilegrad.compile("pooling_backward", "cpu").ir("tiled", **planes_with_and_without_nan)
    lines = [line.strip() for line in tiled.splitlines()]
    versioned = [k for k, line in enumerate(lines) if "memref.load %y_plane_finite" in line
                 and any(after.startswith("scf.if") for after in lines[k + 1:k + 4])]  # (load, compare, choice)
    assert versioned  # the scan's inner columns (a short edge loop is not worth a copy)


def test_max_pooling_matches_the_kernel_without_the_pass_bitwise(without_pass, planes_with_and_without_nan):
    from tilegrad.passes.unswitch_invariant_selects import UnswitchInvariantSelects

    call = planes_with_and_without_nan
    versioned = tilegrad.compile("pooling_backward", "cpu")(**call)
    x = torch.from_numpy(call["x"]).requires_grad_()
    y = torch.nn.functional.max_pool2d(x, 3, 2, 1)
    y.backward(torch.from_numpy(call["dy"]))
    np.testing.assert_allclose(versioned, x.grad.numpy(), rtol=1e-6, atol=1e-6)  # (torch sums in its own order)
    np.testing.assert_array_equal(versioned, without_pass("pooling_backward", UnswitchInvariantSelects)(**call))
