"""Backward ops as a user writes them in the DSL, for the user-op benchmark (`tilegrad bench --user`,
`benchmarks/user_ops.py`, issue 45) and its tests (tests/test_user_ops.py).

Each op is the natural formula from the math: a GEMM is a `reduce_sum` of a product, a convolution
sums over its window with `tg.where` masking the taps that fall in the padding, a suffix sum runs
`reduce_sum(cols - i, ...)`, the bilinear upsample gathers with the weights computed from torch's
source-coordinate formula. Nothing is restructured for speed (no separable rewrites, no blocking,
no reordered sums): how fast they run is what the compiler makes of a user's code.

They live in the package, not in benchmarks/, because `tilegrad bench --user` runs them wherever
tilegrad is installed and the tests import them; they are registered only when this module is
imported (`import tilegrad` does not), under names starting `user_`, so the library's op list is
unchanged. Each case carries torch's forms: the first, run in float64, is the oracle the tests
check against; the benchmark times them all (float32 or bfloat16, `out=` where aten has it) and
keeps the fastest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import tilegrad.dsl as tg

# ---------------------------------------------------------------------------------------------
# The ops (the math only)


@tg.op(outputs={"dx": tg.like("x"), "dw": tg.like("w")}, replace=True)
def user_linear_backward(dy=tg.tensor("N O"), x=tg.tensor("N I", dtype="dy"), w=tg.tensor("O I", dtype="dy")):
    """y = x @ w.T: dx = dy @ w, dw = dy.T @ x."""
    rows, outs = dy.shape
    return (lambda n, i: tg.reduce_sum(outs, lambda o: dy[n, o] * w[o, i]),
            lambda o, i: tg.reduce_sum(rows, lambda n: dy[n, o] * x[n, i]))


@tg.op(outputs={"da": tg.like("a"), "db": tg.like("b")}, replace=True)
def user_bmm_backward(dc=tg.tensor("B M N"), a=tg.tensor("B M K", dtype="dc"), b=tg.tensor("B K N", dtype="dc")):
    """c = a @ b per batch: da = dc @ b^T, db = a^T @ dc."""
    m_, n_ = dc.shape[1], dc.shape[2]
    return (lambda z, m, k: tg.reduce_sum(n_, lambda n: dc[z, m, n] * b[z, k, n]),
            lambda z, k, n: tg.reduce_sum(m_, lambda m: a[z, m, k] * dc[z, m, n]))


def _inside(y, x, h, w):
    return (y >= 0) & (y < h) & (x >= 0) & (x < w)


def _conv_input_grad(dy, weight, stride, padding, dilation, groups_of=None):
    """dx[n, c, h, w] = sum over k, i, j of dy[n, k, oh, ow] weight[k, c, i, j] where the output
    position (oh, ow) reads (h, w) at tap (i, j): oh * stride - padding + i * dilation = h.
    `groups_of`: depthwise (k is c, weight[c, 0, i, j])."""
    out_h, out_w = dy.shape[2], dy.shape[3]
    taps_h, taps_w = weight.shape[2], weight.shape[3]

    def term(n, c, h, w, k, i, j):
        top, left = h + padding - i * dilation, w + padding - j * dilation
        oh, ow = top // stride, left // stride
        hit = (top >= 0) & (left >= 0) & (top % stride).eq(0) & (left % stride).eq(0) & (oh < out_h) & (ow < out_w)
        tap = weight[k, c, i, j] if groups_of is None else weight[c, 0, i, j]
        return tg.where(hit, dy[n, k if groups_of is None else c, oh, ow] * tap, 0.0)

    if groups_of is not None:
        return lambda n, c, h, w: tg.reduce_sum_over((taps_h, taps_w), lambda i, j: term(n, c, h, w, None, i, j))
    return lambda n, c, h, w: tg.reduce_sum_over((dy.shape[1], taps_h, taps_w),
                                                 lambda k, i, j: term(n, c, h, w, k, i, j))


def _conv_weight_grad(dy, x, stride, padding, dilation, depthwise=False):
    """dweight[k, c, i, j] = sum over n, oh, ow of dy[n, k, oh, ow] x[n, c, oh * stride - padding + i * dilation, ...]
    (0 in the padding); depthwise: dweight[c, 0, i, j], k is c."""
    n_, _, h_, w_ = x.shape

    def term(k, c, i, j, n, oh, ow):
        y, xx = oh * stride - padding + i * dilation, ow * stride - padding + j * dilation
        return tg.where(_inside(y, xx, h_, w_), dy[n, k, oh, ow] * x[n, c, y, xx], 0.0)

    extents = (n_, dy.shape[2], dy.shape[3])
    if depthwise:
        return lambda c, z, i, j: tg.reduce_sum_over(extents, lambda n, oh, ow: term(c, c, i, j, n, oh, ow))
    return lambda k, c, i, j: tg.reduce_sum_over(extents, lambda n, oh, ow: term(k, c, i, j, n, oh, ow))


@tg.op(outputs={"dx": tg.like("x"), "dweight": tg.like("weight")}, replace=True)
def user_conv2d_backward(dy=tg.tensor("N K OH OW"), x=tg.tensor("N C H W", dtype="dy"),
                         weight=tg.tensor("K C R S", dtype="dy"), stride=tg.attr(1), padding=tg.attr(0),
                         dilation=tg.attr(1)):
    """conv2d's grad_input and grad_weight (groups 1, no bias), torch's convolution_backward."""
    return (_conv_input_grad(dy, weight, stride, padding, dilation),
            _conv_weight_grad(dy, x, stride, padding, dilation))


def _conv_out(size, taps, attrs):
    return (size + 2 * attrs["padding"] - attrs["dilation"] * (taps - 1) - 1) // attrs["stride"] + 1


@tg.op(outputs={"y": tg.shaped_by(lambda shape_of, attrs: (
    shape_of("x")[0], shape_of("weight")[0], _conv_out(shape_of("x")[2], shape_of("weight")[2], attrs),
    _conv_out(shape_of("x")[3], shape_of("weight")[3], attrs)), dtype="x")}, replace=True)
def user_conv2d(x=tg.tensor("N C H W"), weight=tg.tensor("K C R S", dtype="x"), stride=tg.attr(1),
                padding=tg.attr(0), dilation=tg.attr(1)):
    """y[n, k, oh, ow] = sum over c, i, j of x[n, c, oh * stride - padding + i * dilation, ...] weight[k, c, i, j]."""
    _, channels, h_, w_ = x.shape
    taps_h, taps_w = weight.shape[2], weight.shape[3]

    def term(n, k, oh, ow, c, i, j):
        y, xx = oh * stride - padding + i * dilation, ow * stride - padding + j * dilation
        return tg.where(_inside(y, xx, h_, w_), x[n, c, y, xx] * weight[k, c, i, j], 0.0)

    return lambda n, k, oh, ow: tg.reduce_sum_over((channels, taps_h, taps_w),
                                                   lambda c, i, j: term(n, k, oh, ow, c, i, j))


@tg.op(outputs={"dx": tg.like("x"), "dweight": tg.like("weight")}, replace=True)
def user_depthwise_conv2d_backward(dy=tg.tensor("N C OH OW"), x=tg.tensor("N C H W", dtype="dy"),
                                   weight=tg.tensor("C 1 R S", dtype="dy"), stride=tg.attr(1), padding=tg.attr(0),
                                   dilation=tg.attr(1)):
    """A depthwise conv2d's (groups = channels) grad_input and grad_weight."""
    return (_conv_input_grad(dy, weight, stride, padding, dilation, groups_of=True),
            _conv_weight_grad(dy, x, stride, padding, dilation, depthwise=True))


@tg.op(outputs={"dq": tg.like("q"), "dk": tg.like("k"), "dv": tg.like("v")}, replace=True)
def user_attention_backward(do=tg.tensor("B L D"), q=tg.tensor("B L D", dtype="do"), k=tg.tensor("B L D", dtype="do"),
                            v=tg.tensor("B L D", dtype="do"), p=tg.tensor("B L L", dtype="do"),
                            scale=tg.attr(0.125, runtime=True)):
    """o = p @ v with p = softmax(scale q @ k^T) given: dv = p^T do, dp = do v^T,
    ds = p (dp - rowsum(p dp)), dq = scale ds k, dk = scale ds^T q."""
    batch, length, depth = q.shape
    dp, delta, ds = tg.temp("dp", (batch, length, length)), tg.temp("delta", (batch, length)), \
        tg.temp("ds", (batch, length, length))
    dp.assign(lambda b, r, m: tg.reduce_sum(depth, lambda d: do[b, r, d] * v[b, m, d]))
    delta.assign(lambda b, r: tg.reduce_sum(length, lambda m: p[b, r, m] * dp[b, r, m]))
    ds.assign(lambda b, r, m: p[b, r, m] * (dp[b, r, m] - delta[b, r]))
    return (lambda b, r, d: scale * tg.reduce_sum(length, lambda m: ds[b, r, m] * k[b, m, d]),
            lambda b, m, d: scale * tg.reduce_sum(length, lambda r: ds[b, r, m] * q[b, r, d]),
            lambda b, m, d: tg.reduce_sum(length, lambda r: p[b, r, m] * do[b, r, d]))


@tg.op(outputs={"dx": tg.like("x"), "dgamma": tg.like("gamma"), "dbeta": tg.like("gamma")}, replace=True)
def user_layer_norm_backward(dy=tg.tensor("N D", dtype="x"), x=tg.tensor("N D"), mean=tg.tensor("N", dtype="x"),
                             rstd=tg.tensor("N", dtype="x"), gamma=tg.tensor("D", dtype="x")):
    """xhat = (x - mean) rstd, g = dy gamma: dx = rstd (g - mean_d(g) - xhat mean_d(g xhat)),
    dgamma = sum_n dy xhat, dbeta = sum_n dy."""
    rows, features = x.shape
    xhat = lambda n, d: (x[n, d] - mean[n]) * rstd[n]  # noqa: E731
    g_mean, gx_mean = tg.temp("g_mean", (rows,)), tg.temp("gx_mean", (rows,))
    g_mean.assign(lambda n: tg.reduce_sum(features, lambda d: dy[n, d] * gamma[d]) / tg.cast(features, "f"))
    gx_mean.assign(lambda n: tg.reduce_sum(features, lambda d: dy[n, d] * gamma[d] * xhat(n, d))
                   / tg.cast(features, "f"))
    return (lambda n, d: rstd[n] * (dy[n, d] * gamma[d] - g_mean[n] - xhat(n, d) * gx_mean[n]),
            lambda d: tg.reduce_sum(rows, lambda n: dy[n, d] * xhat(n, d)),
            lambda d: tg.reduce_sum(rows, lambda n: dy[n, d]))


@tg.op(outputs={"dx": tg.like("x"), "dweight": tg.like("weight")}, replace=True)
def user_rms_norm_backward(dy=tg.tensor("N D", dtype="x"), x=tg.tensor("N D"), rstd=tg.tensor("N", dtype="x"),
                           weight=tg.tensor("D", dtype="x")):
    """y = x rstd weight: dx = rstd (dy weight - x rstd mean_d(dy weight x rstd)), dweight = sum_n dy x rstd."""
    rows, features = x.shape
    proj = tg.temp("proj", (rows,))
    proj.assign(lambda n: tg.reduce_sum(features, lambda d: dy[n, d] * weight[d] * x[n, d] * rstd[n])
                / tg.cast(features, "f"))
    return (lambda n, d: rstd[n] * (dy[n, d] * weight[d] - x[n, d] * rstd[n] * proj[n]),
            lambda d: tg.reduce_sum(rows, lambda n: dy[n, d] * x[n, d] * rstd[n]))


@tg.op(outputs={"dx": tg.like("dy")}, replace=True)
def user_cumsum_backward(dy=tg.tensor("N D")):
    """y = cumsum(x) along D: dx[n, i] = sum over j >= i of dy[n, j] (a suffix sum)."""
    cols = dy.shape[1]
    return lambda n, i: tg.reduce_sum(cols - i, lambda t: dy[n, i + t])


@tg.op(outputs={"dx": tg.like("x")}, replace=True)
def user_cumprod_backward(dy=tg.tensor("N D", dtype="x"), x=tg.tensor("N D"), y=tg.tensor("N D", dtype="x")):
    """y = cumprod(x) along D (given): dx[n, i] = sum over j >= i of dy[n, j] y[n, j] / x[n, i]
    (x without zeros: the formula divides by x, as a user's first version does)."""
    cols = x.shape[1]
    return lambda n, i: tg.reduce_sum(cols - i, lambda t: dy[n, i + t] * y[n, i + t]) / x[n, i]


def _half(axis: int):
    return lambda shape_of, attrs: tuple(d // 2 if a >= axis else d for a, d in enumerate(shape_of("dy")))


@tg.op(outputs={"dx": tg.shaped_by(_half(2), dtype="dy")}, replace=True)
def user_upsample_nearest2x_backward(dy=tg.tensor("N C H2 W2")):
    """y[n, c, o, p] = x[n, c, o // 2, p // 2]: dx sums each 2x2 block of dy."""
    return lambda n, c, h, w: tg.reduce_sum_over((2, 2), lambda a, b: dy[n, c, 2 * h + a, 2 * w + b])


def _bilinear_weight(o, i, n):
    """The weight output o gives input i in torch's bilinear x2 (align_corners=False) along an axis
    of n inputs: the source coordinate s = max((o + 0.5) / 2 - 0.5, 0) lies between i0 = floor(s)
    and min(i0 + 1, n - 1), weighted 1 - (s - i0) and s - i0."""
    s = tg.maximum((tg.cast(o, "f") + 0.5) * 0.5 - 0.5, 0.0)
    left = tg.floor(s)
    frac = s - left
    i0 = tg.cast(left, "i")
    i1 = tg.where(i0 + 1 < n, i0 + 1, n - 1)
    return tg.where(i0.eq(i), 1.0 - frac, 0.0) + tg.where(i1.eq(i), frac, 0.0)


@tg.op(outputs={"dx": tg.shaped_by(_half(2), dtype="dy")}, replace=True)
def user_upsample_bilinear2x_backward(dy=tg.tensor("N C H2 W2")):
    """The gather: input (h, w) gets each output (o, p) within two rows and columns of (2h, 2w)
    times the weights the forward gave it."""
    out_h, out_w = dy.shape[2], dy.shape[3]
    h_, w_ = out_h // 2, out_w // 2

    def term(n, c, h, w, a, b):
        o, p = 2 * h - 1 + a, 2 * w - 1 + b
        inside = _inside(o, p, out_h, out_w)
        return tg.where(inside, _bilinear_weight(o, h, h_) * _bilinear_weight(p, w, w_) * dy[n, c, o, p], 0.0)

    return lambda n, c, h, w: tg.reduce_sum_over((4, 4), lambda a, b: term(n, c, h, w, a, b))


@tg.op(outputs={"dx": tg.like("x")}, replace=True)
def user_gelu_erf_backward(dy=tg.tensor("*S", dtype="x"), x=tg.tensor("*S")):
    """GELU(x) = x Φ(x): dx = dy (Φ(x) + x φ(x))."""
    cdf = 0.5 * (1.0 + tg.erf(x / math.sqrt(2.0)))
    return dy * (cdf + x * tg.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi))


@tg.op(outputs={"dx": tg.like("x")}, replace=True)
def user_gelu_tanh_backward(dy=tg.tensor("*S", dtype="x"), x=tg.tensor("*S")):
    """GELU(x) = x (1 + tanh(u)) / 2, u = √(2/π) (x + 0.044715 x³)."""
    k, a = math.sqrt(2.0 / math.pi), 0.044715
    t = tg.tanh(k * (x + a * x ** 3))
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * a * x ** 2))


@tg.op(outputs={"dgate": tg.like("gate"), "dup": tg.like("gate")}, replace=True)
def user_swiglu_backward(dy=tg.tensor("*S", dtype="gate"), gate=tg.tensor("*S"), up=tg.tensor("*S", dtype="gate")):
    """y = silu(gate) up: dgate = dy up σ (1 + gate (1 - σ)), dup = dy gate σ, σ = sigmoid(gate)."""
    s = tg.sigmoid(gate)
    return dy * up * s * (1.0 + gate * (1.0 - s)), dy * gate * s


# ---------------------------------------------------------------------------------------------
# The cases: inputs, torch's forms (the first is the oracle), sizes


@dataclass(frozen=True)
class UserCase:
    """One row of the user-op table. `dims` by size: "small" (the tests), "quick", "full"
    (training sizes). `inputs(rng, dims)` gives float64 values (rounded to the case's dtype when
    timed); each of `forms` is prepare(tensors, attrs, out) -> a call returning the outputs in the
    op's order (`out`: preallocated torch outputs, or None)."""

    label: str
    op: str
    dims: dict
    inputs: Callable[[np.random.Generator, tuple], dict]
    forms: dict[str, Callable]
    attrs: Callable[[tuple], dict] = lambda dims: {}
    dtype: str = "float32"
    flops: Callable[[tuple], int] | None = None
    """Multiply-adds times 2, for the contractions: their GFLOP/s and % of the FMA peak."""
    note: str = ""


def _normal(rng, *shape):
    return rng.standard_normal(shape)


def _linear_inputs(rng, d):
    n, i, o = d
    return dict(dy=_normal(rng, n, o), x=_normal(rng, n, i), w=_normal(rng, o, i))


def _mm_forms(dtype: str):
    import torch

    def plain(t, a, out):
        if out is None:
            return lambda: (t["dy"] @ t["w"], t["dy"].T @ t["x"])
        return lambda: (torch.mm(t["dy"], t["w"], out=out[0]), torch.mm(t["dy"].T, t["x"], out=out[1]))

    def widened(t, a, out):
        """Half inputs: each GEMM in float32 (the inputs widened in the call), rounded once on store,
        as tilegrad computes half types; on a host without bf16 dot-product instructions aten's
        bfloat16 mm is far slower than this."""
        def run():
            results = torch.mm(t["dy"].float(), t["w"].float()), torch.mm(t["dy"].float().T, t["x"].float())
            if out is None:
                return tuple(r.to(t["dy"].dtype) for r in results)
            return tuple(o.copy_(r) for o, r in zip(out, results))
        return run

    return {"mm out=": plain, **({"mm in float32": widened} if dtype != "float32" else {})}


def _bmm_forms():
    import torch

    def plain(t, a, out):
        if out is None:
            return lambda: (t["dc"] @ t["b"].transpose(1, 2), t["a"].transpose(1, 2) @ t["dc"])
        return lambda: (torch.bmm(t["dc"], t["b"].transpose(1, 2), out=out[0]),
                        torch.bmm(t["a"].transpose(1, 2), t["dc"], out=out[1]))

    return {"bmm out=": plain}


def _conv_inputs(rng, d):
    n, c, k, h, r, stride, padding, dilation = d
    oh = (h + 2 * padding - dilation * (r - 1) - 1) // stride + 1
    return dict(dy=_normal(rng, n, k, oh, oh), x=_normal(rng, n, c, h, h), weight=_normal(rng, k, c, r, r))


def _conv_attrs(d):
    return dict(stride=d[5], padding=d[6], dilation=d[7])


def _conv_backward_forms(depthwise=False):
    import torch

    def aten(t, a, out):
        groups = t["x"].shape[1] if depthwise else 1
        s, p, d = [a["stride"]] * 2, [a["padding"]] * 2, [a["dilation"]] * 2
        return lambda: torch.ops.aten.convolution_backward(t["dy"], t["x"], t["weight"], None, s, p, d, False,
                                                           [0, 0], groups, [True, True, False])[:2]

    return {"aten": aten}


def _conv_forward_forms():
    import torch

    def aten(t, a, out):
        return lambda: (torch.nn.functional.conv2d(t["x"], t["weight"], None, a["stride"], a["padding"],
                                                   a["dilation"]),)

    return {"conv2d": aten}


def _attention_inputs(rng, d):
    b, length, depth = d
    logits = _normal(rng, b, length, length) * 0.5
    p = np.exp(logits - logits.max(-1, keepdims=True))
    return dict(do=_normal(rng, b, length, depth), q=_normal(rng, b, length, depth), k=_normal(rng, b, length, depth),
                v=_normal(rng, b, length, depth), p=p / p.sum(-1, keepdims=True))


def _attention_forms():
    import torch

    def aten(t, a, out):
        """dv = p^T do; dp = do v^T; ds = softmax's backward (aten); dq, dk: bmm with the scale."""
        scale, p = a["scale"], t["p"]

        def run():
            dv = torch.bmm(p.transpose(1, 2), t["do"], out=None if out is None else out[2])
            dp = torch.bmm(t["do"], t["v"].transpose(1, 2))
            ds = torch.ops.aten._softmax_backward_data(dp, p, -1, p.dtype)
            dq = torch.bmm(ds, t["k"], out=None if out is None else out[0]).mul_(scale)
            dk = torch.bmm(ds.transpose(1, 2), t["q"], out=None if out is None else out[1]).mul_(scale)
            return dq, dk, dv
        return run

    return {"bmm + softmax_backward": aten}


def _norm_inputs(rng, d):
    n, features = d
    x = _normal(rng, n, features)
    mean, rstd = x.mean(1), 1 / np.sqrt(x.var(1) + 1e-5)
    return dict(dy=_normal(rng, n, features), x=x, mean=mean, rstd=rstd, gamma=rng.uniform(0.5, 1.5, features))


def _layer_norm_forms():
    import torch

    def aten(t, a, out):
        n, features = t["x"].shape
        args = (t["dy"], t["x"], [features], t["mean"][:, None], t["rstd"][:, None], t["gamma"],
                torch.zeros_like(t["gamma"]), [True, True, True])
        if out is None:
            return lambda: torch.ops.aten.native_layer_norm_backward(*args)
        return lambda: torch.ops.aten.native_layer_norm_backward.out(*args, out0=out[0], out1=out[1], out2=out[2])

    return {"aten out=": aten}


def _rms_inputs(rng, d):
    n, features = d
    x = _normal(rng, n, features)
    return dict(dy=_normal(rng, n, features), x=x, rstd=1 / np.sqrt((x * x).mean(1) + 1e-6),
                weight=rng.uniform(0.5, 1.5, features))


def _rms_norm_forms():
    """autograd of F.rms_norm (rstd recomputed from x, eps as the inputs'); aten's fused backward
    (_fused_rms_norm_backward) has no CPU kernel in torch 2.13."""
    import torch

    forward = lambda x, weight, t: torch.nn.functional.rms_norm(x, [x.shape[1]], weight, 1e-6)  # noqa: E731
    return {"autograd": _grad_of(forward, ["x", "weight"])}


def _grad_of(forward, names, grad_name="dy"):
    """torch's backward of a composite forward(*leaves, tensors): autograd.grad on a graph built
    once (timed alone). A name the op does not take (cumsum's x) is a leaf of dy's shape."""
    import torch

    def prepare(t, a, out):
        leaves = [(t[name] if name in t else torch.zeros_like(t[grad_name])).detach().clone().requires_grad_()
                  for name in names]
        result = forward(*leaves, t)
        return lambda: torch.autograd.grad(result, leaves, t[grad_name], retain_graph=True)

    return prepare


def _scan_forms(kind):
    import torch

    if kind == "cumsum":
        def flipped(t, a, out):
            return lambda: (torch.flip(torch.cumsum(torch.flip(t["dy"], [1]), 1), [1]),)

        return {"autograd": _grad_of(lambda x, t: torch.cumsum(x, 1), ["x"]), "flip cumsum flip": flipped}
    return {"autograd": _grad_of(lambda x, t: torch.cumprod(x, 1), ["x"])}


def _cumprod_inputs(rng, d):
    x = rng.uniform(0.9, 1.1, d) * rng.choice([-1.0, 1.0], d)
    return dict(dy=_normal(rng, *d), x=x, y=np.cumprod(x, 1))


def _upsample_inputs(rng, d):
    n, c, h = d
    return dict(dy=_normal(rng, n, c, 2 * h, 2 * h))


def _upsample_forms(mode):
    import torch

    aten = getattr(torch.ops.aten, f"upsample_{mode}2d_backward")
    extra = (False,) if mode == "bilinear" else ()

    def form(t, a, out):
        n, c, h2, w2 = t["dy"].shape
        args = (t["dy"], [h2, w2], [n, c, h2 // 2, w2 // 2], *extra, 2.0, 2.0)
        if out is None:
            return lambda: (aten(*args),)
        return lambda: (aten.grad_input(*args, grad_input=out[0]),)

    return {"aten out=": form}


def _pointwise_inputs(rng, d):
    return dict(dy=_normal(rng, *d), x=_normal(rng, *d))


def _gelu_forms(approximate):
    import torch

    def form(t, a, out):
        if out is None:
            return lambda: (torch.ops.aten.gelu_backward(t["dy"], t["x"], approximate=approximate),)
        return lambda: (torch.ops.aten.gelu_backward.grad_input(t["dy"], t["x"], approximate=approximate,
                                                                grad_input=out[0]),)

    return {"aten out=": form}


def _swiglu_inputs(rng, d):
    return dict(dy=_normal(rng, *d), gate=_normal(rng, *d), up=_normal(rng, *d))


def _swiglu_forms():
    import torch

    def aten(t, a, out):
        """silu's aten backward for dgate, a mul for dup."""
        def run():
            dgate = torch.ops.aten.silu_backward(t["dy"] * t["up"], t["gate"])
            dup = torch.mul(t["dy"], torch.nn.functional.silu(t["gate"]), out=None if out is None else out[1])
            return dgate, dup
        return run

    return {"aten": aten, "autograd": _grad_of(lambda gate, up, t: torch.nn.functional.silu(gate) * up, ["gate", "up"])}


def _gemm_flops(d):
    n, i, o = d
    return 2 * 2 * n * i * o


def _conv_flops(d, backward=True):
    n, c, k, h, r, stride, padding, dilation = d
    oh = (h + 2 * padding - dilation * (r - 1) - 1) // stride + 1
    return (2 if backward else 1) * 2 * n * k * c * r * r * oh * oh


def _linear(dtype, sizes):
    return [UserCase(f"linear backward {dtype}", "user_linear_backward",
                     {"small": (17, 23, 31), "quick": quick, "full": full}, _linear_inputs, _mm_forms(dtype),
                     dtype=dtype, flops=_gemm_flops) for quick, full in sizes]


LINEAR_SIZES = [((512, 256, 512), (2048, 1024, 2048)), ((256, 1024, 256), (1024, 4096, 1024)),
                ((250, 250, 250), (1000, 1000, 1000))]
"""(N, I, O) at "quick" and "full": a square-ish layer, a wide one, and one not a multiple of 16."""


def _conv(label, quick, full, small, forms=None, forward=False):
    if forward:
        return UserCase(label, "user_conv2d", {"small": small, "quick": quick, "full": full},
                        lambda rng, d: {k: v for k, v in _conv_inputs(rng, d).items() if k != "dy"},
                        _conv_forward_forms(), attrs=_conv_attrs, flops=lambda d: _conv_flops(d, False))
    return UserCase(label, "user_conv2d_backward", {"small": small, "quick": quick, "full": full}, _conv_inputs,
                    forms or _conv_backward_forms(), attrs=_conv_attrs, flops=_conv_flops,
                    note="padding masked with tg.where")


def cases() -> list[UserCase]:
    """Every case of the table, in its order (torch's forms import torch)."""
    # conv dims: (N, C, K, H, R, stride, padding, dilation)
    table = _linear("float32", LINEAR_SIZES) + _linear("bfloat16", LINEAR_SIZES) + [
        UserCase("bmm backward", "user_bmm_backward", {"small": (3, 9, 7, 11), "quick": (8, 128, 64, 128),
                                                       "full": (32, 256, 256, 256)},
                 lambda rng, d: dict(dc=_normal(rng, d[0], d[1], d[3]), a=_normal(rng, d[0], d[1], d[2]),
                                     b=_normal(rng, d[0], d[2], d[3])), _bmm_forms(),
                 flops=lambda d: 2 * 2 * d[0] * d[1] * d[2] * d[3]),
        _conv("conv2d backward 3x3 s1 p1", (2, 32, 32, 28, 3, 1, 1, 1), (8, 64, 64, 56, 3, 1, 1, 1),
              (2, 3, 4, 7, 3, 1, 1, 1)),
        _conv("conv2d backward 1x1", (2, 64, 32, 28, 1, 1, 0, 1), (8, 256, 64, 56, 1, 1, 0, 1),
              (2, 5, 3, 6, 1, 1, 0, 1)),
        _conv("conv2d backward 3x3 s2", (2, 32, 64, 28, 3, 2, 1, 1), (8, 64, 128, 56, 3, 2, 1, 1),
              (2, 3, 4, 9, 3, 2, 1, 1)),
        _conv("conv2d backward 5x5 d2", (2, 16, 16, 28, 5, 1, 4, 2), (8, 32, 32, 56, 5, 1, 4, 2),
              (2, 3, 2, 11, 5, 1, 4, 2)),
        _conv("conv2d forward 3x3 s1 p1", (2, 32, 32, 28, 3, 1, 1, 1), (8, 64, 64, 56, 3, 1, 1, 1),
              (2, 3, 4, 7, 3, 1, 1, 1), forward=True),
        UserCase("depthwise conv2d backward 3x3", "user_depthwise_conv2d_backward",
                 {"small": (2, 3, 3, 7, 3, 1, 1, 1), "quick": (2, 64, 64, 28, 3, 1, 1, 1),
                  "full": (8, 128, 128, 56, 3, 1, 1, 1)},
                 lambda rng, d: {**_conv_inputs(rng, d), "weight": _normal(rng, d[1], 1, d[4], d[4])},
                 _conv_backward_forms(depthwise=True), attrs=_conv_attrs, note="padding masked with tg.where"),
        UserCase("attention backward", "user_attention_backward",
                 {"small": (2, 13, 8), "quick": (4, 256, 64), "full": (16, 512, 64)}, _attention_inputs,
                 _attention_forms(), attrs=lambda d: dict(scale=1 / math.sqrt(d[2])),
                 flops=lambda d: 4 * 2 * d[0] * d[1] * d[1] * d[2], note="softmax given"),
        UserCase("layer norm backward", "user_layer_norm_backward",
                 {"small": (9, 37), "quick": (1024, 1024), "full": (8192, 1024)}, _norm_inputs, _layer_norm_forms()),
        UserCase("RMSNorm backward", "user_rms_norm_backward",
                 {"small": (9, 37), "quick": (1024, 1024), "full": (8192, 1024)}, _rms_inputs,
                 _rms_norm_forms()),
        UserCase("cumsum backward", "user_cumsum_backward",
                 {"small": (5, 33), "quick": (256, 512), "full": (2048, 1024)},
                 lambda rng, d: dict(dy=_normal(rng, *d)), _scan_forms("cumsum"),
                 note="suffix sum as reduce_sum(cols - i, ...)"),
        UserCase("cumprod backward", "user_cumprod_backward",
                 {"small": (5, 33), "quick": (256, 512), "full": (2048, 1024)}, _cumprod_inputs,
                 _scan_forms("cumprod"), note="x without zeros"),
        UserCase("upsample nearest x2 backward", "user_upsample_nearest2x_backward",
                 {"small": (2, 3, 5), "quick": (4, 32, 64), "full": (16, 64, 128)}, _upsample_inputs,
                 _upsample_forms("nearest")),
        UserCase("upsample bilinear x2 backward", "user_upsample_bilinear2x_backward",
                 {"small": (2, 3, 5), "quick": (4, 32, 64), "full": (16, 64, 128)}, _upsample_inputs,
                 _upsample_forms("bilinear"), note="a 4x4 gather, weights computed per tap"),
        UserCase("GELU (erf) backward", "user_gelu_erf_backward",
                 {"small": (7, 45), "quick": (1024, 1024), "full": (8192, 2048)}, _pointwise_inputs,
                 _gelu_forms("none")),
        UserCase("GELU (tanh) backward", "user_gelu_tanh_backward",
                 {"small": (7, 45), "quick": (1024, 1024), "full": (8192, 2048)}, _pointwise_inputs,
                 _gelu_forms("tanh")),
        UserCase("SwiGLU backward", "user_swiglu_backward",
                 {"small": (7, 45), "quick": (1024, 1024), "full": (4096, 2816)}, _swiglu_inputs, _swiglu_forms()),
    ]
    return table


# ---------------------------------------------------------------------------------------------
# A case at one size: its arrays, torch's tensors, the oracle, and the benchmark's Case


def arrays(case: UserCase, size: str, rng: np.random.Generator, dtype: str | None = None) -> dict[str, np.ndarray]:
    """The op's inputs at `size`, in `dtype` (default the case's)."""
    import ml_dtypes

    kind = {"float64": np.float64, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16}[dtype or case.dtype]
    return {name: value.astype(kind) for name, value in case.inputs(rng, case.dims[size]).items()}


def tensor(array: np.ndarray, dtype=None):
    """A torch tensor of the same values (bfloat16 through its bits: torch reads no ml_dtypes)."""
    import ml_dtypes
    import torch

    if array.dtype == ml_dtypes.bfloat16:
        result = torch.from_numpy(np.ascontiguousarray(array).view(np.int16)).view(torch.bfloat16)
    else:
        result = torch.from_numpy(np.ascontiguousarray(array))
    return result if dtype is None else result.to(dtype)


def numpy_of(value) -> np.ndarray:
    """float64 numpy of a torch tensor or an array of any float dtype."""
    if hasattr(value, "detach"):
        return value.detach().double().numpy()
    return np.asarray(value).astype(np.float64)


def oracle(case: UserCase, inputs: dict[str, np.ndarray], attrs: dict) -> tuple[np.ndarray, ...]:
    """torch's first form in float64 on the same values."""
    import torch

    tensors = {name: tensor(value, torch.float64) for name, value in inputs.items()}
    return tuple(numpy_of(r) for r in next(iter(case.forms.values()))(tensors, attrs, None)())


def size_label(case: UserCase, size: str) -> str:
    """The dims as the table prints them: N x C x H x W and K for a convolution."""
    dims = case.dims[size]
    shape = f"{dims[0]}x{dims[1]}x{dims[3]}x{dims[3]} K={dims[2]}" if "conv2d" in case.op else "x".join(map(str, dims))
    return f"{shape} {case.dtype}"


def bench_case(case: UserCase, size: str, rng: np.random.Generator, Case):
    """The benchmark's Case: tilegrad writing into preallocated outputs, and each of torch's forms
    (into preallocated outputs where it takes them). Compiles the kernel (a refusal raises here)."""
    import tilegrad

    dims = case.dims[size]
    inputs, attrs = arrays(case, size, rng), case.attrs(dims)
    kernel = tilegrad.compile(case.op, "cpu")
    first = kernel(**inputs, **attrs)
    outputs = dict(zip(tg.get_op(case.op).outputs, first if isinstance(first, tuple) else (first,)))
    forms = {}
    try:
        tensors = {name: tensor(value) for name, value in inputs.items()}
        for label, prepare in case.forms.items():
            result = prepare(tensors, attrs, None)()
            forms[label] = prepare(tensors, attrs, tuple(r.new_empty(r.shape) for r in result))
    except ImportError:
        pass
    moved = sum(a.nbytes for a in inputs.values()) + sum(a.nbytes for a in outputs.values())
    shape = size_label(case, size)
    return Case(case.label, shape, moved, lambda: kernel(**inputs, **attrs, **outputs), forms,
                flops=case.flops(dims) if case.flops else 0, note=case.note)
