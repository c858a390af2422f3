"""Shared fixtures: oracles come from PyTorch (CPU) or float64 numpy; kernels are shared across
tests through tilegrad's in-process specialization cache (one compile per specialization)."""

import os
import tempfile

import ml_dtypes
import numpy as np
import pytest

os.environ.setdefault("TILEGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="tilegrad-test-cache-"))
# TILEGRAD_VERIFY_EACH_PASS=1 verifies every kernel's IR after every pass (a quarter of a compile):
# opt-in, like TILEGRAD_FUZZ=long; test_ir_workflow verifies after every pass for every library op
# on each target family, and each stage is verified as it ends

torch = pytest.importorskip("torch")

TOLERANCE = {
    "float64": dict(rtol=1e-10, atol=1e-10),
    "float32": dict(rtol=1e-5, atol=1e-6),
    "float16": dict(rtol=1e-2, atol=1e-3),
    "bfloat16": dict(rtol=1e-2, atol=1e-2),
}
REDUCTION_TOLERANCE = {**TOLERANCE, "float32": dict(rtol=1e-4, atol=1e-5)}

NUMPY = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

TARGET_DTYPES = {
    "cpu": ("float32", "float16", "bfloat16", "float64"),
    "ascend910": ("float32", "float16"),
    "ascend910b": ("float32", "float16", "bfloat16"),
    "ascend310p": ("float32", "float16"),
    "ft78ne": ("float32",),
    "mt7004": ("float16", "float32"),
    "metax-c500": ("float64", "float32", "float16", "bfloat16"),
}


def library_ops() -> list[str]:
    """The library's ops (tilegrad.opdefs), without the user ops other tests registered."""
    import tilegrad

    return [n for n in tilegrad.list_ops() if (tilegrad.get_op(n).fn.__module__ or "").startswith("tilegrad.opdefs")]


def cases(targets=None):
    """(target, dtype) pairs: every dtype each target supports."""
    return [(t, d) for t, ds in TARGET_DTYPES.items() if targets is None or t in targets for d in ds]


def to_torch(array):
    """A float32/float64 torch tensor of a (possibly half) numpy array: the float32 reference."""
    if array.dtype in (np.float16, ml_dtypes.bfloat16):
        array = array.astype(np.float32)
    return torch.from_numpy(np.ascontiguousarray(array))


def assert_close(out, ref, dtype, reduction=False):
    table = REDUCTION_TOLERANCE if reduction else TOLERANCE
    got = np.asarray(out).astype(np.float64)
    want = np.asarray(ref.detach().numpy() if hasattr(ref, "detach") else ref).astype(np.float64)
    np.testing.assert_allclose(got, want, **table[dtype])


FUZZ_STATS = {"cases": 0, "mismatches": 0, "canary_hits": 0}
"""What tests/test_fuzz.py checked (printed at the end of the run)."""
GUARD_FUZZ_STATS = {"mutants": 0, "refused": 0, "caught": 0, "ran": 0, "escapes": 0}
"""What tests/test_guard_fuzz.py ran (printed at the end of the run)."""


def pytest_sessionfinish(session):
    """An xdist worker hands its counts to the controller (pytest_testnodedown adds them up)."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["fuzz_stats"] = dict(FUZZ_STATS)
        session.config.workeroutput["guard_fuzz_stats"] = dict(GUARD_FUZZ_STATS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for key, count in getattr(node, "workeroutput", {}).get("fuzz_stats", {}).items():
        FUZZ_STATS[key] += count
    for key, count in getattr(node, "workeroutput", {}).get("guard_fuzz_stats", {}).items():
        GUARD_FUZZ_STATS[key] += count


def pytest_terminal_summary(terminalreporter):
    if FUZZ_STATS["cases"]:
        terminalreporter.write_line(
            f"fuzz: {FUZZ_STATS['cases']} cases across ops, targets and dtypes; "
            f"{FUZZ_STATS['mismatches']} mismatches, {FUZZ_STATS['canary_hits']} canary hits")
    if GUARD_FUZZ_STATS["mutants"]:
        terminalreporter.write_line(
            f"guard fuzz: {GUARD_FUZZ_STATS['mutants']} mutants; {GUARD_FUZZ_STATS['refused']} refused, "
            f"{GUARD_FUZZ_STATS['caught']} caught, {GUARD_FUZZ_STATS['ran']} ran; "
            f"{GUARD_FUZZ_STATS['escapes']} escapes")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def without_pass(monkeypatch):
    """build(op, pass_class): a kernel for op compiled afresh with that pass doing nothing (the
    session's compiled kernels of op and the disk cache out of the way)."""
    from tilegrad.kernel import _SPECIALIZATIONS

    def build(op, pass_class):
        monkeypatch.setattr(pass_class, "apply", lambda self, ctx, module: None)
        monkeypatch.setenv("TILEGRAD_CACHE", "0")
        for key in [k for k in _SPECIALIZATIONS if k[0] == op]:
            monkeypatch.delitem(_SPECIALIZATIONS, key)
        import tilegrad

        return tilegrad.compile(op, "cpu")
    return build
