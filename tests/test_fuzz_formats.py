"""Fuzzing the JSON Lines, Arrow IPC and spreadsheet readers through the command line:
valid files truncated, with bytes flipped or junk inserted, as files and on standard
input. A run ends with exit 0, or with exit 1 or 2 and one `Error: ...` line; never a
traceback (the `invoke` fixture does not catch exceptions)."""

from __future__ import annotations

import io
import zipfile

import openpyxl
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from click.testing import Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

TABLE = pa.table({"n": [1, 2, 3, 4], "s": ["a", "b", None, "d"],
                  "k": pa.array(["x", "y", "x", "y"]).dictionary_encode()})


def _ipc(stream: bool) -> bytes:
    sink = io.BytesIO()
    with (ipc.new_stream if stream else ipc.new_file)(sink, TABLE.schema) as writer:
        writer.write_table(TABLE, max_chunksize=2)
    return sink.getvalue()


def _xlsx() -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    for row in (["n", "code"], [1, "007"], [2.5, "010"]):
        sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


VALID = {
    "jsonl": b'{"n": 1, "s": "a", "o": {"k": [1, 2]}}\n{"n": 2.5, "t": null}\n{"s": "z"}\n',
    "arrow": _ipc(stream=False),
    "arrows": _ipc(stream=True),
    "xlsx": _xlsx(),
}


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["truncate", "flip", "insert"]))
    if kind == "truncate":
        return data[:draw(st.integers(0, len(data) - 1))]
    at = draw(st.integers(0, len(data) - 1))
    junk = draw(st.binary(min_size=1, max_size=8))
    if kind == "flip":
        return data[:at] + junk + data[at + len(junk):]
    return data[:at] + junk + data[at:]


def _check(result: Result) -> None:
    if result.exit_code == 0:
        assert all(line.startswith("Note: ") for line in result.stderr.splitlines())
        return
    assert result.exit_code in (1, 2), (result.exit_code, result.stderr)
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, (
        result.stderr)


@pytest.mark.parametrize("fmt", [pytest.param(f, id=f) for f in VALID])
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_files_end_in_a_result_or_one_error_line(invoke, tmp_path, fmt, data):
    content = data.draw(mutated(VALID[fmt]))
    path = tmp_path / f"in.{fmt}"
    path.write_bytes(content)
    _check(invoke("cumsum", str(path), "--to", "csv"))
    _check(invoke("cumsum", "--from", fmt, "--to", "jsonl", input=content))


def test_a_zip_that_is_not_a_workbook(invoke, tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("xl/nothing.txt", "no workbook here")
    result = invoke("cumsum", input=buffer.getvalue())
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: standard input: cannot read as a spreadsheet: ")
