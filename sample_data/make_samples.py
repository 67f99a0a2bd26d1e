"""Regenerate every file in sample_data/ (README's worked examples run on these).

    python sample_data/make_samples.py

Deterministic: the same files come out on every run (the random numbers come from a
seeded generator, gzip gets a fixed timestamp), so regenerating shows no diff except,
possibly, the writer-version string inside the Parquet footer.
"""

from __future__ import annotations

import datetime
import gzip
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


def write_text(name: str, text: str) -> None:
    (HERE / name).write_text(text, encoding="utf-8", newline="\n")


def write_column(name: str, header: str, values: list[str]) -> None:
    write_text(name, "\n".join([header, *values]) + "\n")


def write_rows(name: str, header: list[str], rows: list[list[object]], sep: str = ",") -> None:
    lines = [sep.join(header)] + [sep.join(str(v) for v in row) for row in rows]
    write_text(name, "\n".join(lines) + "\n")


def reference_examples() -> None:
    """The small cases of the behaviour contract, one file each."""
    write_column("cumprod_growth.csv", "growth", ["3", "4", "2", "5"])
    write_column("cumprod_with_zero.csv", "factor", ["3", "0", "5", "2"])
    write_column("cumprod_with_nan.csv", "reading", ["12", "NaN", "10", "34"])
    write_column("cumprod_signs.csv", "sign", ["-1", "2", "-4"])
    write_column("empty.csv", "value", [])
    write_rows("cumprod_matrix.csv", ["a", "b", "c"], [[10, 20, 30], [4, 5, 6]])
    write_column("cumsum_counts.csv", "count", ["1", "2", "3", "4"])
    write_rows("cumsum_matrix.csv", ["a", "b", "c"], [[5, 6, 7], [1, 2, 3]])
    write_text("cumsum_matrix_no_header.csv", "5,6,7\n1,2,3\n")
    write_column("cumsum_halves.csv", "amount", ["1.5", "2.5", "3.5"])
    write_column("cummax_ties.csv", "score", ["1", "3", "3", "2", "3"])
    write_column("cummax_with_nan.csv", "score", ["1", "NaN", "3", "NaN", "2"])
    write_column("logcumsumexp_zeros.csv", "logit", ["0", "0", "0"])
    # 2**62 + 2**62 = 2**63 does not fit int64.
    write_column("cumsum_int64_overflow.csv", "bytes",
                 ["4611686018427387904", "4611686018427387904"])
    np.save(HERE / "cumprod_int32.npy", np.array([1, 2, 3], dtype=np.int32))
    np.save(HERE / "cumprod_3x3_float32.npy",
            np.arange(1, 10, dtype=np.float32).reshape(3, 3))
    np.save(HERE / "logcumsumexp_large_float32.npy", np.array([88, 89, 90], dtype=np.float32))
    np.save(HERE / "cumsum_int8.npy", np.array([100, 100, 100], dtype=np.int8))
    np.save(HERE / "cumsum_float16.npy", np.array([2048, 1, 1, 1, 1], dtype=np.float16))
    np.save(HERE / "cumsum_float32_wide.npy", np.array([3e38, 3e38, -3e38], dtype=np.float32))


STORES = ("Riverside", "Harbor Mall, Unit 4")
MISSING_UNITS = {(2, "Riverside"), (17, "Harbor Mall, Unit 4")}  # (day index, store)


def daily_sales() -> None:
    """30 days x 2 stores of units sold and revenue; two days lost their unit count."""
    rng = random.Random(20240301)
    start = datetime.date(2024, 3, 1)
    rows: list[tuple[str, str, int | None, float]] = []
    for day in range(30):
        date = start + datetime.timedelta(days=day)
        weekend = date.weekday() >= 5
        for store in STORES:
            base = 24 if store == "Riverside" else 15
            units = base + rng.randint(-6, 8) + (9 if weekend else 0)
            price = rng.choice((11.49, 11.99, 12.49, 12.99))
            revenue = round(units * price, 2)
            rows.append((date.isoformat(), store, None if (day, store) in MISSING_UNITS
                         else units, revenue))

    def cell(value: object) -> str:
        if value is None:
            return ""
        text = f"{value:.2f}" if isinstance(value, float) else str(value)
        return f'"{text}"' if "," in text else text

    write_text("daily_sales.csv", "date,store,units,revenue\n" + "".join(
        ",".join(cell(v) for v in row) + "\n" for row in rows))
    with open(HERE / "daily_sales.csv.gz", "wb") as raw, \
            gzip.GzipFile(filename="daily_sales.csv", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write((HERE / "daily_sales.csv").read_bytes())
    table = pa.table({
        "date": pa.array([r[0] for r in rows], pa.string()),
        "store": pa.array([r[1] for r in rows], pa.string()),
        "units": pa.array([r[2] for r in rows], pa.int64()),
        "revenue": pa.array([float(f"{r[3]:.2f}") for r in rows], pa.float64()),
    })
    pq.write_table(table, HERE / "daily_sales.parquet")


def weekly_visitors() -> None:
    """A small TSV: visitors and sign-ups per week."""
    rows = [
        ["2024-W01", 1204, 31], ["2024-W02", 1350, 42], ["2024-W03", 1288, 37],
        ["2024-W04", 1502, 55], ["2024-W05", 1467, 49], ["2024-W06", 1611, 60],
    ]
    write_rows("weekly_visitors.tsv", ["week", "visitors", "signups"], rows, sep="\t")


def rainfall() -> None:
    """A 3-D float64 array: 2 days x 3 gauges x 4 six-hour periods of rain in mm
    (0.5 mm tipping-bucket gauges, so every sum is exact)."""
    mm = np.array([
        [[0.0, 1.5, 4.0, 0.5],
         [0.5, 2.0, 3.5, 0.0],
         [0.0, 0.0, 6.5, 1.0]],
        [[2.5, 0.0, 0.0, 0.0],
         [3.0, 0.5, 0.0, 0.0],
         [1.5, 0.0, 0.5, 0.0]],
    ], dtype=np.float64)
    np.save(HERE / "rainfall_mm.npy", mm)


def ledger() -> None:
    """A small account ledger for the table options: two accounts, a new-month flag, and
    amounts in cents (float sums of 19.99 drift; --decimal keeps them exact)."""
    rows = [
        ["2024-01-30", "checking", 0, "19.99"],
        ["2024-01-30", "savings", 0, "100.00"],
        ["2024-01-31", "checking", 0, "0.01"],
        ["2024-01-31", "checking", 0, "5.10"],
        ["2024-02-01", "checking", 1, "19.99"],
        ["2024-02-01", "savings", 1, "0.10"],
        ["2024-02-02", "checking", 0, "0.20"],
        ["2024-02-02", "savings", 0, "0.20"],
    ]
    write_rows("ledger.csv", ["date", "account", "new_month", "amount"], rows)


def cumulative_cases() -> None:
    """Cumulative counters, as a health agency publishes them: diff gives the daily
    numbers back (one region skipped a report: an empty cell)."""
    rows = [
        ["2024-03-01", "north", 12], ["2024-03-01", "south", 5],
        ["2024-03-02", "north", 19], ["2024-03-02", "south", 9],
        ["2024-03-03", "north", 31], ["2024-03-03", "south", ""],
        ["2024-03-04", "north", 38], ["2024-03-04", "south", 17],
    ]
    write_rows("cumulative_cases.csv", ["date", "region", "cases"], rows)


def prices() -> None:
    """Closing prices of one share over ten days, for ewma."""
    closes = ["101.2", "102.5", "101.9", "103.4", "104.1", "103.0", "105.6", "106.2",
              "105.1", "107.3"]
    write_rows("prices.csv", ["day", "close"],
               [[f"2024-04-{i + 1:02d}", close] for i, close in enumerate(closes)])


def tenths() -> None:
    """Ten payments of 0.10: a float running sum drifts (0.9999999999999999), Neumaier's
    compensated sum (--compensated) does not."""
    write_column("tenths.csv", "paid", ["0.1"] * 10)


def real_exports() -> None:
    """Files shaped like real exports, for docs/tables.md: codes with leading zeros, flags
    and number spellings that must come out as they went in; R's NA and row names; a
    European spreadsheet's semicolons and decimal commas (with a BOM and CRLF)."""
    write_text("county_codes.csv", "state,county,name,price,sci,active\n"
               "01,001,Autauga,1.50,1e3,True\n01,003,Baldwin,2.00,2E3,FALSE\n"
               "02,013,Aleutians East,0.25,8.99E-05,true\n")
    write_text("penguins_r.csv", '"","species","bill_length_mm","body_mass_g","sex","year"\n'
               '"1","Adelie",39.1,3750,"male",2007\n"2","Adelie",NA,NA,NA,2007\n'
               '"3","Gentoo",40.3,3250,"female",2008\n')
    (HERE / "bookings_eu.csv").write_bytes(
        "\ufeffDatum;Konto;Betrag\r\n2024-01-02;0042;1,50\r\n2024-01-03;0042;2,25\r\n"
        "2024-01-04;0107;-0,75\r\n".encode())


def events() -> None:
    """JSON Lines as logs are, for docs/formats.md: records with different keys (a key
    missing, one added later, in another order), nested values, an integer and a float."""
    write_text("events.jsonl", '{"user": "ann", "spent": 5, "tags": ["new"]}\n'
               '{"user": "bob", "extra": {"vip": true}}\n'
               '{"spent": 2.5, "user": "ann"}\n')


def meter_readings() -> None:
    """Daily drops of two meters' readings, for docs/datasets.md: several files, a glob in
    natural order (day-10 after day-9) and runs resumed with --state."""
    days = {1: [("north", 12), ("south", 7)], 2: [("north", 5), ("south", 9)],
            10: [("north", 8), ("south", 1)]}
    (HERE / "meter").mkdir(exist_ok=True)
    for day, rows in days.items():
        write_rows(f"meter/day-{day}.csv", ["meter", "kwh"], [list(row) for row in rows])


def rain_gauge() -> None:
    """Daily rain at one gauge around the start of a water year (1 October), for
    docs/recipes.md: --period year --year-start 10-01 totals by water year."""
    rows = [["2023-09-28", "4.2"], ["2023-09-29", "0.0"], ["2023-09-30", "11.5"],
            ["2023-10-01", "2.3"], ["2023-10-02", "7.1"], ["2023-10-03", ""],
            ["2023-10-04", "0.6"]]
    write_rows("rain_gauge.csv", ["day", "mm"], rows)


def product_revenue() -> None:
    """A year's revenue per product, largest first, for docs/recipes.md: --share gives
    the Pareto curve (the share of revenue against the share of products)."""
    rows = [["lamp", 4200], ["desk", 2600], ["chair", 1500], ["shelf", 700], ["rug", 500],
            ["mirror", 300], ["clock", 150], ["vase", 50]]
    write_rows("product_revenue.csv", ["product", "revenue"], rows)


def main() -> None:
    reference_examples()
    meter_readings()
    daily_sales()
    weekly_visitors()
    rainfall()
    ledger()
    cumulative_cases()
    prices()
    tenths()
    real_exports()
    events()
    rain_gauge()
    product_revenue()


if __name__ == "__main__":
    main()
