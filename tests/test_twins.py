"""The one switch between C and Python (cumtool._ext.load, CUMTOOL_PURE_PYTHON): the
same commands run with the compiled extensions and with every Python twin give the same
bytes, output and messages alike. Each module's own tests compare its loops with their
twins on many inputs; this runs the whole program both ways."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cumtool import native, numtext
from cumtool._ext import PURE_VARIABLE
from cumtool.formats.csv import small
from cumtool.formats.jsonl import jsonl

pytestmark = pytest.mark.slow


def _data(folder: Path) -> None:
    rng = np.random.default_rng(7)
    rows = 30_000  # past the small path's 1 MiB: the compiled pipeline too
    keys = rng.integers(0, 50, rows)
    lines = ["key,n,x,note"]
    for k in range(rows):
        x = "" if k % 97 == 3 else repr(float(np.round(rng.standard_normal() * 1e3, 3)))
        lines.append(f"k{keys[k]},{int(rng.integers(-9, 10))},{x},\"a, {k % 5}\"")
    (folder / "big.csv").write_text("\n".join(lines) + "\n")
    (folder / "small.csv").write_text("\n".join(lines[:200]) + "\n")
    (folder / "in.jsonl").write_text("".join(
        f'{{"n": {k % 7}, "x": {k * 0.1!r}, "s": "t{k % 3}"}}\n' for k in range(3000)))
    np.save(folder / "a.npy", rng.standard_normal((400, 3, 5)))


COMMANDS = [
    ["cumsum", "small.csv"],
    ["cumsum", "big.csv"],
    ["cumsum", "big.csv", "--by", "key"],
    ["cummax", "big.csv", "-c", "x", "--indices"],
    ["cumvar", "big.csv", "-c", "x", "--by", "key"],
    ["ewma", "big.csv", "-c", "x", "--alpha", "0.3"],
    ["cumsum", "big.csv", "-c", "x", "--compensated"],
    ["cumsum", "in.jsonl"],
    ["cumsum", "in.jsonl", "--to", "csv"],
    ["cumsum", "big.csv", "-c", "n,x", "--to", "jsonl"],
    ["logcumsumexp", "a.npy", "--axis", "0", "--to", "csv", "-o", "-"],
    ["cumsum", "small.csv", "-c", "note"],  # an error, worded the same
]


def _run(folder: Path, args: list[str], pure: bool) -> tuple[int, bytes, bytes]:
    env = {k: v for k, v in os.environ.items() if k != PURE_VARIABLE}
    if pure:
        env[PURE_VARIABLE] = "1"
    done = subprocess.run([sys.executable, "-m", "cumtool", *args], cwd=folder, env=env,
                          capture_output=True, timeout=300, check=False)
    return done.returncode, done.stdout, done.stderr


def test_the_switch_turns_every_extension_off(tmp_path: Path) -> None:
    code = ("from cumtool import native, numtext; from cumtool.formats.csv import small; "
            "from cumtool.formats.jsonl import "
            "jsonl, lines; from cumtool.formats.csv import csvwrite; print([m is None for m "
            "in (native.SEQUENTIAL, numtext.NATIVE, small.TEXT, jsonl.NATIVE, lines.NATIVE, "
            "csvwrite.TEXT)])")
    for value, expected in (("1", "[True, True, True, True, True, True]"),
                            ("0", "[False, False, False, False, False, False]")):
        env = {**os.environ, PURE_VARIABLE: value}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, check=True)
        assert done.stdout.strip() == expected


@pytest.mark.skipif(None in (native.SEQUENTIAL, numtext.NATIVE, small.TEXT, jsonl.NATIVE),
                    reason="the C extensions are not built: there is nothing to compare")
def test_the_program_gives_the_same_bytes_in_c_and_in_python(tmp_path: Path) -> None:
    _data(tmp_path)
    for args in COMMANDS:
        compiled = _run(tmp_path, args, pure=False)
        python = _run(tmp_path, args, pure=True)
        assert python == compiled, args
    assert _run(tmp_path, COMMANDS[-1], pure=False)[0] == 1  # the error case is one
