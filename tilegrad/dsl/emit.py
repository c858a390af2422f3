"""Emit a traced op as tg-dialect IR: one func.func whose arguments are memrefs, one tg op per stage."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, func, math, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from tilegrad.abi import STATUS_SLOTS
from tilegrad.dialect import tg
from tilegrad.dialect.values import INDEX, BlockBuilder, to_compute, to_storage
from tilegrad.dsl.bounds import BoundsAnalysis, Requirement
from tilegrad.dsl.expr import BinOp, Cast, Const, Dim, Expr, Param, Read, Reduce, Select, UnOp, Var, subexpressions
from tilegrad.dsl.record import Check, Compute, Scatter, Trace
from tilegrad.dsl.tensor import Buffer, TensorArg
from tilegrad.dsl.trace import deep_recursion, too_deep
from tilegrad.dtypes import DTYPES, DType
from tilegrad.errors import DefinitionError


@dataclass(frozen=True)
class KernelArg:
    """One memref argument of a kernel, in order: inputs, then outputs, then temporaries."""

    name: str
    role: str  # "input" | "output" | "temp" | "status"
    dtype: DType
    rank: int
    layout: str
    """"contiguous" (C order), "unit" (unit innermost stride) or "strided": what the call path
    specializes on (`call_path.layout_of`)."""
    static: tuple = ()
    dims: str = ""
    """The shape symbol of each axis ("N C H W"; a digit for a static size, ? for none): equal
    symbols are equal sizes, which the call checks."""


@dataclass
class EmittedOp:
    module: ModuleOp
    args: list[KernelArg]
    messages: dict[int, str] = field(default_factory=dict)
    requirements: list[Requirement] = field(default_factory=list)
    """Shape relations the unclamped reads rely on, checked before every call."""


def memref_type(dtype: DType, rank: int, layout: str, static: tuple = ()) -> MemRefType:
    """A memref of the array's layout: the identity layout for C-contiguous data, else strided
    (with a static unit innermost stride for "unit"); dims known at trace time (attribute-sized)
    are static, the rest dynamic."""
    storage = dtype.storage if dtype.name != "bfloat16" else _bf16()
    shape = [d if d is not None else DYNAMIC_INDEX for d in (static or (None,) * rank)]
    if layout == "contiguous":
        return MemRefType(storage, shape)
    strides = [None] * rank
    if rank and layout == "unit":
        strides[-1] = 1
    return MemRefType(storage, shape, StridedLayoutAttr(strides, 0))


def _bf16() -> Attribute:
    from xdsl.dialects.builtin import BFloat16Type

    return BFloat16Type()


_FLOAT_BIN = {"add": arith.AddfOp, "sub": arith.SubfOp, "mul": arith.MulfOp, "div": arith.DivfOp,
              "max": arith.MaximumfOp, "min": arith.MinimumfOp}
_INT_BIN = {"add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp, "div": arith.DivSIOp,
            "floordiv": arith.DivSIOp, "mod": arith.RemSIOp, "max": arith.MaxSIOp, "min": arith.MinSIOp,
            "shr": arith.ShRSIOp, "shl": arith.ShLIOp}
_FCMP = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}
_ICMP = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}
_MATH = {"exp": math.ExpOp, "log": math.LogOp, "sqrt": math.SqrtOp, "abs": math.AbsFOp, "tanh": math.TanhOp,
         "floor": math.FloorOp, "erf": math.ErfOp}


class _Emitter:
    def __init__(self, trace: Trace, args: dict[str, SSAValue], float_type: Attribute, entry: Block,
                 bounds: BoundsAnalysis, shared: dict | None = None):
        self.trace, self.args, self.float_type, self.entry = trace, args, float_type, entry
        self.shared = shared or {}
        """(tensor, axis) -> the (tensor, axis) whose dim value it uses: the same shape symbol."""
        self.bounds = bounds
        self.top = BlockBuilder(entry)
        self.dims: dict[tuple[str, int], SSAValue] = {}
        self.messages: dict[int, str] = {}
        self.keys: dict[int, tuple] = {}
        """id -> (expression, its key) for `_structure`."""

    def kind_type(self, kind: str) -> Attribute:
        return {"f": self.float_type, "i": INDEX, "b": i1}[kind]

    # ---- values usable anywhere (dims, extents) -------------------------------------------------
    def dim(self, name: str, axis: int) -> SSAValue:
        key = self.shared.get((name, axis), (name, axis))
        name, axis = key
        if key not in self.dims:
            self.dims[key] = self.top.add(memref.DimOp(self.args[name], self.top.index(axis)))
        return self.dims[key]

    def extent(self, expr: Expr) -> SSAValue:
        return self.expr(expr, self.top, {})

    # ---- scalar expressions -------------------------------------------------------------------
    def expr(self, e: Expr, b: BlockBuilder, env: dict) -> SSAValue:
        """Emit `e` once per region: structurally equal expressions share one SSA value (`env`
        maps loop variables and already-emitted expressions)."""
        key = _structure(e, memo=self.keys)
        if key is not None and key in env:
            return env[key]
        value = self._emit(e, b, env)
        if key is not None:
            env[key] = value
        return value

    def _emit(self, e: Expr, b: BlockBuilder, env: dict) -> SSAValue:
        match e:
            case Var():
                return env[e.uid]
            case Const():
                return b.const(e.value, self.kind_type(e.kind)) if e.kind != "b" else b.const(int(e.value), i1)
            case Dim():
                return self.dim(e.tensor, e.axis)
            case Param():
                return self.args[e.name]
            case Read():
                value = self.read(e, b, env)
                if e.kind == "f" and value.type != self.float_type:
                    value = to_storage(b, value, self.float_type)
                return value
            case BinOp():
                lhs, rhs = self.expr(e.a, b, env), self.expr(e.b, b, env)
                if e.op in ("and", "or"):
                    return b.add((arith.AndIOp if e.op == "and" else arith.OrIOp)(lhs, rhs))
                if e.kind == "b":
                    if e.a.kind == "f":
                        return b.add(arith.CmpfOp(lhs, rhs, _FCMP[e.op]))
                    return b.add(arith.CmpiOp(lhs, rhs, _ICMP[e.op]))
                if e.kind == "f" and e.op in ("floordiv", "mod"):  # Python's and numpy's rule: floor(a / b)
                    quotient = b.add(math.FloorOp(b.add(arith.DivfOp(lhs, rhs))))
                    if e.op == "floordiv":
                        return quotient
                    return b.add(arith.SubfOp(lhs, b.add(arith.MulfOp(quotient, rhs))))  # the divisor's sign
                table = _FLOAT_BIN if e.kind == "f" else _INT_BIN
                return b.add(table[e.op](lhs, rhs))
            case UnOp():
                value = self.expr(e.a, b, env)
                if e.op == "neg":
                    if e.kind == "f":
                        return b.add(arith.NegfOp(value))
                    return b.add(arith.SubiOp(b.const(0, value.type), value))
                if e.op == "not":
                    return b.add(arith.XOrIOp(value, b.const(1, i1)))
                return b.add(_MATH[e.op](value))
            case Select():
                cond = self.expr(e.cond, b, env)
                return b.add(arith.SelectOp(cond, self.expr(e.a, b, env), self.expr(e.b, b, env)))
            case Cast() if isinstance(e.a, Read) and e.a.kind == "f" and e.kind == "i":
                # a float index tensor converts from its own precision, truncating toward zero
                # NaN has no position: it becomes -1, which every range check refuses
                raw = self.read(e.a, b, env)
                truncated = b.add(arith.FPToSIOp(raw, i64))
                is_nan = b.add(arith.CmpfOp(raw, raw, "uno"))
                return b.add(arith.IndexCastOp(b.add(arith.SelectOp(is_nan, b.const(-1, i64), truncated)), INDEX))
            case Cast():
                return self.cast(self.expr(e.a, b, env), e.a.kind, e.kind, b)
            case Reduce():
                return self.reduce(e, b, env)
        raise TypeError(f"cannot emit {e!r}")

    def read(self, e: Read, b: BlockBuilder, env: dict[int, SSAValue]) -> SSAValue:
        """The element in its own compute type (f32 for half types, f64, or index)."""
        indices = [self.expr(i, b, env) for i in e.indices]
        indices = [v if self.bounds.plain_at(e, axis) else self.clamp(v, e.buffer, axis, b)
                   for axis, v in enumerate(indices)]
        loaded = b.add(memref.LoadOp.get(self.args[e.buffer.name], indices))
        return to_compute(b, loaded, unsigned=not e.buffer.dtype.signed)

    def clamp(self, index: SSAValue, buffer, axis: int, b: BlockBuilder) -> SSAValue:
        """A computed index is clamped into the buffer, so nothing reads out of bounds: the op
        masks such reads with `where`, or reports bad data with a tg.check or the scatter's
        range check."""
        extent = self.extent(buffer.shape[axis]) if isinstance(buffer, Buffer) else self.dim(buffer.name, axis)
        last = b.add(arith.SubiOp(extent, b.index(1)))
        low = b.add(arith.MaxSIOp(index, b.index(0)))
        return b.add(arith.MinSIOp(low, last))

    def cast(self, value: SSAValue, src: str, dst: str, b: BlockBuilder) -> SSAValue:
        if dst == "b":
            zero = b.const(0, value.type)
            return b.add(arith.CmpfOp(value, zero, "une") if src == "f" else arith.CmpiOp(value, zero, "ne"))
        if src == "b":
            value = b.add(arith.ExtUIOp(value, i64))
            value = b.add(arith.IndexCastOp(value, INDEX))
            src = "i"
        if src == dst:
            return value
        if dst == "f":
            return to_storage(b, value, self.float_type)
        as_int = b.add(arith.FPToSIOp(value, i64))  # truncates toward zero
        return b.add(arith.IndexCastOp(as_int, INDEX))

    def reduce(self, e: Reduce, b: BlockBuilder, env: dict[int, SSAValue]) -> SSAValue:
        lowest = float("-inf") if e.kind == "f" else -(1 << 62)
        init_value = {"sum": 0, "max": lowest, "min": -lowest, "prod": 1}[e.combine]
        init = b.const(init_value, self.kind_type(e.kind))
        region, block = tg.body_region(1)
        inner = BlockBuilder(block)
        value = self.expr(e.body, inner, {**env, **_bind_vars((e.var,), block)})
        inner.add(tg.YieldOp(value))
        # an extent that depends on no loop variable is computed once, outside every stage
        extent = self.expr(e.extent, b, env) if _uses_vars(e.extent) else self.extent(e.extent)
        return b.add(tg.ReduceOp(e.combine, extent, init, region, length=e.length))

    # ---- stages ---------------------------------------------------------------------------------
    def stage(self, stage) -> None:
        match stage:
            case Compute():
                extents = [self.extent(d) for d in stage.buffer.shape]
                region, block = tg.body_region(len(extents))
                b = BlockBuilder(block)
                env = _bind_vars(stage.vars, block)
                value = self.expr(stage.value, b, env)
                target = self.args[stage.buffer.name].type.element_type
                b.add(tg.YieldOp(to_storage(b, value, target)))
                self.top.add(tg.ComputeOp(self.args[stage.buffer.name], extents, region))
            case Scatter():
                extents = [self.extent(d) for d in stage.domain]
                region, block = tg.body_region(len(extents))
                b = BlockBuilder(block)
                env = _bind_vars(stage.vars, block)
                indices = [self.expr(i, b, env) for i in stage.index]
                dest_kind = "f" if stage.buffer.dtype.is_float else "i"
                value = self.expr(stage.value, b, env)
                if stage.value.kind != dest_kind:
                    value = self.cast(value, stage.value.kind, dest_kind, b)
                when = self.expr(stage.when, b, env) if stage.when is not None else b.const(1, i1)
                b.add(tg.YieldOp(*indices, value, when))
                code = self.new_code(stage.message) if stage.message is not None else 0
                self.top.add(tg.ScatterAddOp(self.args[stage.buffer.name], extents, region, code))
            case Check():
                extents = [self.extent(d) for d in stage.domain]
                region, block = tg.body_region(len(extents))
                b = BlockBuilder(block)
                env = _bind_vars(stage.vars, block)
                b.add(tg.YieldOp(self.expr(stage.ok, b, env)))
                self.top.add(tg.CheckOp(extents, region, self.new_code(stage.message)))

    def new_code(self, message: str) -> int:
        code = len(self.messages) + 1
        self.messages[code] = message
        return code


def _structure(e: Expr, bound: dict[int, int] | None = None, memo: dict[int, tuple] | None = None):
    """A hashable key equal for structurally equal expressions (None: do not share). Two
    reductions that differ only in their own variable share a key (one window scanned once).
    `memo`: keys already found outside any reduction (by the expression's id, for one emission:
    an expression's key is made from its operands', which are asked for again as they are emitted)."""
    if not bound and memo is not None:
        found = memo.get(id(e))
        if found is None:  # (the expression is kept with its key: its id is not reused meanwhile)
            found = memo[id(e)] = (e, _key(e, {}, memo))
        return found[1]
    return _key(e, bound or {}, memo)


def _key(e: Expr, bound: dict[int, int], memo: dict[int, tuple] | None):
    match e:
        case Const():
            return ("const", e.kind, e.value)
        case Var():
            return None  # looked up by uid
        case Dim():
            return ("dim", e.tensor, e.axis)
        case Param():
            return ("param", e.name)
        case Read():
            indices = tuple([_operand(i, bound, memo) for i in e.indices])
            return None if None in indices else ("read", e.buffer.name, e.kind, indices)
        case BinOp() | UnOp() | Cast() | Select():
            keys = tuple([_operand(getattr(e, f), bound, memo) for f in ("cond", "a", "b") if hasattr(e, f)])
            return None if None in keys else (type(e).__name__, getattr(e, "op", ""), e.kind, keys)
        case Reduce():
            keys = (_operand(e.extent, bound, memo), _operand(e.body, {**bound, e.var.uid: len(bound)}, memo))
            return None if None in keys else ("reduce", e.combine, e.kind, keys)
    return None


def _operand(e: Expr, bound: dict[int, int], memo: dict[int, tuple] | None = None):
    """The key of an operand: a reduction's own variable by its depth, another variable by uid."""
    if isinstance(e, Var):
        return ("bound", bound[e.uid]) if e.uid in bound else ("var", e.uid)
    return _structure(e, bound, memo)


def _bind_vars(variables, block: Block) -> dict[int, SSAValue]:
    """Loop variables keep their DSL names (%i0, %r0, ...) in the printed IR."""
    for var, arg in zip(variables, block.args):
        arg.name_hint = var.name
    return {v.uid: a for v, a in zip(variables, block.args)}


def _uses_vars(e: Expr) -> bool:
    """Whether e depends on a loop variable or data (else it can be computed once, up front)."""
    return any(isinstance(s, (Var, Read, Reduce)) for s in subexpressions(e))


def float_type_for(dtypes: list[DType]) -> Attribute:
    return f64 if any(d.name == "float64" for d in dtypes) else f32


def emit_op(name: str, trace: Trace, inputs: dict[str, TensorArg | None],
            layouts: dict[str, str], params: dict[str, str] | None = None,
            symbols: dict[tuple[str, int], str] | None = None, in_place: dict[str, str] | None = None) -> EmittedOp:
    """The op-level module of one specialization. `layouts`: each input's layout ("contiguous",
    "unit" or "strided"); `symbols`: (tensor, axis) -> its shape symbol, in binding order (outputs
    and temporaries are contiguous, their dims named by the symbols of the dims they are sized by);
    `in_place`: output -> the input it may be (`tg.in_place` on the output's argument)."""
    symbols = symbols or {}
    kernel_args: list[KernelArg] = []
    for arg_name, arg in inputs.items():
        if arg is not None:
            dims = " ".join(str(fixed) if fixed is not None else symbols.get((arg_name, axis), "?")
                            for axis, fixed in enumerate(arg.static))
            kernel_args.append(KernelArg(arg_name, "input", arg.dtype, arg.rank, layouts.get(arg_name, "strided"),
                                         arg.static, dims))
    buffers: list[Buffer] = list(trace.outputs.values()) + trace.temps
    for buffer in buffers:
        static = tuple(d.value if isinstance(d, Const) else None for d in buffer.shape)
        dims = " ".join(str(d.value) if isinstance(d, Const) else
                        symbols.get((d.tensor, d.axis), "?") if isinstance(d, Dim) else "?" for d in buffer.shape)
        kernel_args.append(KernelArg(buffer.name, buffer.role, buffer.dtype, buffer.rank, "contiguous", static, dims))
    kernel_args.append(KernelArg("status", "status", DTYPES["int64"], 1, "contiguous"))
    float_type = float_type_for([a.dtype for a in kernel_args if a.role == "output"])
    types = [memref_type(a.dtype, a.rank, a.layout, a.static) for a in kernel_args]
    types[-1] = MemRefType(i64, [STATUS_SLOTS])
    for param, kind in (params or {}).items():
        kernel_args.append(KernelArg(param, "param", DTYPES["float64" if kind == "f" else "int64"], 0, "contiguous"))
        types.append(float_type if kind == "f" else INDEX)
    entry = Block(arg_types=types)
    values = {a.name: v for a, v in zip(kernel_args, entry.args)}
    for a, v in zip(kernel_args, entry.args):
        v.name_hint = a.name if a.name != "self" else "self_"
    first: dict[str, tuple[str, int]] = {}
    shared = {key: first.setdefault(symbol, key) for key, symbol in symbols.items()}
    try:
        with deep_recursion():  # (the walks below recurse as deep as the expressions nest)
            bounds = analyze_bounds(name, trace)
            emitter = _Emitter(trace, values, float_type, entry, bounds, shared)
            for stage in trace.stages:
                emitter.stage(stage)
    except RecursionError:
        raise DefinitionError(too_deep(name)) from None
    entry.add_op(func.ReturnOp())
    fn = func.FuncOp(name, FunctionType.from_lists(types, []), Region([entry]))
    fn.arg_attrs = ArrayAttr([
        DictionaryAttr({"tg.name": StringAttr(a.name), "tg.role": StringAttr(a.role),
                        **({"tg.dims": StringAttr(a.dims)} if a.dims else {}),
                        **({"tg.in_place": StringAttr(in_place[a.name])}
                           if a.role == "output" and a.name in (in_place or {}) else {})}) for a in kernel_args
    ])
    module = ModuleOp([fn])
    return EmittedOp(module, kernel_args, emitter.messages, trace.requirements + bounds.requirements)


def analyze_bounds(name: str, trace: Trace) -> BoundsAnalysis:
    """Which reads need no clamp, and what the shapes must satisfy for them (see dsl/bounds)."""
    bounds = BoundsAnalysis(name)
    for stage in trace.stages:
        match stage:
            case Compute():
                bounds.stage(stage.vars, stage.buffer.shape, [stage.value])
            case Scatter():
                when = [stage.when] if stage.when is not None else []
                bounds.stage(stage.vars, stage.domain, [*stage.index, stage.value, *when], (stage.buffer, stage.index))
            case Check():
                bounds.stage(stage.vars, stage.domain, [stage.ok])
    return bounds


__all__ = ["EmittedOp", "KernelArg", "emit_op", "memref_type"]
