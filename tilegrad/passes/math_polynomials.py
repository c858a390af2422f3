"""exp, log, tanh and erf as polynomials of plain arith ops, in float32 (Cephes' expf, logf and tanhf;
N. Juffa's erff) and float64 (fdlibm's exp and log; Cephes' tanh and ndtr erf), and the float work an
op does once they are expanded (`float_ops`).

expand-math builds these in place of math.exp / math.log / math.tanh / math.erf; common.arithmetic_bound
counts with them. Accuracy and special values: see passes/expand_math.py.
"""

from __future__ import annotations

from functools import cache

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, Float32Type, Float64Type, FloatAttr, IntegerAttr, f32, i32, i64
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
# float32 erf: N. Juffa's erff, "Efficient, faithfully rounded implementation of error function erff",
# https://stackoverflow.com/a/35148199 (also MLX's and PyTorch's Metal erf): x + x P(x^2) up to |x| = 475/512,
# above 1 - exp(t Q(t) - t) with t = |x|; no division, each part within 1 ulp in the author's test.
ERF_EDGE = 0.927734375
ERF_ONE32 = 4.0
TANH_ONE32 = 9.5
EXP_NORMAL = (-87.0, 88.0)
"""exp's arguments whose 2^k (k = round(x / ln 2) in [-126, 127]) is a normal float32."""
ERF_SMALL = (-5.96761703e-4, 4.99119423e-3, -2.67681349e-2, 1.12819925e-1, -3.76125336e-1, 1.28379166e-1)
ERF_LARGE = (-1.72853470e-5, 3.83197126e-4, -3.88396438e-3, 2.42546219e-2, -1.06777877e-1, -6.34846687e-1,
             -1.28717512e-1)
# float64 erf: Cephes ndtr.c, erf(x) = x T(x^2)/U(x^2) for |x| <= 1, else 1 - erfc(|x|) with
# erfc(a) = exp(-a^2) P(a)/Q(a) (relative error about 1e-16); a is capped at 6, where erfc(6) = 2e-17.
ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3, 7.00332514112805075473e3,
         5.55923013010394962768e4)
ERF_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
         2.26290000613890934246e4, 4.92673942608635921086e4)
ERF_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0, 4.86371970985681366614e1,
         1.96520832956077098242e2, 5.26445194995477358631e2, 9.34528527171957607540e2, 1.02755188689515710272e3,
         5.57535335369399327526e2)
ERF_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
         9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3, 1.65666309194161350182e3,
         5.57535340817727675546e2)
ERF_ONE = 6.0
# float64 exp and log: fdlibm's e_exp.c and e_log.c (Sun, 1993; FreeBSD msun, musl), error below 1 ulp by
# their analysis, as selects instead of branches. tanh: Cephes' tanh.c, x + x z P(z)/Q(z) below 0.625.
LN2_HI64, LN2_LO64 = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # k LN2_HI64 exact for |k| < 2^11
ROUNDER64 = 6755399441055744.0  # 1.5 * 2^52
EXP64_P = (4.13813679705723846039e-08, -1.65339022054652515390e-06, 6.61375632143793436117e-05,
           -2.77777777770155933842e-03, 1.66666666666666019037e-01)
LOG64_EVEN = (1.531383769920937332e-01, 2.222219843214978396e-01, 3.999999999940941908e-01)  # Lg6, Lg4, Lg2
LOG64_ODD = (1.479819860511658591e-01, 1.818357216161805012e-01, 2.857142874366239149e-01,
             6.666666666666735130e-01)  # Lg7, Lg5, Lg3, Lg1
TANH64_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
TANH64_Q = (1.0, 1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)


class Polynomials:
    """Builds scalar arithmetic in one float type (float32 unless given) before one op; the ops go into
    `ops` in order."""

    def __init__(self, float_type: AnyFloat = f32):
        self.ops: list[Operation] = []
        self.type = float_type
        self.wide = isinstance(float_type, Float64Type)
        self.int_type = i64 if self.wide else i32
        """The integer type of the float's bits."""

    def _add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def f(self, value: float) -> SSAValue:
        return self._add(arith.ConstantOp(FloatAttr(value, self.type)))

    def i(self, value: int) -> SSAValue:
        return self._add(arith.ConstantOp(IntegerAttr(value, self.int_type)))

    def mul(self, a, b): return self._add(arith.MulfOp(a, b, CONTRACT))
    def add(self, a, b): return self._add(arith.AddfOp(a, b, CONTRACT))
    def sub(self, a, b): return self._add(arith.SubfOp(a, b, CONTRACT))
    def div(self, a, b): return self._add(arith.DivfOp(a, b))
    def neg(self, a): return self._add(arith.NegfOp(a))
    def abs(self, a): return self._add(math.AbsFOp(a))
    def iadd(self, a, b): return self._add(arith.AddiOp(a, b))
    def isub(self, a, b): return self._add(arith.SubiOp(a, b))
    def cmp(self, a, b, pred: str): return self._add(arith.CmpfOp(a, b, pred))
    def select(self, c, a, b): return self._add(arith.SelectOp(c, a, b))
    def to_bits(self, a): return self._add(arith.BitcastOp(a, self.int_type))
    def from_bits(self, a): return self._add(arith.BitcastOp(a, self.type))

    def poly(self, x: SSAValue, coefficients) -> SSAValue:
        """Horner: c0 x^(n-1) + ... + c(n-1)."""
        acc = self.f(coefficients[0])
        for c in coefficients[1:]:
            acc = self.add(self.mul(acc, x), self.f(c))
        return acc

    def pow2(self, k: SSAValue) -> SSAValue:
        """2^k for an integer k in [-127, 127] (float64: [-1023, 1023]) with no denormal result."""
        bias, mantissa = (1023, 52) if self.wide else (127, 23)
        return self.from_bits(self._add(arith.ShLIOp(self.iadd(k, self.i(bias)), self.i(mantissa))))

    def scale(self, p: SSAValue, ki: SSAValue) -> SSAValue:
        """p 2^ki as two factors, so ki just past the largest exponent and the denormal range scale
        without overflow, and with one rounding."""
        half = self._add(arith.ShRSIOp(ki, self.i(1)))
        return self.mul(self.mul(p, self.pow2(half)), self.pow2(self.isub(ki, half)))

    def exp(self, x: SSAValue, within: tuple[float, float] | None = None) -> SSAValue:
        """`within`: bounds the caller knows x lies in (NaN aside). Inside float32's normal range
        the clamps are left out and 2^k is one factor: the same bits, five ops fewer."""
        if self.wide:
            return self._exp64(x)
        if within is not None and EXP_NORMAL[0] <= within[0] and within[1] <= EXP_NORMAL[1]:
            rounded = self.add(self.mul(x, self.f(LOG2E)), self.f(ROUNDER))
            k = self.sub(rounded, self.f(ROUNDER))
            r = self.sub(self.sub(x, self.mul(k, self.f(LN2_HI))), self.mul(k, self.f(LN2_LO)))
            p = self.add(self.add(self.mul(self.poly(r, EXP_POLY), self.mul(r, r)), r), self.f(1.0))
            return self.mul(p, self.pow2(self.isub(self.to_bits(rounded), self.to_bits(self.f(ROUNDER)))))
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
        return self.scale(p, self.isub(self.to_bits(rounded), self.to_bits(self.f(ROUNDER))))  # k in [-150, 144]

    def _exp64(self, x: SSAValue) -> SSAValue:
        # fdlibm: x = k ln2 + r, |r| <= ln2/2; c = r - r^2 P(r^2); exp(r) = 1 - ((lo - r c/(2 - c)) - hi).
        # The clamps keep k in [-1077, 1025]: exp(710) overflows to inf and exp(-746) rounds to 0.
        top, bottom = self.f(710.0), self.f(-746.0)
        clamped = self.select(self.cmp(x, top, "ogt"), top, x)
        clamped = self.select(self.cmp(clamped, bottom, "olt"), bottom, clamped)
        rounded = self.add(self.mul(clamped, self.f(LOG2E)), self.f(ROUNDER64))
        k = self.sub(rounded, self.f(ROUNDER64))
        hi = self.sub(clamped, self.mul(k, self.f(LN2_HI64)))
        lo = self.mul(k, self.f(LN2_LO64))
        r = self.sub(hi, lo)
        t = self.mul(r, r)
        c = self.sub(r, self.mul(t, self.poly(t, EXP64_P)))
        y = self.sub(self.f(1.0), self.sub(self.sub(lo, self.div(self.mul(r, c), self.sub(self.f(2.0), c))), hi))
        return self.scale(y, self.isub(self.to_bits(rounded), self.to_bits(self.f(ROUNDER64))))

    def log(self, x: SSAValue) -> SSAValue:
        if self.wide:
            return self._log64(x)
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
        return self._log_special_values(x, r)

    def _log_special_values(self, x: SSAValue, r: SSAValue) -> SSAValue:
        """log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays NaN."""
        r = self.select(self.cmp(x, self.f(0.0), "oeq"), self.f(float("-inf")), r)
        r = self.select(self.cmp(x, self.f(0.0), "olt"), self.f(float("nan")), r)
        r = self.select(self.cmp(x, self.f(float("inf")), "oeq"), x, r)
        return self.select(self.cmp(x, x, "uno"), x, r)

    def _log64(self, x: SSAValue) -> SSAValue:
        # fdlibm: x = 2^k (1 + f), sqrt(1/2) <= 1 + f < sqrt(2); s = f/(2 + f);
        # log(x) = k ln2_hi - ((f^2/2 - (s (f^2/2 + R(s^2)) + k ln2_lo)) - f)
        tiny = self.cmp(x, self.f(2.2250738585072014e-308), "olt")  # denormal (or not positive)
        scaled = self.select(tiny, self.mul(x, self.f(18014398509481984.0)), x)  # 2^54
        bits = self.to_bits(scaled)
        e = self.isub(self._add(arith.ShRSIOp(bits, self.i(52))), self.i(1022))
        e = self.isub(e, self.select(tiny, self.i(54), self.i(0)))
        mantissa_bits = self._add(arith.OrIOp(self._add(arith.AndIOp(bits, self.i(0x000FFFFFFFFFFFFF))),
                                              self.i(0x3FE0000000000000)))
        m = self.from_bits(mantissa_bits)  # scaled = m 2^e, m in [0.5, 1)
        below = self.cmp(m, self.f(0.707106781186547524), "olt")
        e = self.isub(e, self.select(below, self.i(1), self.i(0)))
        f = self.sub(self.select(below, self.add(m, m), m), self.f(1.0))
        dk = self._add(arith.SIToFPOp(e, self.type))
        s = self.div(f, self.add(self.f(2.0), f))
        z = self.mul(s, s)
        w = self.mul(z, z)
        big_r = self.add(self.mul(z, self.poly(w, LOG64_ODD)), self.mul(w, self.poly(w, LOG64_EVEN)))
        hfsq = self.mul(self.mul(self.f(0.5), f), f)
        inner = self.add(self.mul(s, self.add(hfsq, big_r)), self.mul(dk, self.f(LN2_LO64)))
        r = self.sub(self.mul(dk, self.f(LN2_HI64)), self.sub(self.sub(hfsq, inner), f))
        return self._log_special_values(x, r)

    def tanh(self, x: SSAValue) -> SSAValue:
        a = self._add(math.AbsFOp(x))
        z = self.mul(x, x)
        if self.wide:
            near_zero = self.add(self.mul(x, self.div(self.mul(z, self.poly(z, TANH64_P)), self.poly(z, TANH64_Q))), x)
        else:
            near_zero = self.add(self.mul(self.mul(self.poly(z, TANH_POLY), z), x), x)
        if self.wide:
            e = self.exp(self.add(a, a))
        else:  # above TANH_ONE32, 1 - 2/(e + 1) rounds to 1: a capped there keeps exp's argument bounded
            capped = self.select(self.cmp(a, self.f(TANH_ONE32), "ogt"), self.f(TANH_ONE32), a)
            e = self.exp(self.add(capped, capped), within=(0.0, 2 * TANH_ONE32))
        away = self.sub(self.f(1.0), self.div(self.f(2.0), self.add(e, self.f(1.0))))
        away = self.select(self.cmp(x, self.f(0.0), "olt"), self._add(arith.NegfOp(away)), away)
        return self.select(self.cmp(a, self.f(0.625), "olt"), near_zero, away)


    def erf(self, x: SSAValue) -> SSAValue:
        if isinstance(self.type, Float64Type):
            return self._erf64(x)
        t, s = self.abs(x), self.mul(x, x)
        small = self.add(self.mul(self.poly(s, ERF_SMALL), x), x)
        # Above ERF_ONE32, 1 - exp(...) rounds to 1 (erfc(3.92) < 2^-25): t is capped there, which
        # keeps exp's argument, log(erfc(t)), inside [-17.6, -1.7] and exp without its clamps.
        t = self.select(self.cmp(t, self.f(ERF_ONE32), "ogt"), self.f(ERF_ONE32), t)
        s = self.mul(t, t)  # (x^2 below the cap)
        # Juffa's evaluation order: the two low-degree halves in t and s, then Horner in t
        r = self.add(self.mul(self.add(self.mul(self.f(ERF_LARGE[0]), t), self.f(ERF_LARGE[1])), s),
                     self.add(self.mul(self.f(ERF_LARGE[2]), t), self.f(ERF_LARGE[3])))
        for c in ERF_LARGE[4:]:
            r = self.add(self.mul(r, t), self.f(c))
        large = self.sub(self.f(1.0), self.exp(self.sub(self.mul(r, t), t), within=(-18.0, -1.0)))
        large = self.select(self.cmp(x, self.f(0.0), "olt"), self.neg(large), large)
        return self.select(self.cmp(t, self.f(ERF_EDGE), "ogt"), large, small)  # NaN: the small side's NaN

    def _erf64(self, x: SSAValue) -> SSAValue:
        z = self.mul(x, x)
        small = self.div(self.mul(x, self.poly(z, ERF_T)), self.poly(z, ERF_U))
        a = self.abs(x)
        a = self.select(self.cmp(a, self.f(ERF_ONE), "ogt"), self.f(ERF_ONE), a)  # the polynomials never see inf
        e = self.exp(self.neg(self.mul(a, a)))
        large = self.sub(self.f(1.0), self.div(self.mul(e, self.poly(a, ERF_P)), self.poly(a, ERF_Q)))
        signed = self.select(self.cmp(x, self.f(0.0), "ogt"), large, x)  # NaN stays NaN
        signed = self.select(self.cmp(x, self.f(0.0), "olt"), self.neg(large), signed)
        return self.select(self.cmp(self.abs(x), self.f(1.0), "ole"), small, signed)


EXPANDED = {math.ExpOp: Polynomials.exp, math.LogOp: Polynomials.log, math.TanhOp: Polynomials.tanh,
            math.ErfOp: Polynomials.erf}
EXPANDED_TYPES = (Float32Type, Float64Type)
"""The float types the ops are expanded in (half types compute in float32)."""


def expands(op: Operation) -> bool:
    """expand-math replaces `op` with its polynomial form."""
    return type(op) in EXPANDED and isinstance(op.results[0].type, EXPANDED_TYPES)


def float_ops(op: Operation) -> int:
    """The float arithmetic `op` is once expanded: 1 for an op with a float result (a constant
    0), the length of its polynomial for an op expand-math expands, 0 for anything else."""
    if not op.results or not isinstance(op.results[0].type, AnyFloat) or isinstance(op, arith.ConstantOp):
        return 0
    if expands(op):
        return _expanded_float_ops(type(op), op.results[0].type)
    return 1


@cache
def _expanded_float_ops(kind: type[Operation], float_type: AnyFloat) -> int:
    build = Polynomials(float_type)
    EXPANDED[kind](build, Block(arg_types=[float_type]).args[0])
    return sum(float_ops(op) for op in build.ops)
