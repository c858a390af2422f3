"""collapse-contiguous-rows: the two innermost loops of a plane walk it as one row.

A batch or group norm reads x[n, c, h, w] in a loop over h around a loop over w: at 56x56 the
inner loop is 56 elements, too short for the vectorizer (a remainder and, in a sum, a horizontal
add every row). When those two loops walk whole planes of contiguous tensors, they are one loop
over h*W + w, on a view of each tensor with its last two axes as one:

    scf.for %h = %c0 to %H { scf.for %w = %c0 to %W { ... %x[%n, %c, %h, %w] ... } }
becomes
    %x_rows = memref.collapse_shape %x [[0], [1], [2, 3]] : memref<?x?x?x?xf32> into memref<?x?x?xf32>
    %hw = arith.muli %H, %W : index
    scf.for %i = %c0 to %hw { ... %x_rows[%n, %c, %i] ... }

Unlike collapse-contiguous-nests, the tensors keep their arguments and shapes (the op still uses
H and W apart: in a mean's count, in another stage's windows); only these loops see the view.
A pair collapses when both loops run from 0 by 1, the inner to a size every tensor it indexes has
as its last axis (the same shape symbol, `tg.dims`, which the call checks), their variables only
index `t[..., h, w]` of contiguous (identity-layout) arguments, and the inner body has no regions.
A pair of sums (a sum over w inside a sum over h, added into it) becomes one sum: the terms are the
same, added in the same order, with no partial sum per row; the IR marks those additions
`reassoc`, which is what allows it. For targets without UB staging (cpu), before tiling.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, ArrayAttr, FloatAttr, IntegerAttr, MemRefType, ModuleOp, NoneAttr, i64
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.hints import isa

from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import INDEX
from tilegrad.passes.common import arg_dims, arg_roles, constant_index, extent_symbol, functions, loop_role, sum_loop


@dataclass
class _Pair:
    outer: scf.ForOp
    inner: scf.ForOp
    accesses: list[memref.LoadOp | memref.StoreOp]


def _from_zero_by_one(loop: scf.ForOp) -> bool:
    return constant_index(loop.lb) == 0 and constant_index(loop.step) == 1


def _zero(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr) and owner.value.value.data == 0


def _sum_into(outer: scf.ForOp, inner: scf.ForOp) -> bool:
    """outer: acc + (Σ_w term, from 0), with a reassociable add, and nothing else carried."""
    if len(outer.iter_args) != 1 or sum_loop(inner) is None or not _zero(inner.iter_args[0]):
        return False
    combine = outer.body.block.last_op.operands[0].owner
    if not isinstance(combine, arith.AddfOp) or "reassoc" not in str(combine.fastmath):
        return False
    acc, total = outer.body.block.args[1], inner.results[0]
    if {combine.lhs, combine.rhs} != {acc, total} or total.uses.get_length() != 1 or acc.uses.get_length() != 1:
        return False
    inner_acc = inner.body.block.args[1]
    return inner_acc.uses.get_length() == 1  # only the running sum reads it


def _row_pair(fn: func.FuncOp, outer: scf.ForOp, roles: dict[SSAValue, str]) -> _Pair | None:
    role = loop_role(outer)
    if role not in (LoopRole.PARALLEL, LoopRole.REDUCE) or not _from_zero_by_one(outer):
        return None
    body = [o for o in outer.body.block.ops if not isinstance(o, (scf.YieldOp, arith.ConstantOp))]
    loops = [o for o in body if isinstance(o, scf.ForOp)]
    if len(loops) != 1 or loop_role(loops[0]) != role or not _from_zero_by_one(loops[0]):
        return None
    inner = loops[0]
    if role == LoopRole.PARALLEL and (outer.iter_args or inner.iter_args or len(body) != 1):
        return None
    if role == LoopRole.REDUCE and (len(body) != 2 or not _sum_into(outer, inner)):
        return None
    width = extent_symbol(fn, inner.ub)
    if width is None or any(o.regions for o in inner.body.block.ops):
        return None
    h, w = outer.body.block.args[0], inner.body.block.args[0]
    accesses = []
    for op in inner.body.block.ops:
        if not any(v in (h, w) for v in op.operands):
            continue
        if not isinstance(op, (memref.LoadOp, memref.StoreOp)) or len(op.indices) < 2:
            return None
        if list(op.indices[-2:]) != [h, w] or any(v in (h, w) for v in op.indices[:-2]):
            return None
        if isinstance(op, memref.StoreOp) and op.value in (h, w):
            return None
        dims = arg_dims(fn, op.memref)
        if dims is None or dims[-1] != width or not isinstance(op.memref.type.layout, NoneAttr):
            return None
        if roles.get(op.memref) not in ("input", "output"):  # temporaries: placed by the tiler as they are
            return None
        accesses.append(op)
    return _Pair(outer, inner, accesses) if accesses else None


class _Views:
    """One row view per tensor, made at the function's entry."""

    def __init__(self, entry: Block):
        self.entry, self.views = entry, {}

    def of(self, tensor: SSAValue) -> SSAValue:
        if tensor not in self.views:
            assert isa(tensor.type, MemRefType)
            shape = tensor.type.get_shape()
            rank = len(shape)
            groups = [[axis] for axis in range(rank - 2)] + [[rank - 2, rank - 1]]
            rows = shape[-2] * shape[-1] if min(shape[-2:]) >= 0 else DYNAMIC_INDEX
            view = memref.CollapseShapeOp(
                operands=[tensor], result_types=[MemRefType(tensor.type.element_type, [*shape[:-2], rows])],
                properties={"reassociation": ArrayAttr([ArrayAttr([IntegerAttr(a, i64) for a in g]) for g in groups])})
            if tensor.name_hint:
                view.result.name_hint = f"{tensor.name_hint}_rows"
            self.entry.insert_op_before(view, self.entry.first_op)
            self.views[tensor] = view.result
        return self.views[tensor]


def _collapse(pair: _Pair, views: _Views) -> None:
    outer, inner = pair.outer, pair.inner
    block = outer.parent_block()
    for op in [o for o in outer.body.block.ops if isinstance(o, arith.ConstantOp)]:
        op.detach()
        block.insert_op_before(op, outer)
    extent = arith.MuliOp(outer.ub, inner.ub)
    block.insert_op_before(extent, outer)
    body = Block(arg_types=[INDEX, *(v.type for v in outer.iter_args)])
    merged = scf.ForOp(outer.lb, extent.result, outer.step, outer.iter_args, [body])
    merged.attributes.update(outer.attributes)
    body.args[0].name_hint = "i"
    for old, new in zip(inner.body.block.args[1:], body.args[1:]):
        old.replace_all_uses_with(new)
    for op in list(inner.body.block.ops):
        op.detach()
        body.add_op(op)
    for access in pair.accesses:
        place = [views.of(access.memref), *access.indices[:-2], body.args[0]]
        access.operands = place if isinstance(access, memref.LoadOp) else [access.value, *place]
    block.insert_op_before(merged, outer)
    for old, new in zip(outer.results, merged.results):
        old.replace_all_uses_with(new)
    outer.detach()
    outer.erase()


@dataclass(frozen=True)
class CollapseContiguousRows(ModulePass):
    """Pairs of loops that walk whole planes of contiguous tensors become one loop over a row view."""

    name = "collapse-contiguous-rows"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            views = _Views(fn.body.block)
            roles = arg_roles(fn)
            pairs = [p for p in (_row_pair(fn, o, roles) for o in fn.walk() if isinstance(o, scf.ForOp)) if p]
            for pair in pairs:  # disjoint: an inner loop has no loop inside, an outer one does
                _collapse(pair, views)
