"""The fast call path: a call signature checked once, then run natively (`codegen/_fastcall.c`).

A Kernel call binds its arguments (shape patterns, dtype rules, requirements), specializes and
fills the i64 argument array. Everything but the data pointers depends only on the call's
signature: each array's shape, strides and dtype and each other argument's value. A `Signature`
keeps that array filled in, with the slots where each call's pointers go, the outputs and
workspace to allocate, and the byte extents that decide whether two arrays may overlap. A Kernel
is a `Dispatcher`: calling it with a bound signature copies the array, writes the pointers and
calls the driver in C; an overlap between a written array and another one, or a read-only
output, sends the call back through the checking path (which refuses it or runs it through
copies), so the fast path never decides anything new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

try:
    from tilegrad.codegen import _fastcall
except ImportError as error:  # a source tree used without `pip install -e .`
    raise ImportError("tilegrad's native call path (tilegrad/codegen/_fastcall.c) is not built: "
                      "install the package (`pip install -e .`)") from error

Dispatcher = _fastcall.Dispatcher


def _layout_agrees() -> bool:
    """Whether the C struct the native path reads matches numpy's answers for every probe array
    (else the native path stays off and every call is checked)."""
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    read_only = np.zeros((2, 3), np.float64)
    read_only.flags.writeable = False
    probes = [base, base[3:, 2:], base[::2, ::-1], base.T, np.empty(0, np.int64), read_only, np.float32(1) * base[0]]
    for array in probes:
        data, shape, strides, dtype, writeable = _fastcall.array_fields(array)
        if (data, shape, strides, dtype, writeable) != (array.ctypes.data, array.shape, array.strides, array.dtype,
                                                        array.flags.writeable):
            return False
    return True


_fastcall.configure(np.ndarray, np.empty, np.zeros)
_fastcall.set_native_path(_layout_agrees())


def address(array: np.ndarray) -> int:
    """An array's data pointer."""
    return array.__array_interface__["data"][0]


def unit_inner_stride(array: np.ndarray) -> bool:
    """Whether the kernel may assume the innermost dim is contiguous (it specializes on this)."""
    return array.ndim == 0 or array.shape[-1] <= 1 or array.strides[-1] == array.itemsize


def layout_of(array: np.ndarray) -> str:
    """The layout a kernel specializes on: "contiguous" (C order: a flat view of it is free),
    "unit" (a unit innermost stride) or "strided"."""
    if array.flags.c_contiguous:
        return "contiguous"
    return "unit" if unit_inner_stride(array) else "strided"


def byte_extent(shape: tuple, strides: tuple, itemsize: int) -> tuple[int, int] | None:
    """The bytes an array spans relative to its data pointer, [lo, hi); None when it is empty."""
    if any(d == 0 for d in shape):
        return None
    lo = sum((d - 1) * s for d, s in zip(shape, strides) if s < 0)
    hi = sum((d - 1) * s for d, s in zip(shape, strides) if s > 0) + itemsize
    return lo, hi


@dataclass(frozen=True)
class NewArray:
    """An array the call allocates: an output the caller did not give, or workspace."""

    slot: int
    shape: tuple
    dtype: np.dtype
    zeroed: bool
    output: str | None
    """The output's name, None for workspace."""


def signature(given: dict, slots: dict[str, int], written: set[str], new: list[NewArray], outputs: list[str | None],
              argv: np.ndarray, status_slot: int, status_count: int, driver: int, blocks: int,
              run: Callable[[int], None] | None, status_error: Callable, keep: object) -> _fastcall.Signature | None:
    """The Signature of a checked call with keyword arguments `given`: `slots` names where each
    passed array's pointer goes in `argv` (whose last `status_count` words are the status), `written`
    the passed arrays the kernel writes, `outputs` what the call returns (a name or None). None when
    an argument's value cannot be compared from call to call (an unhashable value)."""
    names = tuple(given)
    forms = []
    for name, value in given.items():
        if type(value) is np.ndarray:
            forms.append((value.dtype, value.shape, value.strides, slots.get(name, -1), name in written))
            continue
        try:
            hash(value)
        except TypeError:
            return None
        forms.append((type(value), value))
    extents = {n: byte_extent(given[n].shape, given[n].strides, given[n].itemsize) for n in slots}
    overlaps = []
    for name in written:
        others = [(names.index(o), *extents[o]) for o in slots if o != name and extents[o] is not None]
        if extents[name] is not None and others:
            overlaps += (names.index(name), *extents[name], len(others), *(x for o in others for x in o))
    new_index = {n.output: -1 - i for i, n in enumerate(new) if n.output is not None}
    returned = tuple(None if n is None else new_index[n] if n in new_index else names.index(n) for n in outputs)
    return _fastcall.Signature(
        names, tuple(forms), argv.astype(np.int64).tobytes(), status_slot, status_count, tuple(overlaps),
        tuple((n.slot, n.shape, n.dtype, n.zeroed) for n in new), returned, driver, blocks, run, status_error, keep)
