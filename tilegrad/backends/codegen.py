"""Code generation every backend shares: what xDSL's llvmlite conversion drops, carried into the
llvmlite module (streaming stores' `!nontemporal`, the loops' vectorizer hints). Every target's
kernel is this host's code (a scratchpad target's in emulation), so every backend uses it."""

from __future__ import annotations

from llvmlite import ir as llvm_ir
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp

from tilegrad.errors import InternalError
from tilegrad.passes.lower_to_llvm import INTERLEAVE_COUNT, INTERLEAVED_STORE_BYTES
from tilegrad.targets.host import HOST, HostModel


def mark_nontemporal_stores(module: ModuleOp, llvm_module) -> None:
    """Give LLVM the `!nontemporal` of the llvm dialect's stores (xDSL's conversion drops it). The
    conversion makes one llvmlite store of each llvm.store, function by function in block order,
    so the n-th of each are the same store."""
    flag = None
    for fn in module.ops:
        if not isinstance(fn, llvm.FuncOp) or not fn.body.blocks:
            continue
        ours = [op.nontemporal is not None for block in fn.body.blocks for op in block.ops
                if isinstance(op, llvm.StoreOp)]
        if not any(ours):
            continue
        converted = llvm_module.get_global(fn.sym_name.data)
        theirs = [i for block in converted.blocks for i in block.instructions if isinstance(i, llvm_ir.StoreInstr)]
        if len(theirs) != len(ours):
            raise InternalError(f"{fn.sym_name.data}: {len(ours)} stores became {len(theirs)} in the conversion")
        flag = flag or llvm_module.add_metadata([llvm_ir.Constant(llvm_ir.IntType(32), 1)])
        for streaming, store in zip(ours, theirs):
            if streaming:
                store.set_metadata("nontemporal", flag)


def mark_loop_hints(module: ModuleOp, llvm_module, host: HostModel = HOST) -> None:
    """Give LLVM the vectorizer hints lower-to-llvm put on loops' back branches: `!llvm.loop`
    metadata, a loop id that names itself, as LLVM requires, with the interleave count
    (INTERLEAVE_COUNT) and, on a host whose wide shuffles split (HostModel.splits_wide_vectors), a
    vector width of 128 bits for a loop that stores interleaved phases (INTERLEAVED_STORE_BYTES).
    As with the stores, the n-th llvm.br of a function is its n-th unconditional branch."""
    split = host.splits_wide_vectors

    def hints(op) -> dict[str, int]:
        found = {}
        if INTERLEAVE_COUNT in op.attributes:
            found["llvm.loop.interleave.count"] = op.attributes[INTERLEAVE_COUNT].value.data
        if split and INTERLEAVED_STORE_BYTES in op.attributes:  # 128 bits of the stored elements
            found["llvm.loop.vectorize.width"] = max(16 // op.attributes[INTERLEAVED_STORE_BYTES].value.data, 1)
        return found

    for fn in module.ops:
        if not isinstance(fn, llvm.FuncOp) or not fn.body.blocks:
            continue
        ours = [hints(op) for block in fn.body.blocks for op in block.ops if isinstance(op, llvm.BrOp)]
        if not any(ours):
            continue
        name = fn.sym_name.data
        converted = llvm_module.get_global(name)
        theirs = [i for block in converted.blocks for i in block.instructions
                  if isinstance(i, llvm_ir.Branch) and not isinstance(i, llvm_ir.ConditionalBranch)]
        if len(theirs) != len(ours):
            raise InternalError(f"{name}: {len(ours)} branches became {len(theirs)} in the conversion")
        for n, (found, branch) in enumerate(zip(ours, theirs)):
            if not found:
                continue
            nodes = [llvm_module.add_metadata([llvm_ir.MetaDataString(llvm_module, hint),
                                               llvm_ir.Constant(llvm_ir.IntType(32), value)])
                     for hint, value in found.items()]
            loop = llvm_module.add_metadata([llvm_ir.MetaDataString(llvm_module, f"{name} loop {n}"), *nodes])
            loop.operands = (loop, *nodes)  # (made unique by its name first: add_metadata shares equal nodes)
            branch.set_metadata("llvm.loop", loop)
