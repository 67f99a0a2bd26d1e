"""JSON Lines read on several threads: the C parser's calls run ahead of their blocks'
turns, and what is taken is decided in order, so every thread count gives the same bytes:
across block boundaries (small blocks), with keys absent or learnt late, integers that
turn out to be floats late in the input, mixed columns, hard floats, blank lines and CRLF,
and a bad line mid-file (the same error line, naming the same line, and nothing before
it)."""

from __future__ import annotations

import json

import pytest
from helpers import ok

from cumtool.formats.jsonl import jsonl as module

THREADS = ["1", "2", "3", "16"]


def _lines(count: int, make) -> bytes:
    return "".join(make(k) + "\n" for k in range(count)).encode()


def _plain(k: int) -> str:
    return json.dumps({"a": k % 17 - 8, "b": round((k * 7919 % 1000) / 100 - 5, 2),
                       "s": f"t{k}"})


def _missing(k: int) -> str:
    record: dict[str, object] = {"a": k}
    if k % 3:
        record["b"] = None if k % 5 == 0 else k / 4
    if k >= 300:  # a key first seen late: absent from every record before
        record["late"] = k % 7
    if k % 11 == 0:
        record.pop("a")
    return json.dumps(record)


def _promoted(k: int) -> str:
    # v: integers, a float at line 381, integers again; w: an integer beyond 2^53 late
    # (its column is then no float column: kept as written)
    v: float = 0.5 if k == 380 else k
    w = 2 ** 60 + k if k == 390 else k * 3
    return json.dumps({"v": v, "w": w, "n": k})


def _mixed(k: int) -> str:
    m: object = "text" if k == 350 else {"o": k} if k == 360 else k
    return json.dumps({"n": k, "m": m})


def _hard_floats(k: int) -> str:
    # 17 digits (Eisel-Lemire), over 19 (CPython's routine, under the GIL), big exponents
    forms = [f"{k}.{k:017d}", f"0.{k:025d}1", f"{k + 1}e-{300 + k % 30}", f"1{k:020d}.5",
             f"{k}.25e{k % 300}"]
    return '{"x": ' + forms[k % len(forms)] + ', "i": ' + str(k) + "}"


def _spaced(k: int) -> str:
    text = f'{{ "a" : {k} , "b" : {k / 8} }}'
    if k % 9 == 0:
        return text + "\r"  # a CRLF line
    if k % 13 == 0:
        return "\n" + text  # a blank line before
    return text


CASES = [pytest.param(_plain, id="plain"), pytest.param(_missing, id="missing-keys"),
         pytest.param(_promoted, id="late-float"), pytest.param(_mixed, id="late-mixed"),
         pytest.param(_hard_floats, id="hard-floats"), pytest.param(_spaced, id="blank-crlf")]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few lines each, the C parser from the second line on."""

    def use(size: int) -> None:
        monkeypatch.setattr(module, "BLOCK_BYTES", size)
        monkeypatch.setattr(module, "HEAD_LINES", 1)

    return use


@pytest.mark.parametrize("size", [pytest.param(64, id="blocks-64"),
                                  pytest.param(1000, id="blocks-1000")])
@pytest.mark.parametrize("make", CASES)
@pytest.mark.parametrize("target", ["jsonl", "csv"])
def test_every_thread_count_gives_the_same_bytes(invoke, write_file, small_blocks, make, size,
                                                 target):
    small_blocks(size)
    source = write_file("in.jsonl", _lines(400, make))
    outputs = {threads: ok(invoke("cumsum", str(source), "--to", target, "--threads",
                                  threads)).stdout_bytes for threads in THREADS}
    assert outputs["1"]  # (not an error, nor nothing)
    for threads in THREADS[1:]:
        assert outputs[threads] == outputs["1"], f"--threads {threads}"


def test_a_late_float_makes_the_column_float_at_every_thread_count(invoke, write_file,
                                                                   small_blocks):
    small_blocks(64)
    source = write_file("in.jsonl", _lines(400, _promoted))
    total_v = 0.0
    total_n = 0
    want = []
    for k in range(400):
        total_v += 0.5 if k == 380 else float(k)
        total_n += k
        w = 2 ** 60 + k if k == 390 else k * 3
        want.append(f'{{"v":{total_v!r},"w":{w},"n":{total_n}}}\n')
    for threads in THREADS:
        got = ok(invoke("cumsum", str(source), "-c", "v,n", "--to", "jsonl", "--threads",
                        threads)).stdout
        assert got == "".join(want), f"--threads {threads}"


@pytest.mark.parametrize("bad, message", [
    pytest.param('{"a": 1, "b": }', "is not JSON: Expecting value (at character 15)",
                 id="not-json"),
    pytest.param('[1, 2]', "is an array, not a JSON object", id="array"),
    pytest.param('{"a": "x\tb"}', "is not JSON: Invalid control character at (at character "
                 "9)", id="control"),
])
def test_a_bad_line_mid_file_is_the_same_error_at_every_thread_count(
        invoke, write_file, tmp_path, small_blocks, bad, message):
    small_blocks(64)
    rows = [_plain(k) for k in range(400)]
    rows[301] = bad
    source = write_file("in.jsonl", "".join(r + "\n" for r in rows))
    for threads in THREADS:
        out = tmp_path / f"out-{threads}.jsonl"
        result = invoke("cumsum", str(source), "-o", str(out), "--threads", threads)
        assert result.exit_code == 1, f"--threads {threads}"
        assert result.stdout == ""
        assert result.stderr == f"Error: {source}: line 302 {message}\n"
        assert not out.exists()
        result = invoke("cumsum", str(source), "--threads", threads)  # to standard output
        assert (result.exit_code, result.stdout_bytes) == (1, b"")
        assert result.stderr == f"Error: {source}: line 302 {message}\n"


@pytest.mark.parametrize(("block", "head", "rows", "line", "limit"), [
    (200, True, [_plain(k) for k in range(300)], 251, 300),  # the C parser's blocks
    (128, False, [json.dumps({"a": k, "b": k / 2}) for k in range(100)], 71, 500),  # Python's
], ids=["parsed-ahead", "first-lines"])
def test_a_line_too_long_mid_file_is_named_at_every_thread_count(
        invoke, write_file, small_blocks, monkeypatch, block, head, rows, line, limit):
    if head:
        small_blocks(block)  # the C parser from the second line on
    else:
        monkeypatch.setattr(module, "BLOCK_BYTES", block)
    rows = list(rows)
    rows[line - 1] = json.dumps({"a": 1, "b": 2.5, "s": "x" * (limit + 200)})
    source = write_file("in.jsonl", "".join(r + "\n" for r in rows))
    for threads in THREADS:
        result = invoke("cumsum", str(source), "--max-record-size", str(limit), "--threads",
                        threads)
        assert (result.exit_code, result.stdout) == (1, ""), f"--threads {threads}"
        assert result.stderr == (f"Error: {source}: line {line} is longer than {limit} "
                                 "bytes; raise --max-record-size if it is meant\n")


def test_blocks_are_parsed_on_the_reader_threads(invoke, write_file, small_blocks,
                                                 parse_threads):
    """More than one thread: the parser's calls run on the pool's threads, not on the
    reading one (which would make the thread count a knob that does nothing)."""
    small_blocks(256)
    where = parse_threads
    source = write_file("in.jsonl", _lines(400, _plain))
    ok(invoke("cumsum", str(source), "--threads", "3"))
    assert sum(name.startswith("cumtool-jsonl") for name in where) > 10
    where.clear()
    ok(invoke("cumsum", str(source), "--threads", "1"))
    assert where and not any(name.startswith("cumtool-jsonl") for name in where)


def test_an_error_in_a_parsing_thread_is_one_error_line(invoke, write_file, small_blocks,
                                                       monkeypatch):
    """A failure inside a call run ahead (here, memory) reaches the reading thread, where
    the run reports it as any other: one line, no traceback."""
    if module.NATIVE is None:
        pytest.skip("the C parser is not built: nothing runs ahead without it")
    small_blocks(256)

    def failing(*args):
        raise MemoryError

    monkeypatch.setattr(module, "_parse_native", failing)
    source = write_file("in.jsonl", _lines(400, _plain))
    result = invoke("cumsum", str(source), "--threads", "2")
    assert result.exit_code != 0
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1


def test_the_writer_keeps_batch_order_when_some_batches_are_not_its_own(invoke, tmp_path):
    """Batches whose lines the C writer does not make (an unsigned integer beyond int64)
    are written after every batch made ahead of them, at every thread count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = [k if k % 37 else 2 ** 63 + k for k in range(400)]
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"u": pa.array(values, pa.uint64()),
                             "v": pa.array([k / 4 for k in range(400)])}), source)
    totals, total = [], 0.0
    for k in range(400):
        total += k / 4  # one addition a row, in order (not sum(): compensated on 3.12)
        totals.append(total)
    want = "".join(f'{{"u":{u},"v":{t!r}}}\n' for u, t in zip(values, totals, strict=True))
    for threads in THREADS:
        got = ok(invoke("cumsum", str(source), "-c", "v", "--to", "jsonl", "--batch-rows",
                        "16", "--threads", threads)).stdout
        assert got == want, f"--threads {threads}"
