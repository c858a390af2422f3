"""The native thread pool: one foreign call runs every stage of a kernel on every block.

A kernel's LLVM module has a driver (`codegen/driver.py`) that runs its stages over one worker's
share of the blocks, calling a barrier between stages. This module JIT-compiles, once per process,
the pool that runs the driver on all workers: `launch` publishes the job, wakes the workers, runs
worker 0's share on the calling thread and returns when every worker has finished. The workers
are daemon threads that live in native code (ctypes releases the GIL), so no Python code runs per
block or per stage. Waiting spins briefly, then sleeps on a futex: a pool that idles costs no CPU,
so it does not compete with torch's OpenMP threads between calls.
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading

import numpy as np

from tilegrad.abi import POOL_BYTES, SPINS, thread_count

DRIVER_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                    ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
"""A kernel's driver: (argv, ub base, ub stride, blocks, worker, workers, pool, barrier)."""
LAUNCH_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
"""tilegrad_launch: (pool, driver, argv, ub base, ub stride, blocks, workers)."""

WORKER_STACK_BYTES = 8 << 20
"""Each worker's stack, whatever the process's default: a cpu kernel keeps its GEMM panels and
accumulator rows there (pack-reused-panels: up to 288 KiB; the thread that runs worker 0's share
needs as much: see on_large_stack)."""


def start_thread(target, args: tuple, name: str) -> threading.Thread:
    """A started daemon thread with a WORKER_STACK_BYTES stack, whatever the process's default."""
    default = threading.stack_size(WORKER_STACK_BYTES)
    try:
        thread = threading.Thread(target=target, args=args, daemon=True, name=name)
        thread.start()
    finally:
        threading.stack_size(default)
    return thread


def _pool_code():
    """The pool's machine code, from the disk cache when an earlier process compiled it."""
    from tilegrad.codegen import cache, native

    key = cache.make_key("native pool")
    hit = cache.load(key)
    if hit is not None and "object" in hit[0]:
        return native.load(hit[0]["object"])
    from tilegrad.codegen.jit import jit, optimize
    from tilegrad.codegen.pool_module import pool_module

    code, shared_object = jit(optimize(pool_module()))
    cache.store(key, {"object": shared_object}, {"pool": SPINS})
    return code


class Pool:
    """The process's workers and their state; `launch` runs one kernel call on all of them."""

    def __init__(self, workers: int):
        self.workers = workers
        self.code = _pool_code()
        self.state = np.zeros(POOL_BYTES // 8, np.int64)
        self.address = self.state.ctypes.data
        self._launch = self.code.function("tilegrad_launch", LAUNCH_SIGNATURE)
        worker = self.code.function("tilegrad_worker", ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64))
        self._threads = [start_thread(worker, (self.address, i), f"tilegrad-{i}") for i in range(1, workers)]
        self.lock = threading.Lock()
        self.pid = os.getpid()

    def launch(self, body: int, argv: int, ub: int, ub_stride: int, blocks: int) -> bool:
        """Run `body` over `blocks` on every worker; False (nothing run) if another thread's call
        holds the pool, so the caller runs it on its own thread instead of waiting."""
        if not self.lock.acquire(blocking=False):
            return False
        try:
            self._launch(self.address, body, argv, ub, ub_stride, blocks, min(blocks, self.workers))
        finally:
            self.lock.release()
        return True


_large_stack = threading.local()
_helpers: list[_Helper] = []
_helpers_lock = threading.Lock()


class _Helper:
    """A thread with a WORKER_STACK_BYTES stack that runs the calls handed to it, one at a time."""

    def __init__(self):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        start_thread(self._serve, (), "tilegrad-large-stack")

    def _serve(self) -> None:
        _large_stack.known = True
        while True:
            job, done, outcome = self.jobs.get()
            try:
                job()
            except BaseException as err:  # noqa: BLE001 (raised again on the calling thread)
                outcome.append(err)
            done.set()

    def run(self, job) -> None:
        done, outcome = threading.Event(), []
        self.jobs.put((job, done, outcome))
        done.wait()
        if outcome:
            raise outcome[0]


def _main_stack_is_large() -> bool:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    return soft == resource.RLIM_INFINITY or soft >= WORKER_STACK_BYTES


def on_large_stack(job) -> bool:
    """Run job() on a thread with a WORKER_STACK_BYTES stack and return True, or return False when
    this thread is one: the main thread (its stack is RLIMIT_STACK, 8 MiB by default) or a helper.
    Other threads' stacks are whatever created them chose (musl's default is 128 KiB), so their
    calls go to an idle helper, started the first time one is needed."""
    known = getattr(_large_stack, "known", None)
    if known is None:
        known = _large_stack.known = threading.current_thread() is threading.main_thread() and _main_stack_is_large()
    if known:
        return False
    with _helpers_lock:
        helper = _helpers.pop() if _helpers else None
    helper = helper or _Helper()
    try:
        helper.run(job)
    finally:
        with _helpers_lock:
            _helpers.append(helper)
    return True


_pool: Pool | None = None
_pool_lock = threading.Lock()


def pool() -> Pool:
    """The process's pool, started on first use (and again in a forked child, which has no threads)."""
    global _pool
    current = _pool
    if current is not None and current.pid == os.getpid():
        return current
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            _pool = Pool(thread_count())
        return _pool

