"""fuse-elementwise: inline an elementwise temporary into the stages that read it.

The DSL already fuses chains written as one expression; this pass fuses chains an author wrote as
separate stages (`t.assign(x * x); return dy * t`). A `tg.compute` into a temporary whose body is
elementwise (no `tg.reduce`, so recomputing it per use costs no more than reading it) is cloned
into every `memref.load` of that temporary, with the load's indices as its own; the compute and
the temporary then disappear, and with them a full-size buffer and a pass over memory. A body
with transcendental math is not inlined where a reduction reads it: each term would recompute it
(LRN reads its carried term at n channels per element), which costs more than the pass it saves;
nor is a large body inlined into a reduction or a scatter (max pooling's window scan feeds the
windows each input element gathers from).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, math, memref
from xdsl.dialects.builtin import ArrayAttr, FunctionType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect import tg
from tilegrad.passes.common import arg_info, functions, inside_reduction, read_memrefs


def _writes(op: Operation) -> SSAValue | None:
    if isinstance(op, (tg.ComputeOp, tg.ScatterAddOp)):
        return op.dest
    return None


def _fusable(producer: tg.ComputeOp, later: list[Operation]) -> bool:
    temp = producer.dest
    if any(isinstance(o, tg.ReduceOp) for o in producer.body.walk()):
        return False  # recomputing a reduction per use would multiply its cost
    if any(_writes(o) is temp for o in later):
        return False  # one writer only
    inputs = read_memrefs(producer)
    if temp in inputs:
        return False
    large = len(list(producer.body.walk())) > LARGE_BODY_OPS
    if (large or any(isinstance(o, _TRANSCENDENTAL) for o in producer.body.walk())) and any(
            inside_reduction(load) for o in later for load in o.walk()
            if isinstance(load, memref.LoadOp) and load.memref is temp):
        return False
    if large and any(isinstance(o, tg.ScatterAddOp) and temp in read_memrefs(o) for o in later):
        return False
    last_use = max((i for i, o in enumerate(later) if temp in read_memrefs(o)), default=-1)
    return not any(_writes(o) in inputs for o in later[: last_use + 1])


_TRANSCENDENTAL = (math.ExpOp, math.LogOp, math.TanhOp, math.ErfOp)
LARGE_BODY_OPS = 16
"""A body larger than this stays a vectorized stage of its own where inlining would run it once
per term of a reduction, or serially inside a scatter (whose writes may collide), once per use."""


def _inline(producer: tg.ComputeOp, load: memref.LoadOp) -> None:
    body = producer.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(body.args, load.indices))
    block = load.parent_block()
    value = None
    for op in body.ops:
        if isinstance(op, tg.YieldOp):
            value = mapping.get(op.arguments[0], op.arguments[0])
            break
        clone = op.clone(value_mapper=mapping)
        block.insert_op_before(clone, load)
        for old, new in zip(op.results, clone.results):
            mapping[old] = new
    load.res.replace_all_uses_with(value)
    load.detach()
    load.erase()


def fuse_function(fn: func.FuncOp) -> None:
    block = fn.body.block
    temps = {a for i, a in enumerate(block.args) if arg_info(fn, i).get("tg.role") == "temp"}
    for producer in [o for o in block.ops if isinstance(o, tg.ComputeOp) and o.dest in temps]:
        ops = list(block.ops)
        later = ops[ops.index(producer) + 1:]
        if not _fusable(producer, later):
            continue
        for op in later:
            for load in [o for o in op.walk() if isinstance(o, memref.LoadOp) and o.memref is producer.dest]:
                _inline(producer, load)
        temp = producer.dest
        producer.detach()
        producer.erase()
        if not temp.uses:
            _drop_argument(fn, temp)


def _drop_argument(fn: func.FuncOp, arg) -> None:
    index = list(fn.body.block.args).index(arg)
    fn.body.block.erase_arg(arg)
    if fn.arg_attrs is not None:
        attrs = list(fn.arg_attrs.data)
        del attrs[index]
        fn.arg_attrs = ArrayAttr(attrs)
    fn.function_type = FunctionType.from_lists([a.type for a in fn.body.block.args], [])


@dataclass(frozen=True)
class FuseElementwise(ModulePass):
    """Inline elementwise computes into temporaries into the stages that read them."""

    name = "fuse-elementwise"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            fuse_function(fn)
