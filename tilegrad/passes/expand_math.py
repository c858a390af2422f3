"""expand-math: exp, log, tanh and erf, in float32 and float64, become arithmetic that vectorizes.

No vector math library is linked into the JIT, so LLVM turns a vectorized `llvm.exp.v16f32` into
sixteen scalar libm calls, and the loop around it runs at scalar speed (half types compute in
float32; sqrt, floor, |x|, max/min are single vector instructions and stay). These polynomials are
plain arith ops, so a loop that uses them vectorizes like any other. Sources: float32 exp, log, tanh
from Cephes (expf, logf, tanhf); float32 erf from N. Juffa (https://stackoverflow.com/a/35148199: no
division, one exp); float64 exp and log from fdlibm (e_exp.c, e_log.c), tanh and erf from Cephes
(tanh.c, ndtr.c). Measured over every octave, both signs, the seams and the special values
(tests/test_vector_math.py): float32 against float64 numpy (math.erf for erf), exp, log and erf
within 1 ulp (erf 0.994), tanh within 2; float64 against mpmath at the points furthest from numpy,
exp and log within 0.77 ulp, tanh within 1.3, erf within 4 (3 seen, against math.erf). Special
values follow IEEE/libm: exp(-inf) = 0, exp overflows to inf (float32 past 88.72..., float64 past
709.78...), log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, erf(±0) = ±0, erf(±inf) = ±1,
tanh(±inf) = ±1, NaN stays NaN; a denormal result is within one denormal step. One departure:
tanh(-0) is +0.
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
    """Replace math.exp, math.log, math.tanh and math.erf on float32 and float64 with vectorizable
    polynomials."""

    name = "expand-math"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_Expand(), apply_recursively=False).rewrite_module(op)
