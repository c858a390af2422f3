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
    flops: int = 0
    """Floating-point operations per call (2 per multiply-add) where the case is a contraction."""
    note: str = ""


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


def _torch_at_two_threads():
    """torch at 2 threads (None without torch). torch's OpenMP workers spin after each call by
    default, taking the cores from whatever runs next (tilegrad's blocks and torch's own next call
    alike); passive waiting is torch's faster form here too (max pooling 2.5 -> 1.9 ms), so both
    sides are timed without the spinning."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:
        torch = None
    return torch


def _cell(value: float, unit: str = "") -> str:
    """A table cell: "-" where there is nothing to compare with (no torch, or no numpy form)."""
    return f"{value:.2f}{unit}" if np.isfinite(value) else "-"


def _time_case(case: Case, torch, repeat: int, number: int) -> tuple[float, str, float, float]:
    """(tilegrad's best seconds per call, torch's fastest form, its seconds, numpy's seconds): NaN
    where there is no torch or numpy form."""
    functions = {"tilegrad": case.tilegrad}
    if torch is not None:
        functions.update({f"torch {label}": fn for label, fn in case.torch.items()})
    if case.numpy is not None:
        functions["numpy"] = case.numpy
    times = interleaved_best(functions, repeat, number)
    torch_forms = {k: v for k, v in times.items() if k.startswith("torch")}
    form, torch_time = min(torch_forms.items(), key=lambda kv: kv[1]) if torch_forms else ("-", float("nan"))
    return times["tilegrad"], form.removeprefix("torch "), torch_time, times.get("numpy", float("nan"))


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
    torch = _torch_at_two_threads()
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
        ours, form, torch_time, numpy_time = _time_case(case, torch, repeat, number)
        row = dict(op=case.name, size=case.size, tilegrad_ms=ours * 1e3, gbps=case.bytes_moved / ours / 1e9,
                   torch_ms=torch_time * 1e3, torch_form=form, numpy_ms=numpy_time * 1e3,
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


def _fma_kernel(lanes: int, chains: int):
    """A loop of `chains` independent vector FMA chains, `lanes` float32 each, in LLVM IR compiled
    for this host (ctypes releases the GIL while it runs): fn(iterations) -> a lane of the sum."""
    import ctypes

    from tilegrad.codegen.jit import standalone_function

    vec = f"<{lanes} x float>"
    splat = lambda value: f"<{', '.join([f'float {value}'] * lanes)}>"  # noqa: E731
    body = [f"  %a{c} = phi {vec} [ {splat('1.0')}, %entry ], [ %b{c}, %loop ]" for c in range(chains)]
    body += [f"  %b{c} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{c}, {vec} %m, {vec} %m)" for c in range(chains)]
    total = [f"  %s0 = fadd {vec} %b0, %b1"]
    total += [f"  %s{c} = fadd {vec} %s{c - 1}, %b{c + 1}" for c in range(1, chains - 1)]
    ir = f"""
declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})
define float @fma_peak(i64 %n, float %scale) {{
entry:
  %m0 = insertelement {vec} undef, float %scale, i32 0
  %m = shufflevector {vec} %m0, {vec} undef, <{lanes} x i32> zeroinitializer
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %j, %loop ]
{chr(10).join(body)}
  %j = add i64 %i, 1
  %done = icmp uge i64 %j, %n
  br i1 %done, label %exit, label %loop
exit:
{chr(10).join(total)}
  %r = extractelement {vec} %s{chains - 2}, i32 0
  ret float %r
}}
"""
    return standalone_function(ir, "fma_peak", ctypes.c_float, ctypes.c_int64, ctypes.c_float)


def fma_peak_gflops(threads: int = 2, seconds: float = 0.3) -> float:
    """The host's float32 FMA peak at `threads` threads, measured: a loop of independent vector FMA
    chains (the host's widest float32 vector, as many chains as leave 4 vector registers free, so
    neither the FMA latency nor spills limit it), run by each thread at once for `seconds`, best of
    three; 2 flops per lane per FMA."""
    import threading

    from tilegrad.targets.host import cpuinfo, vector_registers

    lanes = 16 if "avx512f" in cpuinfo().get("flags", "").split() else 8
    chains = vector_registers() - 4
    fn, iterations = _fma_kernel(lanes, chains), 1 << 16
    fn(iterations, 0.999)  # warm-up

    def trial() -> float:
        calls = [0] * threads
        stop = time.perf_counter() + seconds

        def work(k: int) -> None:
            while time.perf_counter() < stop:
                fn(iterations, 0.999)
                calls[k] += 1

        workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return sum(calls) * iterations * chains * lanes * 2 / (time.perf_counter() - start) / 1e9

    return max(trial() for _ in range(3))


def run_user_benchmarks(size: str = "full", labels: list[str] | None = None, repeat: int = 5,
                        table: bool = True, plans: bool = False) -> list[dict]:
    """The user-op table (tilegrad/user_ops.py: ops written as a user writes them) against torch's
    fastest CPU form, with the FMA peak measured in the same run beside the contractions' GFLOP/s.
    A case whose op is refused or crashes keeps its row, with the error. `plans`: also each op's
    plan on ascend910b at the same size (cores busy, element-sized copies per stage)."""
    from tqdm import tqdm

    from tilegrad import user_ops

    torch = _torch_at_two_threads()
    if torch is None:
        raise tilegrad.UnsupportedError("bench --user needs torch: its forms are the reference and the oracle")
    chosen = [c for c in user_ops.cases()
              if not labels or any(fnmatch(c.label, p) or p in c.label or p == c.op for p in labels)]
    if not chosen:
        raise tilegrad.UnsupportedError(f"no user-op case matches {', '.join(labels)}; cases: "
                                        f"{', '.join(dict.fromkeys(c.label for c in user_ops.cases()))}")
    load = os.getloadavg()
    say = tqdm.write if table else (lambda text: None)
    peak = fma_peak_gflops()
    say(f"cpu: {os.cpu_count()} cores; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; torch at 2 "
        f"threads; float32 FMA peak at 2 threads {peak:.0f} GFLOP/s (measured now, bench.fma_peak_gflops: "
        "independent vector FMA chains on each thread)")
    say("| case | size | tilegrad ms | torch ms (form) | vs torch | GFLOP/s | % of FMA peak | max rel. error |")
    say("|---|---|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    rows = []
    for spec in tqdm(chosen, desc="user-op cases", unit="case", leave=False, disable=None):
        row = dict(case=spec.label, op=spec.op, size=user_ops.size_label(spec, size), load=load[0], error="")
        try:
            case = user_ops.bench_case(spec, size, rng, Case)
            ours, form, torch_time, _ = _time_case(case, torch, repeat, 1)
            row.update(size=case.size, tilegrad_ms=ours * 1e3, torch_ms=torch_time * 1e3, torch_form=form,
                       vs_torch=torch_time / ours, gflops=case.flops / ours / 1e9 if case.flops else float("nan"),
                       peak_gflops=peak, error_vs_torch=_relative_error(case, form))
        except Exception as exc:  # a refusal or a crash is the finding: keep the row, say it verbatim
            row.update(error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
        if row["error"]:
            say(f"| {row['case']} | {row['size']} | FAILED: {row['error'].splitlines()[0]} | | | | | |")
            continue
        say(f"| {row['case']} | {row['size']} | {row['tilegrad_ms']:.2f} | {_cell(row['torch_ms'])} ({form}) | "
            f"{_cell(row['vs_torch'], 'x')} | {_cell(row['gflops'])} | {_cell(100 * row['gflops'] / peak, '%')} | "
            f"{row['error_vs_torch']:.1e} |")
    ratios = [r["vs_torch"] for r in rows if not r["error"] and np.isfinite(r["vs_torch"])]
    if ratios:
        geomean = float(np.exp(np.mean(np.log(ratios))))
        say(f"geometric mean vs torch: {geomean:.2f}x over {len(ratios)} cases; "
            f"{sum(r >= 1.0 for r in ratios)} of {len(ratios)} at or above 1.0x; "
            f"{sum(1 for r in rows if r['error'])} failed")
    notes = {spec.label: spec.note for spec in chosen if spec.note}
    if notes:
        say("as written: " + "; ".join(f"{label}: {note}" for label, note in notes.items()))
    if plans:
        for line in user_plans(chosen, size, rng):
            say(line)
    return rows


def _relative_error(case: Case, form: str) -> float:
    """max |tilegrad - torch| / max |torch| over the outputs, torch's fastest form as the reference."""
    from tilegrad.user_ops import numpy_of

    ours = case.tilegrad()
    theirs = case.torch[form]() if form in case.torch else ()
    ours = ours if isinstance(ours, tuple) else (ours,)
    worst = 0.0
    for got, want in zip(ours, theirs):
        want = numpy_of(want)
        worst = max(worst, float(np.max(np.abs(numpy_of(got) - want)) / max(np.max(np.abs(want)), 1e-30)))
    return worst if theirs else float("nan")


def user_plans(chosen, size: str, rng) -> list[str]:
    """Each case's plan on ascend910b at `size`: per stage, the cores busy (of the block dim) and
    the element-sized copies; the issue wants every core busy and no element copies."""
    import tilegrad
    from tilegrad import user_ops

    lines = ["", "plans on ascend910b (reported, not judged): stage: cores busy of the block dim, "
             "element-sized copies", "| case | size | stages |", "|---|---|---|"]
    for spec in chosen:
        dims = spec.dims[size]
        try:
            inputs = user_ops.arrays(spec, size, rng)
            report = tilegrad.compile(spec.op, "ascend910b").plan(**inputs, **spec.attrs(dims), check=False)
            stages = "; ".join(
                f"{s['stage']}: {s['cores_busy']}/{report.block_dim} busy, "
                f"{(s['traffic'] or {}).get('element_copies', '-')} element copies" for s in report.stages)
            stages += "" if report.fits else f"; DOES NOT FIT: {report.error.splitlines()[0]}"
        except Exception as exc:
            stages = f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        lines.append(f"| {spec.label} | {user_ops.size_label(spec, size)} | {stages} |")
    return lines
