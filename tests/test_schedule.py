"""User schedules and the multi-axis core split on scratchpad targets (issue 44): the planner fuses
outer axes until every core has work, a Parallel directive (from the op, `tg.schedule`,
`compile(schedule=)` or `--schedule FILE`) replaces its choice, an illegal one is refused by name."""

import dataclasses
import json

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg
from tilegrad.cli import main
from tilegrad.errors import ArgumentError, DefinitionError, ScheduleError
from tilegrad.passes.registry import parse_pipeline
from tilegrad.passes.scratchpad_planner import balance, fused_count
from tilegrad.passes.tile_for_target import TileForTarget
from tilegrad.schedule import ScheduleHint, parse_directive

B, L, D = 16, 64, 32

ATTENTION = '''
import tilegrad.dsl as tg


@tg.op(outputs={"dq": tg.like("q"), "dk": tg.like("k"), "dv": tg.like("v")}, replace=True)
def attention_backward(p=tg.tensor("B L L"), do=tg.tensor("B L D", dtype="p"), q=tg.tensor("B L D", dtype="p"),
                       k=tg.tensor("B L D", dtype="p"), v=tg.tensor("B L D", dtype="p")):
    """The backward of O = P V, P = softmax(Q K^T) (P given): dS = P * (dP - rowsum(dP * P))."""
    batch, length, width = q.shape
    dp = tg.temp("dp", (batch, length, length))
    dp.assign(lambda b, i, j: tg.reduce_sum(width, lambda d: do[b, i, d] * v[b, j, d]))
    rowsum = tg.temp("rowsum", (batch, length))
    rowsum.assign(lambda b, i: tg.reduce_sum(length, lambda j: dp[b, i, j] * p[b, i, j]))
    ds = tg.temp("ds", (batch, length, length))
    ds.assign(lambda b, i, j: p[b, i, j] * (dp[b, i, j] - rowsum[b, i]))
    tg.output("dq").assign(lambda b, i, d: tg.reduce_sum(length, lambda j: ds[b, i, j] * k[b, j, d]))
    tg.output("dk").assign(lambda b, j, d: tg.reduce_sum(length, lambda i: ds[b, i, j] * q[b, i, d]))
    tg.output("dv").assign(lambda b, j, d: tg.reduce_sum(length, lambda i: p[b, i, j] * do[b, i, d]))
'''


@pytest.fixture(scope="module")
def attention_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ops") / "attention.py"
    path.write_text(ATTENTION)
    exec(compile(ATTENTION, str(path), "exec"), {})  # registers attention_backward
    return path


@pytest.fixture(scope="module")
def attention_call(attention_file):
    """The inputs (float32) and the float64 numpy oracle's dq, dk, dv."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((B, L, L))
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    do, q, k, v = (rng.standard_normal((B, L, D)) for _ in range(4))
    dp = do @ v.transpose(0, 2, 1)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    want = (ds @ k, ds.transpose(0, 2, 1) @ q, p.transpose(0, 2, 1) @ do)
    arrays = {n: a.astype(np.float32) for n, a in dict(p=p, do=do, q=q, k=k, v=v).items()}
    return arrays, want


def check_attention(kernel, arrays, want):
    for got, expected in zip(kernel(**arrays), want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_the_planner_fuses_axes_until_the_split_is_balanced():
    assert balance(16, 24) == pytest.approx(16 / 24)
    assert fused_count([16, 64, 32], 24) == 2  # 16 rows on 24 cores: fuse L (1024 / 24: 0.99)
    assert fused_count([48, 64], 24) == 1  # 2 rows each already
    assert fused_count([None, 64], 24) is None  # unknown: the call's extents decide
    assert fused_count([16, None], 24) is None
    assert fused_count([5], 24) == 1  # nothing to fuse


def test_attention_uses_every_core_by_default(attention_call):
    arrays, want = attention_call
    kernel = tilegrad.compile("attention_backward", "ascend910b")
    report = kernel.plan(**arrays)
    assert [s["cores_busy"] for s in report.stages] == [24, 24]
    assert [s["extent"] for s in report.stages] == [B * L, B * L]
    assert report.schedule == [{"directive": f"Parallel(stage={s}, axes=(0, 1))", "source": "planner"}
                               for s in (0, 1)]
    assert "Parallel(stage=0, axes=(0, 1))  # planner" in str(report)
    assert "cores busy (of 24): stage 0: 24; stage 1: 24" in str(report)
    check_attention(kernel, arrays, want)
    # at 48 rows every core has two already: the outer split, as before
    wide = {n: np.concatenate([a, a, a]) for n, a in arrays.items()}
    assert [s["split"] for s in kernel.plan(**wide).stages] == ["outer axis split over cores (balanced)"] * 2
    # the first call compiled only its fused kernel (kernel.PlanOnly); this one compiles the outer split's
    check_attention(kernel, wide, tuple(np.concatenate([w] * 3) for w in want))


@pytest.mark.parametrize("guard", [False, True])
def test_an_explicit_parallel_directive_is_honoured(attention_call, guard):
    arrays, want = attention_call
    kernel = tilegrad.compile("attention_backward", "ascend910b", guard=guard,
                              schedule=[tg.Parallel(axes=[0, 1], balance="vendor", cores=20)])
    report = kernel.plan(**arrays)
    assert report.schedule == [{"directive": f"Parallel(stage={s}, axes=(0, 1), balance='vendor', cores=20)",
                                "source": "user"} for s in (0, 1)]
    assert [(s["cores_busy"], s["per_core"], s["last_core"]) for s in report.stages] == [(20, 51, 55)] * 2
    check_attention(kernel, arrays, want)


def test_a_registered_schedule_replaces_the_planners_and_the_last_registration_wins(attention_call):
    arrays, want = attention_call

    @tg.schedule("attention_backward", "ascend910b")
    def first(target, binding):
        return [tg.Parallel(stage=0, axes=(0, 1), cores=8)]

    @tg.schedule("attention_backward", "ascend910b")
    def second(target, binding):
        return [tg.Parallel(stage=1, axes=(0,)), ScheduleHint()]

    try:
        kernel = tilegrad.compile("attention_backward", "ascend910b")
        report = kernel.plan(**arrays)
        assert report.schedule == [{"directive": "Parallel(stage=0, axes=(0, 1))", "source": "planner"},
                                   {"directive": "Parallel(stage=1)", "source": "user"}]
        assert [s["cores_busy"] for s in report.stages] == [24, 16]
        check_attention(kernel, arrays, want)
    finally:
        from tilegrad.dsl import opdef

        opdef._SCHEDULES.pop(("attention_backward", "ascend910b"))


SCALE_ROWS = None


def scale_rows_op():
    global SCALE_ROWS
    if SCALE_ROWS is None:
        @tg.op(outputs={"out": tg.like("x")}, replace=True,
               schedule=lambda target, binding: [tg.Parallel(stage=0, axes=(0, 1))])
        def scale_rows(x=tg.tensor("A B C"), w=tg.tensor("A B", dtype="x")):
            return lambda a, b, c: x[a, b, c] * w[a, b] + 1.0

        SCALE_ROWS = scale_rows
    return SCALE_ROWS


def test_a_two_axis_parallel_on_another_op_is_honoured():
    op = scale_rows_op()
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 5, 40)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    for target in ("ft78ne", "ascend910b", "cpu"):
        kernel = tilegrad.compile(op, target)
        report = kernel.plan(x=x, w=w)
        parallel = [d for d in report.schedule if d["directive"].startswith("Parallel")]
        assert parallel == [{"directive": "Parallel(stage=0, axes=(0, 1))", "source": "user"}]
        assert report.stages[0]["extent"] == 15 and "axes 0, 1 fused" in report.stages[0]["split"]
        np.testing.assert_allclose(kernel(x=x, w=w), x.astype(np.float64) * w[:, :, None] + 1.0, rtol=1e-5)
    tiled = tilegrad.compile(op, "ascend910b").ir("tiled", x=x, w=w)
    assert "arith.remui" in tiled and "arith.divui" in tiled  # the fused index, delinearized


@pytest.mark.parametrize("directive, message", [
    ("Parallel(stage=3, axes=(0, 1))", "the kernel has no stage 3: its stages are 0 to 1"),
    ("Parallel(stage=0, axes=(3,))", "axis 3 is not a parallel axis of stage 0 (its parallel axes are 0 to 2)"),
    ("Parallel(stage=0, axes=(0, 2))", "the axes fused must be adjacent"),
    ("Parallel(stage=0, axes=(1, 2))", "axis 0 (outside axis 1) is not of extent 1"),
    ("Parallel(stage=1, axes=(0, 1, 2))", "axis 2 of stage 1 is tiled"),
    ("Parallel(stage=0, axes=(0, 1), cores=25)", "cores=25 is more than the kernel's 24 blocks"),
    ("Vectorize(stage=0, axis=2)", "not applied on scratchpad targets yet"),
    ("RFactor(stage=0, axis=0, chunks=4)", "not applied on scratchpad targets yet"),
])
def test_an_illegal_directive_is_refused_by_name(attention_call, directive, message):
    arrays, _ = attention_call
    kernel = tilegrad.compile("attention_backward", "ascend910b", schedule=directive)
    with pytest.raises(ScheduleError) as error:
        kernel.plan(**arrays)
    assert str(error.value).startswith(str(parse_directive(directive)))  # named as printed
    assert message in str(error.value)


def test_stages_without_parallel_axes_refuse_a_parallel():
    @tg.op(outputs={"total": tg.shaped(dtype="x")}, replace=True)
    def total_of(x=tg.tensor("N")):
        return lambda: tg.reduce_sum(x.shape[0], lambda n: x[n])

    x = np.ones(63, np.float32)
    kernel = tilegrad.compile(total_of, "ascend910b")
    assert [d["directive"] for d in kernel.plan(x=x).schedule] == ["RFactor(stage=0, chunks=24)"]
    given = tilegrad.compile(total_of, "ascend910b", schedule="RFactor(stage=0, chunks=24)")  # as printed
    assert given(x=x) == 63.0
    for stage, reason in ((0, "reduces to one element"), (1, "combines stage 0's per-core partials")):
        with pytest.raises(ScheduleError, match=reason):
            tilegrad.compile(total_of, "ascend910b", schedule=f"Parallel(stage={stage})").plan(x=x)


def test_a_scatter_keeps_its_split_by_destination():
    arrays = {"grad": np.ones((6, 4), np.float32), "indices": np.array([0, 2, 2, 1, 0, 3], np.int64)}
    kernel = tilegrad.compile("embedding_dense_backward", "ascend910b", schedule="Parallel(axes=(0, 1))")
    with pytest.raises(ScheduleError, match="applies to no stage"):
        kernel.plan(**arrays, num_weights=5)


def test_malformed_schedules_are_refused():
    with pytest.raises(ScheduleError, match="line 2: .*unknown directive 'Paralel'"):
        tilegrad.compile("softmax_backward", "ascend910b", schedule="Parallel(stage=0)\nParalel(stage=1)")
    with pytest.raises(ArgumentError, match="is not a directive"):
        tilegrad.compile("softmax_backward", "ascend910b", schedule=[3])
    with pytest.raises(ScheduleError, match="cores must be an integer >= 1"):
        tilegrad.compile("softmax_backward", "ascend910b", schedule=[tg.Parallel(cores=0)])

    @tg.op(outputs={"y": tg.like("x")}, replace=True, schedule=lambda target, binding: "Parallel()")
    def badly_scheduled(x=tg.tensor("N")):
        return lambda n: x[n]

    with pytest.raises(DefinitionError, match="schedule function .* returned 'Parallel\\(\\)'"):
        tilegrad.compile(badly_scheduled, "ascend910b").plan(x=np.ones(4, np.float32))


def test_a_directive_changes_the_cache_key(attention_call):
    arrays, _ = attention_call
    keys = set()
    for schedule in (None, "Parallel(axes=(0, 1), cores=12)", "Parallel(axes=(0, 1), cores=13)"):
        kernel = tilegrad.compile("attention_backward", "ascend910b", schedule=schedule)
        args, kwargs, _, blocks = kernel._split_call((), arrays)
        keys.add(kernel.specialize(kernel.op.bind(kernel.target, args, kwargs), blocks).key)
    assert len(keys) == 3


def test_the_pass_takes_the_directives_as_an_option():
    hint = ScheduleHint(directives=(tg.Parallel(stage=0, axes=(0, 1), balance="vendor"),))
    tile = TileForTarget.of(tilegrad.get_target("ascend910b"), 0, dataclasses.replace(hint))
    spec = str(tile.pipeline_pass_spec())
    assert spec == ('tile-for-target{target="ascend910b" schedule="Parallel(stage=0, axes=(0, 1), '
                    'balance=\'vendor\')"}')
    assert parse_pipeline(spec).passes[0].hint == tile.hint
    with pytest.raises(ScheduleError, match="tile-for-target's schedule option, line 1"):
        TileForTarget("ascend910b", schedule="Parallel(stage=-1)").hint


def run(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr()


def test_plan_schedule_file_round_trip(attention_file, tmp_path, capsys):
    shapes = ["--shape", f"p={B}x{L}x{L}", *(f"{n}={B}x{L}x{D}" for n in ("do", "q", "k", "v"))]
    common = ["--load", str(attention_file), "--target", "ascend910b", *shapes]
    code, out = run(capsys, "plan", "attention_backward", *common)
    printed = out.out.split("schedule:\n", 1)[1].split("cores busy")[0]
    assert code == 0
    assert printed == "  Parallel(stage=0, axes=(0, 1))  # planner\n  Parallel(stage=1, axes=(0, 1))  # planner\n"
    # edit: stage 1 back to the outer axis alone, on 16 cores
    edited = tmp_path / "schedule.txt"
    edited.write_text(printed.replace("Parallel(stage=1, axes=(0, 1))", "Parallel(stage=1, cores=16)"))
    code, out = run(capsys, "plan", "attention_backward", *common, "--schedule", str(edited), "--json")
    report = json.loads(out.out)
    assert report["schedule"] == [{"directive": "Parallel(stage=0, axes=(0, 1))", "source": "user"},
                                  {"directive": "Parallel(stage=1, cores=16)", "source": "user"}]
    assert [s["cores_busy"] for s in report["stages"]] == [24, 16]
    code, out = run(capsys, "run", "attention_backward", *common, "--schedule", str(edited), "--check",
                    "--repeat", "0")
    assert code == 0 and "within" in out.out
    edited.write_text("Parallel(stage=0, axes=(0, 1))\nParallel(stage=1, axes=(1, 2))\n")
    code, out = run(capsys, "show", "attention_backward", *common, "--schedule", str(edited))
    assert code != 0 and "Parallel(stage=1, axes=(1, 2)): the axes split must be the stage's outer axes, but " \
        "axis 0 (outside axis 1) is not of extent 1" in out.err
    edited.write_text("# tried\nParallel(stage=0, axes=(0, 1)\n")
    code, out = run(capsys, "plan", "attention_backward", *common, "--schedule", str(edited))
    assert code != 0 and f"--schedule {edited}, line 2: 'Parallel(stage=0, axes=(0, 1)' is not a directive" in out.err


def test_a_saved_plan_given_back_with_no_planner_runs_as_printed(tmp_path, capsys):
    """`tilegrad plan`'s whole output saved is a schedule file (its schedule: section is read, the
    rest skipped, errors keep their line numbers); with --no-planner exactly that runs: the tiled IR
    is the planner's own, and the result is checked against torch."""
    common = ["batch_norm_backward", "--target", "cpu", "--shape", "x=67x5x1x1"]
    code, out = run(capsys, "plan", *common)
    assert code == 0 and "Unroll(stage=0, factor=8)  # planner" in out.out
    saved = tmp_path / "plan.txt"
    saved.write_text(out.out)
    code, planned = run(capsys, "show", *common)
    code, given = run(capsys, "show", *common, "--schedule", str(saved), "--no-planner")
    assert code == 0 and given.out == planned.out
    code, out = run(capsys, "run", *common, "--schedule", str(saved), "--no-planner", "--check", "--repeat", "0")
    assert code == 0 and "within" in out.out
    lines = saved.read_text().splitlines()
    first = lines.index("schedule:") + 1  # (0-based: the first directive's line)
    lines[first] = "  Unroll(stage=0, factor=-8)"
    saved.write_text("\n".join(lines))
    code, out = run(capsys, "plan", *common, "--schedule", str(saved))
    assert code != 0 and f"--schedule {saved}, line {first + 1}: Unroll(stage=0, factor=-8)" in out.err
