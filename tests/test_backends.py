"""Backends (one stage table per target family), the host model, and the cpu backend's decisions as
directives: `tilegrad plan --target cpu` lists them, and the plan's streaming stores and packed
panels come from them."""

import dataclasses

import numpy as np
import pytest

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
from tilegrad.schedule.directives import Memory, Parallel, RFactor, Stage, Store
from tilegrad.targets import get_target
from tilegrad.targets.host import HOST, HostModel

CPU = get_target("cpu")


def option_default(pass_name: str, option: str):
    cls = parse_pipeline(pass_name).passes[0]
    return getattr(cls, option)


@pytest.mark.parametrize("pass_name, option, value", [
    ("jam-row-sweeps", "rows", HOST.jam_rows),
    ("chunk-row-sweeps", "lanes", HOST.chunk_lanes),
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
    assert HOST.chunk_columns(16) == 16 and HOST.chunk_columns(32) == 32  # AVX2, AVX-512
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
    assert cpu["loops"] == staged["loops"] and cpu["llvm"] == staged["llvm"]
    assert staged["tiled"] == ('forward-stored-values,tile-for-target{target="ascend910b"},'
                               'fuse-sibling-reductions')
    for name in ("jam-row-sweeps", "chunk-row-sweeps", "pack-reused-panels", "outline-sibling-nests"):
        assert name in cpu["tiled"] and name not in staged["tiled"]
    assert CPU_BACKEND.stage_table(CPU, 2, hint, untiled=True)["tiled"] == []
    other = CpuBackend("cpu", HostModel(jam_rows=2, sweep_terms=4))
    tiled = pipeline_spec(other.stage_table(CPU, 2, hint)["tiled"])
    assert "jam-row-sweeps{rows=2}" in tiled and "jam-sweep-terms{terms=4}" in tiled


def library_calls():
    """(kernel, arguments) of every library op's benchmark cases at their tiny sizes."""
    from tilegrad import bench_cases
    from tilegrad.bench import Case
    from tilegrad.kernel import Kernel

    calls, real = {}, Kernel.__call__

    def spy(kernel, /, *args, **kwargs):
        shapes = tuple(sorted((n, getattr(v, "shape", v)) for n, v in kwargs.items()))
        calls.setdefault((kernel.op.name, shapes), (kernel, kwargs))
        return real(kernel, *args, **kwargs)

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
    assert {kernel.op.name for kernel, _ in calls} == set(tilegrad.list_ops())
    seen = {"streamed": 0, "panels": 0}
    for kernel, kwargs in calls:
        plan = plan_of(kernel, kwargs)
        schedule = plan.schedule
        where = kernel.op.name
        assert schedule is not None and schedule.target == "cpu", where
        split = [d.stage for d in (*schedule.of_type(Parallel), *schedule.of_type(RFactor))]
        assert sorted(split) == [s.index for s in plan.stages if "owner computes" not in s.split], where
        assert plan.streamed == schedule.streamed() and plan.panels == schedule.panels(), where
        tiled = parse_ir(kernel.ir("tiled", **kwargs))
        assert _sorted(streamed_outputs(tiled)) == _sorted(plan.streamed), where
        assert _sorted(packed_panels(tiled)) == _sorted(plan.panels), where
        seen["streamed"] += bool(plan.streamed)
        seen["panels"] += bool(plan.panels)
        assert all(isinstance(d, (Parallel, RFactor, Store, Stage)) for d in schedule.directives), where
    assert seen["streamed"] and seen["panels"]  # both kinds occur in the library


def plan_of(kernel, kwargs):
    """The tiling plan of the kernel's call with these arguments (as Kernel.plan makes it)."""
    args, kwargs, _, num_blocks = kernel._split_call((), dict(kwargs))
    return kernel.specialize(kernel.op.bind(kernel.target, args, kwargs), num_blocks).plan


def _sorted(by_tensor: dict) -> dict:
    return {name: sorted(stages) for name, stages in by_tensor.items()}


def test_tilegrad_plan_prints_the_schedule(capsys):
    code = main(["plan", "binary_cross_entropy_grad", "--target", "cpu", "--shape", "input_x=4096"])
    out = capsys.readouterr().out
    assert code == 0
    assert "schedule:\n  Parallel(stage=0)  # planner\n  Store(stage=0, tensor='dx')  # planner" in out
    assert "streaming stores: dx (stage 0)" in out


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
