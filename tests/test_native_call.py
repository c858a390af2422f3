"""The native call path (tilegrad/codegen/_fastcall.c): a bound signature runs in C, anything it
does not match goes through the checking path, and the C side refuses malformed signatures."""

import numpy as np
import pytest
from conftest import torch

import tilegrad
from tilegrad.abi import STATUS_SLOTS
from tilegrad.call_path import _fastcall, signature

SHAPE = (2, 3, 4, 5)


@pytest.fixture(scope="module")
def relu():
    return tilegrad.compile("activation_backward", "cpu")


def aten_relu(dy, x):
    return torch.ops.aten.threshold_backward(torch.from_numpy(dy), torch.from_numpy(x), 0.0).numpy()


def arrays(rng, shape=SHAPE, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)


def test_a_bound_call_runs_natively_on_each_calls_arrays(relu, rng, monkeypatch):
    x, dy = arrays(rng)
    relu(y=x, dy=dy, x=x, mode="relu")  # binds
    monkeypatch.setattr(type(relu), "_call_checked", lambda *a, **k: pytest.fail("took the checking path"))
    for _ in range(3):
        x, dy = arrays(rng)
        first, second = relu(y=x, dy=dy, x=x, mode="relu"), relu(y=x, dy=dy, x=x, mode="relu")
        assert first is not second  # a fresh output per call
        np.testing.assert_array_equal(first, aten_relu(dy, x))


@pytest.mark.parametrize("change", ["strides", "dtype", "shape", "mode", "keyword order", "positional", "subclass"])
def test_what_a_signature_does_not_match_is_checked_again(relu, rng, change, monkeypatch):
    x, dy = arrays(rng)
    relu(y=x, dy=dy, x=x, mode="relu")
    call = dict(y=x, dy=dy, x=x, mode="relu")
    want = aten_relu(dy, x)
    if change == "strides":
        wide_x, wide_dy = arrays(rng, (2, 3, 4, 10))
        wide_x[..., ::2], wide_dy[..., ::2] = x, dy
        call.update(y=wide_x[..., ::2], dy=wide_dy[..., ::2], x=wide_x[..., ::2])
    elif change == "dtype":
        call.update(y=x.astype(np.float64), dy=dy.astype(np.float64), x=x.astype(np.float64))
    elif change == "shape":
        call.update(y=x[:1], dy=dy[:1], x=x[:1])
        want = want[:1]
    elif change == "mode":
        call["mode"] = "sigmoid"
        want = torch.ops.aten.sigmoid_backward(torch.from_numpy(dy), torch.from_numpy(x)).numpy()
    elif change == "keyword order":
        call = dict(mode="relu", x=x, dy=dy, y=x)
    elif change == "subclass":
        call.update(dy=dy.view(type("Sub", (np.ndarray,), {})))
    checked = type(relu)._call_checked
    calls = []
    monkeypatch.setattr(type(relu), "_call_checked", lambda self, *a, **k: calls.append(1) or checked(self, *a, **k))
    got = relu(x, dy, x, mode="relu") if change == "positional" else relu(**call)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-7)
    assert calls == [1]


def test_a_refused_call_is_refused_every_time(relu, rng):
    """A call the checking path refuses binds nothing: its repeat is refused again."""
    x, dy = arrays(rng)
    for _ in range(2):
        with pytest.raises(tilegrad.ShapeError):
            relu(y=x, dy=dy[:1], x=x, mode="relu")
        with pytest.raises(tilegrad.TilegradError):
            relu(y=x, dy=dy, x=x, mode="no such mode")


def test_an_unhashable_argument_is_checked_every_call(rng):
    k = tilegrad.compile("activation_backward", "cpu")
    x, dy = arrays(rng)
    for _ in range(2):
        with pytest.raises(tilegrad.TilegradError):
            k(y=x, dy=dy, x=x, mode=["relu"])
    assert k._signature_count == 0


def test_a_scratchpad_target_runs_natively_with_its_ub(rng):
    """On a staged target the bound signature runs through the UB pool (canaries checked)."""
    k = tilegrad.compile("binary_cross_entropy_grad", "ascend910b")
    x = rng.uniform(0.05, 0.95, 3000).astype(np.float32)
    y = rng.uniform(0, 1, 3000).astype(np.float32)
    g = np.ones(1, np.float32)
    first = k(input_x=x, input_y=y, dloss=g, reduction="mean").copy()
    assert k._signature_count == 1
    again = k(input_x=x, input_y=y, dloss=g, reduction="mean")
    np.testing.assert_array_equal(first, again)
    want = torch.ops.aten.binary_cross_entropy_backward(torch.ones(()), torch.from_numpy(x), torch.from_numpy(y),
                                                        None, 1).numpy()
    np.testing.assert_allclose(again, want, rtol=1e-5)


def test_with_the_native_path_off_every_call_is_checked(relu, rng, monkeypatch):
    x, dy = arrays(rng)
    relu(y=x, dy=dy, x=x, mode="relu")
    calls = []
    checked = type(relu)._call_checked
    monkeypatch.setattr(type(relu), "_call_checked", lambda self, *a, **k: calls.append(1) or checked(self, *a, **k))
    _fastcall.set_native_path(False)
    try:
        np.testing.assert_array_equal(relu(y=x, dy=dy, x=x, mode="relu"), aten_relu(dy, x))
    finally:
        _fastcall.set_native_path(True)
    assert calls == [1]


def test_the_array_layout_the_c_side_reads_is_numpys():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)[:, ::-1, 1:]
    a.flags.writeable = False
    assert _fastcall.array_fields(a) == (a.ctypes.data, a.shape, a.strides, a.dtype, False)


def _signature(**change):
    args = dict(given={"x": np.zeros(4, np.float32), "out": np.zeros(4, np.float32)}, slots={"x": 0, "out": 1},
                written={"out"}, new=[], outputs=["out"], argv=np.zeros(11, np.int64), status_slot=2,
                status_count=8, driver=1, blocks=1, run=None, status_error=None, keep=None)
    args.update(change)
    return signature(**args)


def test_the_c_side_refuses_a_malformed_signature():
    """Slots outside the argument array, outputs naming nothing: refused before any call can use them."""
    assert isinstance(_signature(), _fastcall.Signature)
    with pytest.raises(ValueError, match="slot"):
        _signature(slots={"x": 0, "out": 11})
    with pytest.raises(ValueError, match="limits"):
        _signature(status_slot=3)  # inside the status words
    with pytest.raises(ValueError, match="limits"):
        _signature(driver=0)
    with pytest.raises(ValueError, match="limits"):  # a kernel writes all of its status words
        _signature(status_count=7, argv=np.zeros(10, np.int64))
    with pytest.raises(ValueError, match="slot"):  # a pointer slot among the status words
        _signature(slots={"x": 0, "out": 4})
    assert _fastcall.STATUS_WORDS == STATUS_SLOTS
    with pytest.raises(ValueError, match="1 to 64 outputs"):
        _signature(outputs=[])
    with pytest.raises(ValueError, match="overlap"):
        _fastcall.Signature(("x",), ((np.dtype(np.float32), (4,), (4,), 0, True),), bytes(8 * 11), 2, 8,
                            (0, 0, 16, 1, 5, 0, 16), (), (0,), 1, 1, None, None, None)
    assert _signature(given={"x": np.zeros(4, np.float32), "out": np.zeros(4, np.float32), "mode": ["a"]}) is None
