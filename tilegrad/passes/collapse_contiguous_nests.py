"""collapse-contiguous-nests: a stage that maps contiguous tensors element by element is one flat loop.

A perfect nest of parallel loops whose body touches every tensor at `t[i0, ..., ik]` (all the
nest's variables, in order) does the same work as one loop over the flat index, when each such
tensor is contiguous (the identity layout, which the call specializes on) and has the nest's
shape (the same shape symbols, `tg.dims`, which the call checks). One loop is what the rest of the
pipeline is good at: the core split sees all the work (a [1, 1, 1024, 16384] tensor otherwise
splits on an axis of one row), tiles and UB copies are as long as the target allows instead of one
row, and streaming stores see runs long enough to stream.

A tensor collapses only if nothing else in the function needs its shape: every access to it is
such a whole-index access in a collapsible nest, and its dims serve only as those nests' bounds.
Its argument then becomes rank 1 (`tg.dims = "N*C*H*W"`), which the call passes as a flat view of
the same memory; a nest collapses when all the tensors it indexes whole do.

    scf.for %i0 = %c0 to %n ... { scf.for %i1 = %c0 to %m ... {
      %v = memref.load %x[%i0, %i1] ...  memref.store %w, %y[%i0, %i1] ... } }
becomes
    %total = memref.dim %x, %c0 : memref<?xf32>
    scf.for %i = %c0 to %total ... { %v = memref.load %x[%i] ...  memref.store %w, %y[%i] ... }
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.transforms.dead_code_elimination import region_dce

from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import INDEX
from tilegrad.passes.common import (
    arg_dims,
    constant_index,
    extent_symbol,
    functions,
    loop_role,
    make_for,
    stage_nests,
)


@dataclass
class _Nest:
    loops: list[scf.ForOp]
    whole: list[Operation] = field(default_factory=list)
    """The loads and stores indexed by all the nest's variables, in order."""

    @property
    def tensors(self) -> set[SSAValue]:
        return {op.memref for op in self.whole}


def _perfect_parallel_nest(fn: func.FuncOp, nest: scf.ForOp) -> _Nest | None:
    """The nest if it is collapsible on its own: at least two parallel loops from 0 by 1, each the
    only op of the one around it, bounds from outside, a body without regions whose variables only
    index whole accesses to contiguous arguments of the nest's shape."""
    loops = [nest]
    while True:
        ops = [o for o in loops[-1].body.block.ops if not isinstance(o, scf.YieldOp)]
        if len(ops) == 1 and isinstance(ops[0], scf.ForOp):
            loops.append(ops[0])
        else:
            break
    if len(loops) < 2 or any(o.regions for o in ops):
        return None
    for loop in loops:
        if (loop_role(loop) != LoopRole.PARALLEL or loop.iter_args or constant_index(loop.lb) != 0
                or constant_index(loop.step) != 1 or extent_symbol(fn, loop.ub) is None):
            return None
    ivs = [loop.body.block.args[0] for loop in loops]
    shape = [extent_symbol(fn, loop.ub) for loop in loops]  # constants and dims: defined outside the nest
    found = _Nest(loops)
    for op in ops:
        if not any(operand in ivs for operand in op.operands):
            continue
        if not isinstance(op, (memref.LoadOp, memref.StoreOp)) or list(op.indices) != ivs:
            return None
        if isinstance(op, memref.StoreOp) and op.value in ivs:
            return None
        mem = op.memref
        if not isinstance(mem.type.layout, NoneAttr) or arg_dims(fn, mem) != shape:
            return None
        found.whole.append(op)
    return found if found.whole else None


def _collapsible(fn: func.FuncOp) -> tuple[list[_Nest], set[SSAValue]]:
    """The nests to collapse and the arguments that become flat: a fixed point, since an argument
    used any other way keeps its shape, and then so does every nest indexing it whole."""
    nests = [n for n in (_perfect_parallel_nest(fn, s) for s in stage_nests(fn.body.block)) if n is not None]
    while True:
        flat = set().union(*(n.tensors for n in nests))
        whole = {op for n in nests for op in n.whole}
        bounds = {loop for n in nests for loop in n.loops}
        kept = {arg for arg in flat if not all(_collapsing_use(use.operation, whole, bounds) for use in arg.uses)}
        remaining = [n for n in nests if not n.tensors & kept]
        if len(remaining) == len(nests):
            return nests, flat
        nests = remaining


def _collapsing_use(op: Operation, whole: set[Operation], bounds: set[scf.ForOp]) -> bool:
    if op in whole:
        return True
    return isinstance(op, memref.DimOp) and all(  # a bound of a loop the collapse removes
        isinstance(use.operation, scf.ForOp) and use.operation in bounds and use.index == 1
        for use in op.result.uses)


def _flatten_argument(fn: func.FuncOp, arg: BlockArgument) -> BlockArgument:
    """The argument as rank 1 (its whole-index accesses are re-indexed by the nests' collapse; its
    dims, the old nests' bounds, die with them)."""
    type_ = arg.type
    assert isinstance(type_, MemRefType)
    shape = type_.get_shape()
    total = DYNAMIC_INDEX if any(s < 0 for s in shape) else math.prod(shape)
    dims = arg_dims(fn, arg) or []
    flat = Rewriter.replace_value_with_new_type(arg, MemRefType(type_.element_type, [total]))
    attrs = list(fn.arg_attrs.data)
    info = dict(attrs[arg.index].data)
    info["tg.dims"] = StringAttr("*".join(dims))
    attrs[arg.index] = DictionaryAttr(info)
    fn.arg_attrs = ArrayAttr(attrs)
    return flat


def _collapse(nest: _Nest, entry: Block) -> None:
    outer, inner = nest.loops[0], nest.loops[-1]
    zero = arith.ConstantOp(IntegerAttr(0, INDEX))
    total = memref.DimOp(nest.whole[0].memref, zero.result)
    one = arith.ConstantOp(IntegerAttr(1, INDEX))
    for op in (zero, total, one):
        entry.insert_op_before(op, outer)
    loop, body = make_for(zero.result, total.result, one.result, LoopRole.PARALLEL, 0)
    for name, value in outer.attributes.items():
        if name != "tg.loop":  # the new loop walks axis 0
            loop.attributes[name] = value
    entry.insert_op_before(loop, outer)
    flat_index = body.args[0]
    flat_index.name_hint = "i"
    for op in list(inner.body.block.ops):
        if isinstance(op, scf.YieldOp):
            continue
        op.detach()
        body.add_op(op)
        if op in nest.whole:
            indexed = [op.memref, flat_index] if isinstance(op, memref.LoadOp) else [op.value, op.memref, flat_index]
            op.operands = indexed
    body.add_op(scf.YieldOp())
    outer.detach()
    outer.erase()


class CollapseContiguousNests(ModulePass):
    """Elementwise stages over contiguous tensors of one shape become one loop over the flat index."""

    name = "collapse-contiguous-nests"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            nests, flat = _collapsible(fn)
            if not nests:
                continue
            entry = fn.body.block
            flat = [_flatten_argument(fn, arg) for arg in sorted(flat, key=lambda a: a.index)]
            for nest in nests:
                _collapse(nest, entry)
            region_dce(fn.body)  # the old bounds and dims
            fn.function_type = func.FunctionType.from_lists([a.type for a in entry.args], [])
