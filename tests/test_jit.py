"""codegen/jit.py: a kernel's stages optimized and emitted side by side, as parts, and linked."""

import ctypes

import pytest

from tilegrad.codegen import jit, native

HEADER = """; ModuleID = ""
target triple = "x86_64-unknown-linux-gnu"
target datalayout = ""
"""

SQUARE = HEADER + """
declare void @"llvm.assume"(i1 %".1")

define internal i64 @"square_impl"(i64 %".1") nounwind
{
entry:
  %".3" = mul i64 %".1", %".1"
  ret i64 %".3"
}

define i64 @"square"(i64 %".1") nounwind
{
entry:
  %".3" = call i64 @"square_impl"(i64 %".1")
  ret i64 %".3"
}
"""

TWICE = HEADER + """
define i64 @"twice"(i64 %".1") nounwind
{
entry:
  %".3" = add i64 %".1", %".1"
  ret i64 %".3"
}
"""

BOTH = HEADER + """
declare i64 @"square"(i64 %".1")

declare i64 @"twice"(i64 %".1")

define i64 @"both"(i64 %".1") nounwind
{
entry:
  %".3" = call i64 @"square"(i64 %".1")
  %".4" = call i64 @"twice"(i64 %".3")
  ret i64 %".4"
}
"""


def _functions(text, keyword):
    """The names of the functions a module's text defines (`define`) or declares (`declare`)."""
    return sorted(line.split("@", 1)[1].split("(", 1)[0].strip('"') for line in text.splitlines()
                  if line.startswith(keyword + " "))


def _defined(text):
    return _functions(text, "define")


def _declared(text):
    return _functions(text, "declare")


def test_parts_compile_side_by_side_into_one_module_and_one_shared_object():
    text, objects = jit.compile_parts([SQUARE, TWICE, BOTH], emit=True)
    assert len(objects) == 3
    assert set(_defined(text)) >= {"square", "twice", "both"}  # linked back: all defined, none declared twice
    assert not set(_declared(text)) & set(_defined(text))
    library = native.load(native.link(*objects))
    both = library.function("both", ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64))
    assert both(7) == 98


def test_a_part_that_fails_fails_the_whole_and_stops_the_workers():
    with pytest.raises(RuntimeError):
        with jit.PartCompiler(emit=True) as compiler:
            compiler.submit(SQUARE)
            compiler.submit(HEADER + "define i64 @broken(")
            compiler.finish()
    assert compiler._pool is None or compiler._pool._shutdown


def test_one_part_is_the_module_itself():
    text, objects = jit.compile_parts([SQUARE], emit=True)
    assert len(objects) == 1 and jit.optimize(SQUARE).count("define") == text.count("define") == 1

