"""batch_norm_backward (SPEC 6.6) on cpu next to aten.native_batch_norm_backward (2 threads).

python benchmarks/batch_norm.py — the reduction-heavy ops are correct but not yet tuned; this keeps
the gap measured.
"""

import numpy as np

from tilegrad import compile
from tilegrad.bench import best_time


def main() -> None:
    import torch

    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 64, 56, 56)).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    gamma = np.ones((1, 64, 1, 1), np.float32)
    mean = x.mean((0, 2, 3), keepdims=True).astype(np.float32)
    inv = (1 / np.sqrt(x.var((0, 2, 3), keepdims=True) + 1e-5)).astype(np.float32)
    outputs = [np.empty_like(x), np.empty_like(gamma), np.empty_like(gamma)]
    kernel = compile("batch_norm_backward", "cpu")
    ours = best_time(lambda: kernel(x=x, dy=dy, bn_scale=gamma, saved_mean=mean, saved_inv_variance=inv,
                                    dx=outputs[0], d_bn_scale=outputs[1], d_bn_bias=outputs[2]), 5)
    torch.set_num_threads(2)
    args = (torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(gamma.ravel()), None, None,
            torch.from_numpy(mean.ravel()), torch.from_numpy(inv.ravel()), True, 1e-5, [True, True, True])
    theirs = best_time(lambda: torch.ops.aten.native_batch_norm_backward(*args), 5)
    print(f"batch_norm_backward 32x64x56x56 f32 spatial: tilegrad {ours * 1e3:.2f} ms, "
          f"torch (2 threads) {theirs * 1e3:.2f} ms, ratio {theirs / ours:.2f}x")


if __name__ == "__main__":
    main()
