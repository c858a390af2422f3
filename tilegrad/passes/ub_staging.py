"""UB staging for tile-for-target: which GM accesses of a tiled nest get a UB buffer, and the
rewrite that adds the GM<->UB copies around the tile and redirects the accesses.

An access is staged at the outermost tile loop where each of its indices either walks a tile
(of that loop, or a whole-extent tile inside it) or does not change inside the loop; it then
covers one box: a tile of elements, or a block of rows of whole inner tiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, memref, scf
from xdsl.ir import Operation, SSAValue

from tilegrad.dialect import tg
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder
from tilegrad.passes.common import make_for
from tilegrad.passes.tiling_plan import UBBuffer


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

def stage_group(group: StagingGroup, buffer_value: SSAValue, double: bool) -> None:
    """Copy the group's box GM->UB before its tile loop body, UB->GM after it, and make every
    access read or write the UB buffer at its offset in the tile."""
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

    def copies(builder: BlockBuilder, direction: str) -> None:
        last_pos, last_axis = group.positions[-1]
        if len(group.positions) == 1:
            gm_idx = [group.fixed.get(p, level.tile_start) for p in range(len(group.positions) + len(group.fixed))]
            length = builder.add(arith.SubiOp(level.tile_end, level.tile_start))
            _copy(builder, direction, group.mem, gm_idx, buffer_value, slot + [ub_zero], length)
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
        _copy(rb, direction, group.mem, gm_idx, buffer_value, ub_idx, rb.index(last_axis.size))
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

def _copy(b: BlockBuilder, direction, gm, gm_idx, ub, ub_idx, length) -> None:
    if direction == "gm_to_ub":
        b.add(tg.CopyOp(direction, gm, gm_idx, ub, ub_idx, length))
    else:
        b.add(tg.CopyOp(direction, ub, ub_idx, gm, gm_idx, length))

