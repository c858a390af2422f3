"""The benchmark's cases: one builder per library op, at realistic training sizes.

`size` is "full" (the table's training sizes), "quick" (small, for a smoke run) or "tiny" (a few
hundred to a few thousand elements: the per-call cost, launcher and all, next to torch's).

Each builder returns `Case`s: tilegrad's call into preallocated outputs, torch's forms (aten
backward kernels, plain and `out=`; autograd of the composite forward where aten has none), and a
numpy form where one is natural. torch is imported lazily: without it, only tilegrad is timed.
"""

from __future__ import annotations

import numpy as np

import tilegrad

F32 = np.float32


def by_size(size: str, tiny, quick, full):
    return {"tiny": tiny, "quick": quick, "full": full}[size]


def _count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 100_000 else str(n)


def _torch():
    try:
        import torch

        return torch
    except ImportError:
        return None


def _t(array):
    torch = _torch()
    return torch.from_numpy(np.ascontiguousarray(array)) if torch is not None else None


def _kernel(name):
    return tilegrad.compile(name, "cpu")


def _grad_of(forward, inputs, dy):
    """torch's backward of a composite forward: autograd.grad on a graph built once (timed alone)."""
    torch = _torch()
    leaves = [_t(a).requires_grad_() for a in inputs]
    out = forward(*leaves)
    dyt = _t(dy)
    return lambda: torch.autograd.grad(out, leaves, dyt, retain_graph=True)


def bce(rng, size, Case):
    n = by_size(size, 1000, 1 << 20, 16 << 20)
    x = rng.uniform(0.01, 0.99, n).astype(F32)
    y = rng.uniform(0, 1, n).astype(F32)
    g = np.array([1.0], F32)
    dx = np.empty_like(x)
    k = _kernel("binary_cross_entropy_grad")
    torch = _torch()
    forms = {}
    if torch is not None:
        xt, yt, gt, out = _t(x), _t(y), torch.tensor(1.0), torch.empty(n)
        forms = {"aten": lambda: torch.ops.aten.binary_cross_entropy_backward(gt, xt, yt, None, 1),
                 "aten out=": lambda: torch.ops.aten.binary_cross_entropy_backward.grad_input(
                     gt, xt, yt, None, 1, grad_input=out)}
    return [Case("binary_cross_entropy_grad", f"{n} f32, mean", 12 * n,
                 lambda: k(input_x=x, input_y=y, dloss=g, dx=dx), forms,
                 lambda: g[0] * (x - y) / np.maximum(x * (1 - x), 1e-12) / n)]


def nll(rng, size, Case):
    n, c = by_size(size, (16, 100), (1024, 4000), (8192, 32000))
    x = np.empty((n, c), F32)  # read for its shape only
    t = rng.integers(0, c, n).astype(np.int64)
    w = rng.uniform(0.5, 2, c).astype(F32)
    g, tw = np.array([1.0], F32), np.array([w[t].sum()], F32)
    out = np.empty((n, c), F32)
    k = _kernel("nll_loss_backward")
    torch = _torch()
    forms = {}
    if torch is not None:
        xt, tt, wt, o = _t(x), _t(t), _t(w), torch.empty(n, c)
        forms = {"aten": lambda: torch.ops.aten.nll_loss_backward(torch.tensor(1.0), xt, tt, wt, 1, -100,
                                                                   torch.tensor(tw[0])),
                 "aten out=": lambda: torch.ops.aten.nll_loss_backward.grad_input(
                     torch.tensor(1.0), xt, tt, wt, 1, -100, torch.tensor(tw[0]), grad_input=o)}

    def numpy_fn():
        result = np.zeros((n, c), F32)
        result[np.arange(n), t] = -w[t] / tw[0]
        return result

    return [Case("nll_loss_backward", f"N={n} C={c} f32, mean", 4 * n * c + 8 * n,
                 lambda: k(grad_output=g, self=x, target=t, weight=w, total_weight=tw, out=out), forms, numpy_fn)]


def embedding(rng, size, Case):
    n, e, num = by_size(size, (16, 32, 100), (1024, 256, 5000), (8192, 1024, 50000))
    idx = rng.integers(0, num, n).astype(np.int64)
    grad = rng.standard_normal((n, e)).astype(F32)
    out = np.empty((num, e), F32)
    k = _kernel("embedding_dense_backward")
    torch = _torch()
    cases = []
    for scale in (False, True):
        forms = {}
        if torch is not None:
            forms = aten_forms(torch, "embedding_dense_backward", (_t(grad), _t(idx), num, -1, scale), "out",
                               out=torch.empty((num, e)))

        def numpy_fn(s=scale):
            result = np.zeros((num, e), F32)
            np.add.at(result, idx, grad)
            if s:
                result /= np.maximum(np.bincount(idx, minlength=num), 1)[:, None]
            return result

        cases.append(Case("embedding_dense_backward", f"{n}x{e} into {num}{', scaled' if scale else ''}",
                          4 * num * e + 4 * n * e + 8 * n,
                          lambda s=scale: k(grad=grad, indices=idx, num_weights=num, scale_grad_by_freq=s, out=out),
                          forms, numpy_fn))
    return cases


def fused_linear_ce(rng, size, Case):
    bt, h, v = by_size(size, (8, 16, 50), (64, 64, 500), (128, 256, 2000))
    inp = rng.standard_normal((bt, h)).astype(F32) * 0.1
    weight = rng.standard_normal((v, h)).astype(F32) * 0.1
    logits = inp.astype(np.float64) @ weight.T.astype(np.float64)
    lmax = logits.max(1).astype(F32)
    sexp = np.exp(logits - lmax[:, None]).sum(1).astype(F32)
    target = rng.integers(0, v, bt).astype(np.int64)
    mask = np.zeros((bt + 7) // 8, np.uint8)
    grad = rng.standard_normal(bt).astype(F32)
    gi, gw = np.empty_like(inp), np.empty_like(weight)
    k = _kernel("fused_linear_cross_entropy_loss_grad")
    torch = _torch()
    forms = {}
    if torch is not None:
        it, wt, mt, st, tt, gt = _t(inp), _t(weight), _t(lmax), _t(sexp), _t(target), _t(grad)
        rows = torch.arange(bt)

        def composite():
            p = torch.exp(it @ wt.T - mt[:, None]) / st[:, None]
            p[rows, tt] -= 1.0
            g = p * gt[:, None]
            return g @ wt, g.T @ it

        forms = {"composite (mm, exp, index, mm, mm)": composite}
    flops = 3 * 2 * bt * h * v
    return [Case("fused_linear_cross_entropy_loss_grad", f"BT={bt} H={h} V={v} f32 ({flops / 1e9:.2f} GFLOP)",
                 4 * (2 * bt * h + 2 * v * h), lambda: k(
                     grad=grad, input=inp, weight=weight, target_mask=mask, masked_target=target, logits_max=lmax,
                     sum_exp_logits=sexp, grad_input=gi, grad_weight=gw), forms)]


ACTIVATION_ATEN = {
    "relu": ("threshold_backward", lambda dy, x, y: (dy, x, 0.0)),
    "sigmoid": ("sigmoid_backward", lambda dy, x, y: (dy, y)),
    "tanh": ("tanh_backward", lambda dy, x, y: (dy, y)),
    "elu": ("elu_backward", lambda dy, x, y: (dy, 1.0, 1.0, 1.0, False, x)),
    "swish": ("silu_backward", lambda dy, x, y: (dy, x)),
}
"""Per activation mode: torch's aten backward op and its arguments from (dy, x, y)."""


def aten_forms(torch, name: str, args: tuple, out_overload: str, **outs) -> dict:
    """torch's two forms of an aten op: plain (allocates its results) and its `out=` overload
    writing into the preallocated tensors `outs` (by the overload's keyword names)."""
    packet = getattr(torch.ops.aten, name)
    return {"aten": lambda: packet(*args),
            "aten out=": lambda: getattr(packet, out_overload)(*args, **outs)}


def activation_forms(torch, mode: str, dy, x, y) -> dict:
    name, args = ACTIVATION_ATEN[mode]
    return aten_forms(torch, name, args(dy, x, y), "grad_input", grad_input=torch.empty_like(dy))


ACTIVATION_BYTES = {"relu": 12, "sigmoid": 12, "tanh": 12, "elu": 16, "swish": 12}
"""Bytes per element each mode moves at least: the float32 arrays it reads (relu and swish x, sigmoid
and tanh y, elu both, with dy) and dx written."""


def activation(rng, size, Case):
    shape = by_size(size, (1, 4, 16, 16), (4, 16, 64, 64), (16, 64, 128, 128))
    n = int(np.prod(shape))
    x = rng.standard_normal(shape).astype(F32)
    dy = rng.standard_normal(shape).astype(F32)
    y = np.tanh(x)
    dx = np.empty_like(x)
    k = _kernel("activation_backward")
    torch = _torch()
    cases = []
    for mode in ACTIVATION_ATEN:
        forms = activation_forms(torch, mode, _t(dy), _t(x), _t(y)) if torch is not None else {}
        numpy_fn = (lambda: dy * (x > 0)) if mode == "relu" else None
        cases.append(Case("activation_backward", f"{mode} {_count(n)} f32", ACTIVATION_BYTES[mode] * n,
                          lambda m=mode: k(y=y, dy=dy, x=x, mode=m, dx=dx), forms, numpy_fn))
    return cases


def softmax(rng, size, Case):
    cases = []
    torch = _torch()
    k = _kernel("softmax_backward")
    configs = (("instance", "accurate", (4096, 1000, 1, 1)), ("instance", "log", (4096, 1000, 1, 1)),
               ("channel", "accurate", (32, 64, 28, 28)))
    for mode, algorithm, shape in configs:
        shape = by_size(size, (2, 100, 1, 1) if mode == "instance" else (2, 8, 4, 4),
                        (shape[0] // 16,) + shape[1:], shape)
        y = rng.uniform(0, 1, shape).astype(F32)
        dy = rng.standard_normal(shape).astype(F32)
        dx = np.empty_like(y)
        forms = {}
        if torch is not None:
            rows = (shape[0], y.size // shape[0]) if mode == "instance" else shape
            name = "_log_softmax_backward_data" if algorithm == "log" else "_softmax_backward_data"
            forms = aten_forms(torch, name, (_t(dy.reshape(rows)), _t(y.reshape(rows)), 1, torch.float32), "out",
                               **{"out" if algorithm == "log" else "grad_input": torch.empty(rows)})
        cases.append(Case("softmax_backward", f"{mode} {algorithm} {'x'.join(map(str, shape))}", 12 * y.size,
                          lambda a=y, d=dy, o=dx, m=mode, al=algorithm: k(y=a, dy=d, mode=m, algorithm=al, dx=o),
                          forms))
    return cases


def _bn_inputs(rng, size):
    shape = by_size(size, (2, 8, 4, 4), (8, 32, 28, 28), (32, 64, 56, 56))
    c = shape[1]
    x = rng.standard_normal(shape).astype(F32)
    dy = rng.standard_normal(shape).astype(F32)
    g = rng.uniform(0.5, 2, c).astype(F32)
    b = rng.standard_normal(c).astype(F32)
    return shape, x, dy, g, b


def batch_norm(rng, size, Case):
    torch = _torch()
    shape, x, dy, g, b = _bn_inputs(rng, size)
    c, size = shape[1], "x".join(map(str, shape))
    p = lambda a: a.reshape(1, c, 1, 1).copy()  # noqa: E731
    mean = x.mean((0, 2, 3)).astype(F32)
    inv = (1 / np.sqrt(x.var((0, 2, 3)) + 1e-5)).astype(F32)
    dx, dg, db = np.empty_like(x), np.empty((1, c, 1, 1), F32), np.empty((1, c, 1, 1), F32)
    y = np.maximum(x, 0)
    rm, rv = np.zeros(c, F32), np.ones(c, F32)
    out_y, sm, si = np.empty_like(x), np.empty((1, c, 1, 1), F32), np.empty((1, c, 1, 1), F32)
    forms = {n: {} for n in ("bwd", "bwd_ex", "fwd", "fwd_ex")}
    if torch is not None:
        xt, dyt, gt, bt, mt, it = _t(x), _t(dy), _t(g), _t(b), _t(mean), _t(inv)
        rmt, rvt, yt = _t(rm.copy()), _t(rv.copy()), _t(y)
        mask = [True, True, True]
        bn_backward, bn = torch.ops.aten.native_batch_norm_backward, torch.ops.aten.native_batch_norm
        outs = dict(out0=torch.empty_like(xt), out1=torch.empty_like(gt), out2=torch.empty_like(gt))
        relu_grad, stats = torch.empty_like(xt), dict(save_mean=torch.empty_like(gt), save_invstd=torch.empty_like(gt))
        forms["bwd"] = aten_forms(torch, "native_batch_norm_backward", (dyt, xt, gt, None, None, mt, it, True, 1e-5,
                                                                        mask), "out", **outs)
        forms["bwd_ex"] = {
            "aten (threshold, bn backward)": lambda: bn_backward(
                torch.ops.aten.threshold_backward(dyt, yt, 0.0), xt, gt, None, None, mt, it, True, 1e-5, mask),
            "aten out= (threshold, bn backward)": lambda: bn_backward.out(
                torch.ops.aten.threshold_backward.grad_input(dyt, yt, 0.0, grad_input=relu_grad), xt, gt, None,
                None, mt, it, True, 1e-5, mask, **outs)}
        forms["fwd"] = aten_forms(torch, "native_batch_norm", (xt, gt, bt, rmt, rvt, True, 0.1, 1e-5), "out",
                                  out=outs["out0"], **stats)
        forms["fwd_ex"] = {
            "aten (bn, relu)": lambda: torch.relu_(bn(xt, gt, bt, rmt, rvt, True, 0.1, 1e-5)[0]),
            "aten out= (bn, relu)": lambda: torch.relu_(
                bn.out(xt, gt, bt, rmt, rvt, True, 0.1, 1e-5, out=outs["out0"], **stats)[0])}
    bwd, bwd_ex = _kernel("batch_norm_backward"), _kernel("batch_norm_backward_ex")
    fwd, fwd_ex = _kernel("batch_norm_forward_training"), _kernel("batch_norm_forward_training_ex")
    gp, bp, mp, ip = p(g), p(b), p(mean), p(inv)
    rmp, rvp = p(rm), p(rv)
    moved = 12 * x.size
    return [
        Case("batch_norm_backward", f"{size} spatial", moved, lambda: bwd(
            x=x, dy=dy, bn_scale=gp, saved_mean=mp, saved_inv_variance=ip, dx=dx, d_bn_scale=dg, d_bn_bias=db),
            forms["bwd"]),
        Case("batch_norm_backward_ex", f"{size} bn_activation relu", 16 * x.size, lambda: bwd_ex(
            x=x, y=y, dy=dy, bn_scale=gp, bn_bias=bp, saved_mean=mp, saved_inv_variance=ip, bn_ops="bn_activation",
            activation="relu", dx=dx, d_bn_scale=dg, d_bn_bias=db), forms["bwd_ex"]),
        Case("batch_norm_forward_training", f"{size} spatial", 8 * x.size, lambda: fwd(
            x=x, bn_scale=gp, bn_bias=bp, running_mean=rmp, running_variance=rvp, y=out_y, save_mean=sm,
            save_inv_variance=si), forms["fwd"]),
        Case("batch_norm_forward_training_ex", f"{size} bn_activation relu", 8 * x.size, lambda: fwd_ex(
            x=x, bn_scale=gp, bn_bias=bp, running_mean=rmp, running_variance=rvp, bn_ops="bn_activation",
            activation="relu", y=out_y, save_mean=sm, save_inv_variance=si), forms["fwd_ex"]),
    ]


def batch_norm_after_linear(rng, size, Case):
    """Batch norm of N x C x 1 x 1 (after a linear layer): each channel's sums run down a column
    of [N, C]. Its own generator, so the other cases' inputs stay as they were."""
    torch = _torch()
    rng = np.random.default_rng(1)
    shape = by_size(size, (4, 16, 1, 1), (1024, 256, 1, 1), (8192, 1024, 1, 1))
    c = shape[1]
    x, dy = rng.standard_normal(shape).astype(F32), rng.standard_normal(shape).astype(F32)
    g, b = rng.uniform(0.5, 2, c).astype(F32), rng.standard_normal(c).astype(F32)
    mean, inv = x.mean((0, 2, 3)).astype(F32), (1 / np.sqrt(x.var((0, 2, 3)) + 1e-5)).astype(F32)
    p = lambda a: a.reshape(1, c, 1, 1).copy()  # noqa: E731
    dx, dg, db, out_y, sm, si = (np.empty(a, F32) for a in (shape, (1, c, 1, 1), (1, c, 1, 1), shape,
                                                              (1, c, 1, 1), (1, c, 1, 1)))
    forms = {"bwd": {}, "fwd": {}}
    if torch is not None:
        xt, dyt, gt, bt, mt, it = _t(x), _t(dy), _t(g), _t(b), _t(mean), _t(inv)
        outs = dict(out0=torch.empty_like(xt), out1=torch.empty_like(gt), out2=torch.empty_like(gt))
        forms["bwd"] = aten_forms(torch, "native_batch_norm_backward", (dyt, xt, gt, None, None, mt, it, True, 1e-5,
                                                                        [True, True, True]), "out", **outs)
        forms["fwd"] = aten_forms(torch, "native_batch_norm", (xt, gt, bt, None, None, True, 0.1, 1e-5), "out",
                                  out=outs["out0"], save_mean=torch.empty_like(gt), save_invstd=torch.empty_like(gt))
    bwd, fwd = _kernel("batch_norm_backward"), _kernel("batch_norm_forward_training")
    gp, bp, mp, ip = p(g), p(b), p(mean), p(inv)
    size = f"{'x'.join(map(str, shape))} spatial (after a linear layer)"
    return [
        Case("batch_norm_backward", size, 12 * x.size, lambda: bwd(
            x=x, dy=dy, bn_scale=gp, saved_mean=mp, saved_inv_variance=ip, dx=dx, d_bn_scale=dg, d_bn_bias=db),
            forms["bwd"]),
        Case("batch_norm_forward_training", size, 8 * x.size, lambda: fwd(
            x=x, bn_scale=gp, bn_bias=bp, y=out_y, save_mean=sm, save_inv_variance=si), forms["fwd"]),
    ]


def group_norm(rng, size, Case):
    torch = _torch()
    shape, x, dy, g, b = _bn_inputs(rng, size)
    n, c, hw, groups = shape[0], shape[1], shape[2] * shape[3], 8
    size = "x".join(map(str, shape))
    xg = x.reshape(n, groups, -1).astype(np.float64)
    mean = xg.mean(2).astype(F32)
    rstd = (1 / np.sqrt(xg.var(2) + 1e-5)).astype(F32)
    dx, dg, db = np.empty_like(x), np.empty((1, c, 1, 1), F32), np.empty((1, c, 1, 1), F32)
    out_y, sm, si = np.empty_like(x), np.empty((n, groups), F32), np.empty((n, groups), F32)
    forms = {"bwd": {}, "fwd": {}}
    if torch is not None:
        xt, dyt, gt, bt, mt, rt = _t(x), _t(dy), _t(g), _t(b), _t(mean), _t(rstd)
        y_or_dx = torch.empty_like(xt)
        forms["bwd"] = aten_forms(torch, "native_group_norm_backward", (dyt, xt, mt, rt, gt, n, c, hw, groups,
                                                                        [True, True, True]), "out",
                                  out0=y_or_dx, out1=torch.empty_like(gt), out2=torch.empty_like(gt))
        forms["fwd"] = aten_forms(torch, "native_group_norm", (xt, gt, bt, n, c, hw, groups, 1e-5), "out",
                                  out0=y_or_dx, out1=torch.empty_like(mt), out2=torch.empty_like(rt))
    bwd, fwd = _kernel("normalization_backward"), _kernel("normalization_forward_training")
    gp, bp = g.reshape(1, c, 1, 1).copy(), b.reshape(1, c, 1, 1).copy()
    return [
        Case("normalization_backward", f"{size} group norm G={groups}", 12 * x.size, lambda: bwd(
            x=x, dy=dy, bn_scale=gp, saved_mean=mean, saved_inv_variance=rstd, group_cnt=groups, dx=dx,
            d_bn_scale=dg, d_bn_bias=db), forms["bwd"]),
        Case("normalization_forward_training", f"{size} group norm G={groups}", 8 * x.size, lambda: fwd(
            x=x, bn_scale=gp, bn_bias=bp, group_cnt=groups, y=out_y, save_mean=sm, save_inv_variance=si),
            forms["fwd"]),
    ]


def dropout(rng, size, Case):
    shape = by_size(size, (1, 4, 16, 16), (4, 16, 64, 64), (16, 64, 128, 128))
    dy = rng.standard_normal(shape).astype(F32)
    mask = (rng.uniform(size=shape) > 0.1).astype(np.uint8)
    dx = np.empty_like(dy)
    k = _kernel("dropout_backward")
    torch = _torch()
    forms = {}
    if torch is not None:
        dyt, mt = _t(dy), _t(mask.astype(bool))
        forms = aten_forms(torch, "native_dropout_backward", (dyt, mt, 1 / 0.9), "out", out=torch.empty_like(dyt))
    return [Case("dropout_backward", f"{_count(dy.size)} f32, p=0.1", 9 * dy.size,
                 lambda: k(dy=dy, reserve_space=mask, dropout=0.1, dx=dx), forms, lambda: dy * mask / 0.9)]


def lrn(rng, size, Case):
    torch = _torch()
    shape = by_size(size, (1, 8, 6, 6), (4, 32, 28, 28), (16, 64, 28, 28))
    x = rng.standard_normal(shape).astype(F32)
    dy = rng.standard_normal(shape).astype(F32)
    s = 2.0 + 1e-4 / 5 * np.ones_like(x)
    y = (x * s ** -0.75).astype(F32)
    dx = np.empty_like(x)
    k = _kernel("lrn_cross_channel_backward")
    forms = {}
    if torch is not None:
        import torch.nn.functional as F

        forms = {"autograd of F.local_response_norm": _grad_of(lambda t: F.local_response_norm(t, 5, 1e-4, 0.75, 2.0),
                                                               [x], dy)}
    return [Case("lrn_cross_channel_backward", f"{'x'.join(map(str, shape))} n=5", 16 * x.size,
                 lambda: k(y=y, dy=dy, x=x, dx=dx), forms)]


def divisive(rng, size, Case):
    torch = _torch()
    shape = by_size(size, (1, 4, 6, 6), (4, 16, 28, 28), (16, 32, 28, 28))
    x = rng.standard_normal(shape).astype(F32)
    means = rng.standard_normal(shape).astype(F32) * 0.1
    dy = rng.standard_normal(shape).astype(F32)
    dx, dm = np.empty_like(x), np.empty_like(x)
    k = _kernel("divisive_normalization_backward")
    forms = {}
    if torch is not None:
        import torch.nn.functional as F

        n, alpha, beta, kk = 3, 1e-4, 0.75, 2.0

        def forward(xt, mt):
            d = xt - mt
            window = F.avg_pool2d(d * d, n, 1, n // 2, count_include_pad=True) * n * n
            return xt * (kk + alpha / n**2 * window) ** (-beta)

        forms = {"autograd of the composite": _grad_of(forward, [x, means], dy)}
    return [Case("divisive_normalization_backward", f"{'x'.join(map(str, shape))} n=3", 20 * x.size,
                 lambda: k(x=x, means=means, dy=dy, lrn_n=3, dx=dx, d_means=dm), forms)]


def pooling(rng, size, Case):
    torch = _torch()
    k = _kernel("pooling_backward")
    cases = []
    configs = [("max", (32, 64, 56, 56), (3, 3), (2, 2), (1, 1)), ("avg_include_padding", (32, 64, 56, 56), (3, 3),
                                                                     (2, 2), (1, 1)),
               ("max", (8, 16, 16, 56, 56), (2, 2, 2), (2, 2, 2), (0, 0, 0)),
               ("avg_include_padding", (8, 16, 16, 56, 56), (2, 2, 2), (2, 2, 2), (0, 0, 0))]
    for mode, shape, window, stride, padding in configs:
        shape = by_size(size, (1, 4) + (8,) * (len(shape) - 2), (2,) + shape[1:], shape)
        x = rng.standard_normal(shape).astype(F32)
        three = len(shape) == 5
        xt = _t(x) if torch is not None else None
        forms = {}
        if torch is not None and mode == "max":
            fwd = torch.ops.aten.max_pool3d_with_indices if three else torch.ops.aten.max_pool2d_with_indices
            yt, idx = fwd(xt, list(window), list(stride), list(padding))
            dy = rng.standard_normal(tuple(yt.shape)).astype(F32)
            back = f"max_pool{len(window)}d_with_indices_backward"
            forms = aten_forms(torch, back, (_t(dy), xt, list(window), list(stride), list(padding), [1] * len(window),
                                             False, idx), "grad_input", grad_input=torch.empty_like(xt))
        elif torch is not None:
            fwd = torch.ops.aten.avg_pool3d if three else torch.ops.aten.avg_pool2d
            yt = fwd(xt, list(window), list(stride), list(padding), False, True)
            dy = rng.standard_normal(tuple(yt.shape)).astype(F32)
            back = f"avg_pool{len(window)}d_backward"
            forms = aten_forms(torch, back, (_t(dy), xt, list(window), list(stride), list(padding), False, True, None),
                               "grad_input", grad_input=torch.empty_like(xt))
        else:
            continue
        y = yt.numpy()
        dx = np.empty_like(x)
        label = f"{mode.split('_')[0]} {len(window)}-D {'x'.join(map(str, shape))} w{window[0]} s{stride[0]}"
        cases.append(Case("pooling_backward", label, 8 * x.size + 8 * y.size,
                          lambda xx=x, yy=y, d=dy, o=dx, m=mode, w=window, s=stride, p=padding: k(
                              y=yy, dy=d, x=xx, mode=m, window=w, stride=s, padding=p, dx=o), forms))
    return cases


def spatial_tf(rng, size, Case):
    torch = _torch()
    n, c, h, w = by_size(size, (1, 2, 8, 8), (4, 8, 32, 32), (16, 16, 64, 64))
    dgrid = rng.standard_normal((n, h, w, 2)).astype(F32)
    dtheta = np.empty((n, 2, 3), F32)
    gen = _kernel("spatial_tf_grid_generator_backward")
    x = rng.standard_normal((n, c, h, w)).astype(F32)
    grid = rng.uniform(-1.1, 1.1, (n, h, w, 2)).astype(F32)
    dy = rng.standard_normal((n, c, h, w)).astype(F32)
    dx, dg = np.empty_like(x), np.empty_like(grid)
    sampler = _kernel("spatial_tf_sampler_backward")
    forms = {"gen": {}, "sampler": {}}
    if torch is not None:
        dgt, xt, gt, dyt = _t(dgrid), _t(x), _t(grid), _t(dy)
        forms["gen"] = {"aten": lambda: torch.ops.aten.affine_grid_generator_backward(dgt, [n, c, h, w], True)}
        forms["sampler"] = aten_forms(torch, "grid_sampler_2d_backward", (dyt, xt, gt, 0, 0, True, [True, True]),
                                      "out", out0=torch.empty_like(xt), out1=torch.empty_like(gt))
    return [
        Case("spatial_tf_grid_generator_backward", f"N={n} {h}x{w}", 8 * dgrid.size,
             lambda: gen(dgrid=dgrid, dtheta=dtheta), forms["gen"]),
        Case("spatial_tf_sampler_backward", f"N={n} C={c} {h}x{w}", 4 * (3 * x.size + 2 * grid.size),
             lambda: sampler(x=x, grid=grid, dy=dy, dx=dx, dgrid=dg), forms["sampler"]),
    ]


def case_builders():
    """(op name, builder) for every library op, in SPEC order."""
    return [("nll_loss_backward", nll), ("fused_linear_cross_entropy_loss_grad", fused_linear_ce),
            ("embedding_dense_backward", embedding), ("binary_cross_entropy_grad", bce),
            ("activation_backward", activation), ("batch_norm_*", batch_norm),
            ("batch_norm_*", batch_norm_after_linear), ("normalization_*", group_norm),
            ("divisive_normalization_backward", divisive), ("dropout_backward", dropout),
            ("lrn_cross_channel_backward", lrn), ("pooling_backward", pooling), ("softmax_backward", softmax),
            ("spatial_tf_*", spatial_tf)]
