"""codegen/jit.py: a module's stages optimized and emitted side by side, as parts, and linked."""

import ctypes

from tilegrad.codegen import jit, native

MODULE = """; ModuleID = ""
target triple = "x86_64-unknown-linux-gnu"
target datalayout = ""

declare void @"llvm.assume"(i1 %".1")

define i64 @"square_impl"(i64 %".1") nounwind
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

define i64 @"twice"(i64 %".1") nounwind
{
entry:
  %".3" = add i64 %".1", %".1"
  ret i64 %".3"
}

define i64 @"both"(i64 %".1") nounwind
{
entry:
  %".3" = call i64 @"square"(i64 %".1")
  %".4" = call i64 @"twice"(i64 %".3")
  ret i64 %".4"
}

!0 = !{ i32 1 }
"""


def _functions(text, keyword):
    """The names of the functions a module's text defines (`define`) or declares (`declare`)."""
    return sorted(line.split("@", 1)[1].split("(", 1)[0].strip('"') for line in text.splitlines()
                  if line.startswith(keyword + " "))


def _defined(text):
    return _functions(text, "define")


def _declared(text):
    return _functions(text, "declare")


def test_a_module_splits_into_its_parts_and_the_rest():
    parts = jit._split_functions(MODULE, [("square", "square_impl"), ("twice",)])
    assert [_defined(p) for p in parts] == [["square", "square_impl"], ["twice"], ["both"]]
    assert [_declared(p) for p in parts] == [["both", "llvm.assume", "twice"],
                                             ["both", "llvm.assume", "square", "square_impl"],
                                             ["llvm.assume", "square", "square_impl", "twice"]]
    for part in parts:  # the header and the metadata go with every part
        assert 'target triple = "x86_64-unknown-linux-gnu"' in part and "!0 = !{ i32 1 }" in part


def test_parts_compile_side_by_side_into_one_module_and_one_shared_object():
    text, objects = jit.compile_parts(MODULE, parts=[("square", "square_impl"), ("twice",)], emit=True)
    assert len(objects) == 3
    assert set(_defined(text)) >= {"square", "twice", "both"}  # linked back: all defined, none declared twice
    assert not set(_declared(text)) & set(_defined(text))
    library = native.load(native.link(*objects))
    both = library.function("both", ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64))
    assert both(7) == 98


def test_one_part_is_the_module_itself():
    text, objects = jit.compile_parts(MODULE, emit=True)
    assert len(objects) == 1 and "define" in text and jit.optimize(MODULE).count("define") == text.count("define")
