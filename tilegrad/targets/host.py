"""This host, as the cpu backend tunes for it: what the machine is (probed once: caches, vector
registers, whether 256-bit vectors split), and every constant measured on a host (HostModel).

A leaf of the package (standard library only): the `cpu` Target (targets/__init__.py) is built from
the probes, the cpu backend (backends/cpu/) passes HostModel's values to its passes as options, and
codegen reads its LLVM options. A pass keeps each value as its option's default (`tilegrad opt -p`
runs it alone); tests/test_backends.py checks the defaults against HostModel's.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from functools import cache


def cache_bytes(level_index: int, default: int) -> int:
    """The size of this host's cache `index<level_index>` in sysfs (2: L2 per core, 3: the L3)."""
    try:
        text = open(f"/sys/devices/system/cpu/cpu0/cache/index{level_index}/size").read().strip()
        return int(text.rstrip("KM")) * {"K": 1 << 10, "M": 1 << 20}.get(text[-1], 1)
    except (OSError, ValueError):
        return default


@cache
def cpuinfo() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo (empty where there is none): read once."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if not line.strip():
                    break  # every processor of the host has the same flags and identity
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def vector_registers() -> int:
    """The vector registers a register tile may fill: 32 with AVX-512 (even at the 256-bit width
    the code generator prefers), else 16 (AVX2)."""
    return 32 if "avx512f" in cpuinfo().get("flags", "").split() else 16


def cpu_identity() -> tuple[str, int, int]:
    """This host's vendor, family and model as /proc/cpuinfo gives them (("", 0, 0) if unknown)."""
    fields = cpuinfo()
    try:
        return fields.get("vendor_id", ""), int(fields.get("cpu family", 0)), int(fields.get("model", 0))
    except ValueError:
        return "", 0, 0


def host_splits_wide_vectors() -> bool:
    """Whether this host runs a 256-bit vector op as two 128-bit halves: AMD's Bulldozer family
    (15h), Jaguar (16h) and Zen/Zen+ (17h, models below 30h; Zen 2 is 30h and later), the cores
    LLVM calls bdver1-4, btver2 and znver1. There a shuffle across the halves (vperm2f128) is 8
    micro-ops against 1, and a vector does half the arithmetic per cycle it does elsewhere."""
    vendor, family, model = cpu_identity()
    return vendor == "AuthenticAMD" and (family in (0x15, 0x16) or family == 0x17 and model < 0x30)


def streaming_threshold() -> int:
    """A kernel whose tensors total at least the size of the last-level cache writes its outputs
    with streaming stores (glibc's memset streams above a similar size); 0 where the host has none
    the code generator uses."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return 0
    return cache_bytes(3, 32 << 20)


@dataclass(frozen=True)
class HostModel:
    """Every tuning constant of the cpu backend, each with where and how it was measured. Hosts:
    znver1 (AMD Zen, AVX2, 256-bit vectors split in halves) and znver4 (AMD Zen 4, AVX-512), 2
    threads; "A/B" means both variants side by side in one process, rotated (benchmarks/README.md).
    The probed facts (cores, caches, vector registers) are the `cpu` Target's fields; the values
    below turn them into the passes' options (chunk_columns, reuse_unroll, panel_bytes)."""

    # --- register tiles of the GEMM-like sums (jam-row-sweeps, chunk-row-sweeps, unroll-reuse-loops)
    jam_rows: int = 5
    """Rows per jammed sweep (jam-row-sweeps `rows`; chunk_columns fills the registers around them).
    This host (AMD EPYC, znver3, AVX2), 2 threads, dy @ w side by side (tests/test_gemm_forms.py
    forms; rows x columns by directives), load 2.8: 1000^3 4x16 27.6-28.9 ms, 5x16 25.6-27.0, 3x32
    24.6, 3x24 36.0, 7x8 34.0, 6x16 58.4 (spills); 2048x1024x2048 4x16 136 ms, 5x16 117, 3x32 120,
    7x8 164 (torch.mm 98); at load 6.6 (one process, 4x16 against 5x16) dx, dy.T @ x and bmm backward
    were within the noise. On znver1 4 rows of 16 columns against 8 rows of 8: 90% of numpy's
    matmul against 77-79% (G @ W and G.T @ X at 128x256x2000)."""
    chunk_lanes: int = 8
    """Columns per loop inside a chunk (chunk-row-sweeps `lanes`): a float32 vector of AVX2, which
    LLVM unrolls whole and keeps in registers; a 16-column loop stayed in memory (G @ W: 36% of
    numpy's matmul instead of 90%)."""
    reuse_unroll_max: int = 8
    """Dot products per row at most (unroll-reuse-loops `unroll`): 8 accumulators and the shared x,
    1.125 loads per FMA (4: 1.25); the fused linear CE 1.14-1.18x faster at 8 (A/B), its cold
    compile about 0.1 s longer. Reached with AVX-512's 32 registers (reuse_unroll)."""
    reuse_jam_rows: int = 2
    """Rows per sweep of the dot products (unroll-reuse-loops `jam_rows`): 16 accumulators, 0.625
    loads per FMA; x @ w.T at 128x256x2000 1.47 -> 0.93 ms A/B (numpy 1.01), 4 rows spill (2.3 ms);
    the fused linear CE 1.05x faster, its cold compile 1.6 -> 2.1 s."""
    sweep_terms: int = 8
    """Terms per pass over a sweep's stack rows (jam-sweep-terms `terms`). A C model of batch norm's
    sweep at 8192x1024 on znver1: 2.0 ms with one term, 1.7 with two, 1.6-1.75 with four (a plain
    read 1.6); znver4 A/B, batch norm forward after a linear layer: 2.86-3.00 ms with two,
    2.40-2.53 with four, 2.19-2.30 with eight; its backward 5.20-5.73 -> 4.67 ms with eight."""
    column_row: int = 512
    """Sums a stack row accumulates at once (interchange-column-reductions `row`): 2 KiB of float32,
    L1-resident; longer contiguous runs than 256 (layer norm's dγ, dβ at 4096x1024: 1.7 -> 1.3 ms)."""
    panel_bytes_max: int = 1 << 18
    """A packed panel at most (pack-reused-panels `panel_bytes`, panel_bytes): half of a 512 KiB L2;
    a larger cache gained little more. G @ W at 128x256x2000, znver1: 3.3 -> 2.45 ms packed."""
    panel_groups: int = 8
    """Row groups whose own columns are packed at once at most (pack-reused-panels, Stage `groups`):
    G.T @ X reads 4 columns of G per group, one short run from each of G's rows (a page apart at
    2048 columns); 8 groups read 128 bytes of each row per pass (2 lines). znver4, 2 threads,
    dy.T @ x at 2048x1024x2048: see docs/perf-notes.md "The transposed operand"."""
    group_alias_bytes: int = 4096
    """Only where G's rows are a multiple of this long (a page; the L1's set period) are a group's
    columns packed panel_groups at a time: there every group's short reads fall in the same cache
    sets and evict each other (2048 columns: 180 -> 115-130 ms). Elsewhere one group's panel stays
    contiguous in L1 and the wider panel's strided reads cost more (1000^3: 17 -> 21 ms)."""
    panel_once: int = 1
    """1: a row group's own panel that every column strip reads again is packed once per call into a
    workspace the size of its tensor (pack-reused-panels `once`, Stage `hoist`), where the call runs
    two strips or more; 0: packed again per strip. dy.T @ x, AMD EPYC (AVX2), 2 threads: see
    docs/perf-notes.md "The transposed operand"."""

    # --- loop shapes LLVM vectorizes well
    table_elements: int = 1024
    """Elements of a table at most (tabulate-axis-expressions `elements`, Table): 4 KiB of float32,
    an eighth of a 32 KiB L1 (a gather's few tables and its rows stay in it); the vector loop is
    strip-mined by what a table holds per tap. This host (AMD EPYC), 2 threads, side by side: flat from 256 to
    4096 (bilinear x2 backward at 16x64x256x256 214/196/204 ms; docs/perf-notes.md "Tables")."""
    table_min_ops: int = 4
    """Ops besides index arithmetic a float expression costs at least to be tabulated (a table read
    costs a load and its index): a product of two loaded values is cheaper recomputed."""
    tail_vector: int = 16
    """Iterations in overlap-vector-tails' overlapping chunk (`vector`): 16 float32 lanes, two 256-bit
    vectors. Max pooling's window scan over 28 outputs of a 56x56 plane ran 12 of them one by one."""
    arithmetic_bound: int = 8
    """Float ops per element moved from which a loop waits on its arithmetic (common.arithmetic_bound;
    lower-to-llvm `arithmetic_bound`). znver1, 32M float32: with four interleaved vectors swish
    backward 36 -> 31 ms, a tanh-GELU backward 70 -> 59; batch norm's backward with its activation
    (20 float ops, 9 loads and stores) 1.3x slower."""
    interleave_count: int = 4
    """Vectors LLVM runs side by side in such a loop (lower-to-llvm `interleave_count`); LLVM chose
    two, eight ran slower (the figures above)."""
    compute_bound_ops_split: int = 8
    """Target.compute_bound_ops of a host whose wide vectors split: on znver1 swish backward (12 float
    ops per element moved) ran faster with normal stores (32M float32, 2 threads)."""
    compute_bound_ops_whole: int = 16
    """Target.compute_bound_ops elsewhere (twice the arithmetic per cycle): on znver4 swish and
    log-softmax backward (11) ran 1.2x faster streamed, a tanh-GELU backward (22) 1.1x slower."""

    # --- streaming stores (stream-stores)
    line_bytes: int = 64
    """A cache line: a streamed run is stored a whole aligned line at a time (`line_bytes`)."""
    stream_min_lines: int = 16
    """A shorter run stays normal (`min_lines`): its scalar first and last partial lines cost more
    than the streaming saves (a swish row of 128 float32: 10.2 ms streamed against 5.8 ms)."""
    alias_window: int = 256
    """How far (bytes, modulo a 4 KiB page) an output may run ahead of an input before its lines are
    walked backward (`alias_window`). znver1, group norm forward 32x64x56x56: 16-112 bytes ahead
    4.4 ms instead of 2.3, 128-160 2.9 ms, 192 2.7, 256 and more 2.3-2.6."""
    max_line_ops: int = 640
    """Ops per streamed line at most (`max_line_ops`, 40 per float32): a longer body is compute
    bound; without the limit 2-D and 3-D pooling's windows streamed at 0.87-0.89x the speed."""

    # --- compile time
    outline_stage_ops: int = 2000
    """Ops in a stage worth splitting into functions (outline-sibling-nests `stage_ops`): LLVM takes
    about 0.3 s on one; max pooling 2-D's (about 2700 ops) 0.40 s."""
    outline_nest_ops: int = 300
    """Ops in a nest worth a function of its own (`nest_ops`): max pooling 2-D's scan, about 600
    ops, 0.15 s of LLVM."""

    # --- LLVM (codegen/jit.py sets them once per process)
    llvm_options: tuple[str, ...] = (
        # GVN's load PRE across iterations turns a window neighbour's load into a loop-carried phi,
        # which the loop vectorizer then refuses
        "-enable-load-in-loop-pre=false",
        # loop strength reduction took 70% of code generation on large kernels (the sampler: 1.3 of
        # 1.8 s) and the benchmark table runs as fast without it
        "-disable-lsr",
        # LICM promotes a loop's memory to registers only under 250 accesses; a register tile's
        # sweep (4 rows x 32 columns) makes about 400: its accumulators stayed on the stack
        # (g @ w at 44% of numpy's matmul on znver4)
        "-licm-mssa-max-acc-promotion=1024",
    )
    splits_wide_vectors: bool = field(default_factory=host_splits_wide_vectors)
    """Probed: 256-bit shuffles across halves cost 8 micro-ops. Then a loop storing interleaved
    phases gets 128-bit vectors (max pooling 2-D's gather at 32x64x56x56: 6.23 -> 5.44 ms on one
    thread, znver1)."""

    def chunk_columns(self, vector_registers: int) -> int:
        """Columns per chunk (chunk-row-sweeps `columns`): as many vectors V of chunk_lanes as fill
        the registers with the jammed rows' accumulators (jam_rows x V), one broadcast of each row's
        factor and one loaded vector: jam_rows x (V + 1) + 1 <= vector_registers. LLVM's schedule
        of the sweep's step (the asm of dy @ w, `kernel.ir('asm', ...)`) loads every row's
        broadcast first and then each vector of the swept row in turn, its FMAs into every row
        before the next load: a tile past the bound spills accumulators to the stack every step
        (6x16: 12 + 6 + 1 = 19 registers of 16, 2.2x slower than 5x16; 4x24 and 8x8 spill too, 3x32
        and 5x16 fill 16 exactly). 16 columns with AVX2's 16 registers and 5 rows, 40 with
        AVX-512's 32 (not measured there), at least one vector. Sized for jam_rows stack rows
        (chunk-row-sweeps `rows`): a sweep of more (two sums jammed) takes fewer columns."""
        return self.chunk_lanes * max(1, (vector_registers - 1) // self.jam_rows - 1)

    def reuse_unroll(self, vector_registers: int) -> int:
        """Dot products per row (unroll-reuse-loops `unroll`): the reuse_jam_rows x unroll
        accumulators take half the vector registers, the loaded data the rest: 8 with AVX-512's
        32, 4 with AVX2's 16, where 8 spilled (x @ w.T at 128x256x2000 on znver1: 3.50 -> 2.18 ms;
        6 took 2.76 ms, 8 with one row 2.57, 3 x 4 rows 2.64)."""
        return max(2, min(self.reuse_unroll_max, vector_registers // 2 // self.reuse_jam_rows))

    def panel_bytes(self, cache_bytes: int) -> int:
        """A packed panel: half the core's cache (the rest holds the rows that sweep it), at most
        panel_bytes_max."""
        return max(min(cache_bytes // 2, self.panel_bytes_max), 64)

    def compute_bound_ops(self) -> int:
        return self.compute_bound_ops_split if self.splits_wide_vectors else self.compute_bound_ops_whole


HOST = HostModel()
"""This host's model: the one the cpu backend and the code generator use."""
