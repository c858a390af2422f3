"""A/B: the benchmark table's tilegrad kernels of two source trees, timed interleaved in one run.

    python benchmarks/ab.py OLD_TREE [--new NEW_TREE] [--quick | --tiny] [--rounds 7] [OP ...]

OLD_TREE (and NEW_TREE, default: this checkout) is a directory holding a `tilegrad` package, e.g. a
worktree of the commit before a change (`git worktree add /tmp/before HEAD~1`). Each tree runs in a
worker process of its own, with the same cases (benchmarks/run.py's, same seed); the driver asks
them in turn, one timing at a time, starting each round with the other tree, and keeps each side's
best, so load on a shared machine hits both alike. It also compares the two trees' outputs of each
case bitwise (a hash of the arrays the case returns). Prints a table: old ms, new ms, old/new
(above 1: the new tree is faster), and whether the outputs are identical.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time


def _digest(value) -> str:
    import numpy as np

    h = hashlib.sha256()

    def add(v) -> None:
        if isinstance(v, dict):
            for k in sorted(v):
                h.update(str(k).encode())
                add(v[k])
        elif isinstance(v, (list, tuple)):
            for item in v:
                add(item)
        elif isinstance(v, np.ndarray):
            h.update(str((v.dtype, v.shape)).encode())
            h.update(np.ascontiguousarray(v).tobytes())
        elif hasattr(v, "numpy"):  # a torch tensor
            add(v.detach().numpy())
        elif v is not None:
            h.update(repr(v).encode())

    add(value)
    return h.hexdigest()[:16]


def worker(size: str, ops: list[str]) -> None:
    """Build the cases, then answer `time K NUMBER` and `hash K` lines on stdin, one JSON per line."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from tilegrad.bench import cases

    built = cases(size, ops or None)
    print(json.dumps([f"{c.name} {c.size}" for c in built]), flush=True)
    for line in sys.stdin:
        command, k, *rest = line.split()
        case = built[int(k)]
        if command == "hash":
            print(json.dumps(_digest(case.tilegrad())), flush=True)
        else:
            number = int(rest[0])
            start = time.perf_counter()
            for _ in range(number):
                case.tilegrad()
            print(json.dumps((time.perf_counter() - start) / number), flush=True)


class Worker:
    def __init__(self, tree: str, size: str, ops: list[str]):
        env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
        self.tree = tree
        self.process = subprocess.Popen([sys.executable, __file__, "--worker", size, *ops], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.names = self._read()

    def _read(self):
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the worker for {self.tree} stopped (see its error above)")
        return json.loads(line)

    def ask(self, line: str):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("--new", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("ops", nargs="*")
    args = parser.parse_intermixed_args()
    size = "tiny" if args.tiny else "quick" if args.quick else "full"
    number = 200 if args.tiny else 1
    old, new = Worker(args.old, size, args.ops), Worker(args.new, size, args.ops)
    if old.names != new.names:
        raise SystemExit(f"the trees have different cases:\n{old.names}\n{new.names}")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; old = {args.old}, new = {args.new}; "
          f"{args.rounds} rounds, best of each")
    print("| case | old ms | new ms | old/new | outputs |")
    print("|---|---:|---:|---:|---|")
    ratios, differing = [], []
    for k, name in enumerate(old.names):
        same = old.ask(f"hash {k}") == new.ask(f"hash {k}")  # (also the warm-up)
        best = {id(old): float("inf"), id(new): float("inf")}
        for round_ in range(args.rounds):
            for side in ((old, new) if round_ % 2 == 0 else (new, old)):
                best[id(side)] = min(best[id(side)], side.ask(f"time {k} {number}"))
        ratio = best[id(old)] / best[id(new)]
        ratios.append(ratio)
        if not same:
            differing.append(name)
        print(f"| {name} | {best[id(old)] * 1e3:.3f} | {best[id(new)] * 1e3:.3f} | {ratio:.2f} | "
              f"{'identical' if same else 'DIFFER'} |", flush=True)
    old.close()
    new.close()
    import math

    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print(f"geometric mean old/new: {geomean:.3f} over {len(ratios)} cases; outputs differ in "
          f"{len(differing)}: {', '.join(differing) or 'none'}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3:])
    else:
        main()
