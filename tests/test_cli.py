"""The command line as a user meets it: version, help, option spellings, standard input,
and a closed pipe (`| head`).

Expected values are computed here with numpy (or written out by hand for tiny inputs),
never taken from cumtool's own output.
"""

from __future__ import annotations

import ast
import io
import os
import re
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from conftest import SAMPLE_DATA
from helpers import CUMTOOL, usage_error

OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
SHARED_OPTIONS = (
    "-a, --axis, --dim", "-t, --dtype", "-o, --output", "--from", "--to", "-c, --columns",
    "-d, --delimiter", "--no-header", "--overflow", "--skipna", "--batch-rows", "-h, --help",
)
NUMERIC_MODULES = ("numpy", "pyarrow", "polars", "pandas", "rich")

# a,b are numbers, note is text that passes through untouched.
TABLE = "a,b,note\n3,1.5,x\n-1,2.5,y\n4,-0.5,z\n"
A = np.array([3, -1, 4])
B = np.array([1.5, 2.5, -0.5])


def read_csv_bytes(data: bytes, delimiter: str = ",", header: bool = True) -> dict:
    """Parse CSV output with pyarrow (cumtool writes with polars): {name: list}."""
    table = pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(autogenerate_column_names=not header),
        parse_options=pacsv.ParseOptions(delimiter=delimiter),
    )
    return table.to_pydict()


# Version and help ----------------------------------------------------------------------


def test_version_is_the_installed_version(invoke):
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout == f"cumtool, version {version('cumtool')}\n"


@pytest.mark.parametrize("flag", [pytest.param("--help", id="long"),
                                  pytest.param("-h", id="short")])
def test_group_help_lists_every_operation_and_the_exit_statuses(invoke, flag):
    result = invoke(flag)
    assert result.exit_code == 0
    text = result.stdout
    # CliRunner names the program after the function (main); the real name is checked
    # through the installed script below.
    assert re.match(r"Usage: \S+ \[OPTIONS\] COMMAND \[ARGS\]\.\.\.", text)
    for op in OPS:
        assert re.search(rf"^\s+{op}\s+\S", text, re.M), f"{op} missing from the command list"
    assert "--version" in text
    flat = " ".join(text.split())
    assert ("Exit status: 0 success, 1 data or I/O error, 2 usage error, 75 --state held "
            "by another run (try again later, or --wait), 129 hung up (SIGHUP), 130 "
            "interrupted (Ctrl-C, SIGINT), 141 output pipe closed early (e.g. `| head`), "
            "143 terminated (SIGTERM).") in flat
    assert "cumtool cumsum sample_data/daily_sales.csv" in text
    # One example of several ops in one pass, and what it writes.
    assert "cumtool cumsum,cummax sample_data/daily_sales.csv -c units" in text
    assert ("Several ops in one pass (cumsum,cummax) keep the input's columns and append "
            "the results after them: units_cumsum, units_cummax.") in flat


def test_help_of_several_ops_says_where_their_columns_go(invoke):
    """SEMANTICS.md, "Running statistics": the results come after all input columns."""
    flat = " ".join(invoke("cumsum,ewma", "--help").stdout.split())
    assert ("cumsum, ewma in one pass: the input's columns are kept, and after them come, "
            "for each scanned column, <name>_<op> for each op.") in flat
    assert "followed by" not in flat


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_op_help_lists_options_and_an_example(invoke, op):
    result = invoke(op, "--help")
    assert result.exit_code == 0
    text = result.stdout
    assert re.match(rf"Usage: \S+ {op} \[OPTIONS\] \[INPUT\]", text)
    for option in SHARED_OPTIONS:
        assert option in text, f"{option} missing from `cumtool {op} --help`"
    assert "[default: rows]" in text
    assert "[default: error]" in text
    assert ("--indices" in text) == (op in ("cummax", "cummin"))
    example = re.search(r"Example:\n\s+(cumtool .+)\n", text)
    assert example is not None
    assert example.group(1).startswith(f"cumtool {op} sample_data/")


@pytest.mark.slow
def test_installed_script_help_and_version():
    """The `cumtool` command itself (the console script), not only the Click object."""
    done = subprocess.run([CUMTOOL, "--help"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("Usage: cumtool [OPTIONS] COMMAND [ARGS]...")
    assert done.stderr == ""
    done = subprocess.run([CUMTOOL, "cummin", "-h"], capture_output=True, text=True,
                          check=True)
    assert done.stdout.startswith("Usage: cumtool cummin [OPTIONS] [INPUT]")
    done = subprocess.run([sys.executable, "-m", "cumtool", "--version"], capture_output=True,
                          text=True, check=True)
    assert done.stdout == f"cumtool, version {version('cumtool')}\n"


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_op_help_example_runs(invoke, op, tmp_path, monkeypatch):
    """The example printed by --help works as shown, from a directory with sample_data/."""
    text = invoke(op, "--help").stdout
    example = re.search(r"Example:\n\s+(cumtool .+)\n", text)
    assert example is not None
    (tmp_path / "sample_data").symlink_to(SAMPLE_DATA)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(example.group(1))
    result = invoke(*argv[1:])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    output = argv[argv.index("-o") + 1] if "-o" in argv else None
    if output is None:
        assert result.stdout_bytes
    else:
        assert (tmp_path / output).stat().st_size > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--help"], id="group"),
        pytest.param(["cumsum", "--help"], id="cumsum"),
        pytest.param(["cummax", "--help"], id="cummax"),
        pytest.param(["--version"], id="version"),
    ],
)
def test_help_imports_no_numeric_library(argv):
    """`cumtool --help` must start fast: no numpy, pyarrow, polars (or rich) imported."""
    code = (
        "import sys\n"
        "from cumtool.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, None), exit.code\n"
        f"loaded = [m for m in {NUMERIC_MODULES!r} if m in sys.modules]\n"
        "print('LOADED=' + ','.join(loaded))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip().splitlines()[-1] == "LOADED="


@pytest.mark.slow
def test_a_real_run_does_import_numpy():
    """The check above can fail: running an op in the same way does load numpy."""
    code = (
        "import sys\n"
        "from cumtool.cli import main\n"
        "try:\n"
        "    main(['cumsum', '-'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], input="a\n1\n", capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "True"


@pytest.mark.slow
def test_only_a_state_run_loads_hashlib(tmp_path):
    """hashlib (OpenSSL: 2-3 ms of start-up) is --state's (fingerprints): a Parquet run,
    which goes the general way, loads it only with --state."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"a": [1.5, 2.5]}), source)
    code = (
        "import sys\n"
        "from cumtool.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, None), exit.code\n"
        "print('LOADED=' + str('hashlib' in sys.modules))\n"
    )
    run = [sys.executable, "-c", code, "cumsum", str(source), "-o",
           str(tmp_path / "o.parquet")]
    done = subprocess.run(run, capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "LOADED=False"
    done = subprocess.run([*run, "--state", str(tmp_path / "s.json")], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "LOADED=True"


def test_the_command_collects_again_after_its_modules_load(tmp_path):
    """The command loads its modules with Python's collector off and leaves their
    objects out of later collections (gc.freeze): the collector is on again for the run,
    and a library importer's collector is left as it was."""
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    code = (
        "import gc, sys\n"
        "import cumtool.cli\n"
        "seen = []\n"
        "cumtool.cli.main = lambda *a: seen.append((gc.isenabled(), gc.get_freeze_count()))\n"
        "from cumtool.launch import main\n"
        "assert gc.isenabled() and gc.get_freeze_count() == 0\n"
        "sys.argv = ['cumtool', 'cumsum', sys.argv[1]]\n"
        "main()\n"
        "print(seen[0][0], seen[0][1] > 1000)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(source)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == ["True", "True"]


_ENDS = (
    "import atexit, sys, types\n"
    "holder = sys.modules['holder'] = types.ModuleType('holder')\n"
    "holder.left = open(sys.argv[2], 'w')  # written out when the teardown destroys it\n"
    "holder.left.write('torn down')\n"
    "del holder\n"
    "atexit.register(lambda: print('registered before the command: ran'))\n"
    "if sys.argv[1] == 'traced':\n"
    "    sys.settrace(lambda *a: None)\n"
    "import cumtool.cli, threading, time\n"
    "def command(*a):\n"
    "    atexit.register(lambda: print('registered by the command: ran'))\n"
    "    threading.Thread(target=lambda: time.sleep(0.2) or print('thread joined')).start()\n"
    "    print('buffered, not yet flushed', end='; ')\n"
    "    sys.exit(3)\n"
    "cumtool.cli.main = command\n"
    "from cumtool.launch import main\n"
    "main()\n"
)
_BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
_ENDED = ("buffered, not yet flushed; thread joined\nregistered by the command: ran\n"
          "registered before the command: ran\n")


def test_the_command_ends_without_the_interpreters_teardown(tmp_path):
    """Once the command has ended with a status, the process ends as Python's exit
    would (threads joined, then every exit handler, last registered first; output
    flushed; that status) but skips the interpreter's teardown of modules and memory."""
    done = subprocess.run([sys.executable, "-c", _ENDS, "plain", tmp_path / "left"],
                          capture_output=True, text=True, env=_BUFFERED)
    assert (done.returncode, done.stdout, done.stderr) == (3, _ENDED, "")
    assert (tmp_path / "left").read_text() == ""


def test_a_tracer_keeps_the_interpreters_exit(tmp_path):
    """Under a tracer (a debugger, coverage), which may have work at exit, the
    interpreter ends the process as usual, teardown included."""
    done = subprocess.run([sys.executable, "-c", _ENDS, "traced", tmp_path / "left"],
                          capture_output=True, text=True, env=_BUFFERED)
    assert (done.returncode, done.stdout, done.stderr) == (3, _ENDED, "")
    assert (tmp_path / "left").read_text() == "torn down"


_FLUSHED_AT_THE_END = (
    "import sys, cumtool.cli\n"
    "def command(*a):\n"
    "    sys.stdout.write('buffered')\n"
    "    sys.stdin.read()  # until the reader has gone\n"
    "    sys.exit(0)\n"
    "cumtool.cli.main = command\n"
    "from cumtool.launch import main\n"
    "main()\n")


def test_a_reader_gone_before_the_last_flush_is_quiet_141():
    """What is still buffered when the command ends is flushed before the process ends;
    where the reader has gone, the command's own way (README's exit statuses): quiet,
    141, not Python's traceback and 120."""
    child = subprocess.Popen([sys.executable, "-c", _FLUSHED_AT_THE_END],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=_BUFFERED)
    child.stdout.close()
    child.stdin.close()
    assert child.wait(timeout=60) == 141
    assert child.stderr.read() == b""
    child.stderr.close()


def test_a_last_flush_into_a_full_device_is_one_error_line():
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-c", _FLUSHED_AT_THE_END],
                              stdin=subprocess.DEVNULL, stdout=full,
                              stderr=subprocess.PIPE, env=_BUFFERED, text=True)
    assert (done.returncode, done.stderr) == (
        1, "Error: cannot write standard output: No space left on device\n")


def test_a_table_to_a_pipe_arrives_whole(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    done = subprocess.run([sys.executable, "-m", "cumtool", "cumsum", str(source), "--to",
                           "table"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith(f"cumsum along rows of {source}, 2 rows x 1 ")
    assert [line.split()[1:4] for line in lines if line.startswith("│")] == [
        ["1", "│", "1"], ["2", "│", "3"]]


# Option spellings ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        pytest.param(["-a", "columns"], id="-a"),
        pytest.param(["--axis", "columns"], id="--axis"),
        pytest.param(["--dim", "columns"], id="--dim"),
        pytest.param(["--axis", "1"], id="--axis-1"),
        pytest.param(["--dim=-1"], id="--dim=-1"),
        pytest.param(["-a1"], id="-a1-attached"),
    ],
)
def test_axis_aliases_scan_across_rows(invoke, write_file, spelling):
    path = write_file("t.csv", TABLE)
    result = invoke("cumsum", str(path), *spelling)
    assert result.exit_code == 0, result.stderr
    got = read_csv_bytes(result.stdout_bytes)
    # Across each row over a (int) and b (float): promoted to float64.
    assert got["a"] == A.astype(float).tolist()
    assert got["b"] == (A + B).tolist()
    assert got["note"] == ["x", "y", "z"]


@pytest.mark.parametrize(
    "spelling",
    [
        pytest.param([], id="default"),
        pytest.param(["-a", "rows"], id="rows"),
        pytest.param(["--axis", "index"], id="index"),
        pytest.param(["--dim", "0"], id="0"),
        pytest.param(["--axis", "-2"], id="-2"),
    ],
)
def test_axis_aliases_scan_down_columns(invoke, write_file, spelling):
    path = write_file("t.csv", TABLE)
    result = invoke("cumsum", str(path), *spelling)
    assert result.exit_code == 0, result.stderr
    got = read_csv_bytes(result.stdout_bytes)
    assert got["a"] == np.cumsum(A).tolist()
    assert got["b"] == np.cumsum(B).tolist()


@pytest.mark.parametrize("flag", [pytest.param("-t", id="-t"),
                                  pytest.param("--dtype", id="--dtype")])
def test_dtype_short_and_long(invoke, write_file, flag):
    path = write_file("t.csv", "a,b\n3,1.5\n-1,2.5\n4,-0.5\n")
    result = invoke("cumsum", str(path), flag, "int32", "--to", "npy")
    assert result.exit_code == 0, result.stderr
    got = np.load(io.BytesIO(result.stdout_bytes))
    # --dtype casts first: b = [1.5, 2.5, -0.5] -> [1, 2, 0].
    expected = np.column_stack([np.cumsum(A), np.cumsum([1, 2, 0])]).astype(np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("flag", [pytest.param("-o", id="-o"),
                                  pytest.param("--output", id="--output")])
def test_output_short_and_long(invoke, write_file, tmp_path, flag):
    path = write_file("t.csv", TABLE)
    out = tmp_path / "out.csv"
    result = invoke("cummax", str(path), flag, str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == b""
    got = read_csv_bytes(out.read_bytes())
    assert got["a"] == np.maximum.accumulate(A).tolist()


def test_output_dash_is_standard_output(invoke, write_file):
    path = write_file("t.csv", TABLE)
    result = invoke("cummin", str(path), "-o", "-")
    assert result.exit_code == 0, result.stderr
    got = read_csv_bytes(result.stdout_bytes)
    assert got["a"] == np.minimum.accumulate(A).tolist()
    assert got["b"] == np.minimum.accumulate(B).tolist()


@pytest.mark.parametrize(
    "spelling",
    [
        pytest.param(["-c", "b"], id="-c"),
        pytest.param(["--columns", "b"], id="--columns"),
        pytest.param(["--columns=b"], id="--columns="),
        pytest.param(["-c", " b "], id="spaces-trimmed"),
        pytest.param(["-c", "b,b"], id="repeated-once"),
    ],
)
def test_columns_selects_and_others_pass_through(invoke, write_file, spelling):
    path = write_file("t.csv", TABLE)
    result = invoke("cumsum", str(path), *spelling)
    assert result.exit_code == 0, result.stderr
    got = read_csv_bytes(result.stdout_bytes)
    assert list(got) == ["a", "b", "note"]
    assert got["a"] == A.tolist()  # not selected: unchanged
    assert got["b"] == np.cumsum(B).tolist()
    assert got["note"] == ["x", "y", "z"]


@pytest.mark.parametrize(
    ("delimiter", "given"),
    [
        pytest.param(";", ["-d", ";"], id="-d-semicolon"),
        pytest.param(";", ["--delimiter", ";"], id="--delimiter-semicolon"),
        pytest.param("\t", ["-d", "\\t"], id="-d-backslash-t"),
        pytest.param("\t", ["-d", "\t"], id="-d-real-tab"),
        pytest.param("\t", ["--delimiter", "tab"], id="--delimiter-tab"),
        pytest.param("|", ["-d", "|"], id="-d-pipe"),
    ],
)
def test_delimiter(invoke, write_file, delimiter, given):
    path = write_file("t.txt", TABLE.replace(",", delimiter))
    result = invoke("cumsum", str(path), *given)
    assert result.exit_code == 0, result.stderr
    # -d is the input's delimiter; the output's follows the output format (csv here).
    assert result.stdout.splitlines()[0] == "a,b,note"
    got = read_csv_bytes(result.stdout_bytes)
    assert got["a"] == np.cumsum(A).tolist()
    assert got["b"] == np.cumsum(B).tolist()


def test_no_header_names_columns_by_position(invoke, write_file):
    path = write_file("t.csv", "3,1.5,x\n-1,2.5,y\n4,-0.5,z\n")
    result = invoke("cumsum", str(path), "--no-header", "-c", "2")
    assert result.exit_code == 0, result.stderr
    # No header in, none out; only column 2 (named "2": names are positions) is scanned.
    assert result.stdout.splitlines() == ["3,1.5,x", "-1,4.0,y", "4,3.5,z"]


def test_no_header_every_numeric_column(invoke, write_file):
    path = write_file("t.csv", "3,1.5,x\n-1,2.5,y\n4,-0.5,z\n")
    result = invoke("cumsum", str(path), "--no-header")
    assert result.exit_code == 0, result.stderr
    first, second, third = read_csv_bytes(result.stdout_bytes, header=False).values()
    assert first == np.cumsum(A).tolist()
    assert second == np.cumsum(B).tolist()
    assert third == ["x", "y", "z"]


def test_no_header_names_parquet_columns_by_position(invoke, write_file, tmp_path):
    import pyarrow.parquet as pq

    path = write_file("t.csv", "3,1.5\n-1,2.5\n")
    out = tmp_path / "out.parquet"
    result = invoke("cumsum", str(path), "--no-header", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    table = pq.read_table(out)
    assert table.column_names == ["1", "2"]
    assert table.column("1").to_pylist() == [3, 2]


@pytest.mark.parametrize(
    ("given", "expected_head"),
    [
        pytest.param(["--from", "csv"], "a,b,note", id="from-csv"),
        pytest.param(["--from", "CSV"], "a,b,note", id="from-upper"),
        pytest.param(["--to", "tsv"], "a\tb\tnote", id="to-tsv"),
        pytest.param(["--from", "csv", "--to", "csv"], "a,b,note", id="both"),
    ],
)
def test_from_and_to(invoke, write_file, given, expected_head):
    path = write_file("data.unknown", TABLE)
    result = invoke("cumsum", str(path), *given)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == expected_head


def test_to_overrides_the_output_extension(invoke, write_file, tmp_path):
    path = write_file("t.csv", TABLE)
    out = tmp_path / "really-tsv.csv"
    result = invoke("cumsum", str(path), "-o", str(out), "--to", "tsv")
    assert result.exit_code == 0, result.stderr
    assert out.read_text().splitlines()[0] == "a\tb\tnote"


# Standard input ------------------------------------------------------------------------


@pytest.mark.parametrize("args", [pytest.param(["-"], id="dash"), pytest.param([], id="no-input")])
def test_standard_input(invoke, args):
    result = invoke("cumprod", *args, input=TABLE)
    assert result.exit_code == 0, result.stderr
    got = read_csv_bytes(result.stdout_bytes)
    assert got["a"] == np.cumprod(A).tolist()
    assert got["b"] == np.cumprod(B).tolist()
    assert got["note"] == ["x", "y", "z"]


def test_standard_input_npy_to_standard_output(invoke):
    array = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int16)
    buffer = io.BytesIO()
    np.save(buffer, array)
    result = invoke("cumsum", input=buffer.getvalue())
    assert result.exit_code == 0, result.stderr
    got = np.load(io.BytesIO(result.stdout_bytes))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.cumsum(array, axis=0, dtype=np.int64))


def _compressed(codec: str, data: bytes) -> bytes:
    """`data` as the command-line tools write it (gzip, bzip2, zstd, lz4 frames, xz)."""
    import bz2
    import gzip
    import lzma

    if codec in ("gzip", "bz2", "xz"):
        return {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[codec](data)
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, codec) as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


COMPRESSED_TSV = "k\tv\tnote\na\t3\tx y\nb\t-1\tz\na\t4\t\n"


@pytest.mark.parametrize("codec", ["gzip", "bz2", "zstd", "lz4"])
@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(TABLE, "a,b,note\n3,1.5,x\n2,4.0,y\n6,3.5,z\n", id="csv"),
    # Tabs seen inside the compressed bytes: tab-separated in and out.
    pytest.param(COMPRESSED_TSV, "k\tv\tnote\na\t3\tx y\nb\t2\tz\na\t6\t\n", id="tsv"),
])
def test_compressed_standard_input_is_read_as_its_text(invoke, codec, text, expected):
    """`cat f.csv.zst | cumtool cumsum`: the compression is known by its first bytes, as
    a file's by its suffix, and the run's bytes are those of the text piped in plain."""
    plain = invoke("cumsum", input=text)
    assert (plain.exit_code, plain.stdout) == (0, expected), plain.stderr
    result = invoke("cumsum", input=_compressed(codec, text.encode()))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout_bytes == plain.stdout_bytes


@pytest.mark.parametrize("codec", ["bz2", "zstd"])
def test_a_compressed_file_without_its_suffix_is_read_as_its_text(invoke, tmp_path, codec):
    path = tmp_path / "export"
    path.write_bytes(_compressed(codec, COMPRESSED_TSV.encode()))
    result = invoke("cumsum", str(path))
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "k\tv\tnote\na\t3\tx y\nb\t2\tz\na\t6\t\n"


def test_piped_bzip2_whose_first_block_is_longer_than_the_sniff(invoke):
    """bzip2 decompresses a block only whole: one longer than the 64 KiB first looked at
    is read whole (and replayed) to see that the text inside is tab-separated."""
    rng = np.random.default_rng(7)
    numbers = rng.integers(0, 10**12, size=(40_000, 2))
    text = "x\ty\n" + "".join(f"{x}\t{y}\n" for x, y in numbers.tolist())
    data = _compressed("bz2", text.encode())
    assert len(data) > 1 << 16
    result = invoke("cumsum", input=data)
    assert (result.exit_code, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == "x\ty"
    assert lines[-1] == "\t".join(str(n) for n in numbers.sum(axis=0).tolist())
    assert len(lines) == 40_001


def test_text_that_starts_like_bzip2_is_still_text(invoke):
    result = invoke("cumsum", input="BZh9,n\n1,2\n3,4\n")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "BZh9,n\n1,2\n4,6\n", "")


def test_piped_xz_says_how_to_unpack_it_as_a_named_file_does(invoke, tmp_path):
    data = _compressed("xz", TABLE.encode())
    piped = invoke("cumsum", input=data)
    assert (piped.exit_code, piped.stdout) == (1, "")
    assert piped.stderr == ("Error: standard input: xz is a compression or archive cumtool "
                            "does not read; unpack it on the way: ... | xz -dc | cumtool "
                            "cumsum\n")
    path = tmp_path / "t.csv.xz"
    path.write_bytes(data)
    named = invoke("cumsum", str(path))
    assert (named.exit_code, named.stdout) == (1, "")
    assert named.stderr == (f"Error: {path}: xz is a compression or archive cumtool does "
                            f"not read; unpack it on the way: xz -dc {path} | cumtool cumsum\n")


def test_dash_dash_allows_a_file_named_like_an_option(invoke, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("-c.csv").write_text("a\n1\n2\n")
    result = invoke("cumsum", "--", "-c.csv")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["a", "1", "3"]


# "Did you mean ...?" -------------------------------------------------------------------


@pytest.mark.parametrize(("typed", "meant"), [
    # The names that users of other tools type (cumtool.suggest.OPTION_SYNONYMS).
    pytest.param("--group", "'--by'", id="group"),
    pytest.param("--groupby", "'--by'", id="groupby"),
    pytest.param("--group-by", "'--by'", id="group-by"),
    pytest.param("--group_by", "'--by'", id="group_by"),
    pytest.param("--partition", "'--by'", id="partition"),
    pytest.param("--sep", "'--delimiter'", id="sep"),
    pytest.param("--separator", "'--delimiter'", id="separator"),
    pytest.param("--out", "'--output'", id="out"),
    pytest.param("--cols", "'--columns'", id="cols"),
    pytest.param("--column", "'--columns'", id="column"),
    pytest.param("--type", "'--dtype'", id="type"),
    pytest.param("--skip-na", "'--skipna'", id="skip-na"),
    pytest.param("--dropna", "'--skipna'", id="dropna"),
    pytest.param("--noheader", "'--no-header'", id="noheader"),
    pytest.param("--header-less", "'--no-header'", id="header-less"),
    # Close spellings: an edit or two away, or the start of the option.
    pytest.param("--ouput", "'--output'", id="one-letter-missing"),
    pytest.param("--delimeter", "'--delimiter'", id="one-letter-wrong"),
    pytest.param("--revrese", "'--reverse'", id="two-letters-swapped"),
    pytest.param("--delimetre", "'--delimiter'", id="two-edits"),
    pytest.param("--fro", "'--from'", id="short-name"),
    pytest.param("--delim", "'--delimiter'", id="delim"),
    pytest.param("--out-enc", "'--out-encoding'", id="start-of-the-name"),
    pytest.param("--exclu", "'--exclude' or '--exclusive'", id="two-starts"),
])
def test_a_mistyped_option_gets_the_option_meant(invoke, typed, meant):
    result = invoke("cumsum", "never-read.csv", typed, "x")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == usage_error(f"No such option '{typed}'. Did you mean {meant}?")


# Each declared check (cumtool.options: `parse`, choices, ranges) as Click runs it: one
# usage error naming the option, before the input is opened.
@pytest.mark.parametrize("args, message", [
    pytest.param(["-n", "x"], "Invalid value for '-n' / '--rows': 'x' is not a number of "
                 "rows or 'all'", id="rows"),
    # A message that names the option (a size, a selection) names it once.
    pytest.param(["--max-record-size", "12Q"], "--max-record-size '12Q' is not a size; give "
                 "bytes or a number with K, M or G (e.g. 64M)", id="size"),
    pytest.param(["--exclude", "a,"], "--exclude 'a,': an empty column name; quote it as "
                 "'\"\"' to choose a column whose name is empty", id="selection"),
    pytest.param(["--columns", "a,"], "-c 'a,': an empty column name; quote it as '\"\"' "
                 "to choose a column whose name is empty", id="selection-long-spelling"),
    # A closed set with its own check (params.CheckedChoice) words itself, without a hint.
    pytest.param(["--from", "bogus"], "--from 'bogus' is not a format; choose from csv, tsv, "
                 "parquet, npy, jsonl, arrow, arrows, xlsx, xls, ods\n", id="checked-choice"),
    pytest.param(["--out-decimal", "x"], "Invalid value for '--out-decimal': 'x' is not one "
                 "of 'point', 'comma'.", id="choice"),
    pytest.param(["--wait", "-1"], "Invalid value for '--wait': -1.0 is not in the range "
                 "x>=0.", id="range"),
    pytest.param(["--precision", "18"], "Invalid value for '--precision': 18 is not in the "
                 "range 1<=x<=17.", id="bounded-range"),
    # Text that is no number, as an op's own number options say it (not "a valid integer
    # range").
    pytest.param(["--threads", "x"], "Invalid value for '--threads': 'x' is not a valid "
                 "integer.", id="range-not-a-number"),
    pytest.param(["--wait", "soon"], "Invalid value for '--wait': 'soon' is not a valid "
                 "float.", id="float-range-not-a-number"),
])
def test_a_declared_check_is_a_usage_error_naming_the_option(invoke, args, message):
    result = invoke("cumsum", "never-read.csv", *args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"Error: {message}" if message.endswith("\n")
                             else usage_error(message))


@pytest.mark.parametrize("typed", ["--zzzz", "--re", "-g", "--to-csv"])
def test_an_option_like_none_gets_no_suggestion(invoke, typed):
    result = invoke("cumsum", "never-read.csv", typed)
    assert result.exit_code == 2
    assert result.stderr == usage_error(f"No such option '{typed}'.")


def test_a_synonym_suggests_only_an_option_the_command_has(invoke):
    """`cumtool --group`: the group has no --by, so nothing is offered."""
    result = invoke("--group", "store")
    assert result.exit_code == 2
    assert result.stderr == usage_error("No such option '--group'.", "main")


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(("cumsum", "--indices"),
                 "No such option '--indices' for cumsum: only cummax and cummin take it.",
                 id="indices"),
    pytest.param(("cumsum,cumprod", "--indices"),
                 "No such option '--indices' for cumsum,cumprod: only cummax and cummin take "
                 "it.", id="indices-list"),
    pytest.param(("cumsum", "--alpha", "0.5"),
                 "No such option '--alpha' for cumsum: only ewma takes it.", id="alpha"),
])
def test_an_option_of_other_ops_names_them(invoke, args, message):
    result = invoke(*args, "never-read.csv")
    assert result.exit_code == 2
    assert result.stderr == usage_error(message, f"main {args[0]}")


@pytest.mark.parametrize(("typed", "message"), [
    pytest.param("cumsumm", "No such command 'cumsumm'. Did you mean 'cumsum'?", id="cumsumm"),
    pytest.param("sum", "No such command 'sum'. Did you mean 'cumsum'?", id="sum"),
    pytest.param("nunique", "No such command 'nunique'. Did you mean 'cumnunique'?",
                 id="nunique"),
    pytest.param("cumsum,cummaxx", "No such command 'cumsum,cummaxx'. Did you mean "
                 "'cumsum,cummax'?", id="list"),
    pytest.param("cumsum,cumsum", "No such command 'cumsum,cumsum': each op may be named "
                 "once, and cumsum is named twice.", id="twice"),
    pytest.param("cumsum,cumsumm", "No such command 'cumsum,cumsumm': 'cumsumm' is not an "
                 "op.", id="meant-twice"),
    pytest.param("cumsum,bogus,cummaxx", "No such command 'cumsum,bogus,cummaxx': 'bogus' "
                 "and 'cummaxx' are not ops.", id="unknowns"),
    pytest.param("zzzz", "No such command 'zzzz'.", id="like-none"),
])
def test_a_mistyped_op_gets_the_op_meant(invoke, typed, message):
    result = invoke(typed, "never-read.csv")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == usage_error(message, "main")


# A missing optional extra ----------------------------------------------------------------


def _install(extra: str) -> str:
    return f"pip install 'cumtool[{extra}]' (from a checkout: pip install '.[{extra}]')"


@pytest.mark.parametrize(("module", "args", "message"), [
    pytest.param("fastexcel", ("cumsum", "{dir}/book.xlsx"),
                 f"reading spreadsheets needs the optional extra 'excel': {_install('excel')}",
                 id="excel"),
    pytest.param("matplotlib", ("cumsum", "{dir}/t.csv", "-o", "{dir}/chart.svg"),
                 "drawing a chart as an SVG or PNG image needs the optional extra 'plot': "
                 f"{_install('plot')}", id="plot"),
    pytest.param("fsspec", ("cumsum", "s3://bucket/t.csv"),
                 f"s3://bucket/t.csv: opening URLs needs the optional extra 'cloud': "
                 f"{_install('cloud')}", id="cloud"),
    pytest.param("gcsfs", ("cumsum", "gs://bucket/t.csv", "-o", "{dir}/out.csv"),
                 "gs://bucket/t.csv: opening gs:// URLs (gcsfs) needs the optional extra "
                 f"'cloud': {_install('cloud')}", id="cloud-gcsfs"),
    pytest.param("distributed", ("cumsum", "{dir}/t.csv", "--engine", "dask", "-o",
                                 "{dir}/out.csv"),
                 f"--engine dask needs the optional extra 'dask': {_install('dask')}",
                 id="dask"),
])
def test_a_missing_extra_is_one_message_and_status_1(invoke, tmp_path, monkeypatch, module,
                                                      args, message):
    """Each optional extra, its module made unimportable as where it is not installed: the
    same wording (how to install it, from PyPI or from a checkout), the same status, and
    no output file."""
    (tmp_path / "t.csv").write_text("a\n1\n2\n")
    (tmp_path / "book.xlsx").write_bytes(b"PK\x03\x04 a spreadsheet, never opened")
    monkeypatch.setitem(sys.modules, module, None)  # `import module` fails
    result = invoke(*(arg.format(dir=tmp_path) for arg in args))
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: {message}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.xlsx", "t.csv"]


def test_every_missing_extra_is_worded_by_one_helper():
    """No module but errors.py words how to install an extra (a string naming
    `cumtool[...]`), help text and docstrings apart: each missing extra comes from
    errors.extra_missing, so the wording and the status stay one."""
    package = Path(__file__).resolve().parent.parent / "cumtool"
    own = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if path.name == "errors.py" or "cumtool[" not in source:
            continue
        tree = ast.parse(source)
        allowed = {id(node.value) for node in ast.walk(tree)
                   if isinstance(node, ast.keyword) and node.arg == "help"}
        allowed |= {id(node.body[0].value) for node in ast.walk(tree)
                    if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
                    and node.body and isinstance(node.body[0], ast.Expr)}
        own += [f"{path.relative_to(package)}:{node.lineno}" for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
                and "cumtool[" in node.value and id(node) not in allowed]
    assert not own, f"a missing extra worded outside errors.extra_missing: {own}"


# A closed pipe ---------------------------------------------------------------------------


def _big_inputs(tmp_path: Path) -> dict[str, Path]:
    rows = 200_000
    csv_path = tmp_path / "big.csv"
    with csv_path.open("w") as handle:
        handle.write("n,x\n")
        numbers = np.arange(rows)
        handle.write("\n".join(f"{n},{n % 7}.5" for n in numbers.tolist()))
        handle.write("\n")
    npy_path = tmp_path / "big.npy"
    np.save(npy_path, np.arange(rows * 4, dtype=np.int64).reshape(rows, 4))
    return {"csv": csv_path, "npy": npy_path}


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory):
    return _big_inputs(tmp_path_factory.mktemp("big"))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "expected_first"),
    [
        pytest.param("cumtool cumsum {csv} | head -1", "n,x", id="csv-file"),
        pytest.param("cat {csv} | cumtool cumsum | head -1", "n,x", id="csv-stdin"),
        pytest.param("cumtool cumsum {csv} --to tsv | head -1", "n\tx", id="tsv-out"),
        pytest.param("cumtool cumsum {npy} --to csv | head -1", "0,1,2,3", id="npy-to-csv"),
        pytest.param("cumtool cumsum {npy} | head -c 6", "\x93NUMPY", id="npy-out"),
        pytest.param("cumtool cumsum {csv} --to parquet | head -c 4", "PAR1", id="parquet-out"),
    ],
)
def test_closed_pipe_is_quiet_with_status_141(big_inputs, command, expected_first):
    pipeline = command.format(**{k: shlex.quote(str(v)) for k, v in big_inputs.items()})
    # PIPESTATUS[-2] is cumtool's status (the command before `head`).
    script = (pipeline + '; status=("${PIPESTATUS[@]}"); echo "status=${status[-2]}" >&2; '
              'exit "${status[-2]}"')
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run(["bash", "-c", script], capture_output=True, env=env, timeout=120)
    first = done.stdout.decode("latin-1").splitlines()[0]
    assert first == expected_first
    # Nothing on stderr but the status line: no traceback, no "Broken pipe" message.
    assert done.stderr.decode().splitlines() == ["status=141"]
    assert done.returncode == 141


# On a terminal -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "table"),
    [
        pytest.param({}, True, id="default-is-a-table"),
        pytest.param({"to_format": "csv"}, False, id="to-csv"),
        pytest.param({"output": "-"}, True, id="dash"),
    ],
)
def test_a_terminal_gets_the_table_by_default(write_file, capsys, extra, table):
    """The CLI passes `stdout_is_terminal`; through the engine, as it does."""
    from cumtool.engine import Request, run

    path = write_file("t.csv", TABLE)
    run(Request(op="cumsum", input=str(path), stdout_is_terminal=True, **extra))
    out = capsys.readouterr().out
    if table:
        assert "┃" in out
        assert f"cumsum along rows of {path}, 3 rows x 3 columns" in out
    else:
        assert out == "a,b,note\n3,1.5,x\n2,4.0,y\n6,3.5,z\n"


def test_a_terminal_with_an_output_file_writes_the_files_format(write_file, tmp_path):
    from cumtool.engine import Request, run

    path = write_file("t.csv", TABLE)
    out = tmp_path / "o.csv"
    run(Request(op="cumsum", input=str(path), output=str(out), stdout_is_terminal=True))
    assert out.read_text() == "a,b,note\n3,1.5,x\n2,4.0,y\n6,3.5,z\n"


@pytest.mark.parametrize(("fault", "message"), [
    (ValueError("a\nbroken   invariant"), "Error: internal error: ValueError: a broken "
     "invariant (a bug in cumtool; run with CUMTOOL_DEBUG=1 to see where, and report it)\n"),
    (OSError(28, "No space left on device", "/mnt/full/out.csv"),
     "Error: /mnt/full/out.csv: No space left on device\n"),
    (MemoryError(), "Error: out of memory: the system gave no more; the values of --by's "
     "groups and cumnunique's are held in memory, the rest is read and written in "
     "batches\n"),
], ids=["bug", "os-error", "memory"])
def test_a_fault_no_layer_worded_is_still_one_line(invoke, write_file, monkeypatch, fault,
                                                   message):
    import cumtool.engine

    def run(_request):
        raise fault

    monkeypatch.setattr(cumtool.engine, "run", run)
    monkeypatch.delenv("CUMTOOL_DEBUG", raising=False)
    result = invoke("cumsum", str(write_file("a.csv", "x\n1\n")))
    assert (result.exit_code, result.stdout_bytes, result.stderr) == (1, b"", message)
    monkeypatch.setenv("CUMTOOL_DEBUG", "1")
    with pytest.raises(type(fault)):
        invoke("cumsum", str(write_file("a.csv", "x\n1\n")))


@pytest.mark.parametrize("folder", [False, True])
def test_indices_into_npy_is_refused_once_for_every_driver(invoke, tmp_path, folder):
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_bytes(b"x,y\n1,2\n3,4\n")
    second.write_bytes(b"x,y\n5,6\n")
    inputs = [str(first), str(second)] if folder else [str(first)]
    target = str(tmp_path / "out") + "/" if folder else str(tmp_path / "out.npy")
    result = invoke("cummax", *inputs, "--indices", "--to", "npy", "-o", target)
    assert result.exit_code == 2
    assert result.stderr == ("Error: --indices with .npy output needs .npy input; write csv "
                             "or parquet\n")
    assert not (tmp_path / "out.npy").exists() and not (tmp_path / "out").exists()


_REOPENS = (
    "import os, sys, cumtool.cli\n"
    "seen = []\n"
    "real_open = os.open\n"
    "def recording(path, flags, *rest):\n"
    "    seen.append((path, flags & os.O_ACCMODE))\n"
    "    if sys.argv[1] == 'refused':\n"
    "        raise PermissionError(13, 'Permission denied')\n"
    "    return real_open(path, flags, *rest)\n"
    "os.open = recording\n"
    "cumtool.cli.main = lambda *a: sys.stderr.write(repr(seen))\n"
    "from cumtool.launch import main\n"
    "main()\n")


@pytest.mark.parametrize("case", ["file", "refused", "pipe"])
def test_standard_output_over_an_existing_file_is_written_as_a_new_one(tmp_path, case):
    """Standard output redirected over an existing file: before a byte is written, the
    command opens and closes it once more, read-only, so that ext4 does not make the
    process place every page it wrote at its exit (launch._written_as_a_new_file). A pipe
    is left alone, and a file it may not read is written as before."""
    target = tmp_path / "out.csv"
    target.write_text("the last run's output\n")
    with open(target, "w") as out:
        stdout = subprocess.PIPE if case == "pipe" else out
        done = subprocess.run([sys.executable, "-c", _REOPENS, case], stdout=stdout,
                              stderr=subprocess.PIPE, text=True)
    assert done.returncode == 0
    wanted = [] if case == "pipe" else [("/proc/self/fd/1", os.O_RDONLY)]
    assert done.stderr == repr(wanted)


def test_a_csv_with_text_to_parquet_does_not_load_pandas(tmp_path):
    """A text column's empty cells made missing for Parquet went through pyarrow's
    compute with a Python "", which imports pandas: 0.23 s of the run."""
    source = tmp_path / "in.csv"
    source.write_text("a,b\n1,x\n2,\n3,y\n")
    code = ("import sys\nfrom cumtool.launch import main\nimport atexit\n"
            "atexit.register(lambda: print('LOADED=' + str('pandas' in sys.modules)))\n"
            "sys.argv = ['cumtool', 'cumsum', sys.argv[1], '-o', sys.argv[2]]\nmain()\n")
    done = subprocess.run([sys.executable, "-c", code, str(source),
                           str(tmp_path / "o.parquet")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "LOADED=False"
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "o.parquet").to_pydict() == {"a": [1, 3, 6],
                                                                 "b": ["x", None, "y"]}


@pytest.mark.parametrize("array", [
    pa.array(["a", "", None, "b", ""]),
    pa.array(["x", "a", "", None, "b", ""], pa.large_string()).slice(1),
    pa.array(["", "", ""]), pa.array([], pa.string())], ids=["plain", "sliced", "all", "none"])
def test_empty_text_is_made_missing_from_the_buffers(array):
    from cumtool.columnar import empty_text_missing

    made = empty_text_missing(array)
    made.validate(full=True)
    assert made.type == array.type
    assert made.to_pylist() == [None if cell in ("", None) else cell
                                for cell in array.to_pylist()]


def test_a_library_that_cannot_map_its_memory_is_out_of_memory(invoke, write_file,
                                                               monkeypatch):
    """Under a memory limit (ulimit -v), a library loading fails to map its segments: an
    ImportError, worded as a bug in cumtool."""
    import cumtool.engine

    def run(_request):
        raise ImportError("libarrow_python.so: failed to map segment from shared object")

    monkeypatch.setattr(cumtool.engine, "run", run)
    monkeypatch.delenv("CUMTOOL_DEBUG", raising=False)
    result = invoke("cumsum", str(write_file("a.csv", "x\n1\n")))
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: out of memory: the system gave no more; ")
