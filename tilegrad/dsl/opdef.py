"""Declaring an op: typed tensor parameters with symbolic dims, attributes, outputs, rules.

    @tg.op(outputs={"dx": tg.like("input_x")})
    def my_op(x=tg.tensor("*S"), dy=tg.tensor("*S", dtype="x"), coef=tg.attr(1.0)):
        return dy * x * coef

Binding a call checks every declared rule in Python (shapes, dtypes, attributes) and yields a
specialization key: dtypes, ranks, which shape pattern matched, which optionals are present,
and the attribute values. Dims are not in the key, so a new batch size does not recompile.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from tilegrad.dsl.expr import Const, Dim, Expr, Param, as_expr
from tilegrad.dsl.hazards import refuse_hazards
from tilegrad.dsl.record import Trace, stop_tracing, tracing
from tilegrad.dsl.tensor import Buffer, TensorArg, compute
from tilegrad.dsl.trace import deep_recursion, too_deep
from tilegrad.dtypes import DTYPES, FLOATS, DType, dtype_of
from tilegrad.errors import (
    ArgumentError,
    AttributeValueError,
    DefinitionError,
    DTypeError,
    ShapeError,
    TilegradError,
    UnsupportedError,
)
from tilegrad.targets import Target, get_target

ONE = "one-element"
"""A shape pattern: any tensor with exactly one element ((), (1,), (1, 1), ...)."""

INDEX_DTYPES = ("int32", "int64", "uint8")


@dataclass(frozen=True)
class ParamsDtype:
    """cuDNN's rule for normalization parameters and statistics: float64 for float64 data,
    float32 for every other data dtype (half types compute in float32)."""

    data: str

    def expected(self, data_dtype: str) -> str:
        return "float64" if data_dtype == "float64" else "float32"


def params_dtype(data: str) -> ParamsDtype:
    """A tensor's dtype by cuDNN's parameter rule: float64 if `data` is float64, else float32."""
    return ParamsDtype(data)


@dataclass(frozen=True)
class TensorSpec:
    patterns: tuple
    dtype: str | tuple[str, ...] | ParamsDtype = "data"
    """"data" (the op's data dtypes), a tuple of dtype names, another argument's name, or
    `params_dtype(name)` (float64 for float64 data, else float32)."""
    optional: bool = False
    collapse: bool = False
    """The kernel sees the starred group of dims as one axis (a free view for contiguous data)."""
    values: tuple | None = None
    """The range valid values lie in, (low, high): numbers, or a dim symbol / attribute name.
    Used to make random inputs (`tilegrad run`); the kernel itself checks index ranges."""
    updated: bool = False
    """The op also writes this argument, in place (running statistics)."""
    doc: str = ""
    view: Callable[[tuple, dict], tuple] | None = None
    """(shape, attrs) -> the axes the kernel sees, as groups of the given axes in order: ((0,),
    (1, 2, 3)) is [N, C*H*W], a sum over a whole sample. Axes no group names must have size 1
    and are dropped: ((0,), (1,)) sees N x C x 1 x 1 as [N, C]. A kernel axis keeps its pattern's
    symbol, and a merged one is named by its members' ("C*H*W"), so tensors viewed alike are seen
    to agree. A free view for contiguous data, else a copy (refused for tensors updated in place);
    an output like this tensor is seen the same way. Every axis in a group of its own leaves the
    tensor as it is (a view for some shapes only); the grouping is part of what a kernel is
    specialized on."""


def tensor(*patterns, dtype: str | Sequence[str] | ParamsDtype = "data", optional: bool = False,
           collapse: bool = False, values: tuple | None = None, updated: bool = False,
           doc: str = "", view: Callable[[tuple, dict], tuple] | None = None) -> TensorSpec:
    """A tensor parameter. Each pattern is a string of dims ("N C", "*B E", "") or ONE.

    dtype: "data" (one of the op's dtypes), a dtype name or a tuple of them, another argument's name (the
    same dtype), or `tg.params_dtype(name)`. optional: may be None (the body sees None).
    collapse: the starred group is one axis in the kernel. view: a per-call reshape by attributes.
    values: the range of valid values, for random inputs. updated: written in place."""
    parsed = tuple(p if p == ONE else tuple(p.split()) for p in patterns) or (("*S",),)
    if isinstance(dtype, str) and dtype in DTYPES:  # dtype="int32": that dtype, as ("int32",)
        dtype = (dtype,)
    return TensorSpec(parsed, dtype if isinstance(dtype, (str, ParamsDtype)) else tuple(dtype), optional, collapse,
                      values, updated, doc, view)


@dataclass(frozen=True)
class AttrSpec:
    default: object
    choices: tuple = ()
    aliases: dict = field(default_factory=dict)
    doc: str = ""
    runtime: bool = False
    """The body sees a scalar expression and the kernel reads the value at each call, so a new
    value does not recompile. Only for attributes used as values, not in Python control flow."""
    special: tuple = ()
    """Values of a runtime attribute that get a kernel of their own, with the value folded in as a
    constant: `beta=0` (the usual call) then never reads the prior output, where any other beta
    does (`tg.where(beta.eq(0.0), ...)` folds to one arm)."""

    @property
    def kind(self) -> str:
        kind = self.default if self.required else type(self.default)
        return "f" if kind is float else "i"

    @property
    def required(self) -> bool:
        return isinstance(self.default, type)

    def normalize(self, name: str, value) -> object:
        if isinstance(value, type):
            raise AttributeValueError(f"attribute {name} ({value.__name__}) is required")
        kind = self.default if self.required else type(self.default)
        if kind is not tuple and isinstance(value, (list, tuple, np.ndarray)):
            raise AttributeValueError(f"attribute {name} must be a single "
                                      f"{'value' if self.choices else kind.__name__}, got {value!r}")
        if kind is tuple:
            try:
                items = list(np.atleast_1d(value))
            except (TypeError, ValueError):
                items = [value]
            return tuple(_integer(name, v, "a tuple of integers", value) for v in items)
        if value is None:
            raise AttributeValueError(f"attribute {name} must not be None")
        try:
            value = self.aliases.get(value, value) if not isinstance(value, float) else value
        except TypeError:  # unhashable
            raise AttributeValueError(f"attribute {name}={value!r} is not allowed") from None
        if self.choices and value not in self.choices:
            raise AttributeValueError(
                f"attribute {name}={value!r} is not allowed; choose one of "
                f"{', '.join(map(repr, self.choices))}"
            )
        if self.choices:
            return value
        if kind is bool:
            if not isinstance(value, (bool, np.bool_, int, np.integer)) or value not in (0, 1):
                raise AttributeValueError(f"attribute {name} must be a bool, got {value!r}")
            return bool(value)
        if kind in (int, float):
            if isinstance(value, (str, bytes)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise AttributeValueError(f"attribute {name} must be a number, got {value!r}")
        if kind is int:
            return _integer(name, value, "an integer", value)
        if kind is float:
            try:
                number = float(value)
            except OverflowError:  # an int beyond a double
                number = float("inf")
            if not np.isfinite(number):  # a kernel computes with it: inf and NaN are never meant
                raise AttributeValueError(f"attribute {name} must be a finite number, got {value!r}")
            return number
        return value


def _integer(name: str, value, what: str, given) -> int:
    """An integer attribute value (an integral float is one): finite, and within 64 bits, as the
    kernel holds it. `what` and `given`: what the attribute must be, and the value as given."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or (isinstance(value, (float, np.floating)) and not float(value).is_integer()):  # 2.5, inf, NaN
        raise AttributeValueError(f"attribute {name} must be {what}, got {given!r}")
    if not -(1 << 63) <= int(value) < (1 << 63):
        raise AttributeValueError(f"attribute {name} must be {what} within 64 bits, got {given!r}")
    return int(value)


def attr(default, choices: Sequence = (), aliases: dict | None = None, doc: str = "",
         runtime: bool = False, special: Sequence = ()) -> AttrSpec:
    """An attribute: `default` (or a type: required), allowed `choices` and `aliases`; `runtime`:
    read at each call instead of compiled in; `special`: runtime values compiled in after all."""
    return AttrSpec(default, tuple(choices), dict(aliases or {}), doc, runtime, tuple(special))


@dataclass(frozen=True)
class OutputSpec:
    shape: str | tuple | Callable
    """An argument's name (same shape), a tuple of dim symbols, attribute names and ints, or a
    function (shape_of, attrs) -> dims, where shape_of(argument) gives that argument's dims."""
    dtype: str
    """The argument whose dtype the output takes."""
    when: Callable[[dict], bool] | None = None
    """attrs -> whether the call produces this output (else it is None: not allocated, not written)."""


def like(arg: str, when: Callable[[dict], bool] | None = None) -> OutputSpec:
    """An output of `arg`'s shape and dtype (produced only where `when(attrs)` holds, if given)."""
    return OutputSpec(arg, arg, when)


def shaped(*dims, dtype: str, when: Callable[[dict], bool] | None = None) -> OutputSpec:
    """An output of these dims (symbols, attribute names, ints; "B V" is "B", "V") and `dtype`'s
    dtype."""
    dims = tuple(part for d in dims for part in (d.split() if isinstance(d, str) else (d,)))
    return OutputSpec(dims, dtype, when)


def shaped_by(rule: Callable, dtype: str, when: Callable[[dict], bool] | None = None) -> OutputSpec:
    """An output whose shape depends on attributes: rule(shape_of, attrs) -> dims."""
    return OutputSpec(rule, dtype, when)


@dataclass(frozen=True)
class Rule:
    check: Callable[..., bool]
    message: str
    arg: str
    takes_dtypes: bool = False

    def holds(self, shapes: dict, attrs: dict, dtypes: dict) -> bool:
        return bool(self.check(shapes, attrs, dtypes) if self.takes_dtypes else self.check(shapes, attrs))


def rule(check: Callable[..., bool], message: str, arg: str) -> Rule:
    """A declared constraint: check(shapes, attrs) (or check(shapes, attrs, dtypes), dtypes by
    argument name as strings) must hold, else ShapeError(arg: message)."""
    required = [p for p in inspect.signature(check).parameters.values() if p.default is p.empty]
    return Rule(check, message, arg, len(required) >= 3)


@dataclass
class Binding:
    """One call, checked: what the kernel specializes on and what it needs at run time."""

    tensors: dict[str, np.ndarray | None]
    dtypes: dict[str, DType]
    patterns: dict[str, int]
    attrs: dict[str, object]
    symbols: dict[str, object]
    output_shapes: dict[str, tuple[int, ...]]
    output_dtypes: dict[str, DType]
    runtime_attrs: tuple[str, ...] = ()
    kernel_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Each output's shape as the kernel sees it (a collapsed view of an output like a collapsed input).
    Outputs the call does not produce (`when=`) are in neither dict."""
    views: dict[str, tuple] = field(default_factory=dict)
    """(rank as given, axis groups) of the tensors whose view reshaped them at this call
    (TensorSpec.view)."""

    def key(self) -> tuple:
        return (
            tuple(sorted((n, d.name) for n, d in self.dtypes.items())),
            tuple(sorted((n, a.ndim) for n, a in self.tensors.items() if a is not None)),
            tuple(sorted(self.patterns.items())),
            tuple(sorted((n, repr(v)) for n, v in self.attrs.items() if n not in self.runtime_attrs)),
            tuple(sorted(self.views.items())),
        )


@dataclass
class OpDef:
    name: str
    fn: Callable
    tensors: dict[str, TensorSpec]
    attrs: dict[str, AttrSpec]
    outputs: dict[str, OutputSpec]
    dtypes: tuple[str, ...]
    targets: tuple[str, ...] | None
    rules: tuple[Rule, ...]
    schedule: Callable | None
    """(target, binding) -> a ScheduleHint (per-target layout choices, kept apart from the math) or a
    list of schedule directives (which may hold one ScheduleHint); see schedule_hint."""
    doc: str
    in_place: dict[str, str] = field(default_factory=dict)
    """Output -> the input it may be (the same array, same strides): dy is dx."""

    # ---- what is supported where -------------------------------------------------------------
    def supported_targets(self) -> list[str]:
        from tilegrad.targets import list_targets

        names = list_targets() if self.targets is None else list(self.targets)
        return [n for n in names if self.dtypes_on(get_target(n))]

    def dtypes_on(self, target: Target) -> list[str]:
        return [d for d in self.dtypes if d in target.dtypes]

    def check_target(self, target: Target) -> None:
        if self.targets is not None and target.name not in self.targets:
            raise UnsupportedError(
                f"op {self.name} is not supported on target {target.name!r}; "
                f"it runs on {', '.join(self.supported_targets())}"
            )

    # ---- binding a call ----------------------------------------------------------------------
    def bind(self, target: Target, args: Sequence, kwargs: dict) -> Binding:
        values = dict(zip(list(self.tensors) + list(self.attrs), args))
        for name, value in kwargs.items():
            if name in values:
                raise ArgumentError(f"{self.name}: argument {name!r} given twice")
            values[name] = value
        known = set(self.tensors) | set(self.attrs) | set(self.outputs)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ArgumentError(
                f"{self.name}: unknown argument(s) {', '.join(unknown)}; "
                f"it takes {', '.join(self.tensors)}; attributes {', '.join(self.attrs)}"
            )
        try:
            attrs = {n: s.normalize(n, values.get(n, s.default)) for n, s in self.attrs.items()}
        except AttributeValueError as err:
            raise AttributeValueError(f"{self.name}: {err}") from None
        tensors: dict[str, np.ndarray | None] = {}
        for name, spec in self.tensors.items():
            value = values.get(name)
            if value is None:
                if not spec.optional:
                    raise ShapeError(f"{self.name}: tensor argument {name!r} is required")
                tensors[name] = None
                continue
            tensors[name] = as_array(self.name, name, value)
        dtypes = self._check_dtypes(target, tensors)
        patterns, symbols = self._match_shapes(tensors, attrs)
        shapes = {n: a.shape for n, a in tensors.items() if a is not None}
        for r in self.rules:
            if not r.holds(shapes, attrs, {n: d.name for n, d in dtypes.items()}):
                if r.arg in self.attrs:
                    raise AttributeValueError(f"{self.name}: attribute {r.arg}={attrs[r.arg]!r}: {r.message}")
                raise ShapeError(f"{self.name}: argument {r.arg!r}: {r.message} (got shapes {shapes})")
        views = {}
        for name in self.tensors:
            tensors[name], groups = self._seen(name, tensors[name], patterns.get(name), attrs)
            if groups is not None:
                views[name] = (len(shapes[name]), groups)
        output_shapes, output_dtypes, kernel_shapes = {}, {}, {}
        for name, out in self.outputs.items():
            if out.when is not None and not out.when(attrs):
                continue  # this call does not produce it
            if out.dtype not in dtypes:
                raise DefinitionError(f"{self.name}: output {name} takes its dtype from {out.dtype!r}, which is "
                                      "no tensor argument")
            output_dtypes[name] = dtypes[out.dtype]
            if isinstance(out.shape, str):
                output_shapes[name] = tuple(shapes[out.shape])
            elif callable(out.shape):
                try:
                    output_shapes[name] = tuple(int(d) for d in out.shape(lambda n: tuple(shapes[n]), attrs))
                except Exception as err:  # the op author's rule: name it, not the compiler
                    raise DefinitionError(f"{self.name}: output {name}'s shape rule (shaped_by, called as "
                                          f"rule(shape_of, attrs) with shape_of('x') a tensor's shape) failed: "
                                          f"{type(err).__name__}: {err}") from err
            else:
                unknown = [d for d in out.shape if not isinstance(d, int) and d not in attrs and d not in symbols]
                if unknown:
                    raise DefinitionError(f"{self.name}: output {name} has dim {unknown[0]!r}, which is no "
                                          "tensor's dim symbol and no attribute")
                output_shapes[name] = tuple(
                    d if isinstance(d, int) else attrs[d] if d in attrs else symbols[d] for d in out.shape
                )
            if any(int(d) < 0 for d in output_shapes[name]):
                raise AttributeValueError(f"{self.name}: output {name} would have shape {output_shapes[name]}")
            like_reshaped = isinstance(out.shape, str) and (self.tensors[out.shape].collapse or out.shape in views)
            kernel_shapes[name] = tensors[out.shape].shape if like_reshaped else output_shapes[name]
        runtime = tuple(n for n, s in self.attrs.items() if s.runtime and attrs[n] not in s.special)
        return Binding(tensors, dtypes, patterns, attrs, symbols, output_shapes, output_dtypes, runtime,
                       kernel_shapes, views)

    def _check_dtypes(self, target: Target, tensors: dict) -> dict[str, DType]:
        dtypes: dict[str, DType] = {}
        allowed_data = self.dtypes_on(target)
        for name in self.dtype_order:
            spec = self.tensors[name]
            array = tensors[name]
            if array is None:
                continue
            dtype = dtype_of(array)
            if spec.dtype == "data":
                if dtype.name not in self.dtypes:
                    raise DTypeError(f"{self.name}: argument {name!r} has dtype {dtype.name}; "
                                     f"it must be one of {', '.join(self.dtypes)}")
                if dtype.name not in allowed_data:
                    raise UnsupportedError(
                        f"op {self.name} on target {target.name!r} does not support dtype {dtype.name} "
                        f"(argument {name!r}); it supports {', '.join(allowed_data) or 'none'}")
            elif isinstance(spec.dtype, ParamsDtype):
                data = dtypes.get(spec.dtype.data)
                allowed = (spec.dtype.expected(data.name),) if data is not None else ("float32", "float64")
                if dtype.name not in allowed:
                    given = f" ({spec.dtype.data} is {data.name})" if data else ""
                    raise DTypeError(f"{self.name}: argument {name!r} has dtype {dtype.name}; parameters and "
                                     f"statistics are float64 for float64 data, float32 otherwise, so it must be "
                                     f"{' or '.join(allowed)}{given}")
            elif isinstance(spec.dtype, tuple):
                if dtype.name not in spec.dtype:
                    raise DTypeError(f"{self.name}: argument {name!r} has dtype {dtype.name}; "
                                     f"it must be one of {', '.join(spec.dtype)}")
            else:
                other = dtypes.get(spec.dtype)
                leader = self.tensors[spec.dtype].dtype
                allowed = leader if isinstance(leader, tuple) else self.dtypes
                if other is None and dtype.name not in allowed:
                    raise DTypeError(f"{self.name}: argument {name!r} has dtype {dtype.name}; "
                                     f"it must be one of {', '.join(allowed)}")
                if other is not None and other != dtype:
                    raise DTypeError(f"{self.name}: argument {name!r} has dtype {dtype.name}; "
                                     f"it must match {spec.dtype!r} ({other.name})")
            dtypes[name] = dtype
        return dtypes

    @cached_property
    def dtype_order(self) -> list[str]:
        """The tensors in the order their dtypes are checked: one that follows another comes after it."""
        for name, spec in self.tensors.items():
            leader = dtype_leader(spec)
            if leader is not None and leader not in self.tensors:
                raise DefinitionError(f"{self.name}: argument {name!r} has dtype={leader!r}, which names no "
                                      f"argument of the op ({', '.join(self.tensors)}) and no dtype "
                                      f"({', '.join(DTYPES)})")
        order = [n for n, s in self.tensors.items() if dtype_leader(s) is None]
        while len(order) < len(self.tensors):
            more = [n for n, s in self.tensors.items() if n not in order and dtype_leader(s) in order]
            if not more:
                raise DefinitionError(f"{self.name}: the dtype rules of {sorted(set(self.tensors) - set(order))} "
                                      f"follow each other in a cycle")
            order += more
        return order

    def _match_shapes(self, tensors: dict, attrs: dict) -> tuple[dict[str, int], dict[str, object]]:
        """Pick a pattern per tensor so all dim symbols agree (backtracking over alternatives)."""
        names = [n for n in self.tensors if tensors[n] is not None]

        def search(i: int, symbols: dict) -> tuple[dict, dict] | None:
            if i == len(names):
                return {}, symbols
            name = names[i]
            for number, pattern in enumerate(self.tensors[name].patterns):
                bound = _match(pattern, tuple(tensors[name].shape), symbols)
                if bound is None:
                    continue
                rest = search(i + 1, bound)
                if rest is not None:
                    return {name: number, **rest[0]}, rest[1]
            return None

        found = search(0, {})
        if found is not None:
            return found
        symbols: dict[str, object] = {}
        for name in names:  # report the first tensor that cannot agree with those before it
            spec = self.tensors[name]
            for pattern in spec.patterns:
                bound = _match(pattern, tuple(tensors[name].shape), symbols)
                if bound is not None:
                    symbols = bound
                    break
            else:
                wanted = " or ".join(_describe(p, symbols) for p in spec.patterns)
                raise ShapeError(f"{self.name}: argument {name!r} has shape {tuple(tensors[name].shape)}; "
                                 f"expected {wanted}")
        raise ShapeError(f"{self.name}: the shapes {({n: tensors[n].shape for n in names})} do not agree "
                         f"on their dims")

    def schedule_hint(self, target: Target, binding: Binding):
        """The op's schedule for this target and call: what its own schedule function returns, then
        what the functions `tg.schedule` registered for it on every target and on this one return.
        A later ScheduleHint replaces an earlier one; a later directive replaces an earlier one of
        the same kind for the same stage (the hint carries the directives)."""
        from tilegrad.schedule import ScheduleHint

        hint, directives = ScheduleHint(), ()
        for fn in (self.schedule, _SCHEDULES.get((self.name, None)), _SCHEDULES.get((self.name, target.name))):
            if fn is not None:
                given, more = schedule_parts(fn(target, binding), f"{self.name}: schedule function "
                                                                  f"{getattr(fn, '__qualname__', fn)!r}")
                hint = given or hint
                directives = merge_directives(directives, more)
        return dataclasses.replace(hint, directives=directives)

    # ---- tracing -----------------------------------------------------------------------------
    def trace(self, binding: Binding) -> Trace:
        trace = Trace()
        args = {n: None if a is None else TensorArg(n, a.ndim, binding.dtypes[n], self.static_dims(n, binding),
                                                    self.tensors[n].updated)
                for n, a in binding.tensors.items()}
        for name, out in self.outputs.items():
            if name not in binding.output_shapes:
                continue
            if isinstance(out.shape, str):
                dims = args[out.shape].shape
            elif callable(out.shape):
                dims = tuple(as_expr(d) for d in out.shape(lambda n: args[n].shape, binding.attrs))
            else:
                dims = tuple(self._dim_expr(d, binding, args) for d in out.shape)
            trace.outputs[name] = Buffer(name, dims, binding.output_dtypes[name], "output")
        attrs = {n: Param(n, self.attrs[n].kind) if n in binding.runtime_attrs
                 else Const(v, self.attrs[n].kind) if self.attrs[n].runtime else v  # a special value
                 for n, v in binding.attrs.items()}
        token = tracing(trace)
        try:
            with deep_recursion():
                result = self.fn(**args, **attrs)
            results = () if result is None else result if isinstance(result, tuple) else (result,)
            if len(results) > len(self.outputs):
                raise DefinitionError(f"{self.name} returns {len(results)} values but declares "
                                      f"{len(self.outputs)} output(s): {', '.join(self.outputs)} ({self.where()})")
            with deep_recursion():
                for name, value in zip(self.outputs, results):
                    if name in trace.outputs:  # a value for an output this call does not produce is dropped
                        compute(trace.outputs[name], value)
        except TilegradError:
            raise
        except RecursionError as err:
            raise DefinitionError(too_deep(self.name, self.where(err))) from None
        except Exception as err:
            raise DefinitionError(f"{self.name}: {type(err).__name__}: {err} ({self.where(err)})") from err
        finally:
            stop_tracing(token)
        written = {stage.buffer.name for stage in trace.stages if hasattr(stage, "buffer")}
        missing = [name for name in trace.outputs if name not in written]
        if missing:
            raise DefinitionError(
                f"{self.name} never writes output(s) {', '.join(missing)}: it returned {len(results)} value(s) for "
                f"{len(self.outputs)} declared output(s); return them in order or write them with "
                f"tg.output(name) ({self.where()})")
        refuse_hazards(self.name, trace, self.in_place, self.where())
        return trace

    def where(self, err: BaseException | None = None) -> str:
        """The op's source location: the line an error came from, else where the op is defined."""
        code = self.fn.__code__
        line = code.co_firstlineno
        tb = err.__traceback__ if err is not None else None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == code.co_filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        return f"{code.co_filename}:{line}"

    def _seen(self, name: str, array, pattern_number, attrs: dict):
        """The array as the kernel sees it (collapsed, or reshaped by the tensor's view) and the
        view's axis groups where it reshaped it."""
        spec = self.tensors[name]
        if array is None:
            return None, None
        if spec.collapse:
            return _collapse(array, spec.patterns[pattern_number]), None
        if spec.view is None:
            return array, None
        groups = spec.view(tuple(array.shape), attrs)
        if not all(isinstance(g, (tuple, list)) and all(isinstance(a, (int, np.integer)) for a in g) for g in groups):
            raise DefinitionError(f"{self.name}: the view of {name!r} returned {groups!r}; a view returns groups "
                                  f"of the given axes, e.g. ((0,), (1, 2, 3)) for [N, C*H*W]")
        groups = tuple(tuple(int(a) for a in group) for group in groups)
        named = [a for group in groups for a in group]
        dropped = [a for a in range(array.ndim) if a not in named]
        if named != sorted(set(named)) or not all(0 <= a < array.ndim for a in named) or not all(groups) \
                or any(array.shape[a] != 1 for a in dropped):
            raise DefinitionError(f"{self.name}: the view of {name!r} groups the axes of {array.shape} as {groups}; "
                                  f"it must name axes in order, each once, in non-empty groups, and leave out "
                                  f"only axes of size 1")
        if groups == tuple((a,) for a in range(array.ndim)):
            return array, None
        shape = tuple(int(np.prod([array.shape[a] for a in group], dtype=np.int64)) for group in groups)
        seen = array.reshape(shape)
        if spec.updated and not np.may_share_memory(seen, array):
            raise ShapeError(f"{self.name}: {name!r} is updated in place, so its layout must allow the view "
                             f"{shape} without a copy")
        return seen, groups

    def _axis_names(self, name: str, binding: Binding, rank: int) -> tuple[str, ...]:
        """Each axis of the tensor as given (of `rank` axes), by its matched pattern: a symbol, a
        digit, or "S.k" for the k-th axis of a starred group."""
        pattern = self.tensors[name].patterns[binding.patterns[name]]
        if pattern == ONE:
            return ("1",) * rank
        star = next((i for i, p in enumerate(pattern) if p.startswith("*")), None)
        if star is None:
            return tuple(pattern)
        group = rank - (len(pattern) - 1)
        return (*pattern[:star], *(f"{pattern[star][1:]}.{k}" for k in range(group)), *pattern[star + 1:])

    def _viewed_names(self, name: str, binding: Binding) -> tuple[str, ...]:
        """The names of a viewed tensor's kernel axes: a group of one axis keeps its name; a merged
        group is named by its members ("C*H*W"; members of size 1 by pattern left out), a digit if
        every member is one."""
        rank, groups = binding.views[name]
        names = self._axis_names(name, binding, rank)
        out = []
        for group in groups:
            members = [names[a] for a in group]
            symbols = [m for m in members if not m.isdigit()]
            digits = int(np.prod([int(m) for m in members if m.isdigit()], dtype=np.int64))
            if not symbols:
                out.append(str(digits))
            else:
                out.append("*".join(symbols + ([str(digits)] if digits != 1 else [])))
        return tuple(out)

    def static_dims(self, name: str, binding: Binding) -> tuple:
        """The dims the matched pattern fixes: the digits of "N 1", every dim of ONE (a viewed
        tensor's merged axes: the product, where every member is a digit)."""
        names = (self._viewed_names(name, binding) if name in binding.views
                 else self._axis_names(name, binding, binding.tensors[name].ndim))
        return tuple(int(n) if n.isdigit() else None for n in names)

    def _symbol_axes(self, name: str, binding: Binding) -> dict[str, int]:
        """The axes of a tensor's kernel array that its matched pattern names by a symbol."""
        spec, array = self.tensors[name], binding.tensors.get(name)
        if array is None or spec.patterns[binding.patterns[name]] == ONE:
            return {}
        if name in binding.views:
            names = self._viewed_names(name, binding)
            return {n: names.index(n) for n in names if not n.isdigit()}
        pattern = spec.patterns[binding.patterns[name]]
        star = next((i for i, p in enumerate(pattern) if p.startswith("*")), len(pattern))
        axes = {}
        for position, symbol in enumerate(pattern):
            if position != star and not symbol.isdigit() and symbol not in axes:
                axes[symbol] = position if position < star else array.ndim - (len(pattern) - position)
        if star < len(pattern):
            # a starred group binds its sizes as one tuple, so tensors of one group agree axis by
            # axis: "S.0 S.1 ..." (or "S.*" for a group collapsed to one axis) lets passes see it
            group, name = array.ndim - (len(pattern) - 1), pattern[star][1:]
            axes.update({f"{name}.{'*' if spec.collapse else k}": star + k for k in range(group)})
        return axes

    def dim_symbols(self, binding: Binding) -> dict[tuple[str, int], str]:
        """(tensor, axis) -> the shape symbol its matched pattern names it by, in declaration order.
        The call checked that axes with one symbol have one size: emitted as one value, loops over
        dy's N and x's N are seen to be the same loop (fuse-sibling-loops relies on it)."""
        return {(name, axis): symbol for name in self.tensors
                for symbol, axis in self._symbol_axes(name, binding).items()}

    def _dim_expr(self, dim, binding: Binding, args: dict) -> Expr:
        if isinstance(dim, int):
            return Const(dim, "i")
        if dim in binding.attrs:
            return Const(int(binding.attrs[dim]), "i")
        for name in self.tensors:
            axes = self._symbol_axes(name, binding) if args[name] is not None else {}
            if dim in axes:
                return Dim(name, axes[dim])
        raise KeyError(f"{self.name}: output dim {dim!r} is bound by no tensor")


def dtype_leader(spec: TensorSpec) -> str | None:
    """The argument whose dtype this one's follows, if any."""
    if isinstance(spec.dtype, ParamsDtype):
        return spec.dtype.data
    return spec.dtype if isinstance(spec.dtype, str) and spec.dtype != "data" else None


def as_array(op: str, name: str, value) -> np.ndarray:
    """A tensor argument as an ndarray: arrays pass through, numbers and lists are converted."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bool, int, float, np.generic, list, tuple)):
        try:
            return np.asarray(value)
        except ValueError as err:
            raise ArgumentError(f"{op}: tensor argument {name!r}: {err}") from None
    raise ArgumentError(f"{op}: tensor argument {name!r} must be a numpy array, got {type(value).__name__}")


def _collapse(array: np.ndarray, pattern) -> np.ndarray:
    if pattern == ONE:
        return array.reshape(1)
    star = next(i for i, p in enumerate(pattern) if p.startswith("*"))
    tail = len(pattern) - star - 1
    lead, group = array.shape[:star], array.shape[star:array.ndim - tail]
    return array.reshape(lead + (int(np.prod(group, dtype=np.int64)),) + array.shape[array.ndim - tail:])


def _match(pattern, shape: tuple[int, ...], symbols: dict) -> dict | None:
    if pattern == ONE:
        return dict(symbols) if int(np.prod(shape)) == 1 and len(shape) <= 8 else None
    stars = [i for i, p in enumerate(pattern) if p.startswith("*")]
    if len(stars) > 1:
        raise ValueError(f"shape pattern {pattern} has more than one starred group")
    bound = dict(symbols)
    if stars:
        s = stars[0]
        tail = len(pattern) - s - 1
        if len(shape) < len(pattern) - 1:
            return None
        groups = list(pattern[:s]) + [pattern[s]] + list(pattern[s + 1:])
        dims = list(shape[:s]) + [tuple(shape[s:len(shape) - tail])] + list(shape[len(shape) - tail:])
    else:
        if len(shape) != len(pattern):
            return None
        groups, dims = list(pattern), list(shape)
    for symbol, dim in zip(groups, dims):
        if symbol.isdigit():
            if int(symbol) != dim:
                return None
            continue
        if symbol in bound and bound[symbol] != dim:
            return None
        bound[symbol] = dim
    return bound


def _describe(pattern, symbols: dict) -> str:
    if pattern == ONE:
        return "one element"
    parts = []
    for p in pattern:
        value = symbols.get(p)
        parts.append(f"{p}={value}" if value is not None and not isinstance(value, tuple) else p)
    return "[" + ", ".join(parts) + "]"


_REGISTRY: dict[str, OpDef] = {}
_SCHEDULES: dict[tuple[str, str | None], Callable] = {}
"""(op name, target name or None for every target) -> a schedule function `tg.schedule` registered."""


def schedule(op: str | OpDef, target: str | None = None):
    """Register `fn(target, binding)` as the schedule of `op` on `target` (None: every target), apart
    from the op's definition; it returns a ScheduleHint or a list of directives, as `@tg.op(schedule=)`
    does, and its directives replace the op's own for what they name. A later registration for the
    same op and target replaces the earlier one.

        @tg.schedule("attention_backward", "ascend910b")
        def _(target, binding):
            return [tg.Parallel(stage=0, axes=(0, 1))]
    """
    if isinstance(op, OpDef):
        op = op.name
    if not isinstance(op, str):
        raise ArgumentError(f"tg.schedule: op must be an op's name or the op, not {op!r}")
    if target is not None:
        target = get_target(target).name  # an alias names its target; an unknown name is refused here

    def register(fn: Callable) -> Callable:
        if not callable(fn):
            raise ArgumentError(f"tg.schedule({op!r}): decorates a function (target, binding) -> directives")
        _SCHEDULES[(op, target)] = fn
        return fn

    return register


def schedule_parts(result, what: str) -> tuple:
    """(ScheduleHint or None, directives) of what a schedule function returned: a ScheduleHint, a
    directive, or a list of directives with at most one ScheduleHint (None: nothing)."""
    from tilegrad.schedule import Directive, ScheduleHint, make_directive

    items = list(result) if isinstance(result, (list, tuple)) else [] if result is None else [result]
    hints = [i for i in items if isinstance(i, ScheduleHint)]
    wrong = [i for i in items if not isinstance(i, (ScheduleHint, Directive))]
    if wrong or len(hints) > 1:
        problem = f"{wrong[0]!r} is not a directive" if wrong else "it holds more than one ScheduleHint"
        raise DefinitionError(f"{what} returned {result!r}: {problem}; a schedule is a ScheduleHint or a list of "
                              f"directives (tilegrad.schedule: Parallel, Split, ...) with at most one ScheduleHint")
    # made again through make_directive: enum fields given as strings, lists as tuples, and checked
    directives = tuple(make_directive(type(i), **{f.name: getattr(i, f.name) for f in dataclasses.fields(i)})
                       for i in items if isinstance(i, Directive))
    return (hints[0] if hints else None), directives


def merge_directives(earlier: tuple, later: tuple) -> tuple:
    """`earlier`, less those of the kind and stage a later one names, then `later`."""
    named = {(type(d), d.stage) for d in later}
    return tuple(d for d in earlier if (type(d), d.stage) not in named) + tuple(later)
_REGISTER_HOOKS: list[Callable[[OpDef], None]] = []
_LIBRARIES: list[Callable[[], None]] = []
"""Loaders of op libraries, each run once at the registry's first look-up (`get_op`, `list_ops`):
tilegrad/__init__.py adds the library's (tilegrad.opdefs sits above dsl/, which does not import it)."""


def add_library(load: Callable[[], None]) -> None:
    """Run `load` (which registers ops) once, before the registry is first looked up."""
    _LIBRARIES.append(load)


def on_register(hook: Callable[[OpDef], None]) -> None:
    """Call `hook(opdef)` for every op registered from now on (tilegrad.torch makes it a torch op)."""
    _REGISTER_HOOKS.append(hook)


def op(
    name: str | None = None,
    *,
    outputs: dict[str, OutputSpec],
    dtypes: Sequence[str] = FLOATS,
    targets: Sequence[str] | None = None,
    rules: Sequence[Rule] = (),
    schedule: Callable | None = None,
    replace: bool = False,
    in_place: dict[str, str] | None = None,
):
    """Register a function as a tilegrad op; its parameters' defaults declare the signature."""

    def register(fn: Callable) -> OpDef:
        params = inspect.signature(fn).parameters
        tensors = {n: p.default for n, p in params.items() if isinstance(p.default, TensorSpec)}
        attrs = {n: p.default for n, p in params.items() if isinstance(p.default, AttrSpec)}
        loose = [n for n in params if n not in tensors and n not in attrs]
        if loose:
            raise TypeError(f"parameters {loose} of {fn.__name__} need tg.tensor(...) or tg.attr(...) defaults")
        op_name = name or fn.__name__
        if op_name in _REGISTRY and not replace:
            raise ValueError(f"op {op_name!r} is already registered (pass replace=True)")
        opdef = OpDef(op_name, fn, tensors, attrs, dict(outputs), tuple(dtypes),
                      tuple(targets) if targets is not None else None, tuple(rules),
                      schedule, inspect.getdoc(fn) or "", dict(in_place or {}))
        _REGISTRY[op_name] = opdef
        for hook in _REGISTER_HOOKS:
            hook(opdef)
        return opdef

    return register


def get_op(name: str) -> OpDef:
    """The registered op of that name (library or user-defined), or UnsupportedError listing them."""
    _load_library()
    if name not in _REGISTRY:
        raise UnsupportedError(f"unknown op {name!r}; known ops: {', '.join(list_ops())}")
    return _REGISTRY[name]


def list_ops() -> list[str]:
    """Every registered op's name, sorted: the library's and the user's."""
    _load_library()
    return sorted(_REGISTRY)


def _load_library() -> None:
    while _LIBRARIES:
        _LIBRARIES.pop(0)()

