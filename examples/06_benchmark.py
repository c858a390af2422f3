"""A quick benchmark: tilegrad vs PyTorch vs numpy (full sizes: `tilegrad bench`)."""

from tilegrad.bench import run_benchmarks

if __name__ == "__main__":
    run_benchmarks(quick=True)
