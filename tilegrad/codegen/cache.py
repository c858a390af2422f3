"""The compile cache: in memory, and on disk with every stage's IR (like Triton's cache dir).

Key: the code of the op and of every function it calls (transitively, across modules), the
specialization, the target's data, the block count, the schedule hint, and a hash of tilegrad's
own source and its dependencies' versions. Each entry is a directory `<key>/` holding
`op.mlir`, `loops.mlir`, `tiled.mlir`, `llvm.ll` and `meta.json`, so a user can read any stage
of any kernel that ran, cache hit or not.

Guarantees: `meta.json` carries a SHA-256 of every file and of itself, so a truncated, corrupt or
edited entry is detected, removed and rebuilt; an entry is written in a private directory and
published with one atomic rename, so a reader never sees a half-written entry and two writers of
one key never mix their files. An unwritable cache directory falls back to memory with one
warning. `TILEGRAD_CACHE_MAX_MB` caps the size, evicting the least recently used entries.
`TILEGRAD_CACHE_DIR` moves it, `TILEGRAD_CACHE=0` turns the disk cache off.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import shutil
import sys
import types
import uuid
import warnings
from functools import cache
from pathlib import Path

FILES = {"op": "op.mlir", "loops": "loops.mlir", "tiled": "tiled.mlir", "llvm": "llvm.ll", "asm": "asm.s",
         "object": "kernel.so"}
"""Every stage's IR as text; `object` is the machine code (a shared object) a hit loads without compiling."""
FORMAT = 4
_warned: set[str] = set()


def cache_dir() -> Path:
    return Path(os.environ.get("TILEGRAD_CACHE_DIR", Path.home() / ".cache" / "tilegrad"))


def disk_enabled() -> bool:
    return os.environ.get("TILEGRAD_CACHE", "1") != "0"


def _source_digest() -> str:
    """tilegrad's own source as this process imported it: read at import time, so a process never
    shares keys with source edited after it started."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for path in sorted(root.rglob("*.py")):
        if "opdefs" in path.parts:
            continue  # an op's own code is part of its key
        digest.update(path.read_bytes())
    return digest.hexdigest()


_SOURCE_DIGEST = _source_digest()


@cache
def compiler_fingerprint() -> str:
    """tilegrad's source, its compilers' versions and the host CPU the machine code is built for
    (a cache directory shared between machines never hands one the other's instructions)."""
    versions = f"{FORMAT}{_installed('xdsl')}{_installed('llvmlite')}{_host_cpu()}"
    return hashlib.sha256(f"{_SOURCE_DIGEST}{versions}".encode()).hexdigest()


def _host_cpu() -> str:
    """The machine and its CPU's model and feature flags (what LLVM's host CPU and features are
    read from), without loading LLVM: a hit must not pay for llvmlite's import."""
    description = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n", 1)[0]
    except OSError:
        return f"{description} {platform.processor()}"
    wanted = ("vendor_id", "cpu family", "model", "model name", "flags", "features", "cpu part", "isa")
    return description + "".join(line for line in first.splitlines() if line.split(":")[0].strip() in wanted)


def _installed(package: str) -> str:
    """The installed distribution's name and version (its dist-info folder), found without importing
    the package or importlib.metadata (tens of milliseconds a cache hit need not pay)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        return f"{package}-missing"
    site = Path(spec.origin).parent.parent
    found = sorted(p.name for p in site.glob(f"{package}-*.dist-info"))
    return ",".join(found) or str(Path(spec.origin).parent)


# ---- what an op's code depends on ------------------------------------------------------------

_LIBRARY_ROOTS = {"numpy", "xdsl", "llvmlite", "ml_dtypes", "torch", "builtins"}


def _is_user_code(module_name: str | None) -> bool:
    """Code whose change must change the key: the op library and user modules (tilegrad's own
    compiler is in the compiler fingerprint, libraries in their versions)."""
    if not module_name:
        return True
    root = module_name.split(".")[0]
    if root == "tilegrad":
        return module_name.startswith("tilegrad.opdefs")
    return root not in _LIBRARY_ROOTS and root not in sys.stdlib_module_names


def code_fingerprint(*functions) -> str:
    """A hash of these functions' code and of every user function they reach through globals,
    module attributes, closures, defaults and nested code (lambdas), transitively."""
    digest = hashlib.sha256()
    seen: set[int] = set()
    pending = list(functions)
    while pending:
        fn = pending.pop()
        fn = getattr(fn, "__func__", fn)
        if not isinstance(fn, types.FunctionType) or id(fn) in seen or not _is_user_code(fn.__module__):
            continue
        seen.add(id(fn))
        digest.update(f"{fn.__module__}.{fn.__qualname__}".encode())
        _hash_code(fn.__code__, digest)
        pending += [d for d in (fn.__defaults__ or ()) + tuple((fn.__kwdefaults__ or {}).values()) if callable(d)]
        pending += [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
        names = sorted(_names(fn.__code__))  # a set's order changes with each process's hash seed
        for name in names:
            value = fn.__globals__.get(name)
            if isinstance(value, types.ModuleType):
                pending += [getattr(value, attr) for attr in names if hasattr(value, attr)]
            elif value is not None:
                pending.append(value)
    return digest.hexdigest()


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _hash_code(code: types.CodeType, digest) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _hash_code(const, digest)
        else:
            digest.update(repr(const).encode())


def make_key(*parts: object) -> str:
    digest = hashlib.sha256(compiler_fingerprint().encode())
    for part in parts:
        digest.update(repr(part).encode())
    return digest.hexdigest()[:32]


# ---- entries ---------------------------------------------------------------------------------

def _sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _sealed(meta: dict, files: dict[str, str]) -> str:
    body = {"format": FORMAT, "meta": meta, "files": files}
    return json.dumps({**body, "digest": _sha(json.dumps(body, sort_keys=True))}, indent=1, sort_keys=True)


def load(key: str) -> tuple[dict[str, str | bytes], dict] | None:
    """The entry's files (IR text per stage, the object as bytes) and meta if it is complete and
    intact; a damaged entry is removed."""
    if not disk_enabled():
        return None
    entry = cache_dir() / key
    try:
        sealed = json.loads((entry / "meta.json").read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        _discard(entry)
        return None
    try:
        body = {k: sealed[k] for k in ("format", "meta", "files")}
        if sealed["digest"] != _sha(json.dumps(body, sort_keys=True)) or body["format"] != FORMAT:
            raise ValueError("digest")
        ir = {}
        for stage, digest in body["files"].items():
            path = entry / FILES[stage]
            text = path.read_bytes() if stage == "object" else path.read_text()
            if _sha(text) != digest:
                raise ValueError(stage)
            ir[stage] = text
    except (OSError, ValueError, KeyError, TypeError):
        _discard(entry)
        return None
    try:
        os.utime(entry / "meta.json")  # recency, for eviction
    except OSError:
        pass
    return ir, body["meta"]


def store(key: str, ir: dict[str, str | bytes], meta: dict) -> Path | None:
    """Write the entry privately, then publish it with one rename (first writer wins)."""
    if not disk_enabled():
        return None
    root = cache_dir()
    entry = root / key
    staging = root / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        staging.mkdir(parents=True)
        for stage, text in ir.items():
            path = staging / FILES[stage]
            path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
        (staging / "meta.json").write_text(_sealed(meta, {stage: _sha(text) for stage, text in ir.items()}))
        try:
            os.rename(staging, entry)
        except OSError:  # another writer published this key first, or a damaged entry is in the way
            if load(key) is None:
                _discard(entry)
                os.rename(staging, entry)
            else:
                shutil.rmtree(staging, ignore_errors=True)
    except OSError as err:
        shutil.rmtree(staging, ignore_errors=True)
        _warn_once(root, err)
        return None
    _evict(root)
    return entry


def discard(key: str) -> None:
    """Remove an entry (one that loaded but does not fit what it is keyed by)."""
    _discard(cache_dir() / key)


def _discard(entry: Path) -> None:
    """Remove an entry without a reader ever seeing it half-deleted: rename it away first."""
    trash = entry.with_name(f".trash.{entry.name}.{uuid.uuid4().hex[:8]}")
    try:
        os.rename(entry, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def _warn_once(root: Path, err: OSError) -> None:
    if str(root) not in _warned:
        _warned.add(str(root))
        warnings.warn(f"tilegrad: cannot write the compile cache at {root} ({err.strerror or err}); "
                      f"kernels are cached in memory only", RuntimeWarning, stacklevel=4)


def _evict(root: Path) -> None:
    limit = os.environ.get("TILEGRAD_CACHE_MAX_MB")
    if not limit:
        return
    budget = float(limit) * (1 << 20)
    entries = []
    for entry in root.iterdir():
        if entry.name.startswith("."):
            continue
        try:
            size = sum(f.stat().st_size for f in entry.iterdir())
            entries.append(((entry / "meta.json").stat().st_mtime, size, entry))
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total <= budget:
            break
        _discard(entry)
        total -= size
