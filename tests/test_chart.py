"""`--to chart`: a line chart of the results, on a terminal, in a pipe, and as SVG or PNG.

The plain-text chart (a pipe) is checked byte for byte; the chart on a terminal through
a pseudo-terminal of a given size; images by parsing them. Decimation is checked against
the data it decimates, and memory on ten million rows in a subprocess (slow)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO
from helpers import ok

from cumtool.formats.chart.decimate import Decimator

SGR = re.compile(r"\x1b\[[0-9;]*m")
HOSTILE = "evil\x1b[2J\x1b]0;owned\x07"
HOSTILE_SHOWN = "evil\\x1b[2J\\x1b]0;owned\\x07"
SVG_NS = "{http://www.w3.org/2000/svg}"


def _pty(args: list[str], columns: int, rows: int, cwd: Path,
         env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run cumtool with standard output on a pseudo-terminal of columns x rows."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.ONLCR  # "\n" as written
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
    environment.update(TERM="xterm-256color", PYTHONPATH=str(REPO), **(env or {}))
    process = subprocess.Popen([sys.executable, "-m", "cumtool", *args], stdout=slave,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd,
                               env=environment)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
    if process.stderr:
        assert process.stderr.read() == b""
        process.stderr.close()
    return process.returncode, b"".join(chunks).decode("utf-8")


def _fits(text: str, columns: int, rows: int) -> list[str]:
    from rich.cells import cell_len

    lines = SGR.sub("", text).rstrip("\n").split("\n")
    assert len(lines) <= rows - 1  # and the shell's prompt on the last line: none scrolls off
    assert max(cell_len(line) for line in lines) <= columns
    return lines


# Plain text: a pipe ---------------------------------------------------------------------

def test_a_chart_into_a_pipe_is_plain_text_of_the_asked_size(invoke, tmp_path: Path,
                                                             monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("s.csv").write_text("v\n1\n2\nNA\n4\n")
    result = ok(invoke("cumsum", "s.csv", "--to", "chart", "--width", "30", "--height", "10"))
    # cumsum: 1, 3, (missing), 7: a line from 1 to 3, a gap, and 7 alone (top right).
    assert result.stdout == (
        "10 ┤\n"
        "   │                         ⠠\n"
        " 5 ┤\n"
        "   │   ⢀⣀⡠⠤⠔⠒\n"
        " 0 ┤⠒⠊⠉⠁\n"
        "   └────────┬────────────────┬\n"
        "            2                4\n"
        "━━ v\n"
        "cumsum along rows of s.csv, 4\n"
        "rows x 1 column; scanned: v\n")


def test_without_a_size_a_pipe_gets_80_by_24(invoke) -> None:
    result = ok(invoke("cumsum", str(REPO / "sample_data/daily_sales.csv"), "--to", "chart"))
    lines = result.stdout.splitlines()
    assert len(lines) == 24
    assert max(len(line) for line in lines) == 80


def test_several_ops_draw_a_line_per_result_with_its_own_marker(invoke, monkeypatch
                                                                ) -> None:
    monkeypatch.chdir(REPO)
    result = ok(invoke("cummax,cummin", "sample_data/prices.csv", "--x", "day", "--to",
                       "chart", "--width", "60", "--height", "12"))
    # Closes 101.2 .. 107.3: cummax rises to 107.3, cummin stays at 101.2 (row 6 of the
    # frame, 100 to 110 in steps of 1.25 a line); Mondays 2024-04-01 and 04-08 ticked.
    assert result.stdout.splitlines() == [
        "110 ┤",
        "    │",
        "    │                                       ••••••••••••••••",
        "105 ┤                                 ••••••",
        "    │   ••••••••••••••••••••••••••••••",
        "    │+++++++++++++++++++++++++++++++++++++++++++++++++++++++",
        "100 ┤",
        "    └┬─────────────────────────────────────────┬────────────",
        "2024-04-01                                2024-04-08",
        "•• close_cummax   ++ close_cummin",
        "cummax,cummin along rows of sample_data/prices.csv, 10 rows",
        "x 4 columns; scanned: close"]


def test_infinities_are_clipped_and_counted_in_the_caption(invoke, write_file) -> None:
    path = write_file("inf.csv", "v\n1\ninf\n2\n")
    result = ok(invoke("cumsum", str(path), "--to", "chart", "--width", "60"))
    assert "; 2 infinite values clipped to the frame" in " ".join(result.stdout.splitlines())


def test_the_legend_names_the_results_and_a_hostile_name_is_escaped(invoke, write_file
                                                                   ) -> None:
    path = write_file("h.csv", f'"{HOSTILE}",b\n1,2\n3,4\n')
    result = ok(invoke("cumsum", str(path), "--to", "chart", "--width", "80"))
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert f"•• {HOSTILE_SHOWN}   ++ b" in result.stdout.splitlines()


def test_by_with_1000_groups_draws_the_8_largest_and_says_how_many_more(invoke, write_file
                                                                       ) -> None:
    # Group g<i> sums to i: g999 .. g992 have the largest last values.
    rows = "".join(f"g{i},{i}\n" for i in range(1000))
    path = write_file("groups.csv", "key,value\n" + rows)
    result = ok(invoke("cumsum", str(path), "--by", "key", "--to", "chart", "--width", "200",
                       "--height", "30"))
    lines = result.stdout.splitlines()
    legend = next(line for line in lines if line.startswith("••"))
    assert legend == ("•• g992   ++ g993   xx g994   oo g995   ** g996   ## g997   @@ g998   "
                      "%% g999")
    assert lines[lines.index(legend) + 1] == (
        "992 more groups not drawn: these are the 8 with the largest last value")


def test_an_x_column_is_not_scanned_and_may_hold_numbers(invoke, tmp_path: Path,
                                                          monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("x.csv").write_text("t,v\n10,1\n20,1\n40,1\n")
    result = ok(invoke("cumsum", "x.csv", "--x", "t", "-c", "t,v", "--to", "chart",
                       "--width", "40", "--height", "10"))
    lines = result.stdout.splitlines()
    assert lines[-4:] == [
        "  10          20          30          40",  # round ticks along t, 10 to 40
        "━━ v",  # t is not scanned, though -c names it: v alone is drawn
        "cumsum along rows of x.csv, 3 rows x 2",
        "columns; scanned: v"]


@pytest.mark.parametrize(("args", "message"), [
    (["--to", "csv", "--width", "40"],
     "Error: --width is for charts: add --to chart (or -o FILE.svg, -o FILE.png)\n"),
    (["--to", "table", "--x", "units"],
     "Error: --x is for charts: add --to chart (or -o FILE.svg, -o FILE.png)\n"),
    (["--to", "chart", "--width", "10"],
     "Error: --width 10: a terminal chart takes 30 to 1000 characters\n"),
    (["--to", "chart", "--height", "6"],
     "Error: --height 6: a terminal chart takes 8 to 1000 lines\n"),
    (["-o", "c.png", "--height", "20"],
     "Error: --height 20: an image chart takes 100 to 10000 pixels\n"),
    (["--to", "chart", "-o", "out/"],
     "Error: a chart is one picture of the whole run: -o names a file (FILE.svg, FILE.png, "
     "or a text file), not a folder\n"),
    (["--to", "chart", "--only-scanned", "--x", "date"],
     "Error: --only-scanned would leave out the --x column the chart needs; leave "
     "--only-scanned out\n"),
])
def test_chart_options_out_of_place_are_usage_errors(invoke, tmp_path: Path, monkeypatch,
                                                     args, message) -> None:
    monkeypatch.chdir(tmp_path)  # -o c.png and out/ would be written here
    result = invoke("cumsum", str(REPO / "sample_data/daily_sales.csv"), *args)
    assert (result.exit_code, result.stderr, result.stdout) == (2, message, "")


def test_indices_are_refused_for_a_chart(invoke) -> None:
    result = invoke("cummax", str(REPO / "sample_data/daily_sales.csv"), "--indices", "--to",
                    "chart")
    assert (result.exit_code, result.stderr) == (
        2, "Error: --indices: a chart draws the running values, not their positions; leave "
           "--indices out\n")


def test_an_x_that_is_not_a_number_or_a_date_is_one_error_line(invoke, write_file) -> None:
    path = write_file("bad.csv", "t,v\n2024-01-01,1\nlater,2\n")
    result = invoke("cumsum", str(path), "--x", "t", "--to", "chart")
    assert (result.exit_code, result.stderr) == (
        1, f"Error: {path}: row 2: --x 't': 'later' is not a date like the cells before it\n")


# On a terminal --------------------------------------------------------------------------

@pytest.mark.parametrize(("columns", "rows"), [(80, 24), (200, 50)])
def test_the_chart_fits_the_terminal(tmp_path: Path, columns: int, rows: int) -> None:
    _status, text = _pty(["cumsum", "sample_data/daily_sales.csv", "--to", "chart"],
                         columns, rows, REPO)
    lines = _fits(text, columns, rows)
    assert len(lines) == rows - 1  # and fills it, but for the line of the shell's prompt
    assert "\x1b[34m" in text  # colour: the first line is blue
    assert any(0x2800 <= ord(c) <= 0x28FF for c in text)  # braille dots
    assert "━━ units   ━━ revenue" in lines


def test_no_color_on_a_terminal_draws_without_colour(tmp_path: Path) -> None:
    _status, text = _pty(["cumsum", "sample_data/daily_sales.csv", "--to", "chart"], 80, 24,
                         REPO, env={"NO_COLOR": "1"})
    assert not re.search(r"\x1b\[(3\d|9\d)", text)  # no foreground colour at all
    _fits(text, 80, 24)


def test_a_hostile_name_never_reaches_the_terminal_raw(tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_text(f'"{HOSTILE}",b\n1,2\n3,4\n')
    _status, text = _pty(["cumsum", "h.csv", "--to", "chart"], 100, 30, tmp_path)
    assert "\x1b[2J" not in text and "\x1b]0" not in text and "\x07" not in text
    assert HOSTILE_SHOWN in SGR.sub("", text)


# Images ----------------------------------------------------------------------------------

def test_svg_is_xml_with_one_path_per_line(invoke, tmp_path: Path) -> None:
    target = tmp_path / "c.svg"
    ok(invoke("cumsum,cummax", str(REPO / "sample_data/daily_sales.csv"), "-c", "units",
              "--by", "store", "-o", str(target), "--width", "640", "--height", "320"))
    root = ET.parse(target).getroot()
    assert (root.get("width"), root.get("height")) == ("480pt", "240pt")  # 640 x 320 px
    groups = {g.get("id"): g for g in root.iter(f"{SVG_NS}g")
              if (g.get("id") or "").startswith("cumtool-line-")}
    assert sorted(groups) == [f"cumtool-line-{n}" for n in range(1, 5)]
    for group in groups.values():
        assert len(list(group.iter(f"{SVG_NS}path"))) == 1


def test_png_has_the_signature_and_the_asked_size(invoke, tmp_path: Path) -> None:
    target = tmp_path / "c.png"
    ok(invoke("cumsum", str(REPO / "sample_data/daily_sales.csv"), "-o", str(target),
              "--width", "321", "--height", "123"))
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR" and struct.unpack(">II", data[16:24]) == (321, 123)


def test_an_image_without_the_plot_extra_names_it_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "c.svg"
    target.write_text("before")
    # matplotlib made unimportable, as where the extra is not installed.
    code = ("import sys; sys.modules['matplotlib'] = None; "
            "from cumtool.launch import main; sys.argv = ['cumtool'] + sys.argv[1:]; main()")
    done = subprocess.run([sys.executable, "-c", code, "cumsum",
                           str(REPO / "sample_data/daily_sales.csv"), "-o", str(target)],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", "Error: drawing a chart as an SVG or PNG image needs the optional extra "
               "'plot': pip install 'cumtool[plot]' (from a checkout: pip install '.[plot]')\n")
    assert target.read_text() == "before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.svg"]


def test_a_failed_chart_leaves_no_file(invoke, write_file, tmp_path: Path) -> None:
    path = write_file("bad.csv", "t,v\n1,1\n2,2\nx,3\n")
    target = tmp_path / "c.svg"
    result = invoke("cumsum", str(path), "--x", "t", "-o", str(target), "--batch-rows", "1")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 3: --x 't': 'x' is not a number like the "
                             "cells before it\n")
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


def test_the_docs_svg_is_what_the_sample_draws(invoke, tmp_path: Path) -> None:
    """docs/cumsum_units.svg, drawn again: the same lines (their paths, point for point)."""
    target = tmp_path / "c.svg"
    ok(invoke("cumsum", str(REPO / "sample_data/daily_sales.csv"), "-c", "units", "--by",
              "store", "--x", "date", "-o", str(target), "--width", "800", "--height", "400"))

    def lines(path: Path) -> dict[str, str]:
        root = ET.parse(path).getroot()
        return {g.get("id") or "": next(g.iter(f"{SVG_NS}path")).get("d") or ""
                for g in root.iter(f"{SVG_NS}g")
                if (g.get("id") or "").startswith("cumtool-line-")}

    drawn = lines(target)
    assert sorted(drawn) == ["cumtool-line-1", "cumtool-line-2"]
    if os.environ.get("CUMTOOL_WRITE_DOCS"):
        (REPO / "docs/cumsum_units.svg").write_bytes(target.read_bytes())
    assert lines(REPO / "docs/cumsum_units.svg") == drawn, (
        "docs/cumsum_units.svg is out of date: CUMTOOL_WRITE_DOCS=1 redraws it")


# Decimation ------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [1, 7, 1000, 100_000])
def test_decimation_keeps_real_points_and_the_exact_extremes(batch: int) -> None:
    rng = np.random.default_rng(batch)
    y = np.cumsum(rng.normal(size=20_000))
    y[rng.choice(len(y), 50, replace=False)] = np.nan
    x = np.arange(1, len(y) + 1, dtype=np.float64)
    decimator = Decimator(100, integral=True)
    for start in range(0, len(y), batch):
        k = decimator.buckets(x[start:start + batch])
        rows = np.arange(start, min(start + batch, len(y)))
        decimator.line("a").add(k, rows, x[start:start + batch], y[start:start + batch])
    line = decimator.line("a")
    assert len(line) <= 2 * 100 + 1
    points = [p for run in line.runs() for p in run]
    truth = dict(zip(x.tolist(), y.tolist(), strict=True))
    assert all(truth[px] == py for px, py in points)  # every point is a real result
    ys = [py for _px, py in points]
    assert (min(ys), max(ys)) == (np.nanmin(y), np.nanmax(y))
    assert (line.finite_low, line.finite_high) == (np.nanmin(y), np.nanmax(y))
    assert line.last_value == y[-1]
    assert decimator.step == 128  # 20,000 rows over at most 200 buckets


def test_decimation_of_an_unsorted_float_x() -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(-3.0, 1e6, size=30_000)
    y = rng.normal(size=30_000)
    y[7] = np.inf
    decimator = Decimator(80, integral=False)
    for start in range(0, len(x), 999):
        part = slice(start, start + 999)
        k = decimator.buckets(x[part])
        rows = np.arange(start, min(start + 999, len(x)))
        decimator.line("a").add(k, rows, x[part], y[part])
    line = decimator.line("a")
    assert len(line) <= 2 * 80 + 1
    assert (decimator.x_low, decimator.x_high) == (x.min(), x.max())
    points = [p for run in line.runs() for p in run]
    truth = dict(zip(x.tolist(), y.tolist(), strict=True))
    assert all(truth[px] == py for px, py in points)
    # Joined bucket by bucket in x order (within a bucket, in row order).
    assert decimator.origin is not None and decimator.step is not None
    buckets = [(px - decimator.origin) // decimator.step for px, _py in points]
    assert buckets == sorted(buckets)
    finite = y[np.isfinite(y)]
    assert (line.finite_low, line.finite_high, line.infinite) == (finite.min(), finite.max(), 1)
    assert max(py for _px, py in points) == np.inf  # drawn, clipped by the drawing
    assert min(py for _px, py in points) == finite.min()


def test_batch_size_does_not_change_the_chart(invoke, write_file) -> None:
    rows = "".join(f"{(i * 7919) % 1000 - 500}\n" for i in range(5000))
    path = write_file("walk.csv", "v\n" + rows)
    charts = {ok(invoke("cumsum", str(path), "--to", "chart", "--batch-rows", str(n))).stdout
              for n in (3, 1000, 100_000)}
    assert len(charts) == 1


@pytest.mark.slow
def test_ten_million_rows_chart_in_bounded_memory(tmp_path: Path) -> None:
    """The peak RSS of a chart of 10M rows, read in small batches, stays far below what
    the rows would take (80 MB of results alone), near that of 1,000 rows."""
    peaks = {}
    for rows in (1000, 10_000_000):
        path = tmp_path / f"{rows}.parquet"
        values = np.arange(rows, dtype=np.int64) % 97 - 48
        pq.write_table(pa.table({"v": values, "w": values[::-1].copy()}), path,
                       row_group_size=1 << 20)
        code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
                "stdout=subprocess.DEVNULL); "
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        done = subprocess.run(
            [sys.executable, "-c", code, sys.executable, "-m", "cumtool", "cumsum", str(path),
             "--to", "chart", "--batch-rows", "65536"],
            capture_output=True, text=True, timeout=600, check=True,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        peaks[rows] = int(done.stdout) / 1024  # MiB
    assert peaks[10_000_000] < 256, peaks
    assert peaks[10_000_000] < peaks[1000] + 100, peaks


# Ticks -----------------------------------------------------------------------------------

def _day(text: str) -> float:
    return float(np.datetime64(text, "D").astype(np.int64))


def test_round_number_ticks() -> None:
    from cumtool.formats.chart import ticks

    assert ticks.frame(13.0, 977.0, 4) == (0.0, 1000.0, 500.0)
    assert ticks.frame(13.0, 977.0, 5) == (0.0, 1000.0, 200.0)
    assert ticks.frame(-0.13, 0.97, 6) == (-0.2, 1.0, 0.2)
    assert ticks.frame(5.0, 5.0, 4) == (2.0, 8.0, 2.0)  # one value: widened around it
    assert [ticks.number_label(v, 0.2) for v in ticks.number_ticks(-0.2, 1.0, 0.2)] == [
        "-0.2", "0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert ticks.number_label(2e20, 1e20) == "2e+20"


@pytest.mark.parametrize(("low", "high", "whole", "expected"), [
    ("2024-03-01", "2024-03-30", True,
     [("2024-03-04", "2024-03-04"), ("2024-03-11", "2024-03-11"),
      ("2024-03-18", "2024-03-18"), ("2024-03-25", "2024-03-25")]),  # Mondays
    ("2024-01-15", "2024-09-20", True,
     [("2024-03-01", "2024-03"), ("2024-05-01", "2024-05"), ("2024-07-01", "2024-07"),
      ("2024-09-01", "2024-09")]),
    ("2024-02-01", "2024-11-12", True,  # every other month from March, not from February
     [("2024-03-01", "2024-03"), ("2024-05-01", "2024-05"), ("2024-07-01", "2024-07"),
      ("2024-09-01", "2024-09"), ("2024-11-01", "2024-11")]),
    ("2001-03-01", "2024-09-20", True,
     [("2005-01-01", "2005"), ("2010-01-01", "2010"), ("2015-01-01", "2015"),
      ("2020-01-01", "2020")]),
    ("2024-01-15", "2024-01-16", True, [("2024-01-15", "2024-01-15"),
                                        ("2024-01-16", "2024-01-16")]),
])
def test_date_ticks(low: str, high: str, whole: bool, expected: list) -> None:
    from cumtool.formats.chart import ticks

    assert ticks.date_ticks(_day(low), _day(high), 5, whole_days=whole) == [
        (_day(day), label) for day, label in expected]


def test_time_ticks_within_a_day() -> None:
    from cumtool.formats.chart import ticks

    low = _day("2024-01-15")
    assert ticks.date_ticks(low + 0.2, low + 0.7, 4, whole_days=False) == [
        (low + 0.25, "2024-01-15T06:00"), (low + 0.375, "09:00"), (low + 0.5, "12:00"),
        (low + 0.625, "15:00")]


def test_a_timestamp_column_of_parquet_is_the_x_axis(invoke, tmp_path: Path,
                                                     monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    start = np.datetime64("2024-01-15T06:00", "s")
    times = pa.array(start + np.arange(4) * np.timedelta64(3 * 3600, "s"))
    pq.write_table(pa.table({"at": times, "kwh": [1.0, 2.0, 3.0, 4.0]}), "meter.parquet")
    result = ok(invoke("cumsum", "meter.parquet", "--x", "at", "--to", "chart", "--width",
                       "50", "--height", "10"))
    assert result.stdout.splitlines()[-4] == (
        "2024-01-15T06:00 09:00          12:00        15:00")


# Dates along --x in other layouts than ISO ------------------------------------------------

_MARCH = [(1, 0), (8, 1), (15, 2), (22, 3), (29, 4)]  # (day of March 2024, value)


def _x_labels(text: str) -> str:
    """The line of x tick labels: the one under the axis rule."""
    lines = text.splitlines()
    return next(lines[n + 1] for n, line in enumerate(lines) if "└" in line)


def _dated(layout: str) -> str:
    """A CSV of the March days written in `layout` (Python's strftime, which cumtool does
    not use to read them)."""
    import datetime

    return "day,v\n" + "".join(f'"{datetime.date(2024, 3, d).strftime(layout)}",{v}\n'
                               for d, v in _MARCH)


@pytest.mark.parametrize("layout", ["%Y-%m-%dT%H:%M", "%Y/%m/%d", "%d-%b-%y", "%d-%b-%Y",
                                    "%b %d, %Y", "%m/%d/%Y", "%d/%m/%Y"])
def test_dates_in_a_common_layout_draw_as_their_iso_dates(invoke, tmp_path: Path,
                                                          monkeypatch, layout: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("iso.csv").write_text(_dated("%Y-%m-%d"))
    Path("alt.csv").write_text(_dated(layout))
    args = ("--x", "day", "--to", "chart", "--width", "50", "--height", "10")
    drawn = ok(invoke("cumsum", "alt.csv", *args)).stdout
    assert drawn.replace("alt.csv", "iso.csv") == ok(invoke("cumsum", "iso.csv", *args)).stdout
    assert _x_labels(drawn).split() == ["2024-03-04", "2024-03-18"]  # Mondays, as for ISO


def test_slash_dates_with_a_first_field_above_12_anywhere_are_day_month(invoke, write_file
                                                                        ) -> None:
    # 01/02 and 03/04 alone could be either; 13/04 says day/month, though it comes last
    # and each batch is one row: the rows before it wait for it.
    path = write_file("dm.csv", "d,v\n01/02/2024,1\n03/04/2024,2\n13/04/2024,3\n")
    result = ok(invoke("cumsum", str(path), "--x", "d", "--to", "chart", "--width", "40",
                       "--height", "8", "--batch-rows", "1"))
    assert _x_labels(result.stdout).split() == ["2024-02", "2024-03", "2024-04"]


def test_ambiguous_slash_dates_are_refused_and_x_format_reads_them(invoke, write_file
                                                                   ) -> None:
    path = write_file("amb.csv", "d,v\n01/02/2024,1\n03/04/2024,2\n12/11/2024,3\n")
    args = ("cumsum", str(path), "--x", "d", "--to", "chart", "--width", "60", "--height", "8")
    result = invoke(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", f"Error: {path}: --x 'd': slash dates such as '01/02/2024' read as month/day "
               "and as day/month, and no field above 12 tells which: give --x-format "
               "%m/%d/%Y or --x-format %d/%m/%Y\n")
    # Day/month: 1 February to 12 November, so 1 April is nearer the left than for
    # month/day: 2 January to 11 December.
    assert _x_labels(ok(invoke(*args, "--x-format", "%d/%m/%Y")).stdout) == (
        "            2024-04           2024-07           2024-10")
    assert _x_labels(ok(invoke(*args, "--x-format", "%m/%d/%Y")).stdout) == (
        "               2024-04        2024-07        2024-10")


def test_ambiguous_slash_dates_wait_for_200000_rows_at_most(invoke, write_file) -> None:
    # The rows wait in memory for a date that tells: not for ever.
    path = write_file("long.csv", "d,v\n" + "01/02/2024,1\n" * 260_000 + "13/02/2024,1\n")
    result = invoke("cumsum", str(path), "--x", "d", "--to", "chart", "--batch-rows",
                    "50000")
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", f"Error: {path}: --x 'd': slash dates such as '01/02/2024' read as month/day "
               "and as day/month, and no field above 12 in its first 200000 rows tells "
               "which: give --x-format %m/%d/%Y or --x-format %d/%m/%Y\n")


def test_x_format_reads_a_layout_of_its_own_and_names_a_cell_it_cannot(invoke, write_file
                                                                       ) -> None:
    path = write_file("dots.csv", "d,v\n1.3.2024 06:00,1\n1.3.2024 18:00,2\n2.3.2024 6:00,3\n")
    args = ("cumsum", str(path), "--x", "d", "--to", "chart", "--width", "40", "--height", "8")
    assert _x_labels(ok(invoke(*args, "--x-format", "%d.%m.%Y %H:%M")).stdout) == (
        "     2024-03-01T12:00 2024-03-02T00:00")  # every 12 hours, 06:00 to 06:00
    result = invoke(*args, "--x-format", "%d.%m.%Y %H:%M:%S")
    assert (result.exit_code, result.stderr) == (
        1, f"Error: {path}: row 1: --x 'd': '1.3.2024 06:00' does not match --x-format "
           "'%d.%m.%Y %H:%M:%S'\n")


def test_a_date_column_mixing_layouts_names_the_first_cell_off_the_layout(invoke, write_file
                                                                          ) -> None:
    path = write_file("mixed.csv", "d,v\n2012/01/01,1\n2012/01/02,2\n03-Jan-12,3\n")
    result = invoke("cumsum", str(path), "--x", "d", "--to", "chart")
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", f"Error: {path}: row 3: --x 'd': '03-Jan-12' is not a date like the cells "
               "before it (%Y/%m/%d); --x-format FMT reads one layout\n")


def test_a_slash_date_column_turning_iso_names_both_slash_layouts(invoke, write_file
                                                                  ) -> None:
    path = write_file("turn.csv", "d,v\n01/02/2024,1\n2024-03-01,2\n")
    result = invoke("cumsum", str(path), "--x", "d", "--to", "chart")
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", f"Error: {path}: row 2: --x 'd': '2024-03-01' is not a date like the cells "
               "before it (%m/%d/%Y or %d/%m/%Y); --x-format FMT reads one layout\n")


def test_a_first_x_cell_in_no_layout_names_the_layouts_tried(invoke, write_file) -> None:
    path = write_file("odd.csv", "d,v\n,0\n2024.03.01,1\n")
    result = invoke("cumsum", str(path), "--x", "d", "--to", "chart")
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", f"Error: {path}: row 2: --x 'd': '2024.03.01' is not a number or a date in a "
               "layout --x reads (ISO, %Y/%m/%d, %d-%b-%y, %d-%b-%Y, '%b %d, %Y', %m/%d/%Y "
               "or %d/%m/%Y); --x-format FMT reads another\n")


@pytest.mark.parametrize(("args", "message"), [
    (["--to", "chart", "--x-format", "%d/%m/%Y"],
     "Error: --x-format is the layout of the --x column's dates: add --x COL\n"),
    (["--to", "chart", "--x", "date", "--x-format", "d/m/Y"],
     "Error: --x-format 'd/m/Y' is not a strftime layout: write it with % fields, e.g. "
     "%d/%m/%Y\n"),
    (["--to", "csv", "--x-format", "%d/%m/%Y"],
     "Error: --x-format is for charts: add --to chart (or -o FILE.svg, -o FILE.png)\n"),
])
def test_x_format_out_of_place_is_a_usage_error(invoke, args, message) -> None:
    result = invoke("cumsum", str(REPO / "sample_data/daily_sales.csv"), *args)
    assert (result.exit_code, result.stderr, result.stdout) == (2, message, "")


def test_x_format_reads_a_parquet_column_of_whole_numbers(invoke, tmp_path: Path,
                                                          monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"d": [20240301, 20240308, 20240315], "v": [1, 2, 3]}),
                   "i.parquet")
    result = ok(invoke("cumsum", "i.parquet", "--x", "d", "--x-format", "%Y%m%d", "--to",
                       "chart", "--width", "40", "--height", "8"))
    assert _x_labels(result.stdout) == "      2024-03-04        2024-03-11"


def test_x_format_of_a_parquet_date_column_is_refused(invoke, tmp_path: Path) -> None:
    import datetime

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"d": [datetime.date(2024, 3, 1)], "v": [1]}), path)
    result = invoke("cumsum", str(path), "--x", "d", "--x-format", "%Y", "--to", "chart")
    assert (result.exit_code, result.stderr) == (
        1, f"Error: {path}: --x-format reads text, and --x 'd' holds date32[day]; leave "
           "--x-format out\n")


# Several scanned columns under --by: a panel each ------------------------------------------

SHOPS = "shop,units,revenue\nA,1,100\nB,2,300\nA,3,200\nB,1,500\nA,2,100\nB,4,600\n"


def test_by_with_two_scanned_columns_draws_a_panel_each(invoke, tmp_path: Path,
                                                         monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("shops.csv").write_text(SHOPS)
    result = ok(invoke("cumsum", "shops.csv", "--by", "shop", "--to", "chart", "--width",
                       "40", "--height", "16"))
    # units: A 1, 4, 6 and B 2, 3, 7 (0 to 10); revenue: A 100, 300, 400 and B 300, 800,
    # 1400 (0 to 2000), each on its own axis, one x axis (rows 1 to 6) under both.
    assert result.stdout == (
        "     units\n"
        "  10 ┤\n"
        "     │                              ++++\n"
        "   5 ┤          ••••••••••••••++++++\n"
        "     │    •••+++++++++++++++++\n"
        "   0 ┤••••\n"
        "     revenue\n"
        "2000 ┤\n"
        "1000 ┤                           +++++++\n"
        "     │              +++++++++++++\n"
        "   0 ┤•••••••+++++++••••••\n"
        "     └──────────────────────────┬───────\n"
        "                                5\n"
        "•• A   ++ B\n"
        "cumsum along rows of shops.csv, 6 rows x\n"
        "3 columns; scanned: units, revenue\n")


def test_panels_that_do_not_fit_are_named_under_the_legend(invoke, tmp_path: Path,
                                                           monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("shops.csv").write_text(SHOPS)
    result = ok(invoke("cumsum", "shops.csv", "--by", "shop", "--to", "chart", "--width",
                       "40", "--height", "12"))
    lines = result.stdout.splitlines()
    assert len(lines) == 12
    assert lines[0] == "   units" and "revenue" not in lines[:-2]
    assert lines[-5:-2] == ["•• A   ++ B", "not drawn, for want of lines: revenue",
                            "(-c picks columns)"]


def test_panels_name_the_op_where_there_are_several(invoke, tmp_path: Path,
                                                    monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("shops.csv").write_text(SHOPS)
    result = ok(invoke("cumsum,cummax", "shops.csv", "--by", "shop", "--to", "chart",
                       "--width", "80", "--height", "24"))
    lines = result.stdout.splitlines()
    titles = [line for line in lines if line.lstrip() in ("units", "revenue")][:2]
    assert titles == ["     units", "     revenue"]  # the panels' titles, over their axes
    assert "•• A: cumsum   ++ A: cummax   xx B: cumsum   oo B: cummax" in lines


def test_of_many_groups_in_panels_those_ending_highest_in_the_first_are_drawn(
        invoke, write_file) -> None:
    # Group g<i> has units i (g19 .. g12 end highest) and revenue -i.
    rows = "".join(f"g{i},{i},{-i}\n" for i in range(20))
    path = write_file("groups.csv", "key,units,revenue\n" + rows)
    result = ok(invoke("cumsum", str(path), "--by", "key", "--to", "chart", "--width", "200",
                       "--height", "30"))
    lines = result.stdout.splitlines()
    legend = next(line for line in lines if line.startswith("••"))
    assert legend == ("•• g12   ++ g13   xx g14   oo g15   ** g16   ## g17   @@ g18   "
                      "%% g19")
    assert lines[lines.index(legend) + 1] == (
        "12 more groups not drawn: these are the 8 with the largest last value of units")


def test_without_by_several_columns_share_one_axis(invoke, tmp_path: Path,
                                                   monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("shops.csv").write_text(SHOPS)
    result = ok(invoke("cumsum", "shops.csv", "--to", "chart", "--width", "40", "--height",
                       "12"))
    lines = result.stdout.splitlines()
    assert not any(line.strip() in ("units", "revenue") for line in lines)
    assert "•• units   ++ revenue" in lines


@pytest.mark.parametrize("args", [[], ["--by", "store"], ["--by", "store", "-c", "units"]])
@pytest.mark.parametrize(("width", "height"), [(30, 8), (45, 10), (80, 12)])
def test_a_small_chart_keeps_to_its_height_cutting_its_caption_short(invoke, args, width,
                                                                     height) -> None:
    result = ok(invoke("cumsum", str(REPO / "sample_data/daily_sales.csv"), "--to", "chart",
                       "--width", str(width), "--height", str(height), *args))
    lines = result.stdout.splitlines()
    assert len(lines) <= height
    assert any(line.startswith("cumsum along rows of") for line in lines)  # the caption
    assert max(len(line) for line in lines) <= width


def test_an_svg_of_panels_has_an_axes_each_and_a_path_per_line(invoke, tmp_path: Path
                                                               ) -> None:
    (tmp_path / "shops.csv").write_text(SHOPS)
    target = tmp_path / "c.svg"
    ok(invoke("cumsum", str(tmp_path / "shops.csv"), "--by", "shop", "-o", str(target),
              "--width", "640", "--height", "480"))
    root = ET.parse(target).getroot()
    ids = [g.get("id") or "" for g in root.iter(f"{SVG_NS}g")]
    assert [i for i in ids if i.startswith("axes_")] == ["axes_1", "axes_2"]
    assert [i for i in ids if i.startswith("cumtool-line-")] == [
        f"cumtool-line-{n}" for n in range(1, 5)]  # A and B, in each panel


def test_panels_on_a_terminal_of_full_height_leave_the_prompt_its_line(tmp_path: Path
                                                                       ) -> None:
    _status, text = _pty(["cumsum", "sample_data/daily_sales.csv", "--by", "store", "--x",
                          "date", "--to", "chart"], 80, 24, REPO)
    lines = _fits(text, 80, 24)
    assert len(lines) == 23  # the 24th is the shell's prompt's
    assert [line.strip() for line in lines[:1]] == ["units"]
    assert "revenue" in [line.strip() for line in lines]
    assert lines[-2:] == ["cumsum along rows of sample_data/daily_sales.csv, 60 rows x 4 "
                          "columns; scanned:", "units, revenue"]


# --period with --x its time column: a line per period, over the day of the period ------

def _drawn(monkeypatch, invoke, *args):
    """The Chart a run draws (its lines' points), and the run."""
    import cumtool.formats.chart.chart as chart_module

    seen = []
    draw = chart_module.draw_text

    def spy(chart, *rest):
        seen.append(chart)
        return draw(chart, *rest)

    monkeypatch.setattr(chart_module, "draw_text", spy)
    result = invoke(*args)
    return (seen[0] if seen else None), result


@pytest.mark.parametrize(("start", "names"), [
    (None, ["2023", "2024"]),
    ("04-01", ["2022-04-01", "2023-04-01", "2024-04-01"]),
])
def test_a_period_chart_draws_a_line_per_period_over_its_days(monkeypatch, invoke,
                                                              write_file, start, names):
    import datetime as dt

    days = [dt.date(2023, 1, 1) + dt.timedelta(days=k * 29) for k in range(26)]
    text = "date,mm\n" + "".join(f"{d.isoformat()},{k + 1}\n" for k, d in enumerate(days))
    path = write_file("rain.csv", text)
    extra = [] if start is None else ["--year-start", start]
    chart, result = _drawn(monkeypatch, invoke, "cumsum", str(path), "--period", "year",
                           "--time", "date", "--x", "date", *extra, "--to", "chart",
                           "--width", "100", "--height", "30")
    assert result.exit_code == 0, result.stderr
    assert chart is not None
    assert (chart.x_kind, chart.x_name) == ("number", "day of the year")
    assert chart.legend == names
    # Each line's points: (day of its year, that year's running total), by plain
    # arithmetic per year.
    expected: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    totals: dict[str, int] = {}
    for k, d in enumerate(days):
        if start is None:
            first = dt.date(d.year, 1, 1)
            name = str(d.year)
        else:
            year = d.year if (d.month, d.day) >= (4, 1) else d.year - 1
            first = dt.date(year, 4, 1)
            name = first.isoformat()
        totals[name] = totals.get(name, 0) + k + 1
        expected[name].append((float((d - first).days), float(totals[name])))
    drawn = {line.name: [p for run in line.runs for p in run]
             for panel in chart.panels for line in panel.lines}
    assert drawn == expected


def test_a_period_chart_with_x_another_column_is_the_plain_chart(monkeypatch, invoke,
                                                                 write_file):
    path = write_file("r.csv", "date,n,mm\n2023-01-01,1,5\n2024-01-01,2,7\n")
    chart, result = _drawn(monkeypatch, invoke, "cumsum", str(path), "-c", "mm", "--period",
                           "year", "--time", "date", "--x", "n", "--to", "chart")
    assert result.exit_code == 0, result.stderr
    assert chart is not None
    assert (chart.x_kind, chart.x_name, chart.legend) == ("number", "n", ["mm"])
    assert [p for run in chart.panels[0].lines[0].runs for p in run] == [(1.0, 5.0),
                                                                          (2.0, 7.0)]


@pytest.mark.parametrize(("unit", "start", "first_day", "name"), [
    ("year", (1, 1), "2024-01-01", "2024"),
    ("year", (10, 1), "2023-10-01", "2023-10-01"),
    ("quarter", (1, 1), "2024-04-01", "2024-Q2"),
    ("month", (1, 1), "2024-03-01", "2024-03"),
    ("week", (1, 1), "2024-12-30", "2025-W01"),
    ("day", (1, 1), "2024-02-29", "2024-02-29"),
])
def test_a_period_is_named_by_its_first_day(unit, start, first_day, name):
    import datetime as dt

    from cumtool.formats.chart.chart import _period_name
    from cumtool.periods import Period

    days = (dt.date.fromisoformat(first_day) - dt.date(1970, 1, 1)).days
    assert _period_name(Period(unit, *start), days) == name
