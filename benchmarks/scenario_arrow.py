"""Scenario `arrow`: Arrow IPC -> Arrow IPC (file and stream) against Parquet -> Parquet,
cumtool on both, and polars lazy on Arrow IPC as the peer. The Arrow inputs are the wide
Parquet data written as an uncompressed IPC file and stream (made here, next to it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from common import (
    DATA,
    POLARS_LAZY_PARQUET,
    Bench,
    Command,
    Scenario,
    close_enough,
    log,
    python_script,
)

POLARS_LAZY_IPC = """
    import sys, polars as pl
    pl.scan_ipc(sys.argv[1]).select(pl.all().cum_sum()).sink_ipc(sys.argv[2])
"""


def _as_ipc(parquet: Path, stream: bool) -> Path:
    """The Parquet data as an uncompressed Arrow IPC file (.arrow) or stream (.arrows),
    remade when the Parquet file is newer."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    path = DATA / (parquet.stem + (".arrows" if stream else ".arrow"))
    if path.exists() and path.stat().st_mtime >= parquet.stat().st_mtime:
        return path
    log(f"making {path.name} ...")
    source = pq.ParquetFile(parquet)
    partial = path.with_name(path.name + ".partial")
    opener = ipc.new_stream if stream else ipc.new_file
    with pa.OSFile(str(partial), "wb") as sink, opener(sink, source.schema_arrow) as writer:
        for batch in source.iter_batches(batch_size=1 << 17):
            writer.write_batch(batch)
    partial.replace(path)
    return path


def _last_row(path: Path) -> tuple[int, np.ndarray]:
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    if path.suffix == ".parquet":
        table = pq.read_table(path)
    else:
        with pa.memory_map(str(path)) as source:
            first = source.read(6)
            source.seek(0)
            reader = ipc.open_file(source) if first == b"ARROW1" else ipc.open_stream(source)
            table = reader.read_all()
    last = table.slice(table.num_rows - 1)
    return table.num_rows, np.array([float(c[0].as_py()) for c in last.columns])


def run(bench: Bench) -> None:
    parquet = bench.data.wide("parquet")
    arrow_file = _as_ipc(parquet, stream=False)
    arrow_stream = _as_ipc(parquet, stream=True)
    out = bench.out
    commands = [
        Command("cumtool parquet", bench.cumtool("cumsum", parquet, out("ipc-cumtool.parquet")),
                out("ipc-cumtool.parquet")),
        Command("cumtool arrow", bench.cumtool("cumsum", arrow_file, out("ipc-cumtool.arrow")),
                out("ipc-cumtool.arrow")),
        Command("cumtool arrows", bench.cumtool("cumsum", arrow_stream,
                                                out("ipc-cumtool.arrows")),
                out("ipc-cumtool.arrows")),
        Command("polars lazy arrow", python_script(POLARS_LAZY_IPC, arrow_file,
                                                   out("ipc-polars.arrow")),
                out("ipc-polars.arrow")),
        Command("polars lazy parquet", python_script(POLARS_LAZY_PARQUET, parquet,
                                                     out("ipc-polars.parquet"), "snappy"),
                out("ipc-polars.parquet")),
    ]
    scenario = Scenario("arrow", f"Arrow IPC -> Arrow IPC against Parquet -> Parquet, "
                        f"{bench.rows_label()} rows x 8 columns, cumsum", commands,
                        "cumtool arrow")
    scenario.notes.append(
        "The Arrow inputs and outputs are uncompressed (cumtool writes IPC uncompressed); "
        "Parquet is written with snappy by both tools. Input sizes: "
        f"{parquet.stat().st_size >> 20} MiB Parquet, {arrow_file.stat().st_size >> 20} MiB "
        "Arrow.")
    bench.execute(scenario)
    reference = bench.data.reference(parquet)
    want = np.array(reference["sums"], dtype=np.float64)
    good = True
    for command in scenario.commands:
        if not command.ok:
            continue
        rows, row = _last_row(command.output)
        if rows != reference["rows"] or not close_enough(row, want):
            good = False
            scenario.checks.append(f"**MISMATCH** {command.label}: {rows} rows, last row "
                                   f"{np.array2string(row, precision=6)}")
    if good:
        scenario.checks.append(f"every output has {reference['rows']} rows and ends on the "
                               "exact column sums (relative 1e-9)")
    bench.ratio_goal(f"Arrow -> Arrow {bench.rows_label()} x 8: cumtool arrow ÷ cumtool "
                     "parquet", scenario, "cumtool arrow", "cumtool parquet", 1.0)
    bench.ratio_goal(f"Arrow stream -> stream {bench.rows_label()} x 8: cumtool arrows ÷ "
                     "cumtool parquet", scenario, "cumtool arrows", "cumtool parquet", 1.0)
    bench.ratio_goal(f"Arrow -> Arrow {bench.rows_label()} x 8: cumtool ÷ polars lazy",
                     scenario, "cumtool arrow", "polars lazy arrow", 1.0)
