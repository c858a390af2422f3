"""`tilegrad.compile(op, target)`: a Kernel that specializes, caches, plans and runs."""

from __future__ import annotations

import inspect
import threading
from dataclasses import asdict, dataclass, field

import numpy as np

from tilegrad.codegen import cache
from tilegrad.codegen.launcher import acquire_ub, fill_arguments, release_ub, run_blocks
from tilegrad.dsl.expr import BinOp, Const, Dim
from tilegrad.dsl.opdef import Binding, OpDef, get_op
from tilegrad.dtypes import dtype_of
from tilegrad.errors import AttributeValueError, DTypeError, IndexOutOfRangeError, ShapeError, UnsupportedError
from tilegrad.passes.tiling_plan import TilingPlan, plan_from_dict, plan_to_dict
from tilegrad.pipeline import STAGES, lower, to_llvm, unit_inner_stride
from tilegrad.targets import Target, get_target


@dataclass(frozen=True)
class Spec:
    """A tensor's shape and dtype, for `ir()` and `plan()` without data: `Spec((64, 1000), "float32")`."""

    shape: tuple
    dtype: str = "float32"

    def array(self) -> np.ndarray:
        return np.empty(tuple(self.shape), dtype_of(self.dtype).numpy)


@dataclass
class Specialization:
    """One compiled specialization: every stage's IR, the plan, and (lazily) the JIT code."""

    key: str
    ir: dict[str, str]
    functions: list[str]
    layout: list[tuple[str, str, int]]
    messages: dict[int, str]
    plan: TilingPlan | None
    num_blocks: int
    temps: dict[str, tuple[str, list]]
    prior_outputs: tuple[str, ...] = ()
    """Outputs the op reads before writing (blending into a prior value)."""
    _code: object = None
    _callables: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def callables(self) -> list:
        with self._lock:
            if self._code is None:
                from tilegrad.codegen.jit import jit

                if "llvm" not in self.ir:
                    raise RuntimeError("specialization has no LLVM stage")
                self._code = jit(self.ir["llvm"])
                self._callables = [self._code.function(name) for name in self.functions]
            return self._callables

    def asm(self) -> str:
        if "asm" not in self.ir:
            from tilegrad.codegen.jit import assembly

            self.ir["asm"] = assembly(self.ir["llvm"])
        return self.ir["asm"]

    def meta(self) -> dict:
        return {"functions": self.functions, "layout": self.layout, "messages": self.messages,
                "plan": plan_to_dict(self.plan) if self.plan else None, "num_blocks": self.num_blocks,
                "temps": self.temps, "prior_outputs": list(self.prior_outputs)}


_SPECIALIZATIONS: dict[tuple, Specialization] = {}
_COMPILE_LOCK = threading.Lock()
PARALLEL_MIN_ELEMENTS = 1 << 15
"""Below this many elements in the largest array, blocks run on the calling thread: handing a
few microseconds of work to the pool costs more than it saves."""


def _op_source(op: OpDef) -> str:
    """What the cache keys an op by: its whole module's source (helpers and hints included)."""
    for obj in (inspect.getmodule(op.fn), op.fn):
        try:
            return inspect.getsource(obj)
        except (OSError, TypeError):
            continue
    return repr(op.fn.__code__.co_code) + repr(op.fn.__code__.co_consts)


def _shape_form(expr) -> list:
    """A temp's shape expression in a JSON form: ints, ["dim", arg, axis], ["mul", a, b]."""
    if isinstance(expr, Const):
        return int(expr.value)
    if isinstance(expr, Dim):
        return ["dim", expr.tensor, expr.axis]
    if isinstance(expr, BinOp) and expr.op == "mul":
        return ["mul", _shape_form(expr.a), _shape_form(expr.b)]
    raise NotImplementedError(f"temporary shape {expr!r} is not supported")


def _eval_shape(form, arrays: dict[str, np.ndarray]) -> int:
    if isinstance(form, int):
        return form
    if form[0] == "dim":
        return int(arrays[form[1]].shape[form[2]])
    return _eval_shape(form[1], arrays) * _eval_shape(form[2], arrays)


class Kernel:
    """An op compiled for a target. Call it with numpy arrays; inspect it with ir() and plan()."""

    def __init__(self, op: str | OpDef, target: str | Target = "cpu", untiled: bool = False):
        self.op = op if isinstance(op, OpDef) else get_op(op)
        self.target = get_target(target)
        self.op.check_target(self.target)
        self.untiled = untiled
        self._calls: dict[tuple, tuple[Binding, Specialization]] = {}
        self._source = _op_source(self.op)

    def __repr__(self) -> str:
        return f"Kernel({self.op.name!r}, target={self.target.name!r}{', untiled' if self.untiled else ''})"

    # ---- specialization -----------------------------------------------------------------------
    def _split_call(self, args: tuple, kwargs: dict):
        kwargs = dict(kwargs)
        core_mask = kwargs.pop("core_mask", None)
        outputs = {n: kwargs.pop(n) for n in list(kwargs) if n in self.op.outputs and n not in self.op.tensors}
        kwargs = {n: (v.array() if isinstance(v, Spec) else v) for n, v in kwargs.items()}
        args = tuple(a.array() if isinstance(a, Spec) else a for a in args)
        for name, value in kwargs.items():
            spec = self.op.tensors.get(name)
            in_place = spec is not None and spec.updated and isinstance(value, np.ndarray)
            if in_place and _usable(value, name) is not value:
                raise ShapeError(f"{self.op.name}: {name!r} is updated in place, so it needs non-negative strides "
                                 f"in whole elements")
        kwargs = {n: _usable(v, n) if isinstance(v, np.ndarray) else v for n, v in kwargs.items()}
        return args, kwargs, outputs, self._num_blocks(core_mask)

    def _num_blocks(self, core_mask) -> int:
        if core_mask is None:
            return self.target.cores
        if not self.target.core_mask_option:
            raise UnsupportedError(f"target {self.target.name!r} has no core_mask launch option "
                                   f"(only DSP targets such as ft78ne and mt7004 do)")
        full = (1 << self.target.cores) - 1
        mask = int(core_mask)
        if mask <= 0 or mask & ~full:
            raise AttributeValueError(f"core_mask={core_mask:#x} must pick 1 to {self.target.cores} cores "
                                      f"of target {self.target.name} (bits within {full:#x})")
        return bin(mask).count("1")

    def specialize(self, binding: Binding, num_blocks: int, check_fit: bool = True) -> Specialization:
        hint = self.op.schedule_hint(self.target, binding)
        units = tuple(sorted((n, unit_inner_stride(a)) for n, a in binding.tensors.items() if a is not None))
        parts = (self.op.name, self._source, binding.key(), units, self.target, num_blocks, hint, self.untiled)
        spec = _SPECIALIZATIONS.get(parts)
        if spec is None:
            with _COMPILE_LOCK:
                spec = _SPECIALIZATIONS.get(parts)
                if spec is None:
                    key = cache.make_key(*parts[:4], asdict(self.target), *parts[5:])
                    spec = _SPECIALIZATIONS[parts] = self._load_or_build(key, binding, num_blocks, hint)
        if check_fit and spec.plan is not None:
            spec.plan.check()
        return spec

    def _load_or_build(self, key: str, binding: Binding, num_blocks: int, hint) -> Specialization:
        hit = cache.load(key)
        if hit is not None:
            ir, meta = hit
            return Specialization(key, ir, meta["functions"], [tuple(x) for x in meta["layout"]],
                                  {int(k): v for k, v in meta["messages"].items()},
                                  plan_from_dict(meta["plan"]) if meta["plan"] else None,
                                  meta["num_blocks"], meta["temps"], tuple(meta.get("prior_outputs", ())))
        lowered = lower(self.op, binding, self.target, num_blocks, hint, untiled=self.untiled)
        temps = {name: (dtype, [_shape_form(d) for d in shape]) for name, (dtype, shape) in lowered.temps.items()}
        spec = Specialization(key, lowered.ir, lowered.functions, lowered.layout, lowered.messages,
                              lowered.plan, lowered.num_blocks, temps, lowered.prior_outputs)
        if lowered.plan is not None:
            try:
                lowered.plan.check()
            except Exception:
                return spec  # keep the IR and plan to show; a call raises UBCapacityError
        spec.ir["llvm"] = to_llvm(lowered)
        cache.store(key, spec.ir, spec.meta())
        return spec

    # ---- running ------------------------------------------------------------------------------
    def _bind_call(self, args: tuple, kwargs: dict, num_blocks: int) -> tuple[Binding, Specialization]:
        """Bind and specialize; a call with the same shapes, strides, dtypes and attributes as an
        earlier one reuses its checked binding and only swaps in the new arrays."""
        signature = None
        if not args:
            try:
                signature = (num_blocks,) + tuple(sorted(
                    (n, (v.shape, v.strides, v.dtype.str)) if isinstance(v, np.ndarray) else (n, v)
                    for n, v in kwargs.items()))
                hash(signature)
            except TypeError:
                signature = None
        known = self._calls.get(signature) if signature is not None else None
        if known is not None:
            binding, spec = known
            return self.op.rebind(binding, kwargs), spec
        binding = self.op.bind(self.target, args, kwargs)
        spec = self.specialize(binding, num_blocks)
        if signature is not None:
            if len(self._calls) >= 256:
                self._calls.clear()
            self._calls[signature] = (binding, spec)
        return binding, spec

    def __call__(self, /, *args, **kwargs):
        args, kwargs, outputs, num_blocks = self._split_call(args, kwargs)
        binding, spec = self._bind_call(args, kwargs, num_blocks)
        arrays: dict[str, np.ndarray] = {n: a for n, a in binding.tensors.items() if a is not None}
        results, copy_back = {}, []
        for name in self.op.outputs:
            shape, dtype = binding.output_shapes[name], binding.output_dtypes[name].numpy
            given = outputs.get(name)
            if given is None:  # an output the op blends into starts from zeros
                allocate = np.zeros if name in spec.prior_outputs else np.empty
                results[name] = arrays[name] = allocate(shape, dtype)
                continue
            given = _check_output(name, given, shape, dtype)
            results[name] = given
            aliased = [n for n, a in binding.tensors.items() if a is not None and np.may_share_memory(given, a)]
            for other in aliased:
                source = binding.tensors[other]
                if source.shape != given.shape or source.strides != given.strides:
                    raise ShapeError(f"output {name!r} overlaps input {other!r} with other strides; in place "
                                     f"needs the same array (strides {given.strides} vs {source.strides})")
            if unit_inner_stride(given) and not aliased:
                arrays[name] = given
            else:  # in place, or a layout the kernel does not write: through a copy (prior kept)
                arrays[name] = np.array(given, order="C")
                copy_back.append(name)
        workspace = set(spec.plan.workspace_temps) if spec.plan is not None else set(spec.temps)
        for name, (dtype, shape) in spec.temps.items():
            if name in workspace:
                arrays[name] = np.empty(tuple(_eval_shape(d, arrays) for d in shape), dtype_of(dtype).numpy)
        status = np.zeros(1, np.int32)
        arrays["status"] = status
        params = {n: (float(v) if self.op.attrs[n].kind == "f" else int(v))
                  for n, v in binding.attrs.items() if n in binding.runtime_attrs}
        argv = fill_arguments(spec.layout, arrays, params)
        staged = spec.plan is not None and self.target.staged
        ub = acquire_ub(spec.num_blocks, self.target.ub_bytes) if staged else None
        work = max((a.size for a in arrays.values()), default=0)
        try:
            run_blocks(spec.callables(), argv, spec.num_blocks, ub, parallel=work >= PARALLEL_MIN_ELEMENTS)
        finally:
            if ub is not None:
                release_ub(ub)
        if status[0]:
            raise IndexOutOfRangeError(f"{self.op.name}: {spec.messages.get(int(status[0]), 'index out of range')}")
        for name in copy_back:
            np.copyto(results[name], arrays[name])
        values = tuple(results[n] for n in self.op.outputs)
        return values[0] if len(values) == 1 else values

    # ---- inspecting ---------------------------------------------------------------------------
    def ir(self, stage: str, /, *args, **kwargs) -> str:
        """The IR of one stage ("op", "loops", "tiled", "llvm", "asm") for this call signature."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
        args, kwargs, _, num_blocks = self._split_call(args, kwargs)
        binding = self.op.bind(self.target, args, kwargs)
        spec = self.specialize(binding, num_blocks, check_fit=stage in ("llvm", "asm"))
        return spec.asm() if stage == "asm" else spec.ir[stage]

    def plan(self, /, *args, check: bool = True, **kwargs):
        """The tiling plan for this call signature (raises UBCapacityError if it cannot fit)."""
        from tilegrad.report import PlanReport

        args, kwargs, _, num_blocks = self._split_call(args, kwargs)
        binding = self.op.bind(self.target, args, kwargs)
        spec = self.specialize(binding, num_blocks, check_fit=False)
        report = PlanReport.build(self, binding, spec)
        if check and spec.plan is not None:
            spec.plan.check()
        return report

    def workspace_size(self, /, *args, **kwargs) -> int:
        """Bytes of GM workspace (temporaries and cross-core scratch) this call needs."""
        args, kwargs, _, num_blocks = self._split_call(args, kwargs)
        binding = self.op.bind(self.target, args, kwargs)
        spec = self.specialize(binding, num_blocks, check_fit=False)
        return workspace_bytes(spec, {n: a for n, a in binding.tensors.items() if a is not None})


def workspace_bytes(spec: Specialization, arrays: dict[str, np.ndarray]) -> int:
    workspace = set(spec.plan.workspace_temps) if spec.plan is not None else set(spec.temps)
    total = 0
    for name, (dtype, shape) in spec.temps.items():
        if name in workspace:
            count = 1
            for d in shape:
                count *= _eval_shape(d, arrays)
            total += count * dtype_of(dtype).itemsize
    return total


def _usable(array: np.ndarray, name: str) -> np.ndarray:
    """Arrays the kernel can address: non-negative strides in whole elements (else a copy)."""
    if any(s < 0 or s % array.itemsize for s in array.strides):
        return np.ascontiguousarray(array)
    return array


def _check_output(name: str, array, shape, dtype) -> np.ndarray:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"output {name!r} must be a numpy array")
    if tuple(array.shape) != tuple(shape):
        raise ShapeError(f"output {name!r} has shape {array.shape}; the call needs {tuple(shape)}")
    if array.dtype != dtype:
        raise DTypeError(f"output {name!r} has dtype {array.dtype}; the call needs {np.dtype(dtype)}")
    if not array.flags.writeable:
        raise ValueError(f"output {name!r} is read-only")
    return array


def compile(op: str | OpDef, target: str | Target = "cpu", untiled: bool = False) -> Kernel:  # noqa: A001
    """A Kernel for `op` on `target`; it compiles lazily, once per specialization."""
    return Kernel(op, target, untiled)
