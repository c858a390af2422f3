"""A reduction over an axis, kept in a temporary: softmax backward over the last dim.

    s[n]     = Σ_c dy[n, c] * y[n, c]          (a tg.reduce inside a compute)
    dx[n, c] = y[n, c] * (dy[n, c] - s[n])

The temporary lives in the workspace (its size follows N at run time); each stage is its own
loop nest, and stages run one after the other over all cores.
"""

import numpy as np

import tilegrad
import tilegrad.dsl as tg


@tg.op(outputs={"dx": tg.like("y")}, replace=True)
def softmax_backward_last_dim(y=tg.tensor("N C"), dy=tg.tensor("N C", dtype="y")):
    n_rows, classes = y.shape
    s = tg.temp("s", (n_rows,), "float32")
    s.assign(lambda n: tg.reduce_sum(classes, lambda c: dy[n, c] * y[n, c]))
    return lambda n, c: y[n, c] * (dy[n, c] - s[n])


def main() -> None:
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((300, 77))
    y = (np.exp(logits) / np.exp(logits).sum(1, keepdims=True)).astype(np.float32)
    dy = rng.standard_normal((300, 77)).astype(np.float32)
    expected = y * (dy - (dy * y).sum(1, keepdims=True))
    for target in ("cpu", "ascend910b", "metax-c500"):
        kernel = tilegrad.compile("softmax_backward_last_dim", target)
        got = kernel(y=y, dy=dy)
        print(f"{target:<11} workspace {kernel.workspace_size(y=y, dy=dy)} B, "
              f"max |error| {np.max(np.abs(got - expected)):.2e}")
        assert np.allclose(got, expected, rtol=1e-4, atol=1e-5)
    print(tilegrad.compile("softmax_backward_last_dim", "cpu").ir("loops", y=y, dy=dy))


if __name__ == "__main__":
    main()
