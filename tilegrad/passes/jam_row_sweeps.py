"""jam-row-sweeps: rows whose column sums sweep the same data run ROWS at a time, in one sweep.

After interchange-column-reductions, a row i of `g @ w` (or of `g.T @ x`) sums its terms into a
stack row: for v: for h in tile: acc[h] += g[i, v] * w[v, h]. Every row re-reads all of w. Unrolled
by ROWS on i and jammed, each w[v, h] loaded once feeds ROWS accumulator rows (the register tile of
a GEMM kernel, on the row side: unroll-reuse-loops' twin for the column form):

    for i step ROWS:                            acc_k: a stack row per copy
      for v: for h in tile:
        acc_0[h] += g[i, v] w[v, h];  ...;  acc_3[h] += g[i+3, v] w[v, h]

The copies of the body are zipped: a loop or `scf.if` whose bounds (or condition) are the same in
every copy becomes one, with the copies' bodies zipped inside it; index arithmetic that does not
depend on the row is computed once; every other op runs once per copy, in the body's order. Each
copy has its own stack rows and writes its own output row, so every sum adds the same terms in the
same order as before: results are bitwise unchanged.

The rows the factor does not divide (M % ROWS of them) run in the last step, its copies past the end
clamped to the last row (tail clamp: `for i step ROWS: rows i, min(i+1, last) .. min(i+4, last)`),
where a row may run again: it stores only its own output elements, over them (a row's sums start
from its zeroed stack rows), and reads nothing it writes, nor an output that may be an input in
place (loop_utils.repeatable). A repeat computes the same values again, so nothing runs outside the
register tile (the rows left over, one at a time, each swept all of w again: the slow path at every
M not a multiple of ROWS). Else (tail peel) they run in the original loop after the jammed steps.
For targets without UB staging (cpu), after interchange-column-reductions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.errors import ScheduleError
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    check_counts,
    constant_index,
    depends_on,
    functions,
    loop_axis,
    loop_role,
    stage_number,
)
from tilegrad.passes.loop_utils import in_cold_version, jam, repeatable, sweeps_shared_data
from tilegrad.schedule import Directive, Tail, UnrollJam

ROWS = 5
"""Rows per sweep: with chunk-row-sweeps' columns (16 with AVX2), 5 rows x 2 vectors of
accumulators, their 5 broadcasts and one loaded vector fill AVX2's 16 registers, the register tile
of a GEMM kernel (the cpu backend gives the host's: HostModel.jam_rows, where it was measured)."""


def _candidate(loop: Operation) -> bool:
    if not isinstance(loop, scf.ForOp) or loop_role(loop) != LoopRole.PARALLEL:
        return False
    if constant_index(loop.step) != 1 or loop.iter_args:
        return False
    inner = [o for o in loop.body.walk() if o is not loop]
    if not any(isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.ROW for o in inner):
        return False  # no interchanged sums
    if any(isinstance(o, scf.ForOp) and o.iter_args for o in inner):
        return False  # a carried value per copy: not zipped here
    if not _rows_write_apart(loop, inner):
        return False  # rows that add into the same element (a column sum's partials): not independent
    return sweeps_shared_data(loop)


def _rows_write_apart(loop: scf.ForOp, inner: list[Operation]) -> bool:
    """Whether every row writes elements of its own: each store outside the stack rows (which every
    jammed copy gets its own of) indexed by the row. A loop inside a stage's (a row loop in a batch
    loop, or in a chunk of rows whose column sums it also accumulates) may carry a sum in memory
    from one row to the next, which jamming would reorder."""
    row = loop.body.block.args[0]
    return all(isinstance(o.memref.owner, memref.AllocaOp) or any(depends_on(i, row) for i in o.indices)
               for o in inner if isinstance(o, memref.StoreOp))


def jammed_rows(fn: Operation) -> list[scf.ForOp]:
    """The row loops jam-row-sweeps jams in `fn`: its decision, which the cpu planner lists too.
    The outermost parallel loop whose rows share the data they sweep: the stage's own loop (g @ w),
    or one inside loops whose every iteration sweeps other data (a batched product's rows, inside
    its batch loop: a[b, n, m] w[b, m, k] shares w[b] only among the rows of one b)."""
    found: list[scf.ForOp] = []
    for o in fn.walk():
        if _candidate(o) and not in_cold_version(o) and not any(outer.is_ancestor(o) for outer in found):
            found.append(o)
    return found


def jammable_rows(fn: Operation) -> list[scf.ForOp]:
    """Every row loop whose rows share the data they sweep, outer ones first (a directive may name
    one inside the outermost: a convolution's output channels inside its batch loop)."""
    return [o for o in fn.walk() if _candidate(o) and not in_cold_version(o)]


@dataclass(frozen=True)
class JamRowSweeps(ModulePass):
    """Run `rows` (ROWS) rows of interchanged column sums in one sweep of the data they share; with
    `directives` (UnrollJam, printed, `;`-separated: passes/applying.py), the row loops they name,
    each by its factor."""

    name = "jam-row-sweeps"
    rows: int = ROWS
    directives: str | None = None
    takes_text: ClassVar[str] = "UnrollJam"

    def __post_init__(self):
        check_counts(self, "rows")

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, UnrollJam)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # by itself the outermost row loop; a directive may name any (inner ones first: an outer
        # jam copies them jammed)
        rows = jammed_rows if self.directives is None else lambda fn: jammable_rows(fn)[::-1]
        candidates = [(UnrollJam(stage=stage_number(fn), axis=loop_axis(loop), factor=self.rows, tail=jam_tail(loop)),
                       (fn, loop)) for fn in functions(op) for loop in rows(fn)]
        for (fn, loop), directive in chosen(self, candidates, "row loop sweeping shared data"):
            if directive.tail == Tail.CLAMP and not repeatable(loop, private_rows=True):
                raise ScheduleError(f"{directive}: a row of this loop may not run again (it reads what it writes, "
                                    f"adds into its output, or writes an output that may be an input in place): "
                                    f"tail='peel' runs the rows left over in a loop of their own")
            if directive.factor > 1:
                jam(loop, fn.body.block, directive.factor, clamped=directive.tail == Tail.CLAMP)


def jam_tail(loop: scf.ForOp) -> Tail:
    """How jam-row-sweeps runs the rows its factor does not divide: the last step clamped to the
    last row where a row may run again (repeatable, each jammed copy with its own stack rows) and
    reads its own data along rows, else a loop of their own (peel). A row that reads its own data
    down a column (g[v, i] of G.T @ X) has its group's columns packed in a panel of their own
    (pack-reused-panels); a clamped group's panel is narrower than the others (its rows end at the
    last), read at columns it computes: the linear layer's dW at 1000 x 1000 x 1000 took 1.6x as
    long, though its 500 rows per core leave none over (load 7, A/B in one process)."""
    if not repeatable(loop, private_rows=True):
        return Tail.PEEL
    row = loop.body.block.args[0]
    down_a_column = any(isinstance(o, memref.LoadOp) and not isinstance(o.memref.owner, memref.AllocaOp)
                        and o.indices and depends_on(o.indices[-1], row) for o in loop.body.walk())
    return Tail.PEEL if down_a_column else Tail.CLAMP
