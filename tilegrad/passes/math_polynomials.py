"""float32 exp, log and tanh as range-reduced polynomials of plain arith ops (Cephes' expf, logf and
tanhf), and the float work an op does once they are expanded (`float_ops`).

expand-math builds these in place of math.exp / math.log / math.tanh; common.arithmetic_bound counts
with them. Accuracy and special values: see passes/expand_math.py.
"""

from __future__ import annotations

from functools import cache

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, Float32Type, FloatAttr, IntegerAttr, f32, i32
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Block, Operation, SSAValue

CONTRACT = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])
"""A product and a sum may fuse into one FMA (one rounding instead of two: never less accurate)."""
LOG2E = 1.44269504088896341
LN2_HI, LN2_LO = 0.693359375, -2.12194440e-4  # ln 2 = HI + LO, HI exact in a few bits
ROUNDER = 12582912.0  # 1.5 * 2^23: adding it rounds a float32 of magnitude < 2^22 to an integer
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
            5.0000001201e-1)
LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
            -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)


class Polynomials:
    """Builds scalar float32 arithmetic before one op; the ops go into `ops` in order."""

    def __init__(self):
        self.ops: list[Operation] = []

    def _add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def f(self, value: float) -> SSAValue:
        return self._add(arith.ConstantOp(FloatAttr(value, f32)))

    def i(self, value: int) -> SSAValue:
        return self._add(arith.ConstantOp(IntegerAttr(value, i32)))

    def mul(self, a, b): return self._add(arith.MulfOp(a, b, CONTRACT))
    def add(self, a, b): return self._add(arith.AddfOp(a, b, CONTRACT))
    def sub(self, a, b): return self._add(arith.SubfOp(a, b, CONTRACT))
    def div(self, a, b): return self._add(arith.DivfOp(a, b))
    def iadd(self, a, b): return self._add(arith.AddiOp(a, b))
    def isub(self, a, b): return self._add(arith.SubiOp(a, b))
    def cmp(self, a, b, pred: str): return self._add(arith.CmpfOp(a, b, pred))
    def select(self, c, a, b): return self._add(arith.SelectOp(c, a, b))
    def to_bits(self, a): return self._add(arith.BitcastOp(a, i32))
    def from_bits(self, a): return self._add(arith.BitcastOp(a, f32))

    def poly(self, x: SSAValue, coefficients) -> SSAValue:
        """Horner: c0 x^(n-1) + ... + c(n-1)."""
        acc = self.f(coefficients[0])
        for c in coefficients[1:]:
            acc = self.add(self.mul(acc, x), self.f(c))
        return acc

    def pow2(self, k: SSAValue) -> SSAValue:
        """2^k for an int32 k in [-127, 127] with no denormal result."""
        return self.from_bits(self._add(arith.ShLIOp(self.iadd(k, self.i(127)), self.i(23))))

    def exp(self, x: SSAValue) -> SSAValue:
        # The clamps keep k in [-150, 144], where the two-factor scaling below is exact; they are
        # compare-selects (vminps/vmaxps), cheaper than llvm.maximum. Above exp's overflow edge
        # (88.72...) the scaling overflows to inf by itself and a NaN passes both selects and the
        # arithmetic, so no select follows the polynomial: the loop is bound by this chain's µops.
        top, bottom = self.f(100.0), self.f(-104.0)
        clamped = self.select(self.cmp(x, top, "ogt"), top, x)
        clamped = self.select(self.cmp(clamped, bottom, "olt"), bottom, clamped)
        rounded = self.add(self.mul(clamped, self.f(LOG2E)), self.f(ROUNDER))
        k = self.sub(rounded, self.f(ROUNDER))  # round(x / ln 2), exact
        r = self.sub(self.sub(clamped, self.mul(k, self.f(LN2_HI))), self.mul(k, self.f(LN2_LO)))
        p = self.add(self.add(self.mul(self.poly(r, EXP_POLY), self.mul(r, r)), r), self.f(1.0))
        ki = self.isub(self.to_bits(rounded), self.to_bits(self.f(ROUNDER)))  # k in [-150, 144]
        half = self._add(arith.ShRSIOp(ki, self.i(1)))
        # 2^k as two factors, so k = 128 and the denormal range (k < -126) scale without overflow
        return self.mul(self.mul(p, self.pow2(half)), self.pow2(self.isub(ki, half)))

    def log(self, x: SSAValue) -> SSAValue:
        tiny = self.cmp(x, self.f(1.17549435e-38), "olt")  # denormal (or not positive)
        scaled = self.select(tiny, self.mul(x, self.f(8388608.0)), x)
        bits = self.to_bits(scaled)
        e = self.isub(self._add(arith.ShRSIOp(bits, self.i(23))), self.i(126))
        e = self.isub(e, self.select(tiny, self.i(23), self.i(0)))
        mantissa_bits = self._add(arith.OrIOp(self._add(arith.AndIOp(bits, self.i(0x007FFFFF))),
                                              self.i(0x3F000000)))
        m = self.from_bits(mantissa_bits)  # scaled = m * 2^e, m in [0.5, 1)
        below = self.cmp(m, self.f(0.707106781186547524), "olt")
        e = self.isub(e, self.select(below, self.i(1), self.i(0)))
        m = self.sub(self.select(below, self.add(m, m), m), self.f(1.0))
        ef = self._add(arith.SIToFPOp(e, f32))
        z = self.mul(m, m)
        y = self.mul(self.mul(self.poly(m, LOG_POLY), m), z)
        y = self.add(y, self.mul(ef, self.f(LN2_LO)))
        y = self.sub(y, self.mul(z, self.f(0.5)))
        r = self.add(self.add(m, y), self.mul(ef, self.f(LN2_HI)))
        r = self.select(self.cmp(x, self.f(0.0), "oeq"), self.f(float("-inf")), r)
        r = self.select(self.cmp(x, self.f(0.0), "olt"), self.f(float("nan")), r)
        r = self.select(self.cmp(x, self.f(float("inf")), "oeq"), x, r)
        return self.select(self.cmp(x, x, "uno"), x, r)

    def tanh(self, x: SSAValue) -> SSAValue:
        a = self._add(math.AbsFOp(x))
        z = self.mul(x, x)
        near_zero = self.add(self.mul(self.mul(self.poly(z, TANH_POLY), z), x), x)
        e = self.exp(self.add(a, a))
        away = self.sub(self.f(1.0), self.div(self.f(2.0), self.add(e, self.f(1.0))))
        away = self.select(self.cmp(x, self.f(0.0), "olt"), self._add(arith.NegfOp(away)), away)
        return self.select(self.cmp(a, self.f(0.625), "olt"), near_zero, away)


EXPANDED = {math.ExpOp: Polynomials.exp, math.LogOp: Polynomials.log, math.TanhOp: Polynomials.tanh}


def float_ops(op: Operation) -> int:
    """The float arithmetic `op` is once expanded: 1 for an op with a float result (a constant
    0), the length of its polynomial for a float32 exp, log or tanh, 0 for anything else."""
    if not op.results or not isinstance(op.results[0].type, AnyFloat) or isinstance(op, arith.ConstantOp):
        return 0
    if type(op) in EXPANDED and isinstance(op.results[0].type, Float32Type):
        return _expanded_float_ops(type(op))
    return 1


@cache
def _expanded_float_ops(kind: type[Operation]) -> int:
    build = Polynomials()
    EXPANDED[kind](build, Block(arg_types=[f32]).args[0])
    return sum(float_ops(op) for op in build.ops)
