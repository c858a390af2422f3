"""llvmlite: optimize a module at O3 for the host CPU and JIT it with MCJIT."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache

import llvmlite.binding as llb

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
def host_description() -> str:
    """The triple, CPU and features code is generated for."""
    _initialize()
    return f"{llb.get_default_triple()} {llb.get_host_cpu_name()} {llb.get_host_cpu_features().flatten()}"


def new_target_machine() -> llb.TargetMachine:
    """A target machine for this host (an MCJIT engine takes ownership of the one it gets)."""
    _initialize()
    target = llb.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llb.get_host_cpu_name(), features=llb.get_host_cpu_features().flatten() + ",-prefer-256-bit", opt=3,
        codemodel="jitdefault",
    )


@cache
def host_target_machine() -> llb.TargetMachine:
    """The shared target machine for optimizing and printing assembly (never given to an engine)."""
    return new_target_machine()


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
    return host_target_machine().emit_assembly(module)


@dataclass
class JitModule:
    """Compiled code kept alive with its engine; `function(name, signature)` gives a ctypes callable."""

    engine: object
    module: object

    def function(self, name: str, signature):
        address = self.engine.get_function_address(name)
        if not address:
            raise KeyError(f"no function {name} in the JIT module")
        return signature(address)


def jit(optimized_ir: str) -> tuple[JitModule, bytes]:
    """Compile optimized IR to machine code and load it; also the object code MCJIT produced, for
    the disk cache (load_object loads it in another process without compiling)."""
    _initialize()
    objects: list[bytes] = []
    with _lock:
        module = llb.parse_assembly(optimized_ir)
        engine = llb.create_mcjit_compiler(module, new_target_machine())
        engine.set_object_cache(notify_func=lambda _module, data: objects.append(bytes(data)))
        engine.finalize_object()
        engine.run_static_constructors()
    return JitModule(engine, module), objects[0]


def load_object(object_code: bytes) -> JitModule:
    """Load object code from jit() into a new engine: no LLVM optimization or code generation."""
    _initialize()
    with _lock:
        module = llb.parse_assembly("")
        engine = llb.create_mcjit_compiler(module, new_target_machine())
        engine.add_object_file(llb.ObjectFileRef.from_data(object_code))
        engine.finalize_object()
    return JitModule(engine, module)

