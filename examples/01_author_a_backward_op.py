"""Author a backward op that is not in the library, see it at every stage, plan it, run it.

smooth_l1_loss_backward in a dozen lines of DSL: the math reads like the formula, the compiler
does the loops, the core split, the UB tiles and the JIT.
"""

import numpy as np

import tilegrad
import tilegrad.dsl as tg


@tg.op(outputs={"grad_input": tg.like("self")}, replace=True)
def smooth_l1_loss_backward(
    grad_output=tg.tensor("*S", tg.ONE, dtype="self"),
    self=tg.tensor("*S"),
    target=tg.tensor("*S", dtype="self"),
    reduction=tg.attr("mean", ("none", "mean", "sum"), {0: "none", 1: "mean", 2: "sum"}),
    beta=tg.attr(1.0, runtime=True),
):
    """d = self - target; dx = g * (d / beta if |d| < beta else sign(d)), / numel for mean."""
    d = self - target
    g = grad_output if reduction == "none" else grad_output.item()
    slope = tg.where(tg.abs_(d) < beta, d / beta, tg.where(d > 0, 1.0, -1.0))
    dx = g * slope
    return dx / self.numel if reduction == "mean" else dx


def main() -> None:
    assert "smooth_l1_loss_backward" in tilegrad.list_ops()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_000).astype(np.float32)
    y = rng.standard_normal(10_000).astype(np.float32)
    g = np.array([0.5], np.float32)

    kernel = tilegrad.compile("smooth_l1_loss_backward", target="ascend910b")
    for stage in tilegrad.STAGES:
        text = kernel.ir(stage, grad_output=g, self=x, target=y)
        print(f"// ===== {stage} ({len(text.splitlines())} lines) =====")
        print("\n".join(text.splitlines()[:40]))

    for target in ("ascend910b", "ft78ne"):
        print(tilegrad.compile("smooth_l1_loss_backward", target).plan(grad_output=g, self=x, target=y))

    try:
        import torch
    except ImportError:
        print("torch is not installed: skipping the comparison")
        return
    expected = torch.ops.aten.smooth_l1_loss_backward(
        torch.tensor(0.5), torch.from_numpy(x), torch.from_numpy(y), 1, 1.0).numpy()
    for target in ("cpu", "ascend910b", "ft78ne"):
        got = tilegrad.compile("smooth_l1_loss_backward", target)(grad_output=g, self=x, target=y)
        error = np.max(np.abs(got - expected))
        print(f"{target:<11} max |error| vs torch: {error:.2e}")
        assert error < 1e-6


if __name__ == "__main__":
    main()
