"""unswitch-invariant-selects: a loop with a select on a condition that is the same in every
iteration becomes two copies of the loop, one per side of the condition, chosen once before it.

    for j:                                 if lb < ub:
      flag = rows[i] > 0                     flag = rows[i] > 0
      a = <long chain>(j)          ->        if flag: for j: out[j] = <long chain>(j)
      out[j] = flag ? a : b(j)               else:    for j: out[j] = b(j)

A select only picks a value: both sides are computed in every iteration, so a chain that one side
of a data-dependent but loop-invariant test needs (max pooling's NaN chain, needed only in planes
of y that hold a NaN) costs every iteration. LLVM does not unswitch a loop on a select (it merges
the selects into the chain instead), so the pass does it: in each copy the select is its picked
side, and what only the other side used is erased. The condition is computed from values defined
outside the loop, arithmetic, and loads from tensors no store in the loop can reach (a tilegrad
temp, which nothing else aliases, or any tensor when the loop writes only temps); the loads move
before the loop under a test that it runs at all, so no index is read that the loop would not
have read. A copy doubles the loop's code and LLVM's work on it, so the pass versions a loop only
when one of its copies drops at least a quarter of the loop's operations, and never a stage's
own loop (a stage is one loop nest).

Each versioning is `Specialize(stage=S, axis=A, condition=C)`: the loop's stage and axis, and the
test as `condition_text` prints it (`y_plane_finite[i0, i1] == 0.0`); with `directives`, the pass
versions exactly the loops they name (versioned=False: left one loop, the select kept).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.passes.applying import given_directives, in_force, refuse_unnamed
from tilegrad.passes.common import (
    arg_info,
    arg_roles,
    constant_index,
    enclosing_func,
    erase_unused,
    functions,
    loop_axis,
    pure_arith,
    stage_number,
    tensor_name,
    viewed,
    written_memrefs,
)
from tilegrad.passes.loop_utils import in_cold_version
from tilegrad.schedule import Directive, Specialize

WORTH = 4
"""A copy must drop at least 1/WORTH of the loop's operations."""


def _invariant_ops(loop: scf.ForOp, temps: set[SSAValue]) -> list[Operation]:
    """The ops of the loop's body (not of loops inside it, which may not run) whose values are the
    same in every iteration, in program order: region-free arithmetic and loads of tensors no store
    in the loop can reach, of values from outside the loop or of other such ops."""
    invariant: list[Operation] = []
    found: set[Operation] = set()
    written: set[SSAValue] | None = None
    body = loop.body.block
    for op in body.ops:  # an operand of a body op is defined outside the loop, or by the body
        if any(o.owner is body or (o.owner not in found and o.owner.parent is body) for o in op.operands):
            continue
        if isinstance(op, memref.LoadOp):
            if written is None:
                written = written_memrefs(loop)
            tensor = viewed(op.memref)
            if tensor in written or not (tensor in temps or written <= temps):
                continue
        elif not pure_arith(op):
            continue
        invariant.append(op)
        found.add(op)
    return invariant


def _chain(cond: SSAValue, invariant: list[Operation]) -> list[Operation]:
    """The invariant ops `cond` is computed by, in program order."""
    needed, pending = set(), [cond]
    while pending:
        owner = pending.pop().owner
        if isinstance(owner, Operation) and owner not in needed and owner in invariant:
            needed.add(owner)
            pending.extend(owner.operands)
    return [o for o in invariant if o in needed]


def _use_counts(loop: scf.ForOp) -> dict[Operation, int]:
    uses: dict[Operation, int] = {}
    for op in loop.body.walk():
        for operand in op.operands:
            if isinstance(operand.owner, Operation):
                uses[operand.owner] = uses.get(operand.owner, 0) + 1
    return uses


def _dropped(loop: scf.ForOp, selects: list[arith.SelectOp], picked_true: bool, uses: dict[Operation, int]) -> int:
    """How many of the loop's ops would be unused once each of `selects` is its picked side."""
    uses = dict(uses)
    dead: set[Operation] = set()
    pending = [s.rhs if picked_true else s.lhs for s in selects if s.lhs is not s.rhs]
    while pending:
        owner = pending.pop().owner
        if not isinstance(owner, Operation) or owner in dead or not loop.is_ancestor(owner) or owner.regions:
            continue
        uses[owner] -= 1
        if uses[owner] == 0 and (pure_arith(owner) or isinstance(owner, memref.LoadOp)):
            dead.add(owner)
            pending.extend(owner.operands)
    return len(dead)


def _data_tests(loop: scf.ForOp, temps: set[SSAValue]) -> dict[SSAValue, tuple[list[arith.SelectOp], list[Operation]]]:
    """The loop's invariant tests on data that selects pick by: each with its selects and the ops
    that compute it (a test on indices alone is for the passes that split loops by index ranges)."""
    if "tg.stage" in loop.attributes:
        return {}
    invariant = _invariant_ops(loop, temps)
    if not any(isinstance(o, memref.LoadOp) for o in invariant):
        return {}
    tests = {r for o in invariant for r in o.results if r.type == IntegerType(1)}
    by_condition: dict[SSAValue, list[arith.SelectOp]] = {}
    for op in loop.body.walk():
        if isinstance(op, arith.SelectOp) and op.cond in tests and not in_cold_version(op):  # (a cold one: as it is)
            by_condition.setdefault(op.cond, []).append(op)
    found = {}
    for cond, selects in by_condition.items():
        chain = _chain(cond, invariant)
        if any(isinstance(o, memref.LoadOp) for o in chain):
            found[cond] = (selects, chain)
    return found


def _candidate(loop: scf.ForOp, temps: set[SSAValue]) -> tuple[SSAValue, list[Operation]] | None:
    """A condition to version `loop` on, and the ops that compute it: the first data test whose
    selects, once picked, leave a copy without a WORTH-th of the loop's ops."""
    tests = _data_tests(loop, temps)
    if not tests:
        return None
    uses, size = _use_counts(loop), sum(1 for _ in loop.body.walk())
    for cond, (selects, chain) in tests.items():
        if max(_dropped(loop, selects, side, uses) for side in (True, False)) * WORTH >= size:
            return cond, chain
    return None


def _resolve(copy: scf.ForOp, cond: SSAValue, picked_true: bool) -> None:
    selects = [o for o in copy.body.walk() if isinstance(o, arith.SelectOp) and o.cond is cond]
    for select in selects:
        select.result.replace_all_uses_with(select.lhs if picked_true else select.rhs)
        select.detach()
        select.erase()
    erase_unused(o for o in copy.body.walk() if pure_arith(o) or isinstance(o, memref.LoadOp))


def unswitch(loop: scf.ForOp, cond: SSAValue, chain: list[Operation]) -> scf.IfOp:
    """Version `loop` on `cond` (computed by `chain`, which moves before the loop)."""
    block = loop.parent_block()
    for op in chain:
        op.detach()
    copies = [loop.clone(), loop.clone()]
    for copy, picked_true in zip(copies, (True, False)):
        _resolve(copy, cond, picked_true)
    types = [r.type for r in loop.results]
    arms = [Region([Block([copy, scf.YieldOp(*copy.results)])]) for copy in copies]
    versions = scf.IfOp(cond, types, arms[0], arms[1])
    lb, ub = constant_index(loop.lb), constant_index(loop.ub)
    if lb is not None and ub is not None and lb < ub:
        replacement = versions
        block.insert_ops_before([*chain, versions], loop)
    else:  # the condition reads memory: only where the loop would
        runs = arith.CmpiOp(loop.lb, loop.ub, "slt")
        guarded = Block([*chain, versions, scf.YieldOp(*versions.results)])
        skipped = [Region([Block([scf.YieldOp(*loop.iter_args)])])] if types else []
        replacement = scf.IfOp(runs.result, types, Region([guarded]), *skipped)
        block.insert_ops_before([runs, replacement], loop)
    for old, new in zip(loop.results, replacement.results):
        old.replace_all_uses_with(new)
    loop.detach()
    loop.erase()
    return versions


_SYMBOLS = {"addi": "+", "addf": "+", "subi": "-", "subf": "-", "muli": "*", "mulf": "*", "divf": "/",
            "andi": "and", "ori": "or", "eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
            "oeq": "==", "one": "!=", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">="}
"""Operators by op name (and comparisons by predicate) as the condition prints them; any other
predicate prints as its name (`une`), any other op as a call (`maximumf(a, b)`)."""


def condition_text(value: SSAValue, outermost: bool = True) -> str:
    """A test as a Specialize directive states it: tensors and arguments by name (`y[i0, i1]`,
    `x.dim(2)`), loop indices by their axis (`i3`), constants by value; stable from one compile to
    the next, where the IR's value numbers are not."""
    owner = value.owner
    if isinstance(owner, Block):
        parent = owner.parent_op()
        if isinstance(parent, func.FuncOp):
            return arg_info(parent, owner.args.index(value)).get("tg.name", f"arg{owner.args.index(value)}")
        return f"i{loop_axis(parent)}" if isinstance(parent, scf.ForOp) else "?"
    if isinstance(owner, arith.ConstantOp):
        data = owner.value.value.data
        return str(bool(data)).lower() if owner.result.type == IntegerType(1) else str(data)
    if isinstance(owner, memref.LoadOp):
        indices = ", ".join(condition_text(i) for i in owner.indices)
        return f"{tensor_name(enclosing_func(owner), owner.memref)}[{indices}]"
    if isinstance(owner, memref.DimOp):
        return f"{tensor_name(enclosing_func(owner), owner.source)}.dim({condition_text(owner.index)})"
    name = owner.name.split(".", 1)[1]
    if isinstance(owner, (arith.CmpiOp, arith.CmpfOp)):
        predicates = arith.CMPI_COMPARISON_OPERATIONS if isinstance(owner, arith.CmpiOp) else \
            arith.CMPF_COMPARISON_OPERATIONS
        name = predicates[owner.predicate.value.data]
    parts = [condition_text(o, False) for o in owner.operands]
    if name not in _SYMBOLS or len(parts) != 2:
        return f"{name}({', '.join(parts)})"
    text = f"{parts[0]} {_SYMBOLS[name]} {parts[1]}"
    return text if outermost else f"({text})"


def version_loops(fn: func.FuncOp, versions: Callable[[Directive], bool]) -> list[Directive]:
    """Version each loop of `fn` that has a candidate (outermost first: a condition is tested as far
    out as it is invariant; then the copies, which may have another) whose own directive `versions`
    accepts; the own directives of all candidates met."""
    temps = {value for value, role in arg_roles(fn).items() if role == "temp"}
    seen: list[Directive] = []
    pending = [o for o in fn.body.walk() if isinstance(o, scf.ForOp)]
    while pending:
        loop = pending.pop(0)
        found = None if in_cold_version(loop) else _candidate(loop, temps)
        if found is None:
            continue
        own = Specialize(stage=stage_number(fn), axis=loop_axis(loop), condition=condition_text(found[0]))
        seen.append(own)
        if versions(own):
            inside = {o for o in loop.walk() if isinstance(o, scf.ForOp)}
            pending = [o for o in pending if o not in inside]
            versioned = unswitch(loop, *found)
            pending[:0] = [o for o in versioned.walk() if isinstance(o, scf.ForOp)]
    return seen


def versioned_loops(module: ModuleOp) -> tuple[Directive, ...]:
    """The loops unswitch-invariant-selects versions in `module`, by their own directives: its
    decision, which the cpu planner lists. As the pass goes, outermost first, without versioning
    (a copy of a function is 0.1 s of max pooling 3-D's compile); where a versioned loop has
    another data test or loops inside it, its copies may be versioned again, which shows only once
    the first is made: there a copy of the function is versioned instead. (Not foreseen: a test
    that becomes invariant only once a select is picked, `(flag ? y[r] : x[r, j]) > 0`.)"""
    found: list[Directive] = []
    for fn in functions(module):
        temps = {value for value, role in arg_roles(fn).items() if role == "temp"}
        decided: list[Directive] = []
        for loop in [o for o in fn.body.walk() if isinstance(o, scf.ForOp)]:
            if (candidate := _candidate(loop, temps)) is None:
                continue
            if any(isinstance(o, scf.ForOp) for o in loop.body.walk()) or len(_data_tests(loop, temps)) > 1:
                decided = version_loops(fn.clone(), lambda own: True)
                break
            decided.append(Specialize(stage=stage_number(fn), axis=loop_axis(loop),
                                      condition=condition_text(candidate[0])))
        found += decided
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class UnswitchInvariantSelects(ModulePass):
    """Version a loop on a select whose condition does not change in it; with `directives`, the loops
    they name."""

    name = "unswitch-invariant-selects"
    directives: str | None = None
    """Specialize directives, printed, `;`-separated (passes/applying.py): the loops they name."""
    takes_text: ClassVar[str] = "Specialize (on a data test)"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Specialize)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        given = given_directives(self, self.takes)
        seen = [own for fn in functions(op) for own in version_loops(fn, lambda own: in_force(given, own) is not None)]
        refuse_unnamed(self, given, seen, "loop with a select on an invariant data test")
