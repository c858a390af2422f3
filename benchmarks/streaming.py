"""Issue 7's streaming and vector-math goals, measured beside a triad in one run (2 threads each).

python benchmarks/streaming.py [ELEMENTS]   (default 2**25, about 32M float32)

Rows: BCE grad, dropout backward and activation_backward (relu, sigmoid, tanh, elu, swish),
softmax and log-softmax backward (rows of 1024) and a tanh-GELU backward written in the DSL
(examples/09) against `aten.gelu_backward(approximate="tanh")`. Each row is timed interleaved with
a STREAM triad (a = b + s c) written in the DSL and torch's (`torch.add(..., alpha=s, out=)`), best
of 5 after a warm-up: GB/s counts the minimum bytes the op moves, "of triad" divides it by the
faster triad's GB/s in that row's rounds, so a change in the machine's load hits both. "at triad"
is what "vs torch" would be if the op moved its minimum bytes at the triad's rate: where torch's
kernel runs at the machine's bandwidth too (reading its output's lines before it writes them),
no kernel that moves those bytes gets above it.
"""

import importlib
import os
import sys
from pathlib import Path

import numpy as np

import tilegrad
import tilegrad.dsl as tg
from tilegrad.bench import interleaved_best
from tilegrad.bench_cases import ACTIVATION_ATEN, ACTIVATION_BYTES, activation_forms, aten_forms

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as benchmarks/run.py: no spinning torch workers
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
user_ops = importlib.import_module("09_user_backward_ops")


@tg.op(outputs={"a": tg.like("b")}, replace=True)
def stream_triad(b=tg.tensor("N"), c=tg.tensor("N", dtype="b"), s=tg.attr(3.0, runtime=True)):
    """The STREAM triad: a = b + s c (12 bytes per float32 element)."""
    return b + s * c


def rows(n: int, rng: np.random.Generator):
    """(name, bytes moved, tilegrad call, torch's forms) per row; the triad first."""
    import torch

    f32 = np.float32
    b, c, a = rng.standard_normal(n).astype(f32), rng.standard_normal(n).astype(f32), np.empty(n, f32)
    bt, ct, at = torch.from_numpy(b), torch.from_numpy(c), torch.empty(n)
    triad = tilegrad.compile("stream_triad", "cpu")
    yield "triad", 12 * n, lambda: triad(b=b, c=c, s=3.0, a=a), {"out=": lambda: torch.add(bt, ct, alpha=3.0, out=at)}

    x = rng.uniform(0.01, 0.99, n).astype(f32)
    y = rng.uniform(0, 1, n).astype(f32)
    g, dx = np.ones(1, f32), np.empty(n, f32)
    xt, yt, out = torch.from_numpy(x), torch.from_numpy(y), torch.empty(n)
    bce = tilegrad.compile("binary_cross_entropy_grad", "cpu")
    yield ("binary_cross_entropy_grad", 12 * n, lambda: bce(input_x=x, input_y=y, dloss=g, dx=dx),
           aten_forms(torch, "binary_cross_entropy_backward", (torch.tensor(1.0), xt, yt, None, 1), "grad_input",
                      grad_input=out))

    shape = (n // (64 * 128 * 128), 64, 128, 128)
    dy = rng.standard_normal(shape).astype(f32)
    mask = (rng.uniform(size=shape) > 0.1).astype(np.uint8)
    dx4 = np.empty(shape, f32)
    dyt, mt = torch.from_numpy(dy), torch.from_numpy(mask.astype(bool))
    dropout = tilegrad.compile("dropout_backward", "cpu")
    yield ("dropout_backward", 9 * dy.size, lambda: dropout(dy=dy, reserve_space=mask, dropout=0.1, dx=dx4),
           aten_forms(torch, "native_dropout_backward", (dyt, mt, 1 / 0.9), "out", out=torch.empty_like(dyt)))

    x4 = rng.standard_normal(shape).astype(f32)
    y4 = np.tanh(x4)
    x4t, y4t = torch.from_numpy(x4), torch.from_numpy(y4)
    activation = tilegrad.compile("activation_backward", "cpu")
    for mode in ACTIVATION_ATEN:
        yield (f"activation_backward {mode}", ACTIVATION_BYTES[mode] * dy.size,
               lambda m=mode: activation(y=y4, dy=dy, x=x4, mode=m, dx=dx4),
               activation_forms(torch, mode, dyt, x4t, y4t))

    rows_ = (n // 1024, 1024, 1, 1)
    ys = rng.uniform(0, 1, rows_).astype(f32)
    dys = rng.standard_normal(rows_).astype(f32)
    dxs = np.empty(rows_, f32)
    yst, dyst = torch.from_numpy(ys.reshape(rows_[:2])), torch.from_numpy(dys.reshape(rows_[:2]))
    softmax = tilegrad.compile("softmax_backward", "cpu")
    for algorithm, aten in (("accurate", "_softmax_backward_data"), ("log", "_log_softmax_backward_data")):
        yield (f"softmax_backward {algorithm}", 12 * ys.size,
               lambda a=algorithm: softmax(y=ys, dy=dys, mode="instance", algorithm=a, dx=dxs),
               aten_forms(torch, aten, (dyst, yst, 1, torch.float32), "out",
                          **{"out" if algorithm == "log" else "grad_input": torch.empty_like(yst)}))

    gelu = tilegrad.compile("gelu_tanh_backward", "cpu")
    xg, dyg, dxg = rng.standard_normal(n).astype(f32), rng.standard_normal(n).astype(f32), np.empty(n, f32)
    xgt, dygt = torch.from_numpy(xg), torch.from_numpy(dyg)
    yield ("gelu_tanh_backward (DSL, examples/09)", 12 * n, lambda: gelu(dy=dyg, x=xg, dx=dxg),
           {"aten": lambda: torch.ops.aten.gelu_backward(dygt, xgt, approximate="tanh"),
            "aten out=": lambda: torch.ops.aten.gelu_backward.grad_input(dygt, xgt, approximate="tanh",
                                                                          grad_input=torch.empty_like(xgt))})


def main(n: int = 1 << 25) -> None:
    import torch

    torch.set_num_threads(2)
    print(f"{n} float32 elements, 2 threads each; load average {os.getloadavg()[0]:.2f} before the run")
    print("| op | tilegrad ms | GB/s | triad GB/s | of triad | torch ms | vs torch | at triad |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    (_, triad_bytes, triad, triad_torch), *ops = rows(n, np.random.default_rng(0))
    for name, moved, ours, forms in ops:
        torch_forms = {f"torch {label}": fn for label, fn in forms.items()}
        best = interleaved_best({"tilegrad": ours, **torch_forms, "triad": triad,
                                 "triad torch": triad_torch["out="]})
        theirs = min(best[label] for label in torch_forms)
        rate = moved / best["tilegrad"] / 1e9
        stream = triad_bytes / min(best["triad"], best["triad torch"]) / 1e9
        print(f"| {name} | {best['tilegrad'] * 1e3:.2f} | {rate:.1f} | {stream:.1f} | {rate / stream:.0%} | "
              f"{theirs * 1e3:.2f} | {theirs / best['tilegrad']:.2f}x | {theirs / (moved / stream / 1e9):.2f}x |")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
