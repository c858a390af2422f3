"""A quick benchmark of three ops: tilegrad vs PyTorch vs numpy (every op at full size: `tilegrad bench`)."""

from tilegrad.bench import run_benchmarks

if __name__ == "__main__":
    run_benchmarks(["binary_cross_entropy_grad", "softmax_backward", "batch_norm_backward"], size="quick")
