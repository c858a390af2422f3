"""The pool's LLVM module (see runtime.py): worker loop, launch and barrier over the pool's state.

Built only when the disk cache has no compiled pool; a kernel's driver (driver.py) uses its types.
"""

from __future__ import annotations

import platform

from llvmlite import ir

from tilegrad.abi import (
    ARGV,
    ARRIVED,
    BLOCKS,
    BODY,
    FUTEX_WAIT_PRIVATE,
    FUTEX_WAKE_PRIVATE,
    GENERATION,
    PENDING,
    PHASE,
    SPINS,
    SYS_FUTEX,
    UB,
    UB_STRIDE,
    WORKERS,
)

I32, I64 = ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()
DRIVER_TYPE = ir.FunctionType(VOID, [PTR, PTR, I64, I64, I64, I64, PTR, PTR])
"""A kernel's driver: (argv, ub base, ub stride, blocks, worker, workers, pool, barrier)."""


def _pause_instruction() -> str:
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i686", "x86"):
        return "pause"
    if machine in ("aarch64", "arm64"):
        return "yield"
    return ""


class _PoolModule:
    """Builds the pool's LLVM module: worker loop, launch and barrier over a POOL_BYTES state."""

    def __init__(self):
        self.module = ir.Module(name="tilegrad_pool")
        self.syscall = ir.Function(self.module, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
        self.pause = ir.InlineAsm(ir.FunctionType(VOID, []), _pause_instruction(), "", side_effect=True)
        self.wait = self._wait_while_equal()
        self.wake = self._wake()
        self._barrier()
        self._worker()
        self._launch()

    @staticmethod
    def field(b: ir.IRBuilder, pool, offset: int):
        return b.gep(pool, [ir.Constant(I64, offset)], source_etype=ir.IntType(8))

    def _function(self, name: str, result, params, linkage: str | None = None):
        fn = ir.Function(self.module, ir.FunctionType(result, params), name)
        if linkage:
            fn.linkage = linkage
        fn.attributes.add("nounwind")
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    def _wake(self):
        fn, b = self._function("wake_all", VOID, [PTR], "internal")
        b.call(self.syscall, [ir.Constant(I64, SYS_FUTEX), fn.args[0], ir.Constant(I64, FUTEX_WAKE_PRIVATE),
                              ir.Constant(I64, 2**31 - 1)])
        b.ret_void()
        return fn

    def _wait_while_equal(self):
        """Return once the int32 at `word` differs from `value`: spin, then sleep on the futex."""
        fn, b = self._function("wait_while_equal", VOID, [PTR, I32], "internal")
        word, value = fn.args
        head, spin, sleep, done = (fn.append_basic_block(n) for n in ("head", "spin", "sleep", "done"))
        entry = b.block
        b.branch(head)
        b.position_at_end(head)
        count = b.phi(I64)
        count.add_incoming(ir.Constant(I64, 0), entry)
        current = b.load_atomic(word, "acquire", 4, typ=I32)
        b.cbranch(b.icmp_signed("!=", current, value), done, spin)
        b.position_at_end(spin)
        b.call(self.pause, [])
        more = b.add(count, ir.Constant(I64, 1))
        b.cbranch(b.icmp_signed("<", count, ir.Constant(I64, SPINS)), head, sleep)
        count.add_incoming(more, spin)
        b.position_at_end(sleep)
        b.call(self.syscall, [ir.Constant(I64, SYS_FUTEX), word, ir.Constant(I64, FUTEX_WAIT_PRIVATE),
                              b.zext(value, I64), ir.Constant(PTR, None)])
        b.branch(head)
        count.add_incoming(ir.Constant(I64, SPINS), sleep)
        b.position_at_end(done)
        b.ret_void()
        return fn

    def _barrier(self):
        """Every worker of the job arrives before any leaves (sense by a phase counter)."""
        fn, b = self._function("tilegrad_barrier", VOID, [PTR])
        pool = fn.args[0]
        phase_word, arrived_word = self.field(b, pool, PHASE), self.field(b, pool, ARRIVED)
        phase = b.load_atomic(phase_word, "acquire", 4, typ=I32)
        workers = b.trunc(b.load(self.field(b, pool, WORKERS), typ=I64), I32)
        before = b.atomic_rmw("add", arrived_word, ir.Constant(I32, 1), "acq_rel")
        last, wait = fn.append_basic_block("last"), fn.append_basic_block("wait")
        b.cbranch(b.icmp_signed("==", before, b.sub(workers, ir.Constant(I32, 1))), last, wait)
        b.position_at_end(last)
        b.atomic_rmw("xchg", arrived_word, ir.Constant(I32, 0), "release")
        b.atomic_rmw("add", phase_word, ir.Constant(I32, 1), "acq_rel")
        b.call(self.wake, [phase_word])
        b.ret_void()
        b.position_at_end(wait)
        b.call(self.wait, [phase_word, phase])
        b.ret_void()
        self.barrier = fn

    def _worker(self):
        """Worker `index` (>= 1): wait for a new generation, run its share, count itself done."""
        fn, b = self._function("tilegrad_worker", VOID, [PTR, I64])
        pool, index = fn.args
        generation_word = self.field(b, pool, GENERATION)
        entry = b.block
        loop, run, finish = (fn.append_basic_block(n) for n in ("loop", "run", "finish"))
        b.branch(loop)
        b.position_at_end(loop)
        seen = b.phi(I32)
        seen.add_incoming(ir.Constant(I32, 0), entry)
        b.call(self.wait, [generation_word, seen])
        current = b.load_atomic(generation_word, "acquire", 4, typ=I32)
        workers = b.load(self.field(b, pool, WORKERS), typ=I64)
        b.cbranch(b.icmp_signed("<", index, workers), run, loop)
        seen.add_incoming(current, b.block)
        b.position_at_end(run)
        self._call_body(b, pool, index)
        pending_word = self.field(b, pool, PENDING)
        before = b.atomic_rmw("sub", pending_word, ir.Constant(I32, 1), "acq_rel")
        wake_launcher = fn.append_basic_block("wake_launcher")
        b.cbranch(b.icmp_signed("==", before, ir.Constant(I32, 1)), wake_launcher, finish)
        b.position_at_end(wake_launcher)
        b.call(self.wake, [pending_word])
        b.branch(finish)
        b.position_at_end(finish)
        b.branch(loop)
        seen.add_incoming(current, finish)

    def _call_body(self, b: ir.IRBuilder, pool, worker):
        field = self.field
        body = b.load(field(b, pool, BODY), typ=DRIVER_TYPE.as_pointer())
        args = [b.load(field(b, pool, ARGV), typ=PTR), b.load(field(b, pool, UB), typ=PTR),
                b.load(field(b, pool, UB_STRIDE), typ=I64), b.load(field(b, pool, BLOCKS), typ=I64), worker,
                b.load(field(b, pool, WORKERS), typ=I64), pool, self.barrier]
        b.call(body, args)

    def _launch(self):
        """Publish a job, wake the workers, run worker 0's share here, wait for the others."""
        fn, b = self._function("tilegrad_launch", VOID, [PTR, PTR, PTR, PTR, I64, I64, I64])
        pool, body, argv, ub, ub_stride, blocks, workers = fn.args
        for offset, value in ((BODY, body), (ARGV, argv), (UB, ub), (UB_STRIDE, ub_stride), (BLOCKS, blocks),
                              (WORKERS, workers)):
            b.store(value, self.field(b, pool, offset))
        pending_word, generation_word = self.field(b, pool, PENDING), self.field(b, pool, GENERATION)
        b.atomic_rmw("xchg", pending_word, b.trunc(b.sub(workers, ir.Constant(I64, 1)), I32), "release")
        b.atomic_rmw("add", generation_word, ir.Constant(I32, 1), "acq_rel")
        b.call(self.wake, [generation_word])
        self._call_body(b, pool, ir.Constant(I64, 0))
        head, wait, done = (fn.append_basic_block(n) for n in ("head", "wait", "done"))
        b.branch(head)
        b.position_at_end(head)
        pending = b.load_atomic(pending_word, "acquire", 4, typ=I32)
        b.cbranch(b.icmp_signed("==", pending, ir.Constant(I32, 0)), done, wait)
        b.position_at_end(wait)
        b.call(self.wait, [pending_word, pending])
        b.branch(head)
        b.position_at_end(done)
        b.ret_void()


def pool_module() -> str:
    """The pool's module as LLVM IR text."""
    return str(_PoolModule().module)
