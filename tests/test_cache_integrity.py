"""The disk cache never yields a wrong result or a crash: corrupt, truncated, deleted, edited or
raced entries are detected and rebuilt; many threads and processes share kernels safely."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
import warnings
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
@pytest.mark.parametrize("file", ["meta.json", "llvm.ll", "kernel.so"])
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
    body = {k: v for k, v in sealed.items() if k != "digest"}
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


# ---- what the cache trusts: its owner, and nothing it merely finds (issue 43) -------------------

IR = {"op": "op text", "llvm": "llvm text", "object": b"\x7fELF object"}


def entry_dirs(root):
    return sorted(p.name for p in root.iterdir() if not p.name.startswith("."))


@pytest.fixture
def quiet_once(monkeypatch):
    """Every one-time warning can be given again, and is recorded."""
    monkeypatch.setattr(cache, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def test_an_entry_copied_under_another_key_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    cache.store("keya", IR, {"i": 1})
    shutil.copytree(tmp_path / "keya", tmp_path / "keyb")
    assert json.loads((tmp_path / "keyb" / "meta.json").read_text())["key"] == "keya"
    assert cache.load("keyb") is None
    assert entry_dirs(tmp_path) == ["keya"]  # removed, so a store rebuilds it
    assert cache.load("keya") == (IR, {"i": 1})


def test_relus_kernel_never_answers_for_tanh(fresh_cache, monkeypatch):
    """The issue's case: relu's entry copied over tanh's passes every other check (same functions,
    same block count) and would run relu's code for tanh."""
    rng = np.random.default_rng(0)
    y, dy, x = (rng.uniform(-1, 1, (2, 3, 4, 5)).astype(np.float32) for _ in range(3))

    def call(mode):  # a new kernel object each time: it keeps no specialization of its own
        return tilegrad.compile("activation_backward", "cpu")(y=y.copy(), dy=dy.copy(), x=x.copy(), mode=mode)

    relu = call("relu")
    (relu_key,) = entry_dirs(fresh_cache)
    want = call("tanh")
    (tanh_key,) = set(entry_dirs(fresh_cache)) - {relu_key}
    np.testing.assert_allclose(want, dy * (1 - y.astype(np.float64) ** 2), rtol=1e-5, atol=1e-6)
    assert not np.allclose(relu, want)
    shutil.rmtree(fresh_cache / tanh_key)
    shutil.copytree(fresh_cache / relu_key, fresh_cache / tanh_key)
    forget_in_memory(monkeypatch)
    np.testing.assert_array_equal(call("tanh"), want)
    assert cache.load(tanh_key)[1] != cache.load(relu_key)[1]  # rebuilt as tanh's own


def make_hostile_entries(root, outside):
    """One entry per way a file can be something no reader should open or read whole."""
    hostile = {}
    for name in ("meta.json", "kernel.so", "llvm.ll"):
        for how in ("fifo", "link to /dev/zero", "link to a good copy", "directory", "over the size cap"):
            key = f"{how.replace(' ', '_').replace('/', '_')}__{name.replace('.', '_')}"
            cache.store(key, IR, {})
            path = root / key / name
            good = path.read_bytes()
            path.unlink()
            if how == "fifo":
                os.mkfifo(path)
            elif how == "link to /dev/zero":
                path.symlink_to("/dev/zero")
            elif how == "link to a good copy":
                (outside / key).write_bytes(good)
                path.symlink_to(outside / key)
            elif how == "directory":
                path.mkdir()
            else:
                with open(path, "wb") as f:  # sparse: no disk, and refused by its size before a read
                    f.truncate(cache.MAX_FILE_BYTES + 1)
            hostile[key] = path
    return hostile


LOAD_EACH = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from tilegrad.codegen import cache
for key in sys.argv[1:]:
    print(key, cache.load(key) is None, flush=True)
"""


def test_only_regular_files_within_the_cap_are_read(tmp_path, monkeypatch):
    """A FIFO blocks an open for reading, a link to /dev/zero reads until memory runs out: the loads
    run in a process with a time and a memory limit, so a regression fails instead of hanging."""
    root = tmp_path / "cache"
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(root))
    hostile = make_hostile_entries(root, tmp_path)
    try:
        out = subprocess.run([sys.executable, "-c", LOAD_EACH, *hostile], capture_output=True, text=True,
                             timeout=60).stdout
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"a load hung after:\n{hung.stdout}")
    assert out.split() == [word for key in hostile for word in (key, "True")]
    assert sorted(root.iterdir()) == []  # every one refused and removed
    assert (tmp_path / "link_to_a_good_copy__kernel_so").read_bytes() == IR["object"]  # a link's target is kept


def test_a_fifo_in_an_entry_is_rebuilt_in_process(fresh_cache, monkeypatch):
    want = bce()
    (entry,) = entry_dirs(fresh_cache)
    (fresh_cache / entry / "kernel.so").unlink()
    os.mkfifo(fresh_cache / entry / "kernel.so")
    forget_in_memory(monkeypatch)

    class Hung(BaseException):  # not an OSError: no handler on the way may take it for a damaged file
        pass

    def hung(*_):
        raise Hung("a load blocked on the FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        np.testing.assert_array_equal(bce(), want)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert stat.S_ISREG(os.lstat(fresh_cache / entry / "kernel.so").st_mode)  # rebuilt


def test_a_writable_or_foreign_entry_or_file_is_refused(tmp_path, monkeypatch):
    """Entries are written 0o700 and their files 0o600; one another user could have written is not read."""
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    for key, path, mode in (("dir_o", "", 0o757), ("dir_g", "", 0o770), ("file_o", "llvm.ll", 0o602),
                            ("file_g", "kernel.so", 0o620)):
        cache.store(key, IR, {})
        os.chmod(tmp_path / key / path, mode)
        assert cache.load(key) is None, key
    assert entry_dirs(tmp_path) == []
    assert cache.store("mine", IR, {}) is not None
    assert stat.S_IMODE(os.stat(tmp_path / "mine").st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "mine").iterdir()} == {0o600}
    real = os.geteuid()
    monkeypatch.setattr(cache.os, "geteuid", lambda: real + 1)  # as if another user wrote the directory
    monkeypatch.setattr(cache, "_distrust", lambda root: None)
    assert cache.load("mine") is None


@pytest.mark.parametrize("mode", [0o777, 0o703], ids=["0777", "0703"])
def test_a_cache_directory_others_can_write_is_not_used(tmp_path, monkeypatch, quiet_once, mode):
    root = tmp_path / "cache"
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(root))
    cache.store("before", IR, {})
    os.chmod(root, mode)
    assert cache.load("before") is None
    assert cache.store("after", IR, {}) is None
    assert entry_dirs(root) == ["before"]  # read nor written, nor removed
    messages = [str(w.message) for w in quiet_once]
    assert len(messages) == 1 and str(root) in messages[0] and "memory only" in messages[0]
    assert f"writable by other users (mode {stat.filemode(mode | stat.S_IFDIR)})" in messages[0]
    os.chmod(root, 0o700)
    assert cache.load("before") == (IR, {})


def test_a_cache_directory_is_refused_for_what_its_group_allows(tmp_path, monkeypatch, quiet_once):
    """Group-writable is refused unless the group is this user's alone (a user private group)."""
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    cache.store("entry", IR, {})
    os.chmod(tmp_path, 0o770)
    monkeypatch.setattr(cache, "_private_group", lambda gid, uid: True)
    assert cache.load("entry") == (IR, {})
    monkeypatch.setattr(cache, "_private_group", lambda gid, uid: False)
    assert cache.load("entry") is None
    assert len(quiet_once) == 1 and "writable by other users" in str(quiet_once[0].message)


def test_a_cache_directory_of_another_user_is_not_used(tmp_path, monkeypatch, quiet_once):
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    cache.store("entry", IR, {})
    real = os.geteuid()
    monkeypatch.setattr(cache.os, "geteuid", lambda: real + 1)
    assert cache.load("entry") is None
    (warning,) = quiet_once
    assert str(tmp_path) in str(warning.message) and f"owned by uid {real}" in str(warning.message)


def test_a_parent_others_can_write_is_refused_unless_sticky(tmp_path, monkeypatch, quiet_once):
    """Whoever can write a parent can put another directory in the cache's place (/tmp is sticky)."""
    shared = tmp_path / "shared"
    root = shared / "cache"
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(root))
    cache.store("entry", IR, {})
    os.chmod(shared, 0o777)
    assert cache.load("entry") is None
    (warning,) = quiet_once
    assert f"its parent {shared} is writable by other users" in str(warning.message)
    os.chmod(shared, 0o1777)
    assert cache.load("entry") == (IR, {})


def test_a_new_cache_directory_is_private(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path / "new" / "cache"))
    old = os.umask(0o002)  # a umask that leaves group write on
    try:
        assert cache.store("entry", IR, {}) is not None
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "cache").st_mode) == 0o700
    assert cache.load("entry") == (IR, {})


@pytest.mark.parametrize("value", ["lots", "-1", "nan", "inf", "-inf", "1e400", " "])
def test_a_bad_size_cap_is_ignored_with_one_warning(tmp_path, monkeypatch, quiet_once, value):
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILEGRAD_CACHE_MAX_MB", value)
    for i in range(3):
        assert cache.store(f"entry{i}", IR, {}) is not None
    assert entry_dirs(tmp_path) == ["entry0", "entry1", "entry2"]  # no cap: nothing evicted
    (warning,) = quiet_once
    assert f"TILEGRAD_CACHE_MAX_MB={value!r}" in str(warning.message)
    assert "finite number of megabytes >= 0" in str(warning.message)


def test_a_bad_size_cap_never_fails_a_compile(fresh_cache, monkeypatch, quiet_once):
    monkeypatch.setenv("TILEGRAD_CACHE_MAX_MB", "lots")
    np.testing.assert_allclose(bce("cpu"), bce_oracle(), rtol=1e-5)
    assert len(entry_dirs(fresh_cache)) == 1


def bce_oracle():
    x, y = X.astype(np.float64), Y.astype(np.float64)
    return (x - y) / (x * (1 - x)) / X.size


def test_a_size_cap_of_zero_keeps_nothing_on_disk(tmp_path, monkeypatch, quiet_once):
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    cache.store("entry", IR, {})
    monkeypatch.setenv("TILEGRAD_CACHE_MAX_MB", "0")
    assert not cache.disk_enabled()
    assert cache.store("other", IR, {}) is None and cache.load("entry") is None
    assert entry_dirs(tmp_path) == ["entry"] and not quiet_once


def test_what_killed_writers_left_is_collected(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()  # reaped: its pid names no process
    alive = os.getpid()
    now = time.time()
    ages = {f".k1.{dead.pid}.0000000a": 120, f".trash.k2.{dead.pid}.0000000b": 120,  # killed writers: collected
            f".k3.{dead.pid}.0000000c": 1,  # too fresh to judge by a pid (another host may own it): kept
            f".k4.{alive}.0000000d": 120,  # a live writer: kept
            f".k5.{alive}.0000000e": 7200,  # abandoned whoever has the pid now: collected
            ".user-notes": 7200}  # not the cache's: kept
    for name, age in ages.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "llvm.ll").write_text("partial")
        os.utime(tmp_path / name, (now - age, now - age))
    cache.store("entry", IR, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f".k3.{dead.pid}.0000000c", f".k4.{alive}.0000000d", ".user-notes", "entry"])


def test_a_constant_the_op_reads_is_part_of_its_key(tmp_path, monkeypatch):
    """An op whose loop bound or scale comes from a module constant, a closure or a default gets
    a new kernel when that value changes, never the kernel traced with the old one."""
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    source = textwrap.dedent('''
        import tilegrad.dsl as tg

        TERMS = {terms}

        def scaled(v, by={by}):
            return v * by

        def make(offset):
            @tg.op(name="constant_keyed_{tag}", outputs={{"y": tg.like("x")}}, replace=True)
            def op(x=tg.tensor("N")):
                y = x
                for _ in range(TERMS):
                    y = y + 1.0
                return scaled(y) + offset
            return op
        make({offset})
        ''')
    x = np.arange(5, dtype=np.float32)
    results = {}
    for terms, by, offset in [(3, 2.0, 0.5), (4, 2.0, 0.5), (4, 3.0, 0.5), (4, 3.0, 1.5)]:
        namespace: dict = {}
        exec(compile(source.format(terms=terms, by=by, offset=offset, tag="t"), "user_op.py", "exec"), namespace)
        got = tilegrad.compile("constant_keyed_t", "cpu")(x=x)
        np.testing.assert_allclose(got, (x.astype(np.float64) + terms) * by + offset, rtol=1e-6)
        results[(terms, by, offset)] = got
    assert len({r.tobytes() for r in results.values()}) == 4
