"""Small helpers the passes share: finding kernel arguments by role, building loops."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, Float32Type, Float64Type, IntegerAttr, StringAttr, i64
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue

from tilegrad.dialect.tg import LoopAttr, LoopRole, OpaqueAliasOp, ReduceOp
from tilegrad.dialect.values import INDEX
from tilegrad.errors import ArgumentError
from tilegrad.passes.math_polynomials import float_ops


def arg_info(fn: func.FuncOp, index: int) -> dict[str, str]:
    if fn.arg_attrs is None:
        return {}
    attrs = fn.arg_attrs.data[index]
    assert isinstance(attrs, DictionaryAttr)
    return {k: v.data for k, v in attrs.data.items() if isinstance(v, StringAttr)}


def dim_symbol(fn: func.FuncOp, value: SSAValue, axis: int) -> str | None:
    """One axis's shape symbol of a function argument (a static size is its digits), or None if
    it is unknown."""
    if not isinstance(value, BlockArgument) or value.block is not fn.body.block:
        return None
    dims = arg_info(fn, value.index).get("tg.dims", "").split()
    shape = value.type.get_shape()
    if len(dims) != len(shape) or not 0 <= axis < len(shape):
        return None
    if shape[axis] >= 0:
        return str(shape[axis])
    return None if dims[axis] == "?" else dims[axis]


def arg_dims(fn: func.FuncOp, value: SSAValue) -> list[str] | None:
    """A function argument's shape symbols, or None if one is unknown (a static size is its digits)."""
    if not isinstance(value, BlockArgument) or value.block is not fn.body.block:
        return None
    dims = [dim_symbol(fn, value, axis) for axis in range(len(value.type.get_shape()))]
    return None if None in dims else dims


def extent_symbol(fn: func.FuncOp, extent: SSAValue) -> str | None:
    """The shape symbol a loop bound is: a constant, or a dim of an argument that names that axis
    (whether or not its other axes have names)."""
    value = constant_index(extent)
    if value is not None:
        return str(value)
    owner = extent.owner
    if isinstance(owner, memref.DimOp) and (axis := constant_index(owner.index)) is not None:
        return dim_symbol(fn, owner.source, axis)
    return None


def viewed(value: SSAValue) -> SSAValue:
    """The tensor a value is: itself, or for a row view (collapse-contiguous-rows) or an opaque alias
    (separate-strided-load-groups) its source."""
    while isinstance(value.owner, (memref.CollapseShapeOp, OpaqueAliasOp)):
        value = value.owner.operands[0]
    return value


def arg_roles(fn: func.FuncOp) -> dict[SSAValue, str]:
    """Each memref argument's role ("input", "output", ...), and each row view's, its tensor's."""
    roles = {a: arg_info(fn, i).get("tg.role", "") for i, a in enumerate(fn.body.block.args)}
    for op in fn.body.block.ops:
        if isinstance(op, memref.CollapseShapeOp) and viewed(op.src) in roles:
            roles[op.result] = roles[viewed(op.src)]
    return roles


def args_by_role(fn: func.FuncOp, role: str) -> list[BlockArgument]:
    return [a for i, a in enumerate(fn.body.block.args) if arg_info(fn, i).get("tg.role") == role]


def status_arg(fn_or_op: Operation) -> SSAValue:
    fn = fn_or_op if isinstance(fn_or_op, func.FuncOp) else enclosing_func(fn_or_op)
    return args_by_role(fn, "status")[0]


def add_function_arg(fn: func.FuncOp, type_: Attribute, name: str, role: str, **info: str) -> BlockArgument:
    """Append an argument to `fn` with its tg.name, tg.role (and any other tg.* strings in `info`)."""
    entry = fn.body.block
    arg = entry.insert_arg(type_, len(entry.args))
    arg.name_hint = name
    attrs = list(fn.arg_attrs.data) if fn.arg_attrs else []
    attrs.append(DictionaryAttr({"tg.name": StringAttr(name), "tg.role": StringAttr(role),
                                 **{f"tg.{k}": StringAttr(v) for k, v in info.items()}}))
    fn.arg_attrs = ArrayAttr(attrs)
    fn.function_type = func.FunctionType.from_lists([a.type for a in entry.args], [])
    return arg


def feeding_ops(values: Sequence[SSAValue], block: Block, stop: Operation | None = None) -> list[Operation]:
    """The ops of `block` the values are computed from (transitively within the block, not through
    `stop`), in block order: what must be cloned along with code that reads them elsewhere."""
    needed: set[Operation] = set()
    pending = list(values)
    while pending:
        owner = pending.pop().owner
        if isinstance(owner, Operation) and owner is not stop and owner.parent_block() is block \
                and owner not in needed:
            needed.add(owner)
            pending.extend(owner.operands)
    return [o for o in block.ops if o in needed]


def functions(module: Operation) -> list[func.FuncOp]:
    """The func.func ops of a module, for passes that rewrite one function at a time."""
    return [fn for fn in module.ops if isinstance(fn, func.FuncOp)]


def tensors_by_stage(module: Operation, pick: Callable[[Operation], SSAValue | None]) -> dict[str, list[int]]:
    """Tensor name -> the stages with an op for which `pick` gives that tensor (an argument, or a
    view of one): what `tilegrad plan` lists a pass's work by. A part (STAGE_nestK) is its stage's."""
    found: dict[str, list[int]] = {}
    for fn in functions(module):
        number = stage_number(fn)
        for op in fn.walk():
            tensor = pick(op)
            if tensor is not None:
                name = tensor_name(fn, tensor)
                if number not in found.setdefault(name, []):
                    found[name].append(number)
    return found


def stage_number(fn: func.FuncOp) -> int:
    """The stage a function is (`NAME_stageN`) or is a part of (`NAME_stageN_nestK`); 0 for a kernel
    of one stage."""
    stage = fn.sym_name.data.rsplit("_stage", 1)
    digits = stage[1].split("_")[0] if len(stage) == 2 else ""
    return int(digits) if digits.isdigit() else 0


def tensor_name(fn: func.FuncOp, tensor: SSAValue) -> str:
    """The op's name of the tensor an argument of `fn` (or a view of one) is."""
    index = fn.body.block.args.index(viewed(tensor))
    return arg_info(fn, index).get("tg.name", f"arg{index}")


def ops_and_loops(op: Operation) -> tuple[int, int]:
    """How many ops `op` holds (itself included) and how many of them are scf.for loops: what
    LLVM's time on it grows with."""
    ops = loops = 0
    for inner in op.walk():
        ops += 1
        loops += isinstance(inner, scf.ForOp)
    return ops, loops


def is_part(fn: func.FuncOp) -> bool:
    """A private function is part of a stage (outline-sibling-nests), not a stage the driver calls."""
    return fn.sym_visibility is not None and fn.sym_visibility.data == "private"


def enclosing_func(op: Operation) -> func.FuncOp:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    assert parent is not None, "op is not inside a func.func"
    return parent


def make_for(lb: SSAValue, ub: SSAValue, step: SSAValue, role: LoopRole, axis: int,
             iter_args: Sequence[SSAValue] = ()) -> tuple[scf.ForOp, Block]:
    """An scf.for marked `#tg.loop<role, axis = axis>`: what it walks, which the passes read."""
    body = Block(arg_types=[INDEX, *(v.type for v in iter_args)])
    loop = scf.ForOp(lb, ub, step, iter_args, Region([body]))
    mark_loop(loop, role, axis)
    return loop, body


REDUCTION_ROLES = (LoopRole.REDUCE, LoopRole.REDUCE_PART)


def mark_loop(op: Operation, role: LoopRole, axis: int) -> None:
    op.attributes["tg.loop"] = LoopAttr(role, axis)


def copy_iteration(loop: scf.ForOp, into: Block, at: SSAValue) -> dict[SSAValue, SSAValue]:
    """Append the loop body's ops (not its yield) to `into` with the loop variable replaced by
    `at`; returns the map from the body's values to their copies."""
    mapping: dict[SSAValue, SSAValue] = {loop.body.block.args[0]: at}
    for op in loop.body.block.ops:
        if not isinstance(op, scf.YieldOp):
            into.add_op(op.clone(value_mapper=mapping))
    return mapping


def whole_steps(lb: SSAValue, ub: SSAValue, step: int, before: Operation) -> tuple[SSAValue, SSAValue]:
    """(step, split) as index values inserted before `before`: split = lb + ⌊(ub - lb)/step⌋·step,
    where a loop by `step` stops and the original loop takes the rest."""
    size = arith.ConstantOp(IntegerAttr(step, INDEX))
    count = arith.SubiOp(ub, lb)
    steps = arith.DivUIOp(count, size)
    whole = arith.MuliOp(steps, size)
    split = arith.AddiOp(lb, whole)
    for op in (size, count, steps, whole, split):
        before.parent_block().insert_op_before(op, before)
    return size.result, split.result


def pure_arith(op: Operation) -> bool:
    """Arithmetic and dims: no memory effects, so it may be moved, shared or repeated freely."""
    return isinstance(op, memref.DimOp) or (op.name.startswith("arith.") and not op.regions)


def erase_unused(ops: Iterable[Operation]) -> None:
    """Erase those of `ops` (in program order) whose results nobody uses, last first, so an op
    that only fed an erased one goes too."""
    for op in reversed(list(ops)):
        if not any(r.uses for r in op.results):
            op.detach()
            op.erase()


def loop_role(op: Operation) -> LoopRole | None:
    attr = op.attributes.get("tg.loop")
    return attr.role.data if isinstance(attr, LoopAttr) else None


def loop_axis(op: Operation) -> int:
    """The axis of its stage's domain a loop walks (0 for an op that is not a marked loop)."""
    attr = op.attributes.get("tg.loop")
    return attr.axis.data if isinstance(attr, LoopAttr) else 0


def stage_nests(block: Block) -> list[scf.ForOp]:
    """The top-level loop nests of a function body that are stages (in order)."""
    return [o for o in block.ops if isinstance(o, scf.ForOp) and "tg.stage" in o.attributes]


def number_stages(nests: Sequence[scf.ForOp]) -> None:
    """Tag the nests 0, 1, ... in order: the stage number each becomes a function for."""
    for number, nest in enumerate(nests):
        nest.attributes["tg.stage"] = IntegerAttr(number, i64)


def perfect_chain(nest: scf.ForOp) -> list[scf.ForOp]:
    """The perfect nest of loops of the stage's role from the stage's outer loop inwards (a body may
    also compute index values, e.g. the next loop's bounds)."""
    loops = [nest]
    while True:
        body = [o for o in loops[-1].body.block.ops if not isinstance(o, scf.YieldOp)]
        inner = [o for o in body if isinstance(o, scf.ForOp)]
        if (len(inner) == 1 and loop_role(inner[0]) == loop_role(nest)
                and all(o is inner[0] or _index_arithmetic(o) for o in body)):
            loops.append(inner[0])
        else:
            return loops


def _index_arithmetic(op: Operation) -> bool:
    return isinstance(op, (arith.ConstantOp, *_INDEX_ARITHMETIC)) and not isinstance(op, memref.DimOp)


def constant_index(value: SSAValue) -> int | None:
    """The integer a value is defined to be by an arith.constant, else None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def same_value(a: SSAValue, b: SSAValue, matched: dict[SSAValue, SSAValue] | None = None) -> bool:
    """Equal by construction: the same value, equal constants, or the same dim / index arithmetic of
    equal operands (loop bounds built twice, e.g. by two stages or two reductions). `matched` maps
    values of b's side to a's taken as equal (the variables of loops already matched)."""
    if a is b or (matched is not None and matched.get(b) is a):
        return True
    oa, ob = a.owner, b.owner
    if not isinstance(oa, Operation) or not isinstance(ob, Operation) or type(oa) is not type(ob):
        return False
    if isinstance(oa, arith.ConstantOp):
        return oa.value == ob.value
    if isinstance(oa, _INDEX_ARITHMETIC) and oa.attributes == ob.attributes:
        return oa.properties == ob.properties and all(same_value(x, y, matched)
                                                      for x, y in zip(oa.operands, ob.operands))
    return False


_INDEX_ARITHMETIC = (memref.DimOp, arith.AddiOp, arith.MuliOp, arith.MinSIOp, arith.CmpiOp, arith.SelectOp)


def same_range(a: scf.ForOp, b: scf.ForOp, matched: dict[SSAValue, SSAValue] | None = None) -> bool:
    """Two loops over the same range (bounds and step equal by construction)."""
    return all(same_value(x, y, matched) for x, y in ((a.lb, b.lb), (a.ub, b.ub), (a.step, b.step)))


def depends_on(value: SSAValue, variable: SSAValue, block: Block | None = None) -> bool:
    """Whether `value` is computed from `variable` by region-free ops (index arithmetic); with
    `block`, by the ops of that block (or is it)."""
    seen: set[Operation] = set()
    pending = [value]
    while pending:
        v = pending.pop()
        if v is variable:
            return True
        owner = v.owner
        if not isinstance(owner, Operation) or owner in seen:
            continue
        if (not owner.regions) if block is None else owner.parent_block() is block:
            seen.add(owner)
            pending.extend(owner.operands)
    return False


IN_ORDER = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])
"""The adds of a jammed or chunked sweep (chunk-row-sweeps, jam-sweep-terms) in order (no reassoc):
with reassoc, LLVM's loop vectorizer ran the sweep itself as a vector reduction across r at 4 rows,
gathering w (a third of the speed) and adding the terms in another order."""

SHORT_TRIPS = 8
"""A reduction of at most this many constant trips is a window unroll-short-reductions unrolls
whole (unroll-reuse-loops leaves it to it)."""


ARITHMETIC_BOUND = 8
"""Float ops per element moved from which a loop is bound by its arithmetic, not by memory (a
float32 exp is 27 once expanded). LLVM's vectorizer runs only two of such a loop's vectors side by
side, which leaves the cores waiting on each vector's long dependence chain: lower-to-llvm asks
for four (INTERLEAVED_VECTORS). Measured on the znver1 host, 2 threads, 32M float32: swish
backward 36 -> 31 ms, a DSL tanh-GELU backward 70 -> 59; batch norm's backward with its activation
(20 float ops, 9 loads and stores) ran 1.3x slower with four, and max pooling's windows no
faster. Whether it still gains from streaming stores depends on the host (Target.compute_bound_ops)."""


def arithmetic_bound(loop: scf.ForOp, bound: int = ARITHMETIC_BOUND) -> bool:
    """An innermost loop that carries nothing and does at least `bound` float ops per load or
    store that walks with it (a load the loop does not move is made once, before it)."""
    if loop.iter_args:
        return False
    variable = loop.body.block.args[0]
    work = walked = 0
    for op in loop.body.block.ops:
        if op.regions:
            return False
        work += float_ops(op)
        if isinstance(op, memref.LoadOp | memref.StoreOp) and any(depends_on(i, variable) for i in op.indices):
            walked += 1
    return walked > 0 and work >= bound * walked


def read_memrefs(op: Operation) -> set[SSAValue]:
    """The memrefs `op` (or any op inside it) loads from (a row view's: its tensor)."""
    return {viewed(o.memref) for o in op.walk() if isinstance(o, memref.LoadOp)}


def written_memrefs(op: Operation) -> set[SSAValue]:
    """The memrefs `op` (or any op inside it) stores to (a row view's: its tensor)."""
    return {viewed(o.memref) for o in op.walk() if isinstance(o, memref.StoreOp)}


def inside_reduction(op: Operation) -> bool:
    """Whether `op` sits inside a reduction: a tg.reduce, or a loop lowered from one."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, ReduceOp) or (isinstance(parent, scf.ForOp) and
                                               loop_role(parent) in REDUCTION_ROLES):
            return True
        parent = parent.parent_op()
    return False


def depends_within(value: SSAValue, root: SSAValue, within: Operation) -> bool:
    """Whether `value` is computed from `root` by ops inside `within`."""
    work, seen = [value], set()
    while work:
        v = work.pop()
        if v is root:
            return True
        owner = v.owner
        if not isinstance(owner, Operation) or owner in seen or not within.is_ancestor(owner):
            continue
        seen.add(owner)
        work.extend(owner.operands)
    return False


def sum_loop(op: Operation) -> scf.ForOp | None:
    """The plain loop of a float sum (`op` itself, or the plain arm of a blocked/plain choice)."""
    loop = op
    if isinstance(op, scf.IfOp):
        arm = [o for o in op.false_region.block.ops if isinstance(o, scf.ForOp)]
        loop = arm[0] if len(arm) == 1 else None
    if not isinstance(loop, scf.ForOp) or len(loop.iter_args) != 1:
        return None
    if not isinstance(loop.iter_args[0].type, (Float32Type, Float64Type)):
        return None
    combined = loop.body.block.last_op.operands[0].owner
    if not isinstance(combined, arith.AddfOp) or combined.lhs is not loop.body.block.args[1]:
        return None
    if any(isinstance(o, (memref.StoreOp, scf.ForOp)) for o in loop.body.walk() if o is not loop):
        return None
    return loop


def walks_columns(loop: scf.ForOp, column: SSAValue) -> bool:
    r = loop.body.block.args[0]
    return any(isinstance(o, memref.LoadOp) and o.indices and o.indices[-1] is column
               and any(depends_within(i, r, loop) for i in o.indices[:-1]) for o in loop.body.walk())


def blocked_shape(choice: scf.IfOp) -> bool:
    """lower-tg-to-loops' blocked arm: a loop over blocks holding one inner 'reduce_part' loop."""
    outer = [o for o in choice.true_region.block.ops if isinstance(o, scf.ForOp)]
    if len(outer) != 1 or len(outer[0].iter_args) != 1:
        return False
    parts = [o for o in outer[0].body.block.ops if isinstance(o, scf.ForOp)]
    return len(parts) == 1 and loop_role(parts[0]) == LoopRole.REDUCE_PART and sum_loop(parts[0]) is not None


def check_counts(step, *options: str, least: int = 1) -> None:
    """Refuse a count option of a pass below `least` (ArgumentError naming the pass and the option):
    options come from pass specs too (`tilegrad opt -p 'jam-row-sweeps{rows=0}'`)."""
    for option in options:
        value = getattr(step, option)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ArgumentError(f"{step.name}: {option}={value!r} must be an integer >= {least}")
