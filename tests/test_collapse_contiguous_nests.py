"""collapse-contiguous-nests: elementwise stages over contiguous tensors become one flat loop.

The pass is checked on hand-written IR (what collapses, and each reason a nest or tensor keeps its
shape); the kernels are checked against numpy with contiguous data (collapsed) and with strided
views and outputs (not collapsed) on the host and on a scratchpad target.
"""

import re

import numpy as np
import pytest

import tilegrad
from tilegrad.pipeline import run_passes

T3 = "memref<?x?x?xf32>"
KERNEL = f"""
builtin.module {{
  func.func @k(%x: {T3} {{tg.name = "x", tg.role = "input", tg.dims = "N C W"}},
               %s: memref<1xf32> {{tg.name = "s", tg.role = "input", tg.dims = "1"}},
               %y: {T3} {{tg.name = "y", tg.role = "output", tg.dims = "N C W"}}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %x, %c0 : {T3}
    %c = memref.dim %x, %c1 : {T3}
    %w = memref.dim %x, %c2 : {T3}
    scf.for %i = %c0 to %n step %c1 {{
      scf.for %j = %c0 to %c step %c1 {{
        scf.for %k = %c0 to %w step %c1 {{
          %v = memref.load %x[%i, %j, %k] : {T3}
          %scale = memref.load %s[%c0] : memref<1xf32>
          %r = arith.mulf %v, %scale : f32
          memref.store %r, %y[%i, %j, %k] : {T3}
        }} {{tg.loop = #tg.loop<parallel, axis = 2>}}
      }} {{tg.loop = #tg.loop<parallel, axis = 1>}}
    }} {{tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}}
    func.return
  }}
}}
"""


def collapse(text: str) -> str:
    return str(run_passes(text, "collapse-contiguous-nests"))


def test_an_elementwise_nest_over_contiguous_tensors_becomes_one_flat_loop():
    out = collapse(KERNEL)
    assert out.count("scf.for") == 1
    assert 'memref<?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N*C*W"}' in out
    assert 'memref<?xf32> {tg.name = "y", tg.role = "output", tg.dims = "N*C*W"}' in out
    assert "memref.load %x[%i] : memref<?xf32>" in out
    assert "memref.store %r, %y[%i] : memref<?xf32>" in out
    assert "memref.load %s[%c0] : memref<1xf32>" in out  # a load the loop variables do not index stays
    assert re.search(r"memref.dim %x, %\w+ : memref<\?xf32>", out)  # the flat extent
    assert "tg.stage = 0" in out and "axis = 0>" in out


@pytest.mark.parametrize("change, why", [
    (lambda t: t.replace('%x: memref<?x?x?xf32> {', '%x: memref<?x?x?xf32, strided<[?, ?, 1]>> {').replace(
        f"%x[%i, %j, %k] : {T3}", "%x[%i, %j, %k] : memref<?x?x?xf32, strided<[?, ?, 1]>>").replace(
        f"memref.dim %x, %c0 : {T3}", "memref.dim %x, %c0 : memref<?x?x?xf32, strided<[?, ?, 1]>>").replace(
        f"memref.dim %x, %c1 : {T3}", "memref.dim %x, %c1 : memref<?x?x?xf32, strided<[?, ?, 1]>>").replace(
        f"memref.dim %x, %c2 : {T3}", "memref.dim %x, %c2 : memref<?x?x?xf32, strided<[?, ?, 1]>>"),
     "x is strided: a flat index is not its address"),
    (lambda t: t.replace('tg.role = "output", tg.dims = "N C W"', 'tg.role = "output", tg.dims = "N C V"'),
     "y is not known to have x's shape"),
    (lambda t: t.replace('tg.role = "input", tg.dims = "N C W"', 'tg.role = "input", tg.dims = "N C ?"'),
     "a size without a symbol"),
    (lambda t: t.replace("%r = arith.mulf %v, %scale : f32",
                         "%kf = arith.index_cast %k : index to i64\n          %r = arith.mulf %v, %scale : f32"),
     "the body uses a loop variable for more than indexing"),
    (lambda t: t.replace("memref.store %r, %y[%i, %j, %k]", "memref.store %r, %y[%i, %k, %j]"),
     "an access in another order"),
    (lambda t: t.replace("    func.return", "    %p = memref.dim %x, %c1 : memref<?x?x?xf32>\n"
                         "    %q = arith.muli %p, %p : index\n    func.return"),
     "x's size is used for something else"),
])
def test_a_nest_keeps_its_shape_when_collapsing_would_change_what_it_does(change, why):
    out = collapse(change(KERNEL))
    assert out.count("scf.for") == 3, why
    assert "memref<?xf32>" not in out, why


def test_a_tensor_another_stage_reads_by_its_axes_keeps_its_shape_and_so_do_its_nests():
    # a second stage sums x over its last axis: x keeps its shape, so the first stage cannot collapse
    second = f"""
    scf.for %a = %c0 to %n step %c1 {{
      scf.for %b = %c0 to %c step %c1 {{
        %t = arith.constant 0.0 : f32
        %sum = scf.for %k2 = %c0 to %w step %c1 iter_args(%acc = %t) -> (f32) {{
          %e = memref.load %x[%a, %b, %k2] : {T3}
          %acc2 = arith.addf %acc, %e : f32
          scf.yield %acc2 : f32
        }} {{tg.loop = #tg.loop<reduce, axis = 2>}}
        memref.store %sum, %z[%a, %b] : memref<?x?xf32>
      }} {{tg.loop = #tg.loop<parallel, axis = 1>}}
    }} {{tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}}
    func.return"""
    text = KERNEL.replace("    func.return", second, 1).replace(
        'tg.role = "output", tg.dims = "N C W"})', 'tg.role = "output", tg.dims = "N C W"}, '
        '%z: memref<?x?xf32> {tg.name = "z", tg.role = "output", tg.dims = "N C"})')
    out = collapse(text)
    assert "memref<?xf32>" not in out
    assert out.count("scf.for") == 3 + 3


SHAPES = [(2, 3, 4, 5), (1, 1, 64, 1000), (3, 1, 1, 7), (1, 1, 1, 1)]


@pytest.fixture(scope="module", params=["cpu", "ascend910b"])
def relu(request):
    return tilegrad.compile("activation_backward", request.param)


@pytest.mark.parametrize("shape", SHAPES)
def test_collapsed_and_strided_calls_agree_with_numpy(relu, shape):
    rng = np.random.default_rng(sum(shape))
    dy = rng.standard_normal(shape).astype(np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    want = np.where(x <= 0, 0, dy)
    np.testing.assert_array_equal(relu(dy=dy, x=x, mode="relu"), want)
    wide = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(np.float32)
    for view in (wide[..., ::2], wide[..., :shape[-1]]):  # strided, and unit-stride but not contiguous
        np.testing.assert_array_equal(relu(dy=dy, x=view, mode="relu"), np.where(view <= 0, 0, dy))
    out = np.full(shape[:-1] + (shape[-1] + 3,), 7.0, np.float32)
    relu(dy=dy, x=x, mode="relu", dx=out[..., :shape[-1]])  # a given output that is not contiguous
    np.testing.assert_array_equal(out[..., :shape[-1]], want)
    assert (out[..., shape[-1]:] == 7.0).all()


def test_the_plan_splits_the_flat_extent_over_every_core():
    relu = tilegrad.compile("activation_backward", "cpu")
    spec = tilegrad.Spec((1, 1, 1024, 4096), "float32")
    report = relu.plan(dy=spec, x=spec, mode="relu")
    stage = report.stages[0]
    assert stage["extent"] == 1024 * 4096
    assert stage["per_core"] == 1024 * 4096 // report.block_dim
    tiled = relu.ir("tiled", dy=spec, x=spec, mode="relu")
    assert 'memref<?xf32> {tg.name = "dx", tg.role = "output", tg.dims = "N*C*H*W", tg.in_place = "dy"}' in tiled


@pytest.mark.parametrize("shape", [(2, 3, 40, 128), (5, 7, 9)])
def test_tensors_of_one_starred_group_collapse_and_agree_with_numpy(shape):
    """A starred group ("*S") binds its sizes as one tuple, so its axes have names ("S.0 S.1 ...")
    and dropout's 4-D dy, mask and dx are one flat loop (which streams: rows of 128 never did)."""
    dropout = tilegrad.compile("dropout_backward", "cpu")
    rng = np.random.default_rng(len(shape))
    dy = rng.standard_normal(shape).astype(np.float32)
    mask = (rng.uniform(size=shape) > 0.3).astype(np.uint8)
    tiled = dropout.ir("tiled", dy=dy, reserve_space=mask, dropout=0.25)
    flat = "*".join(f"S.{k}" for k in range(len(shape)))
    assert f'memref<?xf32> {{tg.name = "dy", tg.role = "input", tg.dims = "{flat}"}}' in tiled
    assert f'memref<?xi8> {{tg.name = "reserve_space", tg.role = "input", tg.dims = "{flat}"}}' in tiled
    want = np.where(mask != 0, dy.astype(np.float64) / 0.75, 0.0).astype(np.float32)
    np.testing.assert_allclose(dropout(dy=dy, reserve_space=mask, dropout=0.25), want, rtol=1e-6, atol=0)
    wide = np.zeros(shape[:-1] + (2 * shape[-1],), np.uint8)
    wide[..., ::2] = mask  # a strided mask: not collapsed, the same result
    np.testing.assert_allclose(dropout(dy=dy, reserve_space=wide[..., ::2], dropout=0.25), want, rtol=1e-6, atol=0)
