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

from tilegrad.call_path import layout_of
from tilegrad.codegen.launcher import GUARD_CODE_BASE
from tilegrad.dialect import make_context
from tilegrad.dsl.bounds import _OPS as FORM_OPS
from tilegrad.dsl.bounds import size_form
from tilegrad.dsl.emit import KernelArg, emit_op
from tilegrad.dsl.opdef import Binding, OpDef
from tilegrad.dsl.tensor import TensorArg
from tilegrad.errors import ArgumentError, InternalError, TilegradError, UnsupportedError
from tilegrad.passes.branch_guarded_reads import BranchGuardedReads
from tilegrad.passes.chunk_row_sweeps import ChunkRowSweeps, chunk_columns
from tilegrad.passes.collapse_contiguous_nests import CollapseContiguousNests
from tilegrad.passes.collapse_contiguous_rows import CollapseContiguousRows
from tilegrad.passes.common import arg_info, is_part, ops_and_loops
from tilegrad.passes.defer_sum_epilogues import DeferSumEpilogues
from tilegrad.passes.expand_math import ExpandMath
from tilegrad.passes.fold_affine_tests import FoldAffineTests
from tilegrad.passes.forward_stored_values import ForwardStoredValues
from tilegrad.passes.fuse_elementwise import FuseElementwise
from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops
from tilegrad.passes.fuse_sibling_reductions import FuseSiblingReductions
from tilegrad.passes.hoist_tile_loops import HoistTileLoops
from tilegrad.passes.interchange_column_reductions import InterchangeColumnReductions
from tilegrad.passes.jam_row_sweeps import JamRowSweeps
from tilegrad.passes.jam_sweep_terms import JamSweepTerms
from tilegrad.passes.lower_tg_to_loops import LowerTgToLoops
from tilegrad.passes.lower_to_llvm import LowerToLLVM, argument_layout, element_bytes, guard_messages
from tilegrad.passes.outline_sibling_nests import OutlineSiblingNests
from tilegrad.passes.overlap_vector_tails import OverlapVectorTails
from tilegrad.passes.pack_reused_panels import PackReusedPanels, packed_panels
from tilegrad.passes.partition_clamped_loops import PartitionClampedLoops
from tilegrad.passes.reorder_for_reuse import ReorderForReuse
from tilegrad.passes.separate_strided_load_groups import SeparateStridedLoadGroups
from tilegrad.passes.split_column_reductions import SplitColumnReductions
from tilegrad.passes.split_stride_phases import SplitStridePhases
from tilegrad.passes.stream_stores import StreamStores, streamed_outputs
from tilegrad.passes.tile_for_target import TileForTarget, tiling_plan
from tilegrad.passes.tiling_plan import TilingPlan, panel_bytes
from tilegrad.schedule import ScheduleHint
from tilegrad.passes.unroll_reuse_loops import UnrollReuseLoops, reuse_unroll
from tilegrad.passes.unroll_short_parallel_loops import UnrollShortParallelLoops
from tilegrad.passes.unroll_short_reductions import UnrollShortReductions
from tilegrad.passes.unswitch_invariant_selects import UnswitchInvariantSelects
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


VERIFY_EACH_PASS = os.environ.get("TILEGRAD_VERIFY_EACH_PASS", "0") not in ("", "0")
"""Verify the module after every pass (to find the pass that broke it), not only at the end of the
op and loops stages: a debugging switch (the test suite sets it), it costs a third of a large op's
compile."""


def stage_passes(target: Target, num_blocks: int, hint: ScheduleHint, untiled: bool = False,
                 guard: bool = False) -> dict[str, list[ModulePass]]:
    """The passes that make each stage from the one before it, decided before any runs (a
    textual form of each list runs the same way in `tilegrad opt -p`)."""
    cpu = not target.staged
    tiled: list[ModulePass] = []
    if not untiled:
        tiled.append(ForwardStoredValues())
        if cpu:
            tiled += [SplitColumnReductions(num_blocks or target.cores), FuseSiblingLoops(exchange_loops=True)]
        tiled.append(TileForTarget.of(target, num_blocks, hint))
        if cpu:
            columns = chunk_columns(target.vector_registers)
            tiled += [InterchangeColumnReductions(), JamRowSweeps(), ChunkRowSweeps(columns),
                      PackReusedPanels(panel_bytes(target.ub_bytes), columns),
                      ReorderForReuse(target.ub_bytes // 2), DeferSumEpilogues(),
                      UnrollReuseLoops(reuse_unroll(target.vector_registers)), JamSweepTerms()]
        tiled.append(FuseSiblingReductions())
        if cpu:  # windows become straight-line code LLVM can vectorize
            tiled += [HoistTileLoops(), UnrollShortReductions(), BranchGuardedReads(), SplitStridePhases(),
                      FoldAffineTests(), PartitionClampedLoops(), UnswitchInvariantSelects(),
                      SeparateStridedLoadGroups()]
        if cpu and target.stream_store_bytes:
            tiled.append(StreamStores(target.stream_store_bytes, target.compute_bound_ops))
        if cpu:
            tiled += [OverlapVectorTails(), OutlineSiblingNests()]
    loops = [FuseElementwise(), LowerTgToLoops(), FuseSiblingLoops(), CollapseContiguousNests(),
             CollapseContiguousRows(), UnrollShortParallelLoops()]
    return {"loops": loops, "tiled": tiled, "llvm": llvm_passes(guard)}


def llvm_passes(guard: bool = False, first_code: int = 0) -> list[ModulePass]:
    """The passes before xDSL's conversion to llvmlite (then LLVM's own O3)."""
    return [UnrollShortReductions(), ExpandMath(), LowerToLLVM(guard=guard, first_code=first_code)]


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
          sum_lengths: tuple[str | None, ...] = ()) -> Lowered:
    """The op, loops and tiled stages. `override` = (stage, IR text) replaces that stage's module
    by the text (a hand-edited stage, verified when parsed) and goes on from it. A failure carries
    the stages built so far as `error.stages`. `sum_lengths`: whether each of the trace's float sums
    (`Trace.float_sums`) is short or long at the shapes the kernel is for (dsl/bounds.sum_lengths).

    The op and loops stages are verified; the tiled stage only with `verify_tiled` (the guard
    build) or TILEGRAD_VERIFY_EACH_PASS. It is the largest, and verifying it cost as much as
    lowering it to LLVM (max pooling 2-D: 0.15 s of a 1.1 s compile); its passes are verified one
    by one in the test suite, and LLVM verifies what lower-to-llvm makes of it."""
    ir: dict[str, str] = {}
    try:
        with collector_paused():
            return _lower(opdef, binding, target, num_blocks, hint, untiled, after_pass, override, ir, verify_tiled,
                          sum_lengths)
    except TilegradError as err:
        err.stages = dict(ir)
        raise


def _lower(opdef, binding, target, num_blocks, hint, untiled, after_pass, override, ir, verify_tiled,
           sum_lengths) -> Lowered:
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
    passes = stage_passes(target, num_blocks, hint, untiled)

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

    def run(stage: str) -> None:
        apply_passes(opdef.name, passes[stage], module, after_pass, verify=VERIFY_EACH_PASS)

    finish("op")
    ir["op"] = str(module)
    if after_pass is not None:
        after_pass("emit", module)
    run("loops")
    finish("loops")
    ir["loops"] = str(module)
    plan = None
    if untiled:
        num_blocks = 1
        ir["tiled"] = ir["loops"]
    else:
        run("tiled")
        plan = tiling_plan(module, keep=False)
        finish("tiled")
        plan = tiling_plan(module, keep=False) or plan  # a given tiled stage may carry its own
        if plan is not None:
            plan.streamed, plan.panels = streamed_outputs(module), packed_panels(module)
        ir["tiled"] = str(module)
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
    prior = tuple(name for name in trace.outputs if name in trace.read_buffers())
    output_forms = {name: [size_form(d) for d in buffer.shape] for name, buffer in trace.outputs.items()}
    return Lowered(module, ir, emitted.args, emitted.messages, plan, functions, layout, num_blocks, temps, prior,
                   emitted.requirements, output_forms, stack_bytes(module, opdef.name))


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
    from tilegrad.codegen.driver import driver_module
    from tilegrad.codegen.jit import PartCompiler

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
                apply_passes(name, llvm_passes(guard, first_code), module, after_pass, verify=False)
                lowered.messages.update(guard_messages(module))
                text = str(_convert(name, module))
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


def _convert(name: str, module: ModuleOp):
    """xDSL's llvm dialect as an llvmlite module, with the stores' nontemporal flags and the loops'
    vectorizer hints."""
    with compiler_step(name, "llvmlite conversion"):
        llvm_module = convert_module(module, fallback_target_triple=None)
        mark_nontemporal_stores(module, llvm_module)
        mark_loop_hints(module, llvm_module)
        for function in llvm_module.functions:
            if not function.is_declaration:
                function.attributes.add("nounwind")
        return llvm_module


def mark_nontemporal_stores(module: ModuleOp, llvm_module) -> None:
    """Give LLVM the `!nontemporal` of the llvm dialect's stores (xDSL's conversion drops it). The
    conversion makes one llvmlite store of each llvm.store, function by function in block order,
    so the n-th of each are the same store."""
    from llvmlite import ir as llvm_ir
    from xdsl.dialects import llvm

    flag = None
    for fn in module.ops:
        if not isinstance(fn, llvm.FuncOp) or not fn.body.blocks:
            continue
        ours = [op.nontemporal is not None for block in fn.body.blocks for op in block.ops
                if isinstance(op, llvm.StoreOp)]
        if not any(ours):
            continue
        converted = llvm_module.get_global(fn.sym_name.data)
        theirs = [i for block in converted.blocks for i in block.instructions if isinstance(i, llvm_ir.StoreInstr)]
        if len(theirs) != len(ours):
            raise InternalError(f"{fn.sym_name.data}: {len(ours)} stores became {len(theirs)} in the conversion")
        flag = flag or llvm_module.add_metadata([llvm_ir.Constant(llvm_ir.IntType(32), 1)])
        for streaming, store in zip(ours, theirs):
            if streaming:
                store.set_metadata("nontemporal", flag)


def mark_loop_hints(module: ModuleOp, llvm_module) -> None:
    """Give LLVM the vectorizer hints lower-to-llvm put on loops' back branches: `!llvm.loop`
    metadata, a loop id that names itself, as LLVM requires, with the interleave count
    (INTERLEAVE_COUNT) and, on a host whose wide shuffles split (jit.wide_shuffles_split), a
    vector width of 128 bits for a loop that stores interleaved phases (INTERLEAVED_STORE_BYTES).
    As with the stores, the n-th llvm.br of a function is its n-th unconditional branch."""
    from llvmlite import ir as llvm_ir
    from xdsl.dialects import llvm

    from tilegrad.codegen.jit import wide_shuffles_split
    from tilegrad.passes.lower_to_llvm import INTERLEAVE_COUNT, INTERLEAVED_STORE_BYTES

    split = wide_shuffles_split()

    def hints(op) -> dict[str, int]:
        found = {}
        if INTERLEAVE_COUNT in op.attributes:
            found["llvm.loop.interleave.count"] = op.attributes[INTERLEAVE_COUNT].value.data
        if split and INTERLEAVED_STORE_BYTES in op.attributes:  # 128 bits of the stored elements
            found["llvm.loop.vectorize.width"] = max(16 // op.attributes[INTERLEAVED_STORE_BYTES].value.data, 1)
        return found

    for fn in module.ops:
        if not isinstance(fn, llvm.FuncOp) or not fn.body.blocks:
            continue
        ours = [hints(op) for block in fn.body.blocks for op in block.ops if isinstance(op, llvm.BrOp)]
        if not any(ours):
            continue
        name = fn.sym_name.data
        converted = llvm_module.get_global(name)
        theirs = [i for block in converted.blocks for i in block.instructions
                  if isinstance(i, llvm_ir.Branch) and not isinstance(i, llvm_ir.ConditionalBranch)]
        if len(theirs) != len(ours):
            raise InternalError(f"{name}: {len(ours)} branches became {len(theirs)} in the conversion")
        for n, (found, branch) in enumerate(zip(ours, theirs)):
            if not found:
                continue
            nodes = [llvm_module.add_metadata([llvm_ir.MetaDataString(llvm_module, hint),
                                               llvm_ir.Constant(llvm_ir.IntType(32), value)])
                     for hint, value in found.items()]
            loop = llvm_module.add_metadata([llvm_ir.MetaDataString(llvm_module, f"{name} loop {n}"), *nodes])
            loop.operands = (loop, *nodes)  # (made unique by its name first: add_metadata shares equal nodes)
            branch.set_metadata("llvm.loop", loop)


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


def apply_passes(op: str, passes, module: ModuleOp, after_pass: AfterPass | None, verify: bool) -> None:
    """Run the passes in order, each failure an InternalError naming its pass spec; `verify` checks
    the module after each; `after_pass(spec, module)` sees each result."""
    ctx = make_context()
    for step in passes:
        spec = str(step.pipeline_pass_spec())
        with compiler_step(op, spec):
            step.apply(ctx, module)
            if verify:
                module.verify()
        if after_pass is not None:
            after_pass(spec, module)
