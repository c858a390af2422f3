"""collapse-contiguous-rows: two loops walking whole planes of contiguous tensors become one loop
over a row view (memref.collapse_shape), for a map and for a sum.

The pass is checked on hand-written IR (what collapses, and each reason a pair keeps its loops);
the batch norm forward, whose sums and map it collapses, against float64 numpy with contiguous and
strided inputs on the host and on a scratchpad target.
"""

import numpy as np
import pytest

import tilegrad
from tilegrad.pipeline import run_passes

T4 = "memref<?x?x?x?xf32>"
HEAD = f"""
builtin.module {{
  func.func @k(%x: {T4} {{tg.name = "x", tg.role = "input", tg.dims = "N C H W"}},
               %y: {T4} {{tg.name = "y", tg.role = "output", tg.dims = "N C H W"}},
               %s: memref<?x?xf32> {{tg.name = "s", tg.role = "output", tg.dims = "N C"}}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %n = memref.dim %x, %c0 : {T4}
    %c = memref.dim %x, %c1 : {T4}
    %h = memref.dim %x, %c2 : {T4}
    %w = memref.dim %x, %c3 : {T4}
    %zero = arith.constant 0.000000e+00 : f32
"""
MAP = HEAD + f"""
    scf.for %i = %c0 to %n step %c1 {{
      scf.for %j = %c0 to %c step %c1 {{
        scf.for %k = %c0 to %h step %c1 {{
          scf.for %l = %c0 to %w step %c1 {{
            %v = memref.load %x[%i, %j, %k, %l] : {T4}
            %r = arith.mulf %v, %v : f32
            memref.store %r, %y[%i, %j, %k, %l] : {T4}
          }} {{tg.loop = #tg.loop<parallel, axis = 3>}}
        }} {{tg.loop = #tg.loop<parallel, axis = 2>}}
      }} {{tg.loop = #tg.loop<parallel, axis = 1>}}
    }} {{tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}}
    func.return
  }}
}}
"""
SUM = HEAD + f"""
    scf.for %i = %c0 to %n step %c1 {{
      scf.for %j = %c0 to %c step %c1 {{
        %t = scf.for %k = %c0 to %h step %c1 iter_args(%acc = %zero) -> (f32) {{
          %z = arith.constant 0.000000e+00 : f32
          %row = scf.for %l = %c0 to %w step %c1 iter_args(%racc = %z) -> (f32) {{
            %v = memref.load %x[%i, %j, %k, %l] : {T4}
            %a = arith.addf %racc, %v fastmath<reassoc> : f32
            scf.yield %a : f32
          }} {{tg.loop = #tg.loop<reduce, axis = 0>}}
          %b = arith.addf %acc, %row fastmath<reassoc> : f32
          scf.yield %b : f32
        }} {{tg.loop = #tg.loop<reduce, axis = 0>}}
        memref.store %t, %s[%i, %j] : memref<?x?xf32>
      }} {{tg.loop = #tg.loop<parallel, axis = 1>}}
    }} {{tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}}
    func.return
  }}
}}
"""
VIEW = ("memref.collapse_shape %x [[0 : i64], [1 : i64], [2 : i64, 3 : i64]] : "
        "memref<?x?x?x?xf32> into memref<?x?x?xf32>")


def rows(text: str) -> str:
    return str(run_passes(text, "collapse-contiguous-rows"))


def test_a_map_over_whole_planes_walks_each_plane_as_one_row():
    out = rows(MAP)
    assert f"%x_rows = {VIEW}" in out and "%y_rows = memref.collapse_shape %y" in out
    assert "%0 = arith.muli %h, %w : index" in out
    assert "scf.for %i_1 = %c0 to %0 step %c1 {" in out
    assert "%v = memref.load %x_rows[%i, %j, %i_1] : memref<?x?x?xf32>" in out
    assert "memref.store %r, %y_rows[%i, %j, %i_1] : memref<?x?x?xf32>" in out
    assert out.count("scf.for") == 3 and 'axis = 2>}' in out


def test_a_sum_over_whole_planes_is_one_sum_over_the_row():
    out = rows(SUM)
    assert "%t = scf.for %i_1 = %c0 to %0 step %c1 iter_args(%racc = %zero) -> (f32) {" in out
    assert "%v = memref.load %x_rows[%i, %j, %i_1] : memref<?x?x?xf32>" in out
    assert "%a = arith.addf %racc, %v fastmath<reassoc> : f32" in out
    assert "%b = arith.addf" not in out and out.count("scf.for") == 3


@pytest.mark.parametrize("text, change, why", [
    (MAP, lambda t: t.replace('%x: memref<?x?x?x?xf32> {', '%x: memref<?x?x?x?xf32, strided<[?, ?, ?, 1]>> {')
     .replace(f"%x[%i, %j, %k, %l] : {T4}", "%x[%i, %j, %k, %l] : memref<?x?x?x?xf32, strided<[?, ?, ?, 1]>>")
     .replace(f"%x, %c0 : {T4}", "%x, %c0 : memref<?x?x?x?xf32, strided<[?, ?, ?, 1]>>")
     .replace(f"%x, %c1 : {T4}", "%x, %c1 : memref<?x?x?x?xf32, strided<[?, ?, ?, 1]>>")
     .replace(f"%x, %c2 : {T4}", "%x, %c2 : memref<?x?x?x?xf32, strided<[?, ?, ?, 1]>>")
     .replace(f"%x, %c3 : {T4}", "%x, %c3 : memref<?x?x?x?xf32, strided<[?, ?, ?, 1]>>"),
     "x is strided: its rows are not one run"),
    (MAP, lambda t: t.replace('tg.role = "output", tg.dims = "N C H W"', 'tg.role = "output", tg.dims = "N C H V"'),
     "y's rows are not known to be W long"),
    (MAP, lambda t: t.replace("scf.for %l = %c0 to %w", "scf.for %l = %c1 to %w"), "the row starts past 0"),
    (MAP, lambda t: t.replace("%r = arith.mulf %v, %v : f32",
                              "%li = arith.index_cast %l : index to i64\n            %r = arith.mulf %v, %v : f32"),
     "w is used for more than indexing"),
    (MAP, lambda t: t.replace("memref.store %r, %y[%i, %j, %k, %l]", "memref.store %r, %y[%i, %j, %l, %k]"),
     "a transposed access"),
    (MAP, lambda t: t.replace('tg.name = "y", tg.role = "output"', 'tg.name = "y", tg.role = "temp"'),
     "a temporary the tiler places as it is"),
    (SUM, lambda t: t.replace("%b = arith.addf %acc, %row fastmath<reassoc>", "%b = arith.addf %acc, %row"),
     "the sum's additions may not be reassociated"),
    (SUM, lambda t: t.replace("%a = arith.addf %racc, %v fastmath<reassoc>", "%a = arith.maximumf %racc, %v"),
     "the inner loop is not a sum"),
    (SUM, lambda t: t.replace("%z = arith.constant 0.000000e+00 : f32", "%z = arith.constant 1.000000e+00 : f32"),
     "each row's sum starts from 1"),
])
def test_a_pair_keeps_its_loops_when_one_row_would_change_what_it_does(text, change, why):
    changed = change(text)
    assert rows(changed).count("scf.for") == changed.count("scf.for"), why


def _bn_forward_reference(x, gamma, beta, eps=1e-5):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=(0, 2, 3), keepdims=True)
    inv = 1.0 / np.sqrt(x64.var(axis=(0, 2, 3), keepdims=True) + eps)
    return (x64 - mean) * inv * gamma + beta, mean, inv


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
@pytest.mark.parametrize("strided", [False, True])
def test_batch_norm_forward_over_rows_matches_numpy(target, strided):
    rng = np.random.default_rng(11)
    base = rng.standard_normal((3, 5, 7, 18 if strided else 9)).astype(np.float32)
    x = base[..., ::2] if strided else base
    gamma, beta = (rng.standard_normal((1, 5, 1, 1)).astype(np.float32) for _ in range(2))
    kernel = tilegrad.compile("batch_norm_forward_training", target)
    args = dict(x=x, bn_scale=gamma, bn_bias=beta, running_mean=np.zeros((1, 5, 1, 1), np.float32),
                running_variance=np.ones((1, 5, 1, 1), np.float32))
    assert ("memref.collapse_shape %x" in kernel.ir("loops", **args)) is not strided
    y, save_mean, save_inv = kernel(**args)[:3]
    expected_y, mean, inv = _bn_forward_reference(x, gamma, beta)
    np.testing.assert_allclose(y, expected_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(save_mean, mean.reshape(save_mean.shape), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(save_inv, inv.reshape(save_inv.shape), rtol=1e-5, atol=1e-5)
