"""Backends (one stage table per target family), the host model, and the cpu backend's decisions as
directives: `tilegrad plan --target cpu` lists them, and the plan's streaming stores and packed
panels come from them."""

import dataclasses

import numpy as np
import pytest
from conftest import library_ops

import tilegrad
from tilegrad.backends import backend_for
from tilegrad.backends.cpu import BACKEND as CPU_BACKEND
from tilegrad.backends.cpu import CpuBackend
from tilegrad.backends.scratchpad import BACKEND as SCRATCHPAD_BACKEND
from tilegrad.cli import main
from tilegrad.errors import ArgumentError
from tilegrad.passes.pack_reused_panels import packed_panels
from tilegrad.passes.registry import parse_pipeline, pipeline_spec
from tilegrad.passes.stream_stores import streamed_outputs
from tilegrad.pipeline import parse_ir
from tilegrad.schedule import ScheduleHint
from tilegrad.schedule.directives import (
    Inline,
    Memory,
    Outline,
    Parallel,
    Partition,
    PartitionBy,
    RFactor,
    Split,
    Stage,
    Tail,
    Unroll,
    UnrollJam,
)
from tilegrad.targets import get_target
from tilegrad.targets.host import HOST, HostModel

CPU = get_target("cpu")


def option_default(pass_name: str, option: str):
    cls = parse_pipeline(pass_name).passes[0]
    return getattr(cls, option)


@pytest.mark.parametrize("pass_name, option, value", [
    ("jam-row-sweeps", "rows", HOST.jam_rows),
    ("chunk-row-sweeps", "lanes", HOST.chunk_lanes),
    ("chunk-row-sweeps", "rows", HOST.jam_rows),
    ("unroll-reuse-loops", "jam_rows", HOST.reuse_jam_rows),
    ("jam-sweep-terms", "terms", HOST.sweep_terms),
    ("interchange-column-reductions", "row", HOST.column_row),
    ("pack-reused-panels", "panel_bytes", HOST.panel_bytes_max),
    ("overlap-vector-tails", "vector", HOST.tail_vector),
    ("lower-to-llvm", "arithmetic_bound", HOST.arithmetic_bound),
    ("lower-to-llvm", "interleave_count", HOST.interleave_count),
    ("stream-stores", "min_lines", HOST.stream_min_lines),
    ("stream-stores", "line_bytes", HOST.line_bytes),
    ("stream-stores", "alias_window", HOST.alias_window),
    ("stream-stores", "max_line_ops", HOST.max_line_ops),
    ("stream-stores", "compute_bound_ops", HOST.arithmetic_bound),
    ("outline-sibling-nests", "stage_ops", HOST.outline_stage_ops),
    ("outline-sibling-nests", "nest_ops", HOST.outline_nest_ops),
])
def test_a_pass_run_alone_defaults_to_the_host_models_value(pass_name, option, value):
    """`tilegrad opt -p PASS` runs a pass with the host model's values (the cpu backend passes them
    explicitly, so the printed pipeline shows only what differs)."""
    assert option_default(pass_name, option) == value


def test_the_host_models_derived_values():
    assert HOST.chunk_columns(16) == 16 and HOST.chunk_columns(32) == 40  # AVX2, AVX-512
    assert HOST.reuse_unroll(16) == 4 and HOST.reuse_unroll(32) == 8
    assert HOST.panel_bytes(1 << 20) == 1 << 18 and HOST.panel_bytes(256 << 10) == 128 << 10
    assert option_default("chunk-row-sweeps", "columns") == option_default("pack-reused-panels", "columns") == 16


@pytest.mark.parametrize("spec, message", [
    ("jam-row-sweeps{rows=0}", "jam-row-sweeps: rows=0 must be an integer >= 1"),
    ("chunk-row-sweeps{columns=12 lanes=8}", "columns=12 must be a multiple of lanes=8"),
    ("overlap-vector-tails{vector=0}", "overlap-vector-tails: vector=0 must be"),
    ("stream-stores{min_lines=0}", "stream-stores: min_lines=0 must be"),
    ("lower-to-llvm{interleave_count=0}", "lower-to-llvm: interleave_count=0 must be"),
])
def test_a_host_option_out_of_range_is_refused_by_name(spec, message):
    with pytest.raises(ArgumentError, match=message.replace("{", r"\{").replace("=", "=")):
        parse_pipeline(spec)


def test_each_target_family_has_its_stage_table():
    assert backend_for(CPU) is CPU_BACKEND and backend_for(get_target("ascend910b")) is SCRATCHPAD_BACKEND
    hint = ScheduleHint()
    cpu = {stage: pipeline_spec(p) for stage, p in CPU_BACKEND.stage_table(CPU, 2, hint).items()}
    staged = {stage: pipeline_spec(p)
              for stage, p in SCRATCHPAD_BACKEND.stage_table(get_target("ascend910b"), 0, hint).items()}
    assert list(cpu) == list(staged) == ["loops", "tiled", "llvm"]
    # the loops stage is every family's, but for whether a prefix or suffix reduction is a scan and
    # whether two contractions side by side share a loop (on cpu each keeps its own register tile)
    assert cpu["loops"] == staged["loops"].replace("scan-reductions{reductions=false}", "scan-reductions").replace(
        "fuse-sibling-loops,", "fuse-sibling-loops{contractions=false},")
    assert cpu["llvm"] == staged["llvm"]
    assert staged["tiled"] == ('forward-stored-values,tile-for-target{target="ascend910b"},'
                               'fuse-sibling-reductions')
    for name in ("jam-row-sweeps", "chunk-row-sweeps", "pack-reused-panels", "outline-sibling-nests"):
        assert name in cpu["tiled"] and name not in staged["tiled"]
    assert CPU_BACKEND.stage_table(CPU, 2, hint, untiled=True)["tiled"] == []
    other = CpuBackend("cpu", HostModel(jam_rows=2, sweep_terms=4))
    tiled = pipeline_spec(other.stage_table(CPU, 2, hint)["tiled"])
    assert "jam-row-sweeps{rows=2}" in tiled and "jam-sweep-terms{terms=4}" in tiled


def library_calls():
    """(kernel, arguments) of each library op's first benchmark case at its tiny size (one per op:
    each is a lowering, and the test command has a time budget; none runs)."""
    from tilegrad import bench_cases
    from tilegrad.bench import Case
    from tilegrad.kernel import Kernel

    calls, real = {}, Kernel.__call__

    def spy(kernel, /, *args, **kwargs):
        calls.setdefault(kernel.op.name, (kernel, kwargs))

    Kernel.__call__ = spy
    try:
        for _, builder in bench_cases.case_builders():
            for case in builder(np.random.default_rng(0), "tiny", Case):
                case.tilegrad()
    finally:
        Kernel.__call__ = real
    return list(calls.values())


def test_the_cpu_plan_of_every_library_op_lists_its_decisions_as_directives():
    """Every stage's core split is a Parallel directive (an RFactor for a reduction to one element
    split over the cores; a scatter split by its destination rows has no choice to state), and the
    outputs stored with streaming stores (Store) and the inputs read through packed panels (Stage,
    memory=panel) are exactly those the tiled stage has; the plan's lists are the directives'."""
    calls = library_calls()
    assert {kernel.op.name for kernel, _ in calls} == set(library_ops())
    seen = {"streamed": 0, "panels": 0}
    kinds: set[type] = set()
    for kernel, kwargs in calls:
        plan = plan_of(kernel, kwargs)
        schedule = plan.schedule
        where = kernel.op.name
        assert schedule is not None and schedule.target == "cpu", where
        parallel = [d.stage for d in schedule.of_type(Parallel)]  # (an RFactor of column sums is a split stage's)
        split = parallel + [d.stage for d in schedule.of_type(RFactor) if d.stage not in parallel]
        assert sorted(split) == [s.index for s in plan.stages if "owner computes" not in s.split], where
        assert plan.streamed == schedule.streamed() and plan.panels == schedule.panels(), where
        tiled = parse_ir(kernel.ir("tiled", **kwargs))
        assert _sorted(streamed_outputs(tiled)) == _sorted(plan.streamed), where
        assert _sorted(packed_panels(tiled)) == _sorted(plan.panels), where
        seen["streamed"] += bool(plan.streamed)
        seen["panels"] += bool(plan.panels)
        stages = {s.index for s in plan.stages}
        # (an Inline names the stage as the op emits it, before its temps are inlined: tilegrad show --stage op)
        assert all(d.stage in stages for d in schedule.directives if not isinstance(d, Inline)), where
        for d in schedule.directives:
            kinds.add(type(d))
    assert seen["streamed"] and seen["panels"]  # both kinds occur in the library
    assert {UnrollJam, Split, Unroll, Outline, Partition} <= kinds  # the register tiles, windows, outlining too


def plan_of(kernel, kwargs):
    """The tiling plan of the kernel's call with these arguments (as Kernel.plan makes it: lowered
    to the tiled stage, kept for `kernel.ir`, no code)."""
    args, kwargs, _, num_blocks = kernel._split_call((), dict(kwargs))
    return kernel.specialize(kernel.op.bind(kernel.target, args, kwargs), num_blocks, code=False, keep_ir=True).plan


def _sorted(by_tensor: dict) -> dict:
    return {name: sorted(stages) for name, stages in by_tensor.items()}


def test_tilegrad_plan_prints_the_schedule(capsys):
    code = main(["plan", "binary_cross_entropy_grad", "--target", "cpu", "--shape", "input_x=4096"])
    out = capsys.readouterr().out
    assert code == 0
    assert "schedule:\n  Parallel(stage=0)  # planner\n  Store(stage=0, tensor='dx')  # planner" in out
    assert "streaming stores: dx (stage 0)" in out


def _schedule_of(name: str, **call):
    kernel = tilegrad.compile(name, "cpu")
    return kernel, plan_of(kernel, call).schedule


def test_the_gemm_chains_register_tiles_are_directives():
    """The fused linear CE's dW and dX stages (G.T @ X, G @ W forms): jam-row-sweeps jams `rows`
    rows (UnrollJam; G @ W's left over in the last step, clamped: tail=clamp) and chunk-row-sweeps
    sweeps chunks of the columns, the rest as one more chunk (Split, tail=guard), on the rows' loop
    axis; the tiled IR has the jammed and chunked loops."""
    spec = tilegrad.Spec
    call = dict(input=spec((8, 40)), weight=spec((60, 40)), softmax=spec((8, 60)), grad=spec((8,)),
                masked_target=spec((8,), "int64"), target_mask=spec((8,), "uint8"))
    kernel, schedule = _schedule_of("fused_linear_cross_entropy_loss_grad", **call)
    columns = HOST.chunk_columns(CPU.vector_registers)
    for stage, tail in ((2, Tail.CLAMP), (3, Tail.PEEL)):  # G @ W's rows clamped; G.T @ X's read G down a column
        assert UnrollJam(stage=stage, axis=0, factor=HOST.jam_rows, tail=tail) in schedule.directives
        assert Split(stage=stage, axis=0, factor=columns, tail=Tail.GUARD) in schedule.directives
    assert f"UnrollJam(stage=2, factor={HOST.jam_rows}, tail='clamp')" in str(schedule)
    assert f"Split(stage=2, factor={columns})" in str(schedule)


def test_unroll_reuse_loops_and_sweep_terms_are_directives():
    """Dot products that share x's row (x @ w.T): the j loop unrolled `unroll` times and the rows
    around it `jam_rows` at a time (UnrollJam on axes 1 and 0); a column sum over rows (Σ_i x[i, h])
    adds `terms` terms per pass (Unroll). Both as the host model sizes them."""
    import tilegrad.dsl as tg

    @tg.op(outputs={"out": tg.shaped("B N", dtype="x")}, replace=True)
    def test_backends_dots(x=tg.tensor("B K"), w=tg.tensor("N K")):
        return lambda i, j: tg.reduce_sum(x.shape[1], lambda k: x[i, k] * w[j, k])

    @tg.op(outputs={"out": tg.shaped("H", dtype="x")}, replace=True)
    def test_backends_column_sums(x=tg.tensor("R H")):
        return lambda h: tg.reduce_sum(x.shape[0], lambda r: x[r, h])

    _, dots = _schedule_of("test_backends_dots", x=tilegrad.Spec((6, 40)), w=tilegrad.Spec((20, 40)))
    unroll = HOST.reuse_unroll(CPU.vector_registers)
    assert [d for d in dots.directives if isinstance(d, UnrollJam)] == [
        UnrollJam(stage=0, axis=1, factor=unroll), UnrollJam(stage=0, axis=0, factor=HOST.reuse_jam_rows)]
    _, sums = _schedule_of("test_backends_column_sums", x=tilegrad.Spec((300, 64)))
    assert sums.of_type(Unroll) == [Unroll(stage=0, axis=0, factor=HOST.sweep_terms)]


def test_split_column_reductions_outlining_and_window_passes_are_directives():
    """Layer norm's dγ, dβ summed by chunks of the rows dx walks (RFactor of its combine stage, one
    chunk per core at 64 rows); max pooling's window scan and gather outlined (Outline): the tiled
    IR has the partials' workspace and the outlined part; its window loops partitioned and ended on
    an overlapping vector (Partition, Split)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent.parent / "examples" / "07_layer_norm_backward.py"
    spec = importlib.util.spec_from_file_location("layer_norm_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    call = example.inputs(64, 300, np.random.default_rng(1))
    kernel, schedule = _schedule_of("layer_norm_backward", **call)
    assert schedule.of_type(RFactor) == [RFactor(stage=1, axis=0, chunks=CPU.cores)]
    assert "column_partials0" in kernel.ir("tiled", **call)
    pool = dict(x=tilegrad.Spec((2, 3, 9, 9)), y=tilegrad.Spec((2, 3, 4, 4)), dy=tilegrad.Spec((2, 3, 4, 4)),
                window=(3, 3), stride=(2, 2))
    kernel, schedule = _schedule_of("pooling_backward", **pool)
    assert schedule.of_type(Outline) == [Outline(stage=0)]
    # the window passes on the output's column loop (axis 3): its stride phases (split-stride-phases),
    # the interior apart from the clamped edges (partition-clamped-loops), an overlapping last vector
    assert schedule.of_type(Partition) == [Partition(stage=0, axis=3, by=PartitionBy.RESIDUE),
                                           Partition(stage=0, axis=3, by=PartitionBy.CLAMP)]
    assert schedule.of_type(Split) == [Split(stage=0, axis=3, factor=HOST.tail_vector, tail=Tail.SHIFT_INWARDS)]
    assert "func.func private @pooling_backward_stage0_nest0" in kernel.ir("tiled", **pool)


def test_tilegrad_plan_prints_the_cpu_passes_directives(capsys):
    code = main(["plan", "pooling_backward", "--target", "cpu", "--shape", "x=2x3x9x9", "y=2x3x4x4", "dy=2x3x4x4",
                 "--attr", "window=3,3", "stride=2,2"])
    assert code == 0
    assert "  Outline(stage=0)  # planner\n" in capsys.readouterr().out


def test_another_host_model_changes_the_decisions(monkeypatch):
    """A host whose register tile is one row: jam-row-sweeps leaves G @ W's rows one by one, so no
    loop sweeps groups of rows and nothing is packed; the results are the same sums."""
    import tilegrad.backends.cpu as cpu_backend
    import tilegrad.kernel

    monkeypatch.setenv("TILEGRAD_CACHE", "0")
    monkeypatch.setattr(tilegrad.kernel, "_SPECIALIZATIONS", {})
    rng = np.random.default_rng(3)
    g = rng.standard_normal((37, 64)).astype(np.float32)
    w = rng.standard_normal((64, 300)).astype(np.float32)
    target = tilegrad.register_target(dataclasses.replace(CPU, name="test-backends-cpu"), replace=True)

    import tilegrad.dsl as tg

    @tg.op(outputs={"dx": tg.shaped("B H", dtype="g")}, replace=True)
    def test_backends_gemm(g=tg.tensor("B V"), w=tg.tensor("V H", dtype="g")):
        return lambda i, h: tg.reduce_sum(g.shape[1], lambda v: g[i, v] * w[v, h])

    results, panels = {}, {}
    for rows in (HOST.jam_rows, 1):
        monkeypatch.setattr(cpu_backend, "BACKEND", CpuBackend("cpu", dataclasses.replace(HOST, jam_rows=rows)))
        monkeypatch.setattr(tilegrad.kernel, "_SPECIALIZATIONS", {})
        kernel = tilegrad.compile("test_backends_gemm", target)
        results[rows] = kernel(g=g, w=w)
        schedule = plan_of(kernel, dict(g=g, w=w)).schedule
        panels[rows] = [d for d in schedule.of_type(Stage) if d.memory == Memory.PANEL]
    assert [d.tensor for d in panels[HOST.jam_rows]] == ["w"] and panels[1] == []
    np.testing.assert_allclose(results[1], g.astype(np.float64) @ w.astype(np.float64), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(results[1], results[HOST.jam_rows])  # each sum adds in the same order
