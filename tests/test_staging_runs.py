"""Scratchpad staging by runs and blocks, and the copy traffic the plan reports (issue 44): ops a
user writes in the DSL (RMSNorm backward, dx with its per-row values and dweight short and long, a
3x3 conv backward, a bilinear x2 upsample backward as a gather, a suffix sum, attention's dV) move
rows, runs and blocks between GM and UB on ascend910b, not one element per copy, and match float64
numpy (also in the guard build); the plan says what still moves per point."""

import re

import numpy as np
import pytest
from test_guard import SMALL_CASES, small_call

import tilegrad
import tilegrad.dsl as tg


@tg.op(outputs={"dx": tg.like("x"), "dweight": tg.like("weight")}, replace=True)
def test_rms_norm_backward(dy=tg.tensor("N D", dtype="x"), x=tg.tensor("N D"), rstd=tg.tensor("N", dtype="x"),
                           weight=tg.tensor("D", dtype="x")):
    rows, features = x.shape
    gx = tg.temp("gx", (rows,))
    gx.assign(lambda n: tg.reduce_sum(features, lambda d: dy[n, d] * weight[d] * x[n, d] * rstd[n]))
    dx = lambda n, d: rstd[n] * (dy[n, d] * weight[d] - x[n, d] * rstd[n] * (gx[n] / tg.cast(features, "f")))  # noqa: E731
    dweight = lambda d: tg.reduce_sum(rows, lambda n: dy[n, d] * (x[n, d] * rstd[n]))  # noqa: E731
    return dx, dweight


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def test_suffix_sum(x=tg.tensor("N C")):
    """cumsum's backward: y[n, i] = sum of x[n, i:]."""
    cols = x.shape[1]
    return lambda n, i: tg.reduce_sum(cols - i, lambda t: x[n, i + t])


def _inside(y, x, h, w):
    return (y >= 0) & (y < h) & (x >= 0) & (x < w)


@tg.op(outputs={"dx": tg.shaped("N C H W", dtype="dy")}, replace=True)
def test_conv3x3_grad_input(dy=tg.tensor("N K H W"), weight=tg.tensor("K C 3 3", dtype="dy")):
    """Stride 1, padding 1: dx[n, c, h, w] = sum_{k, i, j} dy[n, k, h + i - 1, w + j - 1] weight[k, c, 2 - i, 2 - j]."""
    h_, w_ = dy.shape[2], dy.shape[3]

    def term(n, c, h, w, k, i, j):
        y, x = h + i - 1, w + j - 1
        return tg.where(_inside(y, x, h_, w_), dy[n, k, y, x] * weight[k, c, 2 - i, 2 - j], 0.0)

    return lambda n, c, h, w: tg.reduce_sum_over((dy.shape[1], 3, 3), lambda k, i, j: term(n, c, h, w, k, i, j))


@tg.op(outputs={"dweight": tg.shaped("K C", 3, 3, dtype="x")}, replace=True)
def test_conv3x3_grad_weight(x=tg.tensor("N C H W"), dy=tg.tensor("N K H W", dtype="x")):
    """dweight[k, c, i, j] = sum_{n, h, w} dy[n, k, h, w] x[n, c, h + i - 1, w + j - 1]."""
    n_, _, h_, w_ = x.shape

    def term(k, c, i, j, n, h, w):
        y, xx = h + i - 1, w + j - 1
        return tg.where(_inside(y, xx, h_, w_), dy[n, k, h, w] * x[n, c, y, xx], 0.0)

    return lambda k, c, i, j: tg.reduce_sum_over((n_, h_, w_), lambda n, h, w: term(k, c, i, j, n, h, w))


def _tap(i, a, n):
    """The weight output 2i - 1 + a gives input i in a bilinear x2 upsample (align_corners=False)."""
    o = 2 * i - 1 + a
    base = tg.where(a.eq(0) | a.eq(3), 0.25, 0.75)
    edge = tg.where((i.eq(0) & a.eq(1)) | (i.eq(n - 1) & a.eq(2)), 0.25, 0.0)  # the clamped source
    return tg.where((o >= 0) & (o < 2 * n), base + edge, 0.0)


@tg.op(outputs={"dx": tg.shaped("N C H W", dtype="dy")}, replace=True)
def test_upsample_bilinear2x_backward(dy=tg.tensor("N C H2 W2"), x=tg.tensor("N C H W", dtype="dy")):
    h_, w_ = x.shape[2], x.shape[3]

    def term(n, c, h, w, a, b):
        return _tap(h, a, h_) * _tap(w, b, w_) * dy[n, c, 2 * h - 1 + a, 2 * w - 1 + b]

    return lambda n, c, h, w: tg.reduce_sum_over((4, 4), lambda a, b: term(n, c, h, w, a, b))


@tg.op(outputs={"dv": tg.shaped("B M D", dtype="p")}, replace=True)
def test_attention_dv(p=tg.tensor("B L M"), do=tg.tensor("B L D", dtype="p")):
    """Attention's dV = P^T dO per batch, as a user writes it: the sum over l reads p down a column."""
    return lambda b, m, d: tg.reduce_sum(p.shape[1], lambda t: p[b, t, m] * do[b, t, d])


def _interp(n: int) -> np.ndarray:
    """torch's bilinear x2 (align_corners=False) along one axis, as a (2n, n) matrix in float64."""
    m = np.zeros((2 * n, n))
    for o in range(2 * n):
        s = max((o + 0.5) / 2 - 0.5, 0.0)
        i0 = int(np.floor(s))
        m[o, i0] += 1 - (s - i0)
        m[o, min(i0 + 1, n - 1)] += s - i0
    return m


def _cases():
    rng = np.random.default_rng(3)
    f = np.float32
    x, dy = rng.standard_normal((37, 300)).astype(f), rng.standard_normal((37, 300)).astype(f)
    rstd, w = rng.uniform(0.5, 2, 37).astype(f), rng.standard_normal(300).astype(f)
    x64, dy64, r64, w64 = (a.astype(np.float64) for a in (x, dy, rstd, w))
    xh = x64 * r64[:, None]
    gx = (dy64 * w64 * xh).sum(1)
    yield ("test_rms_norm_backward", dict(dy=dy, x=x, rstd=rstd, weight=w),
           (r64[:, None] * (dy64 * w64 - xh * (gx / 300)[:, None]), (dy64 * xh).sum(0)), [0, 1])
    s = rng.standard_normal((5, 70)).astype(f)
    yield "test_suffix_sum", dict(x=s), (np.cumsum(s.astype(np.float64)[:, ::-1], 1)[:, ::-1],), [0]
    cdy, cw = rng.standard_normal((2, 3, 5, 7)).astype(f), rng.standard_normal((3, 4, 3, 3)).astype(f)
    pad = np.pad(cdy.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    flipped = cw.astype(np.float64)[:, :, ::-1, ::-1]
    want = sum(np.einsum("nkhw,kc->nchw", pad[:, :, i:i + 5, j:j + 7], flipped[:, :, i, j])
               for i in range(3) for j in range(3))
    yield "test_conv3x3_grad_input", dict(dy=cdy, weight=cw), (want,), [0]
    cx = rng.standard_normal((2, 4, 5, 7)).astype(f)
    xp = np.pad(cx.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    gw = np.stack([np.stack([np.einsum("nkhw,nchw->kc", cdy.astype(np.float64), xp[:, :, i:i + 5, j:j + 7])
                             for j in range(3)], -1) for i in range(3)], -2)
    yield "test_conv3x3_grad_weight", dict(x=cx, dy=cdy), (gw,), [0]
    g = rng.standard_normal((2, 3, 10, 12)).astype(f)
    up = np.einsum("oh,ncop,pw->nchw", _interp(5), g.astype(np.float64), _interp(6))
    yield "test_upsample_bilinear2x_backward", dict(dy=g, x=np.zeros((2, 3, 5, 6), f)), (up,), [0]


CASES = {case[0]: case for case in _cases()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_user_ops_stage_runs_and_blocks_not_elements(name):
    """The stages that walk columns, windows, variable extents or per-row values move no single
    elements, the plan prints their bytes moved against the minimum, and the results match float64."""
    _, inputs, wants, stages = CASES[name]
    kernel = tilegrad.compile(name, "ascend910b")
    report = kernel.plan(**inputs)
    for stage in stages:
        traffic = report.stages[stage]["traffic"]
        assert traffic is not None and traffic["element_copies"] == 0 and traffic["copies"] > 0, traffic
        assert traffic["moved"] >= traffic["minimum"] > 0
        assert f"stage {stage}: moves {traffic['moved']} B vs minimum {traffic['minimum']} B" in str(report)
        assert "element-sized copies: 0 (0 B)" in str(report)
    for guard in (False, True):
        got = tilegrad.compile(name, "ascend910b", guard=guard)(**inputs)
        for g, want in zip(got if isinstance(got, tuple) else (got,), wants):
            np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4)


def test_a_column_walk_is_staged_by_blocks_of_rows():
    """dweight's reduction over rows of dy and x reads both as blocks (rows x the tile of columns),
    with the tile's partial sums in UB, and every element of dy and x moves once."""
    _, inputs, _, _ = CASES["test_rms_norm_backward"]
    report = tilegrad.compile("test_rms_norm_backward", "ascend910b").plan(**inputs)
    kinds = {(b["name"], b["copies"]) for b in report.buffers if b["stage"] == 1}
    assert {("dy", "block in"), ("x", "block in"), ("partial f32", "partials")} <= kinds
    traffic = report.stages[1]["traffic"]
    assert traffic["minimum"] == 4 * (2 * 37 * 300 + 37 + 300)  # dy, x, rstd read once; dweight written once
    assert traffic["moved"] <= traffic["minimum"] + 4 * 37 * 24  # rstd's strip once per core's tile at most


def test_a_long_column_walk_is_staged_by_blocks_in_both_forms():
    """Over more than REDUCE_BLOCK rows the dweight sum takes its blocked form (float64 total of
    1024-row block sums): staged by blocks too, with each point's total in UB; no element copies,
    dy and x each move once, and the results match float64 (also in the guard build)."""
    rng = np.random.default_rng(6)
    n, d = 1100, 48
    x, dy = rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal((n, d)).astype(np.float32)
    rstd, w = rng.uniform(0.5, 2, n).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    inputs = dict(dy=dy, x=x, rstd=rstd, weight=w)
    report = tilegrad.compile("test_rms_norm_backward", "ascend910b").plan(**inputs)
    kinds = {(b["name"], b["copies"]) for b in report.buffers if b["stage"] == 1}
    assert {("dy", "block in"), ("x", "block in"), ("partial f32", "partials"), ("total f64", "partials")} <= kinds
    traffic = report.stages[1]["traffic"]
    assert traffic["element_copies"] == 0
    assert traffic["moved"] <= traffic["minimum"] + 4 * n * 24  # rstd's strips once per core at most
    want = (dy.astype(np.float64) * x * rstd[:, None].astype(np.float64)).sum(0)
    for guard in (False, True):
        got = tilegrad.compile("test_rms_norm_backward", "ascend910b", guard=guard)(**inputs)
        np.testing.assert_allclose(got[1], want, rtol=1e-5, atol=1e-4)


def test_a_column_walk_reads_a_shared_column_once_per_tile():
    """dV[b, m, d] sums p[b, l, m] * do[b, l, d] over l, under a tile of d: do moves in blocks (rows x
    the tile), and p[b, l, m], the same for every d of the tile, once per strip of rows, one element
    per row (p is strided along l), not once per point: 16x fewer element-sized copies than one per
    term. What remains: p's elements still move one per copy, and each (b, m) reads do[b] again
    (5.8x the minimum); blocks of p need a tile over m, which the core split (b, m fused) does not
    give."""
    rng = np.random.default_rng(7)
    b, l_, m, d = 16, 32, 24, 8
    p, do = rng.standard_normal((b, l_, m)).astype(np.float32), rng.standard_normal((b, l_, d)).astype(np.float32)
    report = tilegrad.compile("test_attention_dv", "ascend910b").plan(p=p, do=do)
    kinds = {(x["name"], x["copies"]) for x in report.buffers}
    assert {("p", "column in"), ("do", "block in")} <= kinds
    traffic = report.stages[0]["traffic"]
    assert traffic["element_copies"] == b * l_ * m  # p once, an element per copy (was 196608: p and do per term)
    assert traffic["moved"] == 4 * (b * l_ * m + b * m * l_ * d + b * m * d)  # p once, do[b] per (b, m), dv once
    want = np.einsum("blm,bld->bmd", p.astype(np.float64), do.astype(np.float64))
    for guard in (False, True):
        got = tilegrad.compile("test_attention_dv", "ascend910b", guard=guard)(p=p, do=do)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_plan_says_what_a_window_under_a_tile_still_copies_per_point():
    """The 3x3 conv's grad_input reads its window runs (3 elements) per point of the tile of w and
    per (k, i): the plan says so, and what would move them once per tile."""
    _, inputs, _, _ = CASES["test_conv3x3_grad_input"]
    report = tilegrad.compile("test_conv3x3_grad_input", "ascend910b").plan(**inputs)
    remains = report.stages[0]["remains"]
    assert len(remains) == 2 and remains[0].startswith("dy: runs of at most 8 elements copied per point")
    assert "its rows with their halo would move once per tile" in remains[0]
    assert remains[1].startswith("weight: ") and "the same for every point" in remains[1]
    assert f"    remains: {remains[0]}" in str(report)
    # runs each point reads its own rows of (batch norm's sums per channel) are not listed
    arrays, _ = small_call("batch_norm_backward", "float32")
    assert not any(s["remains"] for s in tilegrad.compile("batch_norm_backward", "ascend910b").plan(**arrays).stages)


def test_per_row_values_move_as_runs_along_the_split_rows():
    """RMSNorm's dx stage reads rstd[n] in its row sum and in every column, and stores the row sum
    gx[n] then reads it in every column: both move as runs of the core's rows, copied once per strip
    of rows outside the loops over columns (gx in and out), not one element per term or column."""
    _, inputs, _, _ = CASES["test_rms_norm_backward"]
    kernel = tilegrad.compile("test_rms_norm_backward", "ascend910b")
    report = kernel.plan(**inputs)
    kinds = {(b["name"], b["copies"]) for b in report.buffers if b["stage"] == 0}
    assert {("rstd", "run in"), ("gx", "run in+out")} <= kinds
    traffic = report.stages[0]["traffic"]
    # dy, x and weight once for the row sum and once for the columns, dx once; rstd once, gx in and out
    assert traffic["moved"] == 4 * (7 * 37 * 300 + 3 * 37)
    assert traffic["copies"] < 400 and traffic["element_copies"] == 0
    stage0 = kernel.ir("tiled", **inputs).split("func.func")[1]
    rows, rows_end = stage0.index("scf.for %i0"), stage0.index("} {tg.loop = #tg.loop<parallel, axis = 0>}")
    assert stage0.index('"gm_to_ub" %rstd[') < rows and stage0.index('"gm_to_ub" %gx[') < rows
    assert stage0.index("to %gx[") > rows_end  # out after the strip's rows


def test_short_rows_of_loads_move_in_one_copy():
    """The sampler reads grid[n, oh, ow, 0] and grid[n, oh, ow, 1] in one block: one copy of the pair
    (the copy goes before the first load: it once landed after it, and the load read the previous
    point's coordinate), results against torch in float64, also in the guard build."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 4, 7)).astype(np.float32)
    want = torch.ops.aten.grid_sampler_2d_backward(*(torch.from_numpy(a.astype(np.float64)) for a in (dy, x, grid)),
                                                   0, 0, True, [True, True])
    kernel = tilegrad.compile("spatial_tf_sampler_backward", "ascend910b")
    report = kernel.plan(x=x, grid=grid, dy=dy)
    assert ("grid", "row in") in {(b["name"], b["copies"]) for b in report.buffers}
    ir = kernel.ir("tiled", x=x, grid=grid, dy=dy)
    slots = set(re.findall(r'(%\d+) = tg.ub_alloc %ub\[\d+\] "one f32"', ir))
    grid_into = re.findall(r'tg.copy "gm_to_ub" %grid\[[^]]*\] to (%\d+)', ir)
    assert grid_into and slots and not slots & set(grid_into)
    for guard in (False, True):
        got = tilegrad.compile("spatial_tf_sampler_backward", "ascend910b", guard=guard)(x=x, grid=grid, dy=dy)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(SMALL_CASES))
def test_every_library_plan_on_ascend910b_reports_its_copy_traffic(name):
    arrays, attrs = small_call(name, "float32")
    report = tilegrad.compile(name, "ascend910b").plan(**arrays, **attrs)
    text = str(report)
    for stage in report.stages:
        traffic = stage["traffic"]
        assert traffic is not None and traffic["moved"] >= traffic["minimum"] > 0, (stage["stage"], traffic)
        assert f"stage {stage['stage']}: moves {traffic['moved']} B" in text


# ---- issue 45: user ops on ascend910b with no element-sized copies -----------------------------------------------

from tilegrad import user_ops  # noqa: E402

USER_CASES = {c.label: c for c in user_ops.cases()}


def _user_call(label: str, size: str = "small"):
    case = USER_CASES[label]
    inputs = user_ops.arrays(case, size, np.random.default_rng(0), "float32")
    return case, inputs, case.attrs(case.dims[size])


def _check_user(case, inputs, attrs):
    want = user_ops.oracle(case, inputs, attrs)
    for guard in (False, True):
        got = tilegrad.compile(case.op, "ascend910b", guard=guard)(**inputs, **attrs)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want):
            scale = max(float(np.max(np.abs(w))), 1.0)
            np.testing.assert_allclose(g / scale, w / scale, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("label", ["layer norm backward", "conv2d backward 3x3 s1 p1", "conv2d backward 1x1",
                                   "conv2d backward 3x3 s2", "conv2d backward 5x5 d2",
                                   "depthwise conv2d backward 3x3"])
def test_user_ops_move_no_single_elements_on_ascend910b(label):
    """Layer norm's dgamma and dbeta (two sums under one tile of columns: two column walks) and the
    convolutions' windows at a stride or dilation (runs whose index moves by at most s per tap:
    (w + p - j) / s, oh * s + i * d) copy no single elements in any stage, and match torch in float64
    (also in the guard build)."""
    case, inputs, attrs = _user_call(label)
    report = tilegrad.compile(case.op, "ascend910b").plan(**inputs, **attrs)
    for stage in report.stages:
        traffic = stage["traffic"]
        assert traffic is not None and traffic["element_copies"] == 0 and traffic["copies"] > 0, stage
    _check_user(case, inputs, attrs)


@pytest.mark.parametrize("label", ["linear backward float32", "bmm backward"])
def test_transposed_operands_move_in_panels(label):
    """linear's dw[o, i] = sum_n dy[n, o] x[n, i] under a tile of i reads dy down a column at the
    core's o; bmm's db[z, k, n] reads a[z, m, k] down m at k. The column moves in panels (rows x 8
    of the loop over o or k, one run per row, once per 8 of its iterations), each strip filling its
    column from the panel; bmm's da[z, m, k] is stored along k under the core's batches z (its own
    elements): a run out. No element copies; results match torch in float64, also in the guard build."""
    case, inputs, attrs = _user_call(label)
    report = tilegrad.compile(case.op, "ascend910b").plan(**inputs, **attrs)
    kinds = {(b["name"], b["copies"]) for b in report.buffers}
    want = {("dy", "panel in")} if label.startswith("linear") else {("a", "panel in"), ("da", "run out")}
    assert want <= kinds
    assert all(s["traffic"]["element_copies"] == 0 for s in report.stages)
    _check_user(case, inputs, attrs)


def test_a_panel_too_short_for_the_rows_falls_back_to_columns():
    """Over more rows than the panel holds (2457 float32 rows on ascend910b), the column moves an
    element per row, as before, chosen at run time: the plan counts those copies, and the results
    (in the sum's blocked form, over 1024 rows) still match float64, also in the guard build."""
    rng = np.random.default_rng(9)
    n, o, i = 2500, 3, 5
    dy, x, w = (rng.standard_normal(s).astype(np.float32) for s in [(n, o), (n, i), (o, i)])
    traffic = tilegrad.compile("user_linear_backward", "ascend910b").plan(dy=dy, x=x, w=w).stages[1]["traffic"]
    assert traffic["element_copies"] == n * o
    want = dy.astype(np.float64).T @ x.astype(np.float64)
    for guard in (False, True):
        got = tilegrad.compile("user_linear_backward", "ascend910b", guard=guard)(dy=dy, x=x, w=w)[1]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_attention_backward_moves_per_row_values_once_per_row():
    """Stage 0 stores dp[b, r, m] by runs (b, r = f / L, f % L name the core's fused row f), reads it
    back by runs in delta's sum and in dq's column walk (k moves in blocks), and reads delta[b, r]
    once per row before dq's loops instead of per term: what still moves one element is delta, stored
    and read once per row. Stage 1 still reads two tensors down columns (transposed operands): p and
    ds, which stays stored since it is a contraction's operand (Inline), not p, dp and delta."""
    case, inputs, attrs = _user_call("attention backward")
    report = tilegrad.compile(case.op, "ascend910b").plan(**inputs, **attrs)
    b, length, _ = inputs["q"].shape
    assert report.stages[0]["traffic"]["element_copies"] == 2 * b * length  # was 8814 (per term)
    assert report.stages[1]["traffic"]["element_copies"] == 2 * b * length * length  # was 13520
    _check_user(case, inputs, attrs)


def test_cumprod_backward_at_its_benchmark_size_reports_its_traffic():
    """The suffix sums' run copies depend on the point (their extent is D - i): counted once per
    value of the variables they use, not again for every core's rows, they fit the count's budget."""
    case, inputs, attrs = _user_call("cumprod backward", "full")
    traffic = tilegrad.compile(case.op, "ascend910b").plan(**inputs, **attrs, check=False).stages[0]["traffic"]
    assert traffic is not None and traffic["element_copies"] == 0 and traffic["moved"] >= traffic["minimum"] > 0


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def test_prefix_times_previous(x=tg.tensor("N C"), w=tg.tensor("C", dtype="x")):
    """y[n, i] = w[i - 1] * sum over t < i of x[n, t * t % C]: w[i - 1] is read for every term, and
    only where i > 0 (x's gather moves an element per term: no run loop around the sum)."""
    cols = x.shape[1]
    return lambda n, i: tg.reduce_sum(i, lambda t: x[n, t * t % cols] * w[i - 1])


def test_an_element_a_loop_does_not_change_moves_once_before_it_if_it_runs():
    """w[i - 1] does not change in the sum over t: it moves once per point, before the loop, under
    a test that the loop runs (at i = 0 it would read w[-1]): the guard build finds no access
    outside w, and the results match float64."""
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((3, 40)).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    kernel = tilegrad.compile("test_prefix_times_previous", "ascend910b")
    traffic = kernel.plan(x=x, w=w).stages[0]["traffic"]
    assert traffic["element_copies"] == 3 * 780 + 3 * 39  # x per term, w once per point i > 0 (was 2 * 3 * 780)
    ir = kernel.ir("tiled", x=x, w=w)
    assert re.search(r"arith.cmpi slt, [^\n]*\n\s*scf.if [^\n]*\{\n(\s*%\d+ = arith\.\w+ [^\n]*\n)*"
                     r"\s*tg.copy \"gm_to_ub\" %w\[", ir)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    gathered = x64[:, (np.arange(40) ** 2) % 40]
    want = np.zeros((3, 40))
    want[:, 1:] = np.cumsum(gathered, 1)[:, :-1] * w64[None, :-1]
    for guard in (False, True):
        got = tilegrad.compile("test_prefix_times_previous", "ascend910b", guard=guard)(x=x, w=w)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
