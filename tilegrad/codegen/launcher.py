"""Running a compiled kernel: one i64 argument array per call, blocks on a thread pool.

Each stage function runs over all blocks before the next starts (the barrier). On a scratchpad
target every block gets its own UB of exactly `ub_bytes`, the same one in every stage of a call.
ctypes releases the GIL for the call, so blocks run in parallel on the host's cores.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="tilegrad")
        return _pool


def fill_arguments(layout: list[tuple[str, str, int]], arrays: dict[str, np.ndarray]) -> np.ndarray:
    """The i64 array the kernel reads: per memref its pointer, sizes, then strides in elements."""
    argv = np.zeros(sum(slots for _, _, slots in layout), dtype=np.int64)
    offset = 0
    for name, role, slots in layout:
        array = arrays.get(name)
        if array is not None:
            rank = (slots - 1) // 2
            argv[offset] = array.ctypes.data
            if rank:
                argv[offset + 1: offset + 1 + rank] = array.shape
                argv[offset + 1 + rank: offset + slots] = [s // array.itemsize for s in array.strides]
        offset += slots
    return argv


def run_blocks(functions, argv: np.ndarray, num_blocks: int, ub: np.ndarray | None) -> None:
    """Run each function over blocks 0..num_blocks-1, spreading blocks over the worker threads."""
    address = argv.ctypes.data
    ub_base = ub.ctypes.data if ub is not None else 0
    ub_stride = ub.shape[1] if ub is not None else 0
    workers = min(num_blocks, os.cpu_count() or 1)

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
