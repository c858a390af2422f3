"""Convolutions as users write them (issue 45, "Contractions", windowed): padding masked with
`tg.where`, run by the general window mechanisms (partition-clamped-loops' window loops; a sum
nest's interchange, jam and chunks, the register tile of a GEMM, by a schedule), against torch in
float64: the user table's convs (at a second size in the long profile), and fresh ops written as a
user would (a conv with a rectangular 3x5 window, a conv1d backward), on cpu in float32 and float64
(the guard build); the 3x5 window on ascend910b in float32 too."""

import os

import numpy as np
import pytest
from conftest import torch  # skips without torch

import tilegrad
import tilegrad.dsl as tg
from tilegrad import user_ops
from tilegrad.targets.host import HOST

BUILDS = [("cpu", "float32", False), ("cpu", "float64", True)]
"""(ascend910b: the user table's convs in tests/test_user_ops.py, the 3x5 window below at one size;
a third of this file's builds)"""
TOLERANCES = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-10)}
IDS = [f"{t}-{d}{'-guard' * g}" for t, d, g in BUILDS]


def _close(got, want, dtype):
    for value, expected in zip(got, want):
        assert value.shape == expected.shape
        scale = max(float(np.max(np.abs(expected))), 1.0)  # sums of many terms: relative to the largest
        np.testing.assert_allclose(value.astype(np.float64) / scale, expected / scale, **TOLERANCES[dtype])


# The user table's convs, each at its "small" size, and with TILEGRAD_FUZZ=long (the long profile)
# at one more (odd sizes: tails and edges; each a kernel of its own, a conv's backward 10-16 s cold,
# where the fresh ops below take odd sizes in both builds)
CONVS = {c.label: c for c in user_ops.cases() if c.op in ("user_conv2d", "user_conv2d_backward")}
MORE = {"small": None, **({"odd": lambda d: (d[0], d[1] + 2, d[2] + 3, d[3] + 4, *d[4:])}
                          if os.environ.get("TILEGRAD_FUZZ") == "long" else {})}


SIZES = [(label, size) for label in sorted(CONVS) for size in sorted(MORE)
         if not (size == "small" and "3x3 s1 p1" in label)]  # (those two: tests/test_user_ops.py)


@pytest.mark.parametrize("target, dtype, guard", BUILDS, ids=IDS)
@pytest.mark.parametrize("label, size", SIZES, ids=[f"{label}-{size}" for label, size in SIZES])
def test_user_table_conv_matches_torch(label, size, target, dtype, guard):
    case = CONVS[label]
    dims = case.dims["small"] if MORE[size] is None else MORE[size](case.dims["small"])
    inputs = {k: v.astype(dtype) for k, v in case.inputs(np.random.default_rng(0), dims).items()}
    attrs = case.attrs(dims)
    kernel = tilegrad.compile(case.op, target, guard=guard)
    if case.op == "user_conv2d_backward":  # dweight's window packed, a GEMM per block (pack-windowed-reductions)
        assert "Stage(stage=1, tensor='x', memory='panel')" in _schedule(kernel, **inputs, **attrs)
    got = kernel(**inputs, **attrs)
    _close(got if isinstance(got, tuple) else (got,), user_ops.oracle(case, inputs, attrs), dtype)


# Fresh ops, as a user writes them


def _inside(y, x, h, w):
    return (y >= 0) & (y < h) & (x >= 0) & (x < w)


@tg.op(outputs={"y": tg.shaped_by(lambda shape_of, attrs: (
    shape_of("x")[0], shape_of("w")[0], shape_of("x")[2] + 2 * attrs["ph"] - shape_of("w")[2] + 1,
    shape_of("x")[3] + 2 * attrs["pw"] - shape_of("w")[3] + 1), dtype="x")}, replace=True)
def conv2d_rect_user(x=tg.tensor("N C H W"), w=tg.tensor("K C R S", dtype="x"), ph=tg.attr(1), pw=tg.attr(2)):
    """y[n, k, a, b] = sum over c, i, j of x[n, c, a - ph + i, b - pw + j] w[k, c, i, j], zero padded."""
    _, channels, h_, w_ = x.shape
    taps_h, taps_w = w.shape[2], w.shape[3]
    return lambda n, k, a, b: tg.reduce_sum_over((channels, taps_h, taps_w), lambda c, i, j: tg.where(
        _inside(a - ph + i, b - pw + j, h_, w_), x[n, c, a - ph + i, b - pw + j] * w[k, c, i, j], 0.0))


@tg.op(outputs={"dx": tg.like("x"), "dw": tg.like("w")}, replace=True)
def conv1d_backward_user(dy=tg.tensor("N K L2"), x=tg.tensor("N C L", dtype="dy"), w=tg.tensor("K C S", dtype="dy"),
                         padding=tg.attr(2), dilation=tg.attr(1)):
    """y[n, k, o] = sum over c, j of x[n, c, o - padding + j * dilation] w[k, c, j] (stride 1):
    dx[n, c, l] = sum over k, j of dy[n, k, l + padding - j * dilation] w[k, c, j],
    dw[k, c, j] = sum over n, o of dy[n, k, o] x[n, c, o - padding + j * dilation]."""
    batch, channels, length = x.shape
    kernels, out = w.shape[0], dy.shape[2]
    taps = w.shape[2]

    def dx(n, c, ll):
        return tg.reduce_sum_over((kernels, taps), lambda k, j: tg.where(
            ((ll + padding - j * dilation) >= 0) & ((ll + padding - j * dilation) < out),
            dy[n, k, ll + padding - j * dilation] * w[k, c, j], 0.0))

    def dw(k, c, j):
        return tg.reduce_sum_over((batch, out), lambda n, o: tg.where(
            ((o - padding + j * dilation) >= 0) & ((o - padding + j * dilation) < length),
            dy[n, k, o] * x[n, c, o - padding + j * dilation], 0.0))

    return dx, dw


RECT_SIZES = [(2, 3, 4, 6, 9), (1, 5, 6, 11, 21)]  # N, C, K, H, W (21: a chunk of 16 columns and 5 more)
CONV1D_SIZES = [(2, 3, 4, 17, 5, 2, 1), (3, 6, 5, 40, 3, 2, 2)]  # N, C, K, L, S, padding, dilation


def _rect(dims, dtype):
    n, c, k, h, w = dims
    rng = np.random.default_rng(1)
    return dict(x=rng.standard_normal((n, c, h, w)).astype(dtype), w=rng.standard_normal((k, c, 3, 5)).astype(dtype))


RECT_BUILDS = [(dims, *build) for dims in RECT_SIZES for build in BUILDS] + [
    (RECT_SIZES[0], "ascend910b", "float32", False)]


@pytest.mark.parametrize("dims, target, dtype, guard", RECT_BUILDS,
                         ids=[f"{'x'.join(map(str, d))}-{t}-{dt}{'-guard' * g}" for d, t, dt, g in RECT_BUILDS])
def test_a_rectangular_window_conv_matches_torch(dims, target, dtype, guard):
    a = _rect(dims, dtype)
    got = tilegrad.compile("conv2d_rect_user", target, guard=guard)(**a, ph=1, pw=2)
    want = torch.nn.functional.conv2d(torch.from_numpy(a["x"]).double(), torch.from_numpy(a["w"]).double(),
                                      padding=(1, 2))
    _close((got,), (want.numpy(),), dtype)


@pytest.mark.parametrize("target, dtype, guard", BUILDS, ids=IDS)
@pytest.mark.parametrize("dims", CONV1D_SIZES, ids=lambda d: "x".join(map(str, d)))
def test_a_conv1d_backward_matches_torch(dims, target, dtype, guard):
    n, c, k, length, taps, padding, dilation = dims
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((n, c, length)), rng.standard_normal((k, c, taps))
    out = length + 2 * padding - dilation * (taps - 1)
    dy = rng.standard_normal((n, k, out))
    xt, wt = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    torch.nn.functional.conv1d(xt, wt, padding=padding, dilation=dilation).backward(torch.from_numpy(dy))
    kernel = tilegrad.compile("conv1d_backward_user", target, guard=guard)
    call = dict(dy=dy.astype(dtype), x=x.astype(dtype), w=w.astype(dtype), padding=padding, dilation=dilation)
    if target == "cpu":  # dw's window packed (pack-windowed-reductions: blocks of one n, dy[n, k, o] by o)
        assert "Stage(stage=1, tensor='x', memory='panel')" in _schedule(kernel, **call)
    _close(kernel(**call), (xt.grad.numpy(), wt.grad.numpy()), dtype)


# The plan: every decision listed, the GEMM form by a user's schedule

GEMM = """Reorder(stage=0, order=('r0', 3))
Specialize(stage=0, condition='x in bounds', versioned=False)"""
"""The forward conv's sums outside its column loop (a row sweep nest over c, i, j) and its reads not
branched: jam-row-sweeps then jams its output channels by 4 (not the batch loop, whose rows sweep
images of their own) and chunk-row-sweeps keeps 4 x 16 accumulators in registers over the whole nest."""


def _schedule(kernel, **call):
    return [d["directive"] for d in kernel.plan(**call).schedule]


def test_the_plan_packs_the_window_and_leaves_the_cold_nest_as_it_is():
    a = _rect(RECT_SIZES[0], np.float32)
    listed = _schedule(tilegrad.compile("conv2d_rect_user", "cpu"), **a, ph=1, pw=2)
    # the nest as written is the stage's cold version (tg.cold: it runs only where the panel cannot):
    # its window loops are not partitioned, nor is the row loop for the pack's clamped reads
    assert not any(d.startswith("Partition(stage=0") for d in listed)
    assert "Reorder(stage=0, order=(3, 'r0'))" in listed  # the sums inside the column loop: not interchanged
    # (packed, the window's flat sum is interchanged and its output channels jammed: the GEMM's register tile)
    assert PANEL in listed and "Reorder(stage=0, order=('r1', 3))" in listed
    # (the rows left over peeled: a block of the sum after the first adds into y, so no row runs twice)
    assert f"UnrollJam(stage=0, axis=1, factor={HOST.jam_rows})" in listed


def test_a_conv_as_a_register_tiled_gemm_matches_torch():
    """(one size: the window partitions this schedule keeps compile slowly; the packed window, the
    default, runs at both sizes above)"""
    a = _rect(RECT_SIZES[1], np.float32)
    kernel = tilegrad.compile("conv2d_rect_user", "cpu", schedule=GEMM)
    listed = _schedule(kernel, **a, ph=1, pw=2)
    assert "Split(stage=0, factor=16)" in listed  # the chunks: a register tile (the columns left over: one more)
    # the output channels, by the planner
    # (the rows left over peeled: a block of the sum after the first adds into y, so no row runs twice)
    assert f"UnrollJam(stage=0, axis=1, factor={HOST.jam_rows})" in listed
    assert not any(d.startswith("UnrollJam(stage=0, factor=") for d in listed)  # not the batch loop
    want = torch.nn.functional.conv2d(torch.from_numpy(a["x"]).double(), torch.from_numpy(a["w"]).double(),
                                      padding=(1, 2))
    _close((kernel(**a, ph=1, pw=2),), (want.numpy(),), "float32")


def test_a_user_turns_the_window_partitions_off():
    """(the window as written: without the planner, not packed; packed, the nest as written is cold and
    has none)"""
    a = _rect(RECT_SIZES[1], np.float32)
    off = "Partition(stage=0, axis=2, partitioned=False)\nPartition(stage=0, axis=3, partitioned=False)"
    kernel = tilegrad.compile("conv2d_rect_user", "cpu", schedule=off, planner=False)
    listed = _schedule(kernel, **a, ph=1, pw=2)
    assert "Partition(stage=0, axis=3, partitioned=False)" in listed and "Partition(stage=0, axis=3)" not in listed
    want = torch.nn.functional.conv2d(torch.from_numpy(a["x"]).double(), torch.from_numpy(a["w"]).double(),
                                      padding=(1, 2))
    _close((kernel(**a, ph=1, pw=2),), (want.numpy(),), "float32")


# The packed form (issue 45's direction): the window's operand copied into a panel with its mask
# applied (im2col), then a plain GEMM over it. Written here as a user would in two ops; the GEMM's
# batch loop sweeps a panel of its own (col[n]), so its output channels are the rows jammed


@tg.op(outputs={"col": tg.shaped_by(lambda shape_of, attrs: (
    shape_of("x")[0], shape_of("x")[1] * attrs["r"] * attrs["s"],
    (shape_of("x")[2] + 2 * attrs["ph"] - attrs["r"] + 1) * (shape_of("x")[3] + 2 * attrs["pw"] - attrs["s"] + 1)),
    dtype="x")}, replace=True)
def im2col_user(x=tg.tensor("N C H W"), r=tg.attr(3), s=tg.attr(5), ph=tg.attr(1), pw=tg.attr(2)):
    """col[n, (c, i, j), (a, b)] = x[n, c, a - ph + i, b - pw + j], 0 in the padding."""
    h_, w_ = x.shape[2], x.shape[3]
    out_w = w_ + 2 * pw - s + 1

    def value(n, q, p):
        c, i, j, a, b = q // (r * s), q // s % r, q % s, p // out_w, p % out_w
        return tg.where(_inside(a - ph + i, b - pw + j, h_, w_), x[n, c, a - ph + i, b - pw + j], 0.0)
    return value


@tg.op(outputs={"y": tg.shaped_by(lambda shape_of, attrs: (shape_of("col")[0], shape_of("w")[0], shape_of("col")[2]),
                                  dtype="col")}, replace=True)
def panel_gemm_user(col=tg.tensor("N Q P"), w=tg.tensor("K Q", dtype="col")):
    """y[n, k, p] = sum over q of w[k, q] col[n, q, p]."""
    return lambda n, k, p: tg.reduce_sum(col.shape[1], lambda q: w[k, q] * col[n, q, p])


@pytest.mark.parametrize("dims", RECT_SIZES, ids=lambda d: "x".join(map(str, d)))
def test_a_conv_as_a_gemm_over_its_packed_window_jams_output_channels(dims):
    a = _rect(dims, np.float32)
    n, c, k, h, w = dims
    col = tilegrad.compile("im2col_user", "cpu")(x=a["x"], r=3, s=5, ph=1, pw=2)
    weights = a["w"].reshape(k, c * 15)
    gemm = tilegrad.compile("panel_gemm_user", "cpu")
    listed = _schedule(gemm, col=col, w=weights)
    # output channels (rows sweeping col[n])
    assert f"UnrollJam(stage=0, axis=1, factor={HOST.jam_rows}, tail='clamp')" in listed
    assert not any(d.startswith("UnrollJam(stage=0, factor=") for d in listed)  # not the batch loop
    want = torch.nn.functional.conv2d(torch.from_numpy(a["x"]).double(), torch.from_numpy(a["w"]).double(),
                                      padding=(1, 2))
    _close((gemm(col=col, w=weights).reshape(want.shape),), (want.numpy(),), "float32")


# The packed form by the compiler (pack-windowed-operands): the windowed operand, masked, packed into
# a panel per block of output positions, the sum one flat sum over it; listed as Stage(memory=panel)

PANEL = "Stage(stage=0, tensor='x', at=3, memory='panel')"


@pytest.mark.parametrize("stride, dilation", [(1, 1), (2, 1), (1, 2)])
def test_the_plan_packs_a_convs_window_and_it_matches_torch(stride, dilation):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3, 9, 21)).astype(np.float32), rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    kernel = tilegrad.compile("user_conv2d", "cpu")
    call = dict(x=x, weight=w, stride=stride, padding=1, dilation=dilation)
    assert PANEL in _schedule(kernel, **call)
    want = torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), stride=stride,
                                      padding=1, dilation=dilation)
    _close((kernel(**call),), (want.numpy(),), "float32")


def test_a_panel_too_large_for_all_rows_runs_them_in_blocks():
    """C x R x S rows more than the panel holds: blocks of whole rows of c, each added into y."""
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((1, 300, 4, 5)), rng.standard_normal((2, 300, 3, 3))
    got = tilegrad.compile("user_conv2d", "cpu", guard=True)(x=x, weight=w, stride=1, padding=1, dilation=1)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
    _close((got,), (want.numpy(),), "float64")


def test_without_the_planner_the_window_is_not_packed():
    a = _rect(RECT_SIZES[0], np.float32)
    kernel = tilegrad.compile("conv2d_rect_user", "cpu", planner=False)
    assert PANEL not in _schedule(kernel, **a, ph=1, pw=2)
    want = torch.nn.functional.conv2d(torch.from_numpy(a["x"]).double(), torch.from_numpy(a["w"]).double(),
                                      padding=(1, 2))
    _close((kernel(**a, ph=1, pw=2),), (want.numpy(),), "float32")


# A conv's grad_input (stride 1): dy read through the window with the sum variables' coefficients
# negative (a conv of dy with the taps flipped), the weight w[k, c, i, j] indexed by the sums k, i, j
# with the output's channel c between them: dy packed as the panel, the weight once per call as
# w_panel[c, (k, i, j)]; the GEMM over the panel as the forward conv's

DY_PANEL = "Stage(stage=0, tensor='dy', at=3, memory='panel')"


@pytest.mark.parametrize("label", ["conv2d backward 3x3 s1 p1", "conv2d backward 5x5 d2", "conv2d backward 1x1",
                                   "conv2d backward 3x3 s2"])
def test_the_plan_packs_a_conv_backwards_dy_window(label):
    """(the outputs: test_user_table_conv_matches_torch, which runs these in both builds; at stride 2
    the window reads dy at (h + p - i) / 2 where (h + p - i) % 2 is 0: packed as it is, the panel's
    rows of the other phases zero)"""
    case = CONVS[label]
    dims = case.dims["small"]
    inputs = case.inputs(np.random.default_rng(0), dims)
    listed = _schedule(tilegrad.compile(case.op, "cpu"), **inputs, **case.attrs(dims))
    assert DY_PANEL in listed and f"UnrollJam(stage=0, axis=1, factor={HOST.jam_rows})" in listed


@tg.op(outputs={"dx": tg.like("x")}, replace=True)
def conv2d_rect_input_grad_user(dy=tg.tensor("N K OH OW"), x=tg.tensor("N C H W", dtype="dy"),
                                w=tg.tensor("K C R S", dtype="dy"), ph=tg.attr(1), pw=tg.attr(2)):
    """conv2d_rect_user's grad_input: dx[n, c, h, v] = sum over k, i, j of dy[n, k, h + ph - i, v + pw - j]
    w[k, c, i, j], 0 outside dy."""
    out_h, out_w = dy.shape[2], dy.shape[3]
    return lambda n, c, h, v: tg.reduce_sum_over((dy.shape[1], w.shape[2], w.shape[3]), lambda k, i, j: tg.where(
        _inside(h + ph - i, v + pw - j, out_h, out_w), dy[n, k, h + ph - i, v + pw - j] * w[k, c, i, j], 0.0))


RECT_DX_BUILDS = [(RECT_SIZES[0], "float32", False), (RECT_SIZES[1], "float32", False),
                  (RECT_SIZES[1], "float64", True)]


@pytest.mark.parametrize("dims, dtype, guard", RECT_DX_BUILDS,
                         ids=[f"{'x'.join(map(str, d))}-{dt}{'-guard' * g}" for d, dt, g in RECT_DX_BUILDS])
def test_a_rectangular_windows_grad_input_packs_dy_and_matches_torch(dims, dtype, guard):
    a = _rect(dims, dtype)
    n, c, k, h, w = dims
    dy = np.random.default_rng(5).standard_normal((n, k, h, w)).astype(dtype)  # (the forward's output: same size)
    kernel = tilegrad.compile("conv2d_rect_input_grad_user", "cpu", guard=guard)
    assert DY_PANEL in _schedule(kernel, dy=dy, **a, ph=1, pw=2)
    want = torch.ops.aten.convolution_backward(
        torch.from_numpy(dy).double(), torch.from_numpy(a["x"]).double(), torch.from_numpy(a["w"]).double(), None,
        [1, 1], [1, 2], [1, 1], False, [0, 0], 1, [True, False, False])[0]
    _close((kernel(dy=dy, **a, ph=1, pw=2),), (want.numpy(),), dtype)


def test_a_conv1d_backwards_grad_input_packs_dy():
    """(its outputs: test_a_conv1d_backward_matches_torch)"""
    n, c, k, length, taps, padding, dilation = CONV1D_SIZES[1]
    rng = np.random.default_rng(2)
    call = dict(dy=rng.standard_normal((n, k, length + 2 * padding - dilation * (taps - 1))).astype(np.float32),
                x=rng.standard_normal((n, c, length)).astype(np.float32),
                w=rng.standard_normal((k, c, taps)).astype(np.float32), padding=padding, dilation=dilation)
    assert "Stage(stage=0, tensor='dy', at=2, memory='panel')" in _schedule(
        tilegrad.compile("conv1d_backward_user", "cpu"), **call)

# grad_weight by the compiler (pack-windowed-reductions): a sum over positions whose one operand is
# read through a window; the operand, masked, packed per block of positions as panel[p, (c, i, j)],
# each block one plain GEMM added to dw (dy broadcast, the panel's rows swept along q)


def _dw_directives(kernel, **call):
    return [d for d in _schedule(kernel, **call) if d.startswith("Stage(") and "memory='panel'" in d
            and "at=" not in d]  # (at=0: the loop over k; the forward's is at its positions' tile)


@tg.op(outputs={"dw": tg.like("w")}, replace=True)
def conv2d_rect_dw_user(dy=tg.tensor("N K OH OW"), x=tg.tensor("N C H W", dtype="dy"),
                        w=tg.tensor("K C R S", dtype="dy"), ph=tg.attr(1), pw=tg.attr(2)):
    """dw[k, c, i, j] = sum over n, a, b of dy[n, k, a, b] x[n, c, a - ph + i, b - pw + j], zero padded."""
    batch, _, h_, w_ = x.shape
    return lambda k, c, i, j: tg.reduce_sum_over((batch, dy.shape[2], dy.shape[3]), lambda n, a, b: tg.where(
        _inside(a - ph + i, b - pw + j, h_, w_), dy[n, k, a, b] * x[n, c, a - ph + i, b - pw + j], 0.0))


def _conv_grads(x, w, dy_rng, **conv):
    xt, wt = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    y = torch.nn.functional.conv2d(xt, wt, **conv)
    dy = dy_rng.standard_normal(tuple(y.shape))
    y.backward(torch.from_numpy(dy))
    return dy, xt.grad.numpy(), wt.grad.numpy()


RECT_DW = [((2, 3, 4, 6, 9), "float32", False), ((1, 5, 6, 11, 21), "float32", False),
           ((2, 3, 4, 6, 9), "float64", True)]


@pytest.mark.parametrize("dims, dtype, guard", RECT_DW, ids=[f"{'x'.join(map(str, d))}-{t}{'-guard' * g}"
                                                              for d, t, g in RECT_DW])
def test_a_rectangular_windows_grad_weight_is_a_gemm_over_its_panel(dims, dtype, guard):
    """A fresh op (a 3x5 window, grad_weight alone): dy's last two indices are the sum's two
    innermost variables, so a block is rows of whole output rows (dy read as dy[n, k, a * OW + b])."""
    a = _rect(dims, np.float64)
    rng = np.random.default_rng(6)
    dy, _, dw = _conv_grads(a["x"], a["w"], rng, padding=(1, 2))
    kernel = tilegrad.compile("conv2d_rect_dw_user", "cpu", guard=guard)
    call = dict(dy=dy.astype(dtype), x=a["x"].astype(dtype), w=a["w"].astype(dtype), ph=1, pw=2)
    assert _dw_directives(kernel, **call) == ["Stage(stage=0, tensor='x', memory='panel')"]
    _close((kernel(**call),), (dw,), dtype)


def test_grad_weights_gemm_is_the_register_tile_of_the_row_passes():
    """The block's GEMM (for k, q: sum over p) interchanged (the sum outside q), k jammed, q chunked."""
    a = _rect(RECT_SIZES[1], np.float32)
    dy = np.random.default_rng(7).standard_normal((1, 6, 11, 21)).astype(np.float32)
    listed = _schedule(tilegrad.compile("conv2d_rect_dw_user", "cpu"), dy=dy, **a, ph=1, pw=2)
    assert "Reorder(stage=0, order=('r1', 3))" in listed
    assert f"UnrollJam(stage=0, factor={HOST.jam_rows})" in listed  # the output channels k (axis 0)
    assert any(d.startswith("Split(stage=0, factor=") for d in listed)  # q by chunks


def test_grad_weights_panel_too_large_for_all_columns_runs_blocks_of_channels():
    """C x R x S columns more than 16 positions of the panel hold: blocks of channels."""
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((1, 460, 4, 5)), rng.standard_normal((2, 460, 3, 3))
    dy, _, dw = _conv_grads(x, w, rng, padding=1)
    got = tilegrad.compile("conv2d_rect_dw_user", "cpu", guard=True)(dy=dy, x=x, w=w, ph=1, pw=1)
    _close((got,), (dw,), "float64")


def test_grad_weight_does_not_depend_on_the_core_count():
    """The blocks (sized by the whole C x R x S) and the order each dw element adds them in are the
    same on one core as on all: bitwise the same results."""
    a = _rect(RECT_SIZES[1], np.float32)
    dy = np.random.default_rng(9).standard_normal((1, 6, 11, 21)).astype(np.float32)
    call = dict(dy=dy, **a, ph=1, pw=2)
    one = tilegrad.compile("conv2d_rect_dw_user", "cpu", schedule="Parallel(stage=0, cores=1)")(**call)
    np.testing.assert_array_equal(one, tilegrad.compile("conv2d_rect_dw_user", "cpu")(**call))

# A strided conv's grad_input by phases (split-window-phases): the output's loop split by its
# residue modulo the stride, each phase's sum over the taps of the class its `% stride == 0` test keeps


@tg.op(outputs={"dx": tg.like("x")}, replace=True)
def conv1d_strided_input_grad_user(dy=tg.tensor("N K OL"), x=tg.tensor("N C L", dtype="dy"),
                                   w=tg.tensor("K C T", dtype="dy"), stride=tg.attr(3), padding=tg.attr(1)):
    """dx[n, c, l] = sum over k, t of dy[n, k, (l + padding - t) / stride] w[k, c, t] where that divides."""
    def term(n, c, l_, k, t):
        top = l_ + padding - t
        hit = (top >= 0) & (top % stride).eq(0) & (top // stride < dy.shape[2])
        return tg.where(hit, dy[n, k, top // stride] * w[k, c, t], 0.0)
    return lambda n, c, l_: tg.reduce_sum_over((dy.shape[1], w.shape[2]), lambda k, t: term(n, c, l_, k, t))


STRIDED_1D = [(2, 5, 6, 23, 5, 3, 1), (1, 3, 4, 18, 4, 2, 2)]  # (n, c, k, length, taps, stride, padding)


@pytest.mark.parametrize("n, c, k, length, taps, stride, padding", STRIDED_1D)
def test_a_strided_conv1d_grad_input_runs_by_phases_and_matches_torch(n, c, k, length, taps, stride, padding):
    rng = np.random.default_rng(3)
    out = (length + 2 * padding - taps) // stride + 1
    call = dict(dy=rng.standard_normal((n, k, out)).astype(np.float32),
                x=rng.standard_normal((n, c, length)).astype(np.float32),
                w=rng.standard_normal((k, c, taps)).astype(np.float32), stride=stride, padding=padding)
    kernel = tilegrad.compile("conv1d_strided_input_grad_user", "cpu")
    listed = _schedule(kernel, **call)
    assert "Partition(stage=0, axis=2, by='phase')" in listed
    assert "Stage(stage=0, tensor='dy', at=2, memory='panel')" in listed
    tiled = kernel.ir("tiled", **call)  # the phases a loop around one nest, packed once (not a copy each)
    assert tiled.count("scf.for %phase") == 1 and tiled.count("%window_fits = ") == 1
    want = torch.nn.grad.conv1d_input((n, c, length), torch.from_numpy(call["w"]).double(),
                                      torch.from_numpy(call["dy"]).double(), stride=stride, padding=padding)
    _close((kernel(**call),), (want.numpy(),), "float32")


def test_a_phase_split_turned_off_runs_the_stage_as_written():
    n, c, k, length, taps, stride, padding = STRIDED_1D[1]
    rng = np.random.default_rng(4)
    out = (length + 2 * padding - taps) // stride + 1
    call = dict(dy=rng.standard_normal((n, k, out)), x=rng.standard_normal((n, c, length)),
                w=rng.standard_normal((k, c, taps)), stride=stride, padding=padding)
    kernel = tilegrad.compile("conv1d_strided_input_grad_user", "cpu",
                              schedule="Partition(stage=0, axis=2, by='phase', partitioned=False)")
    assert "scf.for %phase" not in kernel.ir("tiled", **call)
    want = torch.nn.grad.conv1d_input((n, c, length), torch.from_numpy(call["w"]), torch.from_numpy(call["dy"]),
                                      stride=stride, padding=padding)
    _close((kernel(**call),), (want.numpy(),), "float64")


def test_the_plan_splits_a_stride_2_conv_backwards_dx_by_phases():
    """(its outputs: test_user_table_conv_matches_torch, in both builds)"""
    case = CONVS["conv2d backward 3x3 s2"]
    dims = case.dims["small"]
    listed = _schedule(tilegrad.compile(case.op, "cpu"), **case.inputs(np.random.default_rng(0), dims),
                       **case.attrs(dims))
    assert "Partition(stage=0, axis=2, by='phase')" in listed and "Partition(stage=0, axis=3, by='phase')" in listed


# Many channels (issue 45): a panel too small for all Q = K R S rows (dx) or for 16 positions of all
# C R S columns (dw) runs in blocks of whole rows of the first sum (dx: Qb = kb R S, the weight
# copied per block where C x Q do not fit its panel) or of the channels (dw); the stage as written
# is cold. With it erased, the kernel still computes every element: the blocks ran.


def _without_cold(text: str) -> str:
    from xdsl.dialects import scf

    from tilegrad.passes.loop_utils import COLD
    from tilegrad.pipeline import parse_ir

    module = parse_ir(text)
    cold = [o for o in module.walk() if isinstance(o, scf.ForOp) and COLD in o.attributes]
    assert cold
    for loop in cold:
        loop.detach()
        loop.erase()
    return str(module)


@pytest.mark.parametrize("dtype, guard", [("float32", False), ("float64", True)])
def test_a_many_channel_conv_backward_runs_its_panels_in_blocks(dtype, guard):
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((2, 480, 4, 3)).astype(dtype), rng.standard_normal((470, 480, 3, 3)).astype(dtype)
    dy, dx, dw = _conv_grads(x.astype(np.float64), w.astype(np.float64), rng, padding=1)
    call = dict(dy=dy.astype(dtype), x=x, weight=w, stride=1, padding=1, dilation=1)
    kernel = tilegrad.compile("user_conv2d_backward", "cpu", guard=guard)
    tiled = kernel.ir("tiled", **call)
    assert tiled.count("%block_sums = ") == 1 and tiled.count("%block_channels = ") == 1
    blocked = kernel.from_ir("tiled", _without_cold(tiled), guard=guard)
    for got in (kernel(**call), blocked(**call)):
        _close(got, (dx, dw), dtype)


def test_a_window_too_large_for_a_block_runs_the_cold_version():
    """R S = 4225 taps: more rows than dx's panel holds, and 16 positions of them more than dw's: the
    stage as written (cold: left as it is by the later passes) computes both, as torch does."""
    rng = np.random.default_rng(10)
    x, w = rng.standard_normal((1, 2, 66, 66)).astype(np.float32), rng.standard_normal((3, 2, 65, 65))
    dy, dx, dw = _conv_grads(x.astype(np.float64), w, rng, padding=1)
    call = dict(dy=dy.astype(np.float32), x=x, weight=w.astype(np.float32), stride=1, padding=1, dilation=1)
    _close(tilegrad.compile("user_conv2d_backward", "cpu")(**call), (dx, dw), "float32")


def test_many_channel_blocks_do_not_depend_on_the_core_count():
    """dx's blocks of k (sized by the whole K and C) and dw's blocks of c (by the whole C) add in the
    same order on one core as on all: bitwise the same results."""
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((2, 480, 4, 3)).astype(np.float32), rng.standard_normal((470, 480, 3, 3))
    call = dict(dy=rng.standard_normal((2, 470, 4, 3)).astype(np.float32), x=x, weight=w.astype(np.float32),
                stride=1, padding=1, dilation=1)
    one = tilegrad.compile("user_conv2d_backward", "cpu", schedule="Parallel(stage=0, cores=1)\n"
                                                                    "Parallel(stage=1, cores=1)")(**call)
    for got, want in zip(one, tilegrad.compile("user_conv2d_backward", "cpu")(**call)):
        np.testing.assert_array_equal(got, want)
