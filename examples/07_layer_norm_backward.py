"""A user-written layer norm backward: two row reductions and two column reductions.

    x̂[n, d]  = (x[n, d] - mean[n]) * rstd[n]
    g[n, d]  = dy[n, d] * γ[d]
    dγ[d]    = Σ_n dy[n, d] x̂[n, d]           (a column reduction: over rows, per feature)
    dβ[d]    = Σ_n dy[n, d]
    dx[n, d] = rstd[n] (g - Σ_d g / D - x̂ Σ_d g x̂ / D)

On cpu the column sums are interchanged: each row of dy and x streams through a stack row of 256
partial sums (`interchange-column-reductions`), instead of walking a column per feature. Checked
against torch's `native_layer_norm_backward` (or the float64 formula without torch) and timed
beside it, in interleaved rounds that each start with the other one (`tilegrad.bench.interleaved_best`),
with the load average: `python examples/07_layer_norm_backward.py [N D]`.
"""

import os
import sys

import numpy as np

import tilegrad
import tilegrad.dsl as tg
from tilegrad.bench import interleaved_best


@tg.op(outputs={"dx": tg.like("x"), "dgamma": tg.like("gamma"), "dbeta": tg.like("gamma")}, replace=True)
def layer_norm_backward(dy=tg.tensor("N D", dtype="x"), x=tg.tensor("N D"), mean=tg.tensor("N", dtype="x"),
                        rstd=tg.tensor("N", dtype="x"), gamma=tg.tensor("D", dtype="x")):
    rows, features = x.shape

    def x_hat(n, d):
        return (x[n, d] - mean[n]) * rstd[n]

    def g(n, d):
        return dy[n, d] * gamma[d]

    g_sum, gx_sum = tg.temp("g_sum", (rows,)), tg.temp("gx_sum", (rows,))
    g_sum.assign(lambda n: tg.reduce_sum(features, lambda d: g(n, d)))
    gx_sum.assign(lambda n: tg.reduce_sum(features, lambda d: g(n, d) * x_hat(n, d)))
    size = tg.cast(features, "f")
    dx = lambda n, d: rstd[n] * (g(n, d) - g_sum[n] / size - x_hat(n, d) * (gx_sum[n] / size))  # noqa: E731
    dgamma = lambda d: tg.reduce_sum(rows, lambda n: dy[n, d] * x_hat(n, d))  # noqa: E731
    dbeta = lambda d: tg.reduce_sum(rows, lambda n: dy[n, d])  # noqa: E731
    return dx, dgamma, dbeta


def inputs(rows: int, features: int, rng):
    x = rng.standard_normal((rows, features)).astype(np.float32)
    mean = x.mean(1).astype(np.float32)
    rstd = (1 / np.sqrt(x.var(1) + 1e-5)).astype(np.float32)
    gamma = rng.standard_normal(features).astype(np.float32)
    dy = rng.standard_normal((rows, features)).astype(np.float32)
    return dict(dy=dy, x=x, mean=mean, rstd=rstd, gamma=gamma)


def reference(a):
    """float64 of the formula above."""
    dy, x, mean, rstd, gamma = (a[k].astype(np.float64) for k in ("dy", "x", "mean", "rstd", "gamma"))
    x_hat = (x - mean[:, None]) * rstd[:, None]
    g = dy * gamma
    dx = rstd[:, None] * (g - g.mean(1, keepdims=True) - x_hat * (g * x_hat).mean(1, keepdims=True))
    return dx, (dy * x_hat).sum(0), dy.sum(0)


def main(rows: int = 4096, features: int = 1024) -> None:
    a = inputs(rows, features, np.random.default_rng(0))
    kernel = tilegrad.compile("layer_norm_backward", "cpu")
    outputs = (np.empty_like(a["x"]), np.empty_like(a["gamma"]), np.empty_like(a["gamma"]))
    got = kernel(**a, dx=outputs[0], dgamma=outputs[1], dbeta=outputs[2])
    for name, value, want in zip(("dx", "dgamma", "dbeta"), got, reference(a)):
        error = np.max(np.abs(value - want)) / max(1.0, np.max(np.abs(want)))
        print(f"{name:<7} max relative error vs float64: {error:.1e}")
        assert error < 1e-4, name
    functions = {"tilegrad": lambda: kernel(**a, dx=outputs[0], dgamma=outputs[1], dbeta=outputs[2])}
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the benchmarks time torch (tilegrad/bench.py)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(2)
        t = {k: torch.from_numpy(v) for k, v in a.items()}
        mean, rstd = t["mean"][:, None], t["rstd"][:, None]
        beta = torch.zeros(features)

        def aten():
            return torch.ops.aten.native_layer_norm_backward(t["dy"], t["x"], [features], mean, rstd, t["gamma"],
                                                             beta, [True, True, True])

        for value, want in zip(got, aten()):
            np.testing.assert_allclose(value, want.numpy(), rtol=1e-3, atol=1e-3)
        functions["torch"] = aten
    times = interleaved_best(functions, repeat=7)  # the best of 7 rounds, each started by the next one
    load = os.getloadavg()
    beside = ", torch at 2 threads" if "torch" in times else " (no torch to compare with)"
    print(f"measured {rows}x{features} f32, best of 7 interleaved rounds{beside}, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}:")
    print(f"  tilegrad layer_norm_backward:      {times['tilegrad'] * 1e3:.3f} ms")
    if "torch" in times:
        print(f"  torch native_layer_norm_backward: {times['torch'] * 1e3:.3f} ms "
              f"(tilegrad {times['torch'] / times['tilegrad']:.2f}x torch's speed in this run)")


if __name__ == "__main__":
    main(*(int(v) for v in sys.argv[1:3]))
