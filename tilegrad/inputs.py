"""Shapes from the command line, and random inputs that respect each tensor's declared range."""

from __future__ import annotations

import math
import os

import numpy as np

from tilegrad.dsl.opdef import ONE, OpDef, ParamsDtype, _describe
from tilegrad.dtypes import dtype_of
from tilegrad.errors import ShapeError

MAX_BYTES = 2**63 - 1
"""The most bytes one tensor may span: a byte offset is an int64 (numpy refuses larger arrays too)."""


def parse_dims(text: str, name: str = "") -> tuple[int, ...]:
    """"64x1000" -> (64, 1000); "" or "scalar" -> (). Dims are integers >= 0."""
    where = f"--shape {name}={text}: " if name else ""
    if text in ("", "scalar", "()"):
        return ()
    try:
        dims = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        raise ShapeError(f"{where}cannot read shape {text!r}; write dims like 64x1000") from None
    if any(d < 0 for d in dims):
        raise ShapeError(f"{where}a dim is negative; dims are integers >= 0")
    return dims


def check_sizes(specs: dict, given: set[str], allocate: bool) -> None:
    """Refuse, before anything is allocated or compiled, tensors no call could hold: one whose bytes
    exceed what an int64 byte offset indexes and, when the inputs are to be made (`allocate`), inputs
    that with the float64 scratch random_inputs draws them in need more than the machine's memory.
    A tensor whose shape was inferred is named as such: the fix is in the --shape given."""
    for name, spec in specs.items():
        size = math.prod(spec.shape) * _itemsize(spec.dtype)
        if size > MAX_BYTES:
            dims = "x".join(map(str, spec.shape))
            what = f"--shape {name}={dims}" if name in given else f"{name} (shape {dims}, from the --shape given)"
            raise ShapeError(f"{what}: {size} bytes of {spec.dtype}; a tensor may span at most 2**63-1 bytes "
                             f"(its byte offsets are int64)")
    if not allocate:
        return
    counts = {name: math.prod(spec.shape) for name, spec in specs.items()}
    need = sum(counts[n] * _itemsize(s.dtype) for n, s in specs.items())
    need += 8 * max(counts.values(), default=0)  # the float64 draw of the largest, before its cast
    memory = _memory_bytes()
    if memory is not None and need > memory:
        shapes = ", ".join(f"{n}={'x'.join(map(str, s.shape))}" for n, s in specs.items())
        raise ShapeError(f"--shape: the inputs ({shapes}) need {need / 2**30:.3g} GiB to make, more than the "
                         f"{memory / 2**30:.3g} GiB of memory available")


def _itemsize(dtype: str) -> int:
    return np.dtype(dtype_of(dtype).numpy).itemsize


def _memory_bytes() -> int | None:
    """The memory available to a new allocation (MemAvailable), else the machine's, else unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def complete_shapes(op: OpDef, shapes: dict[str, tuple], symbols: dict[str, int], attrs: dict) -> dict[str, tuple]:
    """Fill in required tensors whose shape follows from the given ones (same dim symbols)."""
    bound: dict[str, object] = dict(symbols)
    for name, shape in shapes.items():
        if name not in op.tensors:
            raise ShapeError(f"{op.name} has no tensor {name!r}; it takes {', '.join(op.tensors)}")
        for pattern in op.tensors[name].patterns:
            got = _bind(pattern, shape)
            if got is not None:
                for k, v in got.items():
                    bound.setdefault(k, v)
                break
        else:  # blame the shape given, not a tensor whose shape was to follow from it
            wanted = " or ".join(_describe(p, {}) for p in op.tensors[name].patterns)
            given = "x".join(map(str, shape)) or "scalar"
            raise ShapeError(f"--shape {name}={given}: {op.name}'s {name} must have shape {wanted} "
                             f"({len(shape)} dims given)")
    choices: dict[str, list[tuple]] = {}
    optional: dict[str, list[tuple]] = {}
    given_ranks = {len(shape) for shape in shapes.values()}
    for name, spec in op.tensors.items():
        if name in shapes:
            continue
        buildable = [s for s in (_build(p, bound, attrs) for p in spec.patterns) if s is not None]
        # a 5-D x makes a 5-D dy, not the first pattern's 4-D one (the op's rules still decide)
        buildable.sort(key=lambda shape: len(shape) not in given_ranks)
        if spec.optional:
            optional[name] = buildable
            continue
        choices[name] = buildable
        if not choices[name]:
            raise ShapeError(f"give --shape {name}=... (its dims {spec.patterns[0]} are not known from the others)")
    picked = {name: 0 for name in choices}
    while True:  # the first choice of each inferred shape that satisfies the op's rules
        out = {**shapes, **{n: choices[n][i] for n, i in picked.items()}}
        wanted = [r.arg for r in op.rules if r.arg in optional and optional[r.arg] and not _holds(r, out, attrs)]
        if wanted:  # an optional tensor the call needs (e.g. x for relu): include it
            choices[wanted[0]] = optional.pop(wanted[0])
            picked[wanted[0]] = 0
            continue
        broken = [r.arg for r in op.rules if r.arg in picked and not _holds(r, out, attrs)]
        if not broken:
            return out
        name = broken[0]
        if picked[name] + 1 >= len(choices[name]):
            return out  # let binding report the broken rule
        picked[name] += 1


def _holds(rule, shapes, attrs) -> bool:
    try:
        return rule.holds(shapes, attrs, {})
    except (KeyError, IndexError, TypeError):
        return True


def _bind(pattern, shape) -> dict | None:
    if pattern == ONE:
        return {} if int(np.prod(shape)) == 1 else None
    star = [i for i, p in enumerate(pattern) if p.startswith("*")]
    if star:
        s = star[0]
        tail = len(pattern) - s - 1
        if len(shape) < len(pattern) - 1:
            return None
        bound = dict(zip(pattern[:s], shape[:s]))
        bound[pattern[s]] = tuple(shape[s:len(shape) - tail])
        bound.update(zip(pattern[s + 1:], shape[len(shape) - tail:]))
        return bound
    if len(pattern) != len(shape):
        return None
    return dict(zip(pattern, shape))


def _build(pattern, bound: dict, attrs: dict) -> tuple | None:
    if pattern == ONE:
        return (1,)
    shape: list[int] = []
    for p in pattern:
        value = bound.get(p, attrs.get(p))
        if p.isdigit():
            value = int(p)
        if value is None:
            return None
        shape.extend(value if isinstance(value, tuple) else [int(value)])
    return tuple(shape)


def random_inputs(op: OpDef, shapes: dict[str, tuple], dtypes: dict[str, str], attrs: dict,
                  rng: np.random.Generator) -> dict[str, np.ndarray]:
    symbols: dict[str, object] = {}
    for name, shape in shapes.items():
        for pattern in op.tensors[name].patterns:
            got = _bind(pattern, shape)
            if got is not None:
                symbols.update(got)
                break
    arrays = {}
    for name, shape in shapes.items():
        spec = op.tensors[name]
        dtype = dtypes.get(name) or _default_dtype(op, name, dtypes)
        low, high = spec.values or (-1.0, 1.0)
        low, high = (_resolve(v, symbols, attrs) for v in (low, high))
        np_dtype = dtype_of(dtype).numpy
        if dtype_of(dtype).is_float and not (isinstance(low, int) and isinstance(high, int)):
            arrays[name] = rng.uniform(low, high, shape).astype(np_dtype)
        else:
            arrays[name] = rng.integers(int(low), max(int(high), int(low) + 1), shape).astype(np_dtype)
    return arrays


def input_specs(op: OpDef, shapes: dict[str, tuple], dtypes: dict[str, str]):
    """Shapes and dtypes without data, for showing IR and planning (any size, nothing allocated)."""
    from tilegrad.kernel import Spec

    return {name: Spec(shape, dtypes.get(name) or _default_dtype(op, name, dtypes)) for name, shape in shapes.items()}


def _default_dtype(op: OpDef, name: str, dtypes: dict[str, str]) -> str:
    spec = op.tensors[name]
    if isinstance(spec.dtype, ParamsDtype):
        return spec.dtype.expected(dtypes.get(spec.dtype.data) or _default_dtype(op, spec.dtype.data, dtypes))
    if spec.dtype == "data":
        return dtypes.get("*", "float32")
    if isinstance(spec.dtype, tuple):
        return "int64" if "int64" in spec.dtype else spec.dtype[0]
    return dtypes.get(spec.dtype) or _default_dtype(op, spec.dtype, dtypes)


def _resolve(value, symbols: dict, attrs: dict):
    if isinstance(value, str):
        return attrs[value] if value in attrs else symbols[value]
    return value
