"""What compiled kernels and the Python runtime agree on, below both the compiler and the runtime.

The DSL emitter sizes a kernel's status argument, lower-to-llvm numbers its guard reports, the native
pool's LLVM module lays out its state, and codegen/launcher.py and runtime.py read them back: each
constant is defined once, here, so neither the front end nor the passes import the runtime.
"""

from __future__ import annotations

import os

STATUS_SLOTS = 8
"""The kernel's status words (int64): error code, then for a guard-build report the axis, the
index and the size it broke; the rest are spare (the native call path's STATUS_WORDS matches)."""
GUARD_CODE_BASE = 1 << 20
"""Status codes from here on are guard-build bounds reports; below are range checks of the op."""

# The native pool's state (codegen/pool_module.py builds the code, codegen/runtime.py owns the words):
# byte offsets, one cache line per word the threads write (futex words are int32).
GENERATION, PENDING, ARRIVED, PHASE = 0, 64, 128, 192
BODY, ARGV, UB, UB_STRIDE, BLOCKS, WORKERS = 256, 264, 272, 280, 288, 296
POOL_BYTES = 320
SPINS = 4000
"""Pause-loop iterations before a wait sleeps (a few tens of microseconds): back-to-back stages and
calls find the workers awake, an idle pool sleeps."""
SYS_FUTEX, FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 202, 128, 129


def thread_count() -> int:
    """Workers per call (and LLVM's compile threads): TILEGRAD_NUM_THREADS if set (>= 1), else the host's cores."""
    value = os.environ.get("TILEGRAD_NUM_THREADS", "")
    if value:
        try:
            count = int(value)
        except ValueError:
            count = 0
        if count < 1:
            raise ValueError(f"TILEGRAD_NUM_THREADS={value!r} must be a whole number >= 1")
        return count
    return os.cpu_count() or 1
