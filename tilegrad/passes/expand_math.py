"""expand-math: float32 exp, log, tanh and erf, and float64 erf, become arithmetic that vectorizes.

No vector math library is linked into the JIT, so LLVM turns a vectorized `llvm.exp.v16f32` into
sixteen scalar libm calls, and the loop around it runs at scalar speed. These polynomials are plain
arith ops, so a loop that uses them vectorizes like any other. Sources: Cephes' expf, logf and tanhf;
N. Juffa's erff (https://stackoverflow.com/a/35148199: no division, one exp); Cephes' ndtr.c erf in
float64. Measured against float64 (math.erf for erf) over every float32 octave, both signs, the
seams and the special values (tests/test_vector_math.py): exp, log and erf within 1 ulp (erf 0.994),
tanh within 2; float64 erf within 4 ulp (3 seen). Special values follow IEEE/libm: exp(-inf) = 0,
exp(x > 88.72...) = inf, log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, erf(±0) = ±0,
erf(±inf) = ±1, NaN stays NaN; a denormal erf is within one denormal step.
float64 exp, log and tanh keep libm (scalar calls in a vector loop): their polynomials need about
twice the terms; float64 erf's own exp is one of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import math
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from tilegrad.passes.math_polynomials import EXPANDED, Polynomials, expands


@dataclass
class _Expand(RewritePattern):
    """One math op on a scalar of a type it expands in -> its polynomial form."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.ExpOp | math.LogOp | math.TanhOp | math.ErfOp,
                          rewriter: PatternRewriter) -> None:
        if not expands(op):
            return
        build = Polynomials(op.result.type)
        result = EXPANDED[type(op)](build, op.operand)
        rewriter.replace(op, build.ops, [result])


@dataclass(frozen=True)
class ExpandMath(ModulePass):
    """Replace float32 math.exp, math.log, math.tanh and math.erf, and float64 math.erf, with
    vectorizable polynomials."""

    name = "expand-math"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_Expand(), apply_recursively=False).rewrite_module(op)
