"""Depthwise convolutions' backward as a user writes them (issue 45, windows): grad_input sums over
the window's taps alone (interchange-column-reductions runs it as row accumulations, one contiguous
multiply-add per tap), grad_weight sums over the positions (partition-clamped-loops takes the
range tests that branch its reads out of the middle of that sum). A fresh op, the 1-D depthwise
convolution's backward, and the library table's 2-D one at 5x5, against torch in float32 and (the
guard build, bounds-checking every access) float64, at odd sizes and strides; and the two decisions
as directives `tilegrad plan` lists, which a schedule turns off for the same bits."""

import numpy as np
import pytest
from conftest import torch  # skips without torch

import tilegrad
import tilegrad.dsl as tg
import tilegrad.user_ops  # noqa: F401  (registers user_depthwise_conv2d_backward)


@tg.op(outputs={"dx": tg.like("x"), "dweight": tg.like("weight")}, replace=True)
def fresh_depthwise_conv1d_backward(dy=tg.tensor("N C OL"), x=tg.tensor("N C L", dtype="dy"),
                                    weight=tg.tensor("C 1 K", dtype="dy"), stride=tg.attr(1), padding=tg.attr(0)):
    """y[n, c, o] = sum over k of x[n, c, o * stride - padding + k] weight[c, 0, k]: its grad_input and grad_weight."""
    out_len, taps, length = dy.shape[2], weight.shape[2], x.shape[2]

    def dx_term(n, c, i, k):
        top = i + padding - k
        o = top // stride
        return tg.where((top >= 0) & (top % stride).eq(0) & (o < out_len), dy[n, c, o] * weight[c, 0, k], 0.0)

    def dw_term(c, k, n, o):
        i = o * stride - padding + k
        return tg.where((i >= 0) & (i < length), dy[n, c, o] * x[n, c, i], 0.0)

    return (lambda n, c, i: tg.reduce_sum(taps, lambda k: dx_term(n, c, i, k)),
            lambda c, z, k: tg.reduce_sum_over((dy.shape[0], out_len), lambda n, o: dw_term(c, k, n, o)))


TOLERANCES = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def _inputs(x_shape, w_shape, stride, padding, dilation, dtype, seed=0):
    rng = np.random.default_rng(seed)
    spatial = [(n + 2 * padding - dilation * (k - 1) - 1) // stride + 1 for n, k in zip(x_shape[2:], w_shape[2:])]
    arrays = dict(dy=rng.standard_normal((*x_shape[:2], *spatial)), x=rng.standard_normal(x_shape),
                  weight=rng.standard_normal(w_shape))
    return {k: v.astype(dtype) for k, v in arrays.items()}


def _torch(inputs, stride, padding, dilation):
    t = {k: torch.from_numpy(v).double() for k, v in inputs.items()}
    dims = t["x"].dim() - 2
    got = torch.ops.aten.convolution_backward(t["dy"], t["x"], t["weight"], None, [stride] * dims, [padding] * dims,
                                              [dilation] * dims, False, [0] * dims, t["x"].shape[1],
                                              [True, True, False])
    return [g.numpy() for g in got[:2]]


def _check(got, want, dtype):
    for value, expected in zip(got, want):
        scale = max(float(np.max(np.abs(expected))), 1.0)  # sums of many terms: relative to the largest
        np.testing.assert_allclose(value.astype(np.float64) / scale, expected / scale, **TOLERANCES[dtype])


BUILDS = [("float32", False), ("float64", True)]
# (stride, padding), each with shapes (x, taps) one kernel runs: a window wider than the row, a row
# shorter than the window's reach on both sides
CONV1D = {(1, 2): [((2, 3, 37), 5), ((1, 2, 3), 5)], (2, 1): [((3, 5, 23), 3), ((2, 1, 4), 3)]}


@pytest.mark.parametrize("dtype, guard", BUILDS, ids=["float32", "float64-guard"])
@pytest.mark.parametrize("stride, padding", list(CONV1D), ids=["s1", "s2"])
def test_fresh_depthwise_conv1d_backward_matches_torch(stride, padding, dtype, guard):
    kernel = tilegrad.compile("fresh_depthwise_conv1d_backward", "cpu", guard=guard)
    for shape, taps in CONV1D[stride, padding]:
        inputs = _inputs(shape, (shape[1], 1, taps), stride, padding, 1, dtype)
        _check(kernel(**inputs, stride=stride, padding=padding), _torch(inputs, stride, padding, 1), dtype)


# (stride, padding, dilation): [(x, taps)]
CONV2D = {(1, 2, 1): [((2, 3, 11, 9), 5), ((1, 2, 6, 13), 3)], (2, 2, 2): [((1, 4, 13, 7), 3), ((2, 2, 10, 12), 5)]}


@pytest.mark.parametrize("dtype, guard", BUILDS, ids=["float32", "float64-guard"])
@pytest.mark.parametrize("stride, padding, dilation", list(CONV2D), ids=["s1-p2", "s2-d2"])
def test_depthwise_conv2d_backward_matches_torch(stride, padding, dilation, dtype, guard):
    kernel = tilegrad.compile("user_depthwise_conv2d_backward", "cpu", guard=guard)
    attrs = dict(stride=stride, padding=padding, dilation=dilation)
    for shape, taps in CONV2D[stride, padding, dilation]:
        inputs = _inputs(shape, (shape[1], 1, taps, taps), stride, padding, dilation, dtype)
        _check(kernel(**inputs, **attrs), _torch(inputs, stride, padding, dilation), dtype)


def test_the_planner_lists_both_decisions_and_turning_them_off_gives_the_same_results():
    """dx's taps outside its column loop (Reorder) and dw's sum over positions partitioned (Partition,
    its sum's own axis 0): listed by the planner; the column form and the whole loop, given as a
    schedule, build other code and the same sums to rounding (the sums' reassoc flag lets LLVM
    vectorize dw's middle part, adding its terms in another order)."""
    inputs = _inputs((2, 3, 37), (3, 1, 5), 1, 2, 1, "float32")
    kernel = tilegrad.compile("fresh_depthwise_conv1d_backward", "cpu")
    sources = {entry["directive"]: entry["source"] for entry in kernel.plan(**inputs, padding=2).schedule}
    assert sources.get("Reorder(stage=0, order=('r0', 2))") == "planner", sources
    assert sources.get("Partition(stage=1)") == "planner", sources
    off = tilegrad.compile("fresh_depthwise_conv1d_backward", "cpu",
                           schedule="Reorder(stage=0, order=(2, 'r0'))\nPartition(stage=1, partitioned=False)")
    tiled, plain = kernel.ir("tiled", **inputs, padding=2), off.ir("tiled", **inputs, padding=2)
    assert "tg.loop<row" in tiled and "tg.loop<row" not in plain
    assert tiled.count("tg.loop<reduce, axis = 0>") > plain.count("tg.loop<reduce, axis = 0>")
    for a, b in zip(kernel(**inputs, padding=2), off(**inputs, padding=2)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6 * float(np.max(np.abs(b))))
