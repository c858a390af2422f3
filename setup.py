"""The native call path is a C extension (tilegrad/codegen/_fastcall.c); everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tilegrad.codegen._fastcall", ["tilegrad/codegen/_fastcall.c"],
                             extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                                 "-Wno-missing-field-initializers", "-Wno-cast-function-type"])])
