"""separate-strided-load-groups: a strided window's loads form whole interleave groups, none a gather.

LLVM vectorizes loads at a stride s as interleave groups: s consecutive elements per iteration
read as s wide loads, then deinterleaved by shuffles. A group holds one load per residue mod s.
Max pooling's window scan (window 3, stride 2) reads a row at 2i - 1, 2i and 2i + 1: 2i - 1 and
2i + 1 have the same residue, so LLVM groups two of them and gathers the third (two vgatherqps per
16 lanes, the most expensive part of the scan). Here the offsets of such a row are covered by
windows of s consecutive offsets, each read through its own name (`tg.opaque_alias`, which the
code generator passes as a pointer LLVM cannot relate to the tensor's):

    x[2i - 1], x[2i], x[2i + 1]    ->    x[2i - 1], x[2i]   and   x'[2i], x'[2i + 1]

Each name then holds one whole group. An offset two windows share is loaded once per window, and
the ops that used it are dealt out among the loads (a load no op uses would be deleted, and its
group left with a hole that LLVM gathers around again), so a row qualifies only where each shared
offset has an op for every window that reads it. The values loaded are the same: results are
bitwise unchanged.

Only a row of a kernel input the function never writes is read through a second name (two names
of a written buffer would break the `noalias` promise), in an innermost loop of step 1 with a
row whose other indices do not move with the loop and whose last index is s*v + (the same terms)
+ a constant, s >= 2, over consecutive constants.

A canonicalization for LLVM's vectorizer, not a schedule choice: the same loops load the same
values, through names that let each interleave group be whole; no loop, order or storage changes
that a directive would choose (the cpu planner lists nothing for it; docs/schedule.md).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect import tg
from tilegrad.passes.common import arg_info, constant_index, depends_on, functions, written_memrefs
from tilegrad.passes.loop_affine import linear_form
from tilegrad.passes.loop_utils import in_cold_version


def _windows(offsets: list[int], stride: int) -> list[range] | None:
    """Windows of `stride` consecutive offsets that cover `offsets` (sorted, distinct), the last
    ending at the largest: None where one group already holds them (no residue twice) or where
    they are not consecutive (a window would have a hole)."""
    low, high = offsets[0], offsets[-1]
    if len(offsets) <= stride or offsets != list(range(low, high + 1)):
        return None
    starts = list(range(low, high - stride + 1, stride)) + [high - stride + 1]
    return [range(start, start + stride) for start in sorted(set(starts))]


def _users(load: memref.LoadOp) -> list[Operation]:
    seen: list[Operation] = []
    for use in load.res.uses:
        if use.operation not in seen:
            seen.append(use.operation)
    return sorted(seen, key=lambda op: op.parent_block().get_operation_index(op) if op.parent_block() else 0)


class _Separation:
    """The aliases of one function, made once per (tensor, window number) and shared by its loops."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.aliases: dict[tuple[SSAValue, int], SSAValue] = {}
        written = written_memrefs(fn)
        in_place = any("tg.in_place" in arg_info(fn, i) for i in range(len(fn.body.block.args)))
        self.readable = set() if in_place else {
            a for i, a in enumerate(fn.body.block.args)
            if arg_info(fn, i).get("tg.role") == "input" and a not in written}

    def alias(self, tensor: SSAValue, number: int) -> SSAValue:
        if number == 0:
            return tensor
        if (tensor, number) not in self.aliases:
            alias = tg.OpaqueAliasOp(tensor)
            alias.result.name_hint = f"{tensor.name_hint or 'arg'}_{number}"
            self.fn.body.block.insert_op_before(alias, self.fn.body.block.first_op)
            self.aliases[(tensor, number)] = alias.result
        return self.aliases[(tensor, number)]

    def rows(self, loop: scf.ForOp) -> dict[tuple, dict[int, memref.LoadOp]]:
        """The loop's strided rows of readable tensors: (tensor, other indices, terms) -> {offset: load}."""
        variable = loop.body.block.args[0]
        rows: dict[tuple, dict[int, memref.LoadOp]] = defaultdict(dict)
        for load in loop.body.block.ops:
            if not isinstance(load, memref.LoadOp) or load.memref not in self.readable or not load.indices \
                    or any(depends_on(i, variable) for i in load.indices[:-1]):
                continue
            form = linear_form(load.indices[-1], loop)
            if form is None or dict(form[0]).get(variable, 0) < 2:
                continue
            terms, offset = form
            rows[(load.memref, tuple(load.indices[:-1]), terms)].setdefault(offset, load)
        return rows

    def separate(self, loop: scf.ForOp) -> None:
        variable = loop.body.block.args[0]
        for (tensor, _, terms), loads in self.rows(loop).items():
            windows = _windows(sorted(loads), dict(terms)[variable])
            if windows is None:
                continue
            readers = {offset: [n for n, w in enumerate(windows) if offset in w] for offset in loads}
            if any(len(_users(loads[offset])) < len(numbers) for offset, numbers in readers.items()):
                continue  # a load no op would use: its group would keep a hole
            for offset, load in loads.items():
                self._deal(load, [self.alias(tensor, n) for n in readers[offset]])

    @staticmethod
    def _deal(load: memref.LoadOp, names: list[SSAValue]) -> None:
        """Read `load` through each of `names`, the ops that used it dealt out among the copies."""
        users = _users(load)
        copies = [load]
        for name in names[1:]:
            copy = load.clone()
            copy.operands = [name, *load.operands[1:]]
            load.parent_block().insert_op_after(copy, copies[-1])
            copies.append(copy)
        load.operands = [names[0], *load.operands[1:]]
        for number, user in enumerate(users):
            chosen = copies[number * len(copies) // len(users)]
            if chosen is not load:
                user.operands = [chosen.res if o is load.res else o for o in user.operands]


def _innermost(op: Operation) -> bool:
    return isinstance(op, scf.ForOp) and constant_index(op.step) == 1 and \
        not any(o.regions for o in op.body.block.ops)


@dataclass(frozen=True)
class SeparateStridedLoadGroups(ModulePass):
    """Read a strided window's rows through one name per interleave group (cpu), so none is gathered."""

    name = "separate-strided-load-groups"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            separation = _Separation(fn)
            if separation.readable:
                for loop in [o for o in fn.walk() if _innermost(o) and not in_cold_version(o)]:
                    separation.separate(loop)

