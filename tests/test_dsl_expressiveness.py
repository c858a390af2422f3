"""The DSL expresses what SPEC's next ops need, without escape hatches: windows with padding
(pooling/LRN), matmul-like reductions, computed indices from data (sampling), multi-output."""

import numpy as np
import pytest
from conftest import assert_close, torch

import tilegrad
import tilegrad.dsl as tg


@tg.op(outputs={"dx": tg.shaped("N", "C", "H", "W", dtype="dy")}, replace=True)
def test_avg_pool2d_backward(dy=tg.tensor("N C OH OW"), x=tg.tensor("N C H W", dtype="dy"),
                             kernel=tg.attr(3), stride=tg.attr(2), padding=tg.attr(1)):
    """dx[n,c,h,w] = Σ over the windows covering (h, w) of dy / window area (padding counted)."""
    out_h, out_w = dy.shape[2], dy.shape[3]

    def covered(h, w, kh, kw):
        top, left = h + padding - kh, w + padding - kw
        oh, ow = top // stride, left // stride
        inside = (top >= 0) & (left >= 0) & (top % stride).eq(0) & (left % stride).eq(0)
        inside = inside & (oh < out_h) & (ow < out_w)
        return inside, oh, ow

    def element(n, c, h, w):
        def term(kh, kw):
            inside, oh, ow = covered(h, w, kh, kw)
            return tg.where(inside, dy[n, c, oh, ow], 0.0)

        total = tg.reduce_sum(kernel, lambda kh: tg.reduce_sum(kernel, lambda kw: term(kh, kw)))
        return total / (kernel * kernel)

    return element


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
def test_window_with_padding_matches_aten(target, rng):
    x = rng.standard_normal((2, 3, 11, 9)).astype(np.float32)
    y = torch.nn.functional.avg_pool2d(torch.from_numpy(x), 3, 2, 1)
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    ref = torch.ops.aten.avg_pool2d_backward(torch.from_numpy(dy), torch.from_numpy(x), [3, 3], [2, 2], [1, 1],
                                             False, True, None)
    got = tilegrad.compile("test_avg_pool2d_backward", target)(dy=dy, x=x)
    assert_close(got, ref, "float32", reduction=True)


@tg.op(outputs={"grad_input": tg.shaped("B", "H", dtype="weight"), "grad_weight": tg.shaped("V", "H", dtype="weight")},
       replace=True)
def test_linear_backward(g=tg.tensor("B V"), inp=tg.tensor("B H", dtype="g"), weight=tg.tensor("V H", dtype="g")):
    """grad_input = G @ W, grad_weight = G^T @ X: two outputs, each a reduction."""
    rows, vocab = g.shape
    return (lambda b, h: tg.reduce_sum(vocab, lambda v: g[b, v] * weight[v, h]),
            lambda v, h: tg.reduce_sum(rows, lambda b: g[b, v] * inp[b, h]))


@pytest.mark.parametrize("target", ["cpu", "metax-c500"])
def test_matmul_like_reductions(target, rng):
    g = rng.standard_normal((17, 23)).astype(np.float32)
    x = rng.standard_normal((17, 31)).astype(np.float32)
    w = rng.standard_normal((23, 31)).astype(np.float32)
    grad_input, grad_weight = tilegrad.compile("test_linear_backward", target)(g=g, inp=x, weight=w)
    assert_close(grad_input, g.astype(np.float64) @ w, "float32", reduction=True)
    assert_close(grad_weight, g.T.astype(np.float64) @ x, "float32", reduction=True)


@tg.op(outputs={"dx": tg.shaped("L", dtype="dy")}, replace=True)
def test_linear_sample_backward(dy=tg.tensor("J"), position=tg.tensor("J", dtype="dy"), x=tg.tensor("L", dtype="dy")):
    """y[j] = lerp of x at a data-dependent position (zero outside): dx gets both neighbours'
    weights. The indices are computed from data with floor; outside points are skipped."""
    dx = tg.output("dx")
    dx.fill(0.0)

    def left(j):
        return tg.floor(position[j])

    frac = lambda j: position[j] - left(j)  # noqa: E731
    tg.scatter_add(dx, dy.shape, index=lambda j: (tg.cast(left(j), "i"),),
                   value=lambda j: dy[j] * (1.0 - frac(j)), message=None)
    tg.scatter_add(dx, dy.shape, index=lambda j: (tg.cast(left(j), "i") + 1,),
                   value=lambda j: dy[j] * frac(j), message=None)


@pytest.mark.parametrize("target", ["cpu", "ft78ne"])
def test_computed_indices_from_data(target, rng):
    x = rng.standard_normal(20).astype(np.float32)
    position = rng.uniform(-3, 23, 200).astype(np.float32)  # some fall outside: skipped
    dy = rng.standard_normal(200).astype(np.float32)
    pos = torch.from_numpy(position).requires_grad_(False)
    xt = torch.from_numpy(x).requires_grad_()
    left = torch.floor(pos).long()
    frac = pos - torch.floor(pos)

    def gather(i):
        inside = (i >= 0) & (i < 20)
        return torch.where(inside, xt[i.clamp(0, 19)], torch.zeros(()))

    y = gather(left) * (1 - frac) + gather(left + 1) * frac
    y.backward(torch.from_numpy(dy))
    got = tilegrad.compile("test_linear_sample_backward", target)(dy=dy, position=position, x=x)
    assert_close(got, xt.grad, "float32", reduction=True)


@tg.op(outputs={"q": tg.like("x"), "r": tg.like("x")}, replace=True)
def float_floor_divmod(x=tg.tensor("N"), d=tg.attr(0.75, runtime=True)):
    return x // d, x % -d


@pytest.mark.parametrize("target,dtype,guard", [("cpu", np.float64, False), ("ascend910b", np.float32, False),
                                                ("cpu", np.float32, True)])
def test_float_floor_division_and_remainder_follow_python(target, dtype, guard):
    """x // d = floor(x / d) and x % d = x - floor(x / d) * d (the divisor's sign), as Python, numpy and
    torch's floor_divide / remainder (they were an internal error: no float form was emitted)."""
    x = np.linspace(-3, 3, 101).astype(dtype)
    q, r = tilegrad.compile("float_floor_divmod", target, guard=guard)(x=x, d=0.75)
    np.testing.assert_array_equal(q, np.floor_divide(x, dtype(0.75)))
    np.testing.assert_allclose(r, np.remainder(x, dtype(-0.75)), atol=4 * np.finfo(dtype).eps)
