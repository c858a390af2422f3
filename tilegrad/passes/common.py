"""Small helpers the passes share: finding kernel arguments by role, building loops."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from tilegrad.dialect.values import INDEX


def arg_info(fn: func.FuncOp, index: int) -> dict[str, str]:
    if fn.arg_attrs is None:
        return {}
    attrs = fn.arg_attrs.data[index]
    assert isinstance(attrs, DictionaryAttr)
    return {k: v.data for k, v in attrs.data.items() if isinstance(v, StringAttr)}


def args_by_role(fn: func.FuncOp, role: str) -> list[BlockArgument]:
    return [a for i, a in enumerate(fn.body.block.args) if arg_info(fn, i).get("tg.role") == role]


def status_arg(fn_or_op: Operation) -> SSAValue:
    fn = fn_or_op if isinstance(fn_or_op, func.FuncOp) else enclosing_func(fn_or_op)
    return args_by_role(fn, "status")[0]


def enclosing_func(op: Operation) -> func.FuncOp:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    assert parent is not None, "op is not inside a func.func"
    return parent


def make_for(lb: SSAValue, ub: SSAValue, step: SSAValue, role: str, axis: int,
             iter_args: Sequence[SSAValue] = ()) -> tuple[scf.ForOp, Block]:
    """An scf.for tagged with the role ("parallel", "scatter", "check", "reduce", "tile", "block")
    and the axis it walks, which the tiler reads."""
    body = Block(arg_types=[INDEX, *(v.type for v in iter_args)])
    loop = scf.ForOp(lb, ub, step, iter_args, Region([body]))
    loop.attributes["tg.loop"] = StringAttr(role)
    loop.attributes["tg.axis"] = IntegerAttr(axis, i64)
    return loop, body


def loop_role(op: Operation) -> str | None:
    attr = op.attributes.get("tg.loop")
    return attr.data if isinstance(attr, StringAttr) else None


def stage_nests(block: Block) -> list[scf.ForOp]:
    """The top-level loop nests of a function body that are stages (in order)."""
    return [o for o in block.ops if isinstance(o, scf.ForOp) and "tg.stage" in o.attributes]


def number_stages(nests: Sequence[scf.ForOp]) -> None:
    """Tag the nests 0, 1, ... in order: the stage number each becomes a function for."""
    for number, nest in enumerate(nests):
        nest.attributes["tg.stage"] = IntegerAttr(number, i64)
