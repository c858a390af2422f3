"""What an op's index expressions need of the shapes, proven at each call before the kernel runs.

A read whose index is a loop variable (or a constant) is emitted without a clamp, so its safety
rests on a shape relation: the variable's extent must not exceed the tensor's size on that axis.
This module collects those relations from a trace as `Requirement`s over size expressions
(dims, runtime attributes, integers) in a JSON form that the compile cache keeps, and checks
them for a call's actual shapes. Indices it cannot prove this way (computed from data or from
other variables, or bounded by an extent that varies inside the kernel) are clamped by the
emitter instead, and a clamped read needs a non-empty tensor.

Broadcasting adds relations of its own: dims that are not statically 1 must be equal, as numpy
requires, since the kernel reads both operands at the same index.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilegrad.dsl.expr import BinOp, Const, Dim, Expr, Param, Read, Reduce, Select, Var, children
from tilegrad.errors import ShapeError, UnsupportedError
from tilegrad.index_math import REDUCE_BLOCK, truncated_div

Form = int | list
def _rem(a: int, b: int) -> int:
    """arith.remsi: the remainder with the dividend's sign."""
    return a - truncated_div(a, b) * b if b else 0


_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "floordiv": truncated_div, "div": truncated_div, "mod": _rem, "max": max, "min": min,
        "gt": lambda a, b: int(a > b)}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "div": "//", "mod": "%", "gt": ">"}


def size_form(e: Expr) -> Form | None:
    """A size expression in JSON form (ints, ["dim", tensor, axis], ["param", name], [op, a, b]),
    or None when it depends on loop variables or data."""
    match e:
        case Const() if e.kind == "i":
            return int(e.value)
        case Dim():
            return ["dim", e.tensor, e.axis]
        case Param() if e.kind == "i":
            return ["param", e.name]
        case BinOp() if e.op in _OPS and e.kind == "i":
            a, b = size_form(e.a), size_form(e.b)
            return None if a is None or b is None else [e.op, a, b]
    return None


def evaluate(form: Form, shapes: dict[str, tuple], params: dict | None = None) -> int:
    if isinstance(form, int):
        return form
    if form[0] == "dim":
        return int(shapes[form[1]][form[2]])
    if form[0] == "param":
        return int((params or {})[form[1]])
    return int(_OPS[form[0]](evaluate(form[1], shapes, params), evaluate(form[2], shapes, params)))


def describe(form: Form) -> str:
    """A size form as a reader writes it: sums and differences collected into terms and one constant
    (`((1 + (x.shape[1] - 1)) + 1)` is `x.shape[1] + 1`), products by constants as coefficients."""
    terms, constant = _linear(form)
    parts = [(coefficient, _atom(atom)) for atom, coefficient in terms.values() if coefficient]
    text = ""
    for coefficient, atom in parts:
        scaled = atom if abs(coefficient) == 1 else f"{abs(coefficient)} * {atom}"
        text += (" - " if text else "-") + scaled if coefficient < 0 else (" + " if text else "") + scaled
    if constant or not text:
        text += f" {'-' if constant < 0 else '+'} {abs(constant)}" if text else str(constant)
    return text


def _linear(form: Form) -> tuple[dict[str, tuple[Form, int]], int]:
    """form as Σ coefficient * atom + constant: atoms (dims, parameters, and products, quotients and
    the like that are not sums) keyed by their JSON text, in the order they first appear."""
    if isinstance(form, int):
        return {}, form
    if form[0] in ("add", "sub"):
        (a, ca), (b, cb) = _linear(form[1]), _linear(form[2])
        sign = 1 if form[0] == "add" else -1
        terms = dict(a)
        for key, (atom, coefficient) in b.items():
            terms[key] = (atom, terms.get(key, (atom, 0))[1] + sign * coefficient)
        return terms, ca + sign * cb
    if form[0] == "mul":
        for term, factor in ((form[1], form[2]), (form[2], form[1])):
            scale, constant = _linear(factor)
            if not scale:  # a constant factor
                inner, c = _linear(term)
                return {k: (atom, n * constant) for k, (atom, n) in inner.items()}, c * constant
    return {repr(form): (form, 1)}, 0


def _atom(form: Form) -> str:
    if form[0] == "dim":
        return f"{form[1]}.shape[{form[2]}]"
    if form[0] == "param":
        return form[1]
    if form[0] in ("max", "min"):
        return f"{form[0]}({describe(form[1])}, {describe(form[2])})"
    return f"{_operand(form[1])} {_SYMBOL[form[0]]} {_operand(form[2], right=True)}"


def _operand(form: Form, right: bool = False) -> str:
    """An operand of a product or quotient: parenthesized unless it is one term (on the right, one
    that is not itself a product or quotient: `a // (b * c)`, as Python groups left to right)."""
    terms, constant = _linear(form)
    single = (not terms and constant >= 0) or (len(terms) == 1 and not constant
                                                 and next(iter(terms.values()))[1] == 1)
    if single and right and terms:
        atom = next(iter(terms.values()))[0]
        single = atom[0] in ("dim", "param", "max", "min")
    return describe(form) if single else f"({describe(form)})"


def uses_params(form: Form) -> bool:
    return isinstance(form, list) and (form[0] == "param" or any(uses_params(f) for f in form[1:]
                                                                 if isinstance(f, list)))


@dataclass(frozen=True)
class Requirement:
    """`lhs REL rhs` must hold unless one of the `unless_empty` extents is 0 (nothing runs then).
    REL is "le" (an extent fits a size), "lt" (a constant index fits), "eq" (broadcast dims)."""

    rel: str
    lhs: Form
    rhs: Form
    unless_empty: tuple = ()
    what: str = ""

    def holds(self, shapes: dict[str, tuple], params: dict | None = None) -> bool:
        if any(evaluate(e, shapes, params) <= 0 for e in self.unless_empty):
            return True
        a, b = evaluate(self.lhs, shapes, params), evaluate(self.rhs, shapes, params)
        return a <= b if self.rel == "le" else a < b if self.rel == "lt" else a == b

    def error(self, op: str, shapes: dict[str, tuple], params: dict | None = None) -> ShapeError:
        a, b = evaluate(self.lhs, shapes, params), evaluate(self.rhs, shapes, params)
        relation = {"le": "<=", "lt": "<", "eq": "=="}[self.rel]
        return ShapeError(f"{op}: {self.what}: needs {describe(self.lhs)} {relation} {describe(self.rhs)}, "
                          f"but they are {a} and {b} (shapes {_named(shapes, self)})")

    def to_json(self) -> list:
        return [self.rel, self.lhs, self.rhs, list(self.unless_empty), self.what]

    @staticmethod
    def from_json(data: list) -> Requirement:
        rel, lhs, rhs, unless, what = data
        return Requirement(rel, lhs, rhs, tuple(unless), what)


def _named(shapes: dict[str, tuple], req: Requirement) -> str:
    names = sorted({n for f in (req.lhs, req.rhs) for n in _dims_of(f)})
    return ", ".join(f"{n}={tuple(shapes[n])}" for n in names if n in shapes)


def _dims_of(form: Form):
    if isinstance(form, list):
        if form[0] == "dim":
            yield form[1]
        else:
            for part in form[1:]:
                yield from _dims_of(part)


def broadcast_requirement(a: Expr, b: Expr) -> Requirement | None:
    """Two dims that broadcast against each other (neither statically 1) must be equal."""
    fa, fb = size_form(a), size_form(b)
    if fa is None or fb is None or fa == fb:
        return None
    return Requirement("eq", fa, fb, (), "broadcast operands must agree on this axis")


class BoundsAnalysis:
    """Walks a trace once: which loop variables have extents known before the call (their reads
    need no clamp), and the requirements that make those unclamped reads safe."""

    def __init__(self, op: str):
        self.op = op
        self.extents: dict[int, Form] = {}
        self.requirements: list[Requirement] = []
        self.affine_reads: set[tuple[int, int]] = set()

    def plain(self, index: Expr) -> bool:
        """An index read without a clamp: a constant, or a variable with a known extent."""
        if isinstance(index, Const):
            return index.kind == "i"
        return isinstance(index, Var) and index.uid in self.extents

    def plain_at(self, read: Read, axis: int) -> bool:
        """Whether `read` needs no clamp on `axis`: a plain index, or an affine one (2*o + k, an
        unpadded window) that no `where` masks, whose largest value the call checks."""
        return self.plain(read.indices[axis]) or (id(read), axis) in self.affine_reads

    def _unmasked_affine(self, index: Expr) -> bool:
        affine = self.affine(index)
        return affine is not None and bool(affine[0]) and _non_negative(affine[1])

    def affine(self, e: Expr) -> tuple[list[tuple[Form, Form]], Form] | None:
        """e as Σ coefficient * variable + constant (coefficients non-negative size forms, each
        variable paired with its extent), or None when it is not one."""
        match e:
            case Var() if e.uid in self.extents:
                return [(1, self.extents[e.uid])], 0
            case Const() if e.kind == "i":
                return [], int(e.value)
            case BinOp() if e.op == "add" and e.kind == "i":
                a, b = self.affine(e.a), self.affine(e.b)
                return None if a is None or b is None else (a[0] + b[0], _plus(a[1], b[1]))
            case BinOp() if e.op == "sub" and e.kind == "i":
                a, b = self.affine(e.a), size_form(e.b)
                return None if a is None or b is None else (a[0], ["sub", a[1], b] if b != 0 else a[1])
            case BinOp() if e.op == "mul" and e.kind == "i":
                for term, factor in ((e.a, e.b), (e.b, e.a)):
                    inner, scale = self.affine(term), size_form(factor)
                    if inner is not None and scale is not None and _non_negative(scale):
                        return [(_times(c, scale), x) for c, x in inner[0]], _times(inner[1], scale)
        return None

    def stage(self, variables, domain, exprs, scatter=None) -> None:
        """A stage's loop variables and expressions; `scatter` is (buffer, indices) of a scatter,
        whose plain-variable indices are not range-checked in the kernel and need a relation."""
        enclosing = []
        for var, extent in zip(variables, domain):
            form = size_form(extent)
            if form is not None:
                self.extents[var.uid] = form
                enclosing.append(form)
        for e in exprs:
            self._walk(e, tuple(enclosing))
        if scatter is not None:
            buffer, indices = scatter
            for axis, index in enumerate(indices):
                if isinstance(index, Var) and index.uid in self.extents:
                    self._add("le", self.extents[index.uid], size_form(buffer.shape[axis]), tuple(enclosing),
                              f"{buffer.name} is written along axis {axis} at every index below "
                              f"{describe(self.extents[index.uid])}")

    def _walk(self, e: Expr, enclosing: tuple, masked: bool = False) -> None:
        """`masked`: e is a value a `where` may discard, so its out-of-range reads are allowed
        (clamped) rather than refused."""
        if isinstance(e, Reduce):
            self._walk(e.extent, enclosing, masked)
            form = size_form(e.extent)
            if form is not None:
                self.extents[e.var.uid] = form
            self._walk(e.body, enclosing + ((form,) if form is not None else ()), masked)
            return
        if isinstance(e, Read):
            self.read(e, enclosing, masked)
        if isinstance(e, Select):
            self._walk(e.cond, enclosing, masked)
            self._walk(e.a, enclosing, True)
            self._walk(e.b, enclosing, True)
            return
        for child in children(e):  # (a Reduce returned above)
            self._walk(child, enclosing, masked)

    def read(self, e: Read, enclosing: tuple, masked: bool = False) -> None:
        name = e.buffer.name
        for axis, index in enumerate(e.indices):
            size = size_form(e.buffer.shape[axis])
            if size is None:
                raise UnsupportedError(f"{self.op}: {name} has a size on axis {axis} that depends on loop "
                                       f"variables; buffer sizes must be known before the call")
            if isinstance(index, Const) and index.kind == "i":
                if index.value < 0:
                    raise UnsupportedError(f"{self.op}: {name} is read at the negative index {index.value}")
                self._add("lt", int(index.value), size, enclosing, f"{name} is read at index {index.value} "
                                                                    f"of axis {axis}")
            elif isinstance(index, Var) and index.uid in self.extents:
                self._add("le", self.extents[index.uid], size, enclosing,
                          f"{name} is read along axis {axis} at every index below {describe(self.extents[index.uid])}")
            elif not masked and self._unmasked_affine(index):  # largest index: Σ c (extent - 1) + constant
                self.affine_reads.add((id(e), axis))
                terms, constant = self.affine(index)
                top = constant
                for coefficient, extent in terms:
                    top = _plus(top, _times(coefficient, ["sub", extent, 1]))
                self._add("le", _plus(top, 1), size, enclosing + tuple(x for _, x in terms),
                          f"{name} is read along axis {axis} at indices up to {describe(top)}")
            else:  # clamped into [0, size): the tensor must have an element to clamp to
                self._add("le", 1, size, enclosing, f"{name} is read at a computed index on axis {axis}, "
                                                    f"so it must not be empty there")

    def _add(self, rel: str, lhs: Form, rhs: Form, enclosing: tuple, what: str) -> None:
        if lhs == rhs and rel in ("le", "eq"):
            return
        if isinstance(lhs, int) and isinstance(rhs, int):
            if not Requirement(rel, lhs, rhs).holds({}):
                raise UnsupportedError(f"{self.op}: {what}, which can never fit ({lhs} vs {rhs})")
            return
        unless = tuple(f for f in enclosing if f != lhs)
        req = Requirement(rel, lhs, rhs, unless, what)
        if req not in self.requirements:
            self.requirements.append(req)


def _plus(a: Form, b: Form) -> Form:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return a if b == 0 else b if a == 0 else ["add", a, b]


def _times(a: Form, b: Form) -> Form:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return b if a == 1 else a if b == 1 else 0 if 0 in (a, b) else ["mul", a, b]


def _non_negative(form: Form) -> bool:
    """Provably >= 0: built from sizes and non-negative constants by +, * and //."""
    if isinstance(form, int):
        return form >= 0
    if form[0] == "dim":
        return True
    return form[0] in ("add", "mul", "floordiv", "div") and all(_non_negative(f) for f in form[1:])


def check_requirements(op: str, requirements, shapes: dict[str, tuple], params: dict | None = None) -> None:
    for req in requirements:
        if not req.holds(shapes, params):
            raise req.error(op, shapes, params)


def sum_extent_forms(sums: list[Reduce]) -> tuple[Form | None, ...]:
    """Each float sum's extent as a size form (None: it depends on loop variables or data)."""
    return tuple(size_form(s.extent) for s in sums)


def sum_lengths(forms: tuple[Form | None, ...], shapes: dict[str, tuple], params: dict) -> tuple[str | None, ...]:
    """Each sum at these shapes: "short" (at most REDUCE_BLOCK terms), "long", or None where its
    extent is not a size of the call. A kernel specialized for them compiles only the form of each
    sum that runs (lower-tg-to-loops)."""
    def length(form: Form | None) -> str | None:
        if form is None:
            return None
        try:
            return "short" if evaluate(form, shapes, params) <= REDUCE_BLOCK else "long"
        except (KeyError, IndexError):  # a size of a buffer the call does not give
            return None

    return tuple(length(form) for form in forms)
