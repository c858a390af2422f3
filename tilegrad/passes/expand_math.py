"""expand-math: float32 exp, log and tanh become arithmetic that vectorizes.

No vector math library is linked into the JIT, so LLVM turns a vectorized `llvm.exp.v16f32` into
sixteen scalar libm calls, and the loop around it runs at scalar speed. These range-reduced
polynomials (Cephes' expf, logf and tanhf) are plain arith ops, so a loop that uses them vectorizes
like any other. Measured against float64 over every float32 octave (tests/test_vector_math.py):
exp and log within 1 ulp, tanh within 2. Special values follow IEEE/libm: exp(-inf) = 0,
exp(x > 88.72...) = inf, log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays NaN.
float64 keeps libm: its polynomials need about twice the terms and SPEC's float64 tolerance is tight.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import math
from xdsl.dialects.builtin import Float32Type, ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from tilegrad.passes.math_polynomials import EXPANDED, Polynomials


@dataclass
class _ExpandFloat32(RewritePattern):
    """One math op on a float32 scalar -> its polynomial form."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.ExpOp | math.LogOp | math.TanhOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.result.type, Float32Type):
            return
        build = Polynomials()
        result = EXPANDED[type(op)](build, op.operand)
        rewriter.replace(op, build.ops, [result])


@dataclass(frozen=True)
class ExpandMath(ModulePass):
    """Replace float32 math.exp, math.log and math.tanh with vectorizable polynomials."""

    name = "expand-math"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_ExpandFloat32(), apply_recursively=False).rewrite_module(op)
