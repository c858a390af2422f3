"""The compile cache: in memory, and on disk with every stage's IR (like Triton's cache dir).

Key: the op's source, the specialization, the target's data, the block count, the schedule hint
and a hash of tilegrad's own source and its dependencies' versions. Each entry is a directory
`<key>/` holding `op.mlir`, `loops.mlir`, `tiled.mlir`, `llvm.ll` and `meta.json`, so a user can
read any stage of any kernel that ran, cache hit or not. `TILEGRAD_CACHE_DIR` moves it,
`TILEGRAD_CACHE=0` turns the disk cache off (always recompile).
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from pathlib import Path

FILES = {"op": "op.mlir", "loops": "loops.mlir", "tiled": "tiled.mlir", "llvm": "llvm.ll", "asm": "asm.s"}


def cache_dir() -> Path:
    return Path(os.environ.get("TILEGRAD_CACHE_DIR", Path.home() / ".cache" / "tilegrad"))


def disk_enabled() -> bool:
    return os.environ.get("TILEGRAD_CACHE", "1") != "0"


@cache
def compiler_fingerprint() -> str:
    import llvmlite
    import xdsl

    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for path in sorted(root.rglob("*.py")):
        if "opdefs" in path.parts:
            continue  # an op's own source is part of its key
        digest.update(path.read_bytes())
    digest.update(f"{getattr(xdsl, '__version__', '')}{llvmlite.__version__}".encode())
    return digest.hexdigest()


def make_key(*parts: object) -> str:
    digest = hashlib.sha256(compiler_fingerprint().encode())
    for part in parts:
        digest.update(repr(part).encode())
    return digest.hexdigest()[:32]


def load(key: str) -> tuple[dict[str, str], dict] | None:
    if not disk_enabled():
        return None
    entry = cache_dir() / key
    try:
        meta = json.loads((entry / "meta.json").read_text())
        ir = {stage: (entry / name).read_text() for stage, name in FILES.items() if (entry / name).exists()}
    except (OSError, ValueError):
        return None
    return ir, meta


def store(key: str, ir: dict[str, str], meta: dict) -> Path | None:
    if not disk_enabled():
        return None
    entry = cache_dir() / key
    try:
        entry.mkdir(parents=True, exist_ok=True)
        for stage, text in ir.items():
            (entry / FILES[stage]).write_text(text)
        tmp = entry / "meta.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1))
        tmp.replace(entry / "meta.json")  # meta last: an entry with meta is complete
    except OSError:
        return None
    return entry
