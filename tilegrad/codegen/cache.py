"""The compile cache: in memory, and on disk with every stage's IR (like Triton's cache dir).

Key: the code of the op and of every function it calls (transitively, across modules), the
specialization, the target's data, the block count, the schedule hint, and a hash of tilegrad's
own source and its dependencies' versions. Each entry is a directory `<key>/` holding `llvm.ll`,
the machine code `kernel.so` and `meta.json`, and `op.mlir`, `loops.mlir` and `tiled.mlir` where
the kernel was built for them (`tilegrad show`, `Kernel.ir`): a kernel built for a call does not
print its stages up to tiled (a fifth of a cold compile); `Kernel.ir` prints them when asked.

Guarantees: `meta.json` names its key and carries a SHA-256 of every file and of itself, so a
truncated, corrupt or edited entry, or one copied under another key, is detected, removed and
rebuilt; an entry is written in a private directory and published with one atomic rename, so a
reader never sees a half-written entry and two writers of one key never mix their files; the
staging directories of killed writers are collected. Only regular files of at most
MAX_FILE_BYTES (256 MiB) are read, opened without following links or waiting, so a FIFO or a link
to a device in an entry never blocks a reader or fills its memory. Trust: the cache runs the machine
code it finds, so it is used only if no one but its owner, this user, can write it (nor swap a
directory above it); otherwise, and when it is unwritable, kernels are cached in memory with one
warning. `TILEGRAD_CACHE_MAX_MB` caps the size, evicting the least recently used entries (a value
that is not a finite number >= 0 is ignored with one warning; 0 keeps nothing on disk).
`TILEGRAD_CACHE_DIR` moves it, `TILEGRAD_CACHE=0` turns the disk cache off."""

from __future__ import annotations

import dataclasses
import functools
import grp
import hashlib
import importlib.util
import json
import math
import os
import platform
import pwd
import re
import shutil
import stat
import sys
import time
import types
import uuid
import warnings
from functools import cache
from pathlib import Path

FILES = {"op": "op.mlir", "loops": "loops.mlir", "tiled": "tiled.mlir", "llvm": "llvm.ll", "asm": "asm.s",
         "object": "kernel.so"}
"""Every stage's IR as text; `object` is the machine code (a shared object) a hit loads without compiling."""
FORMAT = 5
MAX_FILE_BYTES = 256 << 20
"""The largest file an entry may hold, far above any kernel's object or IR text: a larger one is damage."""
_warned: set[str] = set()


def cache_dir() -> Path:
    return Path(os.environ.get("TILEGRAD_CACHE_DIR", Path.home() / ".cache" / "tilegrad"))


def disk_enabled() -> bool:
    return os.environ.get("TILEGRAD_CACHE", "1") != "0" and _max_bytes() != 0


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
    module attributes, closures, defaults and nested code (lambdas), transitively, and of every
    value they read there: a module constant, a closure's number or a default changes what an op
    traces to as surely as its code does (a loop bound read from a global, say)."""
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
        defaults = (fn.__defaults__ or ()) + tuple((fn.__kwdefaults__ or {}).values())
        cells = [c.cell_contents if _filled(c) else _EMPTY_CELL for c in fn.__closure__ or ()]
        for value in (*defaults, *cells):
            _hash_value(value, digest, pending)
        names = sorted(_names(fn.__code__))  # a set's order changes with each process's hash seed
        for name in names:
            if name not in fn.__globals__:
                continue
            value = fn.__globals__[name]
            digest.update(f"global {name}=".encode())
            if isinstance(value, types.ModuleType):
                digest.update(value.__name__.encode())
                if _is_user_code(value.__name__):
                    for attr in names:
                        if hasattr(value, attr):
                            digest.update(f".{attr}=".encode())
                            _hash_value(getattr(value, attr), digest, pending)
                else:
                    pending += [getattr(value, attr) for attr in names if hasattr(value, attr)]
            else:
                _hash_value(value, digest, pending)
    return digest.hexdigest()


_EMPTY_CELL = object()
_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def _hash_value(value, digest, pending: list, depth: int = 0) -> None:
    """Hash a value an op's code reads: plain values and containers by content, numpy data by its
    bytes, functions by their code (queued), user classes and objects by their attributes. What
    cannot be told by content (an object whose repr is its address) is keyed by its identity, so
    its kernel is never shared with another process (a miss, never a stale hit)."""
    kind = type(value)
    digest.update(f"<{kind.__module__}.{kind.__qualname__}>".encode())
    if value is _EMPTY_CELL or isinstance(value, _PLAIN):
        digest.update(repr(value).encode())
    elif isinstance(value, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        pending.append(value)
        digest.update(f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}".encode())
    elif isinstance(value, types.ModuleType):
        digest.update(value.__name__.encode())
    elif depth > 8:
        digest.update(f"deep@{id(value)}".encode())
    elif isinstance(value, (tuple, list)):
        digest.update(str(len(value)).encode())
        for item in value:
            _hash_value(item, digest, pending, depth + 1)
    elif isinstance(value, (set, frozenset)):
        digest.update("".join(sorted(repr(item) for item in value)).encode())
    elif isinstance(value, dict):
        for key, item in value.items():
            digest.update(repr(key).encode())
            _hash_value(item, digest, pending, depth + 1)
    elif _is_numpy(value):
        digest.update(f"{value.dtype}{getattr(value, 'shape', ())}".encode())
        digest.update(value.tobytes() if getattr(value, "nbytes", 0) <= 1 << 24 else f"@{id(value)}".encode())
    elif isinstance(value, functools.partial):
        pending.append(value.func)
        _hash_value((value.func, value.args, value.keywords), digest, pending, depth + 1)
    elif isinstance(value, type):
        if _is_user_code(value.__module__):
            _hash_value({k: v for k, v in vars(value).items() if not k.startswith("__")}, digest, pending, depth + 1)
        else:
            digest.update(f"{value.__module__}.{value.__qualname__}".encode())
    elif dataclasses.is_dataclass(value):  # (a tensor spec holds its view function)
        _hash_value({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, digest, pending, depth + 1)
    elif _is_user_code(kind.__module__) and hasattr(value, "__dict__"):
        _hash_value(vars(value), digest, pending, depth + 1)
    else:
        text = repr(value)
        digest.update((text if " at 0x" not in text else f"{text}@{id(value)}@{os.getpid()}").encode())


def _is_numpy(value) -> bool:
    kind = type(value)
    return kind.__module__ == "numpy" and hasattr(value, "dtype") and hasattr(value, "tobytes")


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


# ---- the directory: who may write it ---------------------------------------------------------

def _trusted_root(create: bool) -> Path | None:
    """The cache directory, if no one but this user can write it (whoever can write it runs code in
    every process that loads a kernel from it); else None, with one warning. A directory that does
    not exist is made (mode 0o700) when `create`, and is a quiet miss otherwise."""
    root = cache_dir()
    try:
        if create:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
        reason = _distrust(root)
    except OSError as err:
        if create:
            _warn_unwritable(root, err)
        return None
    if reason is not None:
        _warn_once(str(root), f"tilegrad: the compile cache at {root} is not used: {reason}, and whoever can write "
                              f"it runs code in every process that loads a kernel from it; kernels are cached in "
                              f"memory only (`chmod go-w` it, or set TILEGRAD_CACHE_DIR)")
        return None
    return root


def _distrust(root: Path) -> str | None:
    """Why another user could change what the cache holds, or None: the directory must be this user's
    and writable by no one else, and every directory above it (the link's and the target's, if it is
    a link) owned by root or this user and writable by others only if sticky (as /tmp is), so no one
    can put another directory in its place (OpenSSH's rule for ~/.ssh)."""
    uid = os.geteuid()
    info = os.stat(root)
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if info.st_uid != uid:
        return f"it is owned by uid {info.st_uid}, not by this user (uid {uid})"
    if _writable_by_others(info, uid):
        return f"it is writable by other users (mode {stat.filemode(info.st_mode)})"
    for parent in {*Path(os.path.abspath(root)).parents, *Path(os.path.realpath(root)).parents}:
        info = os.stat(parent)
        if info.st_uid not in (0, uid):
            return f"its parent {parent} is owned by uid {info.st_uid}, not by root or this user (uid {uid})"
        if _writable_by_others(info, uid) and not info.st_mode & stat.S_ISVTX:
            return f"its parent {parent} is writable by other users (mode {stat.filemode(info.st_mode)})"
    return None


def _writable_by_others(info: os.stat_result, uid: int) -> bool:
    """World-writable, or group-writable for a group someone else is in (a user's private group, as a
    umask of 002 expects, grants no one else)."""
    return bool(info.st_mode & stat.S_IWOTH) or bool(info.st_mode & stat.S_IWGRP) and not _private_group(
        info.st_gid, uid)


@cache
def _private_group(gid: int, uid: int) -> bool:
    """Whether this user is the group's only member, as a primary group or a listed one."""
    try:
        group, user = grp.getgrgid(gid), pwd.getpwuid(uid)
    except KeyError:
        return False
    primary = {p.pw_uid for p in pwd.getpwall() if p.pw_gid == gid}
    return primary <= {uid} and set(group.gr_mem) <= {user.pw_name} and bool(primary or group.gr_mem)


# ---- entries ---------------------------------------------------------------------------------

def _sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _sealed(key: str, meta: dict, files: dict[str, str]) -> str:
    body = {"format": FORMAT, "key": key, "meta": meta, "files": files}
    return json.dumps({**body, "digest": _sha(json.dumps(body, sort_keys=True))}, indent=1, sort_keys=True)


def load(key: str) -> tuple[dict[str, str | bytes], dict] | None:
    """The entry's files (IR text per stage, the object as bytes) and meta if it is complete, intact,
    this user's and sealed under this key; a damaged, foreign or renamed entry is removed."""
    if not disk_enabled():
        return None
    root = _trusted_root(create=False)
    if root is None:
        return None
    entry = root / key
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:  # a link or a file in the entry's place
        _discard(entry)
        return None
    try:
        return _read_entry(fd, key)
    except FileNotFoundError:  # no meta.json: damage a store of this key replaces, or a discard under way
        return None
    except (OSError, ValueError, KeyError, TypeError):
        _discard(entry)
        return None
    finally:
        os.close(fd)


def _read_entry(fd: int, key: str) -> tuple[dict[str, str | bytes], dict]:
    if _foreign(os.fstat(fd)):
        raise ValueError("the entry is not this user's alone")
    sealed = json.loads(_read_file(fd, "meta.json"))
    body = {k: sealed[k] for k in ("format", "key", "meta", "files")}
    if sealed["digest"] != _sha(json.dumps(body, sort_keys=True)) or body["format"] != FORMAT:
        raise ValueError("digest")
    if body["key"] != key:
        raise ValueError("an entry sealed under another key")  # copied or renamed: it answers for another kernel
    files: dict[str, str | bytes] = {}
    for stage, digest in body["files"].items():
        data = _read_file(fd, FILES[stage])
        if _sha(data) != digest:
            raise ValueError(stage)
        files[stage] = data if stage == "object" else data.decode()
    try:
        os.utime("meta.json", dir_fd=fd, follow_symlinks=False)  # recency, for eviction
    except OSError:
        pass
    return files, body["meta"]


def _read_file(dir_fd: int, name: str) -> bytes:
    """A file of the entry, which must be a regular file of this user's of at most MAX_FILE_BYTES: a
    link (to /dev/zero, say), a FIFO or a device, which could block a reader forever or never end, is
    refused before a byte is read. The file is opened without following a link or waiting for a
    writer, and checked as opened, so nothing swapped in after a check is read."""
    if not stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
        raise ValueError(f"{name} is not a regular file")  # not even opened: opening a device can act on it
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or _foreign(info) or info.st_size > MAX_FILE_BYTES:
            raise ValueError(f"{name} is not a regular file of this user's within {MAX_FILE_BYTES} bytes")
        data = b""
        while len(data) <= info.st_size:  # one byte past the size: a file that grows is refused
            chunk = os.read(fd, info.st_size + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) != info.st_size:
        raise ValueError(f"{name} changed while read")
    return data


def _foreign(info: os.stat_result) -> bool:
    """Not made by this user's tilegrad, which writes entries 0o700 and their files 0o600."""
    return info.st_uid != os.geteuid() or bool(info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def store(key: str, ir: dict[str, str | bytes], meta: dict) -> Path | None:
    """Write the entry privately, then publish it with one rename (first writer wins)."""
    if not disk_enabled():
        return None
    root = _trusted_root(create=True)
    if root is None:
        return None
    entry = root / key
    staging = root / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        staging.mkdir(mode=0o700)
        for stage, data in ir.items():
            _write(staging / FILES[stage], data)
        _write(staging / "meta.json", _sealed(key, meta, {stage: _sha(data) for stage, data in ir.items()}))
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
        _warn_unwritable(root, err)
        return None
    _collect_stale(root)
    _evict(root)
    return entry


def _write(path: Path, data: str | bytes) -> None:
    """A new file only this user can read or write (umask aside)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def discard(key: str) -> None:
    """Remove an entry (one that loaded but does not fit what it is keyed by)."""
    _discard(cache_dir() / key)


def _discard(entry: Path) -> None:
    """Remove an entry without a reader ever seeing it half-deleted: rename it away first."""
    trash = entry.with_name(f".trash.{entry.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    try:
        os.rename(entry, trash)
    except OSError:
        return
    _remove(trash)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _warn_unwritable(root: Path, err: OSError) -> None:
    _warn_once(str(root), f"tilegrad: cannot write the compile cache at {root} ({err.strerror or err}); "
                          f"kernels are cached in memory only")


def _warn_once(tag: str, message: str) -> None:
    if tag not in _warned:
        _warned.add(tag)
        warnings.warn(message, RuntimeWarning, stacklevel=4)


# ---- what killed writers leave, and the size cap ---------------------------------------------

_LEFTOVER = re.compile(r"\.(?:trash\.)?.+\.(\d+)\.[0-9a-f]{8}")
"""A staging directory (`.<key>.<pid>.<tag>`) or an entry being removed (`.trash.<key>.<pid>.<tag>`)."""
FRESH_SECONDS = 60
"""A leftover younger than this is never collected: a writer fills its staging directory in
milliseconds, and a writer on another host or in another pid namespace has a pid this host cannot see."""
ABANDONED_SECONDS = 3600
"""A leftover older than this is collected even if its pid is alive (a pid the system gave again)."""


def _collect_stale(root: Path) -> None:
    """Remove the staging directories and half-removed entries of writers that were killed."""
    now = time.time()
    for path in root.iterdir():
        match = _LEFTOVER.fullmatch(path.name)
        if match is None:
            continue
        try:
            age = now - path.lstat().st_mtime
        except OSError:
            continue  # collected by another process
        if age > ABANDONED_SECONDS or age > FRESH_SECONDS and not _alive(int(match[1])):
            _remove(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    except OverflowError:  # no process can have this pid
        return False
    return True


def _max_bytes() -> float | None:
    """TILEGRAD_CACHE_MAX_MB in bytes, or None for no cap (unset, or refused with one warning)."""
    value = os.environ.get("TILEGRAD_CACHE_MAX_MB", "")
    if not value:
        return None
    try:
        megabytes = float(value)
    except ValueError:
        megabytes = math.nan
    if not (math.isfinite(megabytes) and megabytes >= 0):
        _warn_once(f"TILEGRAD_CACHE_MAX_MB={value}",
                   f"tilegrad: TILEGRAD_CACHE_MAX_MB={value!r} is ignored: it must be a finite number of "
                   f"megabytes >= 0 (0 keeps nothing on disk); the compile cache has no size cap")
        return None
    return megabytes * (1 << 20)


def _evict(root: Path) -> None:
    budget = _max_bytes()
    if budget is None:
        return
    entries = []
    for entry in root.iterdir():
        if entry.name.startswith("."):
            continue
        try:
            size = sum(f.lstat().st_size for f in entry.iterdir())
            entries.append(((entry / "meta.json").lstat().st_mtime, size, entry))
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total <= budget:
            break
        _discard(entry)
        total -= size
