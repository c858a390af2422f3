"""Running a compiled kernel: one i64 argument array per call, one native call for all stages.

The kernel's driver runs its stages over the blocks with a barrier between stages; the native pool
(`runtime.py`) runs it on every worker, or the calling thread runs it alone when the work is too
small to pay for waking the workers. On a scratchpad target every block gets its own UB of
exactly `ub_bytes`, the same one in every stage of a call. A kernel with large stack buffers (a
GEMM's panels) runs where the stack has room for them (`runtime.on_large_stack`).
"""

from __future__ import annotations

import struct
import threading

import numpy as np

from tilegrad.errors import InternalError

_scratch_lock = threading.Lock()
DRIVER = "tilegrad_run"
"""The driver's name in every kernel module (each module has its own JIT engine)."""



CALLER_STACK_BYTES = 64 << 10
"""A kernel whose stack buffers take more than this does not run on a thread whose stack tilegrad
did not size (see run_driver)."""

_scratch: dict[tuple[int, int], list[np.ndarray]] = {}
CANARY_BYTES = 64
CANARY = 0xA5


def acquire_ub(blocks: int, ub_bytes: int) -> np.ndarray:
    """Per-block scratch UB of exactly `ub_bytes`, each followed by a canary that a tiling bug
    writing past the UB would overwrite. Reused across calls (fresh pages fault on every call)."""
    with _scratch_lock:
        free = _scratch.get((blocks, ub_bytes + CANARY_BYTES))
        if free:
            return free.pop()
    ub = np.empty((blocks, ub_bytes + CANARY_BYTES), np.uint8)
    ub[:, ub_bytes:] = CANARY
    return ub


def release_ub(ub: np.ndarray) -> None:
    """Return a UB to the pool after checking every block's canary."""
    canary = ub[:, ub.shape[1] - CANARY_BYTES:]
    if (canary != CANARY).any():
        block = int(np.nonzero((canary != CANARY).any(axis=1))[0][0])
        raise RuntimeError(f"tiling bug: block {block} wrote past the end of its "
                           f"{ub.shape[1] - CANARY_BYTES}-byte UB")
    with _scratch_lock:
        _scratch.setdefault(ub.shape, []).append(ub)


def fill_arguments(layout: list[tuple[str, str, int]], arrays: dict[str, np.ndarray],
                   params: dict[str, int | float] | None = None) -> np.ndarray:
    """The i64 array the kernel reads: per memref its pointer, sizes, then strides in elements;
    per runtime attribute its value (a float as the bits of a float64)."""
    slots: list[int] = []
    for name, role, count in layout:
        if role == "param":
            value = params[name]
            slots.append(struct.unpack("<q", struct.pack("<d", value))[0] if isinstance(value, float) else int(value))
            continue
        array = arrays.get(name)
        if array is None:
            slots.extend([0] * count)
            continue
        slots.append(array.__array_interface__["data"][0])
        if count > 1 and _flat(array, count):
            slots.extend((array.size, 1))
        elif count > 1:
            slots.extend(array.shape)
            itemsize = array.itemsize
            slots.extend(s // itemsize for s in array.strides)
    return np.array(slots, dtype=np.int64)


def _flat(array: np.ndarray, count: int) -> bool:
    """Whether the kernel takes the array as a flat view (collapse-contiguous-nests made its argument
    rank 1; the call specialized on C order, so the view is its own memory)."""
    if array.ndim == (count - 1) // 2:
        return False
    if count != 3 or not array.flags.c_contiguous:
        raise InternalError(f"a rank-{array.ndim} array for a rank-{(count - 1) // 2} kernel argument")
    return True


def kernel_shapes(layout: list[tuple[str, str, int]], arrays: dict[str, np.ndarray]) -> dict[str, tuple]:
    """Each array's shape as the kernel sees it (what the plan's extents are forms of)."""
    counts = {name: count for name, role, count in layout if role != "param"}
    return {n: (a.size,) if counts.get(n, 1) > 1 and _flat(a, counts[n]) else a.shape for n, a in arrays.items()}


def pointer_slots(layout: list[tuple[str, str, int]]) -> dict[str, int]:
    """Where fill_arguments puts each memref's data pointer in the argument array."""
    slots, position = {}, 0
    for name, role, count in layout:
        if role != "param":
            slots[name] = position
        position += 1 if role == "param" else count
    return slots


def run_driver(driver, address: int, argv_address: int, num_blocks: int, ub_bytes: int | None,
               parallel: bool, stack_bytes: int = 0) -> None:
    """Run a kernel's driver (`driver` its ctypes callable, `address` its code) on the argument
    array at `argv_address`, over all blocks, each with a UB of `ub_bytes` on a scratchpad target
    (None: no UB): on the pool's workers if `parallel` and there is more than one block, else on
    this thread. This thread runs the first worker's share; when the kernel's stack buffers take
    `stack_bytes` > CALLER_STACK_BYTES, a thread whose stack is known to hold them does instead
    (this one if it is, else a helper: a thread of another library may have a stack of 128 KiB)."""
    if stack_bytes > CALLER_STACK_BYTES:
        from tilegrad.codegen.runtime import on_large_stack

        if on_large_stack(lambda: run_driver(driver, address, argv_address, num_blocks, ub_bytes, parallel)):
            return
    if ub_bytes is None and not parallel:  # the common small call: straight to the driver
        driver(argv_address, 0, 0, num_blocks, 0, 1, None, None)
        return
    ub = acquire_ub(num_blocks, ub_bytes) if ub_bytes is not None else None
    try:
        ub_base = ub.ctypes.data if ub is not None else 0
        ub_stride = ub.shape[1] if ub is not None else 0
        if parallel and num_blocks > 1:
            from tilegrad.codegen.runtime import pool

            workers = pool()
            if workers.workers > 1 and workers.launch(address, argv_address, ub_base, ub_stride, num_blocks):
                return
        driver(argv_address, ub_base, ub_stride, num_blocks, 0, 1, None, None)
    finally:
        if ub is not None:
            release_ub(ub)
