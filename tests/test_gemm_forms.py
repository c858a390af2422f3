"""Contractions written plainly in the DSL, planned as GEMMs on cpu (issue 45): every form of a
reduce_sum of a product whose operands are indexed by the output's and the sum's variables gets a
register tile and packed panels: g @ w (rows of g broadcast, w's columns swept), g.T @ x (the rows'
own operand a column per row: a group panel too), x @ w.T (dot products: unroll-reuse-loops' tile)
and the batched forms, whose rows sit inside a loop over the batch (each batch entry's matrix w[b]
packed at its leading index). Each against float64 numpy at sizes not a multiple of the tile."""

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg
from tilegrad.errors import ScheduleError
from tilegrad.schedule import Memory, Stage
from tilegrad.targets import get_target
from tilegrad.targets.host import HOST


@tg.op(outputs={"dx": tg.shaped("N K", dtype="dy")}, replace=True)
def gemm_forms_dx(dy=tg.tensor("N M"), w=tg.tensor("M K", dtype="dy")):
    return lambda n, k: tg.reduce_sum(dy.shape[1], lambda m: dy[n, m] * w[m, k])


@tg.op(outputs={"dw": tg.shaped("M K", dtype="dy")}, replace=True)
def gemm_forms_dw(dy=tg.tensor("N M"), x=tg.tensor("N K", dtype="dy")):
    return lambda m, k: tg.reduce_sum(dy.shape[0], lambda n: dy[n, m] * x[n, k])


@tg.op(outputs={"out": tg.shaped("N K", dtype="x")}, replace=True)
def gemm_forms_nt(x=tg.tensor("N M"), w=tg.tensor("K M", dtype="x")):
    return lambda n, k: tg.reduce_sum(x.shape[1], lambda m: x[n, m] * w[k, m])


@tg.op(outputs={"out": tg.shaped("B N K", dtype="a")}, replace=True)
def gemm_forms_batched(a=tg.tensor("B N M"), w=tg.tensor("B M K", dtype="a")):
    return lambda b, n, k: tg.reduce_sum(a.shape[2], lambda m: a[b, n, m] * w[b, m, k])


@tg.op(outputs={"out": tg.shaped("B N K", dtype="a")}, replace=True)
def gemm_forms_batched_tn(a=tg.tensor("B M N"), w=tg.tensor("B M K", dtype="a")):
    return lambda b, n, k: tg.reduce_sum(a.shape[1], lambda m: a[b, m, n] * w[b, m, k])


# name: (inputs' shapes, the float64 product, the directives the plan lists beside its core split)
TILE = f"factor={HOST.jam_rows}, tail='clamp'"  # (rows that may run again: the last group clamped)
DOWN = f"factor={HOST.jam_rows})"  # (rows reading their own data down a column: the rest apart)
FORMS = {
    "gemm_forms_dx": (dict(dy=(13, 37), w=(37, 45)), lambda dy, w: dy @ w,
                      [f"UnrollJam(stage=0, {TILE})", "Split(stage=0, factor=", "Stage(stage=0, tensor='w', at=1, "]),
    "gemm_forms_dw": (dict(dy=(37, 13), x=(37, 45)), lambda dy, x: dy.T @ x,
                      [f"UnrollJam(stage=0, {DOWN}", "Split(stage=0, factor=", "Stage(stage=0, tensor='x', at=1, ",
                       f"Stage(stage=0, tensor='dy', memory='panel', groups={HOST.panel_groups}"
                       + (", hoist=1)" if HOST.panel_once else ")")]),
    "gemm_forms_nt": (dict(x=(13, 37), w=(45, 37)), lambda x, w: x @ w.T,
                      ["UnrollJam(stage=0, axis=1, factor=", "ComputeWith(stage=0, reductions="]),
    "gemm_forms_batched": (dict(a=(3, 13, 37), w=(3, 37, 45)), lambda a, w: a @ w,
                           [f"UnrollJam(stage=0, axis=1, {TILE})", "Split(stage=0, factor=",
                            "Stage(stage=0, tensor='w', at=2, "]),
    "gemm_forms_batched_tn": (dict(a=(3, 37, 13), w=(3, 37, 45)), lambda a, w: a.transpose(0, 2, 1) @ w,
                              [f"UnrollJam(stage=0, axis=1, {DOWN}", "Split(stage=0, factor=",
                               "Stage(stage=0, tensor='w', at=2, ", "Stage(stage=0, tensor='a', at=1, "]),
}


def inputs(name: str, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    wide = {k: rng.standard_normal(s) for k, s in FORMS[name][0].items()}
    return {k: v.astype(np.float32) for k, v in wide.items()}, wide


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_form_matches_float64(name, guard):
    call, wide = inputs(name)
    got = tilegrad.compile(name, "cpu", guard=guard)(**call)
    np.testing.assert_allclose(got, FORMS[name][1](**wide), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_form_plans_a_register_tile_and_its_panels(name):
    call, _ = inputs(name)
    if HOST.jam_rows < 2:
        pytest.skip("a host model of one-row register tiles")
    schedule = [entry["directive"] for entry in tilegrad.compile(name, "cpu").plan(**call).schedule]
    for wanted in FORMS[name][2]:
        assert any(d.startswith(wanted) for d in schedule), (wanted, schedule)


def test_a_batched_product_packs_each_batch_entry_matrix():
    """The panel of w[b] is taken at the batch loop's index (tg.panel ... at(%i0)), inside that loop,
    and the rows are jammed inside it too: the tile never mixes two batch entries."""
    call, _ = inputs("gemm_forms_batched")
    tiled = tilegrad.compile("gemm_forms_batched", "cpu").ir("tiled", **call)
    assert "tg.panel %w at(%i0) [" in tiled
    assert tiled.index("scf.for %i0") < tiled.index("tg.panel")


@pytest.mark.parametrize("shape", [(1, 3, 40, 33), (2, 9, 130, 70), (2, 6, 130, 530)])
def test_batched_sizes_off_the_tile(shape):
    """A batch of one with fewer rows than a tile (all left over), whole rows as the panel, and
    strips of a packed panel (130 rows of 530 columns are more than the panel holds) with a
    narrower last one."""
    b, n, m, k = shape
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal((b, n, m)), rng.standard_normal((b, m, k))
    got = tilegrad.compile("gemm_forms_batched", "cpu")(a=a.astype(np.float32), w=w.astype(np.float32))
    np.testing.assert_allclose(got, a @ w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["gemm_forms_batched", "gemm_forms_batched_tn"])
def test_the_printed_plan_of_a_batched_form_is_its_kernel(name):
    """The plan given back with the planner off makes the planner's kernel: the inner row loop's
    UnrollJam and the batch entry's panel name what they transform."""
    call, _ = inputs(name)
    planned = tilegrad.compile(name, "cpu")
    text = "\n".join(entry["directive"] for entry in planned.plan(**call).schedule)
    exact = tilegrad.compile(name, "cpu", schedule=text, planner=False)
    assert exact.ir("tiled", **call) == planned.ir("tiled", **call)


def test_a_panel_at_a_batch_entry_outside_the_batch_reads_nothing():
    """tg.panel's `at` indices are indices too: in the guard build one past the batch gives an empty
    matrix, and the first read through it reports, naming the tensor."""
    import re

    from test_guard import run_edited

    call, _ = inputs("gemm_forms_batched")
    kernel = tilegrad.compile("gemm_forms_batched", "cpu")
    tiled = kernel.ir("tiled", **call)
    line = re.search(r"( *)(%panel, %\d+ = tg.panel %w at\()%i0(\).*)", tiled)
    edited = tiled.replace(line.group(0), f"{line.group(1)}%past = arith.constant 7 : index\n"
                                          f"{line.group(1)}{line.group(2)}%past{line.group(3)}")
    err = run_edited(kernel, edited, call, {})
    assert isinstance(err, tilegrad.OutOfBoundsError) and "of w (panel): index" in str(err), err


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("rows, columns", [(37, 1024), (5, 2048)])
def test_g_transposed_in_blocks_of_groups_is_bitwise_the_per_group_kernel(rows, columns, guard):
    """dy.T @ x where dy's rows are 4 KiB and 8 KiB (a multiple of group_alias_bytes): the row groups'
    panels of dy are packed panel_groups groups at a time (a last block of fewer, 45 and 13 columns
    of x); against float64, and bitwise the kernel that packs each group's own (Stage groups=1)."""
    rng = np.random.default_rng(2)
    wide = dict(dy=rng.standard_normal((rows, columns)), x=rng.standard_normal((rows, 45 if rows > 5 else 13)))
    call = {k: v.astype(np.float32) for k, v in wide.items()}
    planned = tilegrad.compile("gemm_forms_dw", "cpu", guard=guard)
    got = planned(**call)
    np.testing.assert_allclose(got, wide["dy"].T @ wide["x"], rtol=1e-4, atol=1e-4)
    one = tilegrad.compile("gemm_forms_dw", "cpu", guard=guard,
                           schedule=[Stage(stage=0, tensor="dy", memory=Memory.PANEL, groups=1)])
    assert np.array_equal(one(**call), got)
    if HOST.panel_groups > 1:  # (not the same kernel: the blocks' loop and their panel)
        assert "panel_columns_1" in planned.ir("tiled", **call) and "panel_columns_1" not in one.ir("tiled", **call)


@tg.op(outputs={"dx": tg.like("x"), "dw": tg.like("w")}, replace=True)
def gemm_forms_linear_backward(dy=tg.tensor("N O"), x=tg.tensor("N I", dtype="dy"), w=tg.tensor("O I", dtype="dy")):
    return (lambda n, i: tg.reduce_sum(dy.shape[1], lambda o: dy[n, o] * w[o, i]),
            lambda o, i: tg.reduce_sum(dy.shape[0], lambda n: dy[n, o] * x[n, i]))


def test_two_contractions_over_the_same_rows_are_two_gemms():
    """dx = dy @ w beside dw = dy.T @ x (whose sum runs over dx's rows): dw is not split into
    per-chunk column partials swept with dx's rows (split-column-reductions leaves a contraction
    alone: dy[n, o] serves every i); each stage gets its register tile, and the values are right
    at sizes off the tile."""
    rng = np.random.default_rng(3)
    wide = dict(dy=rng.standard_normal((37, 21)), x=rng.standard_normal((37, 45)), w=rng.standard_normal((21, 45)))
    call = {k: v.astype(np.float32) for k, v in wide.items()}
    kernel = tilegrad.compile("gemm_forms_linear_backward", "cpu")
    dx, dw = kernel(**call)
    np.testing.assert_allclose(dx, wide["dy"] @ wide["w"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, wide["dy"].T @ wide["x"], rtol=1e-4, atol=1e-4)
    schedule = [entry["directive"] for entry in kernel.plan(**call).schedule]
    assert not any(d.startswith("RFactor") for d in schedule), schedule
    if HOST.jam_rows > 1:
        assert {f"UnrollJam(stage=0, {TILE})", f"UnrollJam(stage=1, {DOWN}"} <= set(schedule), schedule


@tg.op(outputs={"da": tg.shaped("M K", dtype="g"), "db": tg.shaped("M K", dtype="g")}, replace=True)
def gemm_forms_two_transposed(g=tg.tensor("N M"), x=tg.tensor("N K", dtype="g"), y=tg.tensor("N K", dtype="g")):
    return (lambda m, k: tg.reduce_sum(g.shape[0], lambda n: g[n, m] * x[n, k]),
            lambda m, k: tg.reduce_sum(g.shape[0], lambda n: g[n, m] * y[n, k]))


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_contractions_in_one_sweep_chunk_fewer_columns(dtype, guard):
    """g.T @ x beside g.T @ y (g read on the same side by both: they share one nest, g loaded once for
    both; fuse-sibling-loops keeps two that share no side apart): one sweep over n accumulates both sums' jammed
    rows, twice the stack rows a chunk is sized for, so chunk-row-sweeps takes half the columns
    (at least a vector's: the accumulators stay in registers) and the plan says so; against float64
    at sizes off the tile."""
    rng = np.random.default_rng(4)
    wide = dict(g=rng.standard_normal((37, 13)), x=rng.standard_normal((37, 45)), y=rng.standard_normal((37, 45)))
    call = {k: v.astype(dtype) for k, v in wide.items()}
    kernel = tilegrad.compile("gemm_forms_two_transposed", "cpu", guard=guard)
    da, db = kernel(**call)
    np.testing.assert_allclose(da, wide["g"].T @ wide["x"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, wide["g"].T @ wide["y"], rtol=1e-4, atol=1e-4)
    if HOST.jam_rows > 1 and dtype == np.float32 and not guard:
        registers = get_target("cpu").vector_registers
        columns = max(HOST.chunk_lanes, HOST.chunk_columns(registers) // 2 // HOST.chunk_lanes * HOST.chunk_lanes)
        schedule = [entry["directive"] for entry in kernel.plan(**call).schedule]
        assert f"Split(stage=0, factor={columns})" in schedule, schedule  # (the columns left over: tail guard)


@tg.op(outputs={"da": tg.shaped("B M K", dtype="a"), "dc": tg.shaped("B M K", dtype="a")}, replace=True)
def gemm_forms_two_products(a=tg.tensor("B N M"), x=tg.tensor("B N K", dtype="a"), c=tg.tensor("B N M", dtype="a"),
                            y=tg.tensor("B N K", dtype="a")):
    return (lambda b, m, k: tg.reduce_sum(a.shape[1], lambda n: a[b, n, m] * x[b, n, k]),
            lambda b, m, k: tg.reduce_sum(a.shape[1], lambda n: c[b, n, m] * y[b, n, k]))


JOINED = "ComputeWith(stage=0, nests=(0, 1), fused=True)"


def _two_products(shape, dtype):
    batch, rows, m, k = shape
    rng = np.random.default_rng(5)
    wide = {name: rng.standard_normal((batch, rows, cols)) for name, cols in dict(a=m, x=k, c=m, y=k).items()}
    want = [np.einsum("bnm,bnk->bmk", wide[p], wide[q]) for p, q in (("a", "x"), ("c", "y"))]
    return {name: v.astype(dtype) for name, v in wide.items()}, want


@pytest.mark.parametrize("dtype, guard", [(np.float32, False), (np.float64, False), (np.float32, True)])
@pytest.mark.parametrize("shape", [(2, 37, 13, 45), (1, 70, 33, 20)])
@pytest.mark.parametrize("schedule", [None, JOINED])
def test_two_contractions_sharing_no_operand_are_two_gemms(shape, dtype, guard, schedule):
    """sum_n a[b, n, m] x[b, n, k] beside sum_n c[b, n, m] y[b, n, k] (attention backward's dk and dv,
    written fresh): in one nest their register tile would hold both sums and each term load four
    operands, so on cpu they stay two stages, each with its own tile, and the plan lists the pair as
    ComputeWith(..., fused=False); a user's fused=True joins them (one stage). Both against float64
    at sizes off the tile."""
    call, want = _two_products(shape, dtype)
    kernel = tilegrad.compile("gemm_forms_two_products", "cpu", guard=guard, schedule=schedule)
    for got, expected in zip(kernel(**call), want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    report = kernel.plan(**call)
    schedule_text = [entry["directive"] for entry in report.schedule]
    if schedule is None:
        assert "ComputeWith(stage=0, nests=(0, 1), fused=False)" in schedule_text, schedule_text
        assert len(report.stages) == 2
        if HOST.jam_rows > 1:
            assert {f"UnrollJam(stage=0, axis=1, {DOWN}", f"UnrollJam(stage=1, axis=1, {DOWN}"} <= set(schedule_text)
    else:
        assert "ComputeWith(stage=0, nests=(0, 1))" in schedule_text and len(report.stages) == 1, schedule_text


@pytest.mark.parametrize("schedule", [None, JOINED])
def test_the_printed_plan_of_two_contractions_is_its_kernel(schedule):
    """The printed plan, run exactly with the planner off, is the planner's kernel (the pair kept
    apart by its fused=False, or joined by the user's)."""
    call, _ = _two_products((2, 37, 13, 45), np.float32)
    planned = tilegrad.compile("gemm_forms_two_products", "cpu", schedule=schedule)
    text = "\n".join(entry["directive"] for entry in planned.plan(**call).schedule)
    exact = tilegrad.compile("gemm_forms_two_products", "cpu", schedule=text, planner=False)
    assert exact.ir("tiled", **call) == planned.ir("tiled", **call)


def test_a_join_naming_no_pair_of_contractions_is_refused():
    call, _ = _two_products((1, 9, 5, 7), np.float32)
    with pytest.raises(ScheduleError, match=r"ComputeWith\(stage=1, nests=\(0, 1\)\).*fused=False"):
        tilegrad.compile("gemm_forms_two_products", "cpu", schedule="ComputeWith(stage=1, nests=(0, 1))")(**call)


@tg.op(outputs={"out": tg.shaped("M K", dtype="a")}, replace=True)
def gemm_forms_weighted_tn(a=tg.tensor("N M"), b=tg.tensor("N K", dtype="a"), c=tg.tensor("N", dtype="a")):
    return lambda m, k: tg.reduce_sum(a.shape[0], lambda n: a[n, m] * b[n, k] * c[n])


# a transposed operand's group panels read by two or more column strips (the strip: the rows of the
# panel in panel_bytes): name -> (inputs' shapes, the float64 result)
ONCE = {
    "gemm_forms_dw": (dict(dy=(300, 131), x=(300, 515)), lambda dy, x: dy.T @ x),
    "gemm_forms_weighted_tn": (dict(a=(300, 131), b=(300, 515), c=(300,)), lambda a, b, c: (a * c[:, None]).T @ b),
    "gemm_forms_batched_tn": (dict(a=(2, 300, 67), w=(2, 300, 515)), lambda a, w: a.transpose(0, 2, 1) @ w),
    "gemm_forms_two_transposed": (dict(g=(300, 131), x=(300, 515), y=(300, 515)),
                                  lambda g, x, y: (g.T @ x, g.T @ y)),
}


def _outputs(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("dtype, guard", [(np.float32, False), (np.float64, False), (np.float32, True)])
@pytest.mark.parametrize("name", sorted(ONCE))
def test_group_panels_packed_once_per_call_are_the_per_strip_kernel(name, dtype, guard):
    """g.T @ x and its kin where x's columns take several strips: the row groups' own panels of g are
    packed once per call into a workspace the size of g (Stage hoist: the strips' loop), each group's
    contiguous, and every strip reads them back; against float64 at sizes off the tile, and bitwise
    the kernel that packs them again in every strip (the planner's schedule without hoist)."""
    if not HOST.panel_once:
        pytest.skip("a host model that packs group panels per strip")
    shapes, reference = ONCE[name]
    rng = np.random.default_rng(5)
    wide = {k: rng.standard_normal(s) for k, s in shapes.items()}
    call = {k: v.astype(dtype) for k, v in wide.items()}
    kernel = tilegrad.compile(name, "cpu", guard=guard)
    schedule = [entry["directive"] for entry in kernel.plan(**call).schedule]
    assert len([d for d in schedule if "hoist=" in d]) == 1, schedule
    got = _outputs(kernel(**call))
    for out, want in zip(got, _outputs(reference(**wide)), strict=True):
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    per_strip = "\n".join(d.split(", hoist=")[0] + ")" if "hoist=" in d else d for d in schedule)
    strip = tilegrad.compile(name, "cpu", guard=guard, planner=False, schedule=per_strip)
    for a, b in zip(got, _outputs(strip(**call)), strict=True):
        assert np.array_equal(a, b)
    tiled = kernel.ir("tiled", **call)
    assert "packed_once" in tiled and "packed_once" not in strip.ir("tiled", **call)
    source = next(k for k in shapes if f"{k}_panels" in tiled)
    assert kernel.workspace_size(**call) == call[source].nbytes


def test_a_hoist_naming_no_strip_loop_is_refused():
    """Stage(hoist=...) names the loop over column strips the group panels' pack moves out of: an axis
    that is not that loop's is a ScheduleError naming the directive."""
    call = {k: np.zeros(s, np.float32) for k, s in ONCE["gemm_forms_dw"][0].items()}
    kernel = tilegrad.compile("gemm_forms_dw", "cpu",
                              schedule=[Stage(stage=0, tensor="dy", memory=Memory.PANEL, groups=2, hoist=0)])
    with pytest.raises(tilegrad.ScheduleError, match="hoist=0.*loop over column strips"):
        kernel(**call)


# half inputs (SPEC: float32 sums, one rounding on store): name -> the inputs' shapes, off the tile,
# the strips narrower than a row where the panel is a strip's
HALF = {**{name: FORMS[name][0] for name in ("gemm_forms_dx", "gemm_forms_dw", "gemm_forms_batched")},
        **{name: ONCE[name][0] for name in ("gemm_forms_dw", "gemm_forms_weighted_tn", "gemm_forms_batched_tn")},
        "gemm_forms_dx_strips": dict(dy=(37, 300), w=(300, 515)),
        "gemm_forms_dx_tall": dict(dy=(13, 4133), w=(4133, 37))}  # one chunk of w's rows more than a panel


def _half_case(key: str, dtype):
    name = key.removesuffix("_strips").removesuffix("_tall")
    rng = np.random.default_rng(7)
    call = {k: rng.standard_normal(s).astype(dtype) for k, s in HALF[key].items()}
    reference = (FORMS if name in FORMS and HALF[key] == FORMS[name][0] else ONCE).get(name, FORMS.get(name))[1]
    return name, call, _outputs(reference(**{k: v.astype(np.float64) for k, v in call.items()}))


@pytest.mark.parametrize("key, dtype, guard", [(key, "bfloat16", False) for key in sorted(HALF)] + [
    ("gemm_forms_dx_strips", "bfloat16", True), ("gemm_forms_batched_tn", "bfloat16", True),
    ("gemm_forms_dx_tall", "bfloat16", True),
    ("gemm_forms_dx_strips", "float16", False), ("gemm_forms_dw", "float16", False)])
def test_half_panels_hold_float32_and_are_the_kernel_that_widens_every_load(key, dtype, guard):
    """A bfloat16 or float16 GEMM written plainly: every panel is planned float32 (Stage dtype='float32':
    the strips, the groups' own columns packed once per call, the rows the groups broadcast), in
    float32 workspaces of the tensors' sizes (what workspace_size reports); each output rounds once
    the float32 sum (within a half ulp of the float64 product of the half values), bitwise the kernel
    of the same plan with every dtype='' (each value widened where it is read)."""
    import ml_dtypes

    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    name, call, want = _half_case(key, dt)
    kernel = tilegrad.compile(name, "cpu", guard=guard)
    schedule = [entry["directive"] for entry in kernel.plan(**call).schedule]
    panels = [d for d in schedule if "memory='panel'" in d]
    assert panels and all("dtype='float32'" in d for d in panels), schedule
    got = _outputs(kernel(**call))
    ulp = 2.0 ** (-8 if dtype == "bfloat16" else -11)
    for out, ref in zip(got, want, strict=True):
        assert out.dtype == dt
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=ulp, atol=ulp * np.abs(ref).max() * 1e-3)
    tiled = kernel.ir("tiled", **call)
    report = kernel.plan(**call)
    chunk = int(next(d for d in schedule if d.startswith("Split(")).split("factor=")[1].split(",")[0].rstrip(")"))
    expected = 0
    for n, array in call.items():  # a strips' part per block, the groups' panels and rows the tensor's size
        if f'"{n}_panel32"' in tiled:
            expected += 4 * report.block_dim * max(report.panel_bytes // 4, array.shape[-2] * chunk)
        expected += 4 * array.size * sum(f'"{n}_{kind}"' in tiled for kind in ("panels32", "rows32"))
    assert expected and kernel.workspace_size(**call) == expected
    if guard:
        return
    own = "\n".join(d.replace(", dtype='float32'", "").split(", hoist=")[0] + (")" if "hoist=" in d else "")
                    for d in schedule)
    plain = tilegrad.compile(name, "cpu", schedule=own, planner=False)
    assert "f32>" not in plain.ir("tiled", **call).split("tg.panel")[-1].split("\n")[0]
    for a, b in zip(got, _outputs(plain(**call)), strict=True):
        assert np.array_equal(a.view(np.uint16), b.view(np.uint16))


@pytest.mark.parametrize("directive", [
    Stage(stage=0, tensor="dy", memory=Memory.PANEL, groups=2, dtype="float32"),  # a group panel not hoisted
    Stage(stage=0, tensor="x", at=1, memory=Memory.PANEL, dtype="float32")])  # float32 inputs (below)
def test_a_float32_panel_it_cannot_widen_is_refused(directive):
    """dtype='float32' widens a half tensor's panel that lives in a workspace of its size: on a group
    panel packed per strip, or a float32 tensor's, it is a ScheduleError naming the directive."""
    import ml_dtypes

    dt = np.float32 if directive.tensor == "x" else ml_dtypes.bfloat16
    call = {k: np.zeros(s, dt) for k, s in ONCE["gemm_forms_dw"][0].items()}
    with pytest.raises(ScheduleError, match=r"dtype='float32'"):
        tilegrad.compile("gemm_forms_dw", "cpu", schedule=[directive])(**call)


def test_dtype_of_a_panel_is_checked():
    with pytest.raises(ScheduleError, match="dtype must be 'float32'"):
        Stage(stage=0, tensor="x", memory=Memory.PANEL, dtype="float64")
