"""`tilegrad.compile(op, target)`: a Kernel that specializes, caches, plans and runs."""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property

import numpy as np

from tilegrad.abi import GUARD_CODE_BASE, STATUS_SLOTS
from tilegrad.call_path import Dispatcher, NewArray, address, layout_of, signature
from tilegrad.codegen.launcher import (
    CALLER_STACK_BYTES,
    DRIVER,
    fill_arguments,
    pointer_slots,
    run_driver,
)
from tilegrad.dsl.bounds import (
    Requirement,
    check_requirements,
    evaluate,
    size_form,
    sum_extent_forms,
    sum_lengths,
    uses_params,
)
from tilegrad.dsl.opdef import Binding, OpDef, as_array, get_op
from tilegrad.dtypes import dtype_of
from tilegrad.errors import (
    ArgumentError,
    AttributeValueError,
    DefinitionError,
    DTypeError,
    IndexOutOfRangeError,
    InternalError,
    OutOfBoundsError,
    ScheduleError,
    ShapeError,
    TilegradError,
    UnsupportedError,
)
from tilegrad.passes.tiling_plan import TilingPlan, plan_from_dict, plan_to_dict
from tilegrad.report import PlanReport
from tilegrad.stages import STAGES
from tilegrad.targets import Target, get_target


@dataclass(frozen=True)
class Spec:
    """A tensor's shape and dtype, for `ir()` and `plan()` without data: `Spec((64, 1000), "float32")`."""

    shape: tuple
    dtype: str = "float32"

    def array(self) -> np.ndarray:
        """A C-contiguous array of this shape that owns no memory: for planning and printing IR,
        never for running (a call refuses a Spec)."""
        dtype = np.dtype(dtype_of(self.dtype).numpy)
        shape = tuple(int(d) for d in self.shape)
        if any(d < 0 for d in shape):
            raise ShapeError(f"Spec shape {shape} has a negative dim")
        strides, step = [], dtype.itemsize
        for d in reversed(shape):
            strides.append(step)
            step *= max(d, 1)
        view = np.lib.stride_tricks.as_strided(np.empty(1, dtype), shape, tuple(reversed(strides)), writeable=False)
        return view.view(ShapeOnly)


class ShapeOnly(np.ndarray):
    """An array with a shape, a dtype and C strides but no data behind it (from a Spec): it
    describes a call for planning and IR, and printing it never reads memory."""

    def __repr__(self) -> str:
        return f"ShapeOnly(shape={self.shape}, dtype={self.dtype})"

    __str__ = __repr__

    def __array_function__(self, func, types, args, kwargs):
        if func in (np.shape, np.ndim, np.size, np.result_type, np.shares_memory, np.may_share_memory):
            return super().__array_function__(func, types, args, kwargs)
        raise ArgumentError(f"a tilegrad.Spec has no data to compute {func.__name__} with")


@dataclass(frozen=True)
class PlanOnly:
    """A specialization lowered to its tiled stage only: its plan left a core split to the call's
    extents (passes/scratchpad_planner.py), and the call that built it chose to fuse axes, so its
    own kernel (the outer split) was not compiled. A call whose extents do not fuse compiles it."""

    plan: TilingPlan
    layout: list
    num_blocks: int


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
    requirements: list = field(default_factory=list)
    """Shape relations the kernel's unclamped reads rely on (dsl/bounds), checked before a call."""
    output_forms: dict = field(default_factory=dict)
    shared_object: bytes | None = None
    """The LLVM stage's machine code as a shared object (what the disk cache keeps, so a hit
    compiles nothing)."""
    stack_bytes: int = 0
    """The kernel's stack buffers (pipeline.stack_bytes): a call runs on a thread with room for them."""
    pending: object = None
    """The lowered kernel (pipeline.Lowered) while only its stages up to tiled and its plan were
    asked for (plan(), ir() of those stages): its code is generated when first needed."""
    _code: object = None
    _driver: tuple = ()
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def driver(self) -> tuple:
        """The JIT-compiled driver (codegen/driver.py): its ctypes callable and its address."""
        with self._lock:
            if self._code is None:
                from tilegrad.codegen import native
                from tilegrad.codegen.runtime import DRIVER_SIGNATURE

                if self.shared_object is not None:
                    self._code = native.load(self.shared_object)
                elif "llvm" in self.ir:
                    from tilegrad.codegen.jit import jit

                    self._code, self.shared_object = jit(self.ir["llvm"])
                else:
                    raise RuntimeError("specialization has no LLVM stage")
                callable_ = self._code.function(DRIVER, DRIVER_SIGNATURE)
                self._driver = (callable_, ctypes.cast(callable_, ctypes.c_void_p).value)
            return self._driver

    def asm(self) -> str:
        if "asm" not in self.ir:
            from tilegrad.codegen.jit import assembly

            self.ir["asm"] = assembly(self.ir["llvm"])
        return self.ir["asm"]

    def meta(self) -> dict:
        return {"functions": self.functions, "layout": self.layout, "messages": self.messages,
                "plan": plan_to_dict(self.plan) if self.plan else None, "num_blocks": self.num_blocks,
                "temps": self.temps, "prior_outputs": list(self.prior_outputs),
                "requirements": [r.to_json() for r in self.requirements], "output_forms": self.output_forms,
                "stack_bytes": self.stack_bytes}

    def check_shapes(self, op: str, binding: Binding, params: dict) -> None:
        """Every shape relation the kernel relies on holds for this call, or ShapeError."""
        shapes = {n: a.shape for n, a in binding.tensors.items() if a is not None}
        check_requirements(op, self.requirements, shapes, params)
        for name, forms in self.output_forms.items():
            want = tuple(evaluate(f, shapes, params) for f in forms)
            if want != tuple(binding.kernel_shapes[name]):
                raise InternalError(f"{op}: output {name!r} is allocated as {binding.kernel_shapes[name]} "
                                    f"but the kernel writes {want}")

    def status_error(self, op: str, status: np.ndarray) -> Exception:
        """The error a kernel's status words report: a range check (IndexOutOfRangeError) or a
        guard-build bounds check (OutOfBoundsError, with the index and the size)."""
        code = int(status[0])
        message = self.messages.get(code, "index out of range")
        if code >= GUARD_CODE_BASE and "{value}" in message:  # a report of another check (lower-to-llvm's guard_report)
            return OutOfBoundsError(f"{op}: " + message.format(axis=int(status[1]), value=int(status[2]),
                                                               limit=int(status[3])))
        if code >= GUARD_CODE_BASE:
            return OutOfBoundsError(f"{op}: {message}: index {int(status[2])} on axis {int(status[1])} "
                                    f"is outside [0, {int(status[3])})")
        return IndexOutOfRangeError(f"{op}: {message}")

    @cached_property
    def uses_params(self) -> bool:
        return any(uses_params(f) for r in self.requirements for f in (r.lhs, r.rhs, *r.unless_empty))


_SPECIALIZATIONS: dict[tuple, Specialization | PlanOnly] = {}
_COMPILE_LOCK = threading.Lock()
PARALLEL_MIN_ELEMENTS = 1 << 15
"""Below this many elements in the largest array, blocks run on the calling thread: handing a
few microseconds of work to the pool costs more than it saves."""
NATIVE_MAX_KEYWORDS = 64
"""The most keyword arguments (and outputs) a call the native path repeats may have
(codegen/_fastcall.c MAX_KEYWORDS): a call with more is checked every time."""
NATIVE_MAX_NEW_ARRAYS = 32
"""The most outputs and workspace arrays a native call allocates (_fastcall.c MAX_NEW_ARRAYS)."""


def _op_source(op: OpDef) -> str:
    """What the cache keys an op by: its declaration, and the code of its body, schedule, rules and
    output-shape functions and of every user function they call (codegen/cache.code_fingerprint)."""
    functions = [op.fn, op.schedule, *(r.check for r in op.rules),
                 *(o.shape for o in op.outputs.values() if callable(o.shape)),
                 *(t.view for t in op.tensors.values() if t.view is not None)]
    # a view function's repr holds its address, which differs from process to process
    tensors = sorted((n, replace(t, view=None), t.view is not None) for n, t in op.tensors.items())
    declared = (tensors, sorted((n, repr(a)) for n, a in op.attrs.items()),
                [(n, o.shape if not callable(o.shape) else "fn", o.dtype) for n, o in op.outputs.items()],
                op.dtypes, op.targets, [r.message for r in op.rules])
    from tilegrad.codegen import cache  # hashing and the disk cache load with the first kernel

    return f"{declared!r}{cache.code_fingerprint(*[f for f in functions if f is not None])}"


def _shape_form(expr, op: str, name: str) -> list:
    if isinstance(expr, (int, list)):  # a form already (the passes' workspace)
        return expr
    form = size_form(expr)
    if form is None:
        raise UnsupportedError(f"{op}: temporary {name!r} has a size that depends on loop variables or data")
    return form


def _eval_shape(form, arrays: dict[str, np.ndarray]) -> int:
    return evaluate(form, {n: a.shape for n, a in arrays.items()})


def _allocate_workspace(op: str, name: str, shape, dtype, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """The workspace `name` of the sizes its forms give at this call. A size that comes out negative,
    or one the machine cannot allocate (a hand-edited stage can state any), is refused by name
    before the kernel runs."""
    sizes = tuple(_eval_shape(d, arrays) for d in shape)
    if any(size < 0 for size in sizes):
        raise ShapeError(f"{op}: workspace {name}: its sizes {sizes} at these shapes are negative")
    try:
        return np.empty(sizes, dtype)
    except (MemoryError, ValueError) as error:
        raise UnsupportedError(f"{op}: workspace {name} of sizes {sizes} ({dtype.__name__}) cannot be allocated: "
                              f"{error}") from error


class Kernel(Dispatcher):
    """An op compiled for a target. Call it with numpy arrays (keyword arguments, the op's names);
    inspect it with ir() and plan(). A call whose signature (each array's shape, strides and dtype,
    each other argument's value) an earlier call checked runs natively (call_path.py)."""

    def __init__(self, op: str | OpDef, target: str | Target = "cpu", untiled: bool = False,
                 guard: bool | None = None, ir_override: tuple[str, str] | None = None, schedule=None,
                 planner: bool = True):
        self.op = op if isinstance(op, OpDef) else get_op(op)
        self.target = get_target(target)
        self.op.check_target(self.target)
        self.untiled = untiled
        self.schedule = _given_schedule(self.op.name, schedule)
        self.planner = bool(planner)
        if ir_override is not None and ir_override[0] not in EDITABLE_STAGES:
            raise ArgumentError(f"{self.op.name}: IR can replace the stages {', '.join(EDITABLE_STAGES)}, "
                                f"not {ir_override[0]!r}")
        self.ir_override = ir_override
        # hand-edited IR is not trusted with the caller's memory unless asked: bounds-checked
        self.guard = (guard_default() or ir_override is not None) if guard is None else bool(guard)
        if self.guard and ir_override is not None and ir_override[0] == "llvm":
            raise ArgumentError(f"{self.op.name}: the guard build cannot check an llvm stage given as text (its "
                                f"loads and stores are LLVM's own, not lowered by tilegrad): give the tiled stage, "
                                f"or pass guard=False (`run --no-guard`) to run it unchecked")
        self._source = _op_source(self.op)
        self._sum_forms: dict[tuple, tuple] = {}

    def __repr__(self) -> str:
        flags = (", untiled" if self.untiled else "") + (", guard" if self.guard else "")
        flags += f", {self.ir_override[0]} stage from IR text" if self.ir_override else ""
        flags += f", schedule={[str(d) for d in self.schedule[1]]}" if self.schedule != (None, ()) else ""
        flags += "" if self.planner else ", planner=False"
        return f"Kernel({self.op.name!r}, target={self.target.name!r}{flags})"

    def from_ir(self, stage: str, text: str, guard: bool = True) -> Kernel:
        """This kernel with one stage ("op", "loops", "tiled" or "llvm") replaced by IR text, e.g. a
        hand-edited `ir("tiled", ...)`: the rest of the pipeline runs from it. It runs in the guard
        build (every access bounds-checked) unless `guard=False`; an llvm stage, which the guard
        build cannot check, needs `guard=False` (it is refused otherwise)."""
        kernel = Kernel(self.op, self.target, self.untiled, guard, (stage, text), planner=self.planner)
        kernel.schedule = self.schedule
        return kernel

    @property
    def _lowering_override(self) -> tuple[str, str] | None:
        """The stage lowering replaces by IR text (an edited llvm stage replaces code generation)."""
        return self.ir_override if self.ir_override is not None and self.ir_override[0] != "llvm" else None

    # ---- specialization -----------------------------------------------------------------------
    def _split_call(self, args: tuple, kwargs: dict, running: bool = False):
        kwargs = dict(kwargs)
        core_mask = kwargs.pop("core_mask", None)
        outputs = {n: kwargs.pop(n) for n in list(kwargs) if n in self.op.outputs and n not in self.op.tensors}
        if running and any(isinstance(v, (Spec, ShapeOnly)) for v in (*args, *kwargs.values())):
            raise ArgumentError(f"{self.op.name}: a tilegrad.Spec describes a tensor for ir() and plan(); "
                                f"a call needs arrays")
        kwargs = {n: (v.array() if isinstance(v, Spec) else v) for n, v in kwargs.items()}
        args = tuple(a.array() if isinstance(a, Spec) else a for a in args)
        for name, value in kwargs.items():
            if name in self.op.tensors and value is not None:
                kwargs[name] = as_array(self.op.name, name, value)
        for name, value in kwargs.items():
            spec = self.op.tensors.get(name)
            if spec is not None and spec.updated and isinstance(value, np.ndarray) and running:
                if _usable(value, name) is not value:
                    raise ShapeError(f"{self.op.name}: {name!r} is updated in place, so it needs non-negative "
                                     f"strides in whole elements")
                if not value.flags.writeable:
                    raise ShapeError(f"{self.op.name}: {name!r} is updated in place but is read-only")
        kwargs = {n: _usable(v, n) if isinstance(v, np.ndarray) else v for n, v in kwargs.items()}
        return args, kwargs, outputs, self._num_blocks(core_mask)

    def _num_blocks(self, core_mask) -> int:
        if core_mask is None:
            return self.target.cores
        if not self.target.core_mask_option:
            raise UnsupportedError(f"target {self.target.name!r} has no core_mask launch option "
                                   f"(only DSP targets such as ft78ne and mt7004 do)")
        full = (1 << self.target.cores) - 1
        if isinstance(core_mask, (bool, np.bool_)) or not isinstance(core_mask, (int, np.integer)):
            raise AttributeValueError(f"core_mask={core_mask!r} must be an integer bit mask of cores "
                                      f"(e.g. 0x0f), within {full:#x}")
        mask = int(core_mask)
        if mask <= 0 or mask & ~full:
            raise AttributeValueError(f"core_mask={mask:#x} must pick 1 to {self.target.cores} cores "
                                      f"of target {self.target.name} (bits within {full:#x})")
        return bin(mask).count("1")

    def schedule_hint(self, binding: Binding):
        """The op's schedule for this call (schedule functions, then the kernel's own directives)."""
        from tilegrad.dsl.opdef import merge_directives

        hint = self.op.schedule_hint(self.target, binding)
        given, directives = self.schedule
        return replace(given or hint, directives=merge_directives(hint.directives, directives), planner=self.planner)

    def specialize(self, binding: Binding, num_blocks: int, check_fit: bool = True,
                   code: bool = True, keep_ir: bool = False) -> Specialization:
        """The specialization for this call. Where the plan leaves a stage's core split to the call's
        extents (passes/scratchpad_planner.py: the IR does not know them), the planner decides with
        them, and a split that fuses axes is a specialization of its own, keyed by the decision.
        `code` False: its stages up to tiled and its plan are enough (no LLVM yet). `keep_ir`: a
        build prints its stages up to tiled (they are asked for)."""
        hint = self.schedule_hint(binding)
        spec = self._specialization(binding, num_blocks, hint, code=code, keep_ir=keep_ir)
        planned = self._planned(spec, binding)
        if planned:
            spec = self._specialization(binding, num_blocks, replace(hint, planned=planned), code=code,
                                        keep_ir=keep_ir)
        elif isinstance(spec, PlanOnly):  # built for a call that fused; this one does not
            spec = self._specialization(binding, num_blocks, hint, compile_all=True, code=code, keep_ir=keep_ir)
        if check_fit and spec.plan is not None:
            spec.plan.check()
        return spec

    def _planned(self, spec: Specialization, binding: Binding) -> tuple:
        """The fused core splits the planner chooses at this call's extents (passes/scratchpad_planner.py)."""
        from tilegrad.codegen.launcher import kernel_shapes
        from tilegrad.passes.scratchpad_planner import fused_count
        from tilegrad.schedule import Parallel

        if spec.plan is None or not any(s.fusable for s in spec.plan.stages):
            return ()
        shapes = kernel_shapes(spec.layout, {n: a for n, a in binding.tensors.items() if a is not None})
        planned = []
        for stage in spec.plan.stages:
            if not stage.fusable:
                continue
            try:
                extents = [evaluate(form, shapes) for _, form in stage.fusable]
            except (KeyError, IndexError, TypeError):
                continue
            count = fused_count(extents, stage.cores or spec.num_blocks) or 1
            if count > 1:
                planned.append(Parallel(stage=stage.index, axes=tuple(a for a, _ in stage.fusable[:count])))
        return tuple(planned)

    def _hint_for_call(self, binding: Binding, num_blocks: int):
        """The hint the specialization of this call was built with (the planner's call-time choices too)."""
        hint = self.schedule_hint(binding)
        if self.untiled:
            return hint
        try:  # (its plan is enough: no code for it, until a call asks)
            planned = self._planned(self._specialization(binding, num_blocks, hint, code=False), binding)
        except TilegradError:  # the build fails: the caller rebuilds it pass by pass to show where
            return hint
        return replace(hint, planned=planned) if planned else hint

    def _specialization(self, binding: Binding, num_blocks: int, hint, compile_all: bool = False,
                        code: bool = True, keep_ir: bool = False) -> Specialization | PlanOnly:
        """The specialization of these parts, from memory, the disk cache or built. A build whose plan
        makes this call fuse axes of a core split stops at the tiled stage (PlanOnly: the caller
        builds the fused one); `compile_all` compiles it whole (a call that does not fuse). `code`
        False: a build stops after the tiled stage (Specialization.pending) until code is asked for."""
        from tilegrad.codegen import cache

        layouts = tuple(sorted((n, layout_of(a)) for n, a in binding.tensors.items() if a is not None))
        override = None if self.ir_override is None else (self.ir_override[0], cache.make_key(self.ir_override[1]))
        lengths = self._sum_lengths(binding)
        parts = (self.op.name, self._source, binding.key(), layouts, self.target, num_blocks, hint, self.untiled,
                 self.guard, override, lengths)
        spec = _SPECIALIZATIONS.get(parts)
        if spec is None or (compile_all and isinstance(spec, PlanOnly)):
            with _COMPILE_LOCK:
                spec = _SPECIALIZATIONS.get(parts)
                if spec is None or (compile_all and isinstance(spec, PlanOnly)):
                    key = cache.make_key(*parts[:4], asdict(self.target), *parts[5:])
                    spec = _SPECIALIZATIONS[parts] = self._load_or_build(key, binding, num_blocks, hint, lengths,
                                                                         compile_all, code, keep_ir)
        if code and isinstance(spec, Specialization) and spec.pending is not None:
            with _COMPILE_LOCK:
                if spec.pending is not None:
                    self._generate(spec, spec.pending)
        return spec

    def _sum_lengths(self, binding: Binding) -> tuple[str | None, ...]:
        """Whether each float sum is short or long at this call's shapes (dsl/bounds.sum_lengths):
        part of what a specialization is for, since only the form of each sum that runs is built."""
        key = binding.key()
        forms = self._sum_forms.get(key)
        if forms is None:
            forms = self._sum_forms[key] = sum_extent_forms(self.op.trace(binding).float_sums())
        if not forms:
            return ()
        shapes = {n: a.shape for n, a in binding.tensors.items() if a is not None}
        return sum_lengths(forms, {**binding.kernel_shapes, **shapes}, _runtime_params(self.op, binding))

    def _load_or_build(self, key: str, binding: Binding, num_blocks: int, hint, lengths: tuple,
                       compile_all: bool = True, code: bool = True, keep_ir: bool = False) -> Specialization | PlanOnly:
        from tilegrad.codegen import cache

        hit = cache.load(key)
        if hit is not None:
            try:
                return self._from_cache(key, *hit, num_blocks)
            except (KeyError, TypeError, ValueError, IndexError):
                cache.discard(key)  # an entry that does not fit what it is keyed by is rebuilt
        from tilegrad.pipeline import lower

        lowered = lower(self.op, binding, self.target, num_blocks, hint, untiled=self.untiled,
                        override=self._lowering_override, verify_tiled=self.guard, sum_lengths=lengths,
                        keep_ir=keep_ir)  # (a call reads no stage's text: `ir` and `plan` ask for them)
        if not compile_all and not hint.planned and lowered.plan is not None:
            plan_only = PlanOnly(lowered.plan, lowered.layout, lowered.num_blocks)
            if self._planned(plan_only, binding):  # this call runs a fused split: compile that kernel only
                return plan_only
        temps = {name: (dtype, [_shape_form(d, self.op.name, name) for d in shape])
                 for name, (dtype, shape) in lowered.temps.items()}
        spec = Specialization(key, lowered.ir, lowered.functions, lowered.layout, lowered.messages,
                              lowered.plan, lowered.num_blocks, temps, lowered.prior_outputs,
                              lowered.requirements, lowered.output_forms, stack_bytes=lowered.stack_bytes)
        if lowered.plan is not None:
            try:
                lowered.plan.check()
            except Exception:
                return spec  # keep the IR and plan to show; a call raises UBCapacityError
        if code:
            self._generate(spec, lowered)
        else:
            spec.pending = lowered
        return spec

    def _generate(self, spec: Specialization, lowered) -> None:
        """The specialization's LLVM stage and machine code, from its lowered kernel, stored in the
        disk cache."""
        from tilegrad.codegen import cache
        from tilegrad.pipeline import to_llvm

        if self.ir_override is not None and self.ir_override[0] == "llvm":
            spec.ir["llvm"] = self.ir_override[1]  # as given: the guard build's checks are added before LLVM
            try:
                spec.driver()
            except Exception as err:  # LLVM's parser or a missing driver: the text is at fault
                raise ArgumentError(f"{self.op.name}: the llvm stage given does not compile: "
                                    f"{type(err).__name__}: {err}") from None
        else:
            from tilegrad.codegen import native

            spec.ir["llvm"], objects = to_llvm(lowered, guard=self.guard, emit=True)
            spec.shared_object = native.link(*objects)
        spec.driver()  # compiled now, so the cache entry holds the machine code
        spec.pending = None
        cache.store(spec.key, {**spec.ir, "object": spec.shared_object}, spec.meta())

    def _from_cache(self, key: str, ir: dict, meta: dict, num_blocks: int) -> Specialization:
        if meta["num_blocks"] != (1 if self.untiled else num_blocks):
            raise ValueError("block count")
        if any(f"@{name}(" not in ir["llvm"] for name in (*meta["functions"], DRIVER)):
            raise ValueError("functions")
        shared_object = ir.pop("object")
        return Specialization(key, ir, meta["functions"], [tuple(x) for x in meta["layout"]],
                              {int(k): v for k, v in meta["messages"].items()},
                              plan_from_dict(meta["plan"]) if meta["plan"] else None,
                              meta["num_blocks"], meta["temps"], tuple(meta["prior_outputs"]),
                              [Requirement.from_json(r) for r in meta["requirements"]], meta["output_forms"],
                              shared_object, stack_bytes=meta["stack_bytes"])

    # ---- running ------------------------------------------------------------------------------
    def _call_checked(self, /, *args, **kwargs):
        """A call the native path has not seen (or refused): every check, then the run; a keyword
        call that needed no copies binds its signature for the next call."""
        given = kwargs
        args, kwargs, outputs, num_blocks = self._split_call(args, kwargs, running=True)
        binding = self.op.bind(self.target, args, kwargs)
        spec = self.specialize(binding, num_blocks)
        spec.check_shapes(self.op.name, binding, _runtime_params(self.op, binding))
        arrays: dict[str, np.ndarray] = {n: a for n, a in binding.tensors.items() if a is not None}
        outputs = {n: _check_output(self.op.name, n, a, binding.output_shapes[n], binding.output_dtypes[n].numpy)
                   if n in binding.output_shapes else a for n, a in outputs.items() if a is not None}
        _refuse_aliasing(self.op, binding, outputs)
        results, copy_back = {}, []
        for name in self.op.outputs:
            if name not in binding.output_shapes:  # not produced by this call: None, a given buffer untouched
                results[name] = None
                continue
            shape, dtype = binding.output_shapes[name], binding.output_dtypes[name].numpy
            kernel_shape = binding.kernel_shapes[name]
            given_output = outputs.get(name)
            if given_output is None:  # an output the op blends into starts from zeros
                allocate = np.zeros if name in spec.prior_outputs else np.empty
                results[name] = allocate(shape, dtype)
                arrays[name] = results[name].reshape(kernel_shape)
                continue
            results[name] = given_output
            view = _view(given_output, kernel_shape)
            aliased = [n for n, a in binding.tensors.items()
                       if a is not None and np.may_share_memory(given_output, a)]
            if view is not None and view.flags.c_contiguous and _usable(view, name) is view and not aliased:
                arrays[name] = view
            else:  # in place, or a layout the kernel does not write: through a copy (prior kept)
                arrays[name] = np.array(given_output, order="C").reshape(kernel_shape)
                copy_back.append(name)
        workspace = set(spec.plan.workspace_temps) if spec.plan is not None else set(spec.temps)
        for name, (dtype, shape) in spec.temps.items():
            if name in workspace:
                arrays[name] = _allocate_workspace(self.op.name, name, shape, dtype_of(dtype).numpy, arrays)
        status = np.zeros(STATUS_SLOTS, np.int64)
        arrays["status"] = status
        argv = fill_arguments(spec.layout, arrays, _runtime_params(self.op, binding))
        ub_bytes = self.target.ub_bytes if spec.plan is not None and self.target.staged else None
        parallel = max((a.size for a in arrays.values()), default=0) >= PARALLEL_MIN_ELEMENTS
        run_driver(*spec.driver(), argv.ctypes.data, spec.num_blocks, ub_bytes, parallel, spec.stack_bytes)
        if status[0]:
            raise spec.status_error(self.op.name, status)
        for name in copy_back:
            np.copyto(results[name], arrays[name].reshape(results[name].shape))
        if not args and not copy_back:
            self._remember(given, spec, arrays, results, argv, ub_bytes, parallel)
        values = tuple(results[n] for n in self.op.outputs)
        return values[0] if len(values) == 1 else values

    def _remember(self, given: dict, spec: Specialization, arrays: dict, results: dict, argv: np.ndarray,
                  ub_bytes: int | None, parallel: bool) -> None:
        """Bind this call's signature if every pointer the kernel got is a given array's own, a
        fresh output, workspace or the status words (no copy was needed)."""
        if len(given) > NATIVE_MAX_KEYWORDS or len(self.op.outputs) > NATIVE_MAX_KEYWORDS:
            return  # beyond the native path's fixed arrays: every call of this signature stays checked
        slots = pointer_slots(spec.layout)
        passed, new = {}, []
        for name, slot in slots.items():
            array = arrays.get(name)
            if array is None or name == "status":
                continue
            value = given.get(name)
            if type(value) is np.ndarray:
                if address(array) != address(value):
                    return  # the kernel reads a copy
                passed[name] = slot
            elif name in results and value is None:
                new.append(NewArray(slot, results[name].shape, results[name].dtype, name in spec.prior_outputs, name))
            elif name in spec.temps:
                new.append(NewArray(slot, array.shape, array.dtype, False, None))
            else:
                return
        if len(new) > NATIVE_MAX_NEW_ARRAYS:
            return
        written = {n for n in passed if n in self.op.outputs or self.op.tensors[n].updated}
        op = self.op.name
        driver = spec.driver()

        def run(argv_address: int) -> None:
            run_driver(*driver, argv_address, spec.num_blocks, ub_bytes, parallel, spec.stack_bytes)

        direct = ub_bytes is None and not parallel and spec.stack_bytes <= CALLER_STACK_BYTES  # no Python per call
        bound = signature(
            given, passed, written, new, [n if results.get(n) is not None else None for n in self.op.outputs],
            np.concatenate([argv, np.zeros(STATUS_SLOTS, np.int64)]), slots["status"], STATUS_SLOTS, driver[1],
            spec.num_blocks, None if direct else run,
            lambda status: spec.status_error(op, status), spec)
        if bound is not None:
            self._bind_signature(bound)

    # ---- inspecting ---------------------------------------------------------------------------
    def ir(self, stage: str, /, *args, **kwargs) -> str:
        """The IR of one stage ("op", "loops", "tiled", "llvm", "asm") for this call signature."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
        args, kwargs, _, num_blocks = self._split_call(args, kwargs)
        binding = self.op.bind(self.target, args, kwargs)
        spec = self.specialize(binding, num_blocks, check_fit=stage in ("llvm", "asm"), code=stage in ("llvm", "asm"),
                               keep_ir=stage not in ("llvm", "asm"))
        if stage == "asm":
            return spec.asm()
        if stage not in spec.ir:  # built for a call (or loaded from the disk cache): its stages were not printed
            from tilegrad.pipeline import lower

            lowered = lower(self.op, binding, self.target, num_blocks, self._hint_for_call(binding, num_blocks),
                            untiled=self.untiled, override=self._lowering_override, verify_tiled=self.guard,
                            sum_lengths=self._sum_lengths(binding))
            spec.ir.update({s: text for s, text in lowered.ir.items() if s not in spec.ir})
        return spec.ir[stage]

    def ir_after_each_pass(self, /, *args, **kwargs) -> list[tuple[str, str]]:
        """(pass, IR after it) for every pass of the pipeline, then the optimized LLVM IR,
        for this call signature: built afresh, not from the cache. A failure carries the list so
        far as `error.passes` (and the stages built as `error.stages`)."""
        from tilegrad.errors import TilegradError
        from tilegrad.pipeline import lower, to_llvm

        args, kwargs, _, num_blocks = self._split_call(args, kwargs)
        binding = self.op.bind(self.target, args, kwargs)
        seen: list[tuple[str, str]] = []

        def record(name, module):
            seen.append((name, str(module)))

        try:
            lowered = lower(self.op, binding, self.target, num_blocks, self._hint_for_call(binding, num_blocks),
                            self.untiled, after_pass=record, override=self._lowering_override,
                            sum_lengths=self._sum_lengths(binding))
            if lowered.plan is not None:
                lowered.plan.check()
            seen.append(("llvmlite conversion and O3", to_llvm(lowered, self.guard, after_pass=record)[0]))
        except TilegradError as err:
            err.passes = seen
            raise
        return seen

    def pipeline(self, /, *args, **kwargs) -> dict[str, str]:
        """Each stage's passes for this call signature, as `tilegrad opt -p` takes them."""
        from tilegrad.passes.registry import pipeline_spec
        from tilegrad.pipeline import stage_passes

        args, kwargs, _, num_blocks = self._split_call(args, kwargs)
        binding = self.op.bind(self.target, args, kwargs)
        passes = stage_passes(self.target, num_blocks, self._hint_for_call(binding, num_blocks), self.untiled,
                              self.guard)
        return {stage: pipeline_spec(p) for stage, p in passes.items()}

    def plan(self, /, *args, check: bool = True, **kwargs):
        """The tiling plan for this call signature (raises UBCapacityError if it cannot fit)."""
        args, kwargs, _, num_blocks = self._split_call(args, kwargs)
        binding = self.op.bind(self.target, args, kwargs)
        # (its stages printed: what a plan's reader asks for next, `ir`, is then no second lowering)
        spec = self.specialize(binding, num_blocks, check_fit=False, code=False, keep_ir=True)
        arrays = {n: a for n, a in binding.tensors.items() if a is not None}
        report = PlanReport.build(self, binding, spec, workspace_bytes(spec, arrays))
        if check and spec.plan is not None:
            spec.plan.check()
        return report

    def workspace_size(self, /, *args, **kwargs) -> int:
        """Bytes of GM workspace (temporaries and cross-core scratch) this call needs."""
        args, kwargs, _, num_blocks = self._split_call(args, kwargs)
        binding = self.op.bind(self.target, args, kwargs)
        spec = self.specialize(binding, num_blocks, check_fit=False, code=False)
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


def _check_output(op: str, name: str, array, shape, dtype) -> np.ndarray:
    if not isinstance(array, np.ndarray):
        raise ArgumentError(f"{op}: output {name!r} must be a numpy array, got {type(array).__name__}")
    if tuple(array.shape) != tuple(shape):
        raise ShapeError(f"{op}: output {name!r} has shape {array.shape}; the call needs {tuple(shape)}")
    if array.dtype != dtype:
        raise DTypeError(f"{op}: output {name!r} has dtype {array.dtype}; the call needs {np.dtype(dtype)}")
    if not array.flags.writeable:
        raise ArgumentError(f"{op}: output {name!r} is read-only")
    return array


def _view(array: np.ndarray, shape: tuple) -> np.ndarray | None:
    """`array` seen with `shape` without a copy, or None if that needs one."""
    if array.shape == tuple(shape):
        return array
    view = array.view()
    try:
        view.shape = shape
    except (AttributeError, ValueError):
        return None
    return view


def _runtime_params(op: OpDef, binding: Binding) -> dict:
    return {n: (float(v) if op.attrs[n].kind == "f" else int(v))
            for n, v in binding.attrs.items() if n in binding.runtime_attrs}


def _refuse_aliasing(op: OpDef, binding: Binding, outputs: dict) -> None:
    """Two outputs (updated tensors included) may not share memory, and an output may overlap an
    input only where the op declares it in place (`in_place=`), as the same array and strides."""
    written = [(n, a) for n, a in outputs.items() if isinstance(a, np.ndarray)]
    written += [(n, binding.tensors[n]) for n, s in op.tensors.items() if s.updated and binding.tensors[n] is not None]
    for i, (name, array) in enumerate(written):
        for other, other_array in written[i + 1:]:
            if np.may_share_memory(array, other_array):
                raise ShapeError(f"{op.name}: {name!r} and {other!r} are both written and share memory")
        seen = _view(array, binding.kernel_shapes[name]) if name in binding.kernel_shapes else array
        seen = array if seen is None else seen
        for other, source in binding.tensors.items():
            if other == name or source is None or not np.may_share_memory(array, source):
                continue
            in_place = op.in_place.get(name) == other and source.shape == seen.shape \
                and source.strides == seen.strides and address(source) == address(seen)
            if not in_place:
                raise ShapeError(f"{op.name}: output {name!r} overlaps input {other!r}; in place needs the same "
                                 f"array (strides {array.strides} vs {source.strides})")


def guard_default() -> bool:
    """`TILEGRAD_GUARD=1` turns the guard build on for every kernel compiled without `guard=`."""
    return os.environ.get("TILEGRAD_GUARD", "0") not in ("", "0")


EDITABLE_STAGES = ("op", "loops", "tiled", "llvm")


def compile(op: str | OpDef, target: str | Target = "cpu", untiled: bool = False,  # noqa: A001
            guard: bool | None = None, schedule=None, planner: bool = True) -> Kernel:
    """A Kernel for `op` on `target`; it compiles lazily, once per specialization. `guard=True`
    (or TILEGRAD_GUARD=1) bounds-checks every access: see OutOfBoundsError. `schedule`: directives
    (a list, maybe with one ScheduleHint, or their text as `tilegrad plan` prints it) that replace
    the op's and the planner's for what they name. `planner=False`: the backend's passes carry out
    exactly the directives given (the op's and `schedule`'s) and decide nothing of their own, so a
    printed plan given back runs as printed, and a line deleted from it is a decision not made."""
    return Kernel(op, target, untiled, guard, schedule=schedule, planner=planner)


def _given_schedule(op: str, schedule) -> tuple:
    """(ScheduleHint or None, directives) of compile's `schedule`."""
    from tilegrad.dsl.opdef import schedule_parts
    from tilegrad.schedule import parse_schedule

    if isinstance(schedule, str):
        return None, parse_schedule(schedule, f"{op}: schedule")
    try:
        return schedule_parts(schedule, f"{op}: schedule=")
    except ScheduleError:
        raise
    except DefinitionError as err:  # not a schedule: the argument's fault
        raise ArgumentError(str(err)) from None
