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

A temporary a contraction reads as an operand stays stored (the decision `Inline(stage, tensor,
inlined=False)`): a load of it inside a reduction of a later stage whose indices leave out one of
that stage's output indices reads each element again for every value of that index (attention
backward's ds = p (dp - delta) in dq = ds k: once per column d), so inlined, every term of the
product would recompute it, where stored, it is computed once and loaded; that is, where its body
costs more than the load it replaces (it reads two tensors or more, or does float arithmetic). A
temporary read once per element of the reader (a row sum of it) is inlined as before.

With `directives` (Inline, printed, `;`-separated: passes/applying.py), the temporaries they name,
each by the stage writing it (the op's tg.compute, tg.scatter_add and tg.check ops numbered in
order, before any is inlined) and its name: `inlined=True` inlines one the pass would keep stored,
`inlined=False` keeps one stored; a temporary no directive names stays stored. The cpu planner
lists one for every temporary the pass can inline (inlines).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, math, memref
from xdsl.dialects.builtin import AnyFloat, ArrayAttr, FunctionType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect import tg
from tilegrad.passes.applying import given_directives, in_force, refuse_unnamed
from tilegrad.passes.common import arg_info, depends_on, functions, inside_reduction, read_memrefs, tensor_name
from tilegrad.schedule import Directive, Inline

STAGE_OPS = (tg.ComputeOp, tg.ScatterAddOp, tg.CheckOp)


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


def reread_operand(producer: tg.ComputeOp, later: list[Operation]) -> bool:
    """Whether a later stage reads the temporary `producer` writes inside a reduction at indices that
    leave out one of its output indices (each element read again across that output loop: an operand
    of a contraction), and `producer`'s body costs more than a load (two tensors or more read, or
    float arithmetic)."""
    body = [o for o in producer.body.walk() if o is not producer]
    arithmetic = any(not isinstance(o, (memref.LoadOp, arith.ConstantOp, tg.YieldOp))
                     and any(isinstance(r.type, AnyFloat) for r in o.results) for o in body)
    if not arithmetic and len(read_memrefs(producer)) < 2:
        return False
    for stage in later:
        if not isinstance(stage, tg.ComputeOp):
            continue
        outputs = stage.body.block.args
        for load in stage.walk():
            if (isinstance(load, memref.LoadOp) and load.memref is producer.dest and inside_reduction(load)
                    and any(not any(depends_on(i, out) for i in load.indices) for out in outputs)):
                return True
    return False


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


def fuse_function(fn: func.FuncOp, given: tuple[Directive, ...] | None = None) -> list[Inline]:
    """Inline `fn`'s elementwise temporaries, as `given` directives say (None: as the pass decides);
    every temporary it can inline, each by its own directive (inlined=False: kept stored)."""
    block = fn.body.block
    temps = {a for i, a in enumerate(block.args) if arg_info(fn, i).get("tg.role") == "temp"}
    numbers = {o: n for n, o in enumerate(o for o in block.ops if isinstance(o, STAGE_OPS))}
    found = []
    for producer in [o for o in block.ops if isinstance(o, tg.ComputeOp) and o.dest in temps]:
        ops = list(block.ops)
        later = ops[ops.index(producer) + 1:]
        if not _fusable(producer, later):
            continue
        own = Inline(stage=numbers[producer], tensor=tensor_name(fn, producer.dest),
                     inlined=not reread_operand(producer, later))
        found.append(own)
        directive = in_force(given, own)
        if directive is None or directive.off:
            continue
        for op in later:
            for load in [o for o in op.walk() if isinstance(o, memref.LoadOp) and o.memref is producer.dest]:
                _inline(producer, load)
        temp = producer.dest
        producer.detach()
        producer.erase()
        if not temp.uses:
            _drop_argument(fn, temp)
    return found


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
    """Inline elementwise computes into temporaries into the stages that read them; with
    `directives`, the temporaries they name."""

    name = "fuse-elementwise"
    directives: str | None = None
    """Inline directives, printed, `;`-separated (passes/applying.py): the temporaries they name."""
    takes_text: ClassVar[str] = "Inline"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Inline)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        given = given_directives(self, self.takes)
        found = [own for fn in functions(op) for own in fuse_function(fn, given)]
        refuse_unnamed(self, given, found, "elementwise temporary")


def inlines(module: ModuleOp) -> tuple[Directive, ...]:
    """The cpu planner's Inline directives: every temporary the pass can inline, each as it decides
    (found on a copy: what is inlined first decides what can be after)."""
    return tuple(dict.fromkeys(own for fn in functions(module.clone()) for own in fuse_function(fn)))
