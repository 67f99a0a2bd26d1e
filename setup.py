"""The C part of cumtool: one optional extension module, cumtool._sequential.

Everything else is declared in pyproject.toml. The extension is optional: where no C
compiler is found the build goes on without it, and cumtool runs the same recurrences in
Python (same bits, several times slower; see cumtool/native.py).
"""

import sys

from setuptools import Extension, setup

# Plain IEEE float64 arithmetic, operation for operation as the Python fallback does it:
# no contraction of a * b + c into a fused multiply-add.
FLAGS = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off", "-fno-fast-math"]

setup(ext_modules=[Extension("cumtool._sequential", ["cumtool/_sequential.c"],
                             extra_compile_args=FLAGS, optional=True)])
