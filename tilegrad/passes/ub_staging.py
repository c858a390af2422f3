"""UB staging for tile-for-target: which GM accesses of a tiled nest get a UB buffer, and the
rewrite that adds the GM<->UB copies around the tile and redirects the accesses.

An access is staged at the outermost tile loop where each of its indices either walks a tile
(of that loop, or a whole-extent tile inside it) or does not change inside the loop; it then
covers one box: a tile of elements, or a block of rows of whole inner tiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue

from tilegrad.dialect import tg
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder
from tilegrad.passes.common import make_for
from tilegrad.passes.tiling_plan import CopyTraffic, UBBuffer


@dataclass
class TiledAxis:
    """An axis the plan tiles by `size`: its loop (`point_loop`), and once it is strip-mined, the
    tile loop around it. Before, `tile_loop` is the point loop itself, which nests like it."""

    axis: int
    point_loop: scf.ForOp
    size: int
    whole: bool
    fixed: bool  # the size came from the schedule hint, not from the UB budget
    tile_loop: scf.ForOp | None = None
    tile_start: SSAValue | None = None  # the tile loop's iv
    tile_end: SSAValue | None = None  # min(t + T, ub)
    size_value: SSAValue | None = None  # the constant T

    def __post_init__(self):
        self.tile_loop = self.tile_loop or self.point_loop

    def strip_mined(self, tile_loop: scf.ForOp, start: SSAValue, end: SSAValue, size_value: SSAValue) -> None:
        self.tile_loop, self.tile_start, self.tile_end, self.size_value = tile_loop, start, end, size_value


@dataclass
class StagingGroup:
    """Accesses to one GM memref with the same non-tile indices, staged at one tile loop."""

    mem: SSAValue
    level: TiledAxis
    positions: list[tuple[int, TiledAxis]]  # index position -> the tiled axis it walks
    fixed: dict[int, SSAValue]  # other index positions -> their (tile-invariant) values
    accesses: list[Operation] = field(default_factory=list)
    buffer: UBBuffer | None = None


def defined_outside(value: SSAValue, loop: Operation) -> bool:
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()  # block argument -> its op
    return op is None or not loop.is_ancestor(op)


def find_staging_groups(nest: Operation, axes: dict[int, TiledAxis], gm: set[SSAValue]) -> list[StagingGroup]:
    """Group the GM loads and stores of a tiled nest by the UB buffer each would use."""
    by_point = {a.point_loop.body.block.args[0]: a for a in axes.values()}
    groups: dict[tuple, StagingGroup] = {}
    for op in nest.walk():
        if not isinstance(op, (memref.LoadOp, memref.StoreOp)) or op.memref not in gm:
            continue
        indices = list(op.indices)
        if not indices or indices[-1] not in by_point:
            continue
        level = staging_level(op, indices, by_point, axes)
        if level is None:
            continue
        positions = [(p, by_point[v]) for p, v in enumerate(indices) if v in by_point
                     and (by_point[v] is level or level.tile_loop.is_ancestor(by_point[v].tile_loop))]
        fixed = {p: v for p, v in enumerate(indices) if p not in dict(positions)}
        key = (op.memref, id(level), tuple((p, id(a)) for p, a in positions), tuple(fixed.items()))
        group = groups.get(key)
        if group is None:
            group = groups[key] = StagingGroup(op.memref, level, positions, fixed)
        group.accesses.append(op)
    return list(groups.values())

def staging_level(op: Operation, indices, by_point, axes: dict[int, TiledAxis]) -> TiledAxis | None:
    """The outermost tile loop at which this access can be staged as one box."""
    enclosing = [a for a in axes.values() if a.tile_loop.is_ancestor(op)]
    enclosing.sort(key=lambda a: a.axis)
    best = None
    for level in reversed(enclosing):  # from the innermost tile loop outwards
        ok = True
        for v in indices:
            axis = by_point.get(v)
            if axis is not None and (axis is level or (level.tile_loop.is_ancestor(axis.tile_loop) and axis.whole)):
                continue
            if defined_outside(v, level.tile_loop):
                continue
            ok = False
        if ok:
            best = level
        else:
            break
    return best

def stage_group(group: StagingGroup, buffer_value: SSAValue, double: bool) -> list[tg.CopyOp]:
    """Copy the group's box GM->UB before its tile loop body, UB->GM after it, and make every
    access read or write the UB buffer at its offset in the tile. The copies built."""
    level = group.level
    body = level.tile_loop.body.block
    anchor = level.point_loop
    b = BlockBuilder(body, anchor)
    slot: list[SSAValue] = []
    if double:
        number = b.add(arith.DivUIOp(b.add(arith.SubiOp(level.tile_start, level.tile_loop.lb)), level.size_value))
        slot = [b.add(arith.RemUIOp(number, b.index(2)))]
    loads = any(isinstance(a, memref.LoadOp) for a in group.accesses)
    stores = any(isinstance(a, memref.StoreOp) for a in group.accesses)
    ub_zero = b.index(0)
    built: list[tg.CopyOp] = []

    def copies(builder: BlockBuilder, direction: str) -> None:
        last_pos, last_axis = group.positions[-1]
        if len(group.positions) == 1:
            gm_idx = [group.fixed.get(p, level.tile_start) for p in range(len(group.positions) + len(group.fixed))]
            length = builder.add(arith.SubiOp(level.tile_end, level.tile_start))
            built.append(_copy(builder, direction, group.mem, gm_idx, buffer_value, slot + [ub_zero], length))
            return
        row_pos = group.positions[0][0]
        loop, row_body = make_for(level.tile_start, level.tile_end, builder.index(1), LoopRole.COPY, level.axis)
        rb = BlockBuilder(row_body)
        row = row_body.args[0]
        gm_idx = []
        for p in range(len(group.positions) + len(group.fixed)):
            gm_idx.append(row if p == row_pos else rb.index(0) if p == last_pos else group.fixed[p])
        local = rb.add(arith.SubiOp(row, level.tile_start))
        ub_idx = slot + [local, rb.index(0)]
        built.append(_copy(rb, direction, group.mem, gm_idx, buffer_value, ub_idx, rb.index(last_axis.size)))
        rb.add(scf.YieldOp())
        builder.add(loop)

    if loads:
        copies(b, "gm_to_ub")
    if stores:
        copies(BlockBuilder(body, body.last_op), "ub_to_gm")
    for access in group.accesses:
        a = BlockBuilder(access.parent_block(), access)
        local = [a.add(arith.SubiOp(access.indices[p], axis.tile_start)) for p, axis in group.positions]
        new_indices = slot + local
        if isinstance(access, memref.LoadOp):
            new = memref.LoadOp.get(buffer_value, new_indices)
            access.parent_block().insert_op_before(new, access)
            access.res.replace_all_uses_with(new.res)
        else:
            new = memref.StoreOp.get(access.value, buffer_value, new_indices)
            access.parent_block().insert_op_before(new, access)
        access.detach()
        access.erase()
    return built


def _copy(b: BlockBuilder, direction, gm, gm_idx, ub, ub_idx, length) -> tg.CopyOp:
    if direction == "gm_to_ub":
        op = tg.CopyOp(direction, gm, gm_idx, ub, ub_idx, length)
    else:
        op = tg.CopyOp(direction, ub, ub_idx, gm, gm_idx, length)
    b.add(op)
    return op



# ---- copy traffic: each copy built, as size forms a plan evaluates at a call's shapes -------------------------------

_FORM_OPS = {arith.AddiOp: "add", arith.SubiOp: "sub", arith.MuliOp: "mul", arith.DivUIOp: "floordiv",
             arith.DivSIOp: "floordiv", arith.RemUIOp: "mod", arith.RemSIOp: "mod", arith.MaxSIOp: "max",
             arith.MinSIOp: "min"}


def _gt(a, b) -> list:
    return ["gt", a, b]


def _not(a) -> list:
    return ["sub", 1, a]


_PREDICATES = {  # arith.cmpi predicate -> its truth (0 / 1) as forms of the operands
    0: lambda a, b: _not(["add", _gt(a, b), _gt(b, a)]),  # eq
    1: lambda a, b: ["add", _gt(a, b), _gt(b, a)],  # ne
    2: lambda a, b: _gt(b, a), 3: lambda a, b: _not(_gt(a, b)),  # slt, sle
    4: lambda a, b: _gt(a, b), 5: lambda a, b: _not(_gt(b, a)),  # sgt, sge
    6: lambda a, b: _gt(b, a), 7: lambda a, b: _not(_gt(a, b)),  # ult, ule (index values are >= 0 here)
    8: lambda a, b: _gt(a, b), 9: lambda a, b: _not(_gt(b, a)),  # ugt, uge
}


class CopyForms:
    """Index values of one function as size forms: constants, dims of its arguments, loop
    variables (`["var", k]`, k as `env` numbers them: the block id is loop 0) and the arithmetic of
    them; None for anything read from memory."""

    def __init__(self, args: dict[SSAValue, str], block_id: SSAValue, num_blocks: int):
        self.args, self.block_id, self.num_blocks = args, block_id, num_blocks

    def form(self, value: SSAValue, env: dict[SSAValue, int]):
        if value in env:
            return ["var", env[value]]
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        if isinstance(owner, memref.DimOp):
            axis = self.form(owner.index, env)
            source = owner.source
            if not isinstance(axis, int) or not isinstance(source.type, MemRefType):
                return None
            size = source.type.get_shape()[axis]
            return size if size >= 0 else ["dim", self.args[source], axis] if source in self.args else None
        if isinstance(owner, arith.CmpiOp):
            a, b = self.form(owner.lhs, env), self.form(owner.rhs, env)
            return None if a is None or b is None else _PREDICATES[owner.predicate.value.data](a, b)
        if isinstance(owner, (arith.AndIOp, arith.OrIOp)):
            a, b = self.form(owner.lhs, env), self.form(owner.rhs, env)
            if a is None or b is None:
                return None
            return ["mul", a, b] if isinstance(owner, arith.AndIOp) else ["sub", ["add", a, b], ["mul", a, b]]
        if isinstance(owner, arith.SelectOp):
            c, a, b = (self.form(v, env) for v in owner.operands)
            return None if None in (c, a, b) else ["add", ["mul", c, a], ["mul", _not(c), b]]
        op = _FORM_OPS.get(type(owner))
        if op is not None:
            a, b = (self.form(v, env) for v in owner.operands)
            return None if a is None or b is None else [op, a, b]
        return None

    def traffic(self, copy: tg.CopyOp, tensor: str, element_bytes: int) -> CopyTraffic:
        """The copy with the loops and branches around it, up to the stage's outermost loop."""
        around: list[Operation] = []
        op: Operation | None = copy
        # up to the stage's outer loop (the one marked tg.stage: a strip of runs may have taken its place)
        while op is not None and "tg.stage" not in op.attributes:
            op = op.parent_op()
            if isinstance(op, (scf.ForOp, scf.IfOp)):
                around.append(op)
        around.reverse()
        env: dict[SSAValue, int] = {self.block_id: 0}
        loops, when = [[0, self.num_blocks, 1]], []  # loop 0: the cores
        for op in around:
            if isinstance(op, scf.ForOp):
                loops.append([self.form(v, env) for v in (op.lb, op.ub, op.step)])
                env[op.body.block.args[0]] = len(loops) - 1
            else:
                when.append([self.form(op.cond, env), op.true_region.is_ancestor(copy)])
        length = self.form(copy.length, env)
        gm_to_ub = copy.direction.data == "gm_to_ub"
        return CopyTraffic(tensor, "in" if gm_to_ub else "out", element_bytes, length, loops, when)


def function_args(fn) -> dict[SSAValue, str]:
    """Each argument of `fn` by its tensor name."""
    from tilegrad.passes.common import arg_info

    return {a: arg_info(fn, i).get("tg.name", f"arg{i}") for i, a in enumerate(fn.body.block.args)
            if isinstance(a, BlockArgument)}
