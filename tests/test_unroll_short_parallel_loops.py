"""unroll-short-parallel-loops: sums that differ only by a short constant axis sweep their data once,
and interchange-column-reductions leaves a sum whose work is mostly the same for every term.

Passes on hand-written IR (what unrolls and what does not); the sampler and grid generator, which
it changes in the library, are checked bitwise against the kernels built without it.
"""

import numpy as np
import pytest

import tilegrad
from tilegrad.pipeline import run_passes

TWO_SLOPES = """
builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C"},
               %out: memref<?x2xf32> {tg.name = "out", tg.role = "output", tg.dims = "N 2"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %c = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %n step %c1 {
      scf.for %a = %c0 to %c2 step %c1 {
        %ai = arith.index_cast %a : index to i64
        %af = arith.sitofp %ai : i64 to f32
        %s = scf.for %r = %c0 to %c step %c1 iter_args(%acc = %zero) -> (f32) {
          %v = memref.load %x[%i, %r] : memref<?x?xf32>
          %p = arith.mulf %v, %af : f32
          %t = arith.addf %acc, %p : f32
          scf.yield %t : f32
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        memref.store %s, %out[%i, %a] : memref<?x2xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}
"""


def test_a_short_axis_around_a_sum_becomes_one_sweep_with_an_accumulator_per_value():
    text = str(run_passes(TWO_SLOPES, "unroll-short-parallel-loops,fuse-sibling-reductions"))
    assert text.count("scf.for") == 2  # the stage's loop and one sum
    assert "iter_args(%acc = %zero, %acc_1 = %zero) -> (f32, f32)" in text
    assert "memref.store %s, %out[%i, %0] : memref<?x2xf32>" in text
    assert "memref.store %s_1, %out[%i, %1] : memref<?x2xf32>" in text
    assert text.count("memref.load %x[%i, %r]") == 2  # each copy keeps its own terms (GVN shares the load)
    assert "scf.for %a" not in text and "arith.index_cast %0 : index to i64" in text  # copy 0 reads a = 0


@pytest.mark.parametrize("change, why", [
    (lambda t: t.replace("scf.for %a = %c0 to %c2", "%c5 = arith.constant 5 : index\n      scf.for %a = %c0 to %c5"),
     "more than MAX_TRIPS trips"),
    (lambda t: t.replace("scf.for %a = %c0 to %c2", "scf.for %a = %c0 to %c"), "a bound that is not a constant"),
    (lambda t: t.replace('{tg.loop = #tg.loop<reduce, axis = 0>}', '{tg.loop = #tg.loop<scatter, axis = 0>}'),
     "no reduction inside"),
])
def test_other_loops_stay_loops(change, why):
    text = str(run_passes(change(TWO_SLOPES), "unroll-short-parallel-loops"))
    assert text.count("scf.for") == 3, why


def test_a_stage_that_is_only_a_short_loop_keeps_its_nest():
    whole = TWO_SLOPES.replace("scf.for %i = %c0 to %n", "scf.for %i = %c0 to %c2")
    inner_only = str(run_passes(whole, "unroll-short-parallel-loops"))
    assert "scf.for %i = %c0 to %c2 step %c1 {" in inner_only and "tg.stage = 0" in inner_only
    assert inner_only.count("scf.for") == 3  # the stage's loop and the inner axis's two sums


def _column_sum(term: str) -> str:
    return f"""
builtin.module {{
  func.func @k(%x: memref<?x?xf32>, %g: memref<?xf32>, %out: memref<?x?xf32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %c1 step %c1 {{
      scf.for %j = %c0 to %m step %c1 {{
        %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {{
          %v = memref.load %x[%r, %j] : memref<?x?xf32>
{term}
          %a = arith.addf %acc, %p : f32
          scf.yield %a : f32
        }} {{tg.loop = #tg.loop<reduce, axis = 0>}}
        memref.store %s, %out[%i, %j] : memref<?x?xf32>
      }} {{tg.loop = #tg.loop<parallel, axis = 1>}}
    }} {{tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}}
    func.return
  }}
}}
"""


CHEAP = "          %p = arith.mulf %v, %v : f32"
WEIGHTED = """          %w = memref.load %g[%j] : memref<?xf32>
          %w1 = math.floor %w : f32
          %w2 = arith.subf %w, %w1 : f32
          %w3 = arith.mulf %w2, %w2 : f32
          %w4 = arith.addf %w3, %w1 : f32
          %p = arith.mulf %v, %w4 : f32"""


def test_interchange_leaves_a_sum_whose_term_is_mostly_the_same_for_every_r():
    """x[r, j] * f(g[j]) with f costlier than the product: summed down the column, f(g[j]) is
    computed once per j; as a row accumulation it would be computed again for every r."""
    assert "memref.alloca" in str(run_passes(_column_sum(CHEAP), "interchange-column-reductions"))
    assert "memref.alloca" not in str(run_passes(_column_sum(WEIGHTED), "interchange-column-reductions"))


@pytest.fixture
def without_the_unroll(without_pass):
    from tilegrad.passes.unroll_short_parallel_loops import UnrollShortParallelLoops

    return lambda op: without_pass(op, UnrollShortParallelLoops)


@pytest.mark.parametrize("op, sums", [("spatial_tf_sampler_backward", "(f32, f32)"),  # dgrid's x and y
                                      ("spatial_tf_grid_generator_backward", "(f32, f32, f32)")])  # dθ's j
def test_library_ops_give_the_same_bits_as_without_the_unroll(op, sums, without_the_unroll):
    rng = np.random.default_rng(3)
    if op == "spatial_tf_sampler_backward":
        args = dict(x=rng.standard_normal((2, 5, 9, 11)).astype(np.float32),
                    grid=rng.uniform(-1.1, 1.1, (2, 7, 6, 2)).astype(np.float32),
                    dy=rng.standard_normal((2, 5, 7, 6)).astype(np.float32))
    else:
        args = dict(dgrid=rng.standard_normal((3, 9, 13, 2)).astype(np.float32))
    kernel = tilegrad.compile(op, "cpu")
    assert f"-> {sums} {{" in kernel.ir("tiled", **args)
    fused = kernel(**args)
    unfused = without_the_unroll(op)
    assert f"-> {sums} {{" not in unfused.ir("tiled", **args)
    plain = unfused(**args)
    for a, b in zip(fused if isinstance(fused, tuple) else (fused,), plain if isinstance(plain, tuple) else (plain,)):
        np.testing.assert_array_equal(a, b)
