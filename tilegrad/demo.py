"""The main job: compile, plan and run the library's ops on two targets, and show the table."""

from __future__ import annotations

import time

import numpy as np

import tilegrad
from tilegrad.references import reference, reference_name

TARGETS = ("cpu", "ascend910b")


def _cases(rng: np.random.Generator):
    x = rng.uniform(0.01, 0.99, 1 << 20).astype(np.float32)
    yield "binary_cross_entropy_grad", dict(
        input_x=x, input_y=rng.uniform(0, 1, x.shape).astype(np.float32),
        weight=rng.uniform(0.5, 2, x.shape).astype(np.float32), dloss=np.array([1.5], np.float32)), {}
    n, c = 4096, 1000
    target = rng.integers(0, c, n).astype(np.int64)
    target[::17] = -100
    yield "nll_loss_backward", dict(
        grad_output=rng.standard_normal(n).astype(np.float32), self=rng.standard_normal((n, c)).astype(np.float32),
        target=target, weight=rng.uniform(0.5, 2, c).astype(np.float32),
        total_weight=np.array([1.0], np.float32)), dict(reduction="none")
    yield "embedding_dense_backward", dict(
        grad=rng.standard_normal((64, 32, 256)).astype(np.float32),
        indices=rng.integers(0, 5000, (64, 32)).astype(np.int64)), dict(num_weights=5000, scale_grad_by_freq=True)


def main() -> None:
    from tqdm import tqdm

    rng = np.random.default_rng(0)
    print(f"tilegrad {tilegrad.__version__}: ops {', '.join(tilegrad.list_ops())}")
    print(f"{'op':<28} {'target':<11} {'blocks':>6} {'UB used / capacity':>21} {'max error':>10} "
          f"{'compile':>8} {'run':>9}")
    runs = [(case, target) for case in _cases(rng) for target in TARGETS]
    expected = {}
    for (name, arrays, attrs), target in tqdm(runs, desc="compiling and running", leave=False, disable=None):
        if name not in expected:
            expected[name] = reference(name, arrays, {**{n: s.default for n, s in tilegrad.get_op(name).attrs.items()
                                                         if not s.required}, **attrs})
        kernel = tilegrad.compile(name, target)
        start = time.perf_counter()
        kernel(**arrays, **attrs)
        compile_time = time.perf_counter() - start
        start = time.perf_counter()
        out = kernel(**arrays, **attrs)
        run_time = time.perf_counter() - start
        report = kernel.plan(**arrays, **attrs)
        error = float(np.max(np.abs(out.astype(np.float64) - expected[name])))
        ub = (f"{report.ub_used} / {report.ub_bytes - report.ub_reserve}" if report.staged
              else "- (cache tiles)")
        tqdm.write(f"{name:<28} {target:<11} {report.block_dim:>6} {ub:>21} {error:>10.2e} "
                   f"{compile_time:>7.2f}s {run_time * 1e3:>7.2f}ms")
    print(f"(max error is against {reference_name()}; compile includes the first run; "
          f"see `tilegrad show OP --stage all` and `tilegrad plan OP --target T`)")


if __name__ == "__main__":
    main()
