"""Loops that store interleaved phases (y[2j] and y[2j + 1], what split-stride-phases makes):
lower-to-llvm marks their back branch, and on a host whose 256-bit shuffles split into 128-bit
halves (HostModel.splits_wide_vectors) the conversion caps their vectors at 128 bits. Hand-written IR
in, IR out; then LLVM's own reading of the hint."""

import re

import pytest
from test_arithmetic_bound_loops import KERNEL as ARITHMETIC_KERNEL
from test_arithmetic_bound_loops import MEMREF, innermost

from tilegrad.backends.cpu import CpuBackend
from tilegrad.codegen import jit
from tilegrad.passes.loop_affine import interleaved_store_bytes
from tilegrad.pipeline import _convert, run_passes
from tilegrad.targets.host import HostModel

KERNEL = ARITHMETIC_KERNEL.replace(
    "BODY", "%w = arith.mulf %v, %v : f32\n        %c2 = arith.constant 2 : index\n"
    "        %even = arith.muli %j, %c2 : index\n        %odd = arith.addi %even, %c1 : index").replace(
    f"memref.store %w, %y[%i, %j] : {MEMREF}",
    f"memref.store %v, %y[%i, %even] : {MEMREF}\n        memref.store %w, %y[%i, %odd] : {MEMREF}")
UNIT = KERNEL.replace("%y[%i, %even]", "%y[%i, %j]").replace("%y[%i, %odd]", "%y[%i, %j]")


def test_a_loop_storing_at_a_stride_stores_interleaved_elements():
    assert interleaved_store_bytes(innermost(KERNEL)) == 4
    assert interleaved_store_bytes(innermost(KERNEL.replace("f32", "f64"))) == 8
    assert interleaved_store_bytes(innermost(UNIT)) == 0
    outer = run_passes(KERNEL, "")
    loop = next(op for op in outer.walk() if op.name == "scf.for")
    assert interleaved_store_bytes(loop) == 0  # not innermost


def test_lower_to_llvm_marks_the_back_branch_of_such_a_loop():
    out = str(run_passes(KERNEL, "lower-to-llvm"))
    marked = [line for line in out.splitlines() if "tg.interleaved_store_bytes" in line]
    assert len(marked) == 1 and "llvm.br" in marked[0] and "tg.interleaved_store_bytes = 4 : i32" in marked[0]
    assert "tg.interleaved_store_bytes" not in str(run_passes(UNIT, "lower-to-llvm"))


def converted(split: bool) -> str:
    """The conversion's text on a host model whose wide vectors split or not."""
    backend = CpuBackend("cpu", HostModel(splits_wide_vectors=split))
    return str(_convert("k", run_passes(KERNEL, "lower-to-llvm"), backend))


def test_the_width_is_a_hint_only_where_wide_shuffles_split():
    split = converted(True)
    branch = next(line for line in split.splitlines() if "!llvm.loop" in line)
    loop_id = re.search(r"!llvm\.loop (!\d+)", branch).group(1)
    node = next(line for line in split.splitlines() if line.startswith(f"{loop_id} = "))
    hint = re.search(rf"^{loop_id} = !{{ ?{loop_id}, (!\d+) ?}}$", node).group(1)
    assert f'{hint} = !{{ !"llvm.loop.vectorize.width", i32 4 }}' in split  # 16 bytes of f32
    assert "!llvm.loop" not in converted(False)


def vector_body(optimized: str) -> str:
    if "vector.body" not in optimized:
        pytest.skip("LLVM did not vectorize this loop on this host")
    body = optimized[optimized.index("vector.body"):]
    return body[:body.index("br i1")]


def test_llvm_takes_the_hint(monkeypatch):
    """Capped, the loop stores its two phases as one group of 2 x 4 lanes; left alone, LLVM (for
    this host's AVX2 or wider) stores groups of 2 x 8 lanes or more."""
    capped = vector_body(jit.optimize(converted(True)))
    assert re.search(r"store <8 x float>", capped) and not re.search(r"<16 x float>", capped)
    import llvmlite.binding as llb

    if "+avx2" in llb.get_host_cpu_features().flatten():
        free = vector_body(jit.optimize(converted(False)))
        assert re.search(r"store <(16|32) x float>", free)
