"""The DSL's elementwise functions: where, exp, log, sqrt, abs_, tanh, floor, erf, maximum, minimum,
and the math built from them: power, sigmoid, sign.

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
exp.__doc__ = "e ** x, elementwise (a vectorized polynomial, see passes/expand_math.py)."
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


def erf(x):
    """The error function (torch.erf), elementwise: one math.erf, which expand-math makes a polynomial
    (N. Juffa's erff in float32, within 1 ulp; Cephes' ndtr.c in float64, about 1e-16 relative);
    erf(±inf) = ±1, NaN stays NaN."""
    return elementwise(lambda e: unary("erf", e), x)
