"""The tg dialect and the one xDSL Context tilegrad parses and verifies with."""

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.llvm import LLVM
from xdsl.dialects.math import Math
from xdsl.dialects.memref import MemRef
from xdsl.dialects.scf import Scf

from tilegrad.dialect.tg import TG


def make_context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, Arith, Math, MemRef, Scf, LLVM, TG):
        ctx.load_dialect(dialect)
    return ctx


__all__ = ["TG", "make_context"]
