"""The C part of cumtool: four optional extension modules, cumtool._ext._sequential (float
recurrences), cumtool._ext._csvtext (the small CSV path's loops over cells),
cumtool._ext._numtext (number text without the GIL, on vendored yyjson and ffc.h), and
cumtool._ext._jsonl (the JSON Lines reader's typed block parser).

Everything else is declared in pyproject.toml. The extensions are optional: where no C
compiler is found the build goes on without them, and cumtool runs the same loops in
Python (same bits, several times slower; see cumtool/native.py and cumtool/formats/csv/small.py), or
reads JSON Lines the ways it did before (cumtool/formats/jsonl.py).
"""

import sys

from setuptools import Extension, setup

# Plain IEEE float64 arithmetic, operation for operation as the Python fallback does it:
# no contraction of a * b + c into a fused multiply-add.
FLAGS = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off", "-fno-fast-math"]

# _numtext.c includes the vendored core of yyjson's double writer (cumtool/_ext/yyjson/),
# and _csvtext.c and _jsonl.c include _numtext.c for its float writer (_csvtext.c its reader
# too, for the compiled CSV pipeline, whose threads need pthreads): cumtool/_ext goes on
# their include path, and what they include is listed so that a change rebuilds them.
YYJSON = ["cumtool/_ext/yyjson/f64_to_dec.h"]
FFC = ["cumtool/_ext/ffc/ffc.h"]  # the vendored Eisel-Lemire, which _numtext.c's reader uses
# logcumsumexp's step, and the statistics' (Welford, ewma): the scans' and the pipeline's
LOGADDEXP = ["cumtool/_ext/logaddexp.h", "cumtool/_ext/statsteps.h"]
OUTROOM = "cumtool/_ext/outroom.h"  # the writers' output room (a reused bytearray)

setup(ext_modules=[
    Extension("cumtool._ext._sequential", ["cumtool/_ext/_sequential.c"], extra_compile_args=FLAGS,
              depends=LOGADDEXP, optional=True),
    Extension("cumtool._ext._csvtext", ["cumtool/_ext/_csvtext.c"], extra_compile_args=FLAGS,
              include_dirs=["cumtool/_ext"],
              depends=["cumtool/_ext/_numtext.c", OUTROOM, *YYJSON, *FFC, *LOGADDEXP],
              optional=True),
    Extension("cumtool._ext._numtext", ["cumtool/_ext/_numtext.c"], extra_compile_args=FLAGS,
              include_dirs=["cumtool/_ext"], depends=[*YYJSON, *FFC], optional=True),
    Extension("cumtool._ext._jsonl", ["cumtool/_ext/_jsonl.c"], extra_compile_args=FLAGS,
              include_dirs=["cumtool/_ext"],
              depends=["cumtool/_ext/_numtext.c", OUTROOM, *YYJSON, *FFC], optional=True),
])
