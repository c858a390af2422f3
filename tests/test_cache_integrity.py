"""The disk cache never yields a wrong result or a crash: corrupt, truncated, deleted, edited or
raced entries are detected and rebuilt; many threads and processes share kernels safely."""

import json
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tilegrad
import tilegrad.kernel
from tilegrad.codegen import cache

X = np.linspace(0.05, 0.95, 1000, dtype=np.float32)
Y = X[::-1].copy()
ONE = np.ones(1, np.float32)


def bce(target="ascend910b"):
    return tilegrad.compile("binary_cross_entropy_grad", target)(input_x=X, input_y=Y, dloss=ONE)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty cache directory, and no kernel kept in memory: every compile goes to disk."""
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tilegrad.kernel, "_SPECIALIZATIONS", {})
    return tmp_path


def forget_in_memory(monkeypatch):
    monkeypatch.setattr(tilegrad.kernel, "_SPECIALIZATIONS", {})


def damage(path, how):
    if how == "delete":
        path.unlink()
    elif how == "truncate":
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    elif how == "empty":
        path.write_text("")
    elif how == "garbage":
        path.write_bytes(os.urandom(200))


@pytest.mark.parametrize("how", ["delete", "truncate", "empty", "garbage"])
@pytest.mark.parametrize("file", ["meta.json", "llvm.ll", "tiled.mlir", "op.mlir"])
def test_damaged_entry_is_rebuilt(fresh_cache, monkeypatch, file, how):
    want = bce()
    (entry,) = [p for p in fresh_cache.iterdir() if not p.name.startswith(".")]
    damage(entry / file, how)
    forget_in_memory(monkeypatch)
    np.testing.assert_array_equal(bce(), want)
    assert cache.load(entry.name) is not None  # rebuilt and intact again


def test_plausible_but_wrong_meta_is_rejected(fresh_cache, monkeypatch):
    want = bce()
    (entry,) = [p for p in fresh_cache.iterdir() if not p.name.startswith(".")]
    sealed = json.loads((entry / "meta.json").read_text())
    sealed["meta"]["num_blocks"] *= 2  # valid JSON, wrong content
    (entry / "meta.json").write_text(json.dumps(sealed))
    assert cache.load(entry.name) is None
    forget_in_memory(monkeypatch)
    np.testing.assert_array_equal(bce(), want)


def test_a_fresh_process_survives_a_doctored_entry(fresh_cache):
    bce()
    (entry,) = [p for p in fresh_cache.iterdir() if not p.name.startswith(".")]
    sealed = json.loads((entry / "meta.json").read_text())
    sealed["meta"]["num_blocks"] *= 2
    body = {k: sealed[k] for k in ("format", "meta", "files")}
    sealed["digest"] = cache._sha(json.dumps(body, sort_keys=True))  # even a re-sealed edit is cross-checked
    (entry / "meta.json").write_text(json.dumps(sealed))
    script = textwrap.dedent("""
        import numpy as np, tilegrad
        x = np.linspace(0.05, 0.95, 1000, dtype=np.float32)
        dx = tilegrad.compile("binary_cross_entropy_grad", "ascend910b")(input_x=x, input_y=x[::-1].copy(),
                                                                       dloss=np.ones(1, np.float32))
        print(float(dx.astype(np.float64).sum()))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "TILEGRAD_CACHE_DIR": str(fresh_cache)})
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx(float(bce().astype(np.float64).sum()))


def test_racing_writers_never_show_a_torn_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    texts = [{"op": f"op {i}" * 2000, "llvm": f"llvm {i}" * 5000} for i in range(4)]
    torn = []

    def writer(i):
        for _ in range(30):
            cache.store("racekey", texts[i], {"writer": i})

    def reader():
        for _ in range(300):
            hit = cache.load("racekey")
            if hit is not None:
                ir, meta = hit
                if ir != texts[meta["writer"]]:
                    torn.append(meta)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert torn == []
    assert cache.load("racekey") is not None
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_size_cap_evicts_least_recently_used(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILEGRAD_CACHE_MAX_MB", "0.05")  # about 52 KB
    big = {"llvm": "x" * 20000}
    for i in range(2):
        cache.store(f"entry{i}", big, {"i": i})
        os.utime(tmp_path / f"entry{i}" / "meta.json", (i, i))  # entry0 is the older
    cache.load("entry0")  # ... until it is used again
    cache.store("entry2", big, {"i": 2})  # over the cap: the least recently used goes
    kept = sorted(p.name for p in tmp_path.iterdir())
    total = sum(f.stat().st_size for p in tmp_path.iterdir() for f in p.iterdir())
    assert total <= 0.05 * (1 << 20)
    assert kept == ["entry0", "entry2"]


def test_threads_compile_and_call_shared_and_distinct_kernels(fresh_cache):
    ops = [("binary_cross_entropy_grad", "cpu"), ("binary_cross_entropy_grad", "ascend910b"),
           ("binary_cross_entropy_grad", "ft78ne"), ("binary_cross_entropy_grad", "metax-c500")]
    want = {t: tilegrad.compile(op, t, untiled=True)(input_x=X, input_y=Y, dloss=ONE) for op, t in ops}

    def work(i):
        op, target = ops[i % len(ops)]
        n = 500 + 37 * (i % 5)  # several shapes per kernel
        got = tilegrad.compile(op, target)(input_x=X[:n], input_y=Y[:n], dloss=ONE)
        return np.allclose(got, want[target][:n] * (1000 / n), rtol=1e-5)  # mean: dx scales with 1/numel

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(48)))


def test_processes_share_one_cache_directory(fresh_cache):
    script = textwrap.dedent("""
        import numpy as np, tilegrad
        x = np.linspace(0.05, 0.95, 1000, dtype=np.float32)
        for target in ("cpu", "ascend910b", "mt7004"):
            dx = tilegrad.compile("binary_cross_entropy_grad", target)(input_x=x, input_y=x[::-1].copy(),
                                                                     dloss=np.ones(1, np.float32))
            print(dx.astype(np.float64).sum())
    """)
    env = {**os.environ, "TILEGRAD_CACHE_DIR": str(fresh_cache)}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    sums = {out for out, _ in outputs}
    assert len(sums) == 1
    want = bce().astype(np.float64).sum()
    assert all(float(v) == pytest.approx(want) for v in sums.pop().split())


def test_every_ops_key_is_the_same_in_every_process():
    """An op's cache key does not depend on the process: not on hash randomization (the order a
    set of names is walked in) nor on where a function object lives (a view function's repr)."""
    script = ("import hashlib, tilegrad, tilegrad.kernel as k; "
              "print({n: hashlib.sha256(k._op_source(tilegrad.get_op(n)).encode()).hexdigest() "
              "for n in tilegrad.list_ops()})")
    keys = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")]
    assert keys[0] == keys[1] and "softmax_backward" in keys[0]


def test_a_fresh_process_shows_the_assembly_of_a_cached_kernel(fresh_cache):
    """A hit loads the object without LLVM; printing the assembly then brings LLVM up on demand."""
    bce()
    out = subprocess.run([sys.executable, "-m", "tilegrad.cli", "show", "binary_cross_entropy_grad", "--target",
                          "ascend910b", "--shape", "input_x=1000", "--stage", "asm"], capture_output=True, text=True,
                         env={**os.environ, "TILEGRAD_CACHE_DIR": str(fresh_cache)}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "binary_cross_entropy_grad_stage0" in out.stdout and "ret" in out.stdout
