"""User schedules on cpu (issue 44): the cpu passes carry out the directives the pipeline gives them,
the planner's merged with the user's (passes/applying.py, backends/cpu CpuBackend.direct), so a
user directive changes a register tile, turns streaming stores or outlining off, and the plan lists
it `# user`; one that names nothing a pass can transform is refused by name."""

import importlib.util
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg
from tilegrad.errors import ScheduleError
from tilegrad.references import reference


@pytest.fixture(scope="module")
def gemm():
    """out = g @ w as a user op (jam-row-sweeps' row form: UnrollJam on the row loop), its inputs
    and the float64 numpy oracle."""

    @tg.op(outputs={"out": tg.shaped("R H", dtype="g")}, replace=True)
    def test_cpu_schedule_gw(g=tg.tensor("R V"), w=tg.tensor("V H")):
        return lambda i, h: tg.reduce_sum(g.shape[1], lambda v: g[i, v] * w[v, h])

    rng = np.random.default_rng(3)
    g, w = rng.standard_normal((9, 20)), rng.standard_normal((20, 40))
    return dict(g=g.astype(np.float32), w=w.astype(np.float32)), g @ w


def schedule_of(kernel, call) -> dict[str, str]:
    """The plan's schedule: directive -> who decided it."""
    return {entry["directive"]: entry["source"] for entry in kernel.plan(**call).schedule}


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_unroll_jam_changes_the_register_tile(gemm, guard):
    call, want = gemm
    planned = schedule_of(tilegrad.compile("test_cpu_schedule_gw", "cpu"), call)
    assert planned["UnrollJam(stage=0, factor=4)"] == "planner"
    kernel = tilegrad.compile("test_cpu_schedule_gw", "cpu", guard=guard, schedule="UnrollJam(stage=0, factor=2)")
    schedule = schedule_of(kernel, call)
    assert schedule["UnrollJam(stage=0)"] == "user" and "UnrollJam(stage=0, factor=4)" not in schedule
    tiled = kernel.ir("tiled", **call)
    assert tiled.count("memref.alloca() : memref<") == 2 + tiled.count("tg.panel")  # two stack rows, not four
    np.testing.assert_allclose(kernel(**call), want, rtol=1e-5, atol=1e-5)


def test_unroll_jam_factor_one_leaves_the_rows_one_by_one(gemm):
    call, want = gemm
    kernel = tilegrad.compile("test_cpu_schedule_gw", "cpu", schedule="UnrollJam(stage=0, factor=1)")
    schedule = schedule_of(kernel, call)
    assert schedule["UnrollJam(stage=0, factor=1)"] == "user"
    # no jammed rows: nothing for chunk-row-sweeps to chunk, nor a panel to pack
    assert not any(d.startswith(("Split(stage=0, factor=16", "Stage(")) for d in schedule)
    np.testing.assert_allclose(kernel(**call), want, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def layer_norm():
    path = Path(__file__).parent.parent / "examples" / "07_layer_norm_backward.py"
    spec = importlib.util.spec_from_file_location("layer_norm_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    call = example.inputs(64, 300, np.random.default_rng(1))
    return call, example.reference(call)


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_store_turns_streaming_stores_off(layer_norm, guard):
    call, want = layer_norm
    assert "tg.assume_aligned" in tilegrad.compile("layer_norm_backward", "cpu").ir("tiled", **call)
    off = "Store(stage=0, tensor='dx', nontemporal=False)"
    kernel = tilegrad.compile("layer_norm_backward", "cpu", guard=guard, schedule=off)
    schedule = schedule_of(kernel, call)
    assert schedule[off] == "user" and "Store(stage=0, tensor='dx')" not in schedule
    assert "tg.assume_aligned" not in kernel.ir("tiled", **call)
    for got, expected in zip(kernel(**call), want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_outline_off_keeps_the_stage_whole(guard):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    attrs = dict(mode="max", window=(3, 3), padding=(0, 0), stride=(2, 2))
    op = tilegrad.get_op("pooling_backward")
    normalized = {n: s.normalize(n, attrs.get(n, s.default)) for n, s in op.attrs.items()
                  if n in attrs or not s.required}
    y = np.stack([x[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3)) for i in range(4) for j in range(4)],
                 axis=-1).reshape(2, 3, 4, 4)
    call = dict(x=x, y=y, dy=dy, **attrs)
    assert "Outline(stage=0)" in schedule_of(tilegrad.compile("pooling_backward", "cpu"), call)
    kernel = tilegrad.compile("pooling_backward", "cpu", guard=guard, schedule="Outline(stage=0, outlined=False)")
    assert schedule_of(kernel, call)["Outline(stage=0, outlined=False)"] == "user"
    assert "_nest0" not in kernel.ir("tiled", **call)
    want = reference("pooling_backward", dict(x=x, y=y, dy=dy), normalized)
    np.testing.assert_allclose(kernel(**call), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("directive, message", [
    ("UnrollJam(stage=1, factor=2)", "UnrollJam(stage=1): names no row loop sweeping shared data that "
                                     "jam-row-sweeps can transform (the ones it can: UnrollJam(stage=0, factor=4))"),
    ("Store(stage=0, tensor='g')", "Store(stage=0, tensor='g'): names no loop storing a write-only output that "
                                   "stream-stores can transform"),
    ("Split(stage=0, axis=1, factor=12, tail='peel')", "names no row loop of a sweep of jammed rows"),
    ("Split(stage=0, factor=12, tail='peel')", "the factor must be a multiple of chunk-row-sweeps's lanes=8"),
    ("Reorder(stage=0, order=(1, 0))", "Reorder(stage=0, order=(1, 0)): not applied on cpu yet: tile-for-target "
                                       "carries out Parallel, the cpu passes UnrollJam (jam-row-sweeps)"),
])
def test_an_illegal_cpu_directive_is_refused_by_name(gemm, directive, message):
    call, _ = gemm
    with pytest.raises(ScheduleError) as err:
        tilegrad.compile("test_cpu_schedule_gw", "cpu", schedule=directive).plan(**call)
    assert message in str(err.value)


def test_a_cpu_directive_stays_refused_on_a_scratchpad_target(gemm):
    call, _ = gemm
    with pytest.raises(ScheduleError, match=r"UnrollJam\(stage=0\): not applied on scratchpad targets yet"):
        tilegrad.compile("test_cpu_schedule_gw", "ascend910b", schedule="UnrollJam(stage=0, factor=2)").plan(**call)


def test_the_pass_option_round_trips_through_its_spec():
    from tilegrad.passes.registry import parse_pipeline
    from tilegrad.pipeline import run_passes

    step = parse_pipeline('stream-stores{directives="Store(stage=0, tensor=\\"dx\\", nontemporal=False)"}').passes[0]
    assert step.directives == 'Store(stage=0, tensor="dx", nontemporal=False)'
    step = replace(step, directives="Store(stage=0, tensor='dx', nontemporal=False)")  # as the pipeline prints it
    assert parse_pipeline(str(step.pipeline_pass_spec())).passes[0] == step
    with pytest.raises(ScheduleError, match=r"Outline\(stage=0\): stream-stores does not carry it out \(it takes St"):
        run_passes("builtin.module {}", 'stream-stores{directives="Outline(stage=0)"}')
