"""The pipeline, stage by stage: op -> loops -> tiled -> llvm -> asm, verifying after each.

    trace the opdef -> emit tg IR ("op") -> lower-tg-to-loops ("loops")
    -> tile-for-target ("tiled") -> lower-to-llvm, llvmlite, O3 ("llvm") -> shared object (codegen/native.py) (+ "asm")
"""

from __future__ import annotations

import gc
import json
import os
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp, NoneAttr, f64
from xdsl.ir import Attribute
from xdsl.passes import ModulePass

from tilegrad.abi import GUARD_CODE_BASE
from tilegrad.backends import backend_for
from tilegrad.backends.common import Backend
from tilegrad.call_path import layout_of
from tilegrad.dialect import make_context
from tilegrad.dialect.values import element_bytes
from tilegrad.dsl.bounds import _OPS as FORM_OPS
from tilegrad.dsl.bounds import size_form
from tilegrad.dsl.emit import KernelArg, emit_op
from tilegrad.dsl.opdef import Binding, OpDef
from tilegrad.dsl.tensor import TensorArg
from tilegrad.errors import ArgumentError, InternalError, TilegradError, UnsupportedError
from tilegrad.passes.common import arg_info, is_part, ops_and_loops
from tilegrad.passes.lower_to_llvm import argument_layout, guard_messages
from tilegrad.passes.tile_for_target import tiling_plan
from tilegrad.passes.tiling_plan import TilingPlan
from tilegrad.schedule import Directive, KernelSchedule, ScheduleHint
from tilegrad.targets import Target


@dataclass
class Lowered:
    """A specialization lowered to the tiled stage: enough to print IR and plans, not yet code."""

    module: ModuleOp
    ir: dict[str, str]
    args: list[KernelArg]
    messages: dict[int, str]
    plan: TilingPlan | None
    functions: list[str]
    layout: list[tuple[str, str, int]]
    num_blocks: int
    temps: dict[str, tuple] = field(default_factory=dict)
    prior_outputs: tuple[str, ...] = ()
    requirements: list = field(default_factory=list)
    output_forms: dict[str, list] = field(default_factory=dict)
    """Each output's shape as size forms (dsl/bounds): the arrays passed must have it."""
    stack_bytes: int = 0
    """What the kernel's stack buffers (GEMM panels, accumulator rows) take, all functions together:
    the stack a thread needs to run it (launcher.run_driver finds one that has it)."""
    backend: Backend | None = None
    """The target's backend (its llvm stage and code generation); None: the cpu's."""


VERIFY_EACH_PASS = os.environ.get("TILEGRAD_VERIFY_EACH_PASS", "0") not in ("", "0")
"""Verify the module after every pass (to find the pass that broke it), not only at the end of the
op and loops stages: a debugging switch (the test suite sets it), it costs a third of a large op's
compile."""


def stage_passes(target: Target, num_blocks: int, hint: ScheduleHint, untiled: bool = False,
                 guard: bool = False) -> dict[str, list[ModulePass]]:
    """The passes that make each stage from the one before it: the target's backend's stage table
    (backends/), decided before any runs (a textual form of each list runs the same way in
    `tilegrad opt -p`)."""
    return backend_for(target).stage_table(target, num_blocks, hint, untiled, guard)


AfterPass = Callable[[str, ModuleOp], None]
"""Called with a pass's textual spec and the module after it ran (`show --print-after-each-pass`)."""


def parse_ir(text: str, what: str = "IR") -> ModuleOp:
    """IR text (a printed stage, maybe hand-edited) as a verified module, or ArgumentError."""
    from xdsl.parser import Parser

    try:
        module = Parser(make_context(), text).parse_module()
        module.verify()
    except Exception as err:  # xDSL's parse and verify errors carry the line they are about
        raise ArgumentError(f"{what} does not parse or verify: {err}") from None
    return module


_collector = threading.Lock()
_compiling = 0
_collector_was_enabled = False


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while a compile builds and drops IR. A compile makes
    hundreds of thousands of xDSL objects, and the collector's full passes over them took a third
    of a cold compile (divisive normalization 1.86 -> 0.99 s); the garbage goes at the first
    collection after it. Counted, so overlapping compiles on several threads turn it back on once."""
    global _compiling, _collector_was_enabled
    with _collector:
        if _compiling == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _compiling += 1
    try:
        yield
    finally:
        with _collector:
            _compiling -= 1
            if _compiling == 0 and _collector_was_enabled:
                gc.enable()


def lower(opdef: OpDef, binding: Binding, target: Target, num_blocks: int, hint: ScheduleHint,
          untiled: bool = False, after_pass: AfterPass | None = None,
          override: tuple[str, str] | None = None, verify_tiled: bool = False,
          sum_lengths: tuple[str | None, ...] = (), keep_ir: bool = True) -> Lowered:
    """The op, loops and tiled stages. `override` = (stage, IR text) replaces that stage's module
    by the text (a hand-edited stage, verified when parsed) and goes on from it. A failure carries
    the stages built so far as `error.stages`. `sum_lengths`: whether each of the trace's float sums
    (`Trace.float_sums`) is short or long at the shapes the kernel is for (dsl/bounds.sum_lengths).
    `keep_ir` False: the op, loops and tiled stages are not printed (`Lowered.ir` holds none of them):
    printing them was a fifth of a cold compile (pooling, LRN, softmax and batch norm backward on cpu
    and ascend910b: 16.8 -> 13.2 s), for text a call never reads; a failure lowers again with them.

    The op and loops stages are verified; the tiled stage only with `verify_tiled` (the guard
    build) or TILEGRAD_VERIFY_EACH_PASS. It is the largest, and verifying it cost as much as
    lowering it to LLVM (max pooling 2-D: 0.15 s of a 1.1 s compile); its passes are verified one
    by one in the test suite, and LLVM verifies what lower-to-llvm makes of it."""
    ir: dict[str, str] = {}
    try:
        with collector_paused():
            return _lower(opdef, binding, target, num_blocks, hint, untiled, after_pass, override, ir, verify_tiled,
                          sum_lengths, keep_ir)
    except TilegradError as err:
        if not keep_ir:  # the same failure again, with the stages built before it
            return lower(opdef, binding, target, num_blocks, hint, untiled, after_pass, override, verify_tiled,
                         sum_lengths, keep_ir=True)
        err.stages = dict(ir)
        raise


def _lower(opdef, binding, target, num_blocks, hint, untiled, after_pass, override, ir, verify_tiled,
           sum_lengths, keep_ir) -> Lowered:
    trace = opdef.trace(binding)
    for reduce, length in zip(trace.float_sums(), sum_lengths):
        reduce.length = length
    inputs = {n: TensorArg(n, a.ndim, binding.dtypes[n], opdef.static_dims(n, binding)) if a is not None else None
              for n, a in binding.tensors.items()}
    layouts = {n: layout_of(a) for n, a in binding.tensors.items() if a is not None}
    params = {n: opdef.attrs[n].kind for n in binding.runtime_attrs}
    with compiler_step(opdef.name, "emit"):
        emitted = emit_op(opdef.name, trace, inputs, layouts, params, opdef.dim_symbols(binding), opdef.in_place)
    module = emitted.module
    backend = backend_for(target)
    passes = backend.stage_table(target, num_blocks, hint, untiled)

    def finish(stage: str) -> ModuleOp:
        nonlocal module
        verified = VERIFY_EACH_PASS and bool(passes.get(stage))  # (after its last pass)
        if not verified and (stage != "tiled" or verify_tiled):
            with compiler_step(opdef.name, f"verify ({stage} stage)"):
                module.verify()
        if override is not None and override[0] == stage:
            given = parse_ir(override[1], f"the {stage} stage given for {opdef.name}")
            check_given_arguments(opdef.name, stage, module, given)
            module = given
        return module

    finish("op")
    if keep_ir:
        ir["op"] = str(module)
    if after_pass is not None:
        after_pass("emit", module)
    plan = None
    decided: list[tuple[Directive, str]] = []

    def decide(step: ModulePass, module: ModuleOp) -> ModulePass:  # the backend's decisions, before each pass,
        step, applied = backend.direct(step, backend.decide(step, module, target), hint.directives,  # and the user's
                                       decided, planner=hint.planner)
        decided.extend(applied)
        return step

    for stage in ("loops", "tiled"):  # (the llvm stage is lowered function by function: to_llvm)
        if stage == "tiled" and untiled:  # the loops run as they are, on one block
            num_blocks = 1
            if keep_ir:
                ir["tiled"] = ir["loops"]
            break
        apply_passes(opdef.name, passes[stage], module, after_pass, verify=VERIFY_EACH_PASS, before_pass=decide)
        if stage == "tiled":
            backend.check_directed(hint.directives, decided)
        if stage == "tiled":
            plan = tiling_plan(module, keep=False)  # what tile-for-target decided, carried on the module
        finish(stage)
        if stage == "tiled":  # (a given stage may carry its own plan)
            plan = _with_schedule(tiling_plan(module, keep=False) or plan, decided)
        if keep_ir:
            ir[stage] = str(module)
    functions = [f.sym_name.data for f in module.ops if not is_part(f)]
    layout = argument_layout(next(iter(module.ops)))
    kept = {name for name, role, _ in layout if role == "temp"}
    temps = {b.name: (b.dtype.name, b.shape) for b in trace.temps if b.name in kept}
    fn = next(iter(module.ops))
    for index, arg in enumerate(fn.body.block.args):
        info = arg_info(fn, index)
        if info.get("tg.role") == "workspace":  # partials the passes added: sizes as forms
            dtype = "float64" if arg.type.element_type == f64 else "float32"
            forms = json.loads(info["tg.shape"]) if "tg.shape" in info else list(arg.type.get_shape())
            temps[info["tg.name"]] = (dtype, tuple(forms))
            if plan is not None:  # (one a pass after the tiling added: a tensor's panels packed once per call)
                plan.workspace_temps.setdefault(info["tg.name"], 8 if dtype == "float64" else 4)
    prior = tuple(name for name in trace.outputs if name in trace.read_buffers())
    output_forms = {name: [size_form(d) for d in buffer.shape] for name, buffer in trace.outputs.items()}
    return Lowered(module, ir, emitted.args, emitted.messages, plan, functions, layout, num_blocks, temps, prior,
                   emitted.requirements, output_forms, stack_bytes(module, opdef.name), backend)


def _with_schedule(plan: TilingPlan | None, decided: list[tuple[Directive, str]]) -> TilingPlan | None:
    """The plan with every directive in force: tile-for-target's core split (the planner's or the
    user's, on the plan it carries), then the backend's other directives, each with who decided it
    ("planner" or "user"); and what `tilegrad plan` lists from them: the outputs stored with
    streaming stores and the inputs read through packed panels (Store and Stage directives), by stage."""
    if plan is None:
        return plan
    own = plan.schedule or KernelSchedule(plan.target.name)
    source = dict(own.source)
    for directive, who in decided:
        source.setdefault(directive, who)
    plan.schedule = KernelSchedule(own.target, tuple(dict.fromkeys((*own.directives, *(d for d, _ in decided)))),
                                   source, dict(own.deferred))
    plan.streamed, plan.panels = plan.schedule.streamed(), plan.schedule.panels()
    return plan


def _arguments(module: ModuleOp) -> dict[tuple[str, str], Attribute]:
    """(name, role) -> type of the arguments of every function of the module (its stages and parts)."""
    found = {}
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        for index, arg in enumerate(fn.body.block.args):
            info = arg_info(fn, index)
            if "tg.name" in info:  # (a part's scalar live-ins are not the launcher's)
                found[(info["tg.name"], info.get("tg.role", ""))] = arg.type
    return found


def check_given_arguments(op_name: str, stage: str, built: ModuleOp, given: ModuleOp) -> None:
    """IR text given for a stage is a kernel the launcher can run: functions only, the first a
    stage; every stage takes the same arguments (the driver hands each the one argument array, read
    by the stage's own list), each one of the op's own (name, role and type: an argument the op
    does not have would be passed nothing, or the wrong tensor's descriptor), a workspace of
    partials (which the call allocates, contiguous, by its sizes) excepted; and a call goes to a
    part (a private function) of the module, never back into itself."""
    functions = list(given.ops)
    if not functions or not all(isinstance(f, func.FuncOp) and f.body.blocks for f in functions) \
            or is_part(functions[0]):
        raise ArgumentError(f"{op_name}: the {stage} stage given must hold only func.func definitions, the first a "
                            f"stage (public), as the op's own {stage} stage does")
    first = _signature(functions[0])
    for fn in functions[1:]:
        if not is_part(fn) and _signature(fn) != first:
            raise ArgumentError(f"{op_name}: stage {fn.sym_name.data} of the {stage} stage given takes other "
                                f"arguments than {functions[0].sym_name.data}: every stage is passed the same ones")
    _check_calls(op_name, stage, given)
    own = _arguments(built)
    for (name, role), type_ in _arguments(given).items():
        if role == "workspace":
            _check_workspace(op_name, stage, name, type_, given, own)
            continue
        if (name, role) not in own:
            raise ArgumentError(f"{op_name}: the {stage} stage given has an argument {name!r} ({role or 'no role'}) "
                                f"that the op's {stage} stage does not; its arguments are: "
                                f"{', '.join(n for n, _ in own)}")
        if own[(name, role)] != type_:
            raise ArgumentError(f"{op_name}: argument {name!r} of the {stage} stage given is {type_}, "
                                f"the op's is {own[(name, role)]}")


def _signature(fn: func.FuncOp) -> list[tuple]:
    return [(tuple(sorted(arg_info(fn, i).items())), arg.type) for i, arg in enumerate(fn.body.block.args)]


def _check_calls(op_name: str, stage: str, given: ModuleOp) -> None:
    """Every func.call of the given IR calls a part defined in it (a call of anything else would link
    to whatever the process has of that name), and no call returns to a function on its way (a
    recursion that never ends overflows the stack)."""
    parts = {fn.sym_name.data: fn for fn in given.ops if is_part(fn)}
    calls: dict[str, set[str]] = {}
    for fn in given.ops:
        for op in fn.walk():
            if isinstance(op, func.CallOp):
                callee = op.callee.string_value()
                if callee not in parts:
                    raise ArgumentError(f"{op_name}: {fn.sym_name.data} of the {stage} stage given calls @{callee}, "
                                        f"which is not a part (a private func.func) of the module")
                calls.setdefault(fn.sym_name.data, set()).add(callee)

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise ArgumentError(f"{op_name}: the {stage} stage given calls itself: "
                                f"{' -> '.join('@' + n for n in (*path[path.index(name):], name))}")
        for callee in calls.get(name, ()):
            visit(callee, (*path, name))

    for name in calls:
        visit(name, ())


def _check_workspace(op_name: str, stage: str, name: str, type_: Attribute, given: ModuleOp, own: dict) -> None:
    """A workspace the call allocates as a contiguous array of its sizes (`tg.shape`, forms of the
    op's sizes, else its type's): its type must state that layout, or the kernel would address
    it by strides it does not have (`strided<[1000]>` on a 2-element workspace writes past it)."""
    if not isinstance(type_, memref.MemRefType):
        raise ArgumentError(f"{op_name}: workspace {name!r} of the {stage} stage given is {type_}, not a memref")
    if not isinstance(type_.layout, NoneAttr):
        raise ArgumentError(f"{op_name}: workspace {name!r} of the {stage} stage given is {type_}: a workspace is "
                            f"allocated contiguous, so its type has the identity layout (no strided<...>)")
    shape = type_.get_shape()
    sized = all(size >= 0 for size in shape)
    for fn in given.ops:
        for index, arg in enumerate(fn.body.block.args):
            info = arg_info(fn, index)
            if info.get("tg.name") != name or "tg.shape" not in info:
                continue
            try:
                forms = json.loads(info["tg.shape"])
            except ValueError:
                forms = None
            tensors = {n for n, _ in own}
            if not isinstance(forms, list) or len(forms) != len(shape) \
                    or not all(_is_form(f, tensors) for f in forms) \
                    or any(isinstance(f, int) and s >= 0 and f != s for f, s in zip(forms, shape)) \
                    or any(not isinstance(f, int) and s >= 0 for f, s in zip(forms, shape)):
                raise ArgumentError(f"{op_name}: workspace {name!r} of the {stage} stage given has tg.shape = "
                                    f"{info['tg.shape']}: one size form per axis of {type_}, a static axis's its "
                                    f"number")
            sized = True
    if not sized:
        raise ArgumentError(f"{op_name}: workspace {name!r} of the {stage} stage given is {type_}: the call "
                            f"allocates it by its sizes, so a dynamic one needs them as tg.shape")


def _is_form(form, tensors: set[str]) -> bool:
    """A size form (dsl/bounds): a count, an axis of one of the op's tensors, a parameter, or an
    operation on two forms."""
    if isinstance(form, int):
        return form >= 0
    if not isinstance(form, list) or not form:
        return False
    if form[0] == "dim":
        return len(form) == 3 and form[1] in tensors and isinstance(form[2], int) and form[2] >= 0
    if form[0] == "param":
        return len(form) == 2 and isinstance(form[1], str)
    return len(form) == 3 and form[0] in FORM_OPS and all(_is_form(f, tensors) for f in form[1:])


MAX_STACK_BYTES = 4 << 20
"""The most a kernel's stack buffers (memref.alloca) may take, all its functions together: half the
stack of a thread that runs kernels with large ones (runtime.WORKER_STACK_BYTES), the rest for the
frames. The library's largest, the cpu GEMM panels, take about 0.6 MiB."""


def stack_bytes(module: ModuleOp, op_name: str = "") -> int:
    """The bytes of every stack buffer (memref.alloca, each made once per call of its function:
    lower-to-llvm puts it in the entry block) in the module; a dynamic one, or a total above
    MAX_STACK_BYTES, is refused (the thread's stack would overflow: a crash, not an error)."""
    total = 0
    for op in module.walk():
        if not isinstance(op, memref.AllocaOp):
            continue
        t = op.memref.type
        text = " ".join(str(op).split())[:160]
        if op.operands or not t.has_static_shape():
            raise UnsupportedError(f"{op_name}: a stack buffer must have a static size: {text}")
        elements = 1
        for size in t.get_shape():
            elements *= size
        nbytes = elements * element_bytes(t.element_type)
        total += nbytes
        if total > MAX_STACK_BYTES:
            raise UnsupportedError(f"{op_name}: {text} ({nbytes} bytes) takes the kernel's stack buffers to {total} "
                                   f"bytes, over the limit of {MAX_STACK_BYTES} bytes (4 MiB)")
    return total


def to_llvm(lowered: Lowered, guard: bool = False, after_pass: AfterPass | None = None,
            emit: bool = False) -> tuple[str, list[bytes]]:
    """unroll-short-reductions, expand-math and lower-to-llvm, then xDSL's llvmlite conversion and
    LLVM's O3 for this host: the optimized text and, with `emit`, its object code. Each stage (the
    one LLVM will take longest on first: _llvm_work) is lowered and converted as a module of its
    own and handed to LLVM at once, so LLVM optimizes one stage while the next is lowered
    (codegen/jit.py's PartCompiler; the fused linear CE's cold compile: median 1.13 -> 0.92 s,
    alternating 10 rounds). With `after_pass` (each pass's IR is shown), the stages go as one
    module. The stages move out of `lowered.module`. With `guard`, every access is bounds-checked
    (at O1); the report codes join `lowered.messages`."""
    from tilegrad.backends.cpu import BACKEND as CPU
    from tilegrad.codegen.driver import driver_module
    from tilegrad.codegen.jit import PartCompiler

    backend = lowered.backend or CPU
    name = lowered.module.ops.first.sym_name.data
    stages = list(lowered.module.ops)
    longest_first = sorted(stages, key=_llvm_work, reverse=True)
    batches = [stages] if after_pass is not None else [[stage] for stage in longest_first]
    with PartCompiler(speed_level=1 if guard else 3, emit=emit) as compiler:  # a guard build need not be fast
        for batch in batches:
            module = ModuleOp([], attributes=dict(lowered.module.attributes))
            for stage in batch:
                stage.detach()
                module.body.block.add_op(stage)
            first_code = sum(code >= GUARD_CODE_BASE for code in lowered.messages)
            with collector_paused():
                # (LLVM verifies what lower-to-llvm produces when it parses it)
                apply_passes(name, backend.llvm_passes(guard, first_code), module, after_pass, verify=False)
                lowered.messages.update(guard_messages(module))
                text = str(_convert(name, module, backend))
            with compiler_step(name, "O3"):  # (with one thread, LLVM runs here)
                compiler.submit(text)
        with compiler_step(name, "O3"):
            compiler.submit(driver_module(lowered.functions))
            return compiler.finish()


def _llvm_work(function) -> int:
    """How long LLVM will take on a function, roughly: its ops, and each loop as 20 (LLVM's loop
    passes run per loop: the fused linear CE's GEMM stages, 624 ops in 38 loops, take 0.26 s
    where its 749-op stage in 6 loops takes 0.15 s)."""
    ops, loops = ops_and_loops(function)
    return ops + 20 * loops


def _convert(name: str, module: ModuleOp, backend: Backend):
    """xDSL's llvm dialect as an llvmlite module, with what the conversion drops (the stores'
    nontemporal flags, the loops' vectorizer hints: the backend's code generation)."""
    with compiler_step(name, "llvmlite conversion"):
        llvm_module = convert_module(module, fallback_target_triple=None)
        backend.mark_llvm(module, llvm_module)
        for function in llvm_module.functions:
            if not function.is_declaration:
                function.attributes.add("nounwind")
        return llvm_module


@contextmanager
def compiler_step(op: str, step: str):
    """A failure inside the compiler is tilegrad's bug, not the caller's: InternalError naming the
    op and the pass (the original exception is chained, for --debug)."""
    try:
        yield
    except TilegradError:
        raise
    except Exception as err:
        raise InternalError(f"{op}: the compiler failed in {step}: {type(err).__name__}: {err}") from err


def run_passes(text: str, spec: str, after_pass: AfterPass | None = None, what: str = "IR") -> ModuleOp:
    """Parse IR text and run a textual pipeline of tilegrad's and xDSL's passes on it (`tilegrad opt`)."""
    from tilegrad.passes.registry import parse_pipeline

    module = parse_ir(text, what)
    if spec:
        apply_passes(what, parse_pipeline(spec).passes, module, after_pass, verify=True)
    return module


def apply_passes(op: str, passes, module: ModuleOp, after_pass: AfterPass | None, verify: bool,
                 before_pass: Callable[[ModulePass, ModuleOp], ModulePass | None] | None = None) -> None:
    """Run the passes in order, each failure an InternalError naming its pass spec; `verify` checks
    the module after each; `before_pass(step, module)` sees the module each is given (it must not
    change it) and may return the step to run in its place (the same pass given the directives in
    force as its option), `after_pass(spec, module)` each result."""
    ctx = make_context()
    for step in passes:
        spec = str(step.pipeline_pass_spec())
        with compiler_step(op, spec):
            if before_pass is not None:
                step = before_pass(step, module) or step
            step.apply(ctx, module)
            if verify:
                module.verify()
        if after_pass is not None:
            after_pass(spec, module)
