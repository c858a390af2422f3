"""Scans (passes/scan_reductions.py): a reduction whose range grows by one term per step of an output
axis, written as a user writes it (a prefix or suffix reduce_sum, tg.cumsum, tg.scan) or as a stage
reading its own earlier elements, runs as one in-order running accumulation per row: checked
against torch (cumsum, cummax, cummin, cumprod, flip) on cpu (float32, float64, the guard build)
and ascend910b (float32), the Scan directive the plan lists and its off form, determinism across
core counts, and the refusals."""

import dataclasses
import re

import numpy as np
import pytest
from conftest import torch  # skips without torch

import tilegrad
import tilegrad.dsl as tg
from tilegrad.errors import DefinitionError, ScheduleError
from tilegrad.schedule import Scan
from tilegrad.targets import get_target

TOLERANCE = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-10)}
"""SPEC's reduction tolerance: a scan sums in another order than each element's own range (not
bitwise the O(n^2) form's); a float32 sum runs in float64, so it is well inside it."""

WHERE = [("cpu", "float32", False), ("cpu", "float64", False), ("cpu", "float32", True),
         ("ascend910b", "float32", False)]
"""(target, dtype, guard build)."""


@tg.op(outputs={"dx": tg.like("dy")}, replace=True)
def scan_suffix_sum(dy=tg.tensor("N D")):
    cols = dy.shape[1]
    return lambda n, i: tg.reduce_sum(cols - i, lambda t: dy[n, i + t])  # cumsum's backward


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_prefix_sum(x=tg.tensor("N D")):
    return lambda n, i: tg.reduce_sum(i + 1, lambda t: x[n, t])


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_lagged_window(x=tg.tensor("N D"), g=tg.tensor("N D", dtype="x")):
    """Written from the other end (x[n, i - t]), with more around it: a stage of the form too."""
    return lambda n, i: g[n, i] * tg.reduce_sum(i + 1, lambda t: x[n, i - t]) + x[n, i]


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_any(x=tg.tensor("A B C"), combine=tg.attr("sum", ("sum", "max", "min", "prod")),
             reverse=tg.attr(False), axis=tg.attr(1)):
    return tg.scan(x, axis, combine, reverse)


@tg.op(outputs={"dx": tg.like("dy")}, replace=True)
def scan_cumsum_backward(dy=tg.tensor("N D"), scale=tg.attr(1.0, runtime=True)):
    return tg.cumsum(dy * scale, 1, reverse=True)


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_recurrence(x=tg.tensor("N D")):
    y = tg.output("y")
    y.assign(lambda n, i: tg.where(i.eq(0), x[n, 0], x[n, i] + y[n, i - 1]))  # the first element given


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_recurrence_into_temp(x=tg.tensor("N D")):
    n, d = x.shape
    acc = tg.temp("acc", (n, d))
    acc.assign(lambda i, j: x[i, j] + tg.where(j + 1 < d, acc[i, j + 1], 0.0))  # a suffix sum, walked down
    return lambda i, j: acc[i, j] * 2.0


def _torch_scan(x: np.ndarray, combine: str, reverse: bool, axis: int) -> np.ndarray:
    t = torch.from_numpy(x).double()
    if reverse:
        t = torch.flip(t, [axis])
    out = {"sum": lambda: torch.cumsum(t, axis), "prod": lambda: torch.cumprod(t, axis),
           "max": lambda: torch.cummax(t, axis).values, "min": lambda: torch.cummin(t, axis).values}[combine]()
    return (torch.flip(out, [axis]) if reverse else out).numpy()


def _schedule(kernel, **call) -> dict[str, str]:
    """The plan's directives, as printed, each with who decided it."""
    return {entry["directive"]: entry["source"] for entry in kernel.plan(**call).schedule}


def _compile(name: str, target: str, guard: bool, **options):
    return tilegrad.compile(name, target, guard=guard, **options)


@pytest.mark.parametrize("target,dtype,guard", WHERE)
@pytest.mark.parametrize("shape", [(3, 1), (5, 37), (2, 1100)])
def test_suffix_and_prefix_sums_as_written_match_torch(target, dtype, guard, shape, rng):
    x = rng.standard_normal(shape).astype(dtype)
    suffix = _compile("scan_suffix_sum", target, guard)(dy=x)
    prefix = _compile("scan_prefix_sum", target, guard)(x=x)
    np.testing.assert_allclose(suffix, _torch_scan(x, "sum", True, 1), **TOLERANCE[dtype])
    np.testing.assert_allclose(prefix, _torch_scan(x, "sum", False, 1), **TOLERANCE[dtype])


@pytest.mark.parametrize("target,dtype,guard", WHERE)
def test_a_reduction_written_from_the_other_end_inside_a_larger_body(target, dtype, guard, rng):
    x, g = rng.standard_normal((2, 4, 33)).astype(dtype)
    got = _compile("scan_lagged_window", target, guard)(x=x, g=g)
    np.testing.assert_allclose(got, g * _torch_scan(x, "sum", False, 1) + x, **TOLERANCE[dtype])


@pytest.mark.parametrize("target,dtype,guard,combine", [
    (*where, combine) for where in WHERE for combine in ("sum", "max", "min", "prod")
    if combine in ("sum", "max") or where in (WHERE[0], WHERE[-1])])  # (float64 and guard: one sum, one compare)
def test_tg_scan_along_every_axis_both_ways_matches_torch(target, dtype, guard, combine, rng):
    x = (rng.random((3, 20, 5)) + 0.5).astype(dtype)  # (products of 20 terms stay in range)
    x[1, 7, 2] = np.nan if combine in ("max", "min") else x[1, 7, 2]  # NaN propagates, as torch's
    kernel = _compile("scan_any", target, guard)
    for axis in (0, 1, -1):
        for reverse in (False, True):
            got = kernel(x=x, combine=combine, reverse=reverse, axis=axis)
            want = _torch_scan(x, combine, reverse, axis % 3)
            np.testing.assert_allclose(got, want, **TOLERANCE[dtype], err_msg=f"axis={axis} reverse={reverse}")


@pytest.mark.parametrize("target,dtype,guard", WHERE)
def test_cumsum_of_an_expression_and_scans_reading_their_own_elements(target, dtype, guard, rng):
    x = rng.standard_normal((4, 29)).astype(dtype)
    got = _compile("scan_cumsum_backward", target, guard)(dy=x, scale=0.5)
    np.testing.assert_allclose(got, _torch_scan(x * 0.5, "sum", True, 1), **TOLERANCE[dtype])
    got = _compile("scan_recurrence", target, guard)(x=x)
    np.testing.assert_allclose(got, _torch_scan(x, "sum", False, 1), **TOLERANCE[dtype])
    got = _compile("scan_recurrence_into_temp", target, guard)(x=x)
    np.testing.assert_allclose(got, 2 * _torch_scan(x, "sum", True, 1), **TOLERANCE[dtype])


def test_the_plan_lists_the_scan_and_its_off_form_keeps_the_quadratic_loops(rng):
    x = rng.standard_normal((3, 50)).astype(np.float32)
    kernel = tilegrad.compile("scan_suffix_sum", "cpu")
    assert _schedule(kernel, dy=x)["Scan(stage=0, axis=1)"] == "planner"
    assert "#tg.loop<scan, axis = 1>" in kernel.ir("loops", dy=x)
    off = tilegrad.compile("scan_suffix_sum", "cpu", schedule=[Scan(stage=0, axis=1, scanned=False)])
    loops = off.ir("loops", dy=x)
    assert "#tg.loop<scan" not in loops and "tg.loop<reduce" in loops
    assert _schedule(off, dy=x)["Scan(stage=0, axis=1, scanned=False)"] == "user"
    # the O(n^2) form sums each element's own range: the same values, not the same bits
    np.testing.assert_allclose(off(dy=x), kernel(dy=x), **TOLERANCE["float32"])


def test_a_scan_directive_that_names_no_scan_or_turns_a_recurrence_off_is_refused(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    named = r"Scan\(stage=0\): names no reduction over a prefix.*can: Scan\(stage=0, axis=1\)"
    with pytest.raises(ScheduleError, match=named):
        tilegrad.compile("scan_suffix_sum", "cpu", schedule=[Scan(stage=0, axis=0)])(dy=x)
    with pytest.raises(ScheduleError, match="runs only as a scan"):
        tilegrad.compile("scan_recurrence", "cpu", schedule=[Scan(stage=0, axis=1, scanned=False)])(x=x)


@pytest.mark.parametrize("base,cores", [("cpu", (1, 3)), ("ascend910b", (1, 7))])
def test_the_bits_are_the_same_on_any_core_count(base, cores, rng):
    x = rng.standard_normal((30, 700)).astype(np.float32)
    runs = [tilegrad.compile("scan_suffix_sum", base)(dy=x)]
    for n in cores:
        target = tilegrad.register_target(dataclasses.replace(get_target(base), name=f"test-scan-{base}-{n}", cores=n),
                                          replace=True)
        runs.append(tilegrad.compile("scan_suffix_sum", target)(dy=x))
    for run in runs[1:]:
        np.testing.assert_array_equal(run, runs[0])


@pytest.mark.parametrize("core_mask", [0x1, 0xA5])
def test_the_bits_are_the_same_on_any_core_mask(core_mask, rng):
    x = rng.standard_normal((9, 300)).astype(np.float32)
    kernel = tilegrad.compile("scan_prefix_sum", "ft78ne")
    np.testing.assert_array_equal(kernel(x=x, core_mask=core_mask), kernel(x=x, core_mask=0xFF))
    np.testing.assert_allclose(kernel(x=x, core_mask=core_mask), _torch_scan(x, "sum", False, 1), rtol=1e-5,
                               atol=1e-5)


# ---- what is not a scan ------------------------------------------------------------------------------
@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_both_ways(x=tg.tensor("N D")):
    y = tg.output("y")
    y.assign(lambda i, j: x[i, j] + y[i, j - 1] + y[i, j + 1])  # neighbours on both sides


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_diagonal(x=tg.tensor("N D")):
    y = tg.output("y")
    y.assign(lambda i, j: x[i, j] + y[i - 1, j - 1])  # along two axes at once


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_by_data(x=tg.tensor("N D"), k=tg.tensor("N", dtype=("int64",))):
    y = tg.output("y")
    y.assign(lambda i, j: x[i, j] + y[i, k[i]])  # an element chosen by data


@pytest.mark.parametrize("op,read", [(scan_both_ways, r"y\[i0, i1 - 1\]"), (scan_diagonal, r"y\[i0 - 1, i1 - 1\]"),
                                     (scan_by_data, r"y\[i0, k\[i0\]\]")])
def test_a_stage_reading_its_buffer_not_as_a_scan_is_refused_with_the_line(op, read):
    arrays = {"x": np.zeros((3, 4), np.float32)}
    if op is scan_by_data:
        arrays["k"] = np.zeros(3, np.int64)
    with pytest.raises(DefinitionError) as info:
        tilegrad.compile(op.name, "cpu").ir("op", **arrays)
    message = str(info.value)
    assert message.startswith(f"{op.name}: ") and "test_scan.py:" in message, message
    assert re.search(rf"reads {read}: another element of the buffer it is writing, and not as a scan", message)
    assert "i - 1], walked up" in message


def test_tg_scan_refuses_a_bad_combine_or_axis():
    x = np.zeros((2, 3), np.float32)
    for body, match in ((lambda x: tg.scan(x, 1, "mean"), "combine must be one of"),
                        (lambda x: tg.scan(x, 2), r"axis must be an int in \[-2, 2\)")):
        @tg.op(outputs={"y": tg.like("x")}, replace=True)
        def scan_bad(x=tg.tensor("N D")):
            return body(x)

        with pytest.raises(DefinitionError, match=match):
            tilegrad.compile("scan_bad", "cpu").ir("op", x=x)
