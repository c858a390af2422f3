"""Fuzzing the guard build with edited IR: the tiled stage of a few library ops (small shapes, cpu and
ascend910b) is edited at random (constants that are indices, offsets, loop bounds, steps, shift
amounts and divisors; the integer ops and comparisons that compute indices and clamps; UB buffer
offsets, buffer and stack sizes, strides in types; the order of an access's indices) and each
mutant runs through `Kernel.from_ir` in the guard build, every input and output inside canary bytes
(test_fuzz.Guarded). Every mutant must be refused with a TilegradError, caught (OutOfBoundsError,
or the op's own IndexOutOfRangeError), or run; in every case the canaries are intact, and nothing
crashes or hangs: mutants run in a process of their own, so a crash is reported as an escape with
the edit that caused it instead of ending the test run.

Profiles: the CI one runs a few dozen mutants (seeded, the same every run) and prints
`guard fuzz: N mutants; K refused, J caught, M ran; 0 escapes` at the end of pytest;
`TILEGRAD_FUZZ=long` runs many more, of more ops, with fresh seeds.
"""

import multiprocessing
import os
import random
import re
import secrets

import numpy as np
from conftest import GUARD_FUZZ_STATS

LONG = os.environ.get("TILEGRAD_FUZZ") == "long"
MUTANTS = 1000 if LONG else 40
SEED = secrets.randbits(32) if LONG else 43
TIMEOUT = 300
"""Seconds a mutant may take (a compile is a second or two on a loaded machine; a hang is an escape)."""

BASES = [("binary_cross_entropy_grad", "cpu"), ("binary_cross_entropy_grad", "ascend910b"),
         ("nll_loss_backward", "cpu"), ("nll_loss_backward", "ascend910b"),
         ("softmax_backward", "ascend910b"), ("embedding_dense_backward", "ascend910b")]
if LONG:
    BASES += [("softmax_backward", "cpu"), ("embedding_dense_backward", "cpu"),
              ("fused_linear_cross_entropy_loss_grad", "cpu"), ("fused_linear_cross_entropy_loss_grad", "ascend910b"),
              ("pooling_backward", "ascend910b"), ("batch_norm_backward", "cpu")]

INTEGER_OPS = ["addi", "subi", "muli", "minsi", "maxsi", "divui", "remui", "divsi", "remsi", "shli", "shrsi",
               "andi", "ori"]
PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


# ---- the mutations: each edits one thing of the IR text, or returns None where it finds nothing to edit ----

def _values(v: int) -> list[int]:
    """What a constant becomes: off by one, zero, negative, a shift's width, larger; never so large that
    a loop it bounds runs for long (the guard reports after the kernel ran, so it does run)."""
    if abs(v) > 4099:
        return [v - 1, v + 1, v // 2, 0, 1, -1]
    return [v - 1, v + 1, 2 * v + 3, -v, 0, 1, -1, 63, 64, 65, 4099, -4099]


def mutate_constant(text: str, rng: random.Random):
    found = list(re.finditer(r"(= arith\.constant )(-?\d+)( : (?:index|i64|i32))", text))
    if not found:
        return None
    m = rng.choice(found)
    value = rng.choice(_values(int(m.group(2))))
    return text[:m.start(2)] + str(value) + text[m.end(2):], f"constant {m.group(2)} -> {value} at {m.start()}"


def _another_word(text: str, rng: random.Random, pattern: str, words: list[str], what: str):
    """One match of `pattern` with its group 1 replaced by another of `words`."""
    found = list(re.finditer(pattern, text))
    if not found:
        return None
    m = rng.choice(found)
    word = rng.choice([w for w in words if w != m.group(1)])
    return text[:m.start(1)] + word + text[m.end(1):], f"{what} {m.group(1)} -> {word} at {m.start()}"


def mutate_integer_op(text: str, rng: random.Random):
    return _another_word(text, rng, r"= arith\.(" + "|".join(INTEGER_OPS) + r") %[\w.]+, %[\w.]+ : index", INTEGER_OPS,
                         "arith op")


def mutate_predicate(text: str, rng: random.Random):
    return _another_word(text, rng, r"arith\.cmpi (\w+), ", PREDICATES, "cmpi")


def mutate_ub_offset(text: str, rng: random.Random):
    found = list(re.finditer(r"tg\.ub_alloc %ub\[(\d+)\]", text))
    if not found:
        return None
    m = rng.choice(found)
    capacity = int(re.search(r"%ub: memref<(\d+)xi8>", text).group(1))
    offset = rng.choice([0, int(m.group(1)) + 4, max(int(m.group(1)) - 4, 0), capacity - 4, capacity + 64])
    return text[:m.start(1)] + str(offset) + text[m.end(1):], f"ub_alloc offset {m.group(1)} -> {offset}"


def mutate_static_type(text: str, rng: random.Random):
    """A static memref type (a UB buffer's, a stack buffer's, a static argument's) with one axis
    resized, everywhere it appears."""
    found = sorted(set(re.findall(r"memref<((?:\d+x)+)(f32|f64|f16|bf16|i64|i32|i8)>", text)))
    if not found:
        return None
    dims, element = rng.choice(found)
    sizes = [int(d) for d in dims.rstrip("x").split("x")]
    axis = rng.randrange(len(sizes))
    resized = list(sizes)
    resized[axis] = rng.choice([0, 1, sizes[axis] - 1, sizes[axis] + 1, 2 * sizes[axis], 1 << 22])
    old, new = f"memref<{dims}{element}>", f"memref<{'x'.join(map(str, resized))}x{element}>"
    return text.replace(old, new), f"type {old} -> {new}"


def mutate_layout(text: str, rng: random.Random):
    """A memref type given static strides, everywhere it appears."""
    found = sorted(set(re.findall(r"memref<((?:[\d?]+x)+)(f32|f64|f16|bf16|i64|i32|i8)>", text)))
    if not found:
        return None
    dims, element = rng.choice(found)
    rank = dims.count("x")
    strides = [rng.choice([0, 1, 2, 7, 1000, 100003]) for _ in range(rank)]
    old = f"memref<{dims}{element}>"
    new = f"memref<{dims}{element}, strided<[{', '.join(map(str, strides))}]>>"
    return text.replace(old, new), f"type {old} -> {new}"


def mutate_index_order(text: str, rng: random.Random):
    found = list(re.finditer(r"(memref\.(?:load|store) [^\[\n]*\[)(%[\w.]+), (%[\w.]+)", text))
    if not found:
        return None
    m = rng.choice(found)
    return (text[:m.start(2)] + f"{m.group(3)}, {m.group(2)}" + text[m.end(3):],
            f"indices {m.group(2)}, {m.group(3)} swapped at {m.start()}")


MUTATIONS = [mutate_constant, mutate_constant, mutate_constant, mutate_integer_op, mutate_integer_op,
             mutate_predicate, mutate_ub_offset, mutate_static_type, mutate_layout, mutate_index_order]


def mutant(text: str, rng: random.Random) -> tuple[str, str]:
    """The text with one or two edits, and what they were."""
    edits = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        for _attempt in range(20):
            result = rng.choice(MUTATIONS)(text, rng)
            if result is not None and result[0] != text:
                text, edit = result
                edits.append(edit)
                break
    return text, "; ".join(edits)


# ---- running a mutant, in a process of its own ---------------------------------------------------------------

_KERNELS: dict = {}


def _call(op: str, target: str):
    """The op's kernel, its call's inputs and attributes and its outputs' shapes and dtypes (from a
    run of the unedited kernel), made once per process."""
    from test_guard import small_call

    import tilegrad

    if (op, target) not in _KERNELS:
        arrays, attrs = small_call(op, "float32")
        kernel = tilegrad.compile(op, target, guard=True)
        results = kernel(**{n: a.copy() for n, a in arrays.items()}, **attrs)
        results = results if isinstance(results, tuple) else (results,)
        outputs = {n: (r.shape, r.dtype) for n, r in zip(kernel.op.outputs, results) if r is not None}
        _KERNELS[op, target] = kernel, arrays, attrs, outputs
    return _KERNELS[op, target]


def base_ir(op: str, target: str) -> str:
    kernel, arrays, attrs, _ = _call(op, target)
    return kernel.ir("tiled", **arrays, **attrs)


def run_mutant(op: str, target: str, text: str) -> tuple[str, str, bool]:
    """(outcome, message, canaries intact): refused (a TilegradError before the kernel ran), caught (a
    report of the run: OutOfBoundsError, IndexOutOfRangeError), ran, or error (any other exception)."""
    from test_guard import boxed

    import tilegrad

    kernel, arrays, attrs, outputs = _call(op, target)
    boxes = {n: boxed(a) for n, a in arrays.items()}
    boxes.update({n: boxed(np.zeros(shape, dtype)) for n, (shape, dtype) in outputs.items()})
    try:
        edited = kernel.from_ir("tiled", text)
        try:
            edited(**{n: b.array for n, b in boxes.items()}, **attrs)
            outcome, message = "ran", ""
        except (tilegrad.OutOfBoundsError, tilegrad.IndexOutOfRangeError) as err:
            outcome, message = "caught", str(err)
    except tilegrad.TilegradError as err:
        outcome, message = "refused", f"{type(err).__name__}: {err}"
    except Exception as err:  # a bare exception: an edited kernel's mistake reported as anything but tilegrad's
        outcome, message = "error", f"{type(err).__name__}: {err}"
    return outcome, message[:300], all(box.intact() for box in boxes.values())


def _serve(connection) -> None:
    while (job := connection.recv()) is not None:
        name, args = job
        connection.send({"base_ir": base_ir, "run_mutant": run_mutant}[name](*args))


class Worker:
    """A spawned process that runs the jobs sent to it: a crash or a hang in an edited kernel ends it,
    not the test run."""

    def __init__(self):
        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        child.close()

    def __call__(self, name: str, *args, timeout: float = TIMEOUT):
        self.connection.send((name, args))
        if not self.connection.poll(timeout):
            self.process.kill()
            self.process.join()
            raise TimeoutError(f"no answer in {timeout} s")
        try:
            return self.connection.recv()
        except EOFError:
            self.process.join()
            raise ChildProcessError(f"the process ended with exit code {self.process.exitcode}") from None

    def close(self) -> None:
        if self.process.is_alive():
            self.connection.send(None)
            self.process.join(30)


def test_edited_tiled_ir_never_escapes_the_guard_build():
    worker = Worker()
    escapes, counts = [], {"refused": 0, "caught": 0, "ran": 0}
    try:
        bases = {base: worker("base_ir", *base) for base in BASES}
        for number in range(MUTANTS):
            rng = random.Random(SEED * 100003 + number)
            op, target = base = rng.choice(BASES)
            text, edits = mutant(bases[base], rng)
            what = f"mutant {number} (seed {SEED}) of {op} on {target}: {edits}"
            try:
                outcome, message, intact = worker("run_mutant", op, target, text)
            except (TimeoutError, ChildProcessError) as err:
                escapes.append(f"{what}: {err}")
                worker = Worker()
                continue
            if outcome == "error" or not intact:
                escapes.append(f"{what}: {outcome} {message}" + ("" if intact else "; canaries overwritten"))
                continue
            counts[outcome] += 1
    finally:
        worker.close()
    GUARD_FUZZ_STATS["mutants"] += MUTANTS
    GUARD_FUZZ_STATS["escapes"] += len(escapes)
    for outcome, count in counts.items():
        GUARD_FUZZ_STATS[outcome] += count
    assert not escapes, "\n".join(escapes)
    assert counts["refused"] and counts["caught"] and counts["ran"]  # every outcome is reached
