"""branch-guarded-reads: a read the select's condition keeps inside its tensor runs in a branch on
that condition, without its clamp.

Passes on hand-written IR (what moves, what is dropped, and what stays as it was); a padded 1-D
window through the whole cpu pipeline at every size from empty to past two vectors, against
float64 numpy, in the normal and the guard build; divisive normalization, the library op it
changes, bitwise against its untiled build.
"""

import numpy as np
import pytest

import tilegrad
from tilegrad.pipeline import run_passes

WINDOW = """
builtin.module {
  func.func @k(%x: memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N"},
               %y: memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %d = memref.dim %x, %c0 : memref<?xf32>
    scf.for %o = %c0 to %d step %c1 {
      %at = arith.subi %o, %c1 : index
      %last = arith.subi %d, %c1 : index
      %low = arith.maxsi %at, %c0 : index
      %safe = arith.minsi %low, %last : index
      %v = memref.load %x[%safe] : memref<?xf32>
      %twice = arith.addf %v, %v : f32
      %above = arith.cmpi sge, %at, %c0 : index
      %below = arith.cmpi slt, %at, %d : index
      %inside = arith.andi %above, %below : i1
      %w = arith.select %inside, %twice, %zero : f32
      memref.store %w, %y[%o] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}
"""


def test_a_guarded_read_moves_into_a_branch_without_its_clamp():
    """y[o] = where(0 <= o - 1 < D, 2 x[clamp(o - 1)], 0) -> if (...) { 2 x[o - 1] } else { 0 }."""
    text = str(run_passes(WINDOW, "branch-guarded-reads"))
    assert "arith.select" not in text and "arith.maxsi" not in text and "arith.minsi" not in text
    lines = [line.strip() for line in text.splitlines()]
    branch = next(k for k, line in enumerate(lines) if "= scf.if %inside -> (f32) {" in line)
    then = lines[branch + 1:lines.index("} else {", branch)]
    assert then == ["%v = memref.load %x[%at] : memref<?xf32>", "%twice = arith.addf %v, %v : f32",
                    "scf.yield %twice : f32"]
    assert lines[lines.index("} else {", branch) + 1] == "scf.yield %zero : f32"
    assert "memref.store %" in lines[lines.index("} else {", branch) + 3]  # the store takes the branch's value


@pytest.mark.parametrize("change, why", [
    (lambda t: t.replace("%inside = arith.andi %above, %below : i1", "%inside = arith.andi %above, %above : i1"),
     "the condition does not bound it above"),
    (lambda t: t.replace("%below = arith.cmpi slt, %at, %d : index", "%below = arith.cmpi slt, %at, %last : index")
     .replace("%low = arith.maxsi %at, %c0 : index", "%low = arith.maxsi %at, %c0 : index")
     .replace("%last = arith.subi %d, %c1 : index\n", "")
     .replace("%d = memref.dim %x, %c0 : memref<?xf32>\n",
              "%d = memref.dim %x, %c0 : memref<?xf32>\n    %last = arith.subi %d, %c1 : index\n"),
     "a bound other than the clamp's extent"),
    (lambda t: t.replace("%w = arith.select %inside, %twice, %zero : f32",
                         "%w = arith.select %inside, %twice, %zero : f32\n      %again = arith.mulf %v, %v : f32\n"
                         "      memref.store %again, %y[%c0] : memref<?xf32>"), "the read is used outside the select"),
    (lambda t: t.replace("%above = arith.cmpi sge", "memref.store %zero, %y[%o] : memref<?xf32>\n"
                         "      %above = arith.cmpi sge"), "a store between the read and the select"),
    (lambda t: t.replace("%at = arith.subi %o, %c1 : index", "%at = arith.muli %o, %o : index"),
     "an index that does not move affinely with the loop"),
])
def test_other_reads_stay_as_they_were(change, why):
    text = str(run_passes(change(WINDOW), "branch-guarded-reads"))
    assert "scf.if" not in text and "arith.minsi" in text, why


def test_a_loop_that_only_tests_is_not_partitioned():
    """Once the clamp is gone, partition-clamped-loops leaves the loop whole (its test is a vector
    compare); with the clamp it still runs in three parts."""
    guarded = str(run_passes(WINDOW, "branch-guarded-reads,partition-clamped-loops"))
    assert guarded.count("scf.for") == 1
    assert str(run_passes(WINDOW, "partition-clamped-loops")).count("scf.for") == 3


def test_the_branch_is_overlapped_by_overlap_vector_tails():
    row = WINDOW.replace(", tg.stage = 0 : i64", "")  # a row of a stage, not the stage's own loop
    text = str(run_passes(row, "branch-guarded-reads,overlap-vector-tails"))
    assert text.count("scf.for") == 3  # the vectors, their lanes, and the loop as it was
    assert text.count("-> (f32)") == 2  # the branch in both copies of the body


@pytest.fixture(scope="module")
def padded_window():
    import tilegrad.dsl as tg

    @tg.op(name="test_branch_guarded_window", outputs={"y": tg.like("x")}, replace=True)
    def window(x=tg.tensor("N W")):
        def blurred(n, i):
            def term(j):
                at = i + j - 1
                return tg.where((at >= 0) & (at < x.shape[1]), x[n, at] * tg.cast(j + 1, "f"), 0.0)
            return tg.reduce_sum(3, term)
        return blurred

    return tilegrad.compile("test_branch_guarded_window", "cpu")


def _reference(x: np.ndarray) -> np.ndarray:
    padded = np.pad(x.astype(np.float64), ((0, 0), (1, 1)))
    return sum(padded[:, j:j + x.shape[1]] * (j + 1) for j in range(3))


def test_a_padded_window_matches_numpy_at_every_row_length(padded_window):
    x0 = np.zeros((2, 20), np.float32)
    tiled = padded_window.ir("tiled", x=x0)
    assert "-> (f32) {" in tiled and "arith.minsi" not in tiled.split("scf.if")[-1]
    rng = np.random.default_rng(0)
    for width in range(0, 40):
        x = rng.standard_normal((3, width)).astype(np.float32)
        np.testing.assert_allclose(padded_window(x=x), _reference(x), rtol=1e-6, atol=1e-6, err_msg=f"W={width}")


def test_divisive_normalization_is_bitwise_its_untiled_build():
    rng = np.random.default_rng(1)
    for shape in ((2, 3, 5, 7), (1, 2, 9, 30)):
        x = rng.standard_normal(shape).astype(np.float32)
        means = rng.standard_normal(shape).astype(np.float32)
        dy = rng.standard_normal(shape).astype(np.float32)
        tiled = tilegrad.compile("divisive_normalization_backward", "cpu")(x=x, means=means, dy=dy, lrn_n=3)
        untiled = tilegrad.compile("divisive_normalization_backward", "cpu", untiled=True)(
            x=x, means=means, dy=dy, lrn_n=3)
        for a, b in zip(tiled, untiled):
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
