"""Scalar expressions: what one element of a compute, scatter or check equals.

Three kinds exist: "f" (the op's float compute type), "i" (integers and indices, `index` in IR)
and "b" (booleans, i1). Python numbers mix in freely and take the other operand's kind.

This module is the bottom of the DSL: it knows no tensor and no trace. An operator or function
that meets a tensor operand hands it the scalar function to broadcast (`elementwise`), so the
tensors (tensor.py) sit above the scalars they are made of.
"""

from __future__ import annotations

import operator
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count

import numpy as np

Number = int | float | bool

_var_ids = count()


class Expr:
    kind: str

    def _bin(self, op: str, other, swap: bool = False) -> Expr:
        if hasattr(other, "as_tensor_expr"):
            pair = (other, self) if swap else (self, other)
            return elementwise(lambda a, b: as_expr(a)._bin(op, b), *pair)
        other = as_expr(other, like=self)
        a, b = (other, self) if swap else (self, other)
        return BinOp.make(op, a, b)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __floordiv__(self, o): return self._bin("floordiv", o)
    def __mod__(self, o): return self._bin("mod", o)
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("le", o)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("ge", o)
    def eq(self, o) -> Expr: return self._bin("eq", o)
    def ne(self, o) -> Expr: return self._bin("ne", o)
    def __rshift__(self, o): return self._bin("shr", o)
    def __lshift__(self, o): return self._bin("shl", o)
    def __and__(self, o): return self._bin("and", o)
    def __or__(self, o): return self._bin("or", o)
    def __neg__(self): return UnOp("neg", self, self.kind)
    def __invert__(self): return UnOp("not", cast(self, "b"), "b")
    def __abs__(self): return UnOp("abs", cast(self, "f"), "f") if self.kind != "i" else select(self < 0, -self, self)
    def __pow__(self, o): return elementwise(scalar_power, self, as_python(o))
    def __rpow__(self, o): return scalar_power(as_expr(o, like=self), self)

    def __bool__(self):
        raise TypeError("a tilegrad expression has no truth value at trace time; use tg.where")

    def __float__(self):  # math.exp(x) asks for one
        raise TypeError("a tilegrad expression has no Python float at trace time; use tilegrad's math on it "
                        "(tg.exp, tg.log, tg.sqrt, ...), not the math module's")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __eq__(self, o):  # `expr == 0.0` would be Python's identity test, False: a silent wrong branch
        if isinstance(o, (int, float)):
            raise TypeError("`==` / `!=` of a tilegrad expression and a number: use expr.eq(v) / expr.ne(v)")
        return self is o

    def __ne__(self, o):
        return not self.__eq__(o)

    __hash__ = object.__hash__


_UFUNC_OPERATORS = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "true_divide": operator.truediv,
    "floor_divide": operator.floordiv, "remainder": operator.mod, "power": operator.pow, "negative": operator.neg,
    "absolute": operator.abs, "less": operator.lt, "less_equal": operator.le, "greater": operator.gt,
    "greater_equal": operator.ge, "bitwise_and": operator.and_, "bitwise_or": operator.or_,
    "invert": operator.invert, "right_shift": operator.rshift, "left_shift": operator.lshift,
}
"""numpy ufuncs that are Python operators: `np.float32(2) * x` calls np.multiply, and means x * 2."""

_UFUNC_HINTS = {"equal": "expr.eq(v)", "not_equal": "expr.ne(v)", "fmax": "tg.maximum", "fmin": "tg.minimum",
                "fabs": "tg.abs_ or abs()", "logical_and": "&", "logical_or": "|", "logical_not": "~",
                "divide": "/", "floor": "tg.floor", "rint": "tg.floor(x + 0.5)"}

DSL_UFUNCS = frozenset({"exp", "log", "sqrt", "tanh", "maximum", "minimum", "sign"})
"""numpy ufuncs the DSL has a function of the same name for (`np.exp(x)`: use tg.exp); tests/test_dsl_refusals.py
checks this is every such name of `tilegrad.dsl`."""


def array_ufunc(ufunc, method: str, inputs: tuple, kwargs: dict):
    """numpy's `__array_ufunc__` for tilegrad values: an operator ufunc (a numpy scalar on the left
    of `*`) is the Python operator; any other (`np.exp(x)`) is refused with the DSL's own name,
    since numpy cannot compute on a trace-time value."""
    name = ufunc.__name__
    if method == "__call__" and not kwargs and name in _UFUNC_OPERATORS:
        return _UFUNC_OPERATORS[name](*(as_python(v) for v in inputs))
    hint = _UFUNC_HINTS.get(name) or (f"tg.{name}" if name in DSL_UFUNCS else None)
    use = f"use {hint}" if hint else "tilegrad's operators and functions are listed in docs/dsl.md"
    raise TypeError(f"numpy's {name} cannot compute on a tilegrad value inside an op body; {use}")


def as_python(value):
    """A numpy scalar (or 0-d array) as the Python number it holds; anything else as it is."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    if isinstance(value, np.ndarray):
        raise TypeError(f"a numpy array of shape {value.shape} inside an op body: pass it as a tensor argument")
    return value


@dataclass(eq=False)
class Const(Expr):
    value: Number
    kind: str


@dataclass(eq=False)
class Var(Expr):
    """A loop variable of a compute domain, scatter domain or reduction."""

    name: str
    kind: str = "i"
    uid: int = field(default_factory=lambda: next(_var_ids))


@dataclass(eq=False)
class Dim(Expr):
    """The runtime size of one axis of a tensor argument (no recompile when it changes)."""

    tensor: str
    axis: int
    kind: str = "i"


@dataclass(eq=False)
class Param(Expr):
    """A runtime attribute: a scalar the kernel reads at each call (no recompile when it changes)."""

    name: str
    kind: str


@dataclass(eq=False)
class Read(Expr):
    """One element of a tensor argument, output or temporary; an index that is itself data is a gather."""

    buffer: object  # TensorArg | Buffer
    indices: tuple[Expr, ...]
    kind: str = "f"
    line: str | None = None
    """Where in the op's source the read was written ("file.py:12"), for errors that name it."""


_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
_FOLD = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
         "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
_LOGIC = {"and", "or"}


@dataclass(eq=False)
class BinOp(Expr):
    op: str
    a: Expr
    b: Expr
    kind: str

    @staticmethod
    def make(op: str, a: Expr, b: Expr) -> Expr:
        if op in _LOGIC:  # bitwise on integers, logical otherwise
            kind = "i" if a.kind == "i" and b.kind == "i" else "b"
            if kind == "i":
                return BinOp(op, a, b, kind)
            a, b = cast(a, "b"), cast(b, "b")
            for known, other in ((a, b), (b, a)):  # a test an attribute's value decided (a stride of 1's)
                if isinstance(known, Const):
                    return other if bool(known.value) == (op == "and") else known
            return BinOp(op, a, b, "b")
        if a.kind != b.kind:
            a, b = promote(a, b)
        if op in _COMPARE:
            if isinstance(a, Const) and isinstance(b, Const):  # a special attribute value folds
                return Const(_FOLD[op](a.value, b.value), "b")
            return BinOp(op, a, b, "b")
        if op == "div" and a.kind == "i":
            a, b = cast(a, "f"), cast(b, "f")
        if a.kind == "i" and isinstance(b, Const) and b.value == 1 and op in ("floordiv", "mod"):
            return a if op == "floordiv" else Const(0, "i")  # (a stride of 1)
        if op in ("mul", "div") and isinstance(b, Const) and b.value == 1:
            return a  # x * 1 (an absent weight), x / 1
        if op == "mul" and isinstance(a, Const) and a.value == 1:
            return b
        return BinOp(op, a, b, a.kind)


@dataclass(eq=False)
class UnOp(Expr):
    op: str
    a: Expr
    kind: str


@dataclass(eq=False)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr
    kind: str


@dataclass(eq=False)
class Cast(Expr):
    a: Expr
    kind: str


@dataclass(eq=False)
class Reduce(Expr):
    """`combine` over var in [0, extent) of body: a sum/max over an axis or window."""

    combine: str
    var: Var
    extent: Expr
    body: Expr
    kind: str
    length: str | None = None
    """"short" / "long": a sum the kernel is specialized for at most / more than REDUCE_BLOCK terms
    of (dsl/bounds.sum_lengths); None where its shapes do not say."""


_DSL_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_OPDEF_FILE = _DSL_DIR + "opdef.py"


def user_line() -> str | None:
    """The innermost line of the op's own code on the stack ("file.py:12"): the frame nearest the
    caller outside tilegrad's DSL, below the op's trace (None when only the DSL is on the stack,
    as for a value the body returned, which the trace assigns after the body ran)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == _OPDEF_FILE:
            return None
        if not filename.startswith(_DSL_DIR):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def as_expr(value, like: Expr | None = None) -> Expr:
    if isinstance(value, Expr):
        return value
    if hasattr(value, "as_scalar_expr"):
        return value.as_scalar_expr()
    value = as_python(value)  # np.int64(2) is 2
    if isinstance(value, bool):
        return Const(value, "b")
    if isinstance(value, int):
        return Const(value, like.kind if like is not None and like.kind != "b" else "i")
    if isinstance(value, float):
        return Const(value, "f")
    raise TypeError(f"cannot use {value!r} in a tilegrad expression")


def cast(value, kind: str) -> Expr:
    """value as kind "f" (the compute float), "i" (integer; floats truncate toward zero) or "b"."""
    e = as_expr(value)
    if e.kind == kind:
        return e
    if isinstance(e, Const):
        py = {"f": float, "i": int, "b": bool}[kind]
        return Const(py(e.value), kind)
    return Cast(e, kind)


def promote(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    rank = {"b": 0, "i": 1, "f": 2}
    kind = max(a.kind, b.kind, key=rank.__getitem__)
    return cast(a, kind), cast(b, kind)


def elementwise(fn: Callable[..., Expr], *operands):
    """fn(*operands) for scalar operands. When one is a tensor (it has `as_tensor_expr`), the tensor's
    own broadcasting maps fn over the elements of all of them (`_broadcast`, dsl/tensor.py): so an
    operator or function of this module meets a tensor without this module knowing tensors."""
    for operand in operands:
        if hasattr(operand, "as_tensor_expr"):
            return operand._broadcast(fn, *operands)
    return fn(*operands)


def select(cond, a, b) -> Expr:
    """One element of tg.where: `a` where `cond` holds, else `b`."""
    a, b = promote(as_expr(a, like=as_expr(b) if isinstance(b, Expr) else None), as_expr(b))
    cond = cast(cond, "b")
    if isinstance(cond, Const):  # known at trace time: only the chosen side is computed (or read)
        return a if cond.value else b
    return Select(cond, a, b, a.kind)


def unary(op: str, x) -> Expr:
    """One element of tg.exp, tg.log, ...: the float function `op` of x."""
    return UnOp(op, cast(x, "f"), "f")


def extreme(op: str, x, y) -> Expr:
    """One element of tg.maximum ("max") or tg.minimum ("min"); a number takes the other's kind."""
    if isinstance(x, Expr):
        y = as_expr(y, like=x)
    else:
        y = as_expr(y)
        x = as_expr(x, like=y)
    return BinOp.make(op, x, y)


def scalar_power(base, exponent, positive_base: bool = False) -> Expr:
    """One element of tg.power (and `**`); the exponent is a Python number or an expression."""
    if positive_base:
        return unary("exp", as_expr(exponent) * unary("log", base))
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        if float(exponent).is_integer() and abs(exponent) <= 64:
            return _integer_power(as_expr(base), int(exponent))
        if exponent in (0.5, -0.5):
            root = unary("sqrt", base)
            return root if exponent > 0 else 1.0 / root
    return _general_power(base, exponent)


def _integer_power(base: Expr, n: int) -> Expr:
    if n < 0:
        return 1.0 / _integer_power(base, -n)
    result, square = None, base
    while n:  # binary exponentiation: x**3 = x * x*x, as a reader would write it
        if n & 1:
            result = square if result is None else result * square
        n >>= 1
        if n:
            square = square * square
    return result if result is not None else as_expr(1, like=base)


def _general_power(base, exponent) -> Expr:
    base, exponent = as_expr(base), as_expr(exponent)
    magnitude = unary("exp", exponent * unary("log", abs(base)))
    integral = unary("floor", exponent).eq(exponent)
    odd = (unary("floor", exponent * 0.5) * 2.0).ne(exponent)
    negative = select(integral, select(odd, -magnitude, magnitude), Const(float("nan"), "f"))
    return select(exponent.eq(0.0), 1.0, select(base < 0.0, negative, magnitude))


def reduce_sum(extent, body) -> Expr:
    """Σ_{r in [0, extent)} body(r): a reduction over an axis, inside any compute."""
    return _reduce("sum", extent, body)


def _reduce(combine: str, extent, body) -> Reduce:
    size = as_expr(extent)
    if size.kind != "i":  # a float count of terms has no loop (TypeError: the trace names the line)
        hint = "; divide sizes with //" if not isinstance(size, Const) else ""
        raise TypeError(f"the extent of a reduce_{combine} must be an integer (a dim, an int, or integer "
                        f"arithmetic of them), got {extent!r}{hint}")
    var = Var("r")
    value = as_expr(body(var))
    return Reduce(combine, var, size, value, value.kind)


def reduce_sum_over(extents, body) -> Expr:
    """Σ over every point of a box (nested reductions): body(*point) for point in extents."""
    return _over(reduce_sum, tuple(extents), body)


def reduce_max_over(extents, body) -> Expr:
    """The maximum over every point of a box (nested reductions), like reduce_sum_over."""
    return _over(reduce_max, tuple(extents), body)


def _over(reduce, extents: tuple, body) -> Expr:
    def level(depth: int, bound: tuple) -> Expr:
        if depth == len(extents):
            return as_expr(body(*bound))
        return reduce(extents[depth], lambda k: level(depth + 1, bound + (k,)))

    return level(0, ())


def reduce_max(extent, body) -> Expr:
    """max_{r in [0, extent)} body(r) (-inf, or the lowest index value, for an empty range)."""
    return _reduce("max", extent, body)


def reduce_min(extent, body) -> Expr:
    """min_{r in [0, extent)} body(r) (+inf, or the highest index value, for an empty range); a
    NaN term makes the result NaN, as torch.amin."""
    return _reduce("min", extent, body)


def reduce_min_over(extents, body) -> Expr:
    """The minimum over every point of a box (nested reductions), like reduce_sum_over."""
    return _over(reduce_min, tuple(extents), body)


def subexpressions(e: Expr):
    """e and every expression inside it (operands, indices, a reduction's extent and body), in
    pre-order. Iterative: a chain of a thousand updates is an expression a thousand levels deep."""
    stack = [e]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(children(e)))


def children(e: Expr) -> tuple[Expr, ...]:
    """The expressions directly inside e."""
    match e:
        case Read():
            return e.indices
        case BinOp():
            return (e.a, e.b)
        case UnOp() | Cast():
            return (e.a,)
        case Select():
            return (e.cond, e.a, e.b)
        case Reduce():
            return (e.extent, e.body)
    return ()


def walk_reads(e: Expr) -> set[str]:
    """Names of the tensors and buffers an expression reads."""
    return {s.buffer.name for s in subexpressions(e) if isinstance(s, Read)}
