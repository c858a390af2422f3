"""jam-sweep-terms: a sweep adds `terms` consecutive terms (TERMS) to each accumulator per pass
over its stack rows.

After interchange-column-reductions, a column sum sweeps its terms r with a row loop inside, and
every term loads and stores the whole stack row of accumulators again:

    for r:                               for r in [lb, split) step 2:
      for h in tile:               ->      for h in tile:
        acc[h - t] += term(r, h)             acc[h - t] += term(r, h)
                                             acc[h - t] += term(r + 1, h)
                                         for r in [split, ub): (the original sweep, the term left over)

Two terms per pass halve the accumulator traffic (one load and one store per two data vectors;
LLVM forwards the first store to the second load), and more terms walk more rows at once. Batch
norm's mean and variance of x seen as [N, C] (8192 x 1024 on 2 cores) are sweeps like this: at
2 KiB of stack row per core, the accumulators' stores kept the sweep at 2.0 ms against 1.6 ms
for a plain read of the same data (a C model of the loop, znver1; TERMS has the figures). The
picture shows two. Each accumulator still adds its terms in r order, one after another: bitwise
the same sums (the jammed adds lose `reassoc`, which let LLVM add the terms first). Only sweeps
whose columns are independent (`row_of_sweep`: the row loop writes nothing but stack rows, each
at its own column) and whose terms read nothing every column shares: a GEMM's sweeps are chunk-row-sweeps' (accumulators
in registers), and jammed, the columns a chunk leaves over (g @ w at 9 x 1100 x 37) came out
with other last bits than the unjammed kernel's, though the IR adds in the same order (LLVM's
code for the products differed). For targets without UB staging (cpu).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.errors import ScheduleError
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import IN_ORDER, constant_index, functions, loop_axis, stage_number, whole_steps
from tilegrad.passes.loop_utils import copy_index, row_of_sweep, shares_an_operand
from tilegrad.schedule import Directive, Unroll

TERMS = 8
"""Terms per pass. A C model of batch norm's sweep at 8192 x 1024 on znver1 took 2.0 ms with one
term, 1.7 with two and 1.6-1.75 with four (a plain read: 1.6). On znver4 (AVX-512, 2 threads, A/B
in one process, rotated) batch norm forward after a linear layer (8192 x 1024 x 1 x 1), whose
statistics are such a sweep, took 2.86-3.00 ms with two, 2.40-2.53 with four, 2.19-2.30 with
eight, and its backward 5.20-5.73 -> 4.67 ms with eight; the 32x64x56x56 forms and group norm
within noise, compiles 0.02 s longer at most."""


def jammed_sweeps(fn: Operation) -> list[tuple[scf.ForOp, scf.ForOp]]:
    """(sweep, its row loop) of each sweep jam-sweep-terms jams in `fn`: its decision, which the cpu
    planner lists too (no sweep holds another, so jamming one leaves the others' decision as it was)."""
    found = []
    for sweep in fn.walk():
        row = row_of_sweep(sweep)
        if row is not None and not shares_an_operand(row) and constant_index(sweep.step) == 1:
            found.append((sweep, row))
    return found


def _jam(sweep: scf.ForOp, row: scf.ForOp, terms: int) -> None:
    index = IndexType()
    step, split = whole_steps(sweep.lb, sweep.ub, terms, sweep)
    body = Block(arg_types=[index])
    mappings: list[dict[SSAValue, SSAValue]] = [
        {sweep.body.block.args[0]: copy_index(body, body.args[0], term, None)} for term in range(terms)]
    for op in sweep.body.block.ops:
        if isinstance(op, scf.YieldOp):
            continue
        if op is not row:  # index arithmetic of each term (LLVM shares what does not move)
            for mapping in mappings:
                clone = op.clone(value_mapper=mapping)
                body.add_op(clone)
                mapping.update(zip(op.results, clone.results))
            continue
        row_body = Block(arg_types=[index])
        for mapping in mappings:  # term after term: each adds into what the one before stored
            mapping[row.body.block.args[0]] = row_body.args[0]
            for inner in row.body.block.ops:
                if not isinstance(inner, scf.YieldOp):
                    clone = inner.clone(value_mapper=mapping)
                    if isinstance(clone, arith.AddfOp):
                        clone.fastmath = IN_ORDER  # else LLVM may add the terms in another order
                    row_body.add_op(clone)
                    mapping.update(zip(inner.results, clone.results))
        row_body.add_op(scf.YieldOp())
        jammed_row = scf.ForOp(*(mappings[0].get(v, v) for v in row.operands[:3]), [], Region([row_body]))
        jammed_row.attributes.update(row.attributes)
        body.add_op(jammed_row)
    body.add_op(scf.YieldOp())
    jammed = scf.ForOp(sweep.lb, split, step, [], Region([body]))
    jammed.attributes.update(sweep.attributes)
    sweep.parent_block().insert_op_before(jammed, sweep)
    sweep.operands = (split, *sweep.operands[1:])  # the term left over


@dataclass(frozen=True)
class JamSweepTerms(ModulePass):
    """Add `terms` terms per pass over a sweep's stack rows of accumulators; with `directives` (Unroll,
    printed, `;`-separated: passes/applying.py), the sweeps they name, each by its factor (1: left as
    it is)."""

    name = "jam-sweep-terms"
    terms: int = TERMS
    directives: str | None = None
    takes_text: ClassVar[str] = "Unroll"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Unroll)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = [(Unroll(stage=stage_number(fn), axis=loop_axis(sweep), factor=self.terms), (sweep, row))
                      for fn in functions(op) for sweep, row in jammed_sweeps(fn)]
        for (sweep, row), directive in chosen(self, candidates, "sweep over stack rows of accumulators"):
            if directive.factor == 0:  # (a sweep's trip count is a call's)
                raise ScheduleError(f"{directive}: jam-sweep-terms does not unroll a sweep fully; give a factor >= 1")
            if directive.factor > 1:
                _jam(sweep, row, directive.factor)
