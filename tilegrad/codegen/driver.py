"""A kernel's driver: every stage over one worker's share of the blocks, a barrier between stages.

The pool (`codegen/runtime.py`) calls the driver once per worker; a call on the calling thread
alone calls it once with one worker and no barrier. Worker w of W runs blocks
[B*w/W, B*(w+1)/W), each with its own UB at `ub + block * ub_stride` (a null base when the target
stages nothing). Every op gets the same driver: only the list of stage functions differs.
"""

from __future__ import annotations

from llvmlite import ir

from tilegrad.codegen.launcher import DRIVER
from tilegrad.codegen.pool_module import DRIVER_TYPE, I64, PTR, VOID

BARRIER_TYPE = ir.FunctionType(VOID, [PTR])
STAGE_TYPE = ir.FunctionType(VOID, [PTR, I64, PTR])
"""A stage: `@NAME(argument array, block, ub)` (lower-to-llvm's wrapper)."""


def driver_module(stages: list[str]) -> str:
    """The driver as a module of its own, the stages declared (they are compiled apart)."""
    module = ir.Module()
    declared = [ir.Function(module, STAGE_TYPE, name) for name in stages]
    fn = ir.Function(module, DRIVER_TYPE, DRIVER)
    fn.attributes.add("nounwind")
    argv, ub, ub_stride, blocks, worker, workers, pool, barrier = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    first = b.sdiv(b.mul(blocks, worker), workers)
    last = b.sdiv(b.mul(blocks, b.add(worker, ir.Constant(I64, 1))), workers)
    slot = b.alloca(PTR)  # a typed view of the barrier pointer, so llvmlite can call it
    b.store(barrier, slot)
    barrier = b.load(slot, typ=BARRIER_TYPE.as_pointer())
    for number, stage in enumerate(declared):
        head, body, after = (fn.append_basic_block(f"stage{number}_{part}") for part in ("head", "body", "after"))
        entry = b.block
        b.branch(head)
        b.position_at_end(head)
        block = b.phi(I64)
        block.add_incoming(first, entry)
        b.cbranch(b.icmp_signed("<", block, last), body, after)
        b.position_at_end(body)
        b.call(stage, [argv, block, b.gep(ub, [b.mul(block, ub_stride)], source_etype=ir.IntType(8))])
        block.add_incoming(b.add(block, ir.Constant(I64, 1)), body)
        b.branch(head)
        b.position_at_end(after)
        if number < len(stages) - 1:
            wait, go = fn.append_basic_block(f"stage{number}_barrier"), fn.append_basic_block(f"stage{number + 1}")
            b.cbranch(b.icmp_signed(">", workers, ir.Constant(I64, 1)), wait, go)
            b.position_at_end(wait)
            b.call(barrier, [pool])
            b.branch(go)
            b.position_at_end(go)
    b.ret_void()
    return str(module)
