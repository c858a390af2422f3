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
from tilegrad.schedule import RFactor
from tilegrad.targets import get_target

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
    ("UnrollJam(stage=1, factor=2)", "UnrollJam(stage=1): names no loop a cpu pass can transform by UnrollJam "
                                     "(the ones they can: UnrollJam(stage=0, factor=4))"),
    ("Unroll(stage=0, factor=2)", "Unroll(stage=0, factor=2): names no loop a cpu pass can transform by Unroll "
                                  "(the ones they can: none in this kernel)"),
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


@pytest.fixture(scope="module")
def batch_norm():
    """Batch norm's backward over 2051 rows of 37 channels (its statistics sweep: jam-sweep-terms'
    Unroll) and the float64 numpy oracle from the saved statistics."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2051, 37, 1, 1)).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    scale, mean = rng.uniform(0.5, 2, (1, 37, 1, 1)), x.astype(np.float64).mean(axis=0, keepdims=True)
    rstd = 1 / np.sqrt(x.astype(np.float64).var(axis=0, keepdims=True) + 1e-5)
    call = dict(x=x, dy=dy, bn_scale=scale.astype(np.float32), saved_mean=mean.astype(np.float32),
                saved_inv_variance=rstd.astype(np.float32))
    x64, dy64 = ((x.astype(np.float64) - call["saved_mean"]) * call["saved_inv_variance"]), dy.astype(np.float64)
    dx = call["bn_scale"] * call["saved_inv_variance"] * (
        dy64 - dy64.mean(axis=0, keepdims=True) - x64 * (dy64 * x64).mean(axis=0, keepdims=True))
    return call, (dx, (dy64 * x64).sum(axis=0, keepdims=True), dy64.sum(axis=0, keepdims=True))


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


@pytest.mark.parametrize("case, kinds", [("linear_ce", {"UnrollJam(stage=1, axis=1, factor=4)", "UnrollJam(stage=1)"}),
                                         ("batch_norm", {"Unroll(stage=0, factor=8)"}),
                                         ("layer_norm", {str(RFactor(stage=1, chunks=CPU_CORES))}),
                                         ("max_pooling", {WINDOWS["unroll"][2], WINDOWS["unswitch"][2]}),
                                         ("divisive_normalization", {WINDOWS["branch"][2]})])
def test_a_printed_cpu_plan_given_back_is_in_force(request, case, kinds):
    """Every directive of the printed plan given back (as `--schedule FILE` reads it) is in force
    already: none refused, the same tiled IR and the same bits; the unroll-reuse-loops' UnrollJam,
    jam-sweep-terms' Unroll and split-column-reductions' RFactor among them, and the window passes'
    Unroll and Specialize, each listed as the user's."""
    call, _ = request.getfixturevalue(case)
    name = {"linear_ce": "fused_linear_cross_entropy_loss_grad", "batch_norm": "batch_norm_backward",
            "layer_norm": "layer_norm_backward", "max_pooling": "pooling_backward",
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
