"""A quick benchmark of three ops: tilegrad vs PyTorch vs numpy, timed in interleaved rounds with the
load average printed ("-" where an op has no numpy form, or torch is not installed). Every op at
full size: `tilegrad bench`. `python examples/06_benchmark.py [quick|tiny]` (tiny: the per-call cost).
"""

import sys

from tilegrad.bench import run_benchmarks

if __name__ == "__main__":
    size = sys.argv[1] if len(sys.argv) > 1 else "quick"
    if size not in ("quick", "tiny"):
        sys.exit(f"size must be quick or tiny, not {size!r}")
    run_benchmarks(["binary_cross_entropy_grad", "softmax_backward", "batch_norm_backward"], size=size)
