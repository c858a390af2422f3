"""A GEMM's register tile (chunk-row-sweeps) stays in registers through LLVM: the sweep's
accumulators are loaded once before it and stored once after, not per term. LLVM's LICM keeps a
loop's memory in registers only up to a number of accesses in the loop (jit._initialize raises
that cap); at 4 rows x 32 columns the sweep, before LLVM vectorizes it, makes about 400."""

import platform
import re

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg


@tg.op(outputs={"dx": tg.shaped("B", "H", dtype="g")}, replace=True)
def register_tile_grad_input(g=tg.tensor("B V"), w=tg.tensor("V H", dtype="g")):
    """dx = g @ w: a sum down w's columns, 4 rows of g per sweep."""
    return lambda i, h: tg.reduce_sum(w.shape[0], lambda v: g[i, v] * w[v, h])


def fma_blocks(asm: str) -> list[tuple[int, int]]:
    """(FMAs, FMAs with a stack operand) of each basic block of the assembly."""
    blocks, fmas, on_stack = [], 0, 0
    for line in asm.splitlines():
        if re.match(r"^(\.LBB\w+|\w+):", line):
            blocks.append((fmas, on_stack))
            fmas = on_stack = 0
        if "vfmadd" in line:
            fmas += 1
            on_stack += "(%rsp" in line
    return [*blocks, (fmas, on_stack)]


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="reads x86 assembly")
def test_the_sweep_of_a_register_tile_adds_into_registers():
    rng = np.random.default_rng(0)
    g = rng.standard_normal((64, 500)).astype(np.float32)
    w = rng.standard_normal((500, 256)).astype(np.float32)
    k = tilegrad.compile("register_tile_grad_input", "cpu", guard=False)  # the optimized build's code
    np.testing.assert_allclose(k(g=g, w=w), g.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
    fmas, on_stack = max(fma_blocks(k.ir("asm", g=g, w=w)))
    assert fmas >= 8  # the tile's sweep: a vector of columns for each of its rows, twice or more
    assert on_stack == 0
