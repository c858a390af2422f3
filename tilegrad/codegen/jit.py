"""llvmlite: optimize a module at O3 for the host CPU, emit its object code and load it (native.py)."""

from __future__ import annotations

import threading
from functools import cache

import llvmlite.binding as llb

from tilegrad.codegen import native

_lock = threading.Lock()


@cache
def _initialize() -> None:
    llb.initialize_native_target()
    llb.initialize_native_asmprinter()
    llb.initialize_native_asmparser()  # the pool's pause instruction is inline assembly
    # GVN's load PRE across loop iterations turns a value the next iteration loads again (a
    # window's neighbour) into a loop-carried phi, which the loop vectorizer then refuses
    llb.set_option("", "-enable-load-in-loop-pre=false")
    # loop strength reduction took 70% of code generation on large kernels (the sampler: 1.3 of
    # 1.8 s) and the benchmark table runs as fast without it (benchmarks/README.md)
    llb.set_option("", "-disable-lsr")


@cache
def host_target_machine() -> llb.TargetMachine:
    """The target machine for this host: position-independent code, as a shared object needs."""
    _initialize()
    target = llb.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llb.get_host_cpu_name(), features=llb.get_host_cpu_features().flatten() + ",-prefer-256-bit", opt=3,
        reloc="pic", codemodel="default",
    )


def optimize(module_ir: str, speed_level: int = 3) -> str:
    """LLVM IR text after the O3 (or `speed_level`) pipeline for this host."""
    _initialize()
    module = llb.parse_assembly(module_ir)
    module.verify()
    tm = host_target_machine()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    options = llb.create_pipeline_tuning_options(speed_level=speed_level)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_unrolling = True
    builder = llb.create_pass_builder(tm, options)
    manager = builder.getModulePassManager()
    manager.run(module, builder)
    return str(module)


def assembly(optimized_ir: str) -> str:
    module = llb.parse_assembly(optimized_ir)
    with _lock:
        return host_target_machine().emit_assembly(module)


def jit(optimized_ir: str) -> tuple[native.SharedModule, bytes]:
    """Compile optimized IR to machine code and load it; also the shared object, for the disk cache
    (native.load opens it in another process without compiling)."""
    with _lock:
        object_code = host_target_machine().emit_object(llb.parse_assembly(optimized_ir))
    shared_object = native.link(object_code)
    return native.load(shared_object), shared_object
