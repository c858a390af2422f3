"""Start-up costs: `import tilegrad`, a cold compile per op, and a disk-cache hit in a fresh process.

    python benchmarks/startup.py [OP ...]

Every op of the benchmark table at its tiny size. A cold compile is timed in this process after a
warm-up compile (xDSL and LLVM already loaded), with the disk cache off and the in-memory cache
cleared. A hit is timed in a fresh process over a cache directory this run filled: from
`tilegrad.compile` to the first result, the first kernel of that process apart (it is the first to
open a kernel's shared object) from the next ones.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

IMPORT = "import time; t = time.perf_counter(); import tilegrad; print(time.perf_counter() - t)"

HIT = """
import gc, json, sys, time
import numpy as np
t = time.perf_counter()
import tilegrad
from tilegrad.bench import cases
rng_cases = {(c.name, c.size): c for c in cases("tiny", sys.argv[1:] or None)}
times = []
for case in rng_cases.values():
    # with torch loaded (the cases' torch forms) a full collection of the process's 170 000 objects
    # takes 70 ms; where one fell inside a hit, the table showed it as that kernel's load
    gc.collect()
    t = time.perf_counter()
    case.tilegrad()
    times.append((case.name, case.size, time.perf_counter() - t))
print(json.dumps(dict(times=times, xdsl=any(m.split(".")[0] in ("xdsl", "llvmlite") for m in sys.modules))))
"""


def python(code: str, *args: str, env: dict | None = None) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})
    return done.stdout.strip()


def import_seconds() -> float:
    """`import tilegrad` in a fresh process, from its bytecode as an installed package has it:
    PYTHONDONTWRITEBYTECODE (set on some machines; empty is unset) would make every import compile
    tilegrad's source again (about 50 ms on this host), which no user's installed package does."""
    return float(python(IMPORT, env={"PYTHONDONTWRITEBYTECODE": ""}))


def main(ops: list[str]) -> None:
    import tilegrad
    import tilegrad.kernel as kernel_module
    from tilegrad.bench import cases

    import_seconds()  # (writes the bytecode of an editable install)
    imports = sorted(import_seconds() for _ in range(5))
    print(f"import tilegrad: best {imports[0] * 1e3:.0f} ms, median {statistics.median(imports) * 1e3:.0f} ms "
          f"(numpy included; load average {os.getloadavg()[0]:.2f})")

    os.environ["TILEGRAD_CACHE"] = "0"
    built = cases("tiny", ops or None)
    tilegrad.compile("activation_backward", "cpu")  # loads xDSL and LLVM before anything is timed
    built[0].tilegrad()
    print("| op | size | cold compile s | cache hit ms |")
    print("|---|---|---:|---:|")
    cold = {}
    kernels = [k for k in gc.get_objects() if isinstance(k, tilegrad.Kernel)]
    for case in built:
        kernel_module._SPECIALIZATIONS.clear()
        for k in kernels:
            k._forget_signatures()  # each bound call signature holds its compiled code
        start = time.perf_counter()
        case.tilegrad()
        cold[(case.name, case.size)] = time.perf_counter() - start
    del os.environ["TILEGRAD_CACHE"]

    with tempfile.TemporaryDirectory() as directory:
        env = {"TILEGRAD_CACHE_DIR": directory}
        python(HIT, *ops, env=env)  # fills the cache
        hit = json.loads(python(HIT, *ops, env=env))
    hits = {(name, size): seconds for name, size, seconds in hit["times"]}
    for (name, size), seconds in cold.items():
        print(f"| {name} | {size} | {seconds:.2f} | {hits[(name, size)] * 1e3:.1f} |")
    first, *rest = hit["times"]
    later = [t for *_, t in rest]
    others = (f"the others median {statistics.median(later) * 1e3:.1f} ms, max {max(later) * 1e3:.1f} ms; "
              if later else "")  # one op asked for: its first kernel is the only one
    print(f"cold compile: median {statistics.median(cold.values()):.2f} s, max {max(cold.values()):.2f} s; "
          f"cache hit in a fresh process: first kernel {first[2] * 1e3:.1f} ms, {others}"
          f"xDSL or llvmlite imported on hits: {hit['xdsl']}")


if __name__ == "__main__":
    main(sys.argv[1:])
