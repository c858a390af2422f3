"""The pipeline, stage by stage: op -> loops -> tiled -> llvm -> asm, verifying after each.

    trace the opdef -> emit tg IR ("op") -> lower-tg-to-loops ("loops")
    -> tile-for-target ("tiled") -> lower-to-llvm, llvmlite, O3 ("llvm") -> MCJIT (+ "asm")
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects.builtin import ModuleOp, f64
from xdsl.passes import ModulePass

from tilegrad.call_path import unit_inner_stride
from tilegrad.dialect import make_context
from tilegrad.dsl.bounds import size_form
from tilegrad.dsl.emit import KernelArg, emit_op
from tilegrad.dsl.opdef import Binding, OpDef
from tilegrad.dsl.tensor import TensorArg
from tilegrad.errors import InternalError, TilegradError
from tilegrad.passes.common import arg_info
from tilegrad.passes.expand_math import ExpandMath
from tilegrad.passes.fuse_elementwise import FuseElementwise
from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops
from tilegrad.passes.fuse_sibling_reductions import FuseSiblingReductions
from tilegrad.passes.interchange_column_reductions import InterchangeColumnReductions
from tilegrad.passes.lower_tg_to_loops import LowerTgToLoops
from tilegrad.passes.lower_to_llvm import LowerToLLVM, argument_layout, guard_messages
from tilegrad.passes.partition_clamped_loops import PartitionClampedLoops
from tilegrad.passes.reorder_for_reuse import ReorderForReuse
from tilegrad.passes.split_column_reductions import SplitColumnReductions
from tilegrad.passes.split_stride_phases import SplitStridePhases
from tilegrad.passes.tile_for_target import TileForTarget, tiling_plan
from tilegrad.passes.tiling_plan import ScheduleHint, TilingPlan
from tilegrad.passes.unroll_reuse_loops import UnrollReuseLoops
from tilegrad.passes.unroll_short_reductions import UnrollShortReductions
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


VERIFY_EACH_PASS = os.environ.get("TILEGRAD_VERIFY_EACH_PASS", "0") not in ("", "0")
"""Verify the module after every pass (to find the pass that broke it), not only at the end of each
printed stage: a debugging switch, it costs a third of a large op's compile."""


def lower(opdef: OpDef, binding: Binding, target: Target, num_blocks: int, hint: ScheduleHint,
          untiled: bool = False) -> Lowered:
    trace = opdef.trace(binding)
    inputs = {n: TensorArg(n, a.ndim, binding.dtypes[n]) if a is not None else None
              for n, a in binding.tensors.items()}
    unit = {n: unit_inner_stride(a) for n, a in binding.tensors.items() if a is not None}
    params = {n: opdef.attrs[n].kind for n in binding.runtime_attrs}
    with compiler_step(opdef.name, "emit"):
        emitted = emit_op(opdef.name, trace, inputs, unit, params, opdef.shared_dims(binding))
    module = emitted.module
    ctx = make_context()
    with compiler_step(opdef.name, "verify (op stage)"):
        module.verify()
    ir = {"op": str(module)}

    def run(*steps: ModulePass, name: str | None = None) -> None:
        for step in steps:
            with compiler_step(opdef.name, name or step.name):
                step.apply(ctx, module)
                if VERIFY_EACH_PASS:
                    module.verify()

    run(FuseElementwise(), LowerTgToLoops(), FuseSiblingLoops())
    with compiler_step(opdef.name, "verify (loops stage)"):
        module.verify()
    ir["loops"] = str(module)
    plan = None
    if untiled:
        num_blocks = 1
        ir["tiled"] = ir["loops"]
    else:
        if not target.staged:
            run(SplitColumnReductions(num_blocks or target.cores), FuseSiblingLoops())
        tiler = TileForTarget.of(target, num_blocks, hint)
        run(tiler, name=f"{tiler.name} for {target.name}")
        if not target.staged:
            run(InterchangeColumnReductions(), ReorderForReuse(target.ub_bytes // 2), UnrollReuseLoops())
        run(FuseSiblingReductions())
        if not target.staged:  # windows become straight-line code LLVM can vectorize
            run(UnrollShortReductions(), SplitStridePhases(), PartitionClampedLoops())
        with compiler_step(opdef.name, "verify (tiled stage)"):
            module.verify()
        plan = tiling_plan(module, keep=False)
        ir["tiled"] = str(module)
    functions = [f.sym_name.data for f in module.ops]
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
                   emitted.requirements, output_forms)


def to_llvm(lowered: Lowered, guard: bool = False) -> str:
    """unroll-short-reductions, expand-math and lower-to-llvm, then xDSL's llvmlite conversion and
    LLVM's O3 for this host. With `guard`, every access is bounds-checked (at O1); the report codes
    join `lowered.messages`."""
    from tilegrad.codegen.driver import add_driver
    from tilegrad.codegen.jit import optimize

    ctx = make_context()
    name = lowered.module.ops.first.sym_name.data
    with compiler_step(name, "unroll-short-reductions"):
        UnrollShortReductions().apply(ctx, lowered.module)
    with compiler_step(name, "expand-math"):
        ExpandMath().apply(ctx, lowered.module)
    with compiler_step(name, "lower-to-llvm"):
        LowerToLLVM(guard=guard).apply(ctx, lowered.module)  # LLVM verifies what this produces when it parses it
    lowered.messages.update(guard_messages(lowered.module))
    with compiler_step(name, "llvmlite conversion and O3"):
        llvm_module = convert_module(lowered.module, fallback_target_triple=None)
        for function in llvm_module.functions:
            if not function.is_declaration:
                function.attributes.add("nounwind")
        add_driver(llvm_module, lowered.functions)
        return optimize(str(llvm_module), speed_level=1 if guard else 3)  # a guard build checks, it need not be fast


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
