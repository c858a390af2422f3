"""Targets are data: cores, UB capacity and alignment, dtypes, and whether GM<->UB staging is explicit."""

import os
from dataclasses import dataclass, field

from tilegrad.dtypes import DTYPES
from tilegrad.errors import ArgumentError, AttributeValueError, UnsupportedError
from tilegrad.targets.host import HOST, cache_bytes, streaming_threshold, vector_registers

CORES_MAX = 4096
"""The most cores a target may have. The emulation runs every core's blocks in turn on this host's
threads, each with a UB of its own, and the tiler splits every loop into that many blocks: the
built-in targets have at most 64, and a GPU's SM count (132 to 144) or a DSP cluster's cores stay
far below this; more only splits work into blocks too small to tell anything about the hardware
(a call over 2**40 cores never returns)."""
UB_BYTES_MAX = 1 << 30
"""The largest UB a target may declare (1 GiB): scratchpads hold tens of KiB to a few MiB."""
STAGED_SCRATCH_MAX = 1 << 30
"""The most scratch a staged target's call may allocate: one UB of ub_bytes per core (the
built-in targets need at most 6 MiB)."""

FIELD_RANGES: dict[str, tuple[int, int, str]] = {
    "cores": (1, CORES_MAX, "each core is a block this host runs in turn, with a UB of its own"),
    "ub_bytes": (1, UB_BYTES_MAX, "a scratchpad holds KiB to MiB; each core's UB is allocated"),
    "ub_align": (1, 4096, "a power of two: buffers in UB start on multiples of it"),
    "vector_bytes": (1, 4096, "a power of two: the vector width"),
    "ub_reserve_bytes": (0, UB_BYTES_MAX, "less than ub_bytes: the part of UB a kernel may not use"),
    "stream_store_bytes": (0, 1 << 62, "0: never stream; compared with a kernel's total bytes"),
    "vector_registers": (1, 64, "register tiles grow with it: 16 with AVX2, 32 with AVX-512"),
    "compute_bound_ops": (1, 1 << 20, "float ops per element moved from which a loop keeps normal stores"),
}
"""Each numeric field's valid range [low, high] and why; Target() refuses a value outside it with
AttributeValueError (docs/targets.md lists them)."""


@dataclass(frozen=True)
class Target:
    """An accelerator (or this host) as the tiler sees it.

    `staged` targets have a scratchpad: the tiled kernel copies every tile GM->UB, computes in UB
    and copies back, and each core's UB is emulated by a scratch buffer of exactly `ub_bytes`.
    """

    name: str
    cores: int
    ub_bytes: int
    ub_align: int
    vector_bytes: int
    dtypes: tuple[str, ...]
    staged: bool
    description: str = ""
    aliases: tuple[str, ...] = ()
    ub_reserve_bytes: int = 0
    """Bytes of UB a kernel may not use (the vendor's kernel reserve)."""
    core_mask_option: bool = False
    """The target launches with a `core_mask` that picks which cores run (DSP targets)."""
    unverified: tuple[str, ...] = field(default=())
    stream_store_bytes: int = 0
    """Outputs that a stage only writes use streaming (non-temporal) stores when the kernel's
    tensors total at least this many bytes; 0: never. Only an unstaged (host) target streams."""
    vector_registers: int = 32
    """Vector registers the host target's register tiles may fill (chunk-row-sweeps)."""
    compute_bound_ops: int = 8
    """Float ops per element an innermost loop loads or stores (a float32 exp counts as its 27-op
    polynomial) from which its arithmetic, not memory, bounds it: such a loop keeps normal stores
    (stream-stores), as streaming saves memory traffic it does not wait on."""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise AttributeValueError(f"Target: name={self.name!r} must be a non-empty string")
        for name in ("staged", "core_mask_option"):
            if not isinstance(getattr(self, name), bool):
                raise AttributeValueError(f"target {self.name!r}: {name}={getattr(self, name)!r} must be True or False")
        for name, (low, high, why) in FIELD_RANGES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise AttributeValueError(f"target {self.name!r}: {name}={value!r} must be an integer "
                                          f"in [{low}, {high}] ({why})")
        for name in ("ub_align", "vector_bytes"):
            if getattr(self, name) & (getattr(self, name) - 1):
                raise AttributeValueError(f"target {self.name!r}: {name}={getattr(self, name)} must be a power of two")
        if self.ub_reserve_bytes >= self.ub_bytes:
            raise AttributeValueError(f"target {self.name!r}: ub_reserve_bytes={self.ub_reserve_bytes} leaves no UB "
                                      f"of ub_bytes={self.ub_bytes}")
        if self.staged and self.cores * self.ub_bytes > STAGED_SCRATCH_MAX:
            raise AttributeValueError(f"target {self.name!r}: cores * ub_bytes = {self.cores} * {self.ub_bytes} must "
                                      f"be at most {STAGED_SCRATCH_MAX} (1 GiB): a call of a staged target allocates "
                                      f"a scratch UB of ub_bytes for each core")
        if self.core_mask_option and self.cores > 62:
            raise AttributeValueError(f"target {self.name!r}: a core_mask covers at most 62 cores, "
                                      f"not cores={self.cores}")
        for name in ("dtypes", "aliases", "unverified"):  # a list is taken as a tuple (a Target is hashed)
            value = getattr(self, name)
            if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
                raise AttributeValueError(f"target {self.name!r}: {name}={value!r} must be a tuple of strings")
            object.__setattr__(self, name, tuple(value))
        unknown = [d for d in self.dtypes if d not in DTYPES]
        if not self.dtypes or unknown:
            raise AttributeValueError(f"target {self.name!r}: dtypes={self.dtypes!r} must name one or more of "
                                      f"{', '.join(DTYPES)}")
        if not isinstance(self.description, str):
            raise AttributeValueError(f"target {self.name!r}: description={self.description!r} must be a string")


_ALL_DTYPES = ("float64", "float32", "float16", "bfloat16")

BUILTIN_TARGETS = [
    Target("cpu", min(os.cpu_count() or 1, CORES_MAX), cache_bytes(2, 1 << 20), 64, 64, _ALL_DTYPES, staged=False,
           description="this host; tiles for cache, threads for cores", stream_store_bytes=streaming_threshold(),
           vector_registers=vector_registers(), compute_bound_ops=HOST.compute_bound_ops()),
    Target("ascend910", 32, 196608, 32, 256, ("float32", "float16"), staged=True,
           aliases=("atlas-training",), ub_reserve_bytes=16384,
           description="Atlas training series"),
    Target("ascend910b", 24, 196608, 32, 256, ("float32", "float16", "bfloat16"), staged=True,
           aliases=("atlas-a2",), ub_reserve_bytes=16384,
           description="Atlas A2 training / 800I A2 (910B1/B2), 24 cube cores (48 vector)"),
    Target("ascend310p", 8, 262144, 32, 256, ("float32", "float16"), staged=True,
           aliases=("atlas-inference",), ub_reserve_bytes=16384,
           description="Atlas inference series (310P3)"),
    Target("ft78ne", 8, 786432, 64, 64, ("float32",), staged=True, core_mask_option=True,
           description="FT78NE DSP (AM as UB)", unverified=("ub_bytes",)),
    Target("mt7004", 8, 786432, 64, 64, ("float16", "float32"), staged=True, core_mask_option=True,
           description="MT7004 DSP (AM as UB)", unverified=("ub_bytes",)),
    Target("metax-c500", 64, 65536, 64, 64, _ALL_DTYPES, staged=True,
           description="MetaX C500 GPU (mcDNN), shared memory as UB",
           unverified=("cores", "ub_bytes")),
]

_REGISTRY: dict[str, Target] = {}
_ALIASES: dict[str, str] = {}


def register_target(target: Target, replace: bool = False) -> Target:
    """Make a user-defined target available to compile(), the CLI and plans. A name or alias that
    another target already has is refused unless `replace=True`."""
    if not isinstance(target, Target):
        raise ArgumentError(f"register_target takes a tilegrad.Target, not {type(target).__name__}")
    if not replace:
        for name in (target.name, *target.aliases):
            if name in _REGISTRY or name in _ALIASES:
                raise AttributeValueError(f"target {name!r} is already registered (pass replace=True)")
    _REGISTRY[target.name] = target
    _ALIASES.pop(target.name, None)  # the name now means this target, not another's alias
    for alias in target.aliases:
        _ALIASES[alias] = target.name
    return target


for _target in BUILTIN_TARGETS:
    register_target(_target)


def get_target(name: "str | Target") -> Target:
    """The registered target of that name or alias; a Target given itself must be the registered
    one of its name (the passes look a target up by name)."""
    if isinstance(name, Target):
        if _REGISTRY.get(name.name) != name:
            state = "is not registered" if name.name not in _REGISTRY else "differs from the registered one of its name"
            raise UnsupportedError(f"target {name.name!r} {state}: tilegrad.register_target(target) first "
                                   f"(replace=True to change a registered target)")
        return name
    canonical = _ALIASES.get(name, name)
    if canonical not in _REGISTRY:
        raise UnsupportedError(
            f"unknown target {name!r}; known targets: {', '.join(list_targets())}"
        )
    return _REGISTRY[canonical]


def list_targets() -> list[str]:
    return sorted(_REGISTRY)
