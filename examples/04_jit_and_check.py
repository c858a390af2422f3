"""JIT the library's ops and check them against PyTorch's ATen backward ops."""

import numpy as np

import tilegrad

try:
    import torch
except ImportError:
    torch = None

rng = np.random.default_rng(0)
n, c = 512, 1000
x = rng.standard_normal((n, c)).astype(np.float32)
target = rng.integers(0, c, n).astype(np.int64)
weight = rng.uniform(0.5, 2.0, c).astype(np.float32)
total_weight = np.array([weight[target].sum()], np.float32)
grad = np.array([1.0], np.float32)

for device in ("cpu", "ascend910b", "mt7004"):
    out = tilegrad.compile("nll_loss_backward", device)(
        grad_output=grad, self=x, target=target, weight=weight, total_weight=total_weight, reduction="mean")
    if torch is not None:
        expected = torch.ops.aten.nll_loss_backward(
            torch.tensor(1.0), torch.from_numpy(x), torch.from_numpy(target), torch.from_numpy(weight), 1, -100,
            torch.tensor(total_weight[0])).numpy()
        print(f"nll_loss_backward on {device:<11} max |error| {np.max(np.abs(out - expected)):.2e}")

bad = target.copy()
bad[3] = c  # out of range: raises, never writes out of bounds
try:
    tilegrad.compile("nll_loss_backward", "cpu")(grad_output=grad, self=x, target=bad, total_weight=total_weight)
except tilegrad.IndexOutOfRangeError as error:
    print(f"refused: {error}")
