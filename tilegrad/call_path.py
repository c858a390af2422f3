"""The fast call path: a call signature checked once, then run with a few microseconds of Python.

A Kernel call binds its arguments (shape patterns, dtype rules, requirements), specializes and
fills the i64 argument array. Everything but the data pointers depends only on the call's
signature: each array's shape, strides and dtype and each attribute's value. A `BoundCall` keeps
that array filled in, with the slots where each call's pointers go, the outputs and workspace to
allocate, and the byte extents that decide whether two arrays may overlap. A call with the same
signature copies the template, writes its pointers and runs the driver; an overlap between a
written array and another one, or a read-only output, sends the call back through the checking
path (which refuses it or runs it through copies), so the fast path never decides anything new.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from tilegrad.codegen.launcher import STATUS_SLOTS, run_driver

FALLBACK = object()
"""What BoundCall.run returns when the call needs the checking path."""


def _probe_data_offset() -> int | None:
    """The offset of the data pointer in numpy's array object (its C struct's first field after the
    object header), if reading it there agrees with numpy's own answer for every probe array."""
    offset = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    probes = [base, base[3:, 2:], base[::2, ::-1], base.T, np.empty(0, np.int64), np.zeros((2, 3), np.float64)]
    for array in probes:
        if ctypes.c_void_p.from_address(id(array) + offset).value != array.ctypes.data:
            return None
    return offset


_DATA_OFFSET = _probe_data_offset()
_read_pointer = ctypes.c_void_p.from_address


def address(array: np.ndarray) -> int:
    """An array's data pointer: read from the array object (about 0.15 us) where the probe at import
    confirmed numpy's layout, else through numpy's ctypes interface (about 1.4 us)."""
    if _DATA_OFFSET is None:
        return array.ctypes.data
    return _read_pointer(id(array) + _DATA_OFFSET).value or 0


def unit_inner_stride(array: np.ndarray) -> bool:
    """Whether the kernel may assume the innermost dim is contiguous (it specializes on this)."""
    return array.ndim == 0 or array.shape[-1] <= 1 or array.strides[-1] == array.itemsize


def byte_extent(shape: tuple, strides: tuple, itemsize: int) -> tuple[int, int] | None:
    """The bytes an array spans relative to its data pointer, [lo, hi); None when it is empty."""
    if any(d == 0 for d in shape):
        return None
    lo = sum((d - 1) * s for d, s in zip(shape, strides) if s < 0)
    hi = sum((d - 1) * s for d, s in zip(shape, strides) if s > 0) + itemsize
    return lo, hi


def call_key(kwargs: dict) -> tuple:
    """A call's signature, flat: name, shape, strides, dtype per numpy array; name, type, value per
    other argument (a shape is a tuple and a type is not, so the flat form reads one way only).
    Hashing it raises TypeError when a value is unhashable: such a call takes the checking path."""
    key = []
    for name, value in kwargs.items():
        if type(value) is np.ndarray:
            key += (name, value.shape, value.strides, value.dtype)
        else:
            key += (name, type(value), value)
    return tuple(key)


def overlap_checks(written: list[int], extents: list[tuple[int, int] | None]) -> tuple:
    """Per written array (an index into the passed arrays): its index and byte extent and the
    (index, extent) of every other non-empty passed array, flat, so a call compares plain integers.
    An empty written array overlaps nothing."""
    return tuple((index, *extents[index], tuple((j, *e) for j, e in enumerate(extents) if j != index and e is not None))
                 if extents[index] is not None else (index, 0, 0, ()) for index in written)


@dataclass(frozen=True)
class NewArray:
    """An array the call allocates: an output the caller did not give, or workspace."""

    slot: int
    shape: tuple
    dtype: np.dtype
    zeroed: bool
    output: str | None
    """The output's name, None for workspace."""


@dataclass(frozen=True)
class BoundCall:
    """One checked call signature, ready to run with new arrays of the same shapes and strides."""

    op: str
    template: np.ndarray
    names: tuple[str, ...]
    """The arrays the caller passes,"""
    slots: tuple[int, ...]
    """and where each one's pointer goes."""
    overlap_checks: tuple
    """See overlap_checks(): what a call compares to refuse overlapping written arrays."""
    new: tuple[NewArray, ...]
    status_slot: int
    """The status pointer's slot; the status words themselves are the template's last STATUS_SLOTS
    (zero), after the arguments."""
    outputs: tuple[str | None, ...]
    """What the call returns, in the op's order: a name, or None for an output this call does not
    produce."""
    driver: tuple
    num_blocks: int
    ub_bytes: int | None
    parallel: bool
    status_error: object

    def run(self, kwargs: dict):
        arrays = [kwargs[name] for name in self.names]
        pointers = [address(a) for a in arrays] if _DATA_OFFSET is None else \
            [_read_pointer(id(a) + _DATA_OFFSET).value or 0 for a in arrays]
        for index, lo, hi, others in self.overlap_checks:
            if not arrays[index].flags.writeable:
                return FALLBACK
            start = pointers[index]
            for other, other_lo, other_hi in others:
                other_start = pointers[other]
                if start + lo < other_start + other_hi and other_start + other_lo < start + hi:
                    return FALLBACK
        argv = self.template.copy()
        for slot, pointer in zip(self.slots, pointers):
            argv[slot] = pointer
        made = {}
        keep = []  # workspace lives until the kernel returns
        for new in self.new:
            array = (np.zeros if new.zeroed else np.empty)(new.shape, new.dtype)
            argv[new.slot] = address(array)
            if new.output is not None:
                made[new.output] = array
            keep.append(array)
        argv_address = address(argv)
        status = self.status_words
        argv[self.status_slot] = argv_address + 8 * status
        run_driver(*self.driver, argv_address, self.num_blocks, self.ub_bytes, self.parallel)
        if argv[status]:
            raise self.status_error(argv[status:])
        if len(self.outputs) == 1:
            name = self.outputs[0]
            return None if name is None else made[name] if name in made else kwargs[name]
        return tuple(None if n is None else made[n] if n in made else kwargs[n] for n in self.outputs)

    @property
    def status_words(self) -> int:
        """Where the status words start in the argument array."""
        return len(self.template) - STATUS_SLOTS
