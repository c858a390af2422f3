"""The three products of a linear layer written in the DSL (the forms of the fused linear
cross-entropy grad) next to numpy's matmul (OpenBLAS), both into preallocated outputs, interleaved,
best of 10: issue 6's GEMM goal (>= 50% of numpy).

python benchmarks/dot_products.py [B H V]   (default 128 256 2000)
"""

import os
import sys

# OpenBLAS's workers spin after each matmul for a while by default, taking the cores from whatever
# runs next (here: tilegrad's blocks, x @ w.T at 1.6 or 3.5 ms from run to run); as torch's OpenMP
# workers in benchmarks/run.py, they wait passively (numpy's own times are the same either way)
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402  (after the OpenBLAS setting, which it reads when it loads)

import tilegrad.dsl as tg
from tilegrad import compile
from tilegrad.bench import interleaved_best


@tg.op(outputs={"logits": tg.shaped("B", "V", dtype="x")})
def bench_logits(x=tg.tensor("B H"), w=tg.tensor("V H", dtype="x")):
    """logits = x @ w.T: a dot product per element."""
    return lambda i, j: tg.reduce_sum(x.shape[1], lambda k: x[i, k] * w[j, k])


@tg.op(outputs={"dx": tg.shaped("B", "H", dtype="g")})
def bench_grad_input(g=tg.tensor("B V"), w=tg.tensor("V H", dtype="g")):
    """dx = g @ w: a sum down w's columns."""
    return lambda i, h: tg.reduce_sum(w.shape[0], lambda v: g[i, v] * w[v, h])


@tg.op(outputs={"dw": tg.shaped("V", "H", dtype="g")})
def bench_grad_weight(g=tg.tensor("B V"), x=tg.tensor("B H", dtype="g")):
    """dw = g.T @ x: a sum down both operands' columns."""
    return lambda v, h: tg.reduce_sum(g.shape[0], lambda i: g[i, v] * x[i, h])


def main(rows: int = 128, hidden: int = 256, vocab: int = 2000) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, hidden)).astype(np.float32)
    w = rng.standard_normal((vocab, hidden)).astype(np.float32)
    g = rng.standard_normal((rows, vocab)).astype(np.float32)
    # both write into preallocated outputs, as a training step would (and as benchmarks/run.py times)
    logits, dx, dw = (np.empty((rows, vocab), np.float32), np.empty((rows, hidden), np.float32),
                      np.empty((vocab, hidden), np.float32))
    numpy_out = [np.empty_like(a) for a in (logits, dx, dw)]
    cases = {
        "x @ w.T": (compile("bench_logits", "cpu"), dict(x=x, w=w, logits=logits),
                    lambda: np.matmul(x, w.T, out=numpy_out[0])),
        "g @ w": (compile("bench_grad_input", "cpu"), dict(g=g, w=w, dx=dx), lambda: np.matmul(g, w, out=numpy_out[1])),
        "g.T @ x": (compile("bench_grad_weight", "cpu"), dict(g=g, x=x, dw=dw),
                    lambda: np.matmul(g.T, x, out=numpy_out[2])),
    }
    flops = 2 * rows * hidden * vocab
    print(f"B={rows} H={hidden} V={vocab} f32, {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}")
    for name, (kernel, args, numpy_form) in cases.items():
        best = interleaved_best({"tilegrad": lambda k=kernel, a=args: k(**a), "numpy": numpy_form}, repeat=10)
        ours, theirs = flops / best["tilegrad"] / 1e9, flops / best["numpy"] / 1e9
        print(f"{name:8} tilegrad {best['tilegrad'] * 1e3:6.2f} ms {ours:6.1f} GFLOP/s | numpy "
              f"{best['numpy'] * 1e3:6.2f} ms {theirs:6.1f} GFLOP/s | {ours / theirs:.0%} of numpy")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
