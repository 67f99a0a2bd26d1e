"""Peak memory and time of cumtool on the worst inputs known (issue 14).

    python benchmarks/hostile.py [--workdir DIR] [--only NAME ...]

Builds each input (with numpy, pyarrow, gzip, bash: public tools only) in a temporary
directory, runs `python -m cumtool` on it under an address-space cap of 4 GiB and a
timeout, and prints a Markdown table: exit status, peak resident memory (the child's
ru_maxrss, measured by a small parent that runs nothing else) and wall time. The bound is
256 MiB for any size of input, 384 MiB (1.5x) for any input at all. Inputs take about
5 GB of disk while they exist; the directory is removed at the end.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.lib import format as npformat

CAP = 4 << 30
TIMEOUT = 300.0
CUMTOOL = f"{sys.executable} -m cumtool"

_RUNNER = r"""
import json, resource, subprocess, sys, time
cap, timeout = int(sys.argv[1]), float(sys.argv[2])
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
started = time.monotonic()
try:
    done = subprocess.run(["bash", "-c", sys.argv[3]], preexec_fn=limit,
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=timeout)
    status, error = done.returncode, done.stderr.decode(errors="replace")
except subprocess.TimeoutExpired:
    status, error = "timeout", ""
print(json.dumps({"status": status, "stderr": error.strip().splitlines()[-1:],
                  "seconds": time.monotonic() - started,
                  "peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


def _zeros_zstd(path: Path, size: int) -> None:
    with pa.CompressedOutputStream(str(path), "zstd") as out:
        block = bytes(64 << 20)
        for _ in range(size // len(block)):
            out.write(block)


def _one_line_gzip(path: Path, size: int) -> None:
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b"a,b\n1,2\n")
        block = b"x" * (64 << 20)
        for _ in range(size // len(block)):
            out.write(block)


def _big_row_group(path: Path) -> None:
    rows = 60_000_000  # 480 MB of float64 in one row group
    table = pa.table({"x": np.random.default_rng(0).random(rows)})
    pq.write_table(table, path, row_group_size=rows, compression="none")


def _parquet_zst(path: Path) -> None:
    buffer = io.BytesIO()
    pq.write_table(pa.table({"x": np.arange(10_000_000, dtype=np.float64)}), buffer)
    with pa.CompressedOutputStream(str(path), "zstd") as out:
        out.write(buffer.getvalue())


def _two_byte_rows(path: Path) -> None:
    with open(path, "wb") as out:
        out.write(b"a\n")
        block = b"1\n" * (32 << 20)
        for _ in range(3):  # 192 MiB, 100M rows
            out.write(block)


def _npy_header(path: Path, shape: tuple[int, ...], data: bytes = b"") -> None:
    buffer = io.BytesIO()
    npformat.write_array_header_2_0(
        buffer, {"descr": "<f8", "fortran_order": False, "shape": shape})
    path.write_bytes(buffer.getvalue() + data)


def _fortran(path: Path) -> None:
    np.save(path, np.asfortranarray(np.ones((10_000, 2_000))))  # 160 MB


def _wide_csv(width: int) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        with open(path, "w") as out:
            out.write(",".join(f"c{i}" for i in range(width)) + "\n")
            for row in range(3):
                out.write(",".join(str((row + i) % 7) for i in range(width)) + "\n")
    return build


def _wide_text(workdir: Path) -> None:
    with open(workdir / "wtext.csv", "w") as out:
        out.write("x," + ",".join(f"t{i}" for i in range(20_000)) + "\n")
        for row in range(3):
            out.write(f"{row}," + ",".join(f"w{(row + i) % 7}" for i in range(20_000)) + "\n")


def _floats_csv(path: Path) -> None:
    values = np.random.default_rng(1).random((1_000_000, 10))
    np.savetxt(path, values, delimiter=",", fmt="%.6f",
               header=",".join(f"c{i}" for i in range(10)), comments="")


# name, what it is, how to build its input (or None), the command
CASES: list[tuple[str, str, Callable[[Path], None] | None, str]] = [
    ("dev-zero", "`/dev/zero` as CSV", None, f"{CUMTOOL} cumsum /dev/zero -o out.csv"),
    ("zstd-bomb", "2 GiB of NUL bytes, zstd (66 kB)",
     lambda p: _zeros_zstd(p / "bomb.csv.zst", 2 << 30),
     f"{CUMTOOL} cumsum bomb.csv.zst -o out.csv"),
    ("gzip-line", "gzip CSV, then 2 GiB on one line",
     lambda p: _one_line_gzip(p / "line.csv.gz", 2 << 30),
     f"{CUMTOOL} cumsum line.csv.gz -o out.csv"),
    ("open-quote", "an unclosed quote, then endless text (`yes`)", None,
     f"{{ printf 'a,b\\n1,2\\n3,\"x\\n'; yes 'some text'; }} | {CUMTOOL} cumsum - -o out.csv"),
    ("endless-line", "one endless line on a pipe", None,
     f"{{ printf 'a\\n'; tr '\\0' x < /dev/zero; }} | {CUMTOOL} cumsum - -o out.csv"),
    ("row-group", "Parquet, one 480 MB row group", lambda p: _big_row_group(p / "rg.parquet"),
     f"{CUMTOOL} cumsum rg.parquet -o out.parquet"),
    ("parquet-stdin", "the same on standard input", None,
     f"{CUMTOOL} cumsum - -o out.parquet < rg.parquet"),
    ("parquet-zst", "`.parquet.zst` (10M rows)", lambda p: _parquet_zst(p / "a.parquet.zst"),
     f"{CUMTOOL} cumsum a.parquet.zst -o out.parquet"),
    ("two-byte-rows", "100M rows of 2 bytes", lambda p: _two_byte_rows(p / "tiny.csv"),
     f"{CUMTOOL} cumsum tiny.csv -o out.csv"),
    ("floats", "1M x 10 floats (a usual file)", lambda p: _floats_csv(p / "floats.csv"),
     f"{CUMTOOL} cumsum floats.csv -o out.csv"),
    ("empty-wide", "80-byte .npy of shape (0, 2^24) to CSV",
     lambda p: _npy_header(p / "empty.npy", (0, 1 << 24)),
     f"{CUMTOOL} cumsum empty.npy -o out.csv"),
    ("deep", ".npy of 70 dimensions", lambda p: _npy_header(p / "deep.npy", (1,) * 70,
                                                              bytes(8)),
     f"{CUMTOOL} cumsum deep.npy -o out.npy"),
    ("fortran-stdin", "Fortran-order .npy (160 MB) on standard input",
     lambda p: _fortran(p / "f.npy"), f"cat f.npy | {CUMTOOL} cumsum - -o out.npy"),
    ("npy-1g", "a 1 GB .npy file", lambda p: np.save(p / "big.npy", np.ones((125_000, 1000))),
     f"{CUMTOOL} cumsum big.npy -o out.npy"),
    ("wide-text", "CSV, 20,000 text columns x 3 rows", _wide_text,
     f"{CUMTOOL} cumsum wtext.csv -o out.csv"),
    ("wide-40k", "CSV, 40,000 columns x 3 rows", lambda p: _wide_csv(40_000)(p / "w40.csv"),
     f"{CUMTOOL} cumsum w40.csv -o out.csv"),
    ("wide-100k", "CSV, 100,000 columns x 3 rows",
     lambda p: _wide_csv(100_000)(p / "w100.csv"), f"{CUMTOOL} cumsum w100.csv -o out.csv"),
]


def measure(command: str, workdir: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _RUNNER, str(CAP), str(TIMEOUT), command],
                          capture_output=True, text=True, cwd=workdir, check=True)
    result: dict = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", help="where to build the inputs (default: a temp dir)")
    parser.add_argument("--only", nargs="*", help="case names to run")
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="cumtool-hostile-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print("| input | exit | peak MiB | seconds | message |")
    print("|---|---|---|---|---|")
    try:
        for name, what, build, command in CASES:
            if args.only and name not in args.only:
                continue
            if build is not None:
                build(workdir)
            result = measure(command, workdir)
            message = (result["stderr"][0] if result["stderr"] else "").replace("|", "\\|")
            message = message.replace(str(workdir) + os.sep, "")
            print(f"| {what} | {result['status']} | {result['peak'] / (1 << 20):.0f} | "
                  f"{result['seconds']:.1f} | {message[:110]} |", flush=True)
            for leftover in workdir.glob("*.cumtool-tmp"):
                print(f"LEFT BEHIND: {leftover}", file=sys.stderr)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
