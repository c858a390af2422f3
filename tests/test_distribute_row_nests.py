"""A row loop of several nests, one a contraction, runs each nest over a tile of rows in a loop of its
own (distribute-row-nests, issue 45): attention backward's stage 0 (dp, delta, ds, dq per row) and two
fresh ops written as a user would, a row chain like it and two layers through a centred row, against float64 numpy
and torch, guarded, at odd sizes; the planner's `Distribute(stage, axis)` in the plan, which a user
sizes (`factor`) or turns off (`distributed=False`)."""

import numpy as np
import pytest
from conftest import torch  # noqa: F401  (skips without torch)
from test_inline_temps import _attention_call, _schedule

import tilegrad
import tilegrad.dsl as tg
from tilegrad.errors import ScheduleError
from tilegrad.schedule import Distribute


@tg.op(outputs={"out": tg.shaped("B", "M", "P", dtype="a")}, replace=True)
def row_chain(a=tg.tensor("B M K"), b=tg.tensor("B N K", dtype="a"), c=tg.tensor("B M N", dtype="a"),
              d=tg.tensor("B N P", dtype="a")):
    """t = a @ b.T, s = rowsum(t c), u = c (t - s), out = u @ d: a softmax-backward-like chain per row."""
    batch, rows, depth = a.shape
    cols = b.shape[1]
    t, s, u = tg.temp("t", (batch, rows, cols)), tg.temp("s", (batch, rows)), tg.temp("u", (batch, rows, cols))
    t.assign(lambda z, i, n: tg.reduce_sum(depth, lambda k: a[z, i, k] * b[z, n, k]))
    s.assign(lambda z, i: tg.reduce_sum(cols, lambda n: t[z, i, n] * c[z, i, n]))
    u.assign(lambda z, i, n: c[z, i, n] * (t[z, i, n] - s[z, i]))
    return lambda z, i, j: tg.reduce_sum(cols, lambda n: u[z, i, n] * d[z, n, j])


@tg.op(outputs={"out": tg.shaped("M", "N", dtype="x")}, replace=True)
def centered_layers(x=tg.tensor("M K"), w1=tg.tensor("K H", dtype="x"), w2=tg.tensor("H N", dtype="x")):
    """h = x @ w1, m = mean_j h, out = (h - m)^2 @ w2: two contractions through a row temp and its mean."""
    rows, depth = x.shape
    hidden = w1.shape[1]
    h, m = tg.temp("h", (rows, hidden)), tg.temp("m", (rows,))
    h.assign(lambda i, j: tg.reduce_sum(depth, lambda k: x[i, k] * w1[k, j]))
    m.assign(lambda i: tg.reduce_sum(hidden, lambda j: h[i, j]) / tg.cast(hidden, "f"))
    return lambda i, n: tg.reduce_sum(hidden, lambda j: (h[i, j] - m[i]) * (h[i, j] - m[i]) * w2[j, n])


def _chain_call(b, m, k, n, p, dtype, seed=0):
    rng = np.random.default_rng(seed)
    call = {name: rng.standard_normal(shape).astype(dtype)
            for name, shape in (("a", (b, m, k)), ("b", (b, n, k)), ("c", (b, m, n)), ("d", (b, n, p)))}
    f = {name: v.astype(np.float64) for name, v in call.items()}
    t = f["a"] @ f["b"].transpose(0, 2, 1)
    s = (t * f["c"]).sum(-1, keepdims=True)
    return call, (f["c"] * (t - s)) @ f["d"]


def _layer_call(m, k, h, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    call = {name: rng.standard_normal(shape).astype(dtype) for name, shape in (("x", (m, k)), ("w1", (k, h)),
                                                                             ("w2", (h, n)))}
    f = {name: v.astype(np.float64) for name, v in call.items()}
    hh = f["x"] @ f["w1"]
    return call, (hh - hh.mean(1, keepdims=True)) ** 2 @ f["w2"]


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if np.dtype(dtype) == np.float32 else dict(rtol=1e-10, atol=1e-10)


CASES = [  # (op, call builder, sizes, the planner's directive)
    ("row_chain", _chain_call, (2, 7, 5, 9, 3), "Distribute(stage=0, axis=1)"),
    ("row_chain", _chain_call, (3, 61, 19, 45, 23), "Distribute(stage=0, axis=1)"),
    ("centered_layers", _layer_call, (13, 6, 11, 5), "Distribute(stage=0)"),
    ("centered_layers", _layer_call, (101, 33, 70, 29), "Distribute(stage=0)"),
]


@pytest.mark.parametrize("op,make,sizes,planned", CASES)
@pytest.mark.parametrize("dtype,guard", [("float32", False), ("float64", True)])
def test_fresh_ops_distributed_match_float64(op, make, sizes, planned, dtype, guard):
    call, want = make(*sizes, dtype)
    kernel = tilegrad.compile(op, "cpu", guard=guard)
    assert _schedule(kernel, call)[planned] == "planner"
    assert f"#tg.loop<tile, axis = {1 if op == 'row_chain' else 0}>" in kernel.ir("tiled", **call)  # the row tiles
    np.testing.assert_allclose(kernel(**call), want, **_tol(dtype))


@pytest.mark.parametrize("op,make,sizes,planned", [CASES[1], CASES[3]])
def test_sized_or_turned_off(op, make, sizes, planned):
    """Each row's nests run in the same order on the same data whatever the tile: the planner's tiles
    (sized at run time) and tiles of 20 rows (a tail of rows) give the same bits; the loop as it was
    matches float64 (its last row, which the dot products' row pairs leave over, runs another code
    path: LLVM's vector dot product in another order, so not the same bits where M is odd)."""
    call, want = make(*sizes, "float32")
    planned_kernel = tilegrad.compile(op, "cpu")
    axis = 1 if op == "row_chain" else 0
    sized = tilegrad.compile(op, "cpu", schedule=[Distribute(stage=0, axis=axis, factor=20)])
    off = tilegrad.compile(op, "cpu", schedule=[Distribute(stage=0, axis=axis, distributed=False)])
    assert _schedule(off, call)[str(Distribute(stage=0, axis=axis, distributed=False))] == "user"
    row_tiles = f"#tg.loop<tile, axis = {axis}>, tg.stage = 0" if axis == 0 else f"#tg.loop<tile, axis = {axis}>"
    assert row_tiles in planned_kernel.ir("tiled", **call) and row_tiles not in off.ir("tiled", **call)
    assert "arith.constant 20 : index" in sized.ir("tiled", **call)
    first = planned_kernel(**call)
    np.testing.assert_allclose(first, want, **_tol("float32"))
    assert np.array_equal(sized(**call), first)
    np.testing.assert_allclose(off(**call), want, **_tol("float32"))


@pytest.mark.parametrize("b,length,depth", [(2, 24, 8), (3, 70, 20)])
@pytest.mark.parametrize("dtype,guard", [(np.float32, False), (np.float64, True)])
def test_attention_backward_distributed_matches_torch(b, length, depth, dtype, guard):
    call, want = _attention_call(b, length, depth, dtype)
    kernel = tilegrad.compile("user_attention_backward", "cpu", guard=guard)
    schedule = _schedule(kernel, call)
    assert schedule["Distribute(stage=0, axis=1)"] == "planner"
    assert schedule["UnrollJam(stage=0, axis=1, factor=5, tail='clamp')"] == "planner"  # dq's rows jammed
    for got, expected in zip(kernel(**call), want):
        np.testing.assert_allclose(got, expected, **_tol(dtype))


def test_attention_backward_turned_off_gives_the_same_bits():
    """(L even: the dot products' row pairs are the same in every tile, so every sum is.)"""
    call, _ = _attention_call(3, 70, 20, np.float32)
    kernel = tilegrad.compile("user_attention_backward", "cpu")
    off = tilegrad.compile("user_attention_backward", "cpu", schedule=[Distribute(stage=0, axis=1, distributed=False)])
    assert "Distribute(stage=0, axis=1)" not in _schedule(off, call)
    for got, other in zip(kernel(**call), off(**call)):
        assert np.array_equal(got, other)


def test_the_printed_plan_given_back_is_the_same_kernel():
    call, _ = _chain_call(*CASES[0][2], "float32")
    planned = tilegrad.compile("row_chain", "cpu")
    text = "\n".join(_schedule(planned, call))
    exact = tilegrad.compile("row_chain", "cpu", schedule=text, planner=False)
    assert exact.ir("tiled", **call) == planned.ir("tiled", **call)


def test_a_distribute_naming_no_row_loop_is_refused():
    call, _ = _chain_call(*CASES[0][2], "float32")
    with pytest.raises(ScheduleError, match="names no loop") as err:
        tilegrad.compile("row_chain", "cpu", schedule=[Distribute(stage=0, axis=2)])(**call)
    assert "Distribute(stage=0, axis=1)" in str(err.value)  # it lists what it can name


def test_a_negative_factor_is_refused():
    with pytest.raises(ScheduleError, match="factor must be an integer >= 0"):
        Distribute(stage=0, axis=1, factor=-1)
