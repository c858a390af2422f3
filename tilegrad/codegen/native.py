"""Compiled kernels as shared objects: linked once by the system linker, loaded with ctypes.

The JIT (jit.py) emits position-independent object code; `link` turns it into a shared object,
which is what the disk cache keeps. `load` opens one with the dynamic loader: a cache hit in a new
process runs no LLVM pass and imports neither llvmlite nor xDSL (a few milliseconds per kernel).
Each kernel is opened privately (RTLD_LOCAL) and binds its own calls (-Bsymbolic), so kernels whose
functions share names (every driver is `tilegrad_run`) never see each other's; the math library
the kernels call (expf, ...) is opened into the global scope first.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from functools import cache

from tilegrad.errors import InternalError, UnsupportedError


@cache
def _linker() -> str:
    linker = shutil.which("ld")
    if linker is None:
        raise UnsupportedError("tilegrad links every kernel with the system linker, and this machine has no `ld` "
                               "on PATH (install binutils)")
    return linker


def link(*object_codes: bytes) -> bytes:
    """A shared object holding one kernel module's object code (one object per part it was
    compiled in, codegen/jit.py)."""
    with tempfile.TemporaryDirectory(prefix="tilegrad-link-") as directory:
        sources = [os.path.join(directory, f"part{number}.o") for number in range(len(object_codes))]
        for source, code in zip(sources, object_codes):
            with open(source, "wb") as f:
                f.write(code)
        target = os.path.join(directory, "kernel.so")
        done = subprocess.run([_linker(), "-shared", "-Bsymbolic", "-z", "noexecstack", "-o", target, *sources],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise InternalError(f"the linker refused a kernel's object code: {done.stderr.strip()}")
        with open(target, "rb") as f:
            return f.read()


@cache
def _math_library() -> None:
    for name in ("libm.so.6", "libm.so"):
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            return
        except OSError:
            continue


class SharedModule:
    """A loaded kernel module; `function(name, signature)` gives a ctypes callable."""

    def __init__(self, shared_object: bytes):
        _math_library()
        descriptor, path = tempfile.mkstemp(prefix="tilegrad-", suffix=".so")
        try:
            with os.fdopen(descriptor, "wb") as f:
                f.write(shared_object)
            self.library = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        finally:
            os.unlink(path)  # the loader keeps its mapping

    def function(self, name: str, signature):
        try:
            symbol = self.library[name]
        except AttributeError:
            raise KeyError(f"no function {name} in the kernel module") from None
        return signature(ctypes.cast(symbol, ctypes.c_void_p).value)


def load(shared_object: bytes) -> SharedModule:
    """Open a shared object from link() (this process's or an earlier one's, from the disk cache)."""
    return SharedModule(shared_object)
