"""llvmlite: optimize a module at O3 for the host CPU, emit its object code and load it (native.py)."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import llvmlite.binding as llb
from llvmlite.binding import ffi

from tilegrad.abi import thread_count
from tilegrad.codegen import native
from tilegrad.targets.host import HOST

_lock = threading.Lock()


@cache
def _initialize() -> None:
    llb.initialize_native_target()
    llb.initialize_native_asmprinter()
    llb.initialize_native_asmparser()  # the pool's pause instruction is inline assembly
    for option in HOST.llvm_options:  # (each with why and where measured: targets/host.py)
        llb.set_option("", option)


@cache
def _machine() -> dict:
    """This host's target machine options: position-independent code, as a shared object needs."""
    _initialize()
    return dict(cpu=llb.get_host_cpu_name(), features=llb.get_host_cpu_features().flatten() + ",-prefer-256-bit",
                opt=3, reloc="pic", codemodel="default")


def new_target_machine() -> llb.TargetMachine:
    """A fresh target machine for this host, with the options every kernel is compiled with."""
    options = _machine()  # (first: it registers the host target that the triple looks up)
    return llb.Target.from_default_triple().create_target_machine(**options)


def standalone_function(ir: str, name: str, restype, *argtypes):
    """`name` from LLVM IR text (one self-contained module, not a kernel) compiled for this host, as
    a ctypes function (which releases the GIL while it runs); the code lives as long as the function.
    For measurements beside the kernels, e.g. the FMA peak (tilegrad.bench.fma_peak_gflops)."""
    import ctypes

    module = llb.parse_assembly(ir)
    module.verify()
    engine = llb.create_mcjit_compiler(module, new_target_machine())
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(restype, *argtypes)(engine.get_function_address(name))
    fn.engine = engine
    return fn


@cache
def host_target_machine() -> llb.TargetMachine:
    return new_target_machine()


def optimize(module_ir: str, speed_level: int = 3) -> str:
    """LLVM IR text after the O3 (or `speed_level`) pipeline for this host."""
    return compile_parts([module_ir], speed_level)[0]


def compile_parts(texts: Sequence[str], speed_level: int = 3, emit: bool = False) -> tuple[str, list[bytes]]:
    """The modules optimized side by side (PartCompiler): one linked text, and each one's object."""
    with PartCompiler(speed_level, emit) as compiler:
        for text in texts:
            compiler.submit(text)
        return compiler.finish()


class PartCompiler:
    """LLVM modules optimized (and with `emit`, compiled to objects) as they are submitted, side by
    side on the host's cores, while the caller builds the next one: a kernel's stages call nothing
    of each other, so a module per stage loses nothing one module would have found, its largest
    stages no longer wait for each other (the fused linear CE's two GEMM stages: 0.9-1.0 s of O3
    in one module, 0.45-0.5 s in two), and lowering a stage overlaps LLVM's work on the stage
    before. `finish` links the optimized texts back into one module (the objects: the linker).
    Parts refer to each other's functions by declaration. One worker thread (TILEGRAD_NUM_THREADS=1)
    compiles each part on the calling thread as it comes."""

    def __init__(self, speed_level: int = 3, emit: bool = False):
        _machine()
        self.speed_level, self.emit = speed_level, emit
        workers = thread_count()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tilegrad-llvm") if workers > 1 \
            else None
        self._parts: list = []
        self._running = threading.Semaphore(max(workers - 1, 1))
        """Parts LLVM works on at once: one core stays the caller's while it builds parts, all of
        them are LLVM's once it waits in `finish`."""

    def submit(self, module_ir: str) -> None:
        if self._pool is None:
            self._parts.append(_compile_alone(module_ir, self.speed_level, self.emit, host_target_machine(), None))
        else:
            self._parts.append(self._pool.submit(self._compile, module_ir))

    def _compile(self, module_ir: str) -> tuple[str, bytes | None]:
        with self._running:
            return _compile_on_a_thread(module_ir, self.speed_level, self.emit)

    def finish(self) -> tuple[str, list[bytes]]:
        """The linked optimized text and (with `emit`) one object per part, in submission order."""
        self._running.release()
        done = [part if isinstance(part, tuple) else part.result() for part in self._parts]
        if len(done) == 1:
            return done[0][0], [done[0][1]] if self.emit else []
        whole = llb.parse_assembly(done[0][0])
        for text, _ in done[1:]:
            whole.link_in(llb.parse_assembly(text))
        return str(whole), [code for _, code in done] if self.emit else []

    def __enter__(self) -> PartCompiler:
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:  # (after a failure, the parts not yet started are dropped)
            self._pool.shutdown(wait=True, cancel_futures=exc[0] is not None)


def _compile_on_a_thread(module_ir: str, speed_level: int, emit: bool) -> tuple[str, bytes | None]:
    """One part in an LLVM context and target machine of its own: LLVM runs pipelines on separate
    contexts at once (llvmlite's lock, which serializes every call, is only skipped for the two
    long ones, the pass pipeline and the code generation)."""
    return _compile_alone(module_ir, speed_level, emit, new_target_machine(), llb.create_context())


def _compile_alone(module_ir: str, speed_level: int, emit: bool, tm: llb.TargetMachine,
                   context) -> tuple[str, bytes | None]:
    module = llb.parse_assembly(module_ir, context=context)
    module.verify()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    options = llb.create_pipeline_tuning_options(speed_level=speed_level)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_unrolling = True
    builder = llb.create_pass_builder(tm, options)
    manager = builder.getModulePassManager()
    _unlocked(ffi.lib.LLVMPY_RunNewModulePassManager, context)(manager, module, builder)
    text = str(module)
    if not emit:
        return text, None
    if context is None:
        with _lock:
            return text, tm.emit_object(module)
    with ffi.OutputString() as error:  # llvmlite's TargetMachine.emit_object, its long call unlocked
        buffer = _unlocked(ffi.lib.LLVMPY_TargetMachineEmitToMemory, context)(tm, module, 1, error)
        if not buffer:
            raise RuntimeError(str(error))
    try:
        return text, ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


def _unlocked(function, context):
    """The ctypes function under an llvmlite binding (ctypes releases the GIL while it runs), for
    a module in a context of its own; the binding itself where there is none or it has no such
    attribute (another llvmlite)."""
    raw = getattr(function, "_cfn", None)
    return function if context is None or raw is None else raw


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
