"""--threads N and CUMTOOL_THREADS: the number of threads never changes a bit of the
output, an error's message or the bytes written before it; the default is the cores
this process may use, bounded by a cgroup CPU quota."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cumtool import native
from cumtool.cli import main
from cumtool.formats.csv import csv as csvsource
from cumtool.formats.csv import fast as fastcsv
from cumtool.formats.csv import small

THREADS = ["1", "2", "3", "16"]


def _rows(count: int) -> bytes:
    lines = [b"id,name,amount,n"]
    for k in range(count):
        name = b'"multi\nline, quoted"' if k % 97 == 5 else b"plain%d" % (k % 13)
        lines.append(b"%d,%s,%d.%02d,%d" % (k, name, k % 1000, k % 100, k % 7 - 3))
    return b"\r\n".join(lines) + b"\r\n"  # CRLF line ends


def _run(args: list[str], monkeypatch: pytest.MonkeyPatch, small_blocks: bool = True,
         env: dict[str, str] | None = None, stdin: bytes | None = None
         ) -> tuple[int, bytes, str]:
    """cumtool in this process with the small path off and small blocks, so that a few
    thousand rows cross many blocks and batches."""
    with monkeypatch.context() as patch:
        patch.setattr(small, "SMALL_BYTES", -1)
        if small_blocks:
            patch.setattr(fastcsv, "IN_FLIGHT_BYTES", 6000)
            patch.setattr(fastcsv, "CHUNK_ROWS", 50)
            patch.setattr(fastcsv, "PIPELINE_CHUNK_BYTES", 6000)
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        result = CliRunner().invoke(main, args, input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout_bytes, result.stderr


@pytest.mark.parametrize("op", ["cumsum", "cummax", "cumsum,cummin", "cummean"])
def test_every_thread_count_writes_the_same_bytes(tmp_path, monkeypatch, op):
    path = tmp_path / "in.csv"
    path.write_bytes(_rows(3000))
    outputs = {t: _run([op, str(path), "--threads", t], monkeypatch) for t in THREADS}
    first = outputs["1"]
    assert first[0] == 0 and first[1].count(b"\n") > 3000
    assert all(outputs[t] == first for t in THREADS)
    grouped = {t: _run([op, str(path), "--by", "name", "--threads", t, "--batch-rows", "7"],
                       monkeypatch) for t in THREADS}
    assert grouped["1"][0] == 0
    assert all(grouped[t] == grouped["1"] for t in THREADS)


_BAD_ROWS = {  # row 10301 (k = 10300), after the rows the columns are judged from
    "decimal": b"10300.5,plain4,300.00,2",  # in the integer column id
    "text": b"10300,plain4,lots,2",
    "ragged": b"10300,plain4,300.00,2,9",
    "quote": b'10300,plain"4,300.00,2',
    "overflow": b"9223372036854775000,plain4,300.00,2",
}


@pytest.mark.parametrize("how", ["file", "stdin", "jsonl"])
@pytest.mark.parametrize("kind", sorted(_BAD_ROWS))
def test_an_error_mid_file_comes_after_every_row_before_it(tmp_path, monkeypatch, kind, how):
    # Standard output holds every row before the bad one, as a run over those rows alone
    # writes them, at every thread count: not what a chunk or a writing thread had got to
    # (the chunks of the general reader are small here too).
    data = _rows(10500)
    at = data.index(b"\r\n10300,") + 2
    bad = data[:at] + _BAD_ROWS[kind] + data[data.index(b"\r\n", at):]
    (tmp_path / "in.csv").write_bytes(bad)
    (tmp_path / "head.csv").write_bytes(data[:at])
    monkeypatch.setattr(csvsource, "CHUNK_BYTES", 20000)
    monkeypatch.setattr(csvsource, "MIN_CHUNK_BYTES", 20000)
    extra = ["-c", "id,amount"] + (["--to", "jsonl"] if how == "jsonl" else [])
    _, expected, _ = _run(["cumsum", str(tmp_path / "head.csv"), *extra], monkeypatch)
    assert expected.count(b"\n") > 10000
    outcomes = {}
    for t in THREADS:
        if how == "stdin":
            outcomes[t] = _run(["cumsum", *extra, "--threads", t], monkeypatch, stdin=bad)
        else:
            outcomes[t] = _run(["cumsum", str(tmp_path / "in.csv"), *extra, "--threads", t],
                               monkeypatch)
    status, _, message = outcomes["1"]
    assert status == 1 and "row 10301 (line " in message, message
    for t in THREADS:
        assert outcomes[t] == (1, expected, message), t


@pytest.mark.parametrize("case", ["by", "parquet", "ops"])
def test_an_overflow_comes_after_every_row_before_it(tmp_path, monkeypatch, case):
    # In its groups (--by: the overflowing column is scanned again up to the bad row, the
    # others cut there), from a typed input, and with several ops (cummax's results cut
    # there): the rows before the overflow, and no more.
    rows = 4000
    values = [k % 7 for k in range(rows)]
    values[3000] = 9223372036854775000
    table = pa.table({"g": [f"k{k % 5}" for k in range(rows)],
                      "a": [k % 1000 + 0.25 for k in range(rows)], "b": values})
    if case == "parquet":
        pq.write_table(table, tmp_path / "in.parquet", row_group_size=700)
        pq.write_table(table.slice(0, 3000), tmp_path / "head.parquet", row_group_size=700)
        args, name = ["--to", "csv", "--batch-rows", "512"], "{}.parquet"
    else:
        for stem, part in (("in", table), ("head", table.slice(0, 3000))):
            pa_csv.write_csv(part, tmp_path / f"{stem}.csv")
        args, name = (["cummax,cumsum"] if case == "ops" else ["--by", "g"]), "{}.csv"
        args.extend(["--batch-rows", "512"])
    op = args.pop(0) if case == "ops" else "cumsum"
    _, expected, _ = _run([op, str(tmp_path / name.format("head")), *args], monkeypatch)
    assert expected.count(b"\n") == 3001
    for t in THREADS:
        status, out, message = _run([op, str(tmp_path / name.format("in")), *args,
                                     "--threads", t], monkeypatch)
        assert (status, out) == (1, expected), t
        assert "column 'b', row 3001" in message and "overflows int64" in message


def _ipc_batches(path: Path) -> list[pa.RecordBatch]:
    if path.suffix == ".arrows":
        return list(ipc.open_stream(path))
    read = ipc.open_file(path)
    return [read.get_batch(i) for i in range(read.num_record_batches)]


@pytest.mark.parametrize("to", ["parquet", "arrow", "arrows"])
def test_csv_to_a_grouped_format_writes_the_same_bytes_however_reads_are_cut(
        tmp_path, monkeypatch, to):
    """Parquet's row groups and Arrow's record batches are the batches written, and a
    CSV read's batches end where reads end (a pipe's pause, a slow disk, a chunk's
    size): rows go out in groups fixed by the table's width, so the bytes never vary.
    (Arrow writes a text column's buffer padded where it is a slice of a longer one, so
    only Parquet's bytes are the same with --batch-rows too; Arrow's groups are.)"""
    path = tmp_path / "in.csv"
    path.write_bytes(_rows(3000))
    monkeypatch.setattr("cumtool.formats.MAX_GROUP_ROWS", 400)
    outputs = set()
    groups = set()
    for chunk, batch_rows in [(64 << 10, []), (1500, []), (4000, ["--batch-rows", "7"])]:
        for how in ("file", "stdin"):
            with monkeypatch.context() as patch:
                patch.setattr(csvsource, "CHUNK_BYTES", chunk)
                patch.setattr(csvsource, "MIN_CHUNK_BYTES", chunk)
                out = tmp_path / f"out.{to}"
                given = [str(path)] if how == "file" else ["--from", "csv"]
                status, _, message = _run(
                    ["cumsum", *given, "-o", str(out), *batch_rows], monkeypatch,
                    stdin=path.read_bytes() if how == "stdin" else None)
            assert (status, message) == (0, "")
            if to == "parquet" or not batch_rows:
                outputs.add(out.read_bytes())
            if to != "parquet":
                groups.add(tuple(batch.num_rows for batch in _ipc_batches(out)))
    assert len(outputs) == 1
    assert groups <= {(400,) * 7 + (200,)}
    if to == "parquet":
        metadata = pq.ParquetFile(tmp_path / "out.parquet").metadata
        assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == (
            [400] * 7 + [200])
        assert pq.read_table(tmp_path / "out.parquet").column("n").to_pylist()[-1] == sum(
            k % 7 - 3 for k in range(3000))


def test_state_runs_are_the_same_at_every_thread_count(tmp_path, monkeypatch):
    days = [_rows(900), _rows(1200)]
    results = {}
    for t in THREADS:
        where = tmp_path / f"t{t}"
        where.mkdir()
        outs = []
        for k, text in enumerate(days):
            (where / f"d{k}.csv").write_bytes(text)
            status, out, err = _run(["cumsum", str(where / f"d{k}.csv"), "--by", "name",
                                     "--state", str(where / "s.json"), "--threads", t],
                                    monkeypatch)
            assert (status, err) == (0, "")
            outs.append(out)
        state = json.loads((where / "s.json").read_text().replace(str(where), "<dir>"))
        del state["last_run"]["identity"]  # made of the inputs' paths: another folder
        results[t] = (outs, state)
    assert all(results[t] == results["1"] for t in THREADS)


def test_the_environment_variable_sets_the_threads_and_a_bad_one_is_named(tmp_path,
                                                                          monkeypatch):
    path = tmp_path / "in.csv"
    path.write_bytes(_rows(500))
    plain = _run(["cumsum", str(path)], monkeypatch)
    assert _run(["cumsum", str(path)], monkeypatch, env={"CUMTOOL_THREADS": "3"}) == plain
    status, out, err = _run(["cumsum", str(path)], monkeypatch,
                            env={"CUMTOOL_THREADS": "many"})
    assert (status, out) == (2, b"")
    assert err == "Error: CUMTOOL_THREADS='many' is not a count of threads (1 or more)\n"
    status, _, err = _run(["cumsum", str(path), "--threads", "0"], monkeypatch)
    assert status == 2
    assert "Error: Invalid value for '--threads': 0 is not in the range x>=1." in err


def test_threads_set_the_workers_for_the_run_only(tmp_path, monkeypatch):
    """--threads 1 runs the pipeline on one worker; the count is the run's alone."""
    seen = []
    job = fastcsv._Job.__init__

    def spy(self, *args, **kwargs):
        job(self, *args, **kwargs)
        seen.append(self.workers)

    monkeypatch.setattr(fastcsv._Job, "__init__", spy)
    path = tmp_path / "in.csv"
    path.write_bytes(_rows(500))
    before = native.CORES
    for t, workers in (("1", 1), ("2", 3), ("16", 17)):
        assert _run(["cumsum", str(path), "--threads", t], monkeypatch)[0] == 0
        assert seen[-1] == workers
    assert before == native.CORES


@pytest.mark.parametrize(("files", "expected"), [
    ({"cpu.max": "200000 100000\n"}, 2.0),
    ({"cpu.max": "150000 100000\n"}, 1.5),
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3.0),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({}, None),
], ids=["v2-two", "v2-one-and-a-half", "v2-none", "v1-three", "v1-none", "no-cgroup"])
def test_a_cgroup_cpu_quota_is_read(tmp_path: Path, files: dict[str, str],
                                    expected: float | None) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert native.cgroup_quota(str(tmp_path)) == expected


@pytest.mark.parametrize(("membership", "files", "expected"), [
    # a service on a host: its slice has the quota, its own cgroup none
    ("0::/system.slice/job.service\n", {"system.slice/cpu.max": "200000 100000\n",
                                        "system.slice/job.service/cpu.max": "max 100000\n"},
     2.0),
    # the smallest on the way up wins
    ("0::/a/b\n", {"cpu.max": "400000 100000\n", "a/cpu.max": "300000 100000\n",
                   "a/b/cpu.max": "150000 100000\n"}, 1.5),
    # cgroup v1: the cpu controller's own hierarchy
    ("4:memory:/x\n3:cpu,cpuacct:/x/y\n", {"cpu/x/y/cpu.cfs_quota_us": "-1\n",
                                           "cpu/x/y/cpu.cfs_period_us": "100000\n",
                                           "cpu/x/cpu.cfs_quota_us": "100000\n",
                                           "cpu/x/cpu.cfs_period_us": "100000\n"}, 1.0),
    ("0::/a\n", {}, None),
], ids=["v2-slice", "v2-smallest", "v1-parent", "none"])
def test_the_quota_of_a_cgroup_above_this_one_counts(tmp_path: Path, membership: str,
                                                     files: dict[str, str],
                                                     expected: float | None) -> None:
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (tmp_path / "self").write_text(membership)
    assert native.cgroup_quota(str(root), str(tmp_path / "self")) == expected


def test_usable_cores_are_bounded_by_the_quota(monkeypatch):
    monkeypatch.setattr(native.os, "sched_getaffinity", lambda _pid: set(range(64)))
    monkeypatch.setattr(native, "cgroup_quota", lambda: 1.5)
    assert native.usable_cores() == 2  # a container limited to 1.5 CPUs on 64 cores
    monkeypatch.setattr(native, "cgroup_quota", lambda: None)
    assert native.usable_cores() == 64


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas: Linux")
def test_a_command_line_run_caps_glibcs_arenas_and_a_callers_setting_is_kept(
        tmp_path, monkeypatch):
    """M_ARENA_MAX (-8) at MALLOC_ARENAS for the command line's run, before its threads
    start; nothing where the user set MALLOC_ARENA_MAX, nor for a program that calls the
    library (its allocator is its own to set)."""
    import ctypes

    import cumtool

    real = ctypes.CDLL
    calls: list[tuple[int, int]] = []
    glibc = types.SimpleNamespace(mallopt=lambda parameter, value: calls.append(
        (parameter, value)) or 1)

    def libraries(name: object, *args: object, **keywords: object) -> object:
        # the process's own symbols as cap_malloc_arenas asks for them; any other library
        # (others load some during a run) as it is
        return glibc if name is None and not args and not keywords else real(
            name, *args, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(ctypes, "CDLL", libraries)
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    data = tmp_path / "in.csv"
    data.write_text("a\n1\n2\n")
    result = CliRunner().invoke(main, ["cumsum", str(data)])
    assert (result.exit_code, result.output) == (0, "a\n1\n3\n")
    assert calls == [(-8, native.MALLOC_ARENAS)] == [(-8, 4)]
    scanned = cumtool.scan(str(data), "cumsum")  # a file, read and scanned by the library
    assert scanned.column("a").to_pylist() == [1, 3]
    assert len(calls) == 1
    monkeypatch.setenv("MALLOC_ARENA_MAX", "16")
    result = CliRunner().invoke(main, ["cumsum", str(data)])
    assert (result.exit_code, result.output) == (0, "a\n1\n3\n")
    assert len(calls) == 1
