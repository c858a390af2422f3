"""Streaming stores on and off: the same kernels on `cpu` and on a copy of it that never streams.

    python benchmarks/streaming_stores.py [SHAPE ...]      (default: 16x64x16x1024 1024x16384)

activation_backward in every mode and NLL backward, interleaved, best of 10 (milliseconds). A shape
of rank 2 is taken as [rows, row] for the activations ([1, 1, rows, row]).
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

import tilegrad
from tilegrad.targets import get_target, register_target

PLAIN = register_target(dataclasses.replace(get_target("cpu"), name="cpu-no-streaming", stream_store_bytes=0),
                        replace=True)


def best_of(calls: dict, rounds: int = 10) -> dict:
    best = {name: float("inf") for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main(shapes: list[tuple[int, ...]]) -> None:
    print("| op | shape | streaming ms | normal stores ms | gain |\n|---|---|---:|---:|---:|")
    kernels = {t: tilegrad.compile("activation_backward", t) for t in ("cpu", PLAIN)}
    rng = np.random.default_rng(0)
    for shape in shapes:
        shape = (1, 1) + shape if len(shape) == 2 else shape
        x = rng.standard_normal(shape).astype(np.float32)
        dy, y, dx = rng.standard_normal(shape).astype(np.float32), np.tanh(x), np.empty_like(x)
        for mode in ("relu", "sigmoid", "tanh", "elu", "swish"):
            times = best_of({t: (lambda k=k: k(y=y, dy=dy, x=x, dx=dx, mode=mode)) for t, k in kernels.items()})
            print(f"| activation_backward {mode} | {'x'.join(map(str, shape))} | {times['cpu'] * 1e3:.2f} | "
                  f"{times[PLAIN] * 1e3:.2f} | {times[PLAIN] / times['cpu']:.2f}x |")
    n, c = 8192, 32000
    args = dict(grad_output=np.ones(1, np.float32), self=np.empty((n, c), np.float32),
                target=rng.integers(0, c, n), weight=rng.uniform(0.5, 2, c).astype(np.float32),
                total_weight=np.array([float(n)], np.float32), out=np.empty((n, c), np.float32))
    nll = {t: tilegrad.compile("nll_loss_backward", t) for t in ("cpu", PLAIN)}
    times = best_of({t: (lambda k=k: k(**args)) for t, k in nll.items()})
    print(f"| nll_loss_backward | {n}x{c} | {times['cpu'] * 1e3:.2f} | {times[PLAIN] * 1e3:.2f} | "
          f"{times[PLAIN] / times['cpu']:.2f}x |")


if __name__ == "__main__":
    given = [tuple(int(d) for d in a.split("x")) for a in sys.argv[1:]]
    main(given or [(16, 64, 16, 1024), (1024, 16384)])
