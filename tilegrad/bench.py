"""Benchmarks: every op's JIT kernel on `cpu` next to PyTorch's best CPU form and numpy, in one run.

Each case times tilegrad (writing into preallocated outputs, as a training step would), torch's
equivalent (the aten backward kernel, plain and `out=` where aten has one; autograd of the composite
forward where aten has none) at 2 threads, and numpy where it has a natural form. Repetitions are
interleaved (tilegrad, then each torch form, then numpy, and again), and the best of each is kept,
so a burst of load on this shared machine hits all columns alike; the load average is printed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatch

import numpy as np

import tilegrad
from tilegrad.bench_cases import case_builders


@dataclass
class Case:
    name: str
    size: str
    bytes_moved: int
    tilegrad: Callable[[], object]
    torch: dict[str, Callable[[], object]] = field(default_factory=dict)
    """torch's forms by label ("aten", "aten out=", "autograd"): the table keeps the fastest."""
    numpy: Callable[[], object] | None = None


def interleaved_best(functions: dict[str, Callable[[], object]], repeat: int = 5,
                     number: int = 1) -> dict[str, float]:
    """Best time per call of each function over `repeat` rounds, `number` calls of each per round.
    Each round starts one function later than the one before, so no function always runs first
    (in one process on the znver4 host, whichever of several variants ran first each round
    looked 10-50% slower)."""
    for fn in functions.values():
        fn()  # warm-up (and compile)
    best = {name: float("inf") for name in functions}
    order = list(functions.items())
    for round_ in range(repeat):
        shift = round_ % len(order)
        for name, fn in order[shift:] + order[:shift]:
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / number)
    return best


def best_time(fn: Callable[[], object], repeat: int = 5) -> float:
    return interleaved_best({"fn": fn}, repeat)["fn"]


def cases(size: str = "full", ops: list[str] | None = None) -> list[Case]:
    rng = np.random.default_rng(0)
    built = []
    for pattern, builder in case_builders():
        if ops and not any(fnmatch(op, pattern) for op in ops):
            continue
        built += [c for c in builder(rng, size, Case) if not ops or c.name in ops]
    return built


def two_thread_speedup(elements: int = 1 << 14, seconds: float = 0.25) -> float:
    """How much more compute-bound work (numpy's exp and sin on an array in L1, which release the
    GIL) two threads get done than one: 2.0 on two free cores. The cores of a shared virtual
    machine are not always free; at 1.3-1.5 (measured with an FMA chain in C on this host) a
    compute-bound kernel of ours (max pooling's window scan and gather) loses a third of its
    two-thread speed while torch's memory-bound form of the same op hardly changes, and the
    table's ratios for such cases drop with it."""
    import threading

    data = np.random.default_rng(0).random(elements, dtype=np.float32)

    def rate(threads: int) -> float:
        done = [0] * threads
        stop = time.perf_counter() + seconds

        def work(k: int) -> None:
            out = np.empty_like(data)
            while time.perf_counter() < stop:
                for _ in range(20):
                    np.exp(data, out=out)
                    np.sin(out, out=out)
                done[k] += 20

        workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return sum(done) / seconds

    return max(rate(2), rate(2)) / max(rate(1), rate(1))


def _cell(value: float, unit: str = "") -> str:
    """A table cell: "-" where there is nothing to compare with (no torch, or no numpy form)."""
    return f"{value:.2f}{unit}" if np.isfinite(value) else "-"


TINY_CALLS = 200
"""Calls per timed round at size "tiny", where one call takes microseconds."""


def run_benchmarks(ops: list[str] | None = None, size: str = "full", repeat: int = 5,
                   table: bool = True) -> list[dict]:
    """Print the table (milliseconds per call; microseconds at size "tiny") and return its rows
    (`table=False`: only return them). A progress bar on stderr counts the cases (on a terminal)."""
    from tqdm import tqdm

    known = tilegrad.list_ops()
    unknown = [op for op in ops or [] if op not in known]
    if unknown:
        raise tilegrad.UnsupportedError(f"no benchmark for {', '.join(unknown)}; ops: {', '.join(known)}")
    # torch's OpenMP workers spin after each call by default, taking the cores from whatever runs
    # next (tilegrad's blocks and torch's own next call alike); passive waiting is torch's faster
    # form here too (max pooling 2.5 -> 1.9 ms), so both sides are timed without the spinning
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:
        torch = None
    load = os.getloadavg()
    say = tqdm.write if table else (lambda text: None)
    if table:
        say(f"cpu: {os.cpu_count()} cores; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; torch at 2 "
            f"threads; two threads do {two_thread_speedup():.2f}x one's compute")
    tiny = size == "tiny"
    unit, scale, number = ("us", 1e6, TINY_CALLS) if tiny else ("ms", 1e3, 1)
    say(f"| op | size | tilegrad {unit} | GB/s | torch {unit} (form) | numpy {unit} | vs torch | vs numpy |")
    say("|---|---|---:|---:|---:|---:|---:|---:|")
    rows = []
    for case in tqdm(cases(size, ops), desc="benchmark cases", unit="case", leave=False, disable=None):
        functions = {"tilegrad": case.tilegrad}
        if torch is not None:
            functions.update({f"torch {label}": fn for label, fn in case.torch.items()})
        if case.numpy is not None:
            functions["numpy"] = case.numpy
        times = interleaved_best(functions, repeat, number)
        ours = times["tilegrad"]
        torch_forms = {k: v for k, v in times.items() if k.startswith("torch")}
        form, torch_time = min(torch_forms.items(), key=lambda kv: kv[1]) if torch_forms else ("-", float("nan"))
        numpy_time = times.get("numpy", float("nan"))
        row = dict(op=case.name, size=case.size, tilegrad_ms=ours * 1e3, gbps=case.bytes_moved / ours / 1e9,
                   torch_ms=torch_time * 1e3, torch_form=form.removeprefix("torch "), numpy_ms=numpy_time * 1e3,
                   vs_torch=torch_time / ours, vs_numpy=numpy_time / ours, load=load[0])
        rows.append(row)
        say(f"| {row['op']} | {row['size']} | {ours * scale:.2f} | {row['gbps']:.1f} | "
              f"{_cell(torch_time * scale)} ({row['torch_form']}) | {_cell(numpy_time * scale)} | "
              f"{_cell(row['vs_torch'], 'x')} | {_cell(row['vs_numpy'], 'x')} |")
    ratios = [r["vs_torch"] for r in rows if np.isfinite(r["vs_torch"])]
    if ratios:
        geomean = float(np.exp(np.mean(np.log(ratios))))
        say(f"geometric mean vs torch: {geomean:.2f}x over {len(ratios)} cases; "
              f"{sum(r >= 1.0 for r in ratios)} of {len(ratios)} at or above 1.0x")
    return rows
