"""Shell completion: operations, option values, and column names from the input's header
(`-c`, `--exclude`, `--by`, `--reset`), written the way a selection wants them.

Most cases ask Click's completion machinery in-process (`ShellComplete.get_completions`,
what `_CUMTOOL_COMPLETE=..._complete` runs); the installed `cumtool` script is run with
the environment variables each shell's script sets, to check what reaches the shell, and
bash itself runs its script once. Expected values are written out by hand.
"""

from __future__ import annotations

import bz2
import gzip
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.shell_completion import ShellComplete
from helpers import CUMTOOL

from cumtool import ops
from cumtool.choices import DTYPE_NAMES, TORCH_ALIASES
from cumtool.cli import main
from cumtool.columns import parse, resolve
from cumtool.completion import column_completions, header_names, spell

# Every op module's command, in the order Click lists them: a new op completes with no
# change here.
OPS = sorted(ops.OPS)
CSV_HEADER = 'date,units,revenue,"price, usd",2024\n'
CSV = CSV_HEADER + "2024-01-01,3,10.5,1.25,7\n"
CSV_NAMES = ["date", "units", "revenue", '"price, usd"', '"2024"']
PARQUET_NAMES = ["id", '"price, usd"', "qty"]


def completions(*args: str) -> list[str]:
    """What completes the last of `args` after the others, as `cumtool ARGS`."""
    *done, incomplete = args
    complete = ShellComplete(main, {}, "cumtool", "_CUMTOOL_COMPLETE")
    return [item.value for item in complete.get_completions(list(done), incomplete)]


def run_completion(shell: str, words: str, cword: int | str) -> subprocess.CompletedProcess:
    """The installed script, called the way `shell`'s completion script calls it."""
    env = {**os.environ, "_CUMTOOL_COMPLETE": f"{shell}_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}
    return subprocess.run([CUMTOOL], capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory (the current one) with one file of each kind."""
    (tmp_path / "sales.csv").write_text(CSV, encoding="utf-8")
    (tmp_path / "semi.txt").write_text("a;b c;2-3\n1;2;3\n", encoding="utf-8")
    (tmp_path / "tabs.tsv").write_text("x\ty\n1\t2\n", encoding="utf-8")
    (tmp_path / "sales.csv.gz").write_bytes(gzip.compress(CSV.encode()))
    (tmp_path / "sales.tsv.bz2").write_bytes(bz2.compress(b"k\tv\n1\t2\n"))
    (tmp_path / "latin.csv").write_bytes("café,total\n1,2\n".encode("latin-1"))
    pq.write_table(pa.table({"id": [1], "price, usd": [2.5], "qty": [3]}),
                   tmp_path / "orders.parquet")
    np.save(tmp_path / "array.npy", np.zeros((2, 3)))
    (tmp_path / "random.csv").write_bytes(random.Random(0).randbytes(4096))
    (tmp_path / "fake.parquet").write_bytes(b"PAR1" + bytes(range(256)) + b"PAR1")
    (tmp_path / "folder.csv").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


# Operations and option values -------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(("",), OPS, id="all"),
        pytest.param(("cum",), ["cumcount", "cummax", "cummean", "cummin", "cumnunique",
                                "cumprod", "cumstd", "cumsum", "cumvar"], id="cum"),
        pytest.param(("cumm",), ["cummax", "cummean", "cummin"], id="cumm"),
        pytest.param(("log",), ["logcumsumexp"], id="log"),
        pytest.param(("avg",), [], id="none"),
    ],
)
def test_operation_names(args, expected):
    assert completions(*args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(("--to", "p"), ["parquet"], id="to-p"),
        pytest.param(("--to", ""), ["csv", "tsv", "parquet", "npy", "jsonl", "arrow",
                                     "arrows", "table", "chart"], id="to"),
        pytest.param(("--to", "T"), ["tsv", "table"], id="to-uppercase"),
        pytest.param(("--from", ""), ["csv", "tsv", "parquet", "npy", "jsonl", "arrow",
                                       "arrows", "xlsx", "xls", "ods"], id="from"),
        pytest.param(("--from", "t"), ["tsv"], id="from-no-table"),
        pytest.param(("--dtype", "fl"), ["float16", "float32", "float64"],
                     id="dtype-fl-not-ambiguous-float"),
        pytest.param(("-t", "in"), ["int8", "int16", "int32", "int64"],
                     id="dtype-in-not-ambiguous-int"),
        pytest.param(("--dtype", "c"), ["complex64", "complex128", "cfloat", "cdouble"],
                     id="dtype-torch-aliases"),
        pytest.param(("--dtype", ""), [*DTYPE_NAMES, *TORCH_ALIASES], id="dtype"),
        pytest.param(("--dtype", "torch.fl"),
                     ["torch.float16", "torch.float32", "torch.float64", "torch.float"],
                     id="dtype-torch-names"),
        pytest.param(("--axis", ""), ["rows", "index", "columns"], id="axis"),
        pytest.param(("-a", "c"), ["columns"], id="axis-short"),
        pytest.param(("--dim", "R"), ["rows"], id="dim-uppercase"),
        pytest.param(("--axis", "2"), [], id="axis-integer"),
        pytest.param(("--overflow", ""), ["error", "wrap"], id="overflow"),
        pytest.param(("--to=n",), ["npy"], id="to-equals"),
    ],
)
def test_option_values(args, expected):
    assert completions("cumsum", *args) == expected


def test_cummax_completes_its_own_option():
    assert completions("cummax", "--ind") == ["--indices"]
    assert completions("cumsum", "--ind") == []


def test_help_lists_the_values_completion_offers(invoke):
    text = " ".join(invoke("cumsum", "--help").stdout.split())
    assert "--from [csv|tsv|parquet|npy|jsonl|arrow|arrows|xlsx|xls|ods]" in text
    assert "--to [csv|tsv|parquet|npy|jsonl|arrow|arrows|table|chart]" in text
    assert "-a, --axis, --dim [rows|index|columns|N]" in text
    assert "--overflow [error|wrap]" in text
    assert ", ".join(DTYPE_NAMES) in text and ", ".join(TORCH_ALIASES) in text


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(("--dtype", "FLOAT32"), "a\n1.0\n3.0\n", id="dtype-uppercase"),
        pytest.param(("--dtype", "torch.float"), "a\n1.0\n3.0\n", id="dtype-torch-name"),
        pytest.param(("-t", "double"), "a\n1.0\n3.0\n", id="dtype-torch-alias"),
        pytest.param(("--to", "CSV"), "a\n1\n3\n", id="to-uppercase"),
        pytest.param(("--from", "Csv"), "a\n1\n3\n", id="from-mixed-case"),
        pytest.param(("--axis", "ROWS"), "a\n1\n3\n", id="axis-uppercase"),
        pytest.param(("--axis", " 0 "), "a\n1\n3\n", id="axis-integer-spaces"),
    ],
)
def test_values_are_accepted_in_any_case_as_before(invoke, args, expected):
    result = invoke("cumsum", *args, input="a\n1\n2\n")
    assert (result.exit_code, result.stderr, result.stdout) == (0, "", expected)


# Column names -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(("sales.csv", "-c", ""), CSV_NAMES, id="csv"),
        pytest.param(("sales.csv", "--columns", "re"), ["revenue"], id="csv-prefix"),
        pytest.param(("sales.csv", "-c", "pr"), ['"price, usd"'], id="comma-quoted"),
        pytest.param(("sales.csv", "-c", '"pr'), ['"price, usd"'], id="quote-begun"),
        pytest.param(("sales.csv", "-c", "20"), ['"2024"'], id="number-quoted"),
        pytest.param(("sales.csv", "-c", "units,re"), ["units,revenue"], id="after-comma"),
        pytest.param(("sales.csv", "-c", "units,"),
                     ["units,date", "units,revenue", 'units,"price, usd"', 'units,"2024"'],
                     id="after-comma-not-chosen-again"),
        pytest.param(("sales.csv", "-c", '"price, usd",u'), ['"price, usd",units'],
                     id="after-quoted-comma"),
        pytest.param(("sales.csv", "-c", "!date,r"), ["!date,revenue"], id="negated"),
        pytest.param(("sales.csv", "--exclude", "d"), ["date"], id="exclude"),
        pytest.param(("sales.csv", "--by", "da"), ["date"], id="by"),
        pytest.param(("sales.csv", "--reset", "u"), ["units"], id="reset"),
        pytest.param(("sales.csv", "-c", "x"), [], id="no-match"),
        pytest.param(("sales.csv.gz", "-c", "u"), ["units"], id="gzip"),
        pytest.param(("sales.tsv.bz2", "-c", ""), ["k", "v"], id="bz2-tsv"),
        pytest.param(("tabs.tsv", "-c", ""), ["x", "y"], id="tsv"),
        pytest.param(("-d", ";", "semi.txt", "-c", ""), ["a", "b c", '"2-3"'],
                     id="delimiter-before-input"),
        pytest.param(("semi.txt", "-d", ";", "-c", ""), ["a", "b c", '"2-3"'],
                     id="delimiter-after-input"),
        pytest.param(("semi.txt", "-c", ""), ["a;b c;2-3"], id="default-delimiter"),
        pytest.param(("latin.csv", "--encoding", "latin-1", "-c", "c"), ["café"],
                     id="encoding"),
        pytest.param(("sales.csv", "--dtype", "float", "--axis", "x", "-c", "u"), ["units"],
                     id="after-wrong-option-values"),
        pytest.param(("orders.parquet", "-c", ""), PARQUET_NAMES, id="parquet"),
        pytest.param(("orders.parquet", "--by", "q"), ["qty"], id="parquet-by"),
        pytest.param(("orders.parquet", "--exclude", "id,"), ['id,"price, usd"', "id,qty"],
                     id="parquet-after-comma"),
    ],
)
def test_column_names(files, args, expected):
    assert completions("cumsum", *args) == expected


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("missing.csv", "-c", ""), id="missing-file"),
        pytest.param(("folder.csv", "-c", ""), id="directory"),
        pytest.param(("random.csv", "-c", ""), id="binary-csv"),
        pytest.param(("fake.parquet", "-c", ""), id="damaged-parquet"),
        pytest.param(("array.npy", "-c", ""), id="npy"),
        pytest.param(("-", "-c", ""), id="stdin-dash"),
        pytest.param(("-c", ""), id="no-input"),
        pytest.param(("sales.csv", "--no-header", "-c", ""), id="no-header"),
        pytest.param(("sales.csv", "-d", "ab", "-c", ""), id="bad-delimiter"),
        pytest.param(("sales.csv", "--encoding", "no-such", "-c", ""), id="bad-encoding"),
        pytest.param(("latin.csv", "-c", ""), id="not-utf-8"),
        pytest.param(("orders.parquet", "--from", "csv", "-c", ""), id="from-csv"),
    ],
)
def test_nothing_to_complete_and_no_error(files, args):
    assert completions("cumsum", *args) == []


def test_a_named_pipe_is_not_opened(files):
    """Opening a FIFO would wait for a writer: completion must not hang on one."""
    os.mkfifo(files / "pipe.csv")
    assert completions("cumsum", "pipe.csv", "-c", "") == []


@pytest.mark.parametrize(("name", "compress"),
                         [pytest.param("h.csv", lambda data: data, id="plain"),
                          pytest.param("h.csv.gz", gzip.compress, id="gzip"),
                          pytest.param("h.csv.bz2", bz2.compress, id="bz2")])
def test_a_header_without_a_line_break_is_read_whole(tmp_path, name, compress):
    path = tmp_path / name
    path.write_bytes(compress(b"a,b,c"))
    assert header_names(str(path)) == ["a", "b", "c"]


def test_a_path_from_home_is_expanded(files, monkeypatch):
    monkeypatch.setenv("HOME", str(files))
    assert completions("cumsum", "~/sales.csv", "-c", "re") == ["revenue"]


def test_a_header_longer_than_what_is_read_loses_only_its_cut_name(tmp_path):
    names = [f"column{i}" for i in range(20_000)]  # about 190 KiB
    path = tmp_path / "wide.csv"
    path.write_text(",".join(names) + "\n" + ",".join("1" * len(names)) + "\n")
    got = header_names(str(path))
    assert 5000 < len(got) < len(names)
    assert got == names[: len(got)]


def test_a_damaged_parquet_footer_completes_nothing_or_its_names(tmp_path):
    """Footers with bytes changed at random: pyarrow raises several kinds of error, and
    each must end as no completion rather than a traceback on the user's terminal."""
    table = pa.table({"id": [1, 2], "s": ["a", "b"], "nested": [[1], [2]],
                      "st": [{"x": 1}, {"x": 2}]})
    good = tmp_path / "good.parquet"
    pq.write_table(table, good)
    data = good.read_bytes()
    rng = random.Random(7)
    path = tmp_path / "damaged.parquet"
    for _ in range(300):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged) - 150, len(damaged))] = rng.randrange(256)
        path.write_bytes(bytes(damaged[: rng.choice([len(damaged), rng.randrange(len(damaged))])]))
        assert header_names(str(path)) in ([], ["id", "s", "nested", "st"])


# How names are spelled --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "spelled"),
    [
        pytest.param("units", "units", id="plain"),
        pytest.param("unit price", "unit price", id="space-inside"),
        pytest.param("price, usd", '"price, usd"', id="comma"),
        pytest.param("2024", '"2024"', id="number"),
        pytest.param("2-4", '"2-4"', id="position-range"),
        pytest.param("3-", '"3-"', id="open-range"),
        pytest.param("-2", '"-2"', id="range-from-first"),
        pytest.param("units-revenue", '"units-revenue"', id="name-range"),
        pytest.param("unit-price", "unit-price", id="dash-not-a-range"),
        pytest.param("1.5", "1.5", id="decimal-is-a-name"),
        pytest.param(" padded ", '" padded "', id="spaces-around"),
        pytest.param("!important", '"!important"', id="bang"),
        pytest.param('"quoted"', '"""quoted"""', id="leading-quote"),
        pytest.param('say "hi"', 'say "hi"', id="quote-inside"),
    ],
)
def test_spelling(name, spelled):
    header = [name, "units", "revenue"]
    assert spell(name, set(header)) == spelled


def test_every_completion_selects_the_column_it_names():
    """Through cumtool's own selection parser: each completed item, alone or after
    another, chooses exactly the column it was completed from."""
    header = ["units", "revenue", "units-revenue", "2024", "2-3", "price, usd", " pad ",
              "!x", '"q"', "a b", "dup", "dup", "1.5", "ünï"]
    for value in column_completions(header, ""):
        chosen = resolve(parse(value, "-c"), header, "t")
        assert len(chosen) == 1, value
        assert value in (spell(header[chosen[0]], set(header)),
                         f"dup[{chosen[0] - header.index('dup')}]")
    after = column_completions(header, "revenue,")
    assert len(after) == len(column_completions(header, "")) - 1
    for value in after:
        assert resolve(parse(value, "-c"), header, "t")[0] == 1


def test_a_repeated_name_is_completed_with_its_occurrence():
    assert column_completions(["a", "b", "a"], "") == ["a[0]", "a[1]", "b"]
    assert column_completions(["x, y", "x, y"], '"x') == ['"x, y"[0]', '"x, y"[1]']


# What reaches the shell -------------------------------------------------------------


@pytest.mark.parametrize(
    ("shell", "words", "cword", "expected"),
    [
        pytest.param("bash", "cumtool cumsum sales.csv -c pr", 4,
                     "plain,'\"price, usd\"'\n", id="bash-quotes-for-the-shell"),
        pytest.param("bash", "cumtool cumsum sales.csv -c units,re", 4,
                     "plain,units,revenue\n", id="bash-after-comma"),
        pytest.param("bash", "cumtool cumsum --to p", 3, "plain,parquet\n", id="bash-to"),
        pytest.param("bash", "cumtool cumsum sales.", 2, "file,sales.\n", id="bash-input"),
        pytest.param("zsh", "cumtool cumsum sales.csv -c pr", 4,
                     'plain\n"price, usd"\n_\n', id="zsh-quotes-itself"),
        pytest.param("fish", "cumtool cumsum sales.csv -c pr", "pr",
                     'plain\n"price, usd"\n_\n', id="fish-quotes-itself"),
        pytest.param("bash", "cumtool cumsum missing.csv -c ", 4, "", id="bash-missing"),
        pytest.param("bash", "cumtool cumsum random.csv -c ", 4, "", id="bash-binary"),
        pytest.param("fish", "cumtool cumsum fake.parquet -c ", "", "", id="fish-damaged"),
    ],
)
def test_installed_script(files, shell, words, cword, expected):
    done = run_completion(shell, words, cword)
    assert (done.returncode, done.stderr) == (0, "")
    if shell == "fish":  # click's fish framing changed in 8.5: compare what fish is given
        assert fish_values(done.stdout) == fish_values(expected)
        return
    assert done.stdout.strip("\n").splitlines() == expected.splitlines()


def fish_values(output: str) -> list[str]:
    """The values in click's fish completion output: `type`, `value`, `help` lines up to
    click 8.4, `type,value<TAB>help` lines from 8.5."""
    lines = output.strip("\n").splitlines()
    if lines and lines[0] in ("plain", "file", "dir") and len(lines) % 3 == 0:
        return lines[1::3]
    return [line.split("\t", 1)[0].split(",", 1)[1] for line in lines]


@pytest.mark.parametrize(
    ("words", "cword", "first"),
    [pytest.param("cumtool cumsum sales.csv -c ", 4, "plain,date", id="csv-columns"),
     pytest.param("cumtool cumsum --dtype ", 3, "plain,int8", id="dtype")],
)
def test_completion_loads_no_numeric_library(files, words, cword, first):
    """Every Tab starts cumtool: a CSV header or an option value must not cost numpy,
    pyarrow or polars (only a Parquet file's names load pyarrow)."""
    code = ("import sys\n"
            "from cumtool.cli import main\n"
            "try:\n"
            "    main(prog_name='cumtool', complete_var='_CUMTOOL_COMPLETE')\n"
            "except SystemExit:\n"
            "    pass\n"
            "loaded = [m for m in ('numpy', 'pyarrow', 'polars') if m in sys.modules]\n"
            "print('LOADED=' + ','.join(loaded))\n")
    env = {**os.environ, "_CUMTOOL_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60)
    lines = done.stdout.splitlines()
    assert (lines[0], lines[-1], done.stderr) == (first, "LOADED=", "")


@pytest.mark.parametrize(
    ("shell", "line"),
    [
        pytest.param("bash", "complete -o nosort -F _cumtool_completion cumtool", id="bash"),
        pytest.param("zsh", "compdef _cumtool_completion cumtool", id="zsh"),
        pytest.param("fish", "complete --no-files --command cumtool", id="fish"),
    ],
)
def test_source_scripts(shell, line):
    env = {**os.environ, "_CUMTOOL_COMPLETE": f"{shell}_source"}
    done = subprocess.run([CUMTOOL], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0
    assert line in done.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_puts_a_quoted_name_on_the_line_as_cumtool_reads_it(files):
    """bash's own script, as sourced from ~/.bashrc; then the completed word, parsed by
    bash, is the selection cumtool wants."""
    script = (
        'eval "$(_CUMTOOL_COMPLETE=bash_source cumtool)"\n'
        "COMP_WORDS=(cumtool cumsum sales.csv -c units,pr); COMP_CWORD=4\n"
        "_cumtool_completion cumtool\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
        'eval "printf \'%s\\n\' ${COMPREPLY[0]}"\n'
    )
    done = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "'units,\"price, usd\"'\nunits,\"price, usd\"\n"
