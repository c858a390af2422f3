"""User schedules on cpu (issue 44): the cpu passes carry out the directives the pipeline gives them,
the planner's merged with the user's (passes/applying.py, backends/cpu CpuBackend.direct), so a
user directive changes a register tile, turns streaming stores or outlining off, and the plan lists
it `# user`; one that names nothing a pass can transform is refused by name."""

import importlib.util
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_guard import SMALL_CASES, small_call

import tilegrad
import tilegrad.dsl as tg
from tilegrad.errors import ScheduleError
from tilegrad.references import reference
from tilegrad.schedule import RFactor, parse_directive
from tilegrad.targets import get_target
from tilegrad.targets.host import HOST

CPU_CORES = get_target("cpu").cores


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
    assert planned[f"UnrollJam(stage=0, factor={HOST.jam_rows}, tail='clamp')"] == "planner"
    kernel = tilegrad.compile("test_cpu_schedule_gw", "cpu", guard=guard, schedule="UnrollJam(stage=0, factor=2)")
    schedule = schedule_of(kernel, call)
    assert schedule["UnrollJam(stage=0)"] == "user"
    assert not any(d.startswith("UnrollJam(stage=0, factor=") for d in schedule)
    tiled = kernel.ir("tiled", **call)
    # two stack rows, not four, and two of the columns left over's chunk (chunk-row-sweeps' tail guard)
    assert tiled.count("memref.alloca() : memref<") == 2 * 2 + tiled.count("tg.panel")
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


@pytest.fixture(scope="module")
def pooling():
    """Max pooling's backward, 3x3 windows of stride 2 (hoist-tile-loops' Reorder and
    outline-sibling-nests' Outline in stage 0), and its float64 reference."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    attrs = dict(mode="max", window=(3, 3), padding=(0, 0), stride=(2, 2))
    op = tilegrad.get_op("pooling_backward")
    normalized = {n: s.normalize(n, attrs.get(n, s.default)) for n, s in op.attrs.items()
                  if n in attrs or not s.required}
    y = np.stack([x[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3)) for i in range(4) for j in range(4)],
                 axis=-1).reshape(2, 3, 4, 4)
    return dict(x=x, y=y, dy=dy, **attrs), reference("pooling_backward", dict(x=x, y=y, dy=dy), normalized)


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_outline_off_keeps_the_stage_whole(pooling, guard):
    call, want = pooling
    assert "Outline(stage=0)" in schedule_of(tilegrad.compile("pooling_backward", "cpu"), call)
    kernel = tilegrad.compile("pooling_backward", "cpu", guard=guard, schedule="Outline(stage=0, outlined=False)")
    assert schedule_of(kernel, call)["Outline(stage=0, outlined=False)"] == "user"
    assert "_nest0" not in kernel.ir("tiled", **call)
    np.testing.assert_allclose(kernel(**call), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("directive, message", [
    ("UnrollJam(stage=1, factor=2)", "UnrollJam(stage=1): names no loop a cpu pass can transform by UnrollJam "
                                     f"(the ones they can: UnrollJam(stage=0, factor={HOST.jam_rows}, tail='clamp'))"),
    ("Unroll(stage=0, factor=2)", "Unroll(stage=0, factor=2): names no loop a cpu pass can transform by Unroll "
                                  "(the ones they can: none in this kernel)"),
    ("Store(stage=0, tensor='g')", "Store(stage=0, tensor='g'): names no loop storing a write-only output that "
                                   "stream-stores can transform"),
    ("Split(stage=0, axis=1, factor=12, tail='peel')", "names no row loop of a sweep of jammed rows"),
    ("Split(stage=0, factor=12, tail='peel')", "the factor must be a multiple of chunk-row-sweeps's lanes=8"),
    ("Fuse(stage=0, axes=(0, 1))", "Fuse(stage=0, axes=(0, 1)): not applied on cpu yet: tile-for-target carries "
                                   "out Parallel, the cpu passes RFactor (split-column-reductions)"),
    ("Reorder(stage=0, order=(0, 1))", "Reorder(stage=0, order=(0, 1)): names no loop a cpu pass can transform by "
                                       "Reorder (the ones they can: Reorder(stage=0, order=('r0', 1)))"),
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


@pytest.fixture(scope="module")
def linear_ce():
    """The fused linear CE from the logits' statistics (its logits stage: unroll-reuse-loops' dot
    products, UnrollJam on axes 1 and 0), and its float64 torch oracle."""
    from test_fused_linear_cross_entropy import inputs
    from test_fused_linear_cross_entropy import reference as ce_reference

    grad, inp, weight, bits, mask, target, _, logits_max, sum_exp = inputs(np.random.default_rng(0), "float32")
    call = dict(grad=grad, input=inp, weight=weight, target_mask=mask, masked_target=target, logits_max=logits_max,
                sum_exp_logits=sum_exp)
    return call, ce_reference(grad, inp, weight, bits, target, logits_max=logits_max, sum_exp=sum_exp)


def batch_norm_call(shape: tuple[int, ...]):
    """Batch norm's backward over `shape` (N, C, H, W) and the float64 numpy oracle from the saved statistics."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    axes = (0, 2, 3)
    scale, mean = rng.uniform(0.5, 2, (1, shape[1], 1, 1)), x.astype(np.float64).mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(x.astype(np.float64).var(axis=axes, keepdims=True) + 1e-5)
    call = dict(x=x, dy=dy, bn_scale=scale.astype(np.float32), saved_mean=mean.astype(np.float32),
                saved_inv_variance=rstd.astype(np.float32))
    x64, dy64 = ((x.astype(np.float64) - call["saved_mean"]) * call["saved_inv_variance"]), dy.astype(np.float64)
    dx = call["bn_scale"] * call["saved_inv_variance"] * (
        dy64 - dy64.mean(axis=axes, keepdims=True) - x64 * (dy64 * x64).mean(axis=axes, keepdims=True))
    return call, (dx, (dy64 * x64).sum(axis=axes, keepdims=True), dy64.sum(axis=axes, keepdims=True))


@pytest.fixture(scope="module")
def batch_norm():
    """Batch norm's backward over 2051 rows of 37 channels (its statistics sweep: jam-sweep-terms' Unroll)."""
    return batch_norm_call((2051, 37, 1, 1))


@pytest.fixture(scope="module")
def batch_norm_planes():
    """Batch norm's backward over 8 images of 16 channels of 4x4: its statistics, dβ, dγ and dx run
    channel by channel in one stage (fuse-sibling-loops' ComputeWith of nests), the sums of dβ and dγ
    in one sweep (fuse-sibling-reductions' ComputeWith of reductions)."""
    return batch_norm_call((8, 16, 4, 4))


def library_call(name: str, attrs: dict, seed: int, **shapes) -> tuple[dict, object]:
    """A library op's call on random inputs (made consistent: max pooling's y is the max pool of x),
    and its float64 oracle."""
    from tilegrad.inputs import complete_shapes, random_inputs
    from tilegrad.references import consistent_inputs

    op = tilegrad.get_op(name)
    normalized = {n: s.normalize(n, attrs.get(n, s.default)) for n, s in op.attrs.items()
                  if n in attrs or not s.required}
    shapes = complete_shapes(op, shapes, {}, normalized)
    arrays = random_inputs(op, shapes, {}, normalized, np.random.default_rng(seed))
    arrays = consistent_inputs(name, arrays, normalized)
    return {**arrays, **attrs}, reference(name, arrays, normalized)


@pytest.fixture(scope="module")
def max_pooling():
    """Max pooling 2-D backward, 3x3 windows at stride 2 padded: its windows unrolled (Unroll) and
    its window scan versioned on the plane's NaN flag (Specialize, unswitch-invariant-selects)."""
    return library_call("pooling_backward", dict(mode="max", window=(3, 3), stride=(2, 2), padding=(1, 1)), 6,
                        x=(2, 3, 15, 13), y=(2, 3, 8, 7))


@pytest.fixture(scope="module")
def divisive_normalization():
    """Divisive normalization backward: its windows' reads of x under bounds tests run in branches
    (Specialize, branch-guarded-reads)."""
    return library_call("divisive_normalization_backward", {}, 7, x=(2, 3, 9, 11))


WINDOWS = {
    "unroll": ("max_pooling", "pooling_backward", "Unroll(stage=0)", "Unroll(stage=0, factor=1)"),
    "unswitch": ("max_pooling", "pooling_backward", "Specialize(stage=0, axis=3, condition='y_plane_finite[i0, i1] "
                 "== 0.0')", "Specialize(stage=0, axis=3, condition='y_plane_finite[i0, i1] == 0.0', versioned=False)"),
    "branch": ("divisive_normalization", "divisive_normalization_backward",
               "Specialize(stage=0, axis=3, condition='x in bounds')",
               "Specialize(stage=0, axis=3, condition='x in bounds', versioned=False)"),
}
"""The window passes' decisions, each on a library op that has it: fixture, op, the planner's
directive, the user's that turns it off."""


@pytest.mark.parametrize("case, kinds", [("linear_ce", {"UnrollJam(stage=1, axis=1, factor=4)", "UnrollJam(stage=1)",
                                                       "Reorder(stage=1, order=(1, 0))", "Distribute(stage=1)",
                                                       "Reorder(stage=2, order=('r0', 1))"}),
                                         ("batch_norm", {"Unroll(stage=0, factor=8)",
                                                         "Reorder(stage=0, order=('r0', 1))"}),
                                         ("batch_norm_planes", {"ComputeWith(stage=0, nests=(0, 1, 2))",
                                                                "ComputeWith(stage=0, reductions=(0, 2))"}),
                                         ("layer_norm", {str(RFactor(stage=1, chunks=CPU_CORES)),
                                                         "ComputeWith(stage=0, nests=(0, 1))",
                                                         "ComputeWith(stage=0, reductions=(0, 1))",
                                                         "Reorder(stage=1, order=('r0', 0))"}),
                                         ("pooling", {"Reorder(stage=0, order=(3, 2))"}),
                                         ("max_pooling", {WINDOWS["unroll"][2], WINDOWS["unswitch"][2]}),
                                         ("divisive_normalization", {WINDOWS["branch"][2]})])
def test_a_printed_cpu_plan_given_back_is_in_force(request, case, kinds):
    """Every directive of the printed plan given back (as `--schedule FILE` reads it) is in force
    already: none refused, the same tiled IR and the same bits; the unroll-reuse-loops' UnrollJam,
    jam-sweep-terms' Unroll, split-column-reductions' RFactor, the sibling fusions' ComputeWith, the
    Reorders of interchange-column-reductions, reorder-for-reuse and hoist-tile-loops, and the window
    passes' Unroll and Specialize and defer-sum-epilogues' Distribute among them, each listed as the user's."""
    call, _ = request.getfixturevalue(case)
    name = {"linear_ce": "fused_linear_cross_entropy_loss_grad", "batch_norm": "batch_norm_backward",
            "batch_norm_planes": "batch_norm_backward", "layer_norm": "layer_norm_backward",
            "pooling": "pooling_backward", "max_pooling": "pooling_backward",
            "divisive_normalization": "divisive_normalization_backward"}[case]
    planned = tilegrad.compile(name, "cpu")
    text = "\n".join(f"{d}  # {who}" for d, who in schedule_of(planned, call).items())
    given = tilegrad.compile(name, "cpu", schedule=text)
    schedule = schedule_of(given, call)
    assert kinds <= set(schedule) and all(schedule[d] == "user" for d in kinds)
    assert given.ir("tiled", **call) == planned.ir("tiled", **call)
    for ours, theirs in zip(given(**call), planned(**call)):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_unroll_jam_reaches_unroll_reuse_loops(linear_ce, guard):
    """UnrollJam on the logits' dot-product loop (stage 1, axis 1) is unroll-reuse-loops' (not
    jam-row-sweeps', which jams other loops): 2 dot products at a time, not 4."""
    call, want = linear_ce
    name = "fused_linear_cross_entropy_loss_grad"
    planned = tilegrad.compile(name, "cpu").ir("tiled", **call)
    kernel = tilegrad.compile(name, "cpu", guard=guard, schedule="UnrollJam(stage=1, axis=1, factor=2)")
    schedule = schedule_of(kernel, call)
    assert schedule["UnrollJam(stage=1, axis=1)"] == "user" and "UnrollJam(stage=1, axis=1, factor=4)" not in schedule
    tiled = kernel.ir("tiled", **call)
    assert tiled != planned and tiled.count("%weight[") < planned.count("%weight[")
    for got, expected in zip(kernel(**call), want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_unroll_changes_the_sweep_terms(batch_norm, guard):
    """Unroll on batch norm's statistics sweep is jam-sweep-terms': 2 terms per pass, not 8; each
    column still adds its terms in row order (the same bits)."""
    call, want = batch_norm
    planned = tilegrad.compile("batch_norm_backward", "cpu")
    kernel = tilegrad.compile("batch_norm_backward", "cpu", guard=guard, schedule="Unroll(stage=0, factor=2)")
    assert schedule_of(kernel, call)["Unroll(stage=0, factor=2)"] == "user"
    assert kernel.ir("tiled", **call).count("%x[") < planned.ir("tiled", **call).count("%x[")
    for got, same, expected in zip(kernel(**call), planned(**call), want):
        np.testing.assert_array_equal(got, same)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_a_user_unroll_jam_naming_no_loop_is_refused(linear_ce):
    call, _ = linear_ce
    with pytest.raises(ScheduleError, match=r"UnrollJam\(stage=1, axis=2\): names no loop a cpu pass can transform "
                                            r"by UnrollJam \(the ones they can: .*UnrollJam\(stage=1, axis=1, "
                                            r"factor=4\)"):
        tilegrad.compile("fused_linear_cross_entropy_loss_grad", "cpu",
                         schedule="UnrollJam(stage=1, axis=2, factor=2)").plan(**call)


@pytest.mark.parametrize("name", sorted(SMALL_CASES))
def test_the_printed_cpu_plan_holds_every_decision(name):
    """Every decision of the cpu backend is in the plan it prints: that plan run exactly, the
    planner off (compile's planner=False: no pass decides anything of its own), gives the planner's
    own tiled IR, for every library op."""
    arrays, attrs = small_call(name, "float32")
    planned = tilegrad.compile(name, "cpu")
    text = "\n".join(entry["directive"] for entry in planned.plan(**arrays, **attrs).schedule)
    exact = tilegrad.compile(name, "cpu", schedule=text, planner=False)
    assert exact.ir("tiled", **arrays, **attrs) == planned.ir("tiled", **arrays, **attrs)


@pytest.mark.parametrize("guard", [False, True])
def test_without_the_planner_a_decision_left_out_is_not_made(gemm, guard):
    """planner=False with the printed plan less all but its core split (the Reorder that makes the
    sum a row sweep, then the UnrollJam, column chunks, packed panel and vector tail that work on
    that sweep: given without the Reorder, they would name nothing and be refused): the dot
    products stay as written, the tiled IR differs from the planner's, the result still matches
    float64."""
    call, want = gemm
    planned = tilegrad.compile("test_cpu_schedule_gw", "cpu")
    schedule = [d for d in schedule_of(planned, call) if d.startswith("Parallel")]
    assert len(schedule) == 1 and any(d.startswith("UnrollJam") for d in schedule_of(planned, call))
    exact = tilegrad.compile("test_cpu_schedule_gw", "cpu", schedule="\n".join(schedule), planner=False, guard=guard)
    assert list(schedule_of(exact, call)) == schedule
    assert exact.ir("tiled", **call) != planned.ir("tiled", **call)
    np.testing.assert_allclose(exact(**call), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("rfactor", ["RFactor(stage=1, chunks=1)", "RFactor(stage=1, chunks=3)"])
def test_a_user_rfactor_changes_the_column_split(layer_norm, rfactor, guard):
    """split-column-reductions' RFactor on layer norm's dγ, dβ (its combine stage, 1): chunks=1 leaves
    the column sums unsplit (no partials' workspace), chunks=3 sums them by 3 chunks of rows in place
    of one per core; either way the float64 oracle's result."""
    call, want = layer_norm
    kernel = tilegrad.compile("layer_norm_backward", "cpu", guard=guard, schedule=rfactor)
    schedule = schedule_of(kernel, call)
    assert schedule[rfactor] == "user" and str(RFactor(stage=1, chunks=CPU_CORES)) not in schedule
    tiled = kernel.ir("tiled", **call)
    assert ("column_partials0" in tiled) == (rfactor != "RFactor(stage=1, chunks=1)")
    if "chunks=3" in rfactor:
        assert "memref<3x?xf32" in tiled
    for got, expected in zip(kernel(**call), want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_a_user_rfactor_naming_no_column_split_is_refused(layer_norm):
    from tilegrad.pipeline import run_passes

    call, _ = layer_norm
    with pytest.raises(ScheduleError, match=r"RFactor\(stage=1, axis=1, chunks=4\): names no column stage beside a "
                                            r"row stage that split-column-reductions can transform \(the ones it can: "
                                            + re.escape(str(RFactor(stage=1, chunks=CPU_CORES)))):
        tilegrad.compile("layer_norm_backward", "cpu", schedule="RFactor(stage=1, axis=1, chunks=4)").plan(**call)
    with pytest.raises(ScheduleError, match=r"RFactor\(stage=0\): names no column stage beside a row stage that "
                                            r"split-column-reductions can transform \(the ones it can: none in"):
        run_passes("builtin.module {}", 'split-column-reductions{directives="RFactor(stage=0)"}')


def test_a_library_plan_lists_its_sibling_fusions(batch_norm_planes, layer_norm):
    """fuse-sibling-loops' and fuse-sibling-reductions' decisions are in the plan as ComputeWith: batch
    norm's three nests as one stage and two of its sums in one sweep; layer norm's row stage and the
    partial sums of its column split (RFactor) as one stage, whose two partial sums sweep once."""
    call, _ = batch_norm_planes
    schedule = schedule_of(tilegrad.compile("batch_norm_backward", "cpu"), call)
    assert schedule["ComputeWith(stage=0, nests=(0, 1, 2))"] == "planner"
    assert schedule["ComputeWith(stage=0, reductions=(0, 2))"] == "planner"
    call, _ = layer_norm
    schedule = schedule_of(tilegrad.compile("layer_norm_backward", "cpu"), call)
    assert {str(RFactor(stage=1, chunks=CPU_CORES)), "ComputeWith(stage=0, nests=(0, 1))",
            "ComputeWith(stage=0, reductions=(0, 1))"} <= set(schedule)


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_compute_with_off_keeps_the_nests_apart(layer_norm, guard):
    """ComputeWith(stage=0, nests=(0, 1), fused=False): layer norm's row stage and the partial sums of
    dγ, dβ stay two stages (the combine stage is then stage 2); the float64 oracle's result."""
    call, want = layer_norm
    off = "ComputeWith(stage=0, nests=(0, 1), fused=False)"
    planned = tilegrad.compile("layer_norm_backward", "cpu").ir("tiled", **call)
    kernel = tilegrad.compile("layer_norm_backward", "cpu", guard=guard, schedule=off)
    schedule = schedule_of(kernel, call)
    assert schedule[off] == "user" and "ComputeWith(stage=0, nests=(0, 1))" not in schedule
    tiled = kernel.ir("tiled", **call)
    assert "func.func @layer_norm_backward_stage2" in tiled and "@layer_norm_backward_stage2" not in planned
    for got, expected in zip(kernel(**call), want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_compute_with_off_sweeps_each_sum_alone(batch_norm_planes, guard):
    """ComputeWith(stage=0, reductions=(0, 2), fused=False): batch norm's sums each sweep the
    channel alone (more reduction loops); each adds its terms in the same order: the same bits."""
    call, want = batch_norm_planes
    off = "ComputeWith(stage=0, reductions=(0, 2), fused=False)"
    planned = tilegrad.compile("batch_norm_backward", "cpu", guard=guard)
    kernel = tilegrad.compile("batch_norm_backward", "cpu", guard=guard, schedule=off)
    assert schedule_of(kernel, call)[off] == "user"
    sweeps = "#tg.loop<reduce, axis = 0>"
    assert kernel.ir("tiled", **call).count(sweeps) > planned.ir("tiled", **call).count(sweeps)
    for got, same, expected in zip(kernel(**call), planned(**call), want):
        np.testing.assert_array_equal(got, same)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("directive", ["ComputeWith(stage=0, nests=(0, 1, 2))",
                                       "ComputeWith(stage=1, reductions=(0, 1), fused=False)"])
def test_a_user_compute_with_naming_no_siblings_is_refused(layer_norm, directive):
    call, _ = layer_norm
    with pytest.raises(ScheduleError, match=re.escape(f"{directive}: names no loop a cpu pass can transform by "
                                                      "ComputeWith (the ones they can: ComputeWith(stage=0, nests=(0, "
                                                      "1)); ComputeWith(stage=0, reductions=(0, 1)))")):
        tilegrad.compile("layer_norm_backward", "cpu", schedule=directive).plan(**call)


@pytest.mark.parametrize("case, off, guard", [
    ("batch_norm", "Reorder(stage=0, order=(1, 'r0'))", False),  # interchange-column-reductions'
    ("batch_norm", "Reorder(stage=0, order=(1, 'r0'))", True),
    ("linear_ce", "Reorder(stage=1, order=(0, 1))", False),  # reorder-for-reuse's
    ("pooling", "Reorder(stage=0, order=(2, 3))", False),  # hoist-tile-loops'
])
def test_a_user_reorder_in_the_present_order_leaves_the_loops(request, case, off, guard):
    """A Reorder naming the planner's loops in the order they have leaves them as they are: listed
    as the user's (the planner's it names gone), the tiled IR changes, the results match the oracle."""
    call, want = request.getfixturevalue(case)
    name = {"linear_ce": "fused_linear_cross_entropy_loss_grad", "batch_norm": "batch_norm_backward",
            "pooling": "pooling_backward"}[case]
    planned = tilegrad.compile(name, "cpu")
    own = str(replace(parse_directive(off), order=parse_directive(off).order[::-1]))
    assert schedule_of(planned, call)[own] == "planner"
    kernel = tilegrad.compile(name, "cpu", guard=guard, schedule=off)
    schedule = schedule_of(kernel, call)
    assert schedule[off] == "user" and own not in schedule
    assert kernel.ir("tiled", **call) != planned.ir("tiled", **call)
    got = kernel(**call)
    for ours, expected in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4)


SUMS = (Path(__file__).parent / "filecheck" / "interchange-column-reductions" / "directives.mlir").read_text()


@pytest.mark.parametrize("spec, message", [
    ('interchange-column-reductions{directives="Reorder(stage=0, order=(1, 0))"}',
     "Reorder(stage=0, order=(1, 0)): names no column loop of column-walking sums that interchange-column-reductions "
     "can transform (the ones it can: Reorder(stage=0, order=('r0', 1)); Reorder(stage=1, order=('r0', 1)))"),
    ('reorder-for-reuse{directives="Reorder(stage=0, order=(1, 0))"}',
     "names no tile loop re-read by every iteration of the loop around it that reorder-for-reuse can transform (the "
     "ones it can: none in this kernel)"),
    ('hoist-tile-loops{directives="Reorder(stage=2, order=(1, 0))"}',
     "names no parallel loop holding only a tile loop that hoist-tile-loops can transform"),
    ('interchange-column-reductions{directives="Reorder(stage=0, order=(\\"r1\\", \\"r0\\", 1))"}',
     "Reorder(stage=0, order=('r1', 'r0', 1)): interchange-column-reductions can nest these loops as "
     "Reorder(stage=0, order=('r0', 'r1', 1)) (interchanged) or as Reorder(stage=0, order=(1, 'r0', 'r1')) (as they "
     "are), no other order"),
])
def test_a_reorder_a_pass_cannot_carry_out_is_refused(spec, message):
    """In `tilegrad opt`: a Reorder naming loops the pass does not interchange, or an order that is
    neither the pass's nor the loops' own (two sums over reduction axes 0 and 1 in one column loop)."""
    from tilegrad.pipeline import run_passes

    ir = SUMS.split("// CHECK:")[0]
    if "r1" in spec:  # stage 0's column loop also sums over a reduction axis 1
        second = ir[ir.index("        %s = scf.for"):ir.index("        memref.store %s")]
        ir = ir.replace(second, second + second.replace("%s =", "%s1 =").replace("axis = 0>", "axis = 1>"), 1)
    with pytest.raises(ScheduleError) as err:
        run_passes(ir, spec)
    assert message in str(err.value)


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("case", WINDOWS)
def test_a_user_directive_turns_a_window_decision_off(request, case, guard):
    """The plan lists the window pass's decision; the user's directive that turns it off is in force
    (listed as the user's, the planner's gone), the tiled IR keeps the loop, the select or the clamp
    the pass would remove, and the result still matches the float64 oracle."""
    fixture, name, planned, off = WINDOWS[case]
    call, want = request.getfixturevalue(fixture)
    default = tilegrad.compile(name, "cpu")
    assert schedule_of(default, call)[planned] == "planner"
    kernel = tilegrad.compile(name, "cpu", guard=guard, schedule=off)
    schedule = schedule_of(kernel, call)
    assert schedule[off] == "user" and planned not in schedule
    tiled, before = kernel.ir("tiled", **call), default.ir("tiled", **call)
    if case == "unroll":  # the window loops stay (the llvm stage still unrolls them: a canonicalization)
        assert tiled.count("#tg.loop<reduce") > before.count("#tg.loop<reduce")
    elif case == "unswitch":  # the scan is not chosen by the flag: one copy, the flag read per element
        assert tiled.count("memref.load %y_plane_finite") > before.count("memref.load %y_plane_finite")
        assert "Partition(stage=0, axis=3)" in schedule
    else:  # the reads of x keep their clamps, under selects
        assert tiled.count("arith.minsi") > before.count("arith.minsi") and tiled.count("scf.if") < before.count(
            "scf.if")
    got = kernel(**call)
    for ours, expected in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("directive, message", [
    ("Specialize(stage=0, axis=3, condition='y[i0, i1] == 0.0')",
     "Specialize(stage=0, axis=3, condition='y[i0, i1] == 0.0'): names no loop a cpu pass can transform by "
     "Specialize (the ones they can: Specialize(stage=0, axis=3, condition='y_plane_finite[i0, i1] == 0.0'))"),
    ("Unroll(stage=0, factor=2)", "Unroll(stage=0, factor=2): unroll-short-reductions unrolls a window fully "
                                  "(factor=0) or leaves it a loop (factor=1)"),
])
def test_a_window_directive_naming_no_decision_is_refused(max_pooling, directive, message):
    call, _ = max_pooling
    with pytest.raises(ScheduleError) as err:
        tilegrad.compile("pooling_backward", "cpu", schedule=directive).plan(**call)
    assert message in str(err.value)


LOGITS = "fused_linear_cross_entropy_loss_grad"


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_distribute_off_keeps_the_math_with_each_sum(linear_ce, guard):
    """The fused linear CE's logits stage: defer-sum-epilogues' Distribute (the dot products stored
    first, exp and the rest over the tile in a loop of their own) is the planner's; the user's
    distributed=False is in force (the planner's gone): exp follows each of the register tile's 8
    dot products, and the results are the planner's bit for bit (the sums are stored exactly) and
    match the float64 oracle."""
    call, want = linear_ce
    planned = tilegrad.compile(LOGITS, "cpu", guard=guard)
    assert schedule_of(planned, call)["Distribute(stage=1)"] == "planner"
    off = "Distribute(stage=1, distributed=False)"
    kernel = tilegrad.compile(LOGITS, "cpu", guard=guard, schedule=off)
    schedule = schedule_of(kernel, call)
    assert schedule[off] == "user" and "Distribute(stage=1)" not in schedule
    tiled, before = kernel.ir("tiled", **call), planned.ir("tiled", **call)
    assert (before.count("math.exp"), tiled.count("math.exp")) == (1, 8)
    for got, same, expected in zip(kernel(**call), planned(**call), want):
        np.testing.assert_array_equal(got, same)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_without_the_planner_a_plan_less_its_distribute_keeps_the_math_with_each_sum(linear_ce):
    """planner=False: the printed plan less its Distribute gives the tiled IR of Distribute turned
    off (defer-sum-epilogues distributes nothing of its own), the whole plan the planner's."""
    call, _ = linear_ce
    plan = [entry["directive"] for entry in tilegrad.compile(LOGITS, "cpu").plan(**call).schedule]
    assert "Distribute(stage=1)" in plan
    less = "\n".join(d for d in plan if d != "Distribute(stage=1)")
    exact = tilegrad.compile(LOGITS, "cpu", schedule=less, planner=False).ir("tiled", **call)
    off = tilegrad.compile(LOGITS, "cpu", schedule="Distribute(stage=1, distributed=False)").ir("tiled", **call)
    assert exact == off


@pytest.mark.parametrize("directive", ["Distribute(stage=1, axis=1)", "Distribute(stage=2)"])
def test_a_distribute_naming_no_row_of_sums_is_refused(linear_ce, directive):
    call, _ = linear_ce
    with pytest.raises(ScheduleError) as err:
        tilegrad.compile(LOGITS, "cpu", schedule=directive).plan(**call)
    assert str(err.value) == (f"{directive}: names no loop a cpu pass can transform by Distribute "
                              f"(the ones they can: Distribute(stage=1))")  # (two passes take Distribute)


def test_a_distribute_option_is_refused_by_name_in_opt():
    """In `tilegrad opt`: a directive defer-sum-epilogues does not take, and one naming no row loop."""
    from tilegrad.pipeline import run_passes

    ir = (Path(__file__).parent / "filecheck" / "defer-sum-epilogues" / "directives.mlir").read_text()
    ir = ir.split("// CHECK:")[0]
    with pytest.raises(ScheduleError, match=r"^Store\(stage=0, tensor='out'\): defer-sum-epilogues does not carry "
                                            r"it out \(it takes Distribute\)$"):
        run_passes(ir, 'defer-sum-epilogues{directives="Store(stage=0, tensor=\'out\')"}')
    with pytest.raises(ScheduleError, match=r"^Distribute\(stage=0, axis=1\): names no row loop .* \(the ones it "
                                            r"can: Distribute\(stage=0\); Distribute\(stage=1\)\)$"):
        run_passes(ir, 'defer-sum-epilogues{directives="Distribute(stage=0, axis=1)"}')
