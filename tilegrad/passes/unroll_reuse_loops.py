"""unroll-reuse-loops: a parallel loop around a reduction that re-reads data across its iterations
runs UNROLL iterations at a time, so fuse-sibling-reductions can jam their reductions into one.

A dot product per output element (the logits of the fused linear cross-entropy: Σ_k x[i, k]·w[j, k]
for each j) loads x's row again for every j. Unrolled by UNROLL on j and jammed, one sweep over k
feeds UNROLL accumulators from one load of x[i, k]: the register tile of a GEMM kernel, found from
the IR rather than from an op name. A loop is unrolled only when its reduction reads something that
does not depend on the loop's variable (there is reuse to gain). Where an iteration may run again
(it stores only its own elements and reads nothing the loop writes: `repeatable`), the last step's
copies past the end repeat the last iteration, min(j + u, ub - 1), storing the same values again;
there is no loop for the rest, which was a third of the fused linear CE's logits stage (its cold
compile about 0.5 s shorter). Otherwise the iterations left over run in the original loop. Each
sum keeps its own terms and accumulator.

The row loop around it (i, rows of x) then runs JAM_ROWS rows at a time, zipped as jam-row-sweeps
zips its rows: the sweep over k feeds UNROLL x JAM_ROWS accumulators, each x[i, k] and each
w[j, k] loaded once for all of them (a GEMM kernel's register tile, both sides); a row past the
end repeats the last row, as above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    REDUCTION_ROLES,
    SHORT_TRIPS,
    constant_index,
    copy_iteration,
    depends_on,
    enclosing_func,
    loop_axis,
    loop_role,
    stage_number,
    whole_steps,
)
from tilegrad.passes.loop_utils import copy_index, in_cold_version, jam, last_iteration, repeatable
from tilegrad.schedule import Directive, UnrollJam

UNROLL = 8
"""8 accumulators and the shared x: 1.125 loads per FMA (4 took 1.25; the fused linear CE 1.14-1.18x faster
at 8, side by side in one process, its cold compile about 0.1 s longer). With AVX-512's 32 registers."""
JAM_ROWS = 2
"""2 rows x 8 dot products: 16 accumulators, 0.625 loads per FMA. x @ w.T (128x256x2000) 1.47 -> 0.93
ms side by side (numpy 1.01); 4 rows spill registers (2.3 ms). The fused linear CE about 1.05x faster,
its cold compile about 0.45 s longer (1.6 -> 2.1 s)."""


def _reductions(loop: scf.ForOp) -> list[Operation]:
    return [o for o in loop.body.block.ops if loop_role(o) in REDUCTION_ROLES and o.results]


def _reuses(loop: scf.ForOp) -> bool:
    """Whether a reduction in the loop's body reads both data that depends on the loop variable and
    data that does not (the latter is what unrolling loads once for several iterations)."""
    iv = loop.body.block.args[0]
    if any(isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL for o in loop.body.walk() if o is not loop):
        return False
    for reduction in _reductions(loop):
        inner = [o for o in reduction.walk() if isinstance(o, scf.ForOp) and loop_role(o) in REDUCTION_ROLES]
        if not inner or any(_short(o) for o in inner):
            continue
        loads = [o for o in reduction.walk() if isinstance(o, memref.LoadOp)]
        varying = [any(depends_on(i, iv) for i in load.indices) for load in loads]
        if any(varying) and not all(varying):
            return True
    return False


def _short(loop: scf.ForOp) -> bool:
    """A window (left to unroll-short-reductions), not a sweep worth jamming."""
    trips = constant_index(loop.ub)
    return trips is not None and trips <= SHORT_TRIPS


def _unroll(loop: scf.ForOp, unroll: int) -> None:
    """for j in [lb, ub): body(j)  ->  for j in [lb, lb + ⌊n/U⌋U) step U: body(j) .. body(j+U-1),
    then the original loop from there on; or, where an iteration may run again (`repeatable`),
    for j in [lb, ub) step U: body(j), body(min(j + 1, ub - 1)) .., and no loop after it (the
    copies past the end repeat the last iteration, storing the same values again)."""
    block = loop.parent_block()
    index = IndexType()
    factor, split = whole_steps(loop.lb, loop.ub, unroll, loop)
    last = last_iteration(loop) if repeatable(loop) else None
    body = Block(arg_types=[index])
    j = body.args[0]
    for u in range(unroll):
        copy_iteration(loop, body, copy_index(body, j, u, last))
    body.add_op(scf.YieldOp())
    main = scf.ForOp(loop.lb, loop.ub if last is not None else split, factor, [], Region([body]))
    main.attributes.update(loop.attributes)
    block.insert_op_before(main, loop)
    if last is not None:
        loop.detach()
        loop.erase()
    else:
        loop.operands = (split, *loop.operands[1:])


def _shares_with_its_row(loop: scf.ForOp) -> scf.ForOp | None:
    """The parallel loop around `loop` (rows of x), if the reductions inside read data that row i
    chooses (x[i, k]) beside data it does not (w[j, k]): jammed, rows share each load of w."""
    parent = loop.parent_op()
    if not isinstance(parent, scf.ForOp) or loop_role(parent) != LoopRole.PARALLEL or parent.iter_args \
            or constant_index(parent.step) != 1:
        return None
    row = parent.body.block.args[0]
    loads = [o for o in loop.walk() if isinstance(o, memref.LoadOp)]
    varying = [any(depends_on(i, row) for i in load.indices) for load in loads]
    return parent if any(varying) and not all(varying) else None


def reuse_decisions(root: Operation, jam_rows: int = JAM_ROWS) -> tuple[list[scf.ForOp], list[scf.ForOp]]:
    """The loops unroll-reuse-loops unrolls in `root` and the row loops around them it then jams:
    its decision, which the cpu planner lists too (no such loop holds another parallel loop, so
    unrolling one leaves the others' decision as it was)."""
    loops = [o for o in root.walk() if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL and _reuses(o)
             and constant_index(o.step) == 1 and not in_cold_version(o)]
    rows = []
    for loop in loops:
        row = _shares_with_its_row(loop)
        if row is not None and jam_rows > 1 and row not in rows:
            rows.append(row)
    return loops, rows


def unroll_function(root: Operation, unroll: int = UNROLL, jam_rows: int = JAM_ROWS) -> None:
    loops, rows = reuse_decisions(root, jam_rows)
    for loop in loops:
        _unroll(loop, unroll)
    for row in rows:
        jam(row, enclosing_func(row).body.block, jam_rows, clamped=repeatable(row))


@dataclass(frozen=True)
class UnrollReuseLoops(ModulePass):
    """Unroll (by UNROLL, with a remainder loop) parallel loops whose reductions reuse data across
    iterations; fuse-sibling-reductions then jams the copies' reductions. With `directives`
    (UnrollJam, printed, `;`-separated: passes/applying.py), the loops and row loops they name, each
    by its factor (1: left as it is)."""

    name = "unroll-reuse-loops"
    unroll: int = UNROLL
    jam_rows: int = JAM_ROWS
    directives: str | None = None
    takes_text: ClassVar[str] = "UnrollJam"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, UnrollJam)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.directives is None:
            unroll_function(op, self.unroll, self.jam_rows)
            return
        loops, rows = reuse_decisions(op, max(self.jam_rows, 2))  # (the rows a user may jam: all it could)

        def named(loop: scf.ForOp, factor: int) -> tuple[UnrollJam, scf.ForOp]:
            return UnrollJam(stage=stage_number(enclosing_func(loop)), axis=loop_axis(loop), factor=factor), loop

        candidates = [named(loop, self.unroll) for loop in loops] + [named(row, self.jam_rows) for row in rows]
        chosen_loops = chosen(self, candidates, "loop of dot products sharing data, nor row loop around them,")
        for loop, directive in chosen_loops:  # (the dot products' loops first, then their rows, as unroll_function)
            if loop in loops and directive.factor > 1:
                _unroll(loop, directive.factor)
        for row, directive in chosen_loops:
            if row in rows and directive.factor > 1:
                jam(row, enclosing_func(row).body.block, directive.factor, clamped=repeatable(row))
