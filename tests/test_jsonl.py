"""JSON Lines in and out: every unscanned value comes back as the same JSON value, keys in
their order, absent keys absent; scanned fields follow the table rules; bad lines are
errors naming the line."""

from __future__ import annotations

import gzip
import io
import json

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from helpers import ok
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Every kind of JSON value, in an unscanned column of its own and in a mixed one.
RECORDS = [
    {"id": "a", "x": 1, "text": "007", "flag": True, "nested": {"z": 1, "a": [1, {"b": None}]},
     "list": [3, "x", None], "mixed": 1, "big": 123456789012345678901234567890,
     "unicode": "é \u2028 😀 \"q\" \\ \n\t", "float": 1.5, "nothing": None},
    {"id": "b", "x": 2, "text": "123", "flag": False, "nested": {}, "list": [],
     "mixed": "one", "big": 1, "unicode": "", "float": -0.0},
    {"x": 3, "id": "c", "text": "", "nested": {"a": 1, "z": 2}, "list": [[]],
     "mixed": {"k": "v"}, "float": 1e300, "nothing": None},
    {"id": "d", "extra": "late key", "mixed": [1.5, True], "unicode": "\u00e9"},
    {"id": "e", "x": 5, "mixed": None, "flag": None, "text": "z"},
]
COLUMNS = ["id", "x", "text", "flag", "nested", "list", "mixed", "big", "unicode", "float",
           "nothing", "extra"]


def jsonl(records: list[dict], **dumps: object) -> bytes:
    return "".join(json.dumps(r, **dumps) + "\n" for r in records).encode()  # type: ignore[arg-type]


def records_of(result: Result) -> list[dict]:
    ok(result)
    return [json.loads(line) for line in result.stdout_bytes.decode().split("\n") if line]


def items(record: dict) -> list:
    """A record's keys and values in order, nested objects' orders included."""
    return [(k, items(v) if isinstance(v, dict) else v) for k, v in record.items()]


def same_json(left: object, right: object) -> bool:
    """Equal as JSON values, with string and number and boolean told apart (in Python
    True == 1), and key orders compared."""
    if isinstance(left, dict) and isinstance(right, dict):
        return list(left) == list(right) and all(same_json(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(same_json, left, right))
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right and str(left).startswith("-") == str(right).startswith("-")
    return type(left) is type(right) and left == right


@pytest.mark.parametrize("where", [pytest.param("file", id="file"),
                                   pytest.param("stdin", id="stdin")])
def test_unscanned_values_and_key_order_pass_through(invoke, write_file, where):
    data = jsonl(RECORDS)
    if where == "file":
        out = records_of(invoke("cumsum", str(write_file("in.jsonl", data)), "-c", "x"))
    else:
        out = records_of(invoke("cumsum", "-c", "x", input=data))
    expected_x = [1, 3, 6, None, 11]
    assert len(out) == len(RECORDS)
    for record, got, x in zip(RECORDS, out, expected_x, strict=True):
        # The same keys, in column order (the first record's, then later ones' new keys).
        assert list(got) == [k for k in COLUMNS if k in record], (record, got)
        for key, value in record.items():
            if key == "x":
                assert got[key] == x and type(got[key]) is int
            else:
                assert same_json(got[key], value), (key, value, got[key])


def test_every_value_type_round_trips_through_arrow_and_parquet(invoke, tmp_path, write_file):
    source = write_file("in.jsonl", jsonl(RECORDS))
    arrow = tmp_path / "mid.arrow"
    ok(invoke("cumsum", str(source), "-c", "x", "-o", str(arrow)))
    parquet = tmp_path / "mid.parquet"
    ok(invoke("cumsum", str(arrow), "-c", "x", "--exclusive", "-o", str(parquet)))
    back = records_of(invoke("cummax", str(parquet), "--to", "jsonl", "-c", "x"))
    for record, got in zip(RECORDS, back, strict=True):
        # flag is a typed column (bool), which holds an absent key as null, as a number
        # column does; nested and mixed values keep their JSON text, absent keys and all.
        assert list(got) == [k for k in COLUMNS if k in record or k == "flag"]
        for key, value in record.items():
            if key != "x":
                assert same_json(got[key], value), (key, value, got[key])


def test_columns_are_the_union_of_keys_in_order_of_first_appearance(invoke, write_file):
    path = write_file("in.jsonl", '{"b": 1}\n{"a": "x", "b": 2}\n{"c": true}\n')
    result = ok(invoke("cumsum", str(path), "--to", "csv"))
    assert result.stdout == "b,a,c\n1,,\n3,x,\ntrue\n".replace("true\n", ",,true\n")


def test_absent_stays_absent_and_null_stays_null(invoke, write_file):
    text = ('{"k": "p", "v": 1, "n": null, "s": "a"}\n'
            '{"k": "q", "n": null}\n'
            '{"k": "p", "v": null, "n": null, "s": null}\n'
            '{"v": 4, "n": null}\n')
    out = ok(invoke("cumsum", str(write_file("in.jsonl", text)))).stdout
    # v has absent keys and a null: each is written as it was (the null stays null, the
    # absent key absent); n is null in every record: written null; s has both: its JSON
    # text keeps each as it was.
    assert out == ('{"k":"p","v":1,"n":null,"s":"a"}\n'
                   '{"k":"q","n":null}\n'
                   '{"k":"p","v":null,"n":null,"s":null}\n'
                   '{"v":5,"n":null}\n')


def test_missing_scanned_field_stays_missing_with_keep(invoke, write_file):
    text = '{"v": 1}\n{"w": 0}\n{"v": 2}\n'
    out = ok(invoke("cumsum", str(write_file("in.jsonl", text)), "-c", "v", "--keep")).stdout
    assert out == '{"v":1,"v_cumsum":1}\n{"w":0}\n{"v":2,"v_cumsum":3}\n'


def test_numbers_and_floats_are_scanned_with_their_types(invoke, write_file):
    text = '{"i": 1, "f": 0.5, "mix": 1}\n{"i": 2, "f": 1.5, "mix": 2.5}\n'
    path = write_file("in.jsonl", text)
    out = ok(invoke("cumsum", str(path))).stdout
    assert out == '{"i":1,"f":0.5,"mix":1.0}\n{"i":3,"f":2.0,"mix":3.5}\n'


def test_parquet_output_has_exact_types(invoke, tmp_path, write_file):
    path = write_file("in.jsonl", jsonl(RECORDS))
    out = tmp_path / "out.parquet"
    ok(invoke("cumsum", str(path), "-o", str(out)))
    schema = pq.read_schema(out)
    types = {f.name: f.type for f in schema}
    assert types == {"id": pa.string(), "x": pa.int64(), "text": pa.string(),
                     "flag": pa.bool_(), "nested": pa.string(), "list": pa.string(),
                     "mixed": pa.string(), "big": pa.string(), "unicode": pa.string(),
                     "float": pa.float64(), "nothing": pa.string(), "extra": pa.string()}
    # flag has true, false, null and absent keys: flags, both missing ones null (as in a
    # number column; JSON Lines output tells them apart row by row).
    table = pq.read_table(out)
    assert table.column("flag").to_pylist() == [True, False, None, None, None]
    assert table.column("x").to_pylist() == [1, 3, 6, None, 11]
    assert schema.field("nested").metadata == {b"cumtool.json": b"1"}


def test_csv_output_shows_strings_as_text_and_other_values_as_json(invoke, write_file):
    text = ('{"s": "a,b", "o": {"k": [1, "x"]}, "m": "text", "v": 1}\n'
            '{"s": "", "o": null, "m": 2, "v": 2}\n')
    out = ok(invoke("cumsum", str(write_file("in.jsonl", text)), "--to", "csv")).stdout
    # An empty string is written "" and a null as nothing, as the CSV writer keeps them.
    assert out == 's,o,m,v\n"a,b","{""k"":[1,""x""]}",text,1\n"",,2,3\n'


@pytest.mark.parametrize("rows", [pytest.param(n, id=f"batch-{n}") for n in (1, 2, 3, 1000)])
def test_batches_do_not_change_the_output(invoke, write_file, rows):
    path = write_file("in.jsonl", jsonl(RECORDS))
    whole = ok(invoke("cumsum", str(path), "-c", "x", "--keep")).stdout_bytes
    assert ok(invoke("cumsum", str(path), "-c", "x", "--keep", "--batch-rows",
                     str(rows))).stdout_bytes == whole
    assert ok(invoke("cumsum", str(path), "-c", "x", "--keep", "--reverse", "--batch-rows",
                     str(rows))).stdout_bytes.count(b"\n") == len(RECORDS)


@pytest.mark.parametrize(
    ("name", "args"),
    [pytest.param("in.ndjson", (), id="ndjson"),
     pytest.param("in.txt", ("--from", "jsonl"), id="from"),
     pytest.param("in.jsonl.gz", (), id="gzip"),
     pytest.param("noext", (), id="sniffed")])
def test_names_and_sniffing(invoke, write_file, name, args):
    data = b'{"v": 1}\r\n\r\n{"v": 2}'  # CRLF, a blank line, no final line end
    if name.endswith(".gz"):
        data = gzip.compress(data)
    out = ok(invoke("cumsum", str(write_file(name, data)), *args, "--to", "jsonl")).stdout
    assert out == '{"v":1}\n{"v":3}\n'


def test_stdin_is_sniffed_as_jsonl(invoke):
    assert ok(invoke("cumsum", input=b'{"v": 2}\n{"v": 2}\n')).stdout == '{"v":2}\n{"v":4}\n'


@pytest.mark.parametrize("via", ["stdin", "noext", "gzip-stdin"])
def test_a_utf8_bom_does_not_hide_json_lines(invoke, write_file, via):
    # SEMANTICS.md: a leading BOM is dropped; the sniff looks past it as the reader does.
    data = b'\xef\xbb\xbf{"a":1}\n{"a":2}\n'
    if via == "noext":
        result = invoke("cumsum", str(write_file("noext", data)))
    else:
        result = invoke("cumsum", input=gzip.compress(data) if via == "gzip-stdin" else data)
    assert ok(result).stdout_bytes == b'{"a":1}\n{"a":3}\n'


LONG_FIRST = jsonl([{"a": 1, "b": "x" * 70_000}, {"a": 2, "b": "y"}])  # past the 64 KiB sniff


@pytest.mark.parametrize("via", ["stdin", "noext", "gzip-stdin", "gzip-noext"])
def test_a_first_line_longer_than_the_sniff_is_json_lines(invoke, write_file, via):
    data = gzip.compress(LONG_FIRST) if via.startswith("gzip") else LONG_FIRST
    if via.endswith("noext"):
        result = invoke("cumsum", str(write_file("noext", data)))
    else:
        result = invoke("cumsum", input=data)
    assert ok(result).stdout_bytes == (b'{"a":1,"b":"' + b"x" * 70_000 + b'"}\n'
                                       b'{"a":3,"b":"y"}\n')


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_first_line_past_max_record_size_says_so(invoke, gzipped):
    result = invoke("cumsum", "--max-record-size", "1000",
                    input=gzip.compress(LONG_FIRST) if gzipped else LONG_FIRST)
    assert result.exit_code == 1
    assert result.stderr == ("Error: standard input: line 1 is longer than 1000 bytes; "
                             "raise --max-record-size if it is meant\n")


def test_a_pipe_that_pauses_inside_the_first_line(tmp_path, monkeypatch):
    """The sniff sees what has arrived: a first line cut there is read on to its end
    (--batch-rows: the general path from the start, which sniffs)."""
    import os
    import sys
    import threading
    import time

    from cumtool.engine import run
    from cumtool.request import Request

    data = jsonl([{"a": 1, "b": "x" * 5000}, {"a": 2, "b": "y"}])
    read_end, write_end = os.pipe()

    def write() -> None:
        with open(write_end, "wb", buffering=0) as out:
            out.write(data[:1000])
            time.sleep(0.3)  # longer than the small path's wait for standard input to end
            out.write(data[1000:])

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    with open(read_end, "rb") as stream:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stream))
        run(Request(op="cumsum", input="-", output=str(tmp_path / "out.jsonl"),
                    batch_rows=100))
    thread.join()
    assert (tmp_path / "out.jsonl").read_bytes() == (b'{"a":1,"b":"' + b"x" * 5000 + b'"}\n'
                                                     b'{"a":3,"b":"y"}\n')


def test_a_json_array_after_a_bom_is_named_json(invoke):
    result = invoke("cumsum", input=b'\xef\xbb\xbf[{"a":1},\n{"a":2}]\n')
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: standard input: this is JSON, not JSON Lines ")
    assert result.stderr.count("\n") == 1


def test_csv_to_jsonl_keeps_text_as_strings(invoke, write_file):
    path = write_file("in.csv", "code,n,note\n007,1,NA\n010,2,\n")
    out = ok(invoke("cumsum", str(path), "--to", "jsonl")).stdout
    # An empty cell is missing: null, so that the key (and a column of them) stays.
    assert out == ('{"code":"007","n":1,"note":"NA"}\n'
                   '{"code":"010","n":3,"note":null}\n')


@pytest.mark.parametrize(
    ("text", "message"),
    [pytest.param(b'{"v": 1}\n{"v": 2,}\n', "line 2 is not JSON: Expecting property name "
                  "enclosed in double quotes (at character 9)", id="bad-json"),
     pytest.param(b'{"v": 1}\n\n[1, 2]\n', "line 3 is an array, not a JSON object",
                  id="array"),
     pytest.param(b'{"v": 1}\n7\n', "line 2 is the value 7, not a JSON object",
                  id="number"),
     pytest.param(b'{"v": 1}\n"h\\u00e9"\n', 'line 2 is the value "h\\u00e9", not a JSON '
                  "object", id="text"),
     pytest.param(b'{"v": 1}\nnull\n', "line 2 is the value null, not a JSON object",
                  id="null"),
     pytest.param(b'{"v": 1}\n{"v": "\xff"}\n', "line 2 is not UTF-8 text", id="utf8")])
def test_a_bad_line_is_an_error_naming_it(invoke, write_file, text, message):
    path = write_file("in.jsonl", text)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: {path}: {message}\n"


def test_a_bad_line_on_stdin_names_standard_input(invoke):
    result = invoke("cumsum", "--from", "jsonl", input=b'{"v": 1}\nnot json\n')
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: standard input: line 2 is not JSON: ")
    assert result.stderr.count("\n") == 1


def test_a_bad_line_leaves_no_output_file(invoke, tmp_path, write_file):
    out = tmp_path / "out.jsonl"
    result = invoke("cumsum", str(write_file("in.jsonl", '{"v": 1}\n{')), "-o", str(out),
                    "--batch-rows", "1")
    assert result.exit_code == 1
    assert not out.exists()


def test_scanning_a_field_that_is_not_always_a_number_is_an_error(invoke, write_file):
    path = write_file("in.jsonl", '{"v": 1}\n{"v": "n/a"}\n')
    result = invoke("cumsum", str(path), "-c", "v")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 'v' is not numeric: row 2 (line 2) "
                             "holds 'n/a'; numeric columns: none\n")


@pytest.mark.parametrize(("before", "number"), [pytest.param("", 1, id="first"),
                                                pytest.param('{"v": 1}\n{"v": 2}\n', 3,
                                                             id="third")])
def test_a_last_line_longer_than_the_record_limit_is_named(invoke, write_file, before,
                                                           number):
    path = write_file("in.jsonl", before + '{"v": "' + "x" * 3000 + '"}')  # no line end
    result = invoke("cumsum", str(path), "--max-record-size", "1K")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: line {number} is longer than 1024 bytes; raise "
                             "--max-record-size if it is meant\n")


def test_a_line_longer_than_the_record_limit_is_an_error(invoke, write_file):
    path = write_file("in.jsonl", '{"v": 1}\n{"v": "' + "x" * 3000 + '"}\n{"v": 2}\n')
    result = invoke("cumsum", str(path), "--max-record-size", "1K")
    assert result.exit_code == 1
    assert "line 2 is longer than 1024 bytes" in result.stderr


def test_empty_input_has_no_column_to_scan(invoke, write_file):
    path = write_file("in.jsonl", b"\n")
    result = invoke("cumsum", str(path), "--to", "jsonl")
    assert result.exit_code == 1
    assert result.stderr == f"Error: {path}: no numeric columns to scan; columns: none\n"


def test_arrow_stream_output_keeps_json_text_for_a_jsonl_round_trip(invoke, write_file):
    path = write_file("in.jsonl", jsonl(RECORDS))
    stream = ok(invoke("cumsum", str(path), "--to", "arrows")).stdout_bytes
    assert ipc.open_stream(io.BytesIO(stream)).read_all().num_rows == len(RECORDS)
    again = records_of(invoke("cumsum", "--to", "jsonl", "-c", "x", "--exclusive",
                              input=stream))
    assert [list(r) for r in again] == [[k for k in COLUMNS if k in r or k == "flag"]
                                        for r in RECORDS]


# CSV -> jsonl -> Arrow -> CSV keeps unscanned columns as they were ------------------------

_cell = st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                       blacklist_characters="\x00\r"), max_size=8)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_cell, _cell, st.integers(-1000, 1000)), min_size=1,
                     max_size=6))
def test_csv_to_jsonl_to_arrow_to_csv_is_lossless(invoke, rows):
    import csv

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["a", "b", "n"])
    writer.writerows(rows)
    original = text.getvalue().encode()
    as_jsonl = ok(invoke("cumsum", "--from", "csv", "-c", "n", "--to", "jsonl",
                         input=original)).stdout_bytes
    as_arrow = ok(invoke("cumsum", "-c", "n", "--exclusive", "--to", "arrows",
                         input=as_jsonl)).stdout_bytes
    back = ok(invoke("cumsum", "-c", "n", "--to", "csv", input=as_arrow)).stdout
    got = list(csv.reader(io.StringIO(back)))
    assert got[0] == ["a", "b", "n"]
    assert [(a, b) for a, b, _ in got[1:]] == [(a, b) for a, b, _ in rows]


@pytest.mark.parametrize("head", [pytest.param(1, id="head-1"), pytest.param(2, id="head-2"),
                                  pytest.param(1024, id="head-1024")])
def test_many_key_orders_count_absent_keys_right(invoke, write_file, monkeypatch, head):
    from cumtool.formats.jsonl import jsonl as module

    # Blocks of a few lines, read by Python's json first for `head` lines, by pyarrow after.
    monkeypatch.setattr(module, "BLOCK_BYTES", 40)
    monkeypatch.setattr(module, "HEAD_LINES", head)
    # v is in every record (its null stays null); a and c are absent from some.
    records = [{"a": 1, "v": 1}, {"v": None, "a": 2}, {"v": 2, "c": 1},
               {"a": 3, "v": 3, "c": 2}, {"c": 3, "v": 4, "a": 4}]
    out = ok(invoke("cumsum", str(write_file("in.jsonl", jsonl(records))))).stdout
    assert out == ('{"a":1,"v":1}\n{"a":3,"v":null}\n{"v":3,"c":1}\n{"a":6,"v":6,"c":3}\n'
                   '{"a":10,"v":10,"c":6}\n')


# The parsers, polars' and pyarrow's (typed) and Python's json module, give the same bytes --

def _paths(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Blocks of a few lines, and in them `python`: every line read by Python's json
    module (heads longer than any block); `native`, `polars` and `pyarrow`: all but the
    first line of the input by the C parser, by polars (where its reading can be checked,
    else pyarrow) or by pyarrow alone, wherever they take them (and the next way where
    they do not)."""
    from cumtool.formats.jsonl import jsonl as module

    if path == "native" and module.NATIVE is None:
        pytest.skip("the C parser is not built")
    monkeypatch.setattr(module, "BLOCK_BYTES", 64)
    monkeypatch.setattr(module, "BY_NATIVE", path == "native")
    if path == "python":
        monkeypatch.setattr(module, "HEAD_LINES", 1 << 30)
    else:
        monkeypatch.setattr(module, "HEAD_LINES", 1)
        monkeypatch.setattr(module, "BY_POLARS", path == "polars")


PATHS = [pytest.param("python", id="python"), pytest.param("native", id="native"),
         pytest.param("polars", id="polars"), pytest.param("pyarrow", id="pyarrow")]


def _numbered(records: list[str], copies: int = 1) -> bytes:
    return "".join(f"{r}\n" for r in records * copies).encode()


@pytest.mark.parametrize("path", PATHS)
def test_a_text_field_named_by_c_is_an_error_naming_its_first_text_row_and_line(
        invoke, write_file, monkeypatch, path):
    # blank lines before it (no rows), in a block after the first: each parser says where
    _paths(monkeypatch, path)
    records = [f'{{"n": {i}, "t": null, "m": {i}, "f": {i}}}' for i in range(30)]
    records[3] += "\n"
    records[20] = '{"n": 20, "t": "late\\"text", "m": "x", "f": true}'
    records[25] = '{"n": 25, "t": "more", "m": 25, "f": false}'
    source = write_file("in.jsonl", _numbered(records))
    for column, holds in (("t", "'late\"text'"), ("m", "'x'"), ("f", "'true'")):
        result = invoke("cumsum", str(source), "-c", column)
        assert result.exit_code == 1
        assert result.stderr == (f"Error: {source}: column '{column}' is not numeric: "
                                 f"row 21 (line 22) holds {holds}; numeric columns: n\n")


@pytest.mark.parametrize("path", PATHS)
def test_a_numeric_column_with_nulls_and_absent_keys_writes_each_back(
        invoke, write_file, monkeypatch, path):
    _paths(monkeypatch, path)
    source = write_file("in.jsonl", '{"v": 1, "k": "a"}\n{"v": null, "k": "b"}\n{"k": "c"}\n'
                                    '{"k": "d", "v": 2}\n{"v": null}\n{"k": "f", "v": 3.5}\n')
    out = ok(invoke("cumsum", str(source), "-c", "v")).stdout
    assert out == ('{"v":1.0,"k":"a"}\n{"v":null,"k":"b"}\n{"k":"c"}\n{"v":3.0,"k":"d"}\n'
                   '{"v":null}\n{"v":6.5,"k":"f"}\n')
    # The result column written beside the input keeps them too; so does a column passed
    # through unscanned, and a run in small batches or backwards.
    kept = ok(invoke("cumsum", str(source), "-c", "v", "--keep", "--batch-rows", "2")).stdout
    assert kept.splitlines()[1:3] == ['{"v":null,"k":"b","v_cumsum":null}', '{"k":"c"}']
    backwards = ok(invoke("cumsum", str(source), "-c", "v", "--reverse",
                          "--batch-rows", "1")).stdout
    assert backwards == ('{"v":6.5,"k":"a"}\n{"v":null,"k":"b"}\n{"k":"c"}\n{"v":5.5,"k":"d"}\n'
                         '{"v":null}\n{"v":3.5,"k":"f"}\n')


@pytest.mark.parametrize("path", PATHS)
def test_an_unscanned_numeric_column_keeps_its_nulls_and_absent_keys(
        invoke, write_file, monkeypatch, path):
    _paths(monkeypatch, path)
    source = write_file("in.jsonl", '{"n": 5, "x": 1}\n{"n": null, "x": 1}\n{"x": 1}\n'
                                    '{"n": 7, "x": 1}\n')
    out = ok(invoke("cumsum", str(source), "-c", "x")).stdout
    assert out == '{"n":5,"x":1}\n{"n":null,"x":2}\n{"x":3}\n{"n":7,"x":4}\n'


def test_nulls_and_absent_keys_through_csv_are_missing_cells(invoke, write_file):
    source = write_file("in.jsonl", '{"v": 1, "k": "a"}\n{"v": null, "k": "b"}\n{"k": "c"}\n'
                                    '{"v": 2, "k": "d"}\n')
    assert ok(invoke("cumsum", str(source), "--to", "csv")).stdout == "v,k\n1,a\n,b\n,c\n3,d\n"


@pytest.mark.parametrize("path", PATHS)
def test_integers_beyond_2_53_and_2_64_are_exact(invoke, write_file, monkeypatch, path):
    _paths(monkeypatch, path)
    big = 2**53 + 1  # not a float64
    huge = 2**64 + 3  # not an int64 either
    text = (f'{{"i": {big}, "h": 1, "f": 0.5}}\n{{"i": 2, "h": {huge}, "f": 1}}\n'
            f'{{"i": -{big}, "h": -{huge}, "f": {big}}}\n')
    out = ok(invoke("cumsum", str(write_file("in.jsonl", text)))).stdout
    # i is int64: scanned exactly; h is beyond int64 and f mixes floats with an integer
    # beyond 2^53: not numbers, they pass through as their JSON text, digit for digit.
    assert out == (f'{{"i":{big},"h":1,"f":0.5}}\n{{"i":{big + 2},"h":{huge},"f":1}}\n'
                   f'{{"i":2,"h":-{huge},"f":{big}}}\n')


@pytest.mark.parametrize("path", ["native", "pyarrow"])
def test_an_integer_beyond_2_53_late_in_a_float_column_is_found(invoke, write_file,
                                                                   monkeypatch, path):
    _paths(monkeypatch, path)
    rows = [f'{{"f": {k}.5}}' for k in range(20)] + [f'{{"f": {2**60}}}', '{"f": 1e300}']
    source = write_file("in.jsonl", _numbered(rows))
    result = invoke("cumsum", str(source), "--to", "jsonl")
    # The column is JSON text: nothing to scan, as with every line read by Python; the
    # error says why, and what scans it (it said only "columns: f").
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {source}: no numeric columns to scan; columns: f; column 'f' holds "
        "integers beyond 2**53 among floats, which float64 does not hold exactly: pass "
        "--dtype float64 to scan them as the nearest floats\n")
    floats = ok(invoke("cumsum", str(source), "--to", "jsonl", "--dtype", "float64"))
    assert floats.stdout.splitlines()[-1] == '{"f":1e+300}'


@pytest.mark.parametrize(("line", "message"), [
    pytest.param('{"v": 1,}', "is not JSON: Expecting property name enclosed in double "
                 "quotes (at character 9)", id="trailing-comma"),
    pytest.param('{"v": 1} {"v": 2}', "is not JSON: Extra data (at character 10)",
                 id="two-objects"),
    pytest.param('{"v": -NaN}', "is not JSON: Expecting value (at character 7)", id="minus-nan"),
    pytest.param('{"v":', "is not JSON: Expecting value (at character 6)", id="cut"),
    pytest.param('[1]', "is an array, not a JSON object", id="array"),
    pytest.param('{"v": "a\tb"}', "is not JSON: Invalid control character at (at character "
                 "9)", id="control"),
])
@pytest.mark.parametrize("path", PATHS)
def test_a_bad_line_deep_in_the_input_is_named(invoke, write_file, monkeypatch, path, line,
                                               message):
    _paths(monkeypatch, path)
    rows = [f'{{"v": {k}.25}}' for k in range(300)]
    rows[250] = line
    source = write_file("in.jsonl", _numbered(rows))
    result = invoke("cumsum", str(source))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Error: {source}: line 251 {message}\n"


@pytest.mark.parametrize("path", PATHS)
def test_the_integer_minus_zero_is_zero_and_minus_zero_point_zero_keeps_its_sign(
        invoke, write_file, monkeypatch, path):
    _paths(monkeypatch, path)
    rows = ['{"x": 1, "f": 0.5, "g": 0.5}'] * 3 + ['{"x": 1, "f": -0, "g": -0.0}',
                                                 '{"x": 1, "f": -0.0, "g": -0}']
    out = ok(invoke("cumsum", str(write_file("in.jsonl", _numbered(rows))), "-c", "x")).stdout
    assert out.splitlines()[3:] == ['{"x":4,"f":0.0,"g":-0.0}', '{"x":5,"f":-0.0,"g":0.0}']


_record_values = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=True), st.text(max_size=6),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(),
                                                          max_size=2))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(st.dictionaries(st.sampled_from(["a", "b", "c", "é"]), _record_values,
                                        max_size=4), min_size=1, max_size=12),
       kinds=st.lists(st.sampled_from(["a", "b", "c", "é"]), max_size=2),
       compact=st.booleans(), ascii_only=st.booleans())
def test_every_parser_gives_the_same_bytes(invoke, monkeypatch, records, kinds,
                                                       compact, ascii_only):
    # Columns that stay one kind (to let the typed parsers take them) and any mix; text
    # as UTF-8 or \u escapes, with or without spaces.
    for record in records:
        for key in kinds:
            if key in record and record[key] is not None:
                record[key] = float(len(str(record[key])))
    data = jsonl(records, ensure_ascii=ascii_only,
                 separators=(",", ":") if compact else (", ", ": "))
    outputs = []
    from cumtool.formats.jsonl import jsonl as module

    paths = ["python", "polars", "pyarrow"] + (["native"] if module.NATIVE else [])
    for path in paths:
        with monkeypatch.context() as patch:
            _paths(patch, path)
            result = invoke("cumsum", "--from", "jsonl", "--to", "jsonl", input=data)
            outputs.append((result.exit_code, result.stdout_bytes, result.stderr))
    assert all(output == outputs[0] for output in outputs[1:])


# Writing: the text of every value is what Python's json module writes ----------------------

def _written(schema: pa.Schema, columns: list[pa.Array]) -> list[str]:
    from cumtool.formats.jsonl.jsonl import JsonlSink

    out = io.BytesIO()
    sink = JsonlSink(out, schema)
    sink.write(pa.RecordBatch.from_arrays(columns, schema=schema))
    sink.close()
    text = out.getvalue().decode()
    assert text.endswith("\n")
    return text[:-1].split("\n")  # not splitlines(): U+0085 and U+2028 are in strings


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.floats() | st.floats(-1e-3, 1e-3) | st.floats(1e15, 1e17),
                       min_size=1, max_size=40),
       strings=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)),
                                max_size=5), min_size=1, max_size=40))
def test_floats_and_strings_are_written_as_json_writes_them(values, strings):
    schema = pa.schema([pa.field("f", pa.float64()), pa.field("s", pa.string())])
    rows = min(len(values), len(strings))
    lines = _written(schema, [pa.array(values[:rows], type=pa.float64()),
                              pa.array(strings[:rows], type=pa.string())])
    assert lines == [json.dumps({"f": f, "s": s}, ensure_ascii=False, separators=(",", ":"))
                     for f, s in zip(values[:rows], strings[:rows], strict=False)]


def test_small_and_odd_floats_are_written_as_python_writes_them():
    values = [1e-05, 1.234e-05, -1e-05, 9.9e-06, 2.5e-07, 5e-324, 1e-4, 0.00012, 1e16,
              1.5e300, -0.0, float("nan"), float("inf"), float("-inf"), 0.1, 100.0]
    lines = _written(pa.schema([pa.field("f", pa.float64())]), [pa.array(values)])
    assert lines == ['{"f":1e-05}', '{"f":1.234e-05}', '{"f":-1e-05}', '{"f":9.9e-06}',
                     '{"f":2.5e-07}', '{"f":5e-324}', '{"f":0.0001}', '{"f":0.00012}',
                     '{"f":1e+16}', '{"f":1.5e+300}', '{"f":-0.0}', '{"f":NaN}',
                     '{"f":Infinity}', '{"f":-Infinity}', '{"f":0.1}', '{"f":100.0}']


def test_binary_is_written_as_base64_and_durations_as_iso_8601(invoke, tmp_path):
    import base64
    import datetime as dt

    table = pa.table({
        "b": pa.array([b"\x00\xff", b"", None, b"cumtool"], type=pa.binary()),
        "lb": pa.array([b"a", None, b"\n", b"xyz"], type=pa.large_binary()),
        "d_s": pa.array([90061, -1, 0, None], type=pa.duration("s")),
        "d_ms": pa.array([1500, -1, 1, 86400000], type=pa.duration("ms")),
        "d_us": pa.array([1, -1500000, None, 93600000005], type=pa.duration("us")),
        "d_ns": pa.array([1, -1500, 86400000000123, 0], type=pa.duration("ns")),
        "n": pa.array([1, 2, 3, 4]),
    })
    source = tmp_path / "in.parquet"
    pq.write_table(table, source)
    out = ok(invoke("cumsum", str(source), "-c", "n", "--to", "jsonl")).stdout
    assert out.splitlines() == [
        '{"b":"AP8=","lb":"YQ==","d_s":"PT90061S","d_ms":"PT1.5S","d_us":"PT0.000001S",'
        '"d_ns":"PT0.000000001S","n":1}',
        '{"b":"","lb":null,"d_s":"-PT1S","d_ms":"-PT0.001S","d_us":"-PT1.5S",'
        '"d_ns":"-PT0.0000015S","n":3}',
        '{"b":null,"lb":"Cg==","d_s":"P0D","d_ms":"PT0.001S","d_us":null,'
        '"d_ns":"PT86400.000000123S","n":6}',
        '{"b":"Y3VtdG9vbA==","lb":"eHl6","d_s":null,"d_ms":"PT86400S",'
        '"d_us":"PT93600.000005S","d_ns":"P0D","n":10}']
    # A JSON reader takes them back: base64 gives the bytes again.
    back = [json.loads(line) for line in out.splitlines()]
    assert [None if r["b"] is None else base64.b64decode(r["b"]) for r in back] == \
        table.column("b").to_pylist()
    assert table.column("d_us").to_pylist()[3] == dt.timedelta(microseconds=93600000005)


def test_durations_are_written_as_polars_writes_them():
    import polars as pl

    from cumtool.formats.jsonl.jsonl import iso_duration

    for unit, counts in (("ns", [1, -1500, 86400000000123, 0, -(10**18) - 7]),
                         ("us", [1, -1500000, 93600000005, 10**15]),
                         ("ms", [1500, -1, 86400000, 1])):
        frame = pl.DataFrame({"d": pl.Series(counts, dtype=pl.Duration(unit))})
        theirs = [json.loads(line)["d"] for line in frame.write_ndjson().splitlines()]
        assert [iso_duration(c, unit) for c in counts] == theirs


@pytest.mark.parametrize(("late", "expected"), [
    # A key not seen before (polars would leave it out).
    pytest.param('{"s": "z", "n": 9, "new": 1}', '{"s":"z","n":17,"new":1}', id="new-key"),
    # A number, an integer beyond 128 bits, an array in the string column.
    pytest.param('{"s": 5, "n": 9}', '{"s":5,"n":17}', id="number-in-strings"),
    pytest.param('{"s": 1' + "0" * 45 + ', "n": 9}', '{"s":1' + "0" * 45 + ',"n":17}',
                 id="huge-in-strings"),
    pytest.param('{"s": ["x"], "n": 9}', '{"s":["x"],"n":17}', id="array-in-strings"),
    # A string that starts with a colon, a space before a colon, a key twice.
    pytest.param('{"s": ":x", "n": 9}', '{"s":":x","n":17}', id="colon-string"),
    pytest.param('{"s" : "z", "n" :9, "m" : 1}', '{"s":"z","n":17,"m":1}', id="space-colon"),
    pytest.param('{"s": "z", "n": 1, "n": 9}', '{"s":"z","n":17}', id="twice"),
])
@pytest.mark.parametrize("path", PATHS)
def test_what_a_typed_parser_would_miss_is_found(invoke, write_file, monkeypatch, path, late,
                                                 expected):
    _paths(monkeypatch, path)
    rows = ['{"s": "a", "n": 1}'] * 8 + [late]
    out = ok(invoke("cumsum", str(write_file("in.jsonl", _numbered(rows))), "-c", "n")).stdout
    assert out.splitlines()[7:] == ['{"s":"a","n":8}', expected]


@pytest.mark.parametrize("path", PATHS)
def test_a_number_column_that_turns_out_mixed_keeps_each_value_as_written(
        invoke, write_file, monkeypatch, path):
    _paths(monkeypatch, path)
    rows = (['{"m": 0.5, "x": 1}', '{"m": 0, "x": 1}', '{"m": 2, "x": 1}', '{"m": 1e2, "x": 1}',
             '{"x": 1}', '{"m": null, "x": 1}'] * 3 + ['{"m": false, "x": 1}'])
    out = ok(invoke("cumsum", str(write_file("in.jsonl", _numbered(rows))), "-c", "x")).stdout
    # m holds numbers and (last) a flag: JSON text, each value as json reads and writes it.
    assert out.splitlines()[12:] == [
        '{"m":0.5,"x":13}', '{"m":0,"x":14}', '{"m":2,"x":15}', '{"m":100.0,"x":16}',
        '{"x":17}', '{"m":null,"x":18}', '{"m":false,"x":19}']


def test_a_full_disk_for_the_spool_is_one_error_line(invoke, write_file, monkeypatch):
    import errno

    from cumtool.formats.jsonl import jsonl as module

    class Full(io.BytesIO):
        def write(self, data: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(module.tempfile, "TemporaryFile", lambda: Full())  # for this test
    path = write_file("in.jsonl", '{"v": 1}\n{"v": 2}\n')
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (f"Error: {path}: cannot write its parsed records to a temporary "
                             "file in $TMPDIR: No space left on device\n")


# The C block parser and its Python twin: the same columns, or both decline ----------------

_TOKENS = ["1", "-0", "0", "0.5", "1e5", "1E-5", "-0.0", "2.50", "123456789012345678901",
           "9007199254740992", "9007199254740993", "-9007199254740992",
           "-9223372036854775808", "9223372036854775807", "9223372036854775808",
           "1.7976931348623157e308", "1e400", "-1e400", "2.2250738585072014e-308", "4.9e-324",
           "1e-400", "0.1", "3.141592653589793238462643383279", "123456789012345678.5",
           "0e999999", "7e22", "7e23", "9007199254740993e-3", '"x"', '""', '"é"',
           '"a\\"b"', '"\t"', '"\x7f"', '"\\u00e9"', '"\\n\\r\\t\\b\\f\\/\\\\"',
           '"\\ud83d\\ude00"', '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"\\u0000"',
           '"\\x41"', '"\\u12"', '"\\U00e9"', '"\\u00E9\\u00e9"', '"x\\', "true", "false",
           "null", "nul", "nulls", "tru", "NaN", "Infinity", "-Infinity", "[1]", "{}",
           '{"a": 1}', "01", "-01", "1.", ".5", "-", "1e", "1e+", "+1", "1.5.5", "0x10", "--1"]
_KEYS = ["a", "b", "é", "a b", 'q"', "a/b", "\U0001f600"]


_NUMBERS = st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                     st.integers(-(2**64), 2**64).map(str),
                     st.integers(-(2**53) - 2, 2**53 + 2).map(str),
                     st.tuples(st.integers(0, 10**25), st.integers(-350, 330)).map(
                         lambda m: f"{m[0]}e{m[1]}"),
                     st.tuples(st.integers(0, 10**20), st.integers(0, 10**20)).map(
                         lambda m: f"-{m[0]}.{m[1]:030d}"))
# Values mostly of the kind _test_the_c_parser_reads_as_its_python_twin gives each key.
_TYPED = {"a": st.one_of(_NUMBERS, st.sampled_from(["0.5", "-0.0", "1e400", "null"])),
          "b": st.one_of(st.integers(-(2**64), 2**64).map(str), st.just("null")),
          "é": st.one_of(st.text(max_size=4).map(json.dumps),
                         st.text(max_size=4).map(lambda t: json.dumps(t, ensure_ascii=False))),
          "a b": st.sampled_from(["true", "false", "null"]), 'q"': st.just("null"),
          "a/b": st.just("null"), "\U0001f600": st.just('"\\ud83d\\ude00"')}


@st.composite
def _lines(draw: st.DrawFn) -> str:
    space = st.sampled_from(["", "", "", "", "", " ", "\t", "\r", " \r", "\x0b"])
    if draw(st.integers(0, 19)) == 0:
        return draw(st.sampled_from(["", " ", "\r", "\t ", "[1]", "1", '"a"', "{", "}{",
                                     "{}", "{} {}", "{}x", '{"a":1}{"a":1}', "\x0b",
                                     '{"a":1,}', '{,"a":1}', '{"a" 1}', "\ufeff{}"]))
    pieces = [draw(space), "{", draw(space)]
    any_value = st.one_of(st.sampled_from(_TOKENS), _NUMBERS)
    keys = draw(st.lists(st.sampled_from(_KEYS), max_size=5, unique=draw(st.booleans())))
    for k, key in enumerate(keys):
        if k:
            pieces += [draw(space), ",", draw(space)]
        value = _TYPED[key] if draw(st.integers(0, 9)) else any_value
        pieces += [json.dumps(key, ensure_ascii=draw(st.booleans())), draw(space), ":",
                   draw(space), draw(value)]
    pieces += [draw(space), "}", draw(space)]
    return "".join(pieces)


def _column_bytes(result: object) -> object:
    """parse_block's answer with each column's buffers as bytes: the C parser hands over
    its own memory (a buffer that numpy and Arrow wrap), the twin bytes."""
    if result is None:
        return None
    lines, longest, rows, columns = result  # type: ignore[misc]
    return lines, longest, rows, [
        tuple(part if part is None or isinstance(part, bool) else bytes(part)
              for part in column) for column in columns]


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(_lines(), min_size=1, max_size=6),
       kinds=st.one_of(st.just([3, 2, 4, 1, 0, 0, 4]),
                       st.lists(st.integers(0, 4), min_size=len(_KEYS), max_size=len(_KEYS))),
       keys=st.integers(1, len(_KEYS)), start=st.integers(0, 3), end=st.booleans())
def test_the_c_parser_reads_as_its_python_twin(lines, kinds, keys, start, end):
    from cumtool.formats.jsonl import jsonl as module

    if module.NATIVE is None:
        pytest.skip("the C parser is not built")
    data = ("\n".join(lines) + ("\n" if end else "")).encode()
    start = min(start, len(data))
    names = tuple(k.encode() for k in _KEYS[:keys])
    args = (data, start, names, bytes(kinds[:keys]))
    assert _column_bytes(module.NATIVE.parse_block(*args)) == module.parse_block_py(*args)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=40), high=st.integers(0, 39), kind=st.sampled_from(
    ["bytes", "bytearray", "memoryview", "view-slice"]))
def test_the_c_ascii_check_answers_as_bytes_isascii(data, high, kind):
    """_jsonl.is_ascii (the parse threads' check, without the GIL) against its twin, a
    byte of 128 or more put at each place of the 8-byte words it reads a time."""
    from cumtool.formats.jsonl import jsonl as module

    if module.NATIVE is None:
        pytest.skip("the C parser is not built")
    ascii_only = bytes(b & 0x7F for b in data)
    for text in (data, ascii_only, ascii_only[:high] + b"\x80" + ascii_only[high:]):
        given = {"bytes": text, "bytearray": bytearray(text), "memoryview": memoryview(text),
                 "view-slice": memoryview(b"\x00" + text)[1:]}[kind]
        assert module.NATIVE.is_ascii(given) is text.isascii()


def test_the_c_parser_takes_typed_lines_and_rounds_floats_as_python_does():
    from cumtool.formats.jsonl import jsonl as module

    if module.NATIVE is None:
        pytest.skip("the C parser is not built")
    import random

    chance = random.Random(25)
    texts = [repr(chance.uniform(-1e6, 1e6)) for _ in range(2000)]
    texts += [f"{chance.getrandbits(70)}e{chance.randint(-340, 310)}" for _ in range(2000)]
    texts += [f"{chance.randint(0, 10**6)}.{chance.randint(0, 10**18):018d}" for _ in range(2000)]
    texts += ["9007199254740993e0", "2.2250738585072011e-308", "0.1e1", "8.98846567431158e307",
              "1.00000000000000011102230246251565404236316680908203125",
              "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324"]
    data = "".join(f'{{"f": {t}, "i": {k}, "s": "{k}", "b": {str(k % 2 == 0).lower()}}}\n'
                   for k, t in enumerate(texts)).encode()
    args = (data, 0, (b"f", b"i", b"s", b"b"), bytes([3, 2, 4, 1]))
    got = module.NATIVE.parse_block(*args)
    assert got is not None and _column_bytes(got) == module.parse_block_py(*args)
    import numpy as np

    assert np.frombuffer(got[3][0][0], dtype=np.float64).tolist() == [float(t) for t in texts]


@pytest.mark.parametrize("path", PATHS)
def test_a_column_of_integers_beyond_int64_is_said_so(invoke, write_file, monkeypatch, path):
    """-c naming a column of integers beyond int64 (ids) says what it holds, not
    'string' (it passes through as its JSON text)."""
    _paths(monkeypatch, path)
    source = write_file("in.jsonl", f'{{"id": {2**64 + 3}, "x": 1}}\n{{"id": 5, "x": 2}}\n')
    result = invoke("cumsum", str(source), "-c", "id")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (f"Error: {source}: column 'id' is not numeric (integers beyond "
                             "int64; pass --dtype float64 to scan them as floats); numeric "
                             "columns: x\n")


@pytest.mark.parametrize("path", PATHS)
def test_integers_beyond_int64_are_scanned_as_floats_with_a_float_dtype(
        invoke, write_file, monkeypatch, path):
    """--dtype float64 scans a column of integers beyond int64 (or beyond 2^53 among
    floats) as floats, each the nearest float, as a CSV column of them; its null stays
    null and its absent key absent."""
    _paths(monkeypatch, path)
    values = [1, None, "absent", 2**64, 2.5, 2**60 + 1, -(2**70), 7]
    lines = [json.dumps({"k": k} if v == "absent" else {"a": v, "k": k})
             for k, v in enumerate(values)]
    source = write_file("in.jsonl", "".join(line + "\n" for line in lines))
    total = 0.0
    want_jsonl, want_csv = [], ["a,k"]
    for k, v in enumerate(values):
        if v == "absent":
            want_jsonl.append(f'{{"k":{k}}}')
            want_csv.append(f",{k}")
        elif v is None:
            want_jsonl.append(f'{{"a":null,"k":{k}}}')
            want_csv.append(f",{k}")
        else:
            total += float(v)
            want_jsonl.append(f'{{"a":{total!r},"k":{k}}}')
            want_csv.append(f"{total!r},{k}")
    got = ok(invoke("cumsum", str(source), "-c", "a", "--dtype", "float64"))
    assert got.stdout == "".join(line + "\n" for line in want_jsonl)
    got = ok(invoke("cumsum", str(source), "-c", "a", "--dtype", "float64", "--to", "csv"))
    assert got.stdout == "".join(line + "\n" for line in want_csv)
    # without -c too: every number column is scanned
    got = ok(invoke("cumsum", str(source), "--dtype", "float64", "--to", "csv"))
    assert got.stdout.splitlines()[4] == f"{float(2**64) + 1.0!r},{0.0 + 1 + 2 + 3!r}"


@pytest.mark.parametrize("path", PATHS)
def test_an_error_in_a_row_names_its_line(invoke, write_file, monkeypatch, path):
    """A scan's error names the record's row and its line, as for CSV: blank lines (and
    a CRLF one) are no rows but count as lines."""
    _paths(monkeypatch, path)
    lines = [f'{{"a": {k}, "b": {k / 2}}}' for k in range(12)]
    lines[2:2] = ["", "  "]
    lines[6] += "\r"
    lines.append(f'{{"a": {2**63 - 10}, "b": 1.5}}')  # row 13, on line 15: overflows
    lines += ['{"a": 1, "b": 2.5}', ""]
    source = write_file("in.jsonl", "".join(line + "\n" for line in lines))
    result = invoke("cumsum", str(source))
    assert result.exit_code == 1  # (the rows before it may be out: a batch at a time)
    assert result.stderr == (f"Error: {source}: column 'a', row 13 (line 15): cumsum "
                             f"overflows int64 (adding {2**63 - 10}); use --overflow wrap "
                             "for wrap-around\n")


def test_null_and_absent_strings_are_missing_cells_for_keys_times_and_distinct(invoke,
                                                                              write_file):
    """A text column with both null and absent keys was JSON text: null the text "null",
    strings with their quotes."""
    path = write_file("j.jsonl", '{"d":"2024-01-31","x":1}\n{"d":null,"x":4}\n{"x":8}\n'
                                 '{"d":null,"x":16}\n')
    assert ok(invoke("cumsum", str(path), "--period", "month", "--time", "d")).stdout == (
        '{"d":"2024-01-31","x":1}\n{"d":null,"x":4}\n{"x":12}\n{"d":null,"x":28}\n')
    assert ok(invoke("cumsum", str(path), "--by", "d", "--to", "csv")).stdout == (
        "d,x\n2024-01-31,1\n,4\n,12\n,28\n")
    assert ok(invoke("cumnunique", str(path), "-c", "d")).stdout == (
        '{"d":1,"x":1}\n{"d":null,"x":4}\n{"x":8}\n{"d":null,"x":16}\n')


def test_a_time_column_of_mixed_kinds_names_the_value_that_is_no_time(invoke, write_file):
    """Held as JSON text, its strings kept their quotes: the first row was named, with
    '"2024-01-31"', not the row that holds 5."""
    path = write_file("mk.jsonl", '{"d":"2024-01-31","x":1}\n{"d":"2024-02-01","x":2}\n'
                                  '{"d":5,"x":4}\n')
    result = invoke("cumsum", str(path), "--period", "month", "--time", "d")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(
        f"Error: {path}: column 'd', row 3 (line 3): '5' is not a date or time as --time "
        "reads them")
    times = invoke("ewma", str(path), "--times", "d", "--halflife", "1 day")
    assert times.stderr.startswith(f"Error: {path}: column 'd', row 3 (line 3): '5' is not")


_MIXED = '{"k":1,"v":1}\n{"k":"a","v":2}\n{"k":null,"v":3}\n{"v":4}\n'
_STRINGS = '{"k":null,"v":5}\n{"v":6}\n{"k":"a","v":7}\n'


def test_a_key_of_mixed_kinds_groups_null_with_absent_and_a_string_as_itself(invoke,
                                                                            write_file):
    """Held as JSON text, `null` was a key apart from an absent key, and "a" was another
    key than a column of strings' a (the next input's, a resumed run's)."""
    path = write_file("m.jsonl", _MIXED + _STRINGS.replace('"k":"a"', '"k":2'))
    assert ok(invoke("cumsum", str(path), "--by", "k")).stdout == (
        '{"k":1,"v":1}\n{"k":"a","v":2}\n{"k":null,"v":3}\n{"v":7}\n{"k":null,"v":12}\n'
        '{"v":18}\n{"k":2,"v":7}\n')
    assert ok(invoke("cumnunique", str(path), "-c", "k")).stdout == (
        '{"k":1,"v":1}\n{"k":2,"v":2}\n{"k":null,"v":3}\n{"k":null,"v":4}\n'
        '{"k":null,"v":5}\n{"k":null,"v":6}\n{"k":3,"v":7}\n')


def test_a_key_of_mixed_kinds_goes_on_across_inputs_and_resumed_runs(invoke, write_file,
                                                                     tmp_path):
    mixed, strings = write_file("a.jsonl", _MIXED), write_file("b.jsonl", _STRINGS)
    expected = ('{"k":1,"v":1}\n{"k":"a","v":2}\n{"k":null,"v":3}\n{"v":7}\n'
                '{"k":null,"v":12}\n{"v":18}\n{"k":"a","v":9}\n')
    # The second input's strings were written as JSON text unquoted ({"k":a}), its null
    # as an absent key.
    assert ok(invoke("cumsum", str(mixed), str(strings), "--by", "k")).stdout == expected
    state = str(tmp_path / "s.state")
    first = ok(invoke("cumsum", str(mixed), "--by", "k", "--state", state)).stdout
    second = ok(invoke("cumsum", str(strings), "--by", "k", "--state", state)).stdout
    assert first + second == expected


def test_a_key_of_mixed_kinds_in_a_later_input_is_refused_by_name(invoke, write_file,
                                                                  tmp_path):
    mixed, strings = write_file("a.jsonl", _MIXED), write_file("b.jsonl", _STRINGS)
    out = tmp_path / "out" / "o.jsonl"
    out.parent.mkdir()
    result = invoke("cumsum", str(strings), str(mixed), "--by", "k", "-o", str(out))
    assert result.exit_code == 1
    assert list(out.parent.iterdir()) == []
    assert result.stderr == (
        f"Error: {mixed}: column 'k' holds values of mixed kinds, but in {strings} it is "
        f"string; the inputs must share a schema (give {mixed} first: a column of mixed "
        "kinds in the first input takes the others' values as they are)\n")


def test_a_parquet_input_goes_on_from_one_whose_column_was_of_mixed_kinds(invoke,
                                                                          write_file,
                                                                          tmp_path):
    """cumtool's Parquet keeps a JSON Lines column of mixed kinds as JSON text; another
    Parquet file's strings after it are values as well, not JSON text. (v: each file's
    row count, 1 on.)"""
    mixed, plain = tmp_path / "a.parquet", tmp_path / "b.parquet"
    ok(invoke("cumcount", str(write_file("a.jsonl", _MIXED)), "-o", str(mixed)))
    ok(invoke("cumcount", str(write_file("b.jsonl", _STRINGS)), "-o", str(plain)))
    assert ok(invoke("cumsum", str(mixed), str(plain), "--by", "k", "-c", "v",
                     "--to", "csv")).stdout == "k,v\n1,1\na,2\n,3\n,7\n,8\n,10\na,5\n"
