"""overlap-vector-tails: a short map loop ends on a whole vector overlapping the one before it.

Passes on hand-written IR (what is rewritten, and what stays as it was); max pooling's backward,
whose window scan it changes, checked bitwise against the kernel built without it on rows of
lengths around the vector's, and the guard build.
"""

import re

import numpy as np
import pytest

import tilegrad
from tilegrad.pipeline import run_passes

MAP = """
builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N W"},
               %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "N W"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %w = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %w step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32>
        %d = arith.addf %v, %v : f32
        memref.store %d, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}
"""


def test_a_short_map_ends_on_an_overlapping_vector_and_keeps_its_loop_for_the_rest():
    text = str(run_passes(MAP, "overlap-vector-tails"))
    assert text.count("scf.if") == 1 and "} else {" in text
    then, rest = text.split("} else {")
    # the overlapping branch: trips / 16 + 1 vectors, each a loop of 16 from min(k * 16, trips - 16)
    vectors = re.search(r"scf.for %(\d+) = %\d+ to %\d+ step %\d+ {\n"
                        r"(?: +%\d+ = arith.constant \d+ : index\n)? +%(\d+) = arith.subi %\d+, %\d+ : index\n", then)
    assert vectors, then
    first = re.search(rf"%(\d+) = arith.minsi %\d+, %{vectors.group(2)} : index", then)
    lanes = re.search(r"scf.for %(\d+) = %\d+ to %(\d+) step %\d+ {\n +%\d+ = arith.addi %" + first.group(1)
                      + r", %\1 : index", then)
    assert lanes and re.search(rf"%{lanes.group(2)} = arith.constant 16 : index", then)
    assert then.count("memref.store") == 1 and then.count("arith.addf") == 1  # the body once
    assert "arith.constant 16 : index" in then and "arith.constant 64 : index" in then  # VECTOR, LONG
    # the other branch: the loop exactly as it was
    assert re.search(r"scf.for %j\w* = %c0 to %w step %c1 {", rest) and rest.count("memref.store") == 1


@pytest.mark.parametrize("change, why", [
    (lambda t: t.replace("%v = memref.load %x[%i, %j]", "%v = memref.load %out[%i, %j]"), "reads what it writes"),
    (lambda t: t.replace('tg.role = "output", tg.dims = "N W"}', 'tg.role = "output", tg.dims = "N W", '
                         'tg.in_place = "x"}'), "an output that may be its input"),
    (lambda t: t.replace("scf.for %j = %c0 to %w", "%c9 = arith.constant 9 : index\n      scf.for %j = %c0 to %c9"),
     "a constant trip count of one vector or less"),
    (lambda t: t.replace("scf.for %j = %c0 to %w step %c1", "scf.for %j = %c0 to %w step %n"), "a step not constant"),
    (lambda t: t.replace('#tg.loop<parallel, axis = 1>', '#tg.loop<scatter, axis = 1>'), "not a map"),
    (lambda t: t.replace("%v = memref.load %x[%i, %j]", "%jc = arith.minsi %j, %n : index\n"
                         "        %v = memref.load %x[%i, %jc]"), "an edge: it clamps its index"),
    (lambda t: t.replace("%w = memref.dim %x, %c1 : memref<?x?xf32>",
                         "%w = memref.dim %x, %c1 : memref<?x?xf32>\n"
                         "    %rows = memref.collapse_shape %x [[0, 1]] : memref<?x?xf32> into memref<?xf32>")
     .replace("%v = memref.load %x[%i, %j] : memref<?x?xf32>", "%v = memref.load %rows[%j] : memref<?xf32>"),
     "a plane walked as one row"),
    (lambda t: t.replace("        %d = arith.addf %v, %v : f32\n",
                         "        %d = arith.addf %v, %v : f32\n        scf.for %k = %c0 to %w step %c1 {\n"
                         "        }\n"), "a loop in the body"),
])
def test_other_loops_stay_as_they_were(change, why):
    text = str(run_passes(change(MAP), "overlap-vector-tails"))
    assert "scf.if %" not in text, why


def test_a_strided_loop_overlaps_on_its_own_lattice():
    strided = MAP.replace("scf.for %j = %c0 to %w step %c1", "%c2 = arith.constant 2 : index\n"
                          "      scf.for %j = %c0 to %w step %c2")
    text = str(run_passes(strided, "overlap-vector-tails"))
    then = text.split("} else {")[0]
    # the lanes count iterations; each is lb + iteration * 2
    step = re.search(r"%(\d+) = arith.addi %\d+, %\d+ : index\n +%(\d+) = arith.constant 2 : index\n"
                     r" +%\d+ = arith.muli %\1, %\2 : index", then)
    assert step, then


@pytest.fixture
def without_the_overlap(without_pass):
    from tilegrad.passes.overlap_vector_tails import OverlapVectorTails

    return lambda op: without_pass(op, OverlapVectorTails)


WIDTHS = (14, 16, 31, 33, 40, 63, 66, 140)  # rows of outputs: under, at, between and past the chunk and LONG


def _pool_args(width, rng):
    x = rng.standard_normal((2, 3, 5, width)).astype(np.float32)
    x[0, 0, 0, :4] = x[0, 0, 0, 4]  # ties: the first maximum takes dy
    import torch
    y, _ = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(x), [3, 3], [2, 2], [1, 1])
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    return dict(x=x, y=y.numpy(), dy=dy, mode="max", window=(3, 3), stride=(2, 2), padding=(1, 1))


def test_max_pooling_gives_the_same_bits_as_without_the_overlap(without_the_overlap):
    pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    cases = [_pool_args(w, rng) for w in WIDTHS]
    kernel = tilegrad.compile("pooling_backward", "cpu")
    tiled = kernel.ir("tiled", **cases[0])
    overlapped = [kernel(**a) for a in cases]
    plain = without_the_overlap("pooling_backward")
    assert tiled.count("scf.if") > plain.ir("tiled", **cases[0]).count("scf.if")
    for args, got in zip(cases, overlapped):
        np.testing.assert_array_equal(got, plain(**args))


def test_max_pooling_matches_torch_in_the_guard_build():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    kernel = tilegrad.compile("pooling_backward", "cpu", guard=True)
    for width in (31, 40):
        a = _pool_args(width, rng)
        _, index = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(a["x"]), [3, 3], [2, 2], [1, 1])
        want = torch.ops.aten.max_pool2d_with_indices_backward(torch.from_numpy(a["dy"]), torch.from_numpy(a["x"]),
                                                               [3, 3], [2, 2], [1, 1], [1, 1], False, index)
        np.testing.assert_allclose(kernel(**a), want.numpy(), rtol=1e-6, atol=1e-6)
