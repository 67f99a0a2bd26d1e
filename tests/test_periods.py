"""--period/--time/--year-start, --share, and ewma --times (SEMANTICS.md, "Periods and
shares"). Every expectation is plain sequential arithmetic per group, written here: the
period of a date from the datetime module, the running values by a loop over the rows."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result

from tests.helpers import ok

Invoke = Callable[..., Result]
Write = Callable[[str, bytes | str], Path]


# Reference: the period of a date, and running values per group --------------------------

def add_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, day.day)


def period_start(day: dt.date, unit: str, year_start: tuple[int, int] = (1, 1)) -> dt.date:
    """The first day of `day`'s period: found by walking candidate starts, not by the
    month arithmetic cumtool uses."""
    if unit == "day":
        return day
    if unit == "week":
        return day - dt.timedelta(days=day.weekday())  # ISO: Monday first
    if unit == "month":
        return day.replace(day=1)
    month, first = year_start
    start = dt.date(day.year + 1, month, first)
    while start > day:
        start = dt.date(start.year - 1, month, first)
    if unit == "year":
        return start
    while add_months(start, 3) <= day:
        start = add_months(start, 3)
    return start


def running(values: Sequence[float | None], keys: Sequence[Any], op: str = "cumsum",
            exclusive: bool = False, reverse: bool = False) -> list[float | None]:
    """cumsum, cummax or cumcount down the rows, a scan per key; a missing value stays
    missing (cumcount: counts the present ones)."""
    order = range(len(values) - 1, -1, -1) if reverse else range(len(values))
    carry: dict[Any, float] = {}
    out: list[float | None] = [None] * len(values)
    for i in order:
        key, value = keys[i], values[i]
        before = carry.get(key)
        if op == "cumcount":  # a missing cell's count is missing, as the cell is
            count = (before or 0) + (value is not None)
            out[i] = None if value is None else before or 0 if exclusive else count
            carry[key] = count
            continue
        if value is None:
            out[i] = None
            continue
        if op == "cumsum":
            now = value if before is None else before + value
        else:
            now = value if before is None else max(before, value)
        out[i] = (0 if before is None else before) if exclusive and op == "cumsum" else (
            before if exclusive else now)
        carry[key] = now
    return out


def csv_rows(text: str) -> list[list[str]]:
    return [line.split(",") for line in text.splitlines()[1:]]


def shown(value: float | None) -> str:
    """A result as cumtool writes it in CSV: integers as integers, missing empty."""
    if value is None:
        return ""
    return str(int(value)) if isinstance(value, int) else repr(float(value))


def random_days(count: int, seed: int) -> list[dt.date]:
    rng = random.Random(seed)
    first = dt.date(2019, 11, 20)
    return [first + dt.timedelta(days=rng.randrange(0, 3 * 366)) for _ in range(count)]


def sales_csv(days: Sequence[dt.date | None], stores: Sequence[str],
              units: Sequence[int | None]) -> str:
    lines = ["date,store,units"]
    for day, store, value in zip(days, stores, units, strict=True):
        lines.append(f"{'' if day is None else day.isoformat()},{store},"
                     f"{'' if value is None else value}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def sales() -> tuple[list[dt.date], list[str], list[int]]:
    """Rows out of date order: a period comes back after others have started."""
    rng = random.Random(36)
    days = random_days(300, 7)
    stores = [rng.choice("abc") for _ in days]
    units = [rng.randrange(-50, 100) for _ in days]
    return days, stores, units


# --period: each unit, --year-start, --by --------------------------------------------------

@pytest.mark.parametrize("unit", ["day", "week", "month", "quarter", "year"])
def test_each_period_is_a_group(invoke: Invoke, write_file: Write, sales: Any,
                                unit: str) -> None:
    days, stores, units = sales
    path = write_file("sales.csv", sales_csv(days, stores, units))
    out = ok(invoke("cumsum", str(path), "--period", unit, "--time", "date",
                    "--batch-rows", "17")).stdout
    keys = [period_start(day, unit) for day in days]
    expected = running(units, keys)
    assert [row[2] for row in csv_rows(out)] == [shown(v) for v in expected]
    # The date and store pass through as they were; the output gains no column.
    assert out.splitlines()[0] == "date,store,units"
    assert [row[0] for row in csv_rows(out)] == [d.isoformat() for d in days]


@pytest.mark.parametrize("unit", ["quarter", "year"])
@pytest.mark.parametrize("start", ["04-01", "10-01"])
def test_year_start_moves_years_and_quarters(invoke: Invoke, write_file: Write,
                                             sales: Any, unit: str, start: str) -> None:
    days, stores, units = sales
    path = write_file("sales.csv", sales_csv(days, stores, units))
    out = ok(invoke("cumsum", str(path), "--period", unit, "--time", "date",
                    "--year-start", start)).stdout
    month = int(start[:2])
    keys = [period_start(day, unit, (month, 1)) for day in days]
    assert [row[2] for row in csv_rows(out)] == [shown(v) for v in running(units, keys)]


def test_year_start_on_a_later_day(invoke: Invoke, write_file: Write) -> None:
    """UK tax years start on 6 April: the 5th still belongs to the year before."""
    days = [dt.date(2024, 4, 5), dt.date(2024, 4, 6), dt.date(2024, 7, 5),
            dt.date(2024, 7, 6), dt.date(2025, 4, 5), dt.date(2025, 4, 6)]
    units = [1, 2, 4, 8, 16, 32]
    path = write_file("tax.csv", sales_csv(days, ["a"] * 6, units))
    for unit in ("year", "quarter"):
        out = ok(invoke("cumsum", str(path), "--period", unit, "--time", "date",
                        "--year-start", "04-06")).stdout
        keys = [period_start(day, unit, (4, 6)) for day in days]
        assert [row[2] for row in csv_rows(out)] == [shown(v) for v in running(units, keys)]


def test_iso_weeks_across_a_year_boundary(invoke: Invoke, write_file: Write) -> None:
    days = [dt.date(2020, 12, 27), dt.date(2020, 12, 28), dt.date(2020, 12, 31),
            dt.date(2021, 1, 1), dt.date(2021, 1, 3), dt.date(2021, 1, 4)]
    units = [1, 2, 4, 8, 16, 32]
    path = write_file("weeks.csv", sales_csv(days, ["a"] * 6, units))
    out = ok(invoke("cumsum", str(path), "--period", "week", "--time", "date")).stdout
    # 2020-12-28 .. 2021-01-03 is ISO week 53 of 2020; the 27th (a Sunday) ends week 52.
    assert [row[2] for row in csv_rows(out)] == ["1", "2", "6", "14", "30", "32"]
    keys = [period_start(day, "week") for day in days]
    assert [row[2] for row in csv_rows(out)] == [shown(v) for v in running(units, keys)]


def test_period_with_by(invoke: Invoke, write_file: Write, sales: Any) -> None:
    days, stores, units = sales
    path = write_file("sales.csv", sales_csv(days, stores, units))
    out = ok(invoke("cumsum", str(path), "--period", "month", "--time", "date",
                    "--by", "store", "--batch-rows", "10")).stdout
    keys = [(store, period_start(day, "month")) for day, store in zip(days, stores, strict=True)]
    assert [row[2] for row in csv_rows(out)] == [shown(v) for v in running(units, keys)]


def test_period_exclusive_and_reverse(invoke: Invoke, write_file: Write, sales: Any) -> None:
    days, stores, units = sales
    path = write_file("sales.csv", sales_csv(days, stores, units))
    keys = [period_start(day, "week") for day in days]
    for flags, expected in (
            (("--exclusive",), running(units, keys, exclusive=True)),
            (("--reverse",), running(units, keys, reverse=True)),
            (("--reverse", "--exclusive"), running(units, keys, exclusive=True,
                                                   reverse=True))):
        out = ok(invoke("cumsum", str(path), "--period", "week", "--time", "date",
                        "--batch-rows", "23", *flags)).stdout
        assert [row[2] for row in csv_rows(out)] == [shown(v) for v in expected], flags


def test_period_with_several_ops(invoke: Invoke, write_file: Write, sales: Any) -> None:
    days, stores, units = sales
    path = write_file("sales.csv", sales_csv(days, stores, units))
    out = ok(invoke("cumsum,cummax,cumcount", str(path), "--period", "quarter",
                    "--time", "date", "-c", "units", "--batch-rows", "31")).stdout
    assert out.splitlines()[0] == "date,store,units,units_cumsum,units_cummax,units_cumcount"
    keys = [period_start(day, "quarter") for day in days]
    rows = csv_rows(out)
    for column, op in ((3, "cumsum"), (4, "cummax"), (5, "cumcount")):
        assert [row[column] for row in rows] == [shown(v) for v in running(units, keys, op)]


def test_period_with_reset(invoke: Invoke, write_file: Write) -> None:
    text = ("date,units,restart\n2024-01-01,1,0\n2024-02-01,2,0\n2024-01-02,4,1\n"
            "2024-02-02,8,0\n2024-01-03,16,0\n")
    path = write_file("reset.csv", text)
    out = ok(invoke("cumsum", str(path), "--period", "month", "--time", "date",
                    "--reset", "restart", "-c", "units")).stdout
    # January: 1, then a fresh run at the reset row: 4, 20; February: 2, 10.
    assert [row[1] for row in csv_rows(out)] == ["1", "2", "4", "10", "20"]


def test_datetimes_and_missing_times(invoke: Invoke, write_file: Write) -> None:
    """Datetimes (with a zone: the date as written, the zone's calendar) and dates mix in
    one column; a missing time, empty or an NA marker, is its own group."""
    cells = ["2024-01-31T23:59:59", "", "2024-02-01 00:00", "NA", "2024-01-02",
             "2024-02-29T23:30:00+02:00", "2024-03-01T00:10:00Z", ""]
    units = [1, 2, 4, 8, 16, 32, 64, 128]
    text = "when,units\n" + "".join(f"{c},{u}\n" for c, u in zip(cells, units, strict=True))
    path = write_file("times.csv", text)
    out = ok(invoke("cumsum", str(path), "--period", "month", "--time", "when")).stdout
    keys = [None if c in ("", "NA") else dt.date.fromisoformat(c[:10]).replace(day=1)
            for c in cells]
    assert [row[1] for row in csv_rows(out)] == [shown(v) for v in running(units, keys)]
    assert [row[0] for row in csv_rows(out)] == cells


def test_typed_dates_and_zoned_timestamps(invoke: Invoke, write_file: Write) -> None:
    """Parquet: a date column, and a timestamp with a zone read in that zone's calendar
    (02:00 UTC on 1 March is 29 February in New York)."""
    utc = [dt.datetime(2024, 2, 29, 12, tzinfo=dt.timezone.utc),
           dt.datetime(2024, 3, 1, 2, tzinfo=dt.timezone.utc),
           dt.datetime(2024, 3, 1, 6, tzinfo=dt.timezone.utc), None]
    table = pa.table({
        "at": pa.array(utc, pa.timestamp("us", tz="America/New_York")),
        "day": pa.array([dt.date(2024, 2, 1), dt.date(2024, 3, 1), dt.date(2024, 2, 2),
                         None], pa.date32()),
        "units": pa.array([1, 2, 4, 8], pa.int64())})
    path = write_file("t.parquet", b"")
    pq.write_table(table, path)
    out = ok(invoke("cumsum", str(path), "--period", "month", "--time", "at",
                    "--to", "csv", "-c", "units")).stdout
    assert [row[2] for row in csv_rows(out)] == ["1", "3", "4", "8"]
    out = ok(invoke("cumsum", str(path), "--period", "month", "--time", "day",
                    "--to", "csv", "-c", "units")).stdout
    assert [row[2] for row in csv_rows(out)] == ["1", "2", "5", "8"]


def test_json_lines_times(invoke: Invoke, write_file: Write) -> None:
    lines = [{"t": "2024-01-05", "v": 1}, {"t": "2024-02-05", "v": 2},
             {"t": "2024-01-06T08:00", "v": 4}, {"t": None, "v": 8}]
    path = write_file("e.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    out = ok(invoke("cumsum", str(path), "--period", "month", "--time", "t")).stdout
    assert [json.loads(line)["v"] for line in out.splitlines()] == [1, 2, 5, 8]


def test_state_split_over_two_files_is_one_run(invoke: Invoke, write_file: Write,
                                               tmp_path: Path, sales: Any) -> None:
    """A month that spans two days' files goes on: the period is saved with the keys."""
    days, stores, units = sales
    values = [u / 7 for u in units]  # floats: the bits must equal one run's
    whole = "date,store,units\n" + "".join(
        f"{d.isoformat()},{s},{v!r}\n" for d, s, v in zip(days, stores, values, strict=True))
    lines = whole.splitlines(keepends=True)
    first = write_file("day1.csv", "".join(lines[:151]))
    second = write_file("day2.csv", lines[0] + "".join(lines[151:]))
    both = write_file("all.csv", whole)
    flags = ("--period", "month", "--time", "date", "--by", "store")
    one = ok(invoke("cumsum", str(both), *flags)).stdout
    state = str(tmp_path / "state.json")
    part1 = ok(invoke("cumsum", str(first), *flags, "--state", state)).stdout
    part2 = ok(invoke("cumsum", str(second), *flags, "--state", state)).stdout
    assert part1 + part2.split("\n", 1)[1] == one
    keys = [(s, period_start(d, "month")) for d, s in zip(days, stores, strict=True)]
    assert [float(row[2]) for row in csv_rows(one)] == running(values, keys)
    # A state made without --period does not go on with it.
    plain = str(tmp_path / "plain.json")
    ok(invoke("cumsum", str(first), "--by", "store", "--state", plain))
    refused = invoke("cumsum", str(second), *flags, "--state", plain)
    assert refused.exit_code == 2, refused.stderr
    assert refused.stderr.startswith("Error: ")


# --period: what is refused ----------------------------------------------------------------

def test_bad_date_names_row_line_and_column(invoke: Invoke, write_file: Write) -> None:
    text = "date,units\n" + "2024-01-01,1\n" * 5 + "\n2024-13-01,2\n"
    path = write_file("bad.csv", text)
    result = invoke("cumsum", str(path), "--period", "month", "--time", "date",
                    "--batch-rows", "2")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {path}: column 'date', row 6 (line 8): '2024-13-01' is not a date or time "
        "as --time reads them (ISO 8601: 2024-03-01, 2024-03-01T09:30, "
        "2024-03-01 09:30:00+02:00)\n")


def test_mixed_layouts_give_one_line(invoke: Invoke, write_file: Write) -> None:
    path = write_file("mixed.csv", "date,units\n2024-03-01,1\n03/02/2024,2\n2024-03-03,3\n")
    result = invoke("cumsum", str(path), "--period", "day", "--time", "date")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {path}: column 'date', row 2 (line 3): '03/02/2024' is not a date or time "
        "as --time reads them (ISO 8601: 2024-03-01, 2024-03-01T09:30, "
        "2024-03-01 09:30:00+02:00)\n")


def test_empty_and_numeric_time_columns(invoke: Invoke, write_file: Write) -> None:
    path = write_file("empty.csv", "date,units\n,1\n,2\n")
    result = invoke("cumsum", str(path), "--period", "day", "--time", "date")
    assert (result.exit_code, result.stderr) == (1, (
        f"Error: {path}: --time column 'date' is empty: it holds no dates to tell the "
        "periods by\n"))
    path = write_file("ymd.csv", "date,units\n20240301,1\n20240302,2\n")
    result = invoke("cumsum", str(path), "--period", "day", "--time", "date")
    assert (result.exit_code, result.stderr) == (1, (
        f"Error: {path}: --time column 'date' holds int, not dates or times (a date or "
        "timestamp column, or ISO text such as 2024-03-01)\n"))


@pytest.mark.parametrize(("args", "message"), [
    (("--period", "month"), "--period month needs --time COL, the column of dates or "
                            "times that tells each row's period"),
    (("--time", "date"), "--time names the column whose dates make the periods of "
                         "--period: add --period day|week|month|quarter|year"),
    (("--period", "month", "--time", "date", "--year-start", "04-01"),
     "--year-start moves the start of years and quarters; --period month does not use it"),
    (("--period", "year", "--time", "date", "--year-start", "02-30"),
     "--year-start '02-30' is not a day of the year as MM-DD from 01-01 to 12-28 (e.g. "
     "04-01, 10-01)"),
    (("--period", "year", "--time", "date", "-c", "date,units"),
     "column 'date' is the --time column: it tells each row's period and is not scanned; "
     "leave it out of -c"),
    (("--period", "day", "--time", "date", "--axis", "columns"),
     "--period makes groups of rows; it cannot be used with --axis columns"),
    (("--period", "fortnight", "--time", "date"), None),
])
def test_usage_errors(invoke: Invoke, write_file: Write, args: tuple[str, ...],
                      message: str | None) -> None:
    path = write_file("s.csv", "date,units\n2024-01-01,1\n")
    result = invoke("cumsum", str(path), *args)
    if message is None:  # Click's own: not a choice
        assert result.exit_code == 2
        assert result.stderr.startswith("Error: Invalid value for '--period': 'fortnight'")
        return
    assert (result.exit_code, result.stderr) == (2, f"Error: {message}\n")


# --share -----------------------------------------------------------------------------------

def shares(values: Sequence[float | None], keys: Sequence[Any], op: str = "cumsum",
           exclusive: bool = False, reverse: bool = False) -> list[float | None]:
    """Each running value over its group's final one (the inclusive scan's last value):
    missing where the value is, and where that final value is 0."""
    inclusive = running(values, keys, op, reverse=reverse)
    order = range(len(values) - 1, -1, -1) if reverse else range(len(values))
    final: dict[Any, float] = {}
    for i in order:
        if inclusive[i] is not None:
            final[keys[i]] = float(inclusive[i])  # type: ignore[arg-type]
    out: list[float | None] = []
    for value, key in zip(running(values, keys, op, exclusive, reverse), keys, strict=True):
        whole = final.get(key)
        out.append(None if value is None or whole is None or whole == 0
                   else float(value) / whole)
    return out


def floats(text: str, column: int) -> list[float | None]:
    return [None if row[column] == "" else float(row[column]) for row in csv_rows(text)]


@pytest.mark.parametrize("flags", [(), ("--exclusive",), ("--reverse",),
                                   ("--reverse", "--exclusive")])
def test_share_of_the_whole_column(invoke: Invoke, write_file: Write, sales: Any,
                                   flags: tuple[str, ...]) -> None:
    units = sales[2]
    values: list[float | None] = [u / 4 for u in units]
    values[5] = None
    path = write_file("s.csv", "units,tag\n" + "".join(
        f"{'' if v is None else repr(v)},x\n" for v in values))
    out = ok(invoke("cumsum", str(path), "--share", "--batch-rows", "29", *flags)).stdout
    keys = [0] * len(values)
    assert floats(out, 0) == shares(values, keys, exclusive="--exclusive" in flags,
                                    reverse="--reverse" in flags)


def test_share_per_group_and_period(invoke: Invoke, write_file: Write, sales: Any) -> None:
    days, stores, units = sales
    path = write_file("sales.csv", sales_csv(days, stores, units))
    out = ok(invoke("cumsum", str(path), "--share", "--by", "store", "--period", "month",
                    "--time", "date", "--batch-rows", "13", "--keep", "-c", "units")).stdout
    assert out.splitlines()[0] == "date,store,units,units_cumsum"
    keys = [(s, period_start(d, "month")) for d, s in zip(days, stores, strict=True)]
    assert floats(out, 3) == shares(units, keys)


def test_share_of_counts_and_a_final_of_zero(invoke: Invoke, write_file: Write) -> None:
    text = "g,v\na,1\nb,2\na,\nb,-2\na,3\nc,\n"
    path = write_file("z.csv", text)
    out = ok(invoke("cumsum,cumcount,cumnunique", str(path), "--share", "--by", "g",
                    "-c", "v")).stdout
    assert out.splitlines()[0] == "g,v,v_cumsum,v_cumcount,v_cumnunique"
    values = [1, 2, None, -2, 3, None]
    keys = ["a", "b", "a", "b", "a", "c"]
    rows = csv_rows(out)
    for column, op in ((2, "cumsum"), (3, "cumcount")):
        assert [None if r[column] == "" else float(r[column]) for r in rows] == (
            shares(values, keys, op)), op
    # Group b sums to 0: no shares; c has no value: no count to divide (0 of 0).
    assert [r[2] for r in rows] == ["0.25", "", "", "", "1.0", ""]
    assert [r[4] for r in rows] == ["0.5", "0.5", "", "1.0", "1.0", ""]


def test_share_reads_standard_input_twice(invoke: Invoke, sales: Any) -> None:
    _, _, units = sales
    text = "units\n" + "".join(f"{u}\n" for u in units)
    out = ok(invoke("cumsum", "-", "--share", input=text)).stdout
    assert floats(out, 0) == shares(units, [0] * len(units))


def test_share_to_parquet_is_float64(invoke: Invoke, write_file: Write,
                                     tmp_path: Path) -> None:
    path = write_file("i.csv", "n\n1\n3\n")
    target = tmp_path / "o.parquet"
    ok(invoke("cumsum", str(path), "--share", "-o", str(target)))
    table = pq.read_table(target)
    assert table.schema.field("n").type == pa.float64()
    assert table.column("n").to_pylist() == [0.25, 1.0]


@pytest.mark.parametrize(("args", "message"), [
    (("cummax", "--share"), "--share divides running totals and counts by their final "
                            "values: it is for cumsum, cumcount, cumnunique, not cummax"),
    (("cumsum,cummax", "--share"), "--share divides running totals and counts by their "
                                   "final values: it is for cumsum, cumcount, cumnunique, "
                                   "not cummax"),
    (("cumsum", "--share", "--state", "s.json"),
     "--share reads the whole input before it writes, and --state carries runs on across "
     "inputs; leave one out"),
    (("cumsum", "--share", "--line-buffered"),
     "--share reads the whole input before it writes, and --line-buffered writes each row "
     "as it is read; leave one out"),
    (("cumsum", "--share", "--axis", "columns"),
     "--share divides each running value by its column's final one, down the rows; it "
     "cannot be used with --axis columns"),
    (("cumsum", "--share", "--reset", "n"),
     "--share reads the whole input before it writes, and --reset starts runs whose final "
     "values it does not know; leave one out"),
])
def test_share_refusals(invoke: Invoke, write_file: Write, args: tuple[str, ...],
                        message: str) -> None:
    path = write_file("i.csv", "n\n1\n3\n")
    result = invoke(args[0], str(path), *args[1:])
    assert (result.exit_code, result.stderr) == (2, f"Error: {message}\n")


# ewma --times --halflife DURATION ----------------------------------------------------------

def pandas_ewma(values: Sequence[float | None], times: Sequence[dt.datetime],
                halflife: str, adjust: bool = True) -> list[float | None]:
    import pandas as pd

    series = pd.Series([math.nan if v is None else v for v in values], dtype="float64")
    means = series.ewm(halflife=halflife, times=pd.DatetimeIndex(times),
                       adjust=adjust).mean().tolist()
    # cumtool writes a missing value's mean missing; pandas repeats the last one.
    return [None if v is None else m for v, m in zip(values, means, strict=True)]


def close(got: Sequence[float | None], want: Sequence[float | None]) -> bool:
    return len(got) == len(want) and all(
        (a is None and b is None) or (a is not None and b is not None
                                      and math.isclose(a, b, rel_tol=1e-12, abs_tol=0))
        for a, b in zip(got, want, strict=True))


def irregular(count: int, seed: int) -> tuple[list[dt.datetime], list[float | None],
                                              list[str]]:
    rng = random.Random(seed)
    now = dt.datetime(2024, 3, 1, 9, 0)
    times, values, keys = [], [], []
    for _ in range(count):
        now += dt.timedelta(seconds=rng.randrange(1, 4 * 86400))
        times.append(now)
        values.append(None if rng.random() < 0.1 else rng.uniform(-100, 100))
        keys.append(rng.choice("xy"))
    return times, values, keys


@pytest.mark.parametrize(("halflife", "adjust"), [("2 days", True), ("6h", True),
                                                  ("90s", False), ("1.5 hours", True)])
def test_ewma_times_as_pandas(invoke: Invoke, write_file: Write, halflife: str,
                              adjust: bool) -> None:
    times, values, _ = irregular(200, 5)
    text = "when,v\n" + "".join(f"{t.isoformat(sep=' ')},{'' if v is None else repr(v)}\n"
                                for t, v in zip(times, values, strict=True))
    path = write_file("e.csv", text)
    flags = () if adjust else ("--no-adjust",)
    out = ok(invoke("ewma", str(path), "--times", "when", "--halflife", halflife,
                    "--batch-rows", "37", *flags)).stdout
    assert close(floats(out, 1), pandas_ewma(values, times, halflife, adjust))
    assert [row[0] for row in csv_rows(out)] == [t.isoformat(sep=" ") for t in times]


def test_ewma_times_per_group_and_typed(invoke: Invoke, write_file: Write,
                                        tmp_path: Path) -> None:
    times, values, keys = irregular(150, 9)
    zoned = [t.replace(tzinfo=dt.timezone.utc) for t in times]
    table = pa.table({"at": pa.array(zoned, pa.timestamp("ms", tz="Europe/Paris")),
                      "k": keys, "v": pa.array(values, pa.float64())})
    path = tmp_path / "e.parquet"
    pq.write_table(table, path)
    out = ok(invoke("ewma", str(path), "--times", "at", "--halflife", "1 day",
                    "--by", "k", "--to", "csv")).stdout
    got = floats(out, 2)
    for key in "xy":
        rows = [i for i, k in enumerate(keys) if k == key]
        want = pandas_ewma([values[i] for i in rows], [times[i] for i in rows], "1 day")
        assert close([got[i] for i in rows], want), key


def test_ewma_times_state_is_one_run(invoke: Invoke, write_file: Write,
                                     tmp_path: Path) -> None:
    times, values, _ = irregular(80, 11)
    lines = [f"{t.isoformat()},{'' if v is None else repr(v)}\n"
             for t, v in zip(times, values, strict=True)]
    whole = write_file("all.csv", "t,v\n" + "".join(lines))
    first = write_file("a.csv", "t,v\n" + "".join(lines[:30]))
    second = write_file("b.csv", "t,v\n" + "".join(lines[30:]))
    flags = ("--times", "t", "--halflife", "12h")
    one = ok(invoke("ewma", str(whole), *flags)).stdout
    state = str(tmp_path / "s.json")
    part1 = ok(invoke("ewma", str(first), *flags, "--state", state)).stdout
    part2 = ok(invoke("ewma", str(second), *flags, "--state", state)).stdout
    assert part1 + part2.split("\n", 1)[1] == one


@pytest.mark.parametrize(("args", "message"), [
    (("--times", "t", "--span", "3"), "--times decays the weights by the time between "
                                      "rows: give --halflife as a duration (2 days, 6h, "
                                      "90s), not --span"),
    (("--times", "t", "--halflife", "3"), "--times decays the weights by the time between "
                                          "rows: give --halflife as a duration (2 days, "
                                          "6h, 90s)"),
    (("--halflife", "2 days"), "--halflife '2 days' is not a number of rows; a duration is "
                               "for --times COL"),
    (("--times", "t", "--halflife", "2 fortnights"),
     "--halflife '2 fortnights' is not a duration; with --times give one such as 2 days, "
     "6h, 90s or 1.5 hours"),
    (("--times", "t", "--halflife", "1d", "--exclusive"),
     "--times with --exclusive is not supported: each mean is that of the rows up to its "
     "own"),
    (("--times", "t", "--halflife", "1d", "--reverse"),
     "--times decays the weights down the rows in time order; it cannot be used with "
     "--reverse"),
])
def test_ewma_times_refusals(invoke: Invoke, write_file: Write, args: tuple[str, ...],
                             message: str) -> None:
    path = write_file("e.csv", "t,v\n2024-01-01,1\n2024-01-02,2\n")
    result = invoke("ewma", str(path), *args)
    assert (result.exit_code, result.stderr) == (2, f"Error: {message}\n")


def test_ewma_times_bad_and_missing_times(invoke: Invoke, write_file: Write) -> None:
    path = write_file("e.csv", "t,v\n2024-01-01,1\nyesterday,2\n")
    result = invoke("ewma", str(path), "--times", "t", "--halflife", "1d")
    assert (result.exit_code, result.stderr) == (1, (
        f"Error: {path}: column 't', row 2 (line 3): 'yesterday' is not a date or time as "
        "--times reads them (ISO 8601: 2024-03-01, 2024-03-01T09:30, "
        "2024-03-01 09:30:00+02:00)\n"))
    path = write_file("m.csv", "t,v\n2024-01-01,1\n,2\n")
    result = invoke("ewma", str(path), "--times", "t", "--halflife", "1d")
    assert (result.exit_code, result.stderr) == (1, (
        f"Error: {path}: column 't', row 2 (line 3): no time, and --times needs one on "
        "every row\n"))


# The Python API ------------------------------------------------------------------------------

def test_api_period_share_and_times(sales: Any) -> None:
    import cumtool

    days, stores, units = sales
    table = pa.table({"date": [d.isoformat() for d in days], "store": stores, "units": units})
    out = cumtool.scan(table, "cumsum", period="quarter", time="date", year_start="10-01",
                       by="store")
    keys = [(s, period_start(d, "quarter", (10, 1))) for d, s in zip(days, stores,
                                                                     strict=True)]
    assert out.column("units").to_pylist() == running(units, keys)
    shared = cumtool.scan(table, "cumsum", share=True, period="month", time="date")
    assert shared.column("units").to_pylist() == shares(
        units, [period_start(d, "month") for d in days])
    times, values, _ = irregular(60, 3)
    timed = pa.table({"t": pa.array(times, pa.timestamp("us")),
                      "v": pa.array(values, pa.float64())})
    means = cumtool.scan(timed, "ewma", times="t", halflife="5h").column("v").to_pylist()
    assert close(means, pandas_ewma(values, times, "5h"))
    with pytest.raises(cumtool.UsageError, match="are for tables"):
        cumtool.scan([1, 2], "cumsum", share=True)


# The fast CSV path and the streaming path give the same bytes ------------------------------

@pytest.mark.parametrize("flags", [
    ("--period", "month", "--time", "date", "--by", "store"),
    ("--period", "week", "--time", "date", "--exclusive"),
    ("--period", "quarter", "--time", "date", "--year-start", "10-01", "-c", "units",
     "--keep"),
])
def test_fast_path_periods_equal_streaming(invoke: Invoke, write_file: Write,
                                           flags: tuple[str, ...]) -> None:
    """Without --batch-rows a CSV of plain dates runs on the fast CSV path (fastcsv.py);
    --batch-rows takes the streaming path (tables.py). Missing times and units too."""
    rng = random.Random(3)
    days: list[dt.date | None] = list(random_days(4000, 11))
    for i in rng.sample(range(len(days)), 40):
        days[i] = None
    stores = [rng.choice("abcd") for _ in days]
    units: list[int | None] = [rng.randrange(0, 50) for _ in days]
    for i in rng.sample(range(len(units)), 40):
        units[i] = None
    path = write_file("big.csv", sales_csv(days, stores, units))
    fast = ok(invoke("cumsum,cumcount", str(path), *flags)).stdout_bytes
    streaming = ok(invoke("cumsum,cumcount", str(path), *flags, "--batch-rows",
                          "999")).stdout_bytes
    assert fast == streaming
    unit = flags[1]
    start = (10, 1) if "--year-start" in flags else (1, 1)
    keys = [(s if "--by" in flags else None, None if d is None else
             period_start(d, unit, start)) for d, s in zip(days, stores, strict=True)]
    exclusive = "--exclusive" in flags
    rows = csv_rows(fast.decode())  # date,store,units,units_cumsum,units_cumcount
    assert [row[3] for row in rows] == [shown(v) for v in running(units, keys,
                                                                   exclusive=exclusive)]
    assert [row[4] for row in rows] == [
        shown(v) for v in running(units, keys, "cumcount", exclusive=exclusive)]


def test_fast_path_hands_a_late_datetime_over(invoke: Invoke, write_file: Write,
                                              tmp_path: Path) -> None:
    """A datetime after many plain dates: the fast path hands the run over mid-way, and
    standard output and a file both get the streaming path's bytes."""
    rows = 60000
    days = random_days(rows, 4)
    text = sales_csv(days, ["a"] * rows, list(range(rows)))
    text += "2024-05-01T10:00,a,7\n"
    path = write_file("late.csv", text)
    reference = ok(invoke("cumsum", str(path), "--period", "month", "--time", "date",
                          "--batch-rows", "5000")).stdout_bytes
    assert ok(invoke("cumsum", str(path), "--period", "month", "--time",
                     "date")).stdout_bytes == reference
    target = tmp_path / "out.csv"
    ok(invoke("cumsum", str(path), "--period", "month", "--time", "date", "-o", str(target)))
    assert target.read_bytes() == reference
    keys = [period_start(d, "month") for d in days] + [dt.date(2024, 5, 1)]
    assert [row[2] for row in csv_rows(reference.decode())] == [
        shown(v) for v in running([*range(rows), 7], keys)]


@pytest.mark.parametrize("flags", [
    ("--share",),
    ("--share", "--by", "store", "--exclusive"),
    ("--share", "--period", "month", "--time", "date", "--by", "store"),
])
@pytest.mark.parametrize("rows", [3000, 70000])  # read whole; and past small.SMALL_BYTES
def test_fast_path_shares_equal_streaming(invoke: Invoke, write_file: Write,
                                          flags: tuple[str, ...], rows: int) -> None:
    rng = random.Random(rows)
    days = random_days(rows, 12)
    stores = [rng.choice("abcz") for _ in days]
    units: list[int | None] = [rng.randrange(-5, 40) for _ in days]
    for i in rng.sample(range(rows), 30):
        units[i] = None
    for i, store in enumerate(stores):  # store z sums to 0: its shares are missing
        if store == "z":
            units[i] = 0
    path = write_file("s.csv", sales_csv(days, stores, units))
    fast = ok(invoke("cumsum,cumcount", str(path), "-c", "units", *flags)).stdout_bytes
    streaming = ok(invoke("cumsum,cumcount", str(path), "-c", "units", *flags,
                          "--batch-rows", "4999")).stdout_bytes
    assert fast == streaming
    period = "--period" in flags
    keys = [(s if "--by" in flags else None, period_start(d, "month") if period else None)
            for d, s in zip(days, stores, strict=True)]
    exclusive = "--exclusive" in flags
    rows_out = csv_rows(fast.decode())
    assert [None if r[3] == "" else float(r[3]) for r in rows_out] == shares(
        units, keys, exclusive=exclusive)
    assert [None if r[4] == "" else float(r[4]) for r in rows_out] == shares(
        units, keys, "cumcount", exclusive=exclusive)


@pytest.mark.parametrize("rows", [4, 70000])  # read whole; and past small.SMALL_BYTES
def test_share_under_skipna_divides_by_the_last_scanned_value(invoke: Invoke, write_file: Write,
                                                              rows: int) -> None:
    """A NaN --skipna skipped stays NaN in its row, and is not the group's final value:
    the last rows of each group here are NaN (all shares were NaN)."""
    rng = random.Random(rows)
    keys = [rng.choice("ab") for _ in range(rows - 2)] + ["a", "b"]
    values = [1.5, math.nan, 2.0, math.nan] if rows == 4 else [
        math.nan if rng.random() < 0.3 else rng.randrange(1, 9) / 4 for _ in range(rows - 2)
    ] + [math.nan, math.nan]
    if rows == 4:
        keys = ["a"] * 4
    text = "g,y\n" + "".join(f"{k},{v}\n" for k, v in zip(keys, values, strict=True))
    path = write_file("n.csv", text)
    totals: dict[str, float] = {}
    running_of: list[float] = []
    for k, v in zip(keys, values, strict=True):
        if not math.isnan(v):
            totals[k] = totals.get(k, 0.0) + v
        running_of.append(math.nan if math.isnan(v) else totals[k])
    expected = [r / totals[k] for r, k in zip(running_of, keys, strict=True)]
    for extra in ([], ["--batch-rows", "4999"], ["--threads", "3"]):
        out = ok(invoke("cumsum", str(path), "--by", "g", "--skipna", "--share", "-c", "y",
                        *extra)).stdout
        got = [float(r[1]) for r in csv_rows(out)]
        assert [repr(v) for v in got] == [repr(v) for v in expected], extra
    if rows == 4:
        assert out == "g,y\na,0.42857142857142855\na,NaN\na,1.0\na,NaN\n"


def test_ewma_times_depend_on_the_gaps_between_rows_only(invoke: Invoke,
                                                         write_file: Write) -> None:
    """The same gaps (to the microsecond) in 1970 and in 2024 give the same bits: the
    time between rows is taken exactly, as pandas 3 takes times in their column's unit,
    not as the difference of two float64 counts of nanoseconds since 1970, which rounds
    2024's to 256 ns."""
    rng = random.Random(3)
    gaps = [dt.timedelta(microseconds=rng.randrange(1, 10**10)) for _ in range(120)]
    values = [rng.uniform(-5, 5) for _ in gaps]
    outputs = []
    for start in (dt.datetime(1970, 1, 1), dt.datetime(2024, 3, 1, 9, 17, 13, 489784)):
        times, now = [], start
        for gap in gaps:
            now += gap
            times.append(now)
        text = "t,v\n" + "".join(f"{t.isoformat()},{v!r}\n"
                                 for t, v in zip(times, values, strict=True))
        out = ok(invoke("ewma", str(write_file("g.csv", text)), "--times", "t",
                        "--halflife", "3 hours", "-c", "v")).stdout
        outputs.append([row[1] for row in csv_rows(out)])
    assert outputs[0] == outputs[1]


def test_ewma_times_lets_nan_spread_and_skipna_skips_it(invoke: Invoke,
                                                        write_file: Write) -> None:
    path = write_file("n.csv", "t,x\n2024-01-01,1\n2024-01-02,nan\n2024-01-03,3\n"
                               "2024-01-04,\n")
    flags = ("--times", "t", "--halflife", "1 day", "-c", "x")
    assert ok(invoke("ewma", str(path), *flags)).stdout == (
        "t,x\n2024-01-01,1.0\n2024-01-02,NaN\n2024-01-03,NaN\n2024-01-04,\n")
    # (3 + 1/4) / (1 + 1/4) = 2.6: the NaN's row decays the weight as a missing one does.
    assert ok(invoke("ewma", str(path), *flags, "--skipna")).stdout == (
        "t,x\n2024-01-01,1.0\n2024-01-02,NaN\n2024-01-03,2.6\n2024-01-04,\n")


@pytest.mark.parametrize(("cells", "row", "cell"), [
    (["2300-01-01", "2300-01-02"], "row 1 (line 2)", "2300-01-01"),
    (["2024-01-01", "0001-01-01"], "row 2 (line 3)", "0001-01-01"),
])
def test_ewma_times_beyond_nanoseconds_are_named(invoke: Invoke, write_file: Write,
                                                 tmp_path: Path, cells: list[str],
                                                 row: str, cell: str) -> None:
    """They gave 1.5 with no word (2300), or an internal error (year 1)."""
    path = write_file("f.csv", "t,x\n" + "".join(f"{c},{k}\n" for k, c in enumerate(cells)))
    result = invoke("ewma", str(path), "--times", "t", "--halflife", "1d")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: {path}: column 't', {row}: {cell!r} is outside 1677-09-21 "
        "to 2262-04-11, the times ewma --times can hold (nanoseconds in 64 bits)\n")
    typed = tmp_path / "d.parquet"
    pq.write_table(pa.table({"t": pa.array([dt.date.fromisoformat(c) for c in cells]),
                             "x": [0, 1]}), typed)
    result = invoke("ewma", str(typed), "--times", "t", "--halflife", "1d", "--to", "csv")
    assert result.exit_code == 1
    assert "is outside 1677-09-21 to 2262-04-11" in result.stderr
    assert result.stderr.count("\n") == 1


def test_ewma_times_keep_nanoseconds_and_long_unit_names(invoke: Invoke,
                                                         write_file: Write) -> None:
    path = write_file("ns.csv", "t,x\n2024-01-01T00:00:00.000000001,1\n"
                                "2024-01-01T00:00:00.000000999,2\n")
    means = {}
    for halflife in ("1ns", "1 nanosecond", "3 nanoseconds", "2 microseconds", "2us",
                     "1 millisecond", "1ms"):
        out = ok(invoke("ewma", str(path), "--times", "t", "--halflife", halflife)).stdout
        means[halflife] = csv_rows(out)[1][1]
    assert means["1ns"] == means["1 nanosecond"] == "2.0"  # 998 half-lives apart
    assert means["2 microseconds"] == means["2us"] != means["3 nanoseconds"]
    assert means["1 millisecond"] == means["1ms"]


def test_fixed_offset_zones_and_categorical_dates(invoke: Invoke, tmp_path: Path) -> None:
    """pandas writes a datetime.timezone as a fixed offset (+05:30), which polars does not
    take: --period, --times and CSV output failed with an internal error."""
    stamps = [dt.datetime(2024, 3, 1, 2, 0), dt.datetime(2024, 3, 1, 23, 0),
              dt.datetime(2024, 3, 2, 0, 30)]
    zone = dt.timezone(dt.timedelta(hours=5, minutes=30))
    utc = [s.replace(tzinfo=zone).astimezone(dt.timezone.utc).replace(tzinfo=None)
           for s in stamps]
    path = tmp_path / "o.parquet"
    pq.write_table(pa.table({"t": pa.array(utc, pa.timestamp("us", tz="+05:30")),
                             "x": [1, 2, 4]}), path)
    assert ok(invoke("cumsum", str(path), "--period", "day", "--time", "t", "--to",
                     "csv")).stdout == (
        "t,x\n2024-03-01T02:00:00.000000+0530,1\n2024-03-01T23:00:00.000000+0530,3\n"
        "2024-03-02T00:30:00.000000+0530,4\n")
    out = ok(invoke("ewma", str(path), "--times", "t", "--halflife", "1h", "--to", "csv",
                    "-c", "x")).stdout
    # 21 h later the old weight is 2**-21: the mean is nearly the new value.
    assert [float(row[1]) for row in csv_rows(out)][:2] == [
        1.0, (2**-21 * 1.0 + 2.0) / (2**-21 + 1)]
    categorical = tmp_path / "c.parquet"
    dates = pa.array(["2024-01-31", "2024-02-01", "2024-02-03"]).dictionary_encode()
    pq.write_table(pa.table({"d": dates, "x": [1, 2, 4]}), categorical)
    assert ok(invoke("cumsum", str(categorical), "--period", "month", "--time", "d",
                     "--to", "csv")).stdout == (
        "d,x\n2024-01-31,1\n2024-02-01,2\n2024-02-03,6\n")


def test_share_on_a_csv_too_wide_to_read_whole_names_what_to_do(invoke: Invoke,
                                                                write_file: Write) -> None:
    """Its hint was "scan fewer columns with -c", which the same refusal met again: the
    width is the file's, so the columns are to be selected before cumtool reads it."""
    names = [f"v{k}" for k in range(8300)]
    path = write_file("wide.csv", ",".join(names) + "\n" + ",".join(["1"] * 8300) + "\n")
    result = invoke("cumsum", str(path), "--share", "-c", "v1")
    assert (result.exit_code, result.stderr) == (2, (
        f"Error: --share works on tables (CSV, TSV, Parquet) read as a whole; {path} is "
        "read column group by column group: select at most 8,192 columns first (e.g. "
        "with xsv select or cut)\n"))
