"""Same inputs, same bits: across repeated calls, data addresses, and, for the ops whose reduction
order the core split does not change, across targets, core counts and core masks.

Which ops are in that set, and why:
- elementwise ops (binary_cross_entropy_grad, activation_backward, dropout_backward) reduce
  nothing: each element is one expression whichever core computes it;
- scatter ops split by destination row (embedding_dense_backward, nll_loss_backward, max
  pooling_backward): every core walks the whole domain in order and accumulates only the rows it
  owns, so each row sums its contributions in domain order for any number of cores.
Ops with reductions split or tiled per target (batch norm, softmax, LRN, ...) are deterministic
run to run, but their summation order may differ between targets; they are not in the set.
"""

import numpy as np
import pytest

import tilegrad
from tests.test_guard import small_call

SPLIT_INVARIANT = ["binary_cross_entropy_grad", "activation_backward", "dropout_backward",
                   "embedding_dense_backward", "nll_loss_backward", "pooling_backward"]
LAUNCHES = [("cpu", None), ("ascend910b", None), ("ascend310p", None), ("ascend910", None), ("metax-c500", None),
            ("ft78ne", 0x01), ("ft78ne", 0x0F), ("ft78ne", None), ("mt7004", 0x30)]


def outputs(result):
    return result if isinstance(result, tuple) else (result,)


def shifted(array: np.ndarray) -> np.ndarray:
    """The same values at another address (4 bytes off the original alignment)."""
    raw = np.empty(array.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data % 64) + 4
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


@pytest.mark.parametrize("name", SPLIT_INVARIANT)
def test_bitwise_identical_across_calls_addresses_and_core_splits(name):
    arrays, attrs = small_call(name, "float32", seed=3)
    reference = [o.copy() for o in outputs(tilegrad.compile(name, "cpu", untiled=True)(**arrays, **attrs))]
    supported = tilegrad.get_op(name).supported_targets()
    for target, mask in [(t, m) for t, m in LAUNCHES if t in supported]:
        kernel = tilegrad.compile(name, target)
        launch = {"core_mask": mask} if mask is not None else {}
        for attempt in range(2):
            inputs = {n: shifted(a) for n, a in arrays.items()} if attempt else arrays
            for got, want in zip(outputs(kernel(**inputs, **attrs, **launch)), reference):
                assert got.tobytes() == want.tobytes(), f"{name} on {target} (mask {mask}) differs"


@pytest.mark.parametrize("name", ["batch_norm_backward", "softmax_backward", "lrn_cross_channel_backward"])
def test_repeated_calls_are_bitwise_identical(name):
    arrays, attrs = small_call(name, "float32", seed=5)
    kernel = tilegrad.compile(name, "ascend910b")
    first = [o.copy() for o in outputs(kernel(**arrays, **attrs))]
    for _ in range(3):
        inputs = {n: shifted(a) for n, a in arrays.items()}
        assert [o.tobytes() for o in outputs(kernel(**inputs, **attrs))] == [o.tobytes() for o in first]
