"""defer-sum-epilogues: each sum is stored first, the math after it runs in a loop of its own."""

import numpy as np
import pytest
from test_passes import assert_lines_in_order

import tilegrad
from tilegrad.pipeline import run_passes

# logits-like: out[i, j] = exp(Σ_k x[i, k]·w[j, k] - m[i]), rows inside a tile of columns
DOTS_WITH_EXP = """
builtin.module {
  func.func @dots(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                  %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                  %m: memref<?xf32> {tg.name = "m", tg.role = "input"},
                  %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %k_end = memref.dim %x, %c1 : memref<?x?xf32>
    %j_end = memref.dim %w, %c0 : memref<?x?xf32>
    %tile = arith.constant 64 : index
    scf.for %t = %c0 to %j_end step %tile {
      scf.for %i = %c0 to %rows step %c1 {
        %t_next = arith.addi %t, %tile : index
        %t_end = arith.minsi %t_next, %j_end : index
        scf.for %j = %t to %t_end step %c1 {
          %zero = arith.constant 0.000000e+00 : f32
          %sum = scf.for %k = %c0 to %k_end step %c1 iter_args(%acc = %zero) -> (f32) {
            %a = memref.load %x[%i, %k] : memref<?x?xf32>
            %b = memref.load %w[%j, %k] : memref<?x?xf32>
            %p = arith.mulf %a, %b : f32
            %s = arith.addf %acc, %p : f32
            scf.yield %s : f32
          } {tg.loop = #tg.loop<reduce, axis = 0>}
          %row_max = memref.load %m[%i] : memref<?xf32>
          %shifted = arith.subf %sum, %row_max : f32
          %e = EPILOGUE
          memref.store %e, %out[%i, %j] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<parallel, axis = 0>}
    } {tg.loop = #tg.loop<tile, axis = 1>, tg.stage = 0 : i64}
    func.return
  }
}
"""


def test_the_sums_are_stored_first_and_the_math_runs_after_the_tile():
    text = str(run_passes(DOTS_WITH_EXP.replace("EPILOGUE", "math.exp %shifted : f32"), "defer-sum-epilogues"))
    assert_lines_in_order(text, [
        "scf.for", "scf.for", "scf.for",  # the tile, its rows, their columns
        "scf.for", "} {tg.loop = #tg.loop<reduce, axis = 0>}",
        "memref.store %sum, %out[%i, %j]",  # the sum itself
        "} {tg.loop = #tg.loop<parallel, axis = 1>}", "} {tg.loop = #tg.loop<parallel, axis = 0>}",
        "scf.for", "arith.addi", "arith.minsi", "scf.for",  # the rows again, their tile's end, the columns
        "memref.load %out[", "memref.load %m[", "arith.subf", "math.exp", "memref.store",
        "} {tg.loop = #tg.loop<parallel, axis = 1>}", "} {tg.loop = #tg.loop<parallel, axis = 0>}",
        "} {tg.loop = #tg.loop<tile, axis = 1>, tg.stage = 0 : i64}"], whole=False)
    first = text.split("} {tg.loop = #tg.loop<parallel, axis = 0>}", 1)[0]
    assert "math.exp" not in first and "memref.load %m" not in first  # nothing computed twice


@pytest.mark.parametrize("epilogue, why", [
    ("arith.mulf %shifted, %shifted : f32", "no math function: a second pass over the tile costs more"),
    ("arith.truncf %shifted : f32 to f16", "the output does not hold the sum exactly"),
])
def test_a_cheap_or_narrowing_epilogue_stays(epilogue, why):
    text = DOTS_WITH_EXP.replace("EPILOGUE", epilogue)
    if "f16" in epilogue:
        text = text.replace("%out: memref<?x?xf32>", "%out: memref<?x?xf16>").replace(
            "%out[%i, %j] : memref<?x?xf32>", "%out[%i, %j] : memref<?x?xf16>")
    out = str(run_passes(text, "defer-sum-epilogues"))
    assert out.count("scf.for") == 4, why


def test_deferred_epilogues_match_the_fused_kernel_bitwise(without_pass):
    """A DSL op of dot products under exp and a division, with and without the pass: the same
    values, bit for bit (the sums are stored exactly and read back)."""
    import tilegrad.dsl as tg
    from tilegrad.passes.defer_sum_epilogues import DeferSumEpilogues

    @tg.op(outputs={"p": tg.shaped("B", "V", dtype="x")}, replace=True)
    def test_softmax_of_logits(x=tg.tensor("B H"), w=tg.tensor("V H", dtype="x"), m=tg.tensor("B", dtype="x"),
                               s=tg.tensor("B", dtype="x")):
        return lambda i, j: tg.exp(tg.reduce_sum(x.shape[1], lambda k: x[i, k] * w[j, k]) - m[i]) / s[i]

    rng = np.random.default_rng(4)
    calls = []
    for rows, hidden, vocab in ((7, 33, 101), (64, 256, 700), (3, 1200, 50)):
        x = (rng.standard_normal((rows, hidden)) * 0.1).astype(np.float32)
        w = (rng.standard_normal((vocab, hidden)) * 0.1).astype(np.float32)
        logits = x.astype(np.float64) @ w.T.astype(np.float64)
        calls.append(dict(x=x, w=w, m=logits.max(1).astype(np.float32),
                          s=np.exp(logits - logits.max(1, keepdims=True)).sum(1).astype(np.float32)))
    kernel = tilegrad.compile("test_softmax_of_logits", "cpu")
    tiled = kernel.ir("tiled", **calls[1])
    assert tiled.count("math.exp") == 1 and "memref.load %p[" in tiled
    deferred = [kernel(**call) for call in calls]
    for call, out in zip(calls, deferred):
        logits = call["x"].astype(np.float64) @ call["w"].T.astype(np.float64)
        np.testing.assert_allclose(out, np.exp(logits - call["m"][:, None]) / call["s"][:, None], rtol=2e-5, atol=1e-7)
    fused = without_pass("test_softmax_of_logits", DeferSumEpilogues)
    assert "memref.load %p[" not in fused.ir("tiled", **calls[1])
    for call, out in zip(calls, deferred):
        np.testing.assert_array_equal(out, fused(**call))
