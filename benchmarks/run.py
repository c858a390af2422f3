"""Run the benchmark table (same as `tilegrad bench`): python benchmarks/run.py [--quick] [OP ...]"""

import sys

from tilegrad.bench import run_benchmarks

if __name__ == "__main__":
    args = sys.argv[1:]
    quick = "--quick" in args
    run_benchmarks([a for a in args if not a.startswith("--")] or None, quick=quick)
