"""The format registry (cumtool/formats/registry.py): every format is declared once, by
its own package under formats/, and every list of formats is derived from there."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cumtool.formats
from cumtool.formats import FileKind
from cumtool.formats.registry import (
    BY_MAGIC,
    DELIMITED,
    FORMATS,
    INPUT_FORMATS,
    OUTPUT_FORMATS,
    kind_from_magic,
    kind_from_name,
)

PACKAGES = sorted(p.name for p in Path(cumtool.formats.__file__).parent.iterdir()
                  if (p / "__init__.py").exists())


def test_every_format_package_is_gathered_in_rank_order() -> None:
    assert PACKAGES == ["arrow", "chart", "csv", "excel", "jsonl", "npy", "parquet", "table"]
    assert [f.name for f in FORMATS] == ["csv", "tsv", "parquet", "npy", "jsonl", "arrow",
                                         "arrows", "xlsx", "xls", "ods", "table", "chart"]
    assert INPUT_FORMATS == ("csv", "tsv", "parquet", "npy", "jsonl", "arrow", "arrows",
                             "xlsx", "xls", "ods")
    assert OUTPUT_FORMATS == ("csv", "tsv", "parquet", "npy", "jsonl", "arrow", "arrows",
                              "table", "chart")
    assert DELIMITED == ("csv", "tsv")
    assert BY_MAGIC == ("parquet", "npy", "arrow", "arrows")


def test_names_and_extensions_are_each_declared_once() -> None:
    names = [f.name for f in FORMATS]
    extensions = [ext for f in FORMATS for ext in f.extensions]
    assert len(set(names)) == len(names)
    assert len(set(extensions)) == len(extensions)


@pytest.mark.parametrize(("head", "expected"), [
    (b"PAR1\x15\x04", FileKind("parquet")),
    (b"\x93NUMPY\x01\x00", FileKind("npy")),
    (b"ARROW1\x00\x00", FileKind("arrow")),
    (b"\xff\xff\xff\xff\x10\x00", FileKind("arrows")),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", FileKind("xls")),
    (b"PK\x03\x04....mimetypeapplication/vnd.oasis.opendocument.spreadsheet", FileKind("ods")),
    (b"PK\x03\x04....[Content_Types].xml", FileKind("xlsx")),
    (b"PK\x03\x04....data.npy", FileKind("csv")),  # a zip that is no spreadsheet: text
    (b"\x1f\x8b\x08\x00", FileKind("csv", "gzip")),
    (b'{"a": 1, "b": 2}\n', FileKind("jsonl")),
    (b'{"a":\t1}\n', FileKind("jsonl")),  # a JSON object with a tab is not TSV
    (b"a\tb\n1\t2\n", FileKind("tsv")),
    (b"a,b\n1,2\n", FileKind("csv")),
], ids=["parquet", "npy", "arrow", "arrows", "xls", "ods", "xlsx", "zip", "gzip", "jsonl",
        "jsonl-tab", "tsv", "csv"])
def test_first_bytes_name_the_format(head: bytes, expected: FileKind) -> None:
    assert kind_from_magic(head) == expected


@pytest.mark.parametrize(("name", "expected"), [
    ("a.csv.gz", FileKind("csv", "gzip")), ("A.TSV.ZST", FileKind("tsv", "zstd")),
    ("x.ndjson", FileKind("jsonl")), ("x.feather", FileKind("arrow")),
    ("x.xlsm", FileKind("xlsx")), ("chart.svg", FileKind("chart")), ("x.dat", None),
], ids=["csv.gz", "tsv.zst", "ndjson", "feather", "xlsm", "svg", "unknown"])
def test_names_announce_the_format(name: str, expected: FileKind | None) -> None:
    assert kind_from_name(name) == expected


# A format of its own, in one file: pipe-separated text, read and written by the CSV
# package's reader and writer with another default delimiter.
PSV = '''
    from cumtool.formats import Format
    from cumtool.formats.csv import FORMATS as DELIMITED_TEXT

    CSV = DELIMITED_TEXT[0]
    FORMATS = (Format("psv", (".psv",), rank=25, delimiter="|", line_oriented=True,
                      reader=CSV.reader, writer=CSV.writer),)
'''

RUN = '''
import sys
import cumtool.formats
cumtool.formats.__path__.append(sys.argv[1])
from cumtool.cli import main
sys.argv = ["cumtool", *sys.argv[2:]]
main()
'''


def test_a_new_format_is_one_new_package(tmp_path: Path) -> None:
    """A package found beside the others is a format in every list and option: read by
    its extension, written by --to, offered by --from's choices."""
    (tmp_path / "formats" / "psv").mkdir(parents=True)
    (tmp_path / "formats" / "psv" / "__init__.py").write_text(textwrap.dedent(PSV))
    (tmp_path / "in.psv").write_bytes(b"a|b\n1|x\n2|y\n3|z\n")

    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-c", RUN, str(tmp_path / "formats"), *args],
                              capture_output=True, cwd=tmp_path, check=False)

    done = run("cumsum", "in.psv")
    assert (done.returncode, done.stderr, done.stdout) == (0, b"", b"a|b\n1|x\n3|y\n6|z\n")
    done = run("cumsum", "in.psv", "--to", "csv")
    assert (done.returncode, done.stdout) == (0, b"a,b\n1,x\n3,y\n6,z\n")
    done = run("cumsum", "in.psv", "--from", "nope")
    assert done.returncode == 2
    assert done.stderr == (b"Error: --from 'nope' is not a format; choose from csv, tsv, "
                           b"psv, parquet, npy, jsonl, arrow, arrows, xlsx, xls, ods\n")
