"""Benchmarks: tilegrad's JIT kernels on `cpu` next to PyTorch (1 and 2 threads) and numpy.

Times are the best of several runs after a warm-up; GB/s counts the bytes each op must move at
least (inputs read once, outputs written once). tilegrad writes into preallocated outputs, as a
training loop would (`dx=buf`); torch and numpy allocate theirs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import tilegrad


@dataclass
class Case:
    name: str
    size: str
    bytes_moved: int
    tilegrad: Callable[[], object]
    torch: Callable[[], object] | None
    numpy: Callable[[], object] | None


def best_time(fn: Callable[[], object], repeat: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _bce(rng, n):
    x = rng.uniform(0.01, 0.99, n).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    g = np.array([1.0], np.float32)
    dx = np.empty_like(x)
    kernel = tilegrad.compile("binary_cross_entropy_grad", "cpu")
    run = lambda: kernel(input_x=x, input_y=y, dloss=g, reduction="mean", dx=dx)  # noqa: E731
    torch_fn = numpy_fn = None
    try:
        import torch

        xt, yt, gt = torch.from_numpy(x), torch.from_numpy(y), torch.tensor(1.0)
        torch_fn = lambda: torch.ops.aten.binary_cross_entropy_backward(gt, xt, yt, None, 1)  # noqa: E731
    except ImportError:
        pass
    numpy_fn = lambda: g[0] * (x - y) / np.maximum(x * (1 - x), 1e-12) / n  # noqa: E731
    return Case("binary_cross_entropy_grad", f"{n} f32, mean", 3 * 4 * n, run, torch_fn, numpy_fn)


def _nll(rng, n, c):
    x = np.empty((n, c), np.float32)  # self is only read for its shape
    t = rng.integers(0, c, n).astype(np.int64)
    w = rng.uniform(0.5, 2, c).astype(np.float32)
    g = np.array([1.0], np.float32)
    tw = np.array([w[t].sum()], np.float32)
    out = np.empty((n, c), np.float32)
    kernel = tilegrad.compile("nll_loss_backward", "cpu")
    run = lambda: kernel(grad_output=g, self=x, target=t, weight=w, total_weight=tw, out=out)  # noqa: E731
    torch_fn = None
    try:
        import torch

        xt, tt, wt = torch.from_numpy(x), torch.from_numpy(t), torch.from_numpy(w)
        torch_fn = lambda: torch.ops.aten.nll_loss_backward(  # noqa: E731
            torch.tensor(1.0), xt, tt, wt, 1, -100, torch.tensor(tw[0]))
    except ImportError:
        pass

    def numpy_fn():
        result = np.zeros((n, c), np.float32)
        result[np.arange(n), t] = -w[t] / tw[0]
        return result

    return Case("nll_loss_backward", f"N={n} C={c} f32, mean", 4 * n * c + 8 * n, run, torch_fn, numpy_fn)


def _embedding(rng, n, e, num_weights, scale):
    idx = rng.integers(0, num_weights, n).astype(np.int64)
    grad = rng.standard_normal((n, e)).astype(np.float32)
    out = np.empty((num_weights, e), np.float32)
    kernel = tilegrad.compile("embedding_dense_backward", "cpu")
    run = lambda: kernel(grad=grad, indices=idx, num_weights=num_weights,  # noqa: E731
                         scale_grad_by_freq=scale, out=out)
    torch_fn = None
    try:
        import torch

        gt, it = torch.from_numpy(grad), torch.from_numpy(idx)
        torch_fn = lambda: torch.ops.aten.embedding_dense_backward(gt, it, num_weights, -1, scale)  # noqa: E731
    except ImportError:
        pass

    def numpy_fn():
        result = np.zeros((num_weights, e), np.float32)
        np.add.at(result, idx, grad)
        if scale:
            result /= np.maximum(np.bincount(idx, minlength=num_weights), 1)[:, None]
        return result

    moved = 4 * num_weights * e + 4 * n * e + 8 * n
    label = f"{n}x{e} into {num_weights}{', scaled' if scale else ''}"
    return Case("embedding_dense_backward", label, moved, run, torch_fn, numpy_fn)


def cases(quick: bool = False) -> list[Case]:
    rng = np.random.default_rng(0)
    if quick:
        return [_bce(rng, 1 << 20), _nll(rng, 1024, 4000), _embedding(rng, 1024, 256, 5000, False),
                _embedding(rng, 1024, 256, 5000, True)]
    return [_bce(rng, 16 << 20), _nll(rng, 8192, 32000), _embedding(rng, 8192, 1024, 50000, False),
            _embedding(rng, 8192, 1024, 50000, True)]


def run_benchmarks(ops: list[str] | None = None, quick: bool = False, repeat: int = 5) -> list[dict]:
    try:
        import torch
    except ImportError:
        torch = None
    rows = []
    header = (f"{'op':<26} {'size':<28} {'tilegrad ms':>11} {'GB/s':>6} {'torch1 ms':>9} {'torch2 ms':>9} "
              f"{'numpy ms':>9} {'vs torch2':>9} {'vs numpy':>8}")
    print(header)
    for case in cases(quick):
        if ops and case.name not in ops:
            continue
        ours = best_time(case.tilegrad, repeat)
        torch_times = []
        if torch is not None and case.torch is not None:
            for threads in (1, 2):
                torch.set_num_threads(threads)
                torch_times.append(best_time(case.torch, repeat))
        numpy_time = best_time(case.numpy, max(1, repeat // 2)) if case.numpy else float("nan")
        t1, t2 = (torch_times + [float("nan")] * 2)[:2]
        row = dict(op=case.name, size=case.size, tilegrad_ms=ours * 1e3, gbps=case.bytes_moved / ours / 1e9,
                   torch1_ms=t1 * 1e3, torch2_ms=t2 * 1e3, numpy_ms=numpy_time * 1e3,
                   speedup_torch2=t2 / ours, speedup_numpy=numpy_time / ours)
        rows.append(row)
        print(f"{row['op']:<26} {row['size']:<28} {row['tilegrad_ms']:>11.2f} {row['gbps']:>6.1f} "
              f"{row['torch1_ms']:>9.2f} {row['torch2_ms']:>9.2f} {row['numpy_ms']:>9.2f} "
              f"{row['speedup_torch2']:>8.2f}x {row['speedup_numpy']:>7.2f}x")
    return rows
