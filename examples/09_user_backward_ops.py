"""Four backward ops a user writes in the DSL, each checked against torch (layer norm is example 07).

    mse_loss_backward               dx = g * 2 (x - t)            (/ numel for mean)
    gelu_tanh_backward              u = k (x + a x**3), t = tanh u,
                                    dx = dy (½(1 + t) + ½ x (1 - t**2) k (1 + 3a x**2))
    gelu_erf_backward               dx = dy (Φ(x) + x φ(x)),  Φ(x) = ½(1 + erf(x / √2)),  φ(x) = exp(-x**2 / 2) / √(2π)
    label_smoothed_cross_entropy_backward
                                    dx[n, c] = g / valid · (softmax(z)[n, c] - (1 - ε)[c = t[n]] - ε / C),
                                    0 on rows whose target is ignore_index; valid = rows not ignored (mean)

They use the DSL's `**`, `tg.erf`, `tg.reduce_max`, comparisons with `.eq()` / `.ne()` and `~`.
`python examples/09_user_backward_ops.py` checks each on cpu and ascend910b against torch in float64.
"""

import math

import numpy as np

import tilegrad
import tilegrad.dsl as tg

REDUCTIONS = dict(choices=("none", "mean", "sum"), aliases={0: "none", 1: "mean", 2: "sum"})


@tg.op(outputs={"grad_input": tg.like("self")}, replace=True)
def mse_loss_backward(grad_output=tg.tensor("*S", tg.ONE, dtype="self"), self=tg.tensor("*S"),
                      target=tg.tensor("*S", dtype="self"), reduction=tg.attr("mean", **REDUCTIONS)):
    """dx = g * 2 (x - t), divided by numel for mean (torch's mse_loss_backward)."""
    g = grad_output if reduction == "none" else grad_output.item()
    dx = g * 2.0 * (self - target)
    return dx / self.numel if reduction == "mean" else dx


@tg.op(outputs={"dx": tg.like("x")}, replace=True)
def gelu_tanh_backward(dy=tg.tensor("*S", dtype="x"), x=tg.tensor("*S")):
    """GELU(x) = ½ x (1 + tanh(k (x + a x³))), k = √(2/π), a = 0.044715."""
    k, a = math.sqrt(2.0 / math.pi), 0.044715
    t = tg.tanh(k * (x + a * x ** 3))
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t ** 2) * k * (1.0 + 3.0 * a * x ** 2))


@tg.op(outputs={"dx": tg.like("x")}, replace=True)
def gelu_erf_backward(dy=tg.tensor("*S", dtype="x"), x=tg.tensor("*S")):
    """GELU(x) = x Φ(x): dx = dy (Φ(x) + x φ(x))."""
    cdf = 0.5 * (1.0 + tg.erf(x * (1.0 / math.sqrt(2.0))))
    pdf = tg.exp(-0.5 * x ** 2) * (1.0 / math.sqrt(2.0 * math.pi))
    return dy * (cdf + x * pdf)


@tg.op(outputs={"dx": tg.like("logits")}, replace=True)
def label_smoothed_cross_entropy_backward(
    grad=tg.tensor(tg.ONE, dtype="logits"),
    logits=tg.tensor("N C"),
    target=tg.tensor("N", dtype=("int32", "int64")),
    smoothing=tg.attr(0.1, runtime=True),
    ignore_index=tg.attr(-100, runtime=True),
):
    """The gradient of mean cross-entropy with label smoothing ε (torch's F.cross_entropy with
    label_smoothing=ε, reduction="mean"): softmax minus the smoothed one-hot target, over the
    number of rows whose target is not ignore_index."""
    rows, classes = logits.shape
    kept = target.ne(ignore_index)
    valid = tg.temp("valid", (1,))
    valid.assign(lambda _: tg.reduce_sum(rows, lambda n: tg.where(target[n].ne(ignore_index), 1.0, 0.0)))
    row_max, row_sum = tg.temp("row_max", (rows,)), tg.temp("row_sum", (rows,))
    row_max.assign(lambda n: tg.reduce_max(classes, lambda c: logits[n, c]))
    row_sum.assign(lambda n: tg.reduce_sum(classes, lambda c: tg.exp(logits[n, c] - row_max[n])))
    scale = grad.item() / valid[0]

    def dx(n, c):
        softmax = tg.exp(logits[n, c] - row_max[n]) / row_sum[n]
        smoothed = tg.where(target[n].eq(c), 1.0 - smoothing, 0.0) + smoothing / tg.cast(classes, "f")
        return tg.where(~kept[n], 0.0, scale * (softmax - smoothed))

    return dx


def cases(rng):
    """(op, float32 inputs, attributes, torch's float64 result on the same values) for each op."""
    import torch
    import torch.nn.functional as F

    x = rng.standard_normal((64, 300)).astype(np.float32)
    t = rng.standard_normal((64, 300)).astype(np.float32)
    dy = rng.standard_normal((64, 300)).astype(np.float32)
    g = np.array(0.7, np.float32)
    tx, tt, tdy, tg_ = (torch.from_numpy(a).double() for a in (x, t, dy, g))
    labels = rng.integers(0, 300, 64)
    labels[[3, 10]] = -100
    yield ("mse_loss_backward", dict(grad_output=g, self=x, target=t), {},
           torch.ops.aten.mse_loss_backward(tg_, tx, tt, 1))
    yield ("mse_loss_backward", dict(grad_output=dy, self=x, target=t), dict(reduction="none"),
           torch.ops.aten.mse_loss_backward(tdy, tx, tt, 0))
    yield ("gelu_tanh_backward", dict(dy=dy, x=x), {}, torch.ops.aten.gelu_backward(tdy, tx, approximate="tanh"))
    yield ("gelu_erf_backward", dict(dy=dy, x=x), {}, torch.ops.aten.gelu_backward(tdy, tx, approximate="none"))
    logits = tx.clone().requires_grad_()
    F.cross_entropy(logits, torch.from_numpy(labels), label_smoothing=0.2).backward(tg_)
    yield ("label_smoothed_cross_entropy_backward", dict(grad=g, logits=x, target=labels), dict(smoothing=0.2),
           logits.grad)


def main() -> None:
    rng = np.random.default_rng(0)
    for name, inputs, attrs, expected in cases(rng):
        for target in ("cpu", "ascend910b"):
            got = tilegrad.compile(name, target)(**inputs, **attrs)
            error = float(np.max(np.abs(got - expected.numpy())))
            print(f"{name:<38} {str(attrs):<22} {target:<11} max |error| vs torch {error:.1e}")
            np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    main()
