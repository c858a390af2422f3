"""outline-sibling-nests: a stage's large sibling loop nests become functions LLVM compiles apart.

LLVM optimizes and compiles a function on one thread. Max pooling 2-D's stage is one function
holding, for each plane, the window scan and the gather: 0.40 s of LLVM on one core after all of
its Python work, the longest cold compile of the library. In a large stage (STAGE_OPS ops):

- the outermost loop whose body holds two or more large nests of loops (each at least NEST_OPS
  ops and more than one loop deep) is split into one loop per nest over the same range, where
  that keeps every result: its body is those nests and index arithmetic (made again in each
  loop that uses it), and every tensor one nest writes and another touches is indexed by the
  loop's own variable on the same axis in every access, so that no iteration of one nest
  touches what another iteration of the other writes (max pooling: the scan writes `chosen`
  and the gather reads it, both at [n, c, ...] of the channel loop);
- all of the new loops but the largest (or of the stage body's own large nests) move into
  private functions, called where they were: a call runs a whole loop (a call per plane instead
  cost max pooling 2-D 5% of its time);
- a loop that cannot be split keeps its nests, and nothing moves.

`pipeline.to_llvm` hands each function to LLVM as a module of its own, so the parts are
optimized side by side.

What the call passes:
- each tensor the nest uses, as the stage's own argument with its tg attributes (so it stays
  `noalias` and keeps its role: the guard build's status words) or as the opaque alias the nest
  reads it through (separate-strided-load-groups: a read-only name, `noalias` as in the stage);
  a row view of either (collapse-contiguous-rows) is made again inside;
- constants are made again inside (LLVM still folds them into the loops);
- every other value the nest uses (loop variables, bounds, parameters) as a scalar;
- the stage's status words, where the guard build reports an access out of bounds.

A nest is left where it is if it carries values out (scf.for results) or uses a memref made
inside the stage otherwise. The same operations run on the same values, in an order that the
split's rule keeps equivalent: results are bitwise the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.region_utils import iter_used_values_defined_above
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import OpaqueAliasOp
from tilegrad.errors import ScheduleError
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    args_by_role,
    feeding_ops,
    functions,
    is_part,
    ops_and_loops,
    pure_arith,
    stage_number,
    viewed,
)
from tilegrad.schedule import Directive, Outline

STAGE_OPS = 2000
"""Ops in a stage worth splitting: LLVM takes about 0.3 s on one of this size (max pooling 2-D's:
about 2700 ops, 0.40 s), a stage of half that about 0.15 s."""
NEST_OPS = 300
"""Ops in a nest worth a function of its own (max pooling 2-D's scan: about 600 ops, 0.15 s of
LLVM)."""


def _live_ins(nest: scf.ForOp) -> list[SSAValue]:
    """The values the nest uses that are defined outside it (its bounds first), each once."""
    return list(dict.fromkeys([*nest.operands, *iter_used_values_defined_above(nest.body)]))


def _view_chain(value: SSAValue, fn: func.FuncOp) -> tuple[SSAValue, list[memref.CollapseShapeOp]] | None:
    """The memref to pass for `value` (a stage argument, or an opaque alias of one) and the row
    views from it to `value`, outermost first; None if `value` is neither seen through row views."""
    chain: list[memref.CollapseShapeOp] = []
    while isinstance(value.owner, memref.CollapseShapeOp):
        chain.insert(0, value.owner)
        value = value.owner.src
    if isinstance(value, BlockArgument) and value.block is fn.body.block:
        return value, chain
    if isinstance(value.owner, OpaqueAliasOp) and value.owner.parent_op() is fn:
        return value, chain
    return None



def _movable(fn: func.FuncOp, nest: scf.ForOp) -> bool:
    """Whether the nest can run in a function of its own: it carries no values out, and every
    memref it uses is a stage argument (or an opaque alias of one) seen through row views."""
    return not nest.results and all(_view_chain(value, fn) is not None for value in _live_ins(nest)
                                    if isinstance(value.type, MemRefType))

class _Outline:
    def __init__(self, fn: func.FuncOp, nest: scf.ForOp, name: str):
        self.fn, self.nest, self.name = fn, nest, name

    def build(self) -> func.FuncOp | None:
        """The function that runs the nest, and the call in its place; None: the nest stays."""
        if not _movable(self.fn, self.nest):
            return None
        body = Block()
        mapping: dict[SSAValue, SSAValue] = {}
        call_args: list[SSAValue] = []
        arg_attrs: list[DictionaryAttr] = []

        def parameter(value: SSAValue, attrs: DictionaryAttr) -> SSAValue:
            if value not in mapping:
                mapping[value] = body.insert_arg(value.type, len(body.args))
                mapping[value].name_hint = value.name_hint
                call_args.append(value)
                arg_attrs.append(attrs)
            return mapping[value]

        made: list[Operation] = []
        for value in _live_ins(self.nest):
            owner = value.owner
            if isinstance(owner, arith.ConstantOp):
                made.append(owner.clone(value_mapper=mapping))
                mapping[value] = made[-1].results[0]
            elif isinstance(value.type, MemRefType):
                root, chain = _view_chain(value, self.fn)  # (a chain: _movable)
                tensor = viewed(root)
                parameter(root, self.fn.arg_attrs.data[tensor.index] if self.fn.arg_attrs else DictionaryAttr({}))
                for view in chain:
                    if view.result not in mapping:
                        made.append(view.clone(value_mapper=mapping))
                        mapping[view.result] = made[-1].results[0]
            else:
                parameter(value, DictionaryAttr({}))
        for status in args_by_role(self.fn, "status"):  # where the guard build reports
            parameter(status, self.fn.arg_attrs.data[status.index])
        body.add_ops(made)
        self.nest.parent_block().insert_op_before(func.CallOp(self.name, call_args, []), self.nest)
        _move(self.nest, body, mapping)
        body.add_op(func.ReturnOp())
        return func.FuncOp(self.name, ([a.type for a in body.args], []), Region([body]), visibility="private",
                           arg_attrs=ArrayAttr(arg_attrs))


def _large_nests(block: Block, nest_ops: int) -> list[tuple[int, scf.ForOp]]:
    """(ops, nest) of the block's nests of at least `nest_ops` ops and more than one loop deep (a
    call per row costs more than a call per plane)."""
    found = []
    for op in block.ops:
        if isinstance(op, scf.ForOp):
            ops, loops = ops_and_loops(op)
            if ops >= nest_ops and loops > 1:
                found.append((ops, op))
    return found


def _simple(op: Operation) -> bool:
    """Loops, branches, arithmetic, loads and stores: the only effects are the loads and stores."""
    return (isinstance(op, (scf.ForOp, scf.IfOp, scf.YieldOp, memref.LoadOp, memref.StoreOp)) or pure_arith(op)
            or op.name.startswith("math."))


def _accesses(op: Operation) -> list[tuple[SSAValue, Sequence[SSAValue], bool]]:
    """(tensor, indices, is a store) of every load and store in `op`."""
    return [(viewed(o.memref), o.indices, isinstance(o, memref.StoreOp)) for o in op.walk()
            if isinstance(o, (memref.LoadOp, memref.StoreOp))]


def _pieces(body: Block, nests: list[scf.ForOp]) -> list[list[Operation]] | None:
    """The body's ops in pieces, one per large nest: the nest and the ops before it since the
    previous nest (index arithmetic apart, which is made again where it is used); None if an op
    follows the last nest or a piece's value is used outside it."""
    pieces: list[list[Operation]] = []
    pending: list[Operation] = []
    for op in body.ops:
        if op in nests:
            pieces.append([*pending, op])
            pending = []
        elif not (pure_arith(op) or isinstance(op, scf.YieldOp)):
            pending.append(op)
    if pending:
        return None
    for piece in pieces:
        inside = {o for op in piece for o in op.walk()}
        if any(use.operation not in inside for op in piece for r in op.results for use in r.uses):
            return None
    return pieces


def _live_ins_of(piece: list[Operation]) -> list[SSAValue]:
    inside = {o for op in piece for o in op.walk()}
    used = [v for op in piece for o in op.walk() for v in o.operands if v.owner not in inside
            and not (isinstance(v, BlockArgument) and v.block.parent_op() in inside)]
    return list(dict.fromkeys(used))


def _split_pieces(loop: scf.ForOp, nests: list[scf.ForOp]) -> list[list[Operation]] | None:
    """The loop's body in pieces, one per large nest, where running each piece in a loop of its
    own over the same range keeps every result (None where not): the nests carry no values out,
    and every tensor one piece writes and another touches is indexed by the loop's own variable on
    the same axis in each access, so that no iteration of one piece touches what another
    iteration of the other writes."""
    body = loop.body.block
    if loop.results or any(nest.results for nest in nests):
        return None
    pieces = _pieces(body, nests)
    if pieces is None or not all(_simple(o) for piece in pieces for op in piece for o in op.walk()):
        return None
    variable = body.args[0]
    accesses = [[a for op in piece for a in _accesses(op)] for piece in pieces]
    for i, mine in enumerate(accesses):
        written = {tensor for tensor, _, store in mine if store}
        for j, theirs in enumerate(accesses):
            touched = {tensor for tensor, _, _ in theirs} & written if i != j else set()
            shared = [(t, ix) for t, ix, _ in mine + theirs if t in touched]
            if not shared:
                continue
            axes = {tuple(k for k, index in enumerate(ix) if index is variable) for _, ix in shared}
            if len(axes) != 1 or not next(iter(axes)):
                return None
    return pieces


def _split_loop(loop: scf.ForOp, pieces: list[list[Operation]]) -> list[scf.ForOp]:
    """Run each piece of the loop's body (_split_pieces) in a loop of its own over the same range
    (the index arithmetic before them made again in each): the loops, the first the loop itself."""
    body = loop.body.block
    variable = body.args[0]
    last: Operation = loop
    loops = [loop]
    for piece in pieces[1:]:  # each moves into a loop of its own, after the loop; the first stays
        new_body = Block(arg_types=[variable.type])
        feeding = feeding_ops(_live_ins_of(piece), body)
        mapping: dict[SSAValue, SSAValue] = {variable: new_body.args[0]}
        new_body.add_ops(op.clone(value_mapper=mapping) for op in feeding)  # (index arithmetic)
        _move(piece, new_body, mapping)
        new_body.add_op(scf.YieldOp())
        for op in reversed(feeding):  # (what only the moved piece used)
            if not any(result.uses for result in op.results):
                op.detach()
                op.erase()
        split = scf.ForOp(loop.lb, loop.ub, loop.step, [], Region([new_body]))
        split.attributes.update(loop.attributes)
        split.attributes.pop("tg.stage", None)  # (the stage is still the one that was split)
        loop.parent_block().insert_op_after(split, last)
        last = split
        loops.append(split)
    return loops


def _move(ops: Operation | list[Operation], into: Block, mapping: dict[SSAValue, SSAValue]) -> None:
    """Move the op (or ops, in order) to the end of `into`, their uses of the values in `mapping` replaced."""
    ops = ops if isinstance(ops, list) else [ops]
    inside = {o for op in ops for o in op.walk()}
    for op in ops:
        op.detach()
        into.add_op(op)
    for old, new in mapping.items():
        old.replace_uses_with_if(new, lambda use: use.operation in inside)


def _moves(fn: func.FuncOp, block: Block, nest_ops: int) -> tuple[scf.ForOp | None, list, list[int]]:
    """What outline-sibling-nests does in the block, decided without changing it: (the loop to
    split first or None, the nests or the split's pieces, the indices of those that move). The
    first block (outermost) that holds two or more large nests: all but its largest move out; a
    block with one large nest is searched inside it. Where a loop's body holds them, the loop is
    split first (its pieces: the largest stays in the loop, by the ops of its nests), so that a
    call runs the whole loop, not one iteration; where it cannot be, nothing moves."""
    nests = _large_nests(block, nest_ops)
    if len(nests) == 1:
        inner = nests[0][1]
        inside = _large_nests(inner.body.block, nest_ops)
        if len(inside) < 2:
            return _moves(fn, inner.body.block, nest_ops)
        pieces = _split_pieces(inner, [nest for _, nest in inside])
        if pieces is None:
            return None, [], []  # (a call per iteration: max pooling 2-D ran 0.95x as fast, a call per plane)
        sizes = [sum(ops_and_loops(op)[0] for op in piece) for piece in pieces]
        largest = sizes.index(max(sizes))
        moving = [index for index, piece in enumerate(pieces) if index != largest  # (a piece's loop has no results)
                  and all(_view_chain(value, fn) is not None for value in _live_ins_of(piece)
                          if isinstance(value.type, MemRefType))]
        return inner, pieces, moving
    if not nests:
        return None, [], []
    largest = max(range(len(nests)), key=lambda index: nests[index][0])
    return None, [nest for _, nest in nests], [index for index, (_, nest) in enumerate(nests)
                                                if index != largest and _movable(fn, nest)]


@dataclass(frozen=True)
class OutlineSiblingNests(ModulePass):
    """Move all but the largest of a stage's large sibling nests into private functions; with
    `directives` (Outline, printed, `;`-separated: passes/applying.py), those of the stages they
    name, however large the stage (`outlined=False`: none)."""

    name = "outline-sibling-nests"
    stage_ops: int = STAGE_OPS
    nest_ops: int = NEST_OPS
    directives: str | None = None
    takes_text: ClassVar[str] = "Outline"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Outline)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stage_ops = self.stage_ops if self.directives is None else 0  # (named: the stage's size does not matter)
        candidates = [(Outline(stage=stage_number(fn)), fn) for fn in functions(op) if not is_part(fn)]
        for fn, directive in chosen(self, candidates, "stage"):
            made = outline_function(fn, stage_ops, self.nest_ops)
            if not made and self.directives is not None and directive.stage is not None:
                raise ScheduleError(f"{directive}: stage {directive.stage} has no sibling nest of {self.nest_ops} ops "
                                    f"or more that {self.name} can move to a function of its own")
            op.body.block.add_ops(made)


def outline_function(fn: func.FuncOp, stage_ops: int = STAGE_OPS, nest_ops: int = NEST_OPS) -> list[func.FuncOp]:
    """Outline the stage's large sibling nests: the parts made (none for a part, a small stage or
    nests that cannot move)."""
    if is_part(fn) or ops_and_loops(fn)[0] < stage_ops:
        return []
    split, nests, moving = _moves(fn, fn.body.block, nest_ops)
    if split is not None and moving:  # the pieces in loops of their own, each then a nest
        nests = _split_loop(split, nests)
    made: list[func.FuncOp] = []
    for index in moving:
        callee = _Outline(fn, nests[index], f"{fn.sym_name.data}_nest{len(made)}").build()
        if callee is not None:
            made.append(callee)
    return made


def outlines(fn: func.FuncOp, stage_ops: int = STAGE_OPS, nest_ops: int = NEST_OPS) -> bool:
    """Whether outline-sibling-nests moves nests of the stage out (`fn` is unchanged: decided
    before anything moves, _moves)."""
    return not is_part(fn) and ops_and_loops(fn)[0] >= stage_ops and bool(_moves(fn, fn.body.block, nest_ops)[2])
