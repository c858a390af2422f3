"""tabulate-axis-expressions on gathers written as a user writes them: the weights and masks each tap
computes from the position become tables (the planner lists a Table), the results match torch in
float64, and they are bitwise those of the same kernel without tables."""

import numpy as np
import pytest
from conftest import torch  # skips without torch

import tilegrad
import tilegrad.dsl as tg
from tilegrad.errors import ScheduleError
from tilegrad.schedule import Table, parse_directive


def _linear_weight(o, i, n, scale):
    """The weight output o gives input i in torch's linear upsampling by `scale` (align_corners=False)
    along an axis of n inputs: s = max((o + 0.5) / scale - 0.5, 0) lies between floor(s) and the
    next input (the last one at the end)."""
    s = tg.maximum((tg.cast(o, "f") + 0.5) * (1.0 / scale) - 0.5, 0.0)
    left = tg.floor(s)
    frac = s - left
    i0 = tg.cast(left, "i")
    i1 = tg.where(i0 + 1 < n, i0 + 1, n - 1)
    return tg.where(i0.eq(i), 1.0 - frac, 0.0) + tg.where(i1.eq(i), frac, 0.0)


@tg.op(outputs={"dx": tg.shaped_by(lambda shape_of, attrs: (*shape_of("dy")[:2], shape_of("dy")[2] // 3),
                                   dtype="dy")}, replace=True)
def tab_upsample_linear3x_backward(dy=tg.tensor("N C L3")):
    """A fresh op (not in the library, not a benchmark case): linear x3 upsampling's backward as a
    6-tap gather, input i getting outputs 3i - 2 ... 3i + 3 times the weights the forward gave it."""
    out_l = dy.shape[2]
    n_ = out_l // 3

    def term(n, c, i, a):
        o = 3 * i - 2 + a
        return tg.where((o >= 0) & (o < out_l), _linear_weight(o, i, n_, 3.0) * dy[n, c, o], 0.0)

    return lambda n, c, i: tg.reduce_sum(6, lambda a: term(n, c, i, a))


def _linear3x_expected(dy: np.ndarray) -> np.ndarray:
    n, c, l3 = dy.shape
    x = torch.zeros(n, c, l3 // 3, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.interpolate(x, scale_factor=3, mode="linear", align_corners=False).backward(
        torch.from_numpy(dy.astype(np.float64)))
    return x.grad.numpy()


def _bilinear2x_expected(dy: np.ndarray) -> np.ndarray:
    n, c, h2, w2 = dy.shape
    return torch.ops.aten.upsample_bilinear2d_backward(torch.from_numpy(dy.astype(np.float64)), [h2, w2],
                                                       [n, c, h2 // 2, w2 // 2], False, 2.0, 2.0).numpy()


BUILDS = [("cpu", "float32", False), ("cpu", "float64", True), ("ascend910b", "float32", False)]
# float32: the source coordinate of output o is rounded to float32 (at o = 900, by up to 3e-5: the weight's
# error, against float64's exact one); a wrong tap or weight is off by 0.1 or more
TOLERANCE = {"float32": dict(rtol=1e-4, atol=1e-3), "float64": dict(rtol=1e-12, atol=1e-12)}
# the second size has more columns than a table's chunk (1024 // 6 = 170, 1024 // 4 = 256): several chunks
CASES = [("tab_upsample_linear3x_backward", (2, 3, 21), _linear3x_expected),
         ("tab_upsample_linear3x_backward", (3, 4, 3 * 301), _linear3x_expected),
         ("user_upsample_bilinear2x_backward", (2, 3, 10, 14), _bilinear2x_expected),
         ("user_upsample_bilinear2x_backward", (1, 2, 6, 2 * 300), _bilinear2x_expected)]


@pytest.fixture(scope="module", autouse=True)
def _user_ops():
    import tilegrad.user_ops  # noqa: F401  (registers user_upsample_bilinear2x_backward)


@pytest.mark.parametrize("target, dtype, guard", BUILDS, ids=[f"{t}-{d}{'-guard' * g}" for t, d, g in BUILDS])
@pytest.mark.parametrize("op, shape, expected", CASES, ids=[f"{c[0][4:]}-{'x'.join(map(str, c[1]))}" for c in CASES])
def test_gather_with_computed_weights_matches_torch(op, shape, expected, target, dtype, guard):
    dy = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    got = tilegrad.compile(op, target, guard=guard)(dy=dy)
    assert got.dtype == dy.dtype
    np.testing.assert_allclose(got, expected(dy), **TOLERANCE[dtype])


@pytest.mark.parametrize("op, shape, axis", [("tab_upsample_linear3x_backward", (3, 4, 3 * 301), 2),
                                             ("user_upsample_bilinear2x_backward", (1, 2, 6, 2 * 300), 3)])
def test_the_planner_lists_a_table_and_turning_it_off_gives_the_same_bits(op, shape, axis):
    dy = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    tabled = tilegrad.compile(op, "cpu")
    sources = {entry["directive"]: entry["source"] for entry in tabled.plan(dy=dy).schedule}
    assert sources.get(f"Table(stage=0, axis={axis})") == "planner", sources
    assert "memref.alloca" in tabled.ir("tiled", dy=dy)
    plain = tilegrad.compile(op, "cpu", schedule=f"Table(stage=0, axis={axis}, elements=0)")
    assert "memref.alloca" not in plain.ir("tiled", dy=dy)
    small = tilegrad.compile(op, "cpu", schedule=f"Table(stage=0, axis={axis}, elements=64)")
    assert "memref<64xf32>" in small.ir("tiled", dy=dy) or "memref<60xf32>" in small.ir("tiled", dy=dy)
    want = plain(dy=dy)
    np.testing.assert_array_equal(tabled(dy=dy), want)
    np.testing.assert_array_equal(small(dy=dy), want)


def test_a_table_naming_no_vector_loop_is_refused():
    dy = np.zeros((2, 3, 21), np.float32)
    with pytest.raises(ScheduleError, match="Table.*names no vector loop.*Table\\(stage=0, axis=2\\)"):
        tilegrad.compile("tab_upsample_linear3x_backward", "cpu", schedule="Table(stage=0, axis=1)")(dy=dy)


def test_the_table_directive_prints_parses_and_checks():
    table = Table(stage=0, axis=2, elements=64)
    assert parse_directive(str(table)) == table and str(Table(stage=1, axis=3)) == "Table(stage=1, axis=3)"
    assert Table(stage=0, axis=2, elements=0).off and not table.off
    with pytest.raises(ScheduleError, match="elements must be an integer >= 0"):
        Table(stage=0, axis=2, elements=-1)
