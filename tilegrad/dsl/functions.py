"""The DSL's elementwise functions: where, exp, log, sqrt, abs_, tanh, floor, maximum, minimum,
and the math built from them: power, sigmoid, sign, erf.

Each is a scalar function (dsl/expr.py) that a tensor operand broadcasts (`elementwise`), so it
works on tensors and scalars alike, in every dtype, and vectorizes like any other elementwise body
(selects, not branches: both sides of a `where` are computed). This module is below the tensors:
their `**` is `power`.
"""

from __future__ import annotations

from tilegrad.dsl.expr import Expr, as_expr, as_python, elementwise, extreme, scalar_power, select, unary


def where(cond, a, b) -> Expr:
    """`a` where `cond` holds, else `b` (a select, not a branch)."""
    return elementwise(select, cond, a, b)


def _unary(op: str):
    def apply(x):
        return elementwise(lambda e: unary(op, e), x)

    apply.__name__ = op
    return apply


exp, log, sqrt, abs_, tanh, floor = (_unary(n) for n in ("exp", "log", "sqrt", "abs", "tanh", "floor"))
exp.__doc__ = "e ** x, elementwise (vectorized polynomial in float32, see passes/expand_math.py)."
log.__doc__ = "The natural logarithm, elementwise (-inf at 0, NaN below)."
sqrt.__doc__ = "The square root, elementwise (NaN below 0)."
abs_.__doc__ = "|x| as a float, elementwise; Python's abs() does the same on any expression."
tanh.__doc__ = "The hyperbolic tangent, elementwise."
floor.__doc__ = "The largest integer not above x, as a float, elementwise."


def maximum(a, b) -> Expr:
    """The larger of a and b, elementwise with broadcasting (NaN if either is NaN, as torch)."""
    return elementwise(lambda x, y: extreme("max", x, y), a, b)


def minimum(a, b) -> Expr:
    """The smaller of a and b, elementwise with broadcasting (NaN if either is NaN, as torch)."""
    return elementwise(lambda x, y: extreme("min", x, y), a, b)


def power(base, exponent, positive_base: bool = False):
    """base ** exponent (also spelled `base ** exponent`), as torch.pow: an integer exponent (a
    Python int, or an integral float) is repeated multiplication, exact for negative bases; 0.5
    and -0.5 are square roots; any other exponent, or one that is an expression, is
    exp(e * log|base|), with the sign of a negative base for integral e and NaN for a
    non-integral one; 0 ** 0 is 1. `positive_base=True` promises base > 0 and skips the sign
    handling (exp(e * log(base)) alone)."""
    return elementwise(lambda b, e: scalar_power(b, e, positive_base), base, as_python(exponent))


def sigmoid(x):
    """1 / (1 + exp(-x)): 0 for very negative x (exp overflows to inf), 1 for very positive."""
    return elementwise(lambda v: 1.0 / (1.0 + exp(-as_expr(v))), x)


def sign(x):
    """-1, 0 or 1 by the sign of x, in x's kind, as torch.sign: (x > 0) - (x < 0), so NaN gives 0."""

    def scalar(v):
        v = as_expr(v)
        one, zero = as_expr(1, like=v), as_expr(0, like=v)
        return where(v > zero, one, where(v < zero, -one, zero))

    return elementwise(scalar, x)


# Cephes ndtr.c: erf(x) = x T(x²)/U(x²) for |x| <= 1, else 1 - erfc(|x|) with
# erfc(a) = exp(-a²) P(a)/Q(a) (relative error about 1e-16 in float64).
_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3, 7.00332514112805075473e3,
      5.55923013010394962768e4)
_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
      2.26290000613890934246e4, 4.92673942608635921086e4)
_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0, 4.86371970985681366614e1,
      1.96520832956077098242e2, 5.26445194995477358631e2, 9.34528527171957607540e2, 1.02755188689515710272e3,
      5.57535335369399327526e2)
_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
      9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3, 1.65666309194161350182e3,
      5.57535340817727675546e2)
_ERF_ONE = 6.0
"""erfc(6) = 2e-17: beyond it erf is ±1 in float64."""


def _polynomial(x: Expr, coefficients: tuple) -> Expr:
    result = as_expr(coefficients[0])
    for c in coefficients[1:]:
        result = result * x + c
    return result


def erf(x):
    """The error function (torch.erf), from Cephes' rational approximations: about 1e-16 relative
    error in float64, a few ulps in float32; erf(±inf) = ±1, NaN stays NaN."""

    def scalar(v):
        v = as_expr(v)
        z = v * v
        small = v * _polynomial(z, _T) / _polynomial(z, _U)
        a = minimum(abs(v), _ERF_ONE)  # capped where erf is ±1, so the polynomials never see inf
        large = 1.0 - exp(-(a * a)) * _polynomial(a, _P) / _polynomial(a, _Q)
        return where(abs(v) <= 1.0, small, where(v < 0.0, -large, where(v > 0.0, large, v)))

    return elementwise(scalar, x)

