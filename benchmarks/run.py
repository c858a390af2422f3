"""Run the benchmark table (same as `tilegrad bench`): python benchmarks/run.py [--quick | --tiny] [OP ...]"""

import sys

from tilegrad.bench import run_benchmarks

if __name__ == "__main__":
    args = sys.argv[1:]
    size = "tiny" if "--tiny" in args else "quick" if "--quick" in args else "full"
    run_benchmarks([a for a in args if not a.startswith("--")] or None, size=size)
