"""--state runs compose exactly once: a retry gives the bytes of one clean run, a grown
input is continued, one run at a time holds the state, a contradictory state is refused
in one line, and files are put in place together (cumtool.commit, cumtool.state).

The fault injections (kill -9 and stop signals at each commit step) are in
tests/test_resume_faults.py, under the slow marker."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import ok

from cumtool.cli import main

DAYS = {
    "day-1.csv": "meter,kwh\nnorth,12\nsouth,7\nnorth,1\n",
    "day-2.csv": "meter,kwh\nsouth,9\nnorth,5\n",
    "day-3.csv": "meter,kwh\nnorth,8\neast,2\nsouth,1\n",
}


@pytest.fixture
def cli(runner, tmp_path, monkeypatch):
    """Run cumtool in tmp_path, as a cron job's command line would."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str, input: bytes | None = None):
        return runner.invoke(main, list(args), input=input, catch_exceptions=False)

    return run


def write(name: str, text: str | bytes) -> Path:
    path = Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def day(cli, name: str, *extra: str):
    return cli("cumsum", name, "--by", "meter", "--state", "s.json", "-o", f"out-{name}",
               *extra)


def one_run_outputs(cli, names: list[str]) -> dict[str, bytes]:
    """The output of each day as one uninterrupted run over all the days gives it."""
    for name, text in DAYS.items():
        write(name, text)
    ok(cli("cumsum", *names, "--by", "meter", "-o", "whole/"))
    return {n: Path("whole", n).read_bytes() for n in names}


def test_a_retried_day_gives_the_same_output_and_state(cli):
    expected = one_run_outputs(cli, list(DAYS))
    ok(day(cli, "day-1.csv"))
    ok(day(cli, "day-2.csv"))
    state = Path("s.json").read_bytes()
    ok(day(cli, "day-2.csv"))  # cron's retry of a day that in fact succeeded
    assert Path("s.json").read_bytes() == state
    assert Path("out-day-2.csv").read_bytes() == expected["day-2.csv"]
    ok(day(cli, "day-3.csv"))
    ok(day(cli, "day-3.csv"))
    assert Path("out-day-3.csv").read_bytes() == expected["day-3.csv"]
    assert Path("out-day-3.csv").read_text() == (
        "meter,kwh\nnorth,26\neast,2\nsouth,17\n")


def test_a_retry_after_a_state_was_saved_then_lost_output(cli):
    """The output of the last run is gone (a disk cleaned), its state saved: the retry
    writes it again, from the values before that run."""
    expected = one_run_outputs(cli, list(DAYS))
    ok(day(cli, "day-1.csv"))
    ok(day(cli, "day-2.csv"))
    Path("out-day-2.csv").unlink()
    ok(day(cli, "day-2.csv"))
    assert Path("out-day-2.csv").read_bytes() == expected["day-2.csv"]


def test_run_id_tells_a_retry_from_a_new_run_of_identical_bytes(cli):
    """A whole input (here Parquet) given again with the same bytes: the same run ID is a
    retry, a new ID a new input, counted again; no ID, the same options: a retry."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"kwh": [3]}), "today.parquet")
    run = ["cumsum", "today.parquet", "--state", "s.json", "--to", "csv"]
    assert ok(cli(*run, "--run-id", "2026-01-01")).stdout == "kwh\n3\n"
    assert ok(cli(*run, "--run-id", "2026-01-01")).stdout == "kwh\n3\n"
    assert ok(cli(*run, "--run-id", "2026-01-02")).stdout == "kwh\n6\n"
    assert ok(cli(*run)).stdout == "kwh\n9\n"
    assert ok(cli(*run)).stdout == "kwh\n9\n"


def test_a_text_input_that_has_not_grown_gives_no_new_row_in_a_new_run(cli):
    """Hourly runs named by the hour over a log that stayed quiet: its lines were
    counted once, and a run with a new ID (or another -o) adds nothing and changes no
    state, so the last run that scanned rows (10h) is still the one a retry repeats."""
    write("log.csv", "kwh\n1\n2\n")
    hour = ["cumsum", "log.csv", "--state", "s.json", "--growing", "--run-id"]
    assert ok(cli(*hour, "10h")).stdout == "kwh\n1\n3\n"
    state = Path("s.json").read_bytes()
    assert ok(cli(*hour, "11h")).stdout == "kwh\n"
    assert ok(cli(*hour, "11h")).stdout == "kwh\n"
    assert Path("s.json").read_bytes() == state
    assert ok(cli(*hour, "10h")).stdout == "kwh\n1\n3\n"  # still the last run: a retry
    ok(cli("cumsum", "log.csv", "--state", "s.json", "-o", "other.csv"))
    assert Path("other.csv").read_text() == "kwh\n"
    assert Path("s.json").read_bytes() == state
    with open("log.csv", "a") as log:
        log.write("4\n")
    assert ok(cli(*hour, "12h")).stdout == "kwh\n7\n"


def test_growing_standard_input_is_refused_by_name(cli):
    """Standard input is new each run: nothing of it can be continued, and its last line
    was written where a file's waits for the next run."""
    result = cli("cumsum", "-", "--state", "s.json", "--growing", input="kwh\n1\n2")
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", (
        "Error: --growing continues input files that grow between runs, and standard "
        "input is new each run: give the log's path\n"))


def test_a_growing_log_is_counted_once_over_five_runs(cli):
    rows = [f"m{i % 3},{i}\n" for i in range(1, 16)]
    write("log.csv", "meter,kwh\n")
    outputs = []
    for run in range(5):
        with open("log.csv", "a") as log:
            log.writelines(rows[run * 3:run * 3 + 3])
        ok(cli("cumsum", "log.csv", "--by", "meter", "--state", "s.json", "-o", "out.csv",
               "--growing"))
        outputs.append(Path("out.csv").read_text())
        ok(cli("cumsum", "log.csv", "--by", "meter", "--state", "s.json", "-o", "out.csv",
               "--growing"))
        assert Path("out.csv").read_text() == outputs[-1]  # a retry changes nothing
    ok(cli("cumsum", "log.csv", "--by", "meter", "-o", "whole.csv"))
    whole = Path("whole.csv").read_text().splitlines()
    assert [line for out in outputs for line in out.splitlines()[1:]] == whole[1:]
    assert all(out.startswith("meter,kwh\n") for out in outputs)
    assert outputs[4] == "meter,kwh\nm1,35\nm2,40\nm0,45\n"  # 1+4+..+13, 2+..+14, 3+..+15


def test_a_growing_json_lines_log_is_continued(cli):
    write("log.jsonl", '{"n": 1}\n{"n": 2}\n')
    assert ok(cli("cumsum", "log.jsonl", "--state", "s.json")).stdout == (
        '{"n":1}\n{"n":3}\n')
    with open("log.jsonl", "a") as log:
        log.write('{"n": 10}\n')
    assert ok(cli("cumsum", "log.jsonl", "--state", "s.json", "--growing")).stdout == (
        '{"n":13}\n')


def test_a_json_lines_log_with_no_new_whole_line_changes_nothing(cli):
    """A quiet hour, then a writer caught mid-line: runs that scan no row exit 0 with
    nothing written and the state as it was, so that a retry of the run before them is
    still known as one (they used to fail: no numeric columns to scan; columns: none)."""
    write("log.jsonl", '{"n": 1}\n{"n": 2}\n')
    ok(cli("cumsum", "log.jsonl", "--state", "s.json", "--growing", "--run-id", "h1"))
    state = Path("s.json").read_bytes()
    quiet = cli("cumsum", "log.jsonl", "--state", "s.json", "--growing", "--run-id", "h2",
                "-o", "out.jsonl")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    assert Path("out.jsonl").read_bytes() == b""
    with open("log.jsonl", "a") as log:
        log.write('{"n": ')
    cut = cli("cumsum", "log.jsonl", "--state", "s.json", "--growing", "--run-id", "h3")
    assert (cut.exit_code, cut.stdout) == (0, "")
    assert cut.stderr == ("note: log.jsonl: its last line has no line end yet (it is being "
                          "written); it waits for the next run\n")
    assert Path("s.json").read_bytes() == state
    retry = cli("cumsum", "log.jsonl", "--state", "s.json", "--growing", "--run-id", "h1")
    assert (retry.exit_code, retry.stdout) == (0, '{"n":1}\n{"n":3}\n')
    with open("log.jsonl", "a") as log:
        log.write('10}\n')
    assert ok(cli("cumsum", "log.jsonl", "--state", "s.json", "--growing", "--run-id",
                  "h4")).stdout == '{"n":13}\n'


def test_an_input_whose_earlier_bytes_changed_is_a_new_input(cli):
    write("log.csv", "kwh\n1\n2\n")
    ok(cli("cumsum", "log.csv", "--state", "s.json"))
    write("log.csv", "kwh\n5\n2\n7\n")  # rewritten, not appended to
    assert ok(cli("cumsum", "log.csv", "--state", "s.json")).stdout == "kwh\n8\n10\n17\n"


def test_a_log_grown_from_a_line_cut_short_by_a_run_without_growing_is_refused(cli):
    """A run without --growing reads a file whole, cut last line and all (a daily file
    may lack its last line end); a log grown from there cannot be continued."""
    write("log.csv", "kwh\n1\n2")  # the writer was mid-line when the run read it
    ok(cli("cumsum", "log.csv", "--state", "s.json"))
    state = Path("s.json").read_bytes()
    with open("log.csv", "a") as log:
        log.write("5\n7\n")
    result = cli("cumsum", "log.csv", "--state", "s.json", "--growing")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: log.csv: it has grown since --state s.json consumed its first 7 bytes, "
        "which ended inside a line;")
    assert result.stderr.count("\n") == 1
    assert Path("s.json").read_bytes() == state


def test_a_grown_log_without_growing_is_refused_naming_growing_and_run_id(cli):
    write("log.csv", "kwh\n1\n2\n")
    ok(cli("cumsum", "log.csv", "--state", "s.json", "-o", "out.csv"))
    state, output = Path("s.json").read_bytes(), Path("out.csv").read_bytes()
    with open("log.csv", "a") as log:
        log.write("5\n")
    result = cli("cumsum", "log.csv", "--state", "s.json", "-o", "out.csv")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: log.csv: it has grown since --state s.json consumed its first 8 bytes; "
        "give --growing to count only the rows appended since (and name each run with "
        "--run-id ID, so that a retry is known as one), or give the file whole to a new "
        "state file\n")
    assert (Path("s.json").read_bytes(), Path("out.csv").read_bytes()) == (state, output)
    ok(cli("cumsum", "log.csv", "--state", "s.json", "-o", "out.csv", "--growing"))
    assert Path("out.csv").read_text() == "kwh\n8\n"


def test_a_last_line_being_written_waits_for_the_next_run(cli):
    """The issue's log: `t3,M1,1` was to become `t3,M1,10.25`. The cut line is not
    scanned, written or consumed, one note says so, and the next run counts it whole:
    13.75 where reading it cut gave 4.5."""
    write("log.csv", "t,m,v\nt1,M1,1.5\nt2,M1,2\nt3,M1,1")
    run = ["cumsum", "log.csv", "-c", "v", "--state", "s.json", "-o", "out.csv", "--growing"]
    result = cli(*run)
    assert result.exit_code == 0
    assert result.stderr == ("note: log.csv: its last line has no line end yet (it is being "
                             "written); it waits for the next run\n")
    assert Path("out.csv").read_text() == "t,m,v\nt1,M1,1.5\nt2,M1,3.5\n"
    assert ok(cli(*run, "-q")).stderr == ""  # the retry: the same, quietly
    assert Path("out.csv").read_text() == "t,m,v\nt1,M1,1.5\nt2,M1,3.5\n"
    with open("log.csv", "a") as log:
        log.write("0.25\nt4,M1,1\n")
    assert ok(cli(*run)).stderr == ""
    assert Path("out.csv").read_text() == "t,m,v\nt3,M1,13.75\nt4,M1,14.75\n"


_OPEN_RECORDS = [
    # Caught after a line end inside a quoted field (a message of several lines).
    ('id,v,msg\n1,1,"ok"\n2,2,"two\nlines"\n3,3,"trace:\n  at ""f""\n', 5,
     '  at g"\n4,4,""\n', 'id,v,msg\n1,1,ok\n2,3,"two\nlines"\n',
     'id,v,msg\n3,6,"trace:\n  at ""f""\n  at g"\n4,10,""\n'),
    # Caught after the field is closed, before the record's line end (LF, then CRLF).
    ('id,v,msg\n1,1,"two\nlines"', 2, "\n2,2,b\n", "id,v,msg\n",
     'id,v,msg\n1,1,"two\nlines"\n2,3,b\n'),
    ('id,v,msg\r\n1,1,"two\r\nlines"', 2, "\r\n2,2,b\r\n", "id,v,msg\n",
     'id,v,msg\n1,1,"two\r\nlines"\n2,3,b\n'),
]


@pytest.mark.parametrize(("log", "line", "more", "first", "then"), _OPEN_RECORDS)
def test_a_record_being_written_with_a_quoted_field_waits_for_the_next_run(
        cli, log, line, more, first, then):
    """That record is not scanned, written or consumed, one note names its line, and the
    next run counts it whole. It used to fail: a quote that is never closed, exit 1."""
    Path("log.csv").write_bytes(log.encode())
    run = ["cumsum", "log.csv", "-c", "v", "--state", "s.json", "-o", "out.csv", "--growing"]
    result = cli(*run)
    assert (result.exit_code, result.stderr) == (0, (
        f"note: log.csv: its last record, from line {line}, has no end yet (a quoted field "
        "holds its line ends; it is being written); it waits for the next run\n"))
    assert Path("out.csv").read_bytes() == first.encode()
    with open("log.csv", "ab") as log_file:
        log_file.write(more.encode())
    assert ok(cli(*run)).stderr == ""
    assert Path("out.csv").read_bytes() == then.encode()


@pytest.mark.parametrize("log", [
    'id,v\n1,1\n5",1\n6,2\n',  # a quote inside an unquoted field
    'id,v\n1,1\n"5"x,1\n6,2\n',  # a quoted field that goes on after its quote
])
def test_a_growing_log_with_a_stray_quote_is_refused_not_held(cli, log):
    """Only a record a quote would close waits: quotes that are wrong anyway are the
    reader's error, not a note that would hold the log back at every run."""
    write("log.csv", log)
    result = cli("cumsum", "log.csv", "--state", "s.json", "--growing", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: log.csv: ")
    assert "row 2 (line 3)" in result.stderr
    assert not Path("s.json").exists() and not Path("out.csv").exists()


@pytest.mark.parametrize("cuts", [[3, 9, 14], [1, 2], [5]])
def test_a_log_cut_mid_number_on_each_of_several_days_is_counted_as_one_run(cli, cuts):
    """Each day's run catches the writer at another byte, inside a number; the days'
    outputs together are one run's over the finished log, bit for bit."""
    rows = "".join(f"m{k % 3},{k * 1.25 + 0.01:.2f}\n" for k in range(40))
    text = "meter,kwh\n" + rows
    ends = [len("meter,kwh\n") + c * 7 + 3 for c in cuts]  # 3 bytes into a row
    write("log.csv", "")
    outputs = []
    for end in [*ends, len(text)]:
        Path("log.csv").write_text(text[:end])
        ok(cli("cumsum", "log.csv", "--by", "meter", "--state", "s.json", "-o", "out.csv",
               "--growing", "-q"))
        outputs.append(Path("out.csv").read_text())
    write("whole.csv", text)
    ok(cli("cumsum", "whole.csv", "--by", "meter", "-o", "whole-out.csv"))
    whole = Path("whole-out.csv").read_text().splitlines()
    assert [line for out in outputs for line in out.splitlines()[1:]] == whole[1:]
    assert len(whole) == 41


def test_a_retry_by_run_id_writes_the_last_runs_rows_and_appended_rows_wait(cli):
    """A kill after the commit, and the log grew before the retry: the retry with the
    last run's ID writes that run's rows again (not only the new ones over them), and
    the rows appended meanwhile are the next run's."""
    write("log.csv", "kwh\n1\n2\n")
    run = ["cumsum", "log.csv", "--state", "s.json", "--growing", "-o", "out.csv"]
    ok(cli(*run, "--run-id", "h1"))
    with open("log.csv", "a") as log:
        log.write("4\n8\n")
    ok(cli(*run, "--run-id", "h2"))
    committed = Path("out.csv").read_bytes()
    assert committed == b"kwh\n7\n15\n"
    with open("log.csv", "a") as log:  # grown between the killed run and its retry
        log.write("16\n")
    ok(cli(*run, "--run-id", "h2"))
    assert Path("out.csv").read_bytes() == committed
    ok(cli(*run, "--run-id", "h3"))
    assert Path("out.csv").read_bytes() == b"kwh\n31\n"


def test_a_retry_of_the_first_run_by_run_id_reads_what_it_read(cli):
    """The log grew between the first run (no state before it) and its retry: the retry
    wrote 1, 3, 13 and consumed the new row, where the first run wrote 1, 3."""
    write("log.csv", "kwh\n1\n2\n")
    run = ["cumsum", "log.csv", "--state", "s.json", "--growing", "-o", "out.csv"]
    ok(cli(*run, "--run-id", "h1"))
    committed, state = Path("out.csv").read_bytes(), Path("s.json").read_bytes()
    assert committed == b"kwh\n1\n3\n"
    with open("log.csv", "a") as log:
        log.write("10\n")
    ok(cli(*run, "--run-id", "h1"))
    assert (Path("out.csv").read_bytes(), Path("s.json").read_bytes()) == (committed, state)
    ok(cli(*run, "--run-id", "h2"))
    assert Path("out.csv").read_bytes() == b"kwh\n13\n"


def test_a_look_at_the_output_between_a_run_and_its_retry_changes_nothing(cli):
    """The issue's third case: after a finished run, the same run to standard output (a
    peek) and to another -o scan no new row, so they leave the state as it was, and the
    real retry to the first -o is still a retry: it writes the good output again, not a
    header over it."""
    write("log.csv", "kwh\n1\n2\n")
    run = ["cumsum", "log.csv", "--state", "s.json", "--growing"]
    ok(cli(*run, "-o", "out.csv"))
    state = Path("s.json").read_bytes()
    assert ok(cli(*run)).stdout == "kwh\n"
    ok(cli(*run, "-o", "peek.csv"))
    assert Path("peek.csv").read_text() == "kwh\n"
    assert Path("s.json").read_bytes() == state
    Path("out.csv").unlink()  # lost, or never put in place: the retry writes it again
    ok(cli(*run, "-o", "out.csv"))
    assert Path("out.csv").read_text() == "kwh\n1\n3\n"
    assert Path("s.json").read_bytes() == state


def test_a_run_with_no_rows_makes_no_state(cli):
    write("empty.csv", "kwh\n")
    assert ok(cli("cumsum", "empty.csv", "--state", "s.json")).stdout == "kwh\n"
    assert not Path("s.json").exists()
    assert Path("s.json.lock").exists()  # the lock file stays, as lock files do


def test_a_day_of_whole_numbers_goes_on_in_a_float_state(cli):
    """Day 2 holds only whole numbers: read as float64 under the float state, with the
    bits of one run over both days (where the column is judged float)."""
    write("d1.csv", "v\n1.5\n0.1\n")
    write("d2.csv", "v\n3\n9007199254740993\n")  # 2**53 + 1: 2**53 as float64
    ok(cli("cumsum", "d1.csv", "--state", "s.json", "-o", "o1.csv"))
    ok(cli("cumsum", "d2.csv", "--state", "s.json", "-o", "o2.csv"))
    ok(cli("cumsum", "d1.csv", "d2.csv", "-o", "whole.csv"))
    days = Path("o1.csv").read_text() + Path("o2.csv").read_text().removeprefix("v\n")
    assert days == Path("whole.csv").read_text()
    assert Path("o2.csv").read_text() == "v\n4.6\n9007199254740996.0\n"


def test_an_int_state_meeting_decimals_names_dtype_float64(cli):
    write("d1.csv", "v\n3\n4\n")
    write("d2.csv", "v\n1.5\n")
    ok(cli("cumsum", "d1.csv", "--state", "s.json"))
    result = cli("cumsum", "d2.csv", "--state", "s.json")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --state s.json was made when column 'v' held int64, and it holds float64 "
        "now; add --dtype float64 to go on in float64 (the saved values convert exactly up "
        "to 2**53)\n")
    assert ok(cli("cumsum", "d2.csv", "--state", "s.json", "--dtype", "float64")).stdout == (
        "v\n8.5\n")


def test_a_second_run_on_a_held_state_fails_at_once_with_75(cli):
    write("d.csv", "kwh\n1\n")
    ok(cli("cumsum", "d.csv", "--state", "s.json"))
    state = Path("s.json").read_bytes()
    holder = os.open("s.json.lock", os.O_RDWR)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        os.pwrite(holder, b"4242\n", 0)
        write("e.csv", "kwh\n5\n")
        result = cli("cumsum", "e.csv", "--state", "s.json", "-o", "out.csv")
        assert result.exit_code == 75
        assert result.stderr == (
            "Error: --state s.json is in use by another cumtool run (pid 4242); try again "
            "later, or give --wait SECONDS to wait for it\n")
        result = cli("cumsum", "e.csv", "--state", "s.json", "--wait", "0.2")
        assert result.exit_code == 75
        assert result.stderr == (
            "Error: --state s.json is in use by another cumtool run (pid 4242), still after "
            "0.2 s of waiting; try again later, or give a longer --wait\n")
    finally:
        os.close(holder)
    assert not Path("out.csv").exists()
    assert Path("s.json").read_bytes() == state
    assert ok(cli("cumsum", "e.csv", "--state", "s.json")).stdout == "kwh\n6\n"


@pytest.mark.parametrize("args, message", [
    (["--run-id", "x"], "--run-id works with --state: it names, waits for or continues a "
                        "run that saves a state"),
    (["--wait", "3"], "--wait works with --state: it names, waits for or continues a run "
                      "that saves a state"),
    (["--growing"], "--growing works with --state: it names, waits for or continues a run "
                    "that saves a state"),
], ids=["run-id", "wait", "growing"])
def test_run_id_and_wait_need_state(cli, args, message):
    write("d.csv", "kwh\n1\n")
    result = cli("cumsum", "d.csv", *args)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"


def _state() -> dict:
    return json.loads(Path("s.json").read_text())


def _grouped_state(cli) -> None:
    write("d1.csv", "meter,kwh\nnorth,1\nsouth,2\neast,3\n")
    write("d2.csv", "meter,kwh\nnorth,1\n")
    ok(cli("cumsum", "d1.csv", "--by", "meter", "--state", "s.json"))


def _edit(change) -> None:
    document = _state()
    change(document)
    Path("s.json").write_text(json.dumps(document))


def _keys(document: dict) -> list[dict]:
    return document["plans"][0]["groups"]["keys"]


def _drop_a_carry(document: dict) -> None:
    carry = document["plans"][0]["columns"][0]["group_carry"]["value"]
    carry["shape"] = [2]
    carry["values"] = carry["values"][:2]


def _repeat_a_key(document: dict) -> None:
    for column in _keys(document):
        if column["name"] == "key0":  # the first --by column
            column["values"][2] = column["values"][0]


def _group_number_out_of_range(document: dict) -> None:
    for column in _keys(document):
        if column["name"] == "__cumtool_group":
            column["values"][2] = 7


def _fewer_keys(document: dict) -> None:
    document["plans"][0]["groups"]["count"] = 4


def _negative_rows(document: dict) -> None:
    document["rows"] = -1


def _bad_identity(document: dict) -> None:
    document["last_run"]["identity"] = 5


def _position_past_the_rows(document: dict) -> None:
    document["plans"][0]["columns"][0]["group_carry"]["index"]["values"][1] = 3


def _bad_input(document: dict) -> None:
    document["inputs"][0]["sha256"] = "abc"


def _inputs_not_a_list(document: dict) -> None:
    document["inputs"] = 5


def _another_column(document: dict) -> None:
    document["plans"][0]["columns"][0]["name"] = "zz"


def _another_op(document: dict) -> None:
    document["plans"][0]["op"] = "cumprod"


@pytest.mark.parametrize("change, field, why", [
    (_drop_a_carry, "plans[0].columns[0].group_carry.value",
     "holds 2 groups, and groups.count is 3"),
    (_repeat_a_key, "plans[0].groups.keys", "repeats a group key"),
    (_group_number_out_of_range, "plans[0].groups.keys",
     "does not number its groups 0 to 2 once each"),
    (_fewer_keys, "plans[0].groups.keys", "holds 3 keys for a count of 4 groups"),
    (_negative_rows, "rows", "is not a count of rows"),
    (_bad_identity, "last_run.identity", "is not a text"),
    (_bad_input, "inputs[0]", "is not a path, a size and a SHA-256"),
    (_inputs_not_a_list, "inputs", "is not a list"),
    (_another_column, "plans[0].columns[0].name", "is not one of made_with.columns"),
    (_another_op, "plans[0].op", "is not 'cumsum', as made_with.op says"),
    (_position_past_the_rows, "plans[0].columns[0].group_carry.index",
     "holds a position outside rows 0 to 2"),
], ids=["fewer-carries", "repeated-key", "group-out-of-range", "count", "rows",
        "identity", "input", "inputs", "column-name", "op", "position"])
def test_a_state_that_contradicts_itself_is_refused_naming_the_field(cli, change, field,
                                                                     why):
    _grouped_state(cli)
    _edit(change)
    state = Path("s.json").read_bytes()
    result = cli("cumsum", "d2.csv", "--by", "meter", "--state", "s.json", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: s.json: field {field} {why}; the state file contradicts itself (edited "
        "by hand, or damaged): remove it to start afresh, or give another --state file\n")
    assert Path("s.json").read_bytes() == state
    assert not Path("out.csv").exists()


def _a_carry_of(values: list) -> Callable[[dict], None]:
    def change(document: dict) -> None:
        document["plans"][0]["columns"][0]["group_carry"]["value"]["values"] = values
    return change


@pytest.mark.parametrize("change, why", [
    (_a_carry_of([1e400] * 3), "OverflowError: cannot convert float infinity to integer"),
    (_a_carry_of([2**70] * 3), "OverflowError: Python int too large to convert to C long"),
], ids=["infinity", "beyond-int64"])
def test_a_carry_that_does_not_read_is_one_line(cli, change, why):
    """They were internal errors, with their Python exception."""
    _grouped_state(cli)
    _edit(change)
    result = cli("cumsum", "d2.csv", "--by", "meter", "--state", "s.json", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: s.json: not a cumtool state file that this version can use ({why}); "
        "remove it to start afresh, or give another --state file\n")


def test_a_state_nested_past_any_depth_is_one_line(cli):
    _grouped_state(cli)
    Path("s.json").write_text("[" * 100_000 + "]" * 100_000)
    result = cli("cumsum", "d2.csv", "--by", "meter", "--state", "s.json", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: s.json: not a cumtool state file that this "
                                    "version can use (not JSON: maximum recursion depth")


def test_a_version_1_state_is_still_read(cli):
    """A state written by cumtool before run identities (version 1) resumes."""
    _grouped_state(cli)
    document = _state()
    v1 = {k: document[k] for k in ("format", "about", "made_with", "rows", "plans")}
    v1["version"] = 1
    Path("s.json").write_text(json.dumps(v1))
    result = ok(cli("cumsum", "d2.csv", "--by", "meter", "--state", "s.json"))
    assert result.stdout == "meter,kwh\nnorth,2\n"
    assert _state()["version"] == 2


@pytest.mark.parametrize("args", [
    pytest.param(("ewma", "--span", "3"), id="ewma"),
    pytest.param(("cumvar", "--ddof", "0"), id="cumvar"),
    pytest.param(("cumsum", "--compensated"), id="cumsum"),
    pytest.param(("cummax", "--indices"), id="cummax"),
])
def test_a_state_of_the_old_spec_layout_is_still_read(cli, args):
    """Until the op registry, every column's spec held every op's parameters (ddof, com,
    adjust, compensated), whatever its op: such a state resumes, and a parameter saved
    with another value than this run's is still refused."""
    write("d1.csv", "k,x\n1,2.5\n3,4\n")
    write("d2.csv", "k,x\n5,6.5\n")
    ok(cli(*args, "d1.csv", "--state", "s.json"))
    old = {"ddof": 1, "com": None, "adjust": True, "compensated": False}

    def as_before(document: dict) -> None:
        for column in document["plans"][0]["columns"]:
            column["spec"] = {**old, **column["spec"]}

    _edit(as_before)
    resumed = ok(cli(*args, "d2.csv", "--state", "s.json")).stdout
    write("both.csv", "k,x\n1,2.5\n3,4\n5,6.5\n")
    assert resumed.splitlines()[1] == ok(cli(*args, "both.csv")).stdout.splitlines()[-1]


def test_a_parameter_missing_from_a_state_is_its_default(cli):
    """A parameter an op gains does not make older state files refused: one the state
    does not hold is the parameter's default."""
    write("d1.csv", "x\n2.5\n4\n")
    write("d2.csv", "x\n6.5\n")
    write("both.csv", "x\n2.5\n4\n6.5\n")
    ok(cli("ewma", "--alpha", "0.5", "d1.csv", "--state", "s.json"))

    def forget(document: dict) -> None:
        for column in document["plans"][0]["columns"]:
            del column["spec"]["adjust"]

    _edit(forget)
    resumed = ok(cli("ewma", "--alpha", "0.5", "d2.csv", "--state", "s.json")).stdout
    assert resumed.splitlines()[1] == ok(cli("ewma", "--alpha", "0.5", "both.csv")
                                         ).stdout.splitlines()[-1]
    _edit(forget)
    result = cli("ewma", "--alpha", "0.5", "--no-adjust", "d2.csv", "--state", "s.json")
    assert result.exit_code == 2
    assert "was made with --adjust" in result.stderr


def test_dtype_float64_may_be_added_to_a_state_of_integers(cli):
    write("d1.csv", "meter,kwh\nnorth,3\nsouth,2\n")
    write("d2.csv", "meter,kwh\nnorth,0.5\n")
    ok(cli("cumsum", "d1.csv", "--by", "meter", "--state", "s.json"))
    result = cli("cumsum", "d2.csv", "--by", "meter", "--state", "s.json")
    assert result.exit_code == 1
    assert "add --dtype float64 to go on in float64" in result.stderr
    result = ok(cli("cumsum", "d2.csv", "--by", "meter", "--state", "s.json",
                    "--dtype", "float64"))
    assert result.stdout == "meter,kwh\nnorth,3.5\n"
    assert _state()["made_with"]["dtype"] == "float64"
    write("d3.csv", "meter,kwh\nsouth,1\n")
    result = ok(cli("cumsum", "d3.csv", "--by", "meter", "--state", "s.json",
                    "--dtype", "float64"))
    assert result.stdout == "meter,kwh\nsouth,3.0\n"


@pytest.mark.parametrize("ops", ["diff", "cumsum,diff"])
def test_dtype_float64_may_be_added_to_a_diff_state_of_integers(cli, ops):
    """diff carries a record (count, last value, output): following the error's advice
    failed with "not a cumtool state file that this version can use"."""
    write("d1.csv", "x\n1\n2\n")
    write("d2.csv", "x\n2.5\n")
    write("all.csv", "x\n1\n2\n2.5\n")
    ok(cli(ops, "d1.csv", "--state", "s.json"))
    result = cli(ops, "d2.csv", "--state", "s.json")
    assert result.exit_code == 1
    assert "add --dtype float64 to go on in float64" in result.stderr
    day2 = ok(cli(ops, "d2.csv", "--state", "s.json", "--dtype", "float64")).stdout
    whole = ok(cli(ops, "all.csv", "--dtype", "float64")).stdout
    assert day2.splitlines() == [whole.splitlines()[0], whole.splitlines()[-1]]
    assert day2.splitlines()[-1].endswith(",0.5") or day2 == "x\n0.5\n"


def test_dtype_float64_is_refused_for_integers_beyond_2_to_the_53(cli):
    write("d1.csv", f"kwh\n{2**53 + 1}\n")
    write("d2.csv", "kwh\n0.5\n")
    ok(cli("cumsum", "d1.csv", "--state", "s.json"))
    state = Path("s.json").read_bytes()
    result = cli("cumsum", "d2.csv", "--state", "s.json", "--dtype", "float64")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: --state s.json: the carried value 'value' holds integers beyond 2**53, "
        "which float64 cannot hold exactly; go on without --dtype float64\n")
    assert Path("s.json").read_bytes() == state


def test_a_day_with_an_integer_column_all_missing_keeps_the_saved_type(cli):
    write("d1.csv", "meter,kwh\nnorth,3\n")
    write("d2.csv", "meter,kwh\nnorth,\nsouth,\n")
    write("d3.csv", "meter,kwh\nnorth,4\n")
    ok(cli("cumsum", "d1.csv", "--by", "meter", "--state", "s.json"))
    assert ok(cli("cumsum", "d2.csv", "--by", "meter", "--state", "s.json")).stdout == (
        "meter,kwh\nnorth,\nsouth,\n")
    assert ok(cli("cumsum", "d3.csv", "--by", "meter", "--state", "s.json")).stdout == (
        "meter,kwh\nnorth,7\n")
    (column,) = _state()["plans"][0]["columns"]
    assert column["spec"]["source_dtype"] == "int64"


def test_a_failed_state_save_replaces_no_output(cli, monkeypatch):
    """The state cannot be written (a full disk at its fsync): the run fails in one
    line, and the output that was already complete is not put in place either."""
    import cumtool.output

    write("d1.csv", "kwh\n1\n")
    write("d2.csv", "kwh\n2\n")
    ok(cli("cumsum", "d1.csv", "--state", "s.json", "-o", "out.csv"))
    out, state = Path("out.csv").read_bytes(), Path("s.json").read_bytes()
    real_fsync = os.fsync
    calls = []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:  # the output's, then the state's
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    class Os:
        def __getattr__(self, name: str):
            return getattr(os, name)

    fake = Os()
    fake.fsync = fsync  # type: ignore[attr-defined]
    monkeypatch.setattr(cumtool.output, "os", fake)
    result = cli("cumsum", "d2.csv", "--state", "s.json", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr == "Error: cannot write s.json: No space left on device\n"
    assert Path("out.csv").read_bytes() == out
    assert Path("s.json").read_bytes() == state
    assert sorted(p.name for p in Path().iterdir()) == [
        "d1.csv", "d2.csv", "out.csv", "s.json", "s.json.lock"]


def test_leftovers_of_killed_runs_are_removed_and_only_theirs(cli):
    write("d.csv", "kwh\n1\n")
    dead = 2**22 + 12345  # above the kernel's default pid_max: no such process
    mine = f".out.csv.{os.getpid()}.abcdefgh.cumtool-tmp"
    for name in (f".out.csv.{dead}.abcdefgh.cumtool-tmp", f".s.json.{dead}.x1y2z3w4.cumtool-tmp",
                 mine, "notes.cumtool-tmp", ".out.csv.backup"):
        write(name, "left")
    ok(cli("cumsum", "d.csv", "--state", "s.json", "-o", "out.csv"))
    assert sorted(p.name for p in Path().iterdir()) == sorted([
        ".out.csv.backup", mine, "d.csv", "notes.cumtool-tmp", "out.csv", "s.json",
        "s.json.lock"])


def test_a_commit_left_by_a_killed_run_is_completed_first(cli):
    """A run killed between its renames left a commit record: the next run finishes
    the renames before it reads the state."""
    write("d1.csv", "kwh\n1\n")
    ok(cli("cumsum", "d1.csv", "--state", "s.json", "-o", "out.csv"))
    saved = Path("s.json").read_text()
    write(".s.json.999999999.aaaaaaaa.cumtool-tmp", saved.replace('"rows": 1', '"rows": 1'))
    write(".out.csv.999999999.bbbbbbbb.cumtool-tmp", "kwh\n99\n")
    record = {"format": "cumtool-commit", "pid": 999999999, "renames": [
        [str(Path(".out.csv.999999999.bbbbbbbb.cumtool-tmp").resolve()),
         str(Path("out.csv").resolve())],
        [str(Path(".s.json.999999999.aaaaaaaa.cumtool-tmp").resolve()),
         str(Path("s.json").resolve())]]}
    write("s.json.commit", json.dumps(record))
    write("d2.csv", "kwh\n2\n")
    assert ok(cli("cumsum", "d2.csv", "--state", "s.json")).stdout == "kwh\n3\n"
    assert Path("out.csv").read_text() == "kwh\n99\n"  # the killed run's output, in place
    assert not Path("s.json.commit").exists()
    assert not list(Path().glob("*.cumtool-tmp"))


def test_per_input_outputs_and_state_are_committed_together(cli):
    expected = one_run_outputs(cli, ["day-1.csv", "day-2.csv"])
    ok(cli("cumsum", "day-1.csv", "day-2.csv", "--by", "meter", "--state", "s.json",
           "-o", "out/"))
    assert {n: Path("out", n).read_bytes() for n in expected} == expected
    assert sorted(p.name for p in Path("out").iterdir()) == ["day-1.csv", "day-2.csv"]
    ok(cli("cumsum", "day-1.csv", "day-2.csv", "--by", "meter", "--state", "s.json",
           "-o", "out/"))  # a retry: the same files again
    assert {n: Path("out", n).read_bytes() for n in expected} == expected


def test_state_from_standard_input_knows_a_retry_by_its_bytes(cli):
    data = b"kwh\n1\n2\n"
    assert ok(cli("cumsum", "--state", "s.json", input=data)).stdout == "kwh\n1\n3\n"
    assert ok(cli("cumsum", "--state", "s.json", input=data)).stdout == "kwh\n1\n3\n"
    assert ok(cli("cumsum", "--state", "s.json", input=b"kwh\n5\n")).stdout == "kwh\n8\n"


def test_a_grown_file_with_crlf_and_a_quoted_header_is_continued(cli):
    """The header put before the new rows is the file's first record, quoted line breaks
    and CRLF line ends included."""
    write("log.csv", b'"kw\r\nh",site\r\n1,a\r\n2,b\r\n')
    assert ok(cli("cumsum", "log.csv", "--state", "s.json")).stdout_bytes == (
        b'"kw\r\nh",site\n1,a\n3,b\n')  # written with LF, as every CSV output is
    with open("log.csv", "ab") as log:
        log.write(b"4,c\r\n")
    assert ok(cli("cumsum", "log.csv", "--state", "s.json", "--growing")).stdout_bytes == (
        b'"kw\r\nh",site\n7,c\n')


def test_a_log_truncated_under_growing_is_said_to_be_read_as_a_new_input(cli):
    """logrotate's copytruncate: the log shrinks below what the state consumed, then
    grows again. It was read as a new input without a word (and, headless, failed)."""
    write("log.csv", "kwh\n1\n2\n")
    run = ["cumsum", "log.csv", "--state", "s.json", "--growing", "-o", "out.csv"]
    ok(cli(*run))
    write("log.csv", "kwh\n10\n")
    result = cli(*run)
    assert (result.exit_code, result.stderr) == (0, (
        "note: log.csv: it is shorter than the 8 bytes the state consumed before (rotated "
        "or truncated?); it is read whole, as a new input\n"))
    assert Path("out.csv").read_text() == "kwh\n13\n"


@pytest.mark.parametrize(("second", "now", "saved"), [
    ("parquet", "int64", "text"),  # a CSV's keys are text
    ("float", "float64", "text"),
])
def test_keys_of_another_type_than_the_state_saved_are_refused_in_one_line(cli, second,
                                                                           now, saved):
    """It was an internal error from polars' join (a SchemaError, or a missing column)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    write("day1.csv", "g,v\n1,10\n2,20\n")
    ok(cli("cumsum", "day1.csv", "--by", "g", "--state", "s.json", "-o", "out.csv"))
    state, output = Path("s.json").read_bytes(), Path("out.csv").read_bytes()
    keys = [1, 2] if second == "parquet" else [1.0, 2.0]
    pq.write_table(pa.table({"g": keys, "v": [1, 2]}), "day2.parquet")
    result = cli("cumsum", "day2.parquet", "--by", "g", "--state", "s.json", "-o", "out.csv")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: --by column 'g' holds {now} values, but the keys --state saved are "
        f"{saved}: give the runs that go on inputs of one format (a CSV's keys are text), "
        "or start a new state file\n")
    assert (Path("s.json").read_bytes(), Path("out.csv").read_bytes()) == (state, output)


def test_a_decimal_column_is_named_as_decimals_when_its_type_changed(cli):
    """--decimal holds a column as scaled int64, which the message named ("int64")."""
    write("e1.csv", "b\nnan\n")
    write("e2.csv", "b\n2.25\n")
    ok(cli("cumsum", "e1.csv", "--decimal", "--state", "s.json"))
    result = cli("cumsum", "e2.csv", "--decimal", "--state", "s.json")
    assert (result.exit_code, result.stderr) == (1, (
        "Error: --state s.json was made when column 'b' held float64, and it holds "
        "decimals of 2 places now; the inputs must keep their types\n"))


def test_a_state_under_a_file_says_it_is_not_a_directory(cli):
    Path("afile").write_text("x")
    Path("d.csv").write_text("a\n1\n")
    result = cli("cumsum", "d.csv", "--state", "afile/s.json")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: cannot write afile/s.json: {Path('afile').resolve()} "
                             "is not a directory\n")


def test_a_commit_record_that_is_a_directory_is_named_without_pythons_errno(cli):
    Path("d.csv").write_text("a\n1\n")
    Path("s.json.commit").mkdir()
    result = cli("cumsum", "d.csv", "--state", "s.json")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: cannot read the commit record "
                             f"{Path('s.json.commit').resolve()}: Is a directory; it is left "
                             "by a run that was killed while putting its files in place\n")
