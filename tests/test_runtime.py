"""The runtime: the fast call path (a signature checked once) and the native thread pool."""

import multiprocessing
import threading

import numpy as np
import pytest
from conftest import torch

import tilegrad
from tilegrad.call_path import address, byte_extent
from tilegrad.codegen import runtime


def relu_backward(k, dy, x, **out):
    return k(y=x, dy=dy, x=x, mode="relu", **out)


def test_repeated_calls_read_each_calls_arrays(rng):
    """A call with an earlier call's signature runs on its own arrays, given or allocated."""
    k = tilegrad.compile("activation_backward", "cpu")
    shape = (2, 3, 5, 7)
    for _ in range(3):
        x, dy = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
        want = torch.ops.aten.threshold_backward(torch.from_numpy(dy), torch.from_numpy(x), 0.0).numpy()
        np.testing.assert_array_equal(relu_backward(k, dy, x), want)
        dx = np.full(shape, np.nan, np.float32)
        assert relu_backward(k, dy, x, dx=dx) is dx
        np.testing.assert_array_equal(dx, want)
    assert k._signature_count == 2  # one checked signature each: dx allocated, dx given


def test_an_overlapping_or_read_only_output_takes_the_checking_path(rng):
    """The fast path refuses nothing itself: an output overlapping an input, or a read-only one,
    goes through the checks of a first call, which refuse it."""
    k = tilegrad.compile("activation_backward", "cpu")
    shape = (2, 3, 4, 4)
    memory = rng.standard_normal(2 * 3 * 4 * 4 + 1).astype(np.float32)
    x, shifted = memory[:-1].reshape(shape), memory[1:].reshape(shape)
    dy = rng.standard_normal(shape).astype(np.float32)
    relu_backward(k, dy, x, dx=np.empty_like(x))  # the signature is now bound
    with pytest.raises(tilegrad.ShapeError, match="overlaps input"):
        relu_backward(k, dy, x, dx=shifted)  # same shape, strides and dtype as the bound call
    read_only = np.empty_like(x)
    read_only.flags.writeable = False
    with pytest.raises(tilegrad.ArgumentError, match="read-only"):
        relu_backward(k, dy, x, dx=read_only)


def test_a_range_error_is_reported_on_the_fast_path(rng):
    k = tilegrad.compile("nll_loss_backward", "cpu")
    x = rng.standard_normal((6, 5)).astype(np.float32)
    target = np.arange(6, dtype=np.int64) % 5
    args = dict(grad_output=np.ones(6, np.float32), self=x, weight=None, total_weight=np.ones(1, np.float32),
                reduction="none")
    k(target=target, **args)
    bad = target.copy()
    bad[3] = 5
    with pytest.raises(tilegrad.IndexOutOfRangeError):
        k(target=bad, **args)
    k(target=target, **args)  # the status words start at zero again


def test_byte_extent_spans_negative_strides():
    a = np.zeros((4, 6), np.float32)[::-1, 1:5]
    lo, hi = byte_extent(a.shape, a.strides, a.itemsize)
    assert address(a) + lo == address(a[-1:, :1]) and address(a) + hi == address(a[:1, -1:]) + 4
    assert byte_extent((0, 3), (12, 4), 4) is None


def _batch_norm_call(rng, n=16, c=24, hw=24):
    x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    params = [rng.uniform(0.5, 2, (1, c, 1, 1)).astype(np.float32),
              x.mean((0, 2, 3), keepdims=True), 1 / np.sqrt(x.var((0, 2, 3), keepdims=True) + 1e-5)]
    return dict(x=x, dy=dy, bn_scale=params[0], saved_mean=params[1].astype(np.float32),
                saved_inv_variance=params[2].astype(np.float32))


def test_pool_runs_every_stage_on_every_worker_in_order(rng, monkeypatch):
    """A multi-stage kernel (cross-core partials, then the combine) large enough for the pool gives
    the calling thread's result bitwise, call after call."""
    args = _batch_norm_call(rng)
    assert args["x"].size >= tilegrad.kernel.PARALLEL_MIN_ELEMENTS
    k = tilegrad.compile("batch_norm_backward", "cpu")
    parallel = [k(**args) for _ in range(10)]
    monkeypatch.setattr(runtime, "_pool", runtime.Pool(1))  # every block on the calling thread
    serial = k(**args)
    for result in parallel:
        for a, b in zip(result, serial):
            np.testing.assert_array_equal(a, b)


def test_calls_from_many_threads_share_the_pool(rng):
    """A call that finds the pool busy runs on its own thread; every result stays right."""
    k = tilegrad.compile("batch_norm_backward", "cpu")
    args = _batch_norm_call(rng)
    want = k(**args)
    wrong = []

    def call_many():
        for _ in range(10):
            if not all(np.array_equal(a, b) for a, b in zip(k(**args), want)):
                wrong.append(1)

    threads = [threading.Thread(target=call_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def _child_runs_the_pool(queue):
    rng = np.random.default_rng(1)
    k = tilegrad.compile("batch_norm_backward", "cpu")
    args = _batch_norm_call(rng)
    queue.put([a.tobytes() for a in k(**args)])


def test_a_forked_child_starts_its_own_pool(rng):
    """After fork the child has none of the parent's workers: its first parallel call starts a pool."""
    k = tilegrad.compile("batch_norm_backward", "cpu")
    want = [a.tobytes() for a in k(**_batch_norm_call(np.random.default_rng(1)))]
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_runs_the_pool, args=(queue,))
    child.start()
    got = queue.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0 and got == want


def test_thread_count_is_capped_by_the_environment(monkeypatch):
    monkeypatch.setenv("TILEGRAD_NUM_THREADS", "1")
    assert runtime.thread_count() == 1
    monkeypatch.setenv("TILEGRAD_NUM_THREADS", "zero")
    with pytest.raises(ValueError, match="TILEGRAD_NUM_THREADS"):
        runtime.thread_count()


# ---- the collector during compiles -------------------------------------------------------------------
def test_a_compile_pauses_the_collector_and_restores_it():
    import gc

    from tilegrad.pipeline import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: still off, and on again only at the outer exit
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with collector_paused():
            raise RuntimeError("a failing compile")
    assert gc.isenabled()
    gc.disable()  # a caller that turned it off keeps it off
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_compiles_on_threads_turn_the_collector_on_once_all_end():
    import gc

    from tilegrad.pipeline import collector_paused

    inside, leave = threading.Barrier(3), threading.Event()
    seen = []

    def compile_like():
        with collector_paused():
            inside.wait()
            leave.wait()
            seen.append(gc.isenabled())

    threads = [threading.Thread(target=compile_like) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()  # both hold it
    assert not gc.isenabled()
    leave.set()
    for t in threads:
        t.join()
    assert seen == [False, False]  # each, still inside, saw it off though the other may have left
    assert gc.isenabled()


def test_lowering_runs_with_the_collector_paused(monkeypatch):
    import gc

    import tilegrad.kernel
    import tilegrad.pipeline as pipeline

    states = []
    monkeypatch.setattr(tilegrad.kernel, "_SPECIALIZATIONS", {})  # compiled here, not taken from the session
    real = pipeline._lower
    monkeypatch.setattr(pipeline, "_lower", lambda *a: states.append(gc.isenabled()) or real(*a))
    monkeypatch.setenv("TILEGRAD_CACHE", "0")
    k = tilegrad.compile("activation_backward", "cpu")
    x = np.linspace(-1, 1, 37, dtype=np.float32).reshape(1, 1, 1, 37)
    np.testing.assert_array_equal(k(x=x, dy=np.ones_like(x), mode="relu"), (x > 0).astype(np.float32))
    assert gc.isenabled()
    assert states == [False]


LARGE_FRAMES_FROM_A_SMALL_STACK = """
import sys, threading
import numpy as np
import tilegrad, tilegrad.dsl as tg

@tg.op(outputs={"dx": tg.shaped("B", "H", dtype="g")})
def panel_gemm(g=tg.tensor("B V"), w=tg.tensor("V H", dtype="g")):
    return lambda b, h: tg.reduce_sum(w.shape[0], lambda v: g[b, v] * w[v, h])

rng = np.random.default_rng(0)
g = rng.standard_normal((int(sys.argv[1]), 700)).astype(np.float32)
w = rng.standard_normal((700, 130)).astype(np.float32)
k = tilegrad.compile("panel_gemm")
results = []

def call():  # checked call, then the bound fast path
    results.extend([k(g=g, w=w), k(g=g, w=w)])

threading.stack_size(256 << 10)
thread = threading.Thread(target=call)
thread.start()
thread.join()
want = g.astype(np.float64) @ w.astype(np.float64)
print(len(results), max(float(np.abs(r - want).max() / np.abs(want).max()) for r in results))
"""


@pytest.mark.parametrize("rows", [3, 96])  # on the calling thread alone; on the pool
def test_a_kernel_with_large_stack_buffers_runs_from_a_thread_with_a_small_stack(rows, tmp_path):
    """A GEMM's panels (pack-reused-panels: 256 KiB and more on the stack) called from a thread
    with a 256 KiB stack (musl's default is 128 KiB) run on a thread that has room: without that,
    the call overflowed the stack (a segfault, in a process of its own here)."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", LARGE_FRAMES_FROM_A_SMALL_STACK, str(rows)], capture_output=True,
                         text=True, env={**os.environ, "TILEGRAD_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-2000:]
    count, error = out.stdout.split()
    assert count == "2" and float(error) < 1e-5


def test_stack_bytes_count_every_static_stack_buffer():
    from test_passes import parse

    from tilegrad.pipeline import stack_bytes

    module = parse("""
    func.func @f(%n: index) {
      %panel = memref.alloca() : memref<65536xf32>
      %rows = memref.alloca() : memref<2x512xf64>
      func.return
    }
    """)
    assert stack_bytes(module) == 65536 * 4 + 2 * 512 * 8
