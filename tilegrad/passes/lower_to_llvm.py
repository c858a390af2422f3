"""lower-to-llvm: func/scf/arith/math/memref/tg -> the llvm dialect, ready for llvmlite.

xDSL converts only the llvm dialect to llvmlite and has no in-process arith/memref->llvm
lowering, so this pass is tilegrad's. It is table-driven, one table per source dialect, and
walks each function once, turning structured control flow into blocks as it goes:

- a memref is a descriptor (pointer, sizes, strides) tracked here, never a struct in IR; an
  element address is one `getelementptr` of `base + Σ index·stride` (strides that the type
  says are 1 are the constant 1, so inner loops are unit-stride and vectorize);
- each kernel becomes `@NAME_impl` with `noalias` pointer arguments and `@NAME(args, block,
  ub)`, which reads the pointers, sizes and strides from one i64 array: the launcher fills that
  array once per call instead of passing each argument through ctypes;
- bfloat16 is stored as i16 and widened / rounded (to nearest even) with shifts.

The guard build (`guard=true`) runs IR it cannot trust (a hand-edited stage), so it gives LLVM
nothing to assume: a bounds check on a poison index, or after undefined behaviour, may be folded
away. It emits no poison-making flag (nsw, inbounds, nnan/ninf); checks every divisor and shift
amount, every loop step, every argument's strides against its type and the strides of the axes a
collapse_shape merges; and zeroes stack buffers (an uninitialised load is undef). So every check
compares defined values, and a failed one reports and returns before the access.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, math, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BFloat16Type,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    UnitAttr,
    f32,
    f64,
    i1,
    i16,
    i32,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.abi import GUARD_CODE_BASE
from tilegrad.dialect import tg
from tilegrad.dialect.values import element_bytes, static_strides
from tilegrad.errors import UnsupportedError
from tilegrad.passes.common import ARITHMETIC_BOUND, arg_info, arithmetic_bound, check_counts, is_part
from tilegrad.passes.loop_affine import interleaved_store_bytes

PTR = llvm.LLVMPointerType()
NSW = llvm.OverflowAttr([llvm.OverflowFlag.NO_SIGNED_WRAP])
INTERLEAVE_COUNT = "tg.interleave_count"
"""On a loop's back branch: how many vectors LLVM's vectorizer runs side by side in it (the
`llvm.loop.interleave.count` the conversion gives the branch; xDSL's llvm.br has no loop
annotation)."""
INTERLEAVED_VECTORS = 4
"""For a loop bound by its arithmetic (common.arithmetic_bound); LLVM chose two. Eight ran slower."""
INTERLEAVED_STORE_BYTES = "tg.interleaved_store_bytes"
"""On a loop's back branch: the element size of the stores it makes at a stride above 1
(loop_affine.interleaved_store_bytes). LLVM's vectorizer writes such a group through shuffles
that cross 128-bit lanes; the conversion caps the loop's vectors at 128 bits on a host where
those cost several times a shuffle within lanes (HostModel.splits_wide_vectors: targets/host.py)."""


def llvm_type(t: Attribute) -> Attribute:
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, BFloat16Type):
        return i16
    return t


@dataclass
class Descriptor:
    """A memref as this pass sees it: a pointer plus per-axis sizes and strides (in elements)."""

    ptr: SSAValue
    element: Attribute
    sizes: list[SSAValue]
    strides: list[SSAValue]
    name: str = ""


def descriptor_slots(t: MemRefType) -> int:
    return 1 + 2 * t.get_num_dims()


@cache
def predicate(code: int) -> IntegerAttr:
    """An icmp / fcmp predicate attribute, made once per code."""
    return IntegerAttr(code, i64)


_SSA = object()  # an operand's place in a form's key
_FORMS: dict[tuple, tuple | None] = {}
"""A form of op (class, its builder's other arguments, its operands' types) -> what the builder gave
its first op (result types, properties, attributes), or None where `make` keeps the builder."""


def _skeleton(value, operands: list[SSAValue]):
    if isinstance(value, SSAValue):
        operands.append(value)
        return _SSA
    if isinstance(value, list | tuple):
        return tuple(_skeleton(v, operands) for v in value)
    return value


def make(cls: type[Operation], *args, **kwargs) -> Operation:
    """`cls(*args, **kwargs)` for an llvm op without regions or successors, built fast. IRDL's
    generic builder takes 20-40 µs an op (a third of lowering a large kernel) and `create` 6: the
    first op of each form is built by the builder, the next ones are created with its result
    types, properties and attributes (attributes are immutable, so they are shared). A form whose
    operands are not its SSA arguments in order keeps the builder."""
    operands: list[SSAValue] = []
    shape = (cls, _skeleton(args, operands), _skeleton(tuple(kwargs.items()), operands))
    key = (shape, tuple(o.type for o in operands))
    known = _FORMS.get(key, False)
    if known:
        types, properties, attributes = known
        return cls.create(operands=operands, result_types=types, properties=properties, attributes=attributes)
    op = cls(*args, **kwargs)
    if known is False:
        same = list(op.operands) == operands and not op.successors and not op.regions
        _FORMS[key] = (tuple(r.type for r in op.results), dict(op.properties), dict(op.attributes)) if same else None
    return op


_INT_BIN: dict[type, type] = {
    arith.AddiOp: llvm.AddOp, arith.SubiOp: llvm.SubOp, arith.MuliOp: llvm.MulOp,
    arith.DivSIOp: llvm.SDivOp, arith.RemSIOp: llvm.SRemOp, arith.DivUIOp: llvm.UDivOp,
    arith.RemUIOp: llvm.URemOp, arith.AndIOp: llvm.AndOp, arith.ShRSIOp: llvm.AShrOp, arith.ShLIOp: llvm.ShlOp,
    arith.OrIOp: llvm.OrOp, arith.XOrIOp: llvm.XOrOp,
}
_FLOAT_BIN: dict[type, type] = {
    arith.AddfOp: llvm.FAddOp, arith.SubfOp: llvm.FSubOp, arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}
_FLOAT_INTRINSIC_BIN = {arith.MaximumfOp: "llvm.maximum", arith.MinimumfOp: "llvm.minimum"}
_MATH: dict[type, type] = {
    math.ExpOp: llvm.FExpOp, math.LogOp: llvm.FLogOp, math.SqrtOp: llvm.FSqrtOp, math.FloorOp: llvm.FFloorOp,
}
_MATH_INTRINSIC = {math.TanhOp: "llvm.tanh", math.AbsFOp: "llvm.fabs"}


def _suffix(t: Attribute) -> str:
    return {Float32Type: "f32", Float64Type: "f64", Float16Type: "f16"}.get(type(t), "i64")


class _FunctionLowering:
    def __init__(self, fn: func.FuncOp, guard_messages: dict[int, str] | None = None, first_code: int = 0,
                 interleave: tuple[int, int] = (ARITHMETIC_BOUND, INTERLEAVED_VECTORS)):
        self.fn = fn
        self.interleave = interleave  # (float ops per element moved, vectors side by side)
        self.first_code = first_code
        self.values: dict[SSAValue, SSAValue] = {}
        self.memrefs: dict[SSAValue, Descriptor] = {}
        self.blocks: list[Block] = []
        self.guard_messages = guard_messages
        """The guard build: every access is bounds-checked, its report code -> what it was."""
        self.guarded = guard_messages is not None
        self.wraps: dict = {} if self.guarded else {"overflow": NSW}
        """The flag of index arithmetic: nsw (no signed wrap), except in the guard build, where an
        overflow must wrap (a poison index would let LLVM drop the check on it)."""
        self.status: Descriptor | None = None
        self.returns: Block | None = None
        """The guard build's block that returns after a failed check."""
        self.entry: Block | None = None
        """The impl's entry block, where its constants are made once (it dominates every use)."""
        self.constants: dict[tuple, SSAValue] = {}
        self.offsets: dict[tuple, SSAValue] = {}
        """An element offset already summed in a block: (block, ((index, stride), ...)) -> value."""
        self.callees: dict[str, list[Attribute]] = {}
        """The parts this function calls: name -> argument types (declared where not defined)."""
        self.streams = False
        """A store is non-temporal: the function ends with a store fence (streaming stores are
        weakly ordered, and the caller reads the output on another thread); a stage that calls a
        part fences for it."""

    # ---- emission helpers -----------------------------------------------------------------------
    def new_block(self, arg_types=()) -> Block:
        block = Block(arg_types=arg_types)
        self.blocks.append(block)
        return block

    def add(self, block: Block, op: Operation) -> SSAValue:
        block.add_op(op)
        return op.results[0] if op.results else None

    def const(self, block: Block, value, t: Attribute) -> SSAValue:
        """The constant, made once per impl at the top of its entry block (else in `block`)."""
        key = (repr(value), t)  # (not the value: 0.0 == -0.0, and nan is no key)
        if self.entry is not None and key in self.constants:
            return self.constants[key]
        attr = FloatAttr(float(value), t) if not isinstance(t, IntegerType) else IntegerAttr(int(value), t)
        constant = llvm.ConstantOp(attr, t)
        if self.entry is None:
            return self.add(block, constant)
        if self.entry.first_op is None:
            self.entry.add_op(constant)
        else:
            self.entry.insert_op_before(constant, self.entry.first_op)
        self.constants[key] = constant.result
        return constant.result

    def v(self, value: SSAValue) -> SSAValue:
        return self.values[value]

    # ---- the function -----------------------------------------------------------------------
    def lower(self) -> list[llvm.FuncOp]:
        name = self.fn.sym_name.data
        entry = self.entry = self.new_block()
        impl_types: list[Attribute] = []
        impl_attrs: list[DictionaryAttr] = []
        layout: list[tuple[str, object]] = []
        promised: list[tuple] = []  # (argument, its sizes, axis, stride passed, stride its type says)
        if not self.fn.body.blocks:
            raise UnsupportedError(f"lower-to-llvm: {name} is declared without a body (a kernel calls only the "
                                   f"functions of its own module)")
        for index, arg in enumerate(self.fn.body.block.args):
            info = arg_info(self.fn, index)
            if isinstance(arg.type, MemRefType):
                rank = arg.type.get_num_dims()
                first = len(entry.args)
                for t in [PTR] + [i64] * (2 * rank):
                    entry.insert_arg(t, len(entry.args))
                impl_types += [PTR] + [i64] * (2 * rank)
                impl_attrs += [DictionaryAttr({"llvm.noalias": UnitAttr()})] + [DictionaryAttr({})] * (2 * rank)
                static = static_strides(arg.type)
                sizes = list(entry.args[first + 1: first + 1 + rank])
                strides = []
                for axis in range(rank):
                    passed = entry.args[first + 1 + rank + axis]
                    if static[axis] is not None:
                        strides.append(self.const(entry, static[axis], i64))
                        promised.append((info.get("tg.name", f"argument {index}"), sizes, axis, passed,
                                         strides[-1]))
                    else:
                        strides.append(passed)
                self.memrefs[arg] = Descriptor(entry.args[first], arg.type.element_type, sizes, strides,
                                               info.get("tg.name", ""))
                if info.get("tg.role") == "status":
                    self.status = self.memrefs[arg]
                layout.append((info.get("tg.role", ""), arg.type))
            else:
                scalar = llvm_type(arg.type)
                entry.insert_arg(scalar, len(entry.args))
                impl_types.append(scalar)
                impl_attrs.append(DictionaryAttr({}))
                self.values[arg] = entry.args[-1]
                layout.append((info.get("tg.role", ""), arg.type))
        for alias in [op for op in self.fn.body.block.ops if isinstance(op, tg.OpaqueAliasOp)]:
            source = self.memrefs[alias.source]  # (an argument the function only reads: its verifier)
            entry.insert_arg(PTR, len(entry.args))
            impl_types.append(PTR)
            impl_attrs.append(DictionaryAttr({"llvm.noalias": UnitAttr()}))
            self.memrefs[alias.result] = Descriptor(entry.args[-1], source.element, source.sizes, source.strides,
                                                    source.name)
            layout.append(("alias", list(self.fn.body.block.args).index(alias.source)))
        start = self.check_promised_strides(entry, promised) if self.guarded else entry
        self.lower_ops(list(self.fn.body.block.ops), start)
        part = is_part(self.fn)  # (called from another module: outline-sibling-nests)
        impl = llvm.FuncOp(name if part else f"{name}_impl", llvm.LLVMFunctionType(impl_types, llvm.LLVMVoidType()),
                           linkage=llvm.LinkageAttr("external" if part else "internal"), body=Region(self.blocks))
        impl.properties["arg_attrs"] = ArrayAttr(impl_attrs)
        self.entry = None
        return [impl] if part else [impl, self.wrapper(name, layout, impl_types)]

    def wrapper(self, name: str, layout, impl_types) -> llvm.FuncOp:
        """`@NAME(ptr args, i64 block, ptr ub)`: unpack the argument array and call the impl."""
        block = Block(arg_types=[PTR, i64, PTR])
        args_ptr, block_id, ub = block.args
        call_args: list[SSAValue] = []
        slot = 0
        first_slots: list[int] = []
        for role, t in layout:
            if role == "alias":  # the argument's pointer again, through an empty asm LLVM cannot see into
                pointer = self._slot(block, args_ptr, first_slots[t], PTR)
                call_args.append(self.add(block, llvm.InlineAsmOp("", "=r,0", [pointer], [PTR])))
                continue
            first_slots.append(slot)
            count = descriptor_slots(t) if isinstance(t, MemRefType) else 1
            if role == "block_id":
                call_args.append(block_id)
            elif role == "ub":
                call_args.append(ub)
                call_args += [self._slot(block, args_ptr, slot + k, i64) for k in range(1, count)]
            elif isinstance(t, (Float32Type, Float64Type)):  # a runtime float attribute, passed as f64
                value = self._slot(block, args_ptr, slot, f64)
                call_args.append(value if t == f64 else self.add(block, make(llvm.FPTruncOp, value, t)))
            else:
                for k in range(count):
                    kind = PTR if (isinstance(t, MemRefType) and k == 0) else i64
                    call_args.append(self._slot(block, args_ptr, slot + k, kind))
            slot += count
        block.add_op(make(llvm.CallOp, f"{name}_impl", *call_args))
        block.add_op(llvm.ReturnOp())
        return llvm.FuncOp(name, llvm.LLVMFunctionType([PTR, i64, PTR], llvm.LLVMVoidType()),
                           linkage=llvm.LinkageAttr("external"), body=Region([block]))

    def _slot(self, block: Block, base: SSAValue, slot: int, t: Attribute) -> SSAValue:
        address = self.add(block, make(llvm.GEPOp, base, [slot], i64))
        return self.add(block, make(llvm.LoadOp, address, t))

    # ---- structured control flow ----------------------------------------------------------------
    def lower_ops(self, ops: list[Operation], block: Block) -> Block:
        for op in ops:
            block = self.lower_op(op, block)
        return block

    def lower_op(self, op: Operation, block: Block) -> Block:
        match op:
            case scf.ForOp():
                return self.lower_for(op, block)
            case scf.IfOp():
                return self.lower_if(op, block)
            case func.ReturnOp():
                if self.streams and not is_part(self.fn):  # (a part's stores are fenced by its stage)
                    block.add_op(make(llvm.CallIntrinsicOp, "llvm.x86.sse.sfence", [], []))
                block.add_op(llvm.ReturnOp())
                return block
            case tg.CopyOp():
                return self.lower_copy(op, block)
            case func.CallOp():
                return self.lower_call(op, block)
            case memref.LoadOp() | memref.StoreOp() if self.guarded:
                return self.lower_guarded(op, block)
            case arith.DivUIOp() | arith.RemUIOp() | arith.DivSIOp() | arith.RemSIOp() if self.guarded:
                return self.lower_checked_division(op, block)
            case arith.ShLIOp() | arith.ShRSIOp() if self.guarded:
                return self.lower_checked_shift(op, block)
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise UnsupportedError(f"lower-to-llvm: {self.fn.sym_name.data}: no lowering for {op.name}: {_line(op)}")
        after = handler(self, op, block)  # (a handler that checks something goes on in a block of its own)
        return block if after is None else after

    def lower_for(self, op: scf.ForOp, block: Block) -> Block:
        carried = [llvm_type(a.type) for a in op.iter_args]
        strided_bytes = interleaved_store_bytes(op)
        header = self.new_block([i64, *carried])
        body = self.new_block()
        exit_ = self.new_block()
        lb, ub, step = self.v(op.lb), self.v(op.ub), self.v(op.step)
        if self.guarded and not (_constant_int(step) or 0) > 0:  # a loop that would run with a step <= 0 never ends
            runs = self.add(block, make(llvm.ICmpOp, lb, ub, predicate(2)))  # slt
            backwards = self.add(block, make(llvm.ICmpOp, step, self.const(block, 0, i64), predicate(3)))  # sle
            bad = self.add(block, make(llvm.AndOp, runs, backwards))
            block = self.guard_report(block, [(bad, 0, step, self.const(block, 1, i64))],
                                      "scf.for with step {value} (it must be at least {limit})")
        block.add_op(llvm.BrOp(header, lb, *[self.v(a) for a in op.iter_args]))
        iv, *iters = header.args
        cond = self.add(header, make(llvm.ICmpOp, iv, ub, predicate(2)))  # slt
        header.add_op(llvm.CondBrOp(cond, body, [], exit_, []))
        inner = op.body.block
        self.values[inner.args[0]] = iv
        for arg, value in zip(inner.args[1:], iters):
            self.values[arg] = value
        *ops, yield_op = list(inner.ops)
        end = self.lower_ops(ops, body)
        step = self.add(end, make(llvm.AddOp, iv, step, **self.wraps))
        if self.guarded:  # a step past the largest index ends the loop instead of wrapping to below its end
            wrapped = self.add(end, make(llvm.ICmpOp, step, iv, predicate(2)))  # slt
            step = self.add(end, make(llvm.SelectOp, wrapped, ub, step))
        back = llvm.BrOp(header, step, *[self.v(a) for a in yield_op.operands])
        bound, count = self.interleave
        if arithmetic_bound(op, bound):
            back.attributes[INTERLEAVE_COUNT] = IntegerAttr(count, i32)
        if strided_bytes:
            back.attributes[INTERLEAVED_STORE_BYTES] = IntegerAttr(strided_bytes, i32)
        end.add_op(back)
        for result, value in zip(op.results, iters):
            self.values[result] = value
        return exit_

    def lower_call(self, op: func.CallOp, block: Block) -> Block:
        """A call of a part: each memref as its descriptor (pointer, sizes, strides), as the part's
        lowering takes it."""
        args: list[SSAValue] = []
        for value in op.arguments:
            if isinstance(value.type, MemRefType):
                d = self.memrefs[value]
                args += [d.ptr, *d.sizes, *d.strides]
            else:
                args.append(self.v(value))
        block.add_op(make(llvm.CallOp, op.callee.string_value(), *args))
        self.callees[op.callee.string_value()] = [a.type for a in args]
        self.streams = True  # (the part may store non-temporally: the stage fences once, as it returns)
        return block

    def lower_if(self, op: scf.IfOp, block: Block) -> Block:
        merge = self.new_block([llvm_type(r.type) for r in op.results])
        then = self.new_block()
        other = self.new_block() if op.false_region.blocks else merge
        block.add_op(llvm.CondBrOp(self.v(op.cond), then, [], other, []))
        for region, start in ((op.true_region, then), (op.false_region, other)):
            if not region.blocks:
                continue
            *ops, yield_op = list(region.block.ops)
            end = self.lower_ops(ops, start)
            end.add_op(llvm.BrOp(merge, *[self.v(a) for a in yield_op.operands]))
        for result, value in zip(op.results, merge.args):
            self.values[result] = value
        return merge

    # ---- memory -----------------------------------------------------------------------------
    def address(self, block: Block, mem: SSAValue, indices) -> tuple[SSAValue, Attribute]:
        d = self.memrefs[mem]
        offset = None
        summed: tuple = (block,)
        for index, stride in zip(indices, d.strides):  # the sum of each prefix once per block
            summed += ((self.v(index), stride),)
            if summed not in self.offsets:
                one = _is_const_one(stride)
                term = self.v(index) if one else self.add(block, make(llvm.MulOp, self.v(index), stride, **self.wraps))
                self.offsets[summed] = term if offset is None else self.add(block, make(llvm.AddOp, offset, term,
                                                                                               **self.wraps))
            offset = self.offsets[summed]
        element = llvm_type(d.element)
        if offset is None:
            return d.ptr, element
        return self.add(block, make(llvm.GEPOp, d.ptr, [llvm.GEP_USE_SSA_VAL], element, ssa_indices=[offset],
                                    inbounds=not self.guarded)), element

    # ---- the guard build ----------------------------------------------------------------------
    def guard_report(self, block: Block, checks: list[tuple[SSAValue, int, SSAValue, SSAValue]], what: str) -> Block:
        """The block after `checks` ((bad, axis, value, limit): i1, the axis, i64, i64). Where one
        is bad, the function stores a report in the status words, unless one is there already (the
        first is the cause), and returns: nothing after a failed check runs, so no access is made
        out of bounds and no loop a broken index bounds runs on. The report is a code that names the
        stage and `what` (with {axis}, {value} and {limit} it is formatted with the failed check's,
        else it reads as an index outside an axis), then the axis, value and limit."""
        if self.status is None:
            raise UnsupportedError(f"lower-to-llvm{{guard=true}}: {self.fn.sym_name.data} has no status argument "
                                   f"(tg.role = \"status\"), where the guard build reports what it refuses")
        code = GUARD_CODE_BASE + self.first_code + len(self.guard_messages)
        self.guard_messages[code] = f"guard: stage {self.fn.sym_name.data}: {what}"
        ok = self.const(block, 1, i1)
        axis_bad, value_bad, limit_bad = (self.const(block, 0, i64) for _ in range(3))
        for bad, axis, value, limit in checks:
            axis_bad = self.add(block, make(llvm.SelectOp, bad, self.const(block, axis, i64), axis_bad))
            value_bad = self.add(block, make(llvm.SelectOp, bad, value, value_bad))
            limit_bad = self.add(block, make(llvm.SelectOp, bad, limit, limit_bad))
            ok = self.add(block, make(llvm.AndOp, ok, self.add(block, make(llvm.XOrOp, bad, self.const(block, 1, i1)))))
        failed, report, after = self.new_block(), self.new_block(), self.new_block()
        block.add_op(llvm.CondBrOp(ok, after, [], failed, []))
        if self.returns is None:
            self.returns = self.new_block()
            self.returns.add_op(llvm.ReturnOp())
        first = self.add(failed, make(llvm.ICmpOp, self.add(failed, make(llvm.LoadOp, self.status.ptr, i64)),
                                      self.const(failed, 0, i64), predicate(0)))
        failed.add_op(llvm.CondBrOp(first, report, [], self.returns, []))
        for slot, value in enumerate((self.const(report, code, i64), axis_bad, value_bad, limit_bad)):
            address = self.add(report, make(llvm.GEPOp, self.status.ptr, [slot], i64))
            report.add_op(make(llvm.StoreOp, value, address))
        report.add_op(llvm.BrOp(self.returns))
        return after

    def bounds_check(self, block: Block, mem: SSAValue, indices, what: str, length: SSAValue | None = None) -> Block:
        """The block after checking every index against its axis (and, for a copy, the `length`
        elements from the last index too): guard_report."""
        d = self.memrefs[mem]
        checks = []
        last = len(indices) - 1
        for axis, (index, size) in enumerate(zip(indices, d.sizes)):
            index = self.v(index)
            if axis == last and length is not None:
                end = self.add(block, make(llvm.AddOp, index, length))  # index <= end <= size (ule; may be empty)
                start_ok = self.add(block, make(llvm.ICmpOp, index, end, predicate(7)))
                end_ok = self.add(block, make(llvm.ICmpOp, end, size, predicate(7)))
                inside = self.add(block, make(llvm.AndOp, start_ok, end_ok))
                index = self.add(block, make(llvm.SubOp, end, self.const(block, 1, i64)))  # (its last, reported)
            else:
                inside = self.add(block, make(llvm.ICmpOp, index, size, predicate(6)))  # ult: 0 <= index < size
            checks.append((self.add(block, make(llvm.XOrOp, inside, self.const(block, 1, i1))), axis, index, size))
        return self.guard_report(block, checks, f"{what} of {d.name}")

    def check_promised_strides(self, entry: Block, promised: list[tuple]) -> Block:
        """The block the function's body starts in, after checking each stride an argument's type
        states (a constant the addresses use) against the one passed, on every axis longer than 1
        of an argument that is not empty: a workspace typed `strided<[1000]>` but passed contiguous
        would be addressed past its end."""
        for name, sizes, axis, passed, stated in promised:
            bad = self.add(entry, make(llvm.ICmpOp, sizes[axis], self.const(entry, 1, i64), predicate(8)))  # ugt
            bad = self.add(entry, make(llvm.AndOp, bad, self.nonempty(entry, sizes)))
            differs = self.add(entry, make(llvm.ICmpOp, passed, stated, predicate(1)))  # ne
            entry = self.guard_report(entry, [(self.add(entry, make(llvm.AndOp, bad, differs)), axis, passed, stated)],
                                      f"argument {name!r} is passed with stride {{value}} on axis {{axis}}, "
                                      f"but its type states {{limit}}")
        return entry

    def nonempty(self, block: Block, sizes: list[SSAValue]) -> SSAValue:
        """Whether no size is 0 (an empty array's strides are anything: nothing is read)."""
        some = self.const(block, 1, i1)
        for size in sizes:
            nonzero = self.add(block, make(llvm.ICmpOp, size, self.const(block, 0, i64), predicate(1)))  # ne
            some = self.add(block, make(llvm.AndOp, some, nonzero))
        return some

    def lower_guarded(self, op: memref.LoadOp | memref.StoreOp, block: Block) -> Block:
        """A load or store made only when in bounds; the status words' own included."""
        is_load = isinstance(op, memref.LoadOp)
        block = self.bounds_check(block, op.memref, op.indices, "load" if is_load else "store")
        address, element = self.address(block, op.memref, op.indices)
        if is_load:
            self.values[op.res] = self.add(block, make(llvm.LoadOp, address, element))
        else:
            block.add_op(make(llvm.StoreOp, self.v(op.value), address))
        return block

    def lower_checked_division(self, op: Operation, block: Block) -> Block:
        """An integer division or remainder by 0 (or, signed, of MIN by -1) is undefined behaviour
        LLVM may build on (and a trap on x86): reported instead."""
        lhs, rhs = self.v(op.lhs), self.v(op.rhs)
        t = llvm_type(op.result.type)
        if _constant_int(rhs) not in (None, 0, -1):  # (most are: a tile's size, a block count)
            self.values[op.result] = self.add(block, _INT_BIN[type(op)](lhs, rhs))
            return block
        bad = self.add(block, make(llvm.ICmpOp, rhs, self.const(block, 0, t), predicate(0)))  # eq
        if isinstance(op, arith.DivSIOp | arith.RemSIOp):
            smallest = self.add(block, make(llvm.ICmpOp, lhs, self.const(block, -(1 << (t.width.data - 1)), t),
                                            predicate(0)))
            minus_one = self.add(block, make(llvm.ICmpOp, rhs, self.const(block, -1, t), predicate(0)))
            bad = self.add(block, make(llvm.OrOp, bad, self.add(block, make(llvm.AndOp, smallest, minus_one))))
        block = self.guard_report(block, [(bad, 0, self.wide(block, lhs), self.wide(block, rhs))],
                                  f"{op.name} of {{value}} by {{limit}} (undefined: a divisor of 0, or MIN / -1)")
        self.values[op.result] = self.add(block, _INT_BIN[type(op)](lhs, rhs))
        return block

    def lower_checked_shift(self, op: Operation, block: Block) -> Block:
        """A shift by the bit width or more is poison: reported instead."""
        lhs, rhs = self.v(op.lhs), self.v(op.rhs)
        t = llvm_type(op.result.type)
        width = t.width.data
        if _constant_int(rhs) is not None and 0 <= _constant_int(rhs) < width:
            self.values[op.result] = self.add(block, _INT_BIN[type(op)](lhs, rhs))
            return block
        bad = self.add(block, make(llvm.ICmpOp, rhs, self.const(block, width, t), predicate(9)))  # uge
        block = self.guard_report(block, [(bad, 0, self.wide(block, rhs), self.const(block, width, i64))],
                                  f"{op.name} by {{value}} bits of a {{limit}}-bit integer (poison)")
        self.values[op.result] = self.add(block, _INT_BIN[type(op)](lhs, rhs))
        return block

    def wide(self, block: Block, value: SSAValue) -> SSAValue:
        """An integer as i64 (sign-extended), for a report."""
        width = value.type.width.data
        if width == 64:
            return value
        return self.add(block, make(llvm.SExtOp if width < 64 else llvm.TruncOp, value, i64))

    def lower_copy(self, op: tg.CopyOp, block: Block) -> Block:
        """A GM<->UB copy: a memcpy when both sides are unit-stride, else an element loop."""
        src, dst = self.memrefs[op.src], self.memrefs[op.dst]
        if src.element != dst.element:  # the bytes of `length` elements of one would not fit the other's
            raise UnsupportedError(f"lower-to-llvm: {self.fn.sym_name.data}: tg.copy from {src.element} to "
                                   f"{dst.element}: a copy moves elements of one type: {_line(op)}")
        length = self.v(op.length)
        if self.guarded:
            block = self.bounds_check(block, op.src, op.src_indices, f"copy ({op.direction.data})", length)
            block = self.bounds_check(block, op.dst, op.dst_indices, f"copy ({op.direction.data})", length)
        src_ptr, element = self.address(block, op.src, op.src_indices)
        dst_ptr, _ = self.address(block, op.dst, op.dst_indices)
        unit = all(not d.strides or _is_const_one(d.strides[-1]) for d in (src, dst))  # rank 0: one element
        if unit:
            size = self.const(block, element_bytes(src.element), i64)
            nbytes = self.add(block, make(llvm.MulOp, length, size, **self.wraps))
            false = self.const(block, 0, i1)
            block.add_op(make(llvm.CallIntrinsicOp, "llvm.memcpy.p0.p0.i64", [dst_ptr, src_ptr, nbytes, false], []))
            return block
        header = self.new_block([i64])
        body = self.new_block()
        exit_ = self.new_block()
        zero = self.const(block, 0, i64)
        block.add_op(llvm.BrOp(header, zero))
        k = header.args[0]
        cond = self.add(header, make(llvm.ICmpOp, k, length, predicate(2)))
        header.add_op(llvm.CondBrOp(cond, body, [], exit_, []))
        src_off = self.add(body, make(llvm.MulOp, k, src.strides[-1], **self.wraps))
        dst_off = self.add(body, make(llvm.MulOp, k, dst.strides[-1], **self.wraps))
        s = self.add(body, make(llvm.GEPOp, src_ptr, [llvm.GEP_USE_SSA_VAL], element, ssa_indices=[src_off]))
        d = self.add(body, make(llvm.GEPOp, dst_ptr, [llvm.GEP_USE_SSA_VAL], element, ssa_indices=[dst_off]))
        value = self.add(body, make(llvm.LoadOp, s, element))
        body.add_op(make(llvm.StoreOp, value, d))
        one = self.const(body, 1, i64)
        body.add_op(llvm.BrOp(header, self.add(body, make(llvm.AddOp, k, one, **self.wraps))))
        return exit_


def _line(op: Operation) -> str:
    """An op as one line of text, for an error that names it."""
    text = " ".join(str(op).split())
    return text if len(text) <= 160 else text[:157] + "..."


def _constant_int(value: SSAValue) -> int | None:
    """The value of an integer llvm.mlir.constant, else None."""
    owner = value.owner
    if isinstance(owner, llvm.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _is_const_one(value: SSAValue) -> bool:
    return _constant_int(value) == 1


# ---- per-dialect tables: op type -> handler(lowering, op, block) --------------------------------

def _constant(L: _FunctionLowering, op: arith.ConstantOp, block: Block) -> None:
    t = llvm_type(op.result.type)
    value = op.value
    if isinstance(value, IntegerAttr):
        L.values[op.result] = L.const(block, value.value.data, t)
    else:
        L.values[op.result] = L.const(block, value.value.data, t)


def _binary(table):
    def handler(L: _FunctionLowering, op: Operation, block: Block) -> None:
        wraps = table[type(op)] in (llvm.AddOp, llvm.SubOp, llvm.MulOp)
        kwargs = L.wraps if wraps and isinstance(op.result.type, IndexType) else {}
        flags = getattr(op, "fastmath", None)
        if flags is not None and flags.data:  # e.g. reassoc on a reduction's accumulation
            kept = [f for f in flags.data if not L.guarded or f not in _POISON_MATH]
            kwargs = {"fast_math": llvm.FastMathAttr(kept)} if kept else {}
        L.values[op.result] = L.add(block, table[type(op)](L.v(op.lhs), L.v(op.rhs), **kwargs))
    return handler


_POISON_MATH = (FastMathFlag.NO_NANS, FastMathFlag.NO_INFS)
"""Fast-math flags that make a NaN or infinite operand poison (then an index made from it)."""


def _float_intrinsic(name_of):
    def handler(L: _FunctionLowering, op: Operation, block: Block) -> None:
        t = op.results[0].type
        args = [L.v(o) for o in op.operands]
        name = f"{name_of[type(op)]}.{_suffix(t)}"
        L.values[op.results[0]] = L.add(block, make(llvm.CallIntrinsicOp, name, args, [t]))
    return handler


def _minmax_si(L: _FunctionLowering, op: Operation, block: Block) -> None:
    code = 4 if isinstance(op, arith.MaxSIOp) else 2  # sgt / slt
    a, b = L.v(op.lhs), L.v(op.rhs)
    cond = L.add(block, make(llvm.ICmpOp, a, b, predicate(code)))
    L.values[op.result] = L.add(block, make(llvm.SelectOp, cond, a, b))


def _cmpi(L: _FunctionLowering, op: arith.CmpiOp, block: Block) -> None:
    code = predicate(op.predicate.value.data)
    L.values[op.result] = L.add(block, make(llvm.ICmpOp, L.v(op.lhs), L.v(op.rhs), code))


def _cmpf(L: _FunctionLowering, op: arith.CmpfOp, block: Block) -> None:
    code = predicate(op.predicate.value.data)
    L.values[op.result] = L.add(block, make(llvm.FCmpOp, L.v(op.lhs), L.v(op.rhs), code))


def _select(L: _FunctionLowering, op: arith.SelectOp, block: Block) -> None:
    L.values[op.result] = L.add(block, make(llvm.SelectOp, L.v(op.cond), L.v(op.lhs), L.v(op.rhs)))


def _negf(L: _FunctionLowering, op: arith.NegfOp, block: Block) -> None:
    L.values[op.result] = L.add(block, make(llvm.FNegOp, L.v(op.operand)))


def _extf(L: _FunctionLowering, op: arith.ExtFOp, block: Block) -> None:
    source = op.input.type
    value = L.v(op.input)
    if isinstance(source, BFloat16Type):
        wide = L.add(block, make(llvm.ZExtOp, value, i32))
        shifted = L.add(block, make(llvm.ShlOp, wide, L.const(block, 16, i32)))
        value = L.add(block, make(llvm.BitcastOp, shifted, f32))
        if op.result.type != f32:
            value = L.add(block, make(llvm.FPExtOp, value, op.result.type))
        L.values[op.result] = value
        return
    L.values[op.result] = L.add(block, make(llvm.FPExtOp, value, op.result.type))


def _truncf(L: _FunctionLowering, op: arith.TruncFOp, block: Block) -> None:
    value = L.v(op.input)
    if isinstance(op.result.type, BFloat16Type):
        if op.input.type != f32:
            value = L.add(block, make(llvm.FPTruncOp, value, f32))
        bits = L.add(block, make(llvm.BitcastOp, value, i32))
        high = L.add(block, make(llvm.LShrOp, bits, L.const(block, 16, i32)))
        lsb = L.add(block, make(llvm.AndOp, high, L.const(block, 1, i32)))
        bias = L.add(block, make(llvm.AddOp, lsb, L.const(block, 0x7FFF, i32)))
        rounded = L.add(block, make(llvm.LShrOp, L.add(block, make(llvm.AddOp, bits, bias)), L.const(block, 16, i32)))
        narrow = L.add(block, make(llvm.TruncOp, rounded, i16))
        is_nan = L.add(block, make(llvm.FCmpOp, value, value, "uno"))
        L.values[op.result] = L.add(block, make(llvm.SelectOp, is_nan, L.const(block, 0x7FC0, i16), narrow))
        return
    L.values[op.result] = L.add(block, make(llvm.FPTruncOp, value, op.result.type))


def _int_cast(L: _FunctionLowering, op: Operation, block: Block) -> None:
    source, target = llvm_type(op.operands[0].type), llvm_type(op.results[0].type)
    value = L.v(op.operands[0])
    sw, tw = source.width.data, target.width.data
    if sw == tw:
        L.values[op.results[0]] = value
    elif tw < sw:
        L.values[op.results[0]] = L.add(block, make(llvm.TruncOp, value, target))
    elif isinstance(op, arith.ExtUIOp):
        L.values[op.results[0]] = L.add(block, make(llvm.ZExtOp, value, target))
    else:
        L.values[op.results[0]] = L.add(block, make(llvm.SExtOp, value, target))


def _sitofp(L: _FunctionLowering, op: arith.SIToFPOp, block: Block) -> None:
    L.values[op.result] = L.add(block, make(llvm.SIToFPOp, L.v(op.input), op.result.type))


def _bitcast(L: _FunctionLowering, op: arith.BitcastOp, block: Block) -> None:
    L.values[op.result] = L.add(block, make(llvm.BitcastOp, L.v(op.input), op.result.type))


def _fptosi(L: _FunctionLowering, op: arith.FPToSIOp, block: Block) -> None:
    # saturating: NaN -> 0 and out-of-range -> the extreme, never undefined behaviour
    t = op.input.type
    name = f"llvm.fptosi.sat.i64.{_suffix(t)}"
    L.values[op.result] = L.add(block, make(llvm.CallIntrinsicOp, name, [L.v(op.input)], [i64]))


def _math(L: _FunctionLowering, op: Operation, block: Block) -> None:
    L.values[op.results[0]] = L.add(block, _MATH[type(op)](L.v(op.operands[0])))


def _load(L: _FunctionLowering, op: memref.LoadOp, block: Block) -> None:
    address, element = L.address(block, op.memref, op.indices)
    L.values[op.res] = L.add(block, make(llvm.LoadOp, address, element))


def _store(L: _FunctionLowering, op: memref.StoreOp, block: Block) -> None:
    address, _ = L.address(block, op.memref, op.indices)
    streaming = op.nontemporal is not None and op.nontemporal.value.data
    L.streams |= bool(streaming)
    block.add_op(make(llvm.StoreOp, L.v(op.value), address, nontemporal=bool(streaming)))


def _address_bits(L: _FunctionLowering, op: tg.AlignPeelOp | tg.AssumeAlignedOp | tg.AddressOffsetOp,
                  block: Block) -> SSAValue:
    """The low bits of the element's address: those that decide its alignment, or its offset."""
    address, _ = L.address(block, op.memref, op.indices)
    integer = L.add(block, make(llvm.PtrToIntOp, address, i64))
    power = op.modulus if isinstance(op, tg.AddressOffsetOp) else op.alignment
    return L.add(block, make(llvm.AndOp, integer, L.const(block, power.value.data - 1, i64)))


def _address_offset(L: _FunctionLowering, op: tg.AddressOffsetOp, block: Block) -> None:
    L.values[op.result] = _address_bits(L, op, block)


def _align_peel(L: _FunctionLowering, op: tg.AlignPeelOp, block: Block) -> None:
    size = element_bytes(op.memref.type.element_type)
    alignment = op.alignment.value.data
    low = _address_bits(L, op, block)
    gap = L.add(block, make(llvm.AndOp, L.add(block, make(llvm.SubOp, L.const(block, alignment, i64), low)),
                                  L.const(block, alignment - 1, i64)))  # bytes to the next aligned address
    elements = L.add(block, make(llvm.UDivOp, gap, L.const(block, size, i64)))
    ragged = L.add(block, make(llvm.ICmpOp, L.add(block, make(llvm.AndOp, gap, L.const(block, size - 1, i64))),
                                      L.const(block, 0, i64), predicate(1)))  # ne: never aligned
    limit = L.v(op.limit)
    fewer = L.add(block, make(llvm.ICmpOp, elements, limit, predicate(2)))  # slt
    peel = L.add(block, make(llvm.SelectOp, fewer, elements, limit))
    L.values[op.result] = L.add(block, make(llvm.SelectOp, ragged, limit, peel))


def _assume_aligned(L: _FunctionLowering, op: tg.AssumeAlignedOp, block: Block) -> None:
    if L.guard_messages is not None:  # the guard build computes no address it has not checked
        return
    aligned = L.add(block, make(llvm.ICmpOp, _address_bits(L, op, block), L.const(block, 0, i64), predicate(0)))
    block.add_op(make(llvm.CallIntrinsicOp, "llvm.assume", [aligned], []))


def _dim(L: _FunctionLowering, op: memref.DimOp, block: Block) -> None:
    index_op = op.index.owner
    shape = op.source.type.get_shape()
    axis = index_op.value.value.data if isinstance(index_op, arith.ConstantOp) else None
    if axis is None or not 0 <= axis < len(shape):
        raise UnsupportedError(f"lower-to-llvm: {L.fn.sym_name.data}: memref.dim needs a constant axis of its "
                               f"memref (0 to {len(shape) - 1}): {_line(op)}")
    static = shape[axis]
    if static >= 0:  # a static size needs no descriptor (a UB-resident temporary has none in GM)
        L.values[op.result] = L.const(block, static, i64)
    else:
        L.values[op.result] = L.memrefs[op.source].sizes[axis]


def _ub_alloc(L: _FunctionLowering, op: tg.UBAllocOp, block: Block) -> None:
    ub = L.memrefs[op.ub]
    if op.ub not in L.fn.body.block.args or arg_info(L.fn, op.ub.index).get("tg.role") != "ub":
        # its verifier bounds the offset by the UB's static size; another memref's size is not its type's
        raise UnsupportedError(f"lower-to-llvm: {L.fn.sym_name.data}: tg.ub_alloc places a buffer in the function's "
                               f"unified buffer (the argument of tg.role \"ub\"): {_line(op)}")
    t = op.result.type
    ptr = L.add(block, make(llvm.GEPOp, ub.ptr, [op.offset.value.data], IntegerType(8)))
    shape = t.get_shape()
    strides, acc = [], 1
    for dim in reversed(shape):
        strides.append(acc)
        acc *= dim
    L.memrefs[op.result] = Descriptor(ptr, t.element_type, [L.const(block, d, i64) for d in shape],
                                      [L.const(block, s, i64) for s in reversed(strides)],
                                      f"UB buffer {op.label.data!r}")


def _panel(L: _FunctionLowering, op: tg.PanelOp, block: Block) -> None:
    """The buffer (rows `width` apart) when rows x width fit in it and width is less than the
    source's row length, else the source from column `start`: two selects, no copy (the IR's).
    At an `offset` (a workspace's): the buffer from that element, where offset + rows x width fit."""
    src, buf = L.memrefs[op.source], L.memrefs[op.buffer]
    if op.at:  # a source of more axes: the matrix at the `at` indices
        src = _matrix_at(L, op, src, block)
    start, width = L.v(op.start), L.v(op.width)
    rows, row_length = src.sizes
    if L.guarded:  # the view stays inside the source: 0 <= start <= row length, 0 <= width <= row length - start
        inside = L.add(block, make(llvm.ICmpOp, start, row_length, predicate(7)))  # ule (a negative start is not)
        start = L.add(block, make(llvm.SelectOp, inside, start, L.const(block, 0, i64)))
        room = L.add(block, make(llvm.SubOp, row_length, start))
        width = _clamped(L, block, width, room, 2)  # slt: at most the room
        width = _clamped(L, block, width, L.const(block, 0, i64), 4)  # sgt: at least 0
        width = L.add(block, make(llvm.SelectOp, inside, width, L.const(block, 0, i64)))  # (then every access reports)
    need = L.add(block, make(llvm.MulOp, rows, width, **L.wraps))
    buffer_ptr = buf.ptr
    if op.offset:
        offset_in = L.v(op.offset[0])
        room = L.add(block, make(llvm.SubOp, buf.sizes[0], offset_in))
        inside_buffer = L.add(block, make(llvm.ICmpOp, offset_in, buf.sizes[0], predicate(7)))  # ule (not negative)
        room = L.add(block, make(llvm.SelectOp, inside_buffer, room, L.const(block, 0, i64)))
        need_fits = L.add(block, make(llvm.ICmpOp, need, room, predicate(7)))  # ule
        fits = L.add(block, make(llvm.AndOp, inside_buffer, need_fits))
        buffer_ptr = L.add(block, make(llvm.GEPOp, buf.ptr, [llvm.GEP_USE_SSA_VAL], llvm_type(buf.element),
                                       ssa_indices=[offset_in], inbounds=not L.guarded))
    else:
        fits = L.add(block, make(llvm.ICmpOp, need, buf.sizes[0], predicate(7)))  # ule
    if op.widens:  # a half source's columns in float32: always the buffer (no view of the source is float32)
        if L.guarded:  # where they do not fit (the pass sizes the workspace so they do), every access reports
            rows = L.add(block, make(llvm.SelectOp, fits, rows, L.const(block, 0, i64)))
        L.memrefs[op.panel] = Descriptor(buffer_ptr, buf.element, [rows, width], [width, L.const(block, 1, i64)],
                                         f"{src.name} (panel, widened)")
        L.values[op.packed] = fits
        return
    narrower = L.add(block, make(llvm.ICmpOp, width, row_length, predicate(6)))  # ult
    packed = L.add(block, make(llvm.AndOp, fits, narrower))
    offset = start if _is_const_one(src.strides[1]) else L.add(block, make(llvm.MulOp, start, src.strides[1],
                                                                             **L.wraps))
    columns = L.add(block, make(llvm.GEPOp, src.ptr, [llvm.GEP_USE_SSA_VAL], llvm_type(src.element),
                                ssa_indices=[offset], inbounds=not L.guarded))
    ptr = L.add(block, make(llvm.SelectOp, packed, buffer_ptr, columns))
    row_stride = L.add(block, make(llvm.SelectOp, packed, width, src.strides[0]))
    column_stride = src.strides[1] if _is_const_one(src.strides[1]) else \
        L.add(block, make(llvm.SelectOp, packed, L.const(block, 1, i64), src.strides[1]))
    L.memrefs[op.panel] = Descriptor(ptr, src.element, [rows, width], [row_stride, column_stride],
                                     f"{src.name} (panel)")
    L.values[op.packed] = packed


def _matrix_at(L: _FunctionLowering, op: tg.PanelOp, src: Descriptor, block: Block) -> Descriptor:
    """The matrix src[at..., :, :] (its last two axes) as a descriptor of its own; in the guard
    build an `at` index outside its axis gives an empty matrix (every access through it reports)."""
    offset = None
    empty = None
    for value, size, stride in zip(op.at, src.sizes, src.strides):
        index = L.v(value)
        term = L.add(block, make(llvm.MulOp, index, stride, **L.wraps))
        offset = term if offset is None else L.add(block, make(llvm.AddOp, offset, term, **L.wraps))
        if L.guarded:
            outside = L.add(block, make(llvm.ICmpOp, index, size, predicate(9)))  # uge (a negative index too)
            empty = outside if empty is None else L.add(block, make(llvm.OrOp, empty, outside))
    ptr = L.add(block, make(llvm.GEPOp, src.ptr, [llvm.GEP_USE_SSA_VAL], llvm_type(src.element),
                            ssa_indices=[offset], inbounds=not L.guarded))
    rows = src.sizes[-2]
    if empty is not None:
        rows = L.add(block, make(llvm.SelectOp, empty, L.const(block, 0, i64), rows))
    return Descriptor(ptr, src.element, [rows, src.sizes[-1]], list(src.strides[-2:]), src.name)


def _clamped(L: _FunctionLowering, block: Block, value: SSAValue, bound: SSAValue, code: int) -> SSAValue:
    """value where `value <code> bound` holds (an icmp predicate: 4 is sgt, 2 slt), else bound: a
    max or a min."""
    keep = L.add(block, make(llvm.ICmpOp, value, bound, predicate(code)))
    return L.add(block, make(llvm.SelectOp, keep, value, bound))


def _collapse_shape(L: _FunctionLowering, op: memref.CollapseShapeOp, block: Block) -> Block:
    """A view of contiguous axes as one (rows of a plane): the same pointer; a group's size is the
    product of its sizes, its stride that of its last axis (collapse-contiguous-rows groups only
    axes of an identity layout, where that is each group's element stride). Axes of another
    layout are refused; the guard build also checks the strides passed, since a view that merges
    axes that are not contiguous (a broadcast row: stride 0) addresses past its array."""
    src = L.memrefs[op.src]
    if not isinstance(op.src.type.layout, NoneAttr):
        raise UnsupportedError(f"lower-to-llvm: {L.fn.sym_name.data}: memref.collapse_shape merges axes of a "
                               f"contiguous (identity-layout) memref, not of {op.src.type}: {_line(op)}")
    sizes, strides, checks = [], [], []
    for group in op.reassociation.data:
        axes = [a.value.data for a in group.data]
        size = src.sizes[axes[-1]]
        for axis in reversed(axes[:-1]):  # axis's stride: the group's times the sizes of the axes after it
            if L.guarded:
                expected = L.add(block, make(llvm.MulOp, size, src.strides[axes[-1]]))
                longer = L.add(block, make(llvm.ICmpOp, src.sizes[axis], L.const(block, 1, i64), predicate(8)))  # ugt
                differs = L.add(block, make(llvm.ICmpOp, src.strides[axis], expected, predicate(1)))  # ne
                checks.append((L.add(block, make(llvm.AndOp, longer, differs)), axis, src.strides[axis], expected))
            size = L.add(block, make(llvm.MulOp, src.sizes[axis], size, **L.wraps))
        sizes.append(size)
        strides.append(src.strides[axes[-1]])
    if checks:
        some = L.nonempty(block, src.sizes)
        checks = [(L.add(block, make(llvm.AndOp, bad, some)), *rest) for bad, *rest in checks]
        block = L.guard_report(block, checks, f"memref.collapse_shape of {src.name}: axis {{axis}} has stride "
                                              f"{{value}}, not {{limit}} (the axes it merges are not contiguous)")
    L.memrefs[op.result] = Descriptor(src.ptr, src.element, sizes, strides, f"{src.name} (rows)")
    return block


def _opaque_alias(L: _FunctionLowering, op: tg.OpaqueAliasOp, block: Block) -> None:
    """Nothing to emit: the function took the alias as a pointer argument of its own (`lower`)."""


def _expand_shape(L: _FunctionLowering, op: memref.ExpandShapeOp, block: Block) -> Block:
    """A view of an identity-layout memref's axes each as several (a stack buffer as a matrix whose
    row length is known at run time): the same pointer, each group's sizes from the op (row-major
    within the group, its last axis the source axis's stride). The guard build checks that a group
    spans no more elements than its source axis has."""
    src = L.memrefs[op.src]
    if not isinstance(op.src.type.layout, NoneAttr):
        raise UnsupportedError(f"lower-to-llvm: {L.fn.sym_name.data}: memref.expand_shape splits axes of a "
                               f"contiguous (identity-layout) memref, not of {op.src.type}: {_line(op)}")
    dynamic = iter(op.output_shape)
    shape = [L.v(next(dynamic)) if size == DYNAMIC_INDEX else L.const(block, size, i64)
             for size in op.static_output_shape.get_values()]
    sizes, strides, checks = [], [], []
    for axis, group in enumerate(op.reassociation.data):
        axes = [a.value.data for a in group.data]
        stride, span, group_strides = src.strides[axis], None, []
        for a in reversed(axes):
            group_strides.insert(0, stride)
            span = shape[a] if span is None else L.add(block, make(llvm.MulOp, span, shape[a], **L.wraps))
            if a != axes[0]:
                stride = L.add(block, make(llvm.MulOp, stride, shape[a], **L.wraps))
        if L.guarded:
            over = L.add(block, make(llvm.ICmpOp, span, src.sizes[axis], predicate(8)))  # ugt
            checks.append((over, axis, span, src.sizes[axis]))
        sizes += [shape[a] for a in axes]
        strides += group_strides
    if checks:
        block = L.guard_report(block, checks, f"memref.expand_shape of {src.name}: axis {{axis}} split in "
                                              f"{{value}} elements, more than its {{limit}}")
    L.memrefs[op.result] = Descriptor(src.ptr, src.element, sizes, strides, f"{src.name} (split)")
    return block


def _alloca(L: _FunctionLowering, op: memref.AllocaOp, block: Block) -> None:
    """A small static scratch buffer on the stack (a row of interchanged sums, a GEMM panel), made
    in the entry block wherever the op is (one in a loop would take more stack at every
    iteration); pipeline.stack_bytes bounds their total. The guard build zeroes it: a load of
    uninitialised stack is undef, which LLVM may assume anything of."""
    t = op.memref.type
    if op.operands or not t.has_static_shape() or not isinstance(t.layout, NoneAttr):
        raise UnsupportedError(f"lower-to-llvm: {L.fn.sym_name.data}: memref.alloca makes a buffer of a static "
                               f"shape and the identity layout: {_line(op)}")
    shape = t.get_shape()
    count = 1
    for size in shape:
        count *= size
    element = llvm_type(t.element_type)
    made = [llvm.ConstantOp(IntegerAttr(count, i64), i64)]
    made.append(make(llvm.AllocaOp, made[0].result, element, alignment=64))
    ptr = made[1].results[0]
    if L.guarded:
        made += [llvm.ConstantOp(IntegerAttr(0, IntegerType(8)), IntegerType(8)),
                 llvm.ConstantOp(IntegerAttr(count * element_bytes(t.element_type), i64), i64),
                 llvm.ConstantOp(IntegerAttr(0, i1), i1)]
        made.append(llvm.BitcastOp(ptr, PTR))  # one memset declaration serves buffers of every element type
        made.append(make(llvm.CallIntrinsicOp, "llvm.memset.p0.i64", [made[-1].results[0],
                                                                      *(o.result for o in made[2:5])], []))
    first = L.entry.first_op
    for new in made:
        if first is None:
            L.entry.add_op(new)
        else:
            L.entry.insert_op_before(new, first)
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size
    L.memrefs[op.memref] = Descriptor(ptr, t.element_type, [L.const(block, d, i64) for d in shape],
                                      [L.const(block, s, i64) for s in reversed(strides)], "stack row")


_HANDLERS: dict[type, Callable] = {
    arith.ConstantOp: _constant,
    **{t: _binary(_INT_BIN) for t in _INT_BIN},
    **{t: _binary(_FLOAT_BIN) for t in _FLOAT_BIN},
    **{t: _float_intrinsic(_FLOAT_INTRINSIC_BIN) for t in _FLOAT_INTRINSIC_BIN},
    arith.MaxSIOp: _minmax_si,
    arith.MinSIOp: _minmax_si,
    arith.CmpiOp: _cmpi,
    arith.CmpfOp: _cmpf,
    arith.SelectOp: _select,
    arith.NegfOp: _negf,
    arith.ExtFOp: _extf,
    arith.TruncFOp: _truncf,
    arith.ExtSIOp: _int_cast,
    arith.ExtUIOp: _int_cast,
    arith.TruncIOp: _int_cast,
    arith.IndexCastOp: _int_cast,
    arith.SIToFPOp: _sitofp,
    arith.FPToSIOp: _fptosi,
    arith.BitcastOp: _bitcast,
    **{t: _math for t in _MATH},
    **{t: _float_intrinsic(_MATH_INTRINSIC) for t in _MATH_INTRINSIC},
    memref.LoadOp: _load,
    memref.StoreOp: _store,
    memref.DimOp: _dim,
    tg.UBAllocOp: _ub_alloc,
    memref.AllocaOp: _alloca,
    memref.CollapseShapeOp: _collapse_shape,
    memref.ExpandShapeOp: _expand_shape,
    tg.OpaqueAliasOp: _opaque_alias,
    tg.PanelOp: _panel,
    tg.AlignPeelOp: _align_peel,
    tg.AddressOffsetOp: _address_offset,
    tg.AssumeAlignedOp: _assume_aligned,
}


@dataclass(frozen=True)
class LowerToLLVM(ModulePass):
    """Replace every func.func by an llvm.func pair (`NAME_impl` with noalias pointers, `NAME`).

    `guard=true` is the guard build: every load, store and copy checks its indices against its
    buffer's sizes first (and the rest the module docstring lists); a failed check stores a report
    (code, axis, index, size) in the status words and returns, so the call raises
    OutOfBoundsError. Its report codes count on from `first_code` (stages lowered one module at a
    time keep theirs apart)."""

    name = "lower-to-llvm"
    guard: bool = False
    first_code: int = 0
    arithmetic_bound: int = ARITHMETIC_BOUND
    """A loop doing this many float ops per element it moves is bound by its arithmetic ..."""
    interleave_count: int = INTERLEAVED_VECTORS
    """... and LLVM runs this many of its vectors side by side."""

    def __post_init__(self):
        check_counts(self, "arithmetic_bound", "interleave_count")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        messages: dict[int, str] = {}
        lowered: list[Operation] = []
        callees: dict[str, list[Attribute]] = {}
        for fn in list(op.ops):
            assert isinstance(fn, func.FuncOp)
            lowering = _FunctionLowering(fn, messages if self.guard else None, self.first_code,
                                         (self.arithmetic_bound, self.interleave_count))
            lowered += lowering.lower()
            callees.update(lowering.callees)
            fn.detach()
            fn.erase()
        defined = {fn.sym_name.data for fn in lowered}
        lowered += [llvm.FuncOp(name, llvm.LLVMFunctionType(types, llvm.LLVMVoidType()),
                                linkage=llvm.LinkageAttr("external"))
                    for name, types in callees.items() if name not in defined]  # (in a module of its own)
        op.body.block.add_ops(lowered)
        if messages:
            op.attributes["tg.guard_messages"] = DictionaryAttr({str(k): StringAttr(v) for k, v in messages.items()})


def guard_messages(module: ModuleOp) -> dict[int, str]:
    """What each guard-build report code of a lowered module names (op, stage, buffer)."""
    attr = module.attributes.get("tg.guard_messages")
    return {int(k): v.data for k, v in attr.data.items()} if attr is not None else {}


def argument_layout(fn: func.FuncOp) -> list[tuple[str, str, int]]:
    """(name, role, slots) of each function argument in the i64 argument array."""
    layout = []
    for index, arg in enumerate(fn.body.block.args):
        info = arg_info(fn, index)
        slots = descriptor_slots(arg.type) if isinstance(arg.type, MemRefType) else 1
        layout.append((info.get("tg.name", f"arg{index}"), info.get("tg.role", ""), slots))
    return layout
