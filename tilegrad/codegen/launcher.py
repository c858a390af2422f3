"""Running a compiled kernel: one i64 argument array per call, blocks on a thread pool.

Each stage function runs over all blocks before the next starts (the barrier). On a scratchpad
target every block gets its own UB of exactly `ub_bytes`, the same one in every stage of a call.
ctypes releases the GIL for the call, so blocks run in parallel on the host's cores.
"""

from __future__ import annotations

import os
import struct
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
WORKERS = os.cpu_count() or 1


def pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="tilegrad")
        return _pool


STATUS_SLOTS = 8
"""The kernel's status words (int64): error code, then for a guard-build report the axis, the
index and the size it broke; the last four are the sink a refused guarded access touches."""
GUARD_SINK_SLOT = 4
GUARD_CODE_BASE = 1 << 20
"""Status codes from here on are guard-build bounds reports; below are range checks of the op."""

_scratch: dict[tuple[int, int], list[np.ndarray]] = {}
CANARY_BYTES = 64
CANARY = 0xA5


def acquire_ub(blocks: int, ub_bytes: int) -> np.ndarray:
    """Per-block scratch UB of exactly `ub_bytes`, each followed by a canary that a tiling bug
    writing past the UB would overwrite. Reused across calls (fresh pages fault on every call)."""
    with _pool_lock:
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
    with _pool_lock:
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
        if count > 1:
            slots.extend(array.shape)
            itemsize = array.itemsize
            slots.extend(s // itemsize for s in array.strides)
    return np.array(slots, dtype=np.int64)


def run_blocks(functions, argv: np.ndarray, num_blocks: int, ub: np.ndarray | None, parallel: bool = True) -> None:
    """Run each function over blocks 0..num_blocks-1, spreading blocks over the worker threads."""
    address = argv.ctypes.data
    ub_base = ub.ctypes.data if ub is not None else 0
    ub_stride = ub.shape[1] if ub is not None else 0
    workers = min(num_blocks, WORKERS) if parallel else 1

    def run_range(fn, first: int, last: int) -> None:
        for block in range(first, last):
            fn(address, block, ub_base + block * ub_stride if ub is not None else None)

    for fn in functions:
        if workers <= 1:
            run_range(fn, 0, num_blocks)
            continue
        bounds = [num_blocks * w // workers for w in range(workers + 1)]
        futures = [pool().submit(run_range, fn, bounds[w], bounds[w + 1]) for w in range(1, workers)]
        run_range(fn, bounds[0], bounds[1])
        for future in futures:
            future.result()
