"""Loops bound by their arithmetic (common.arithmetic_bound): stream-stores leaves their stores
alone from the target's compute_bound_ops, and lower-to-llvm asks LLVM to run four of their vectors
side by side (`!llvm.loop` interleave count). Hand-written IR in, IR out; then LLVM's own reading
of the hint."""

import dataclasses
import re

import numpy as np
import pytest

import tilegrad
import tilegrad.targets as targets
import tilegrad.targets.host as host
from tilegrad.backends.cpu import BACKEND as CPU
from tilegrad.codegen.jit import optimize
from tilegrad.passes.common import arithmetic_bound
from tilegrad.pipeline import _convert, run_passes

MEMREF = "memref<?x?xf32, strided<[?, 1]>>"
KERNEL = f"""
builtin.module {{
  func.func @k(%x: {MEMREF} {{tg.name = "x", tg.role = "input"}},
               %y: {MEMREF} {{tg.name = "y", tg.role = "output"}}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : {MEMREF}
    %m = memref.dim %x, %c1 : {MEMREF}
    scf.for %i = %c0 to %n step %c1 {{
      scf.for %j = %c0 to %m step %c1 {{
        %v = memref.load %x[%i, %j] : {MEMREF}
        BODY
        memref.store %w, %y[%i, %j] : {MEMREF}
      }}
    }}
    func.return
  }}
}}
"""
EXP = KERNEL.replace("BODY", "%w = math.exp %v : f32")  # 27 float ops for a load and a store
SQUARE = KERNEL.replace("BODY", "%w = arith.mulf %v, %v : f32")


def innermost(text: str):
    module = run_passes(text, "")
    return next(op for op in module.walk() if op.name == "scf.for" and not any(
        inner.name == "scf.for" for inner in op.body.block.ops))


def test_a_loop_is_arithmetic_bound_from_eight_float_ops_per_element_it_moves():
    assert arithmetic_bound(innermost(EXP))
    assert not arithmetic_bound(innermost(SQUARE))
    # float64's exp is a polynomial too (fdlibm's); a square root is one op
    assert arithmetic_bound(innermost(EXP.replace("f32", "f64")))
    assert not arithmetic_bound(innermost(EXP.replace("math.exp", "math.sqrt")))
    # a load the loop does not walk (x[i, 0]) is made once, before it: the store alone is moved
    three_loads = KERNEL.replace("BODY", f"%a = memref.load %x[%i, %c0] : {MEMREF}\n"
                                 f"        %b = memref.load %x[%i, %j] : {MEMREF}\n"
                                 "        %e = math.exp %a : f32\n        %w = arith.addf %e, %b : f32")
    assert arithmetic_bound(innermost(three_loads))
    assert not arithmetic_bound(innermost(three_loads.replace("%x[%i, %c0]", "%x[%j, %c0]")))


def test_a_loop_that_carries_a_value_is_not():
    carried = EXP.replace(
        "scf.for %j = %c0 to %m step %c1 {", "%z = arith.constant 0.0 : f32\n"
        "      %t = scf.for %j = %c0 to %m step %c1 iter_args(%acc = %z) -> (f32) {").replace(
        f"memref.store %w, %y[%i, %j] : {MEMREF}\n      }}",
        f"memref.store %w, %y[%i, %j] : {MEMREF}\n        %s = arith.addf %acc, %w : f32\n"
        "        scf.yield %s : f32\n      }")
    assert not arithmetic_bound(innermost(carried))


def test_stream_stores_leaves_an_arithmetic_bound_loop_alone():
    assert "nontemporal = true" not in str(run_passes(EXP, "stream-stores{min_bytes=1}"))
    assert str(run_passes(SQUARE, "stream-stores{min_bytes=1}")).count("nontemporal = true") == 16
    # exp's 27 float ops for a load and a store are 13.5 per element moved: bound at 8, not at 16
    assert "nontemporal = true" not in str(run_passes(EXP, "stream-stores{min_bytes=1 compute_bound_ops=8}"))
    assert str(run_passes(EXP, "stream-stores{min_bytes=1 compute_bound_ops=16}")).count("nontemporal = true") == 16


@pytest.mark.parametrize("identity, splits", [
    (("AuthenticAMD", 0x17, 0x01), True),  # Zen (Naples): LLVM's znver1
    (("AuthenticAMD", 0x17, 0x18), True),  # Zen+ (Picasso)
    (("AuthenticAMD", 0x15, 0x02), True),  # Piledriver: bdver2
    (("AuthenticAMD", 0x16, 0x30), True),  # Jaguar: btver2
    (("AuthenticAMD", 0x17, 0x31), False),  # Zen 2 (Rome)
    (("AuthenticAMD", 0x19, 0x11), False),  # Zen 4 (Genoa)
    (("GenuineIntel", 0x06, 0x55), False),  # Skylake-SP
    (("", 0, 0), False),  # no /proc/cpuinfo
])
def test_the_host_target_streams_up_to_twice_the_arithmetic_where_wide_vectors_do_not_split(
        monkeypatch, identity, splits):
    monkeypatch.setattr(host, "cpu_identity", lambda: identity)
    assert host.host_splits_wide_vectors() is splits
    assert host.HostModel().compute_bound_ops() == (8 if splits else 16)


def test_the_host_target_carries_its_bound_into_stream_stores():
    """swish backward does 37 float ops per 3 elements moved (dy, x, dx): streamed on a target whose
    bound is 16, not on one whose bound is 8, with the same bits either way."""
    cpu = targets.get_target("cpu")
    assert cpu.compute_bound_ops == host.HOST.compute_bound_ops()
    x = np.linspace(-6, 6, 4099, dtype=np.float32).reshape(1, 1, 1, -1)
    dy = np.cos(x)
    results = {}
    for bound in (8, 16):
        target = tilegrad.register_target(dataclasses.replace(
            cpu, name=f"test-compute-bound-{bound}", stream_store_bytes=1, compute_bound_ops=bound), replace=True)
        k = tilegrad.compile("activation_backward", target)
        assert ("dx" in k.plan(dy=dy, x=x, mode="swish").streamed) is (bound == 16)
        results[bound] = k(dy=dy, x=x, mode="swish")
    np.testing.assert_array_equal(results[8], results[16])


def test_lower_to_llvm_asks_for_four_vectors_on_the_back_branch_of_such_a_loop():
    out = str(run_passes(EXP, "expand-math,lower-to-llvm"))
    hinted = [line for line in out.splitlines() if "tg.interleave_count" in line]
    assert len(hinted) == 1 and "llvm.br" in hinted[0] and "tg.interleave_count = 4 : i32" in hinted[0]
    assert "tg.interleave_count" not in str(run_passes(SQUARE, "expand-math,lower-to-llvm"))


@pytest.fixture(scope="module")
def exp_llvm() -> str:
    return str(_convert("k", run_passes(EXP, "expand-math,lower-to-llvm"), CPU))


def test_the_conversion_gives_llvm_the_interleave_count_as_a_loop_id(exp_llvm):
    branch = next(line for line in exp_llvm.splitlines() if "!llvm.loop" in line)
    assert branch.strip().startswith("br label")
    loop_id = re.search(r"!llvm\.loop (!\d+)", branch).group(1)
    node = next(line for line in exp_llvm.splitlines() if line.startswith(f"{loop_id} = "))
    hint = re.search(rf"^{loop_id} = !{{ ?{loop_id}, (!\d+) ?}}$", node).group(1)  # names itself first
    assert f'{hint} = !{{ !"llvm.loop.interleave.count", i32 4 }}' in exp_llvm


def test_llvm_takes_the_hint(exp_llvm):
    """The vectorized loop of exp runs four vectors an iteration (LLVM chose two by itself)."""
    optimized = optimize(exp_llvm)
    body = optimized[optimized.index("vector.body"):]
    body = body[:body.index("br i1")]
    assert len(re.findall(r"= load <\d+ x float>", body)) == 4
    unhinted = optimize(exp_llvm.replace("!llvm.loop", "!unused"))
    body = unhinted[unhinted.index("vector.body"):]
    assert len(re.findall(r"= load <\d+ x float>", body[:body.index("br i1")])) < 4
