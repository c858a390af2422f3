"""Tensor-valued values of an op body: arguments, lazy elementwise expressions, and buffers.

Array-style arithmetic (`dy * y * (1 - y)`) builds a `TensorExpr`: a shape plus a function from
an index to a scalar `Expr`. Nothing is materialized until a buffer is assigned, so a chain of
elementwise ops becomes one loop nest with no temporaries. A buffer's `assign` records the
`Compute` stage into the current trace (record.py).

The tensors sit above the scalar algebra (expr.py) and the elementwise functions (functions.py):
those hand a tensor operand the scalar function to broadcast (`_broadcast`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce

from tilegrad.dsl.bounds import broadcast_requirement
from tilegrad.dsl.expr import Const, Dim, Expr, Read, Var, as_expr, user_line
from tilegrad.dsl.functions import power
from tilegrad.dsl.record import Compute, active_trace, current_trace
from tilegrad.dtypes import DType


class _TensorOps:
    """Elementwise operators for anything with `as_tensor_expr()`."""

    def _apply(self, fn, *others, swap=False):
        operands = (others[0], self) if swap else (self, *others)
        return broadcast_apply(fn, *operands)

    @staticmethod
    def _broadcast(fn, *operands):
        """The protocol expr.elementwise calls on a tensor operand: fn over every element of the operands."""
        return broadcast_apply(fn, *operands)

    def __add__(self, o): return self._apply(lambda a, b: a + b, o)
    def __radd__(self, o): return self._apply(lambda a, b: a + b, o, swap=True)
    def __sub__(self, o): return self._apply(lambda a, b: a - b, o)
    def __rsub__(self, o): return self._apply(lambda a, b: a - b, o, swap=True)
    def __mul__(self, o): return self._apply(lambda a, b: a * b, o)
    def __rmul__(self, o): return self._apply(lambda a, b: a * b, o, swap=True)
    def __truediv__(self, o): return self._apply(lambda a, b: a / b, o)
    def __rtruediv__(self, o): return self._apply(lambda a, b: a / b, o, swap=True)
    def __neg__(self): return self._apply(lambda a: -a)
    def __gt__(self, o): return self._apply(lambda a, b: a > b, o)
    def __ge__(self, o): return self._apply(lambda a, b: a >= b, o)
    def __lt__(self, o): return self._apply(lambda a, b: a < b, o)
    def __le__(self, o): return self._apply(lambda a, b: a <= b, o)
    def eq(self, o): return self._apply(lambda a, b: as_expr(a).eq(b), o)
    def ne(self, o): return self._apply(lambda a, b: as_expr(a).ne(b), o)
    def __and__(self, o): return self._apply(lambda a, b: as_expr(a) & b, o)
    def __rand__(self, o): return self._apply(lambda a, b: as_expr(a) & b, o, swap=True)
    def __or__(self, o): return self._apply(lambda a, b: as_expr(a) | b, o)
    def __ror__(self, o): return self._apply(lambda a, b: as_expr(a) | b, o, swap=True)
    def __invert__(self): return self._apply(lambda a: ~as_expr(a))
    def __abs__(self): return self._apply(lambda a: abs(as_expr(a)))
    def __mod__(self, o): return self._apply(lambda a, b: as_expr(a) % b, o)
    def __floordiv__(self, o): return self._apply(lambda a, b: as_expr(a) // b, o)
    __eq__, __ne__, __hash__ = Expr.__eq__, Expr.__ne__, object.__hash__  # (`== 0.0` refused: use .eq)
    __float__, __array_ufunc__ = Expr.__float__, Expr.__array_ufunc__  # (np.exp(x): use tg.exp)

    def __pow__(self, o): return power(self, o)
    def __rpow__(self, o): return power(o, self)


@dataclass(eq=False)
class TensorExpr(_TensorOps):
    shape: tuple[Expr, ...]
    fn: Callable[[tuple[Expr, ...]], Expr]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def as_tensor_expr(self) -> TensorExpr:
        return self

    def at(self, index: Sequence[Expr]) -> Expr:
        return as_expr(self.fn(tuple(index)))

    def __getitem__(self, index) -> Expr:
        """One element, as for a tensor argument: `kept = target.ne(ignore); kept[n]`."""
        index = index if isinstance(index, tuple) else (index,)
        if len(index) != self.rank:
            raise IndexError(f"a rank-{self.rank} expression indexed with {len(index)} indices")
        return self.at(tuple(as_expr(i) for i in index))


class _Indexable(_TensorOps):
    name: str
    dtype: DType
    rank: int

    @property
    def shape(self) -> tuple[Expr, ...]:
        raise NotImplementedError

    @property
    def numel(self) -> Expr:
        return reduce(lambda a, b: a * b, self.shape) if self.rank else Const(1, "i")

    def __getitem__(self, index) -> Read:
        return self.read(index, user_line())

    def read(self, index, line: str | None) -> Read:
        """The element at `index`, a read made at `line` of the op's source."""
        if not isinstance(index, tuple):
            index = (index,)
        if len(index) != self.rank:
            raise IndexError(f"{self.name} has rank {self.rank}, indexed with {len(index)} indices")
        kind = "f" if self.dtype.is_float else "i"
        return Read(self, tuple(as_expr(i) for i in index), kind, line)

    def flat(self, n, *tail) -> Read:
        """The element at flat (row-major) position n of the leading axes, then `tail` indices:
        `grad.flat(n, e)` reads row n of grad seen as [numel / E, E], whatever its leading dims."""
        lead = self.shape[: self.rank - len(tail)]
        index: list[Expr] = []
        rest = as_expr(n)
        for axis in range(len(lead) - 1, 0, -1):
            index.append(rest % lead[axis])
            rest = rest // lead[axis]
        if lead:
            index.append(rest)
        return self[tuple(reversed(index)) + tuple(as_expr(t) for t in tail)]

    def item(self) -> Read:
        """The single element of a one-element tensor (shape (), (1,) or (1, 1, ...))."""
        return self[tuple(Const(0, "i") for _ in range(self.rank))]

    def as_tensor_expr(self) -> TensorExpr:
        line = user_line()  # where the whole tensor is used (`x + acc`); its reads are made later
        return TensorExpr(self.shape, lambda idx: self.read(idx, line))


class TensorArg(_Indexable):
    """A tensor argument of the op, specialized on rank and dtype; its dims are runtime values."""

    def __init__(self, name: str, rank: int, dtype: DType, static: tuple = (), updated: bool = False):
        self.name, self.rank, self.dtype, self.updated = name, rank, dtype, updated
        self.static = tuple(static) or (None,) * rank
        """Dims the matched shape pattern fixes (e.g. the 1 of "N 1"); None where runtime."""

    def assign(self, value) -> None:
        """Update the argument in place (declared with `tg.tensor(..., updated=True)`)."""
        if not self.updated:
            raise TypeError(f"{self.name} is an input; declare it tg.tensor(..., updated=True) to write it")
        compute(self, value)

    @property
    def shape(self) -> tuple[Expr, ...]:
        return tuple(Dim(self.name, axis) if fixed is None else Const(fixed, "i")
                     for axis, fixed in enumerate(self.static))

    def __repr__(self) -> str:
        return f"TensorArg({self.name}, rank={self.rank}, {self.dtype.name})"


class Buffer(_Indexable):
    """An output or a temporary the op writes, with a shape of runtime expressions."""

    def __init__(self, name: str, shape: Sequence[Expr], dtype: DType, role: str):
        self.name, self.dtype, self.role = name, dtype, role
        self._shape = tuple(as_expr(d) for d in shape)
        self.rank = len(self._shape)

    @property
    def shape(self) -> tuple[Expr, ...]:
        return self._shape

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {self.role}, rank={self.rank}, {self.dtype.name})"

    def assign(self, value) -> None:
        """Every element of the buffer becomes `value` (a tensor expression, a scalar, or a
        function of the indices)."""
        compute(self, value)

    def fill(self, value) -> None:
        self.assign(value)


def to_tensor_expr(value) -> TensorExpr | None:
    if hasattr(value, "as_tensor_expr"):
        return value.as_tensor_expr()
    return None


def _is_one(dim: Expr) -> bool:
    return isinstance(dim, Const) and dim.value == 1


def broadcast_apply(fn: Callable[..., Expr], *operands):
    """Apply a scalar function elementwise with numpy broadcasting: shapes align on the right,
    missing leading axes and dims that are statically 1 repeat (other dims must agree at run time,
    which the op's shape patterns check)."""
    tensors = [to_tensor_expr(o) for o in operands]
    if all(t is None for t in tensors):
        return fn(*operands)
    rank = max(t.rank for t in tensors if t is not None)
    shape = []
    for axis in range(rank):
        dims = [t.shape[axis - rank + t.rank] for t in tensors if t is not None and axis - rank + t.rank >= 0]
        shape.append(next((d for d in dims if not _is_one(d)), dims[0]))
        _require_equal([d for d in dims if not _is_one(d)])

    def element(index: tuple[Expr, ...]) -> Expr:
        args = []
        for operand, t in zip(operands, tensors):
            if t is None:
                args.append(operand)
                continue
            own = index[len(index) - t.rank:] if t.rank else ()
            own = tuple(Const(0, "i") if _is_one(d) and not _is_one(shape[rank - t.rank + a]) else i
                        for a, (d, i) in enumerate(zip(t.shape, own)))
            args.append(t.at(own))
        return fn(*args)

    return TensorExpr(tuple(shape), element)


def _require_equal(dims: list[Expr]) -> None:
    """Broadcast dims that are not statically 1 are read at one index, so they must agree."""
    trace = active_trace()
    if trace is None:
        return
    for other in dims[1:]:
        req = broadcast_requirement(dims[0], other)
        if req is not None and req not in trace.requirements:
            trace.requirements.append(req)


def index_vars(rank: int, prefix: str = "i") -> tuple[Var, ...]:
    return tuple(Var(f"{prefix}{axis}") for axis in range(rank))


def compute(buffer: _Indexable, value) -> None:
    """buffer[i...] = value[i...] for every index of the buffer."""
    line = user_line()
    vars_ = index_vars(buffer.rank)
    tensor = to_tensor_expr(value)
    if tensor is not None:
        element = tensor.at(vars_[len(vars_) - tensor.rank:]) if tensor.rank else tensor.at(())
    elif callable(value):
        element = as_expr(value(*vars_))
    else:
        element = as_expr(value)
    current_trace().stages.append(Compute(buffer, vars_, element, line))
