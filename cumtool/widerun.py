"""The wide strategy of a run: a CSV or TSV with more columns than WIDE_COLUMNS, read by
formats/csv/wide.py's WideSource record batch by record batch, taken GROUP_COLUMNS at a
time. Each group goes through the same column rules, kernels and CSV writer as a narrow
file (its own TablePlan, carried state kept per group from batch to batch); the groups'
cells of each record are joined back into one output record, so memory stays bounded
whatever the width.

Options that need whole rows at once (--by, --reset, --keep, --reverse, --axis columns,
several ops, output other than csv or tsv) are refused on such files, naming the width.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any, cast

from cumtool.formats import SourceBase
from cumtool.formats.csv import dialect, wide
from cumtool.formats.csv.wide import WideSource

if TYPE_CHECKING:
    import numpy as np
    import polars as pl
    import pyarrow as pa

    from cumtool.formats import FileKind
    from cumtool.request import Request
    from cumtool.tables import TablePlan


def refuse_unsupported(request: Request, source: WideSource, out: FileKind) -> None:
    """Options that need whole-width batches of a wide table: a usage error that names
    the width and what to do instead, rather than a run past the memory bound."""
    from cumtool.errors import UsageError, option
    from cumtool.formats.registry import DELIMITED
    from cumtool.options import honoured, named

    fewer = f"select at most {wide.WIDE_COLUMNS:,} columns first (e.g. with xsv select or cut)"
    # Every option given that is not declared as honoured here (Option.wide), then what
    # is not an option: several ops, an output other than delimited text.
    given = {(f"{option('axis', 'columns')}" if declared.name == "axis"
              else named(declared)): (True, fewer)
             for declared in request.given() if not honoured(declared, "wide")}
    given[f"several ops ({request.op})"] = (len(request.ops) > 1, "run one op at a time")
    given[f"{out.format} output"] = (out.format not in DELIMITED, "write csv or tsv (-o out.csv)")
    for what, (asked, hint) in given.items():
        if asked:
            raise UsageError(
                f"{source.name}: {source.width:,} columns are more than {wide.WIDE_COLUMNS:,}, "
                f"and {what} is not supported on tables this wide (it needs whole rows in "
                f"memory at once); {hint}")


def run_wide(request: Request, dtype: np.dtype | None, read: SourceBase, out: FileKind,
             stack: contextlib.ExitStack) -> None:
    """Scan a wide CSV/TSV input group by group into CSV/TSV output."""
    assert read.layout == "wide", f"{read.name} is read as {read.layout}"
    source = cast(WideSource, read)
    from cumtool.formats.csv.csvwrite import CompressingSink
    from cumtool.output import open_output
    from cumtool.pipeline import Progress
    from cumtool.runner import scan_batches

    refuse_unsupported(request, source, out)
    if dtype is not None and dtype.kind == "c":
        from cumtool.errors import UsageError, option

        raise UsageError(f"{option('dtype', str(dtype))} gives complex values, which a "
                         f"table cannot hold; use {option('dtype')} with a real type, or "
                         "an array")
    selected = _select(request, source)
    write_options = request.csv_write(out.format)
    scan = request.scan_options()
    groups = _Groups(request, dtype, source, selected, write_options, scan)
    total = source.total_bytes or None
    progress = Progress(request.progress, total, "bytes", source.name)
    with open_output(request.output) as stream, contextlib.closing(progress):
        header = groups.header() if write_options.header else b""
        sink = CompressingSink(_Bytes, stream, out.compression, header)

        def batches() -> Iterator[list[list[str | None]]]:
            return stack.enter_context(contextlib.closing(
                source.row_batches(request.batch_rows)))

        # The runner's loop, the groups as the plan: each batch of records in, its
        # output records out (bytes, which _Bytes writes).
        scan_batches(groups, batches, sink, False, stack,
                     lambda: progress.update(source.bytes_read))


class _Bytes:
    """Rendered records straight to the (possibly compressing) output stream, the header
    with the first batch, as on the narrow path (a file of no rows: the header alone)."""

    def __init__(self, stream: IO[bytes], header: bytes) -> None:
        self._stream = stream
        self._header = header

    def write(self, data: bytes) -> None:
        data, self._header = self._header + data, b""
        if data:
            self._stream.write(data)

    def close(self) -> None:
        self.write(b"")


def _select(request: Request, source: WideSource) -> list[int]:
    """The positions scanned, by the rules of the table plan over the whole header (-c,
    --exclude, or every number column)."""
    import pyarrow as pa

    from cumtool.notes import left_out
    from cumtool.ops import REGISTRY
    from cumtool.tables import scanned_columns

    names = source.column_names
    # cumnunique compares any column named with -c (text too), as on the narrow path.
    selected = scanned_columns(names, source.hints, [pa.large_string()] * len(names),
                               request.columns, request.exclude, source.name, op=request.op,
                               compares=REGISTRY[request.op].distinct)
    if not request.widen:  # a rerun said it the first time
        left_out(request, names, source.hints, set(selected))
    return selected


class _Groups:
    """The column groups of a wide table, each with its scans (carried state kept from
    batch to batch) and CSV writer; renders each batch of records as output records."""

    def __init__(self, request: Request, dtype: np.dtype | None, source: WideSource,
                 selected: list[int], write_options: Any, scan: dict[str, Any]) -> None:
        import collections
        import itertools

        import polars as pl

        from cumtool.sinks import output_name

        width = source.width
        repeated = {n for n, c in collections.Counter(source.column_names).items() if c > 1}
        self._na = pl.Series(source.markers, dtype=pl.String).implode()
        self._decimal_comma = request.csv_read("csv").decimal_comma
        self._separator = write_options.delimiter.encode()
        self._encoding = write_options.encoding
        self._output = output_name(request.output)
        bounds = [*range(0, width, wide.GROUP_COLUMNS), width]
        if len(bounds) > 2 and bounds[-1] - bounds[-2] < 2:
            del bounds[-2]  # no group of one column: a lone column is written differently
        rank = {column: k for k, column in enumerate(selected)}
        specs: dict[tuple[str, str], Any] = {}  # one spec a source type, as make_spec is
        context = _Context(request, dtype, source, rank, repeated, write_options, scan, specs)
        self._groups = [_Group(context, start, stop)
                        for start, stop in itertools.pairwise(bounds)]
        if request.only_scanned:
            self._groups = [g for g in self._groups if g.selected]
            if sum(len(g.schema) for g in self._groups) == 1:
                self._groups[0].single(True)

    def header(self) -> bytes:
        parts = [group.render_header() for group in self._groups]
        return self._joined(parts)

    def apply(self, rows: list[list[str | None]]) -> bytes:
        """A batch of records as output records: the runner's plan.apply."""
        return self.render(rows)

    def render(self, rows: list[list[str | None]]) -> bytes:
        from cumtool.errors import ScanOverflowError

        columns = list(zip(*rows, strict=True))  # cells column by column
        parts: list[list[bytes]] = []
        first: ScanOverflowError | None = None
        for group in self._groups:
            try:
                parts.append(group.render(columns, len(rows), self._na, self._decimal_comma))
            except ScanOverflowError as error:
                # The first in file order, then the leftmost scanned column, as on the
                # narrow path: a later group may hold an earlier row.
                if first is None or error.position < first.position:
                    first = error
        if first is not None:
            raise first
        for group in self._groups:
            group.rows_done += len(rows)
        return self._joined(parts)

    def _joined(self, parts: list[list[bytes]]) -> bytes:
        separator = self._separator
        text = b"".join(separator.join(cells) + b"\n" for cells in zip(*parts, strict=True))
        if self._encoding is not None:
            from cumtool.sinks import reporting

            with reporting(self._output):  # --na-rep € in latin-1: the narrow path's line
                return text.decode("utf-8").encode(self._encoding)
        return text


class _Context:
    """What every group of a run shares."""

    def __init__(self, request: Request, dtype: np.dtype | None, source: WideSource,
                 rank: dict[int, int], repeated: set[str], write_options: Any,
                 scan: dict[str, Any], specs: dict[tuple[str, str], Any]) -> None:
        self.request, self.dtype, self.source = request, dtype, source
        self.rank, self.repeated = rank, repeated
        self.write_options, self.scan, self.specs = write_options, scan, specs

    def label(self, position: int) -> str:
        name = self.source.column_names[position]
        return f"{name!r} (column {position + 1})" if name in self.repeated else repr(name)


class _Group:
    """Columns [start, stop) of a wide table. Numbers (ints, floats, flags) that share a
    type are scanned as one block, with their carried state; a group that scans decimals
    or dates goes through a TablePlan of its own for those."""

    def __init__(self, context: _Context, start: int, stop: int) -> None:
        import dataclasses

        import pyarrow as pa

        from cumtool.formats.csv.csvwrite import CsvSink
        from cumtool.ops import REGISTRY
        from cumtool.tables import is_temporal

        self.start, self.stop = start, stop
        self.rows_done = 0
        self._context = context
        source, request = context.source, context.request
        self._name = source.name
        names = source.column_names[start:stop]
        hints = source.hints[start:stop]
        # Local positions, in the order of the whole selection.
        self.selected = sorted((i - start for i in range(start, stop) if i in context.rank),
                               key=lambda i: context.rank[start + i])
        self.parse = {i: hints[i].parse_as for i in self.selected}
        self.plan: TablePlan | None = None
        # cumnunique's state is the values seen, which no kernel block carries: every
        # column it scans goes through the plan (distinct.py), text as it was read.
        distinct = REGISTRY[request.op].distinct
        special = [i for i in self.selected if distinct or pa.types.is_decimal(self.parse[i])
                   or is_temporal(self.parse[i])]
        if special:
            self.plan = self._plan(special, names, hints)
        self._blocks: list[tuple[Any, list[int], Any]] = []
        fields: dict[int, list[pa.Field]] = {}
        by_type: dict[str, list[int]] = {}
        for i in self.selected:
            if i not in special:
                by_type.setdefault(str(self.parse[i]), []).append(i)
        for columns in by_type.values():
            spec = self._spec(columns[0])
            self._blocks.append((spec, columns, _carry(spec, len(columns))))
            out_type = pa.from_numpy_dtype(spec.out_dtype)
            for i in columns:
                fields[i] = [pa.field(names[i], out_type)]
                if spec.indices:
                    fields[i].append(pa.field(f"{names[i]}_index", pa.int64()))
        if self.plan is not None:
            for i in special:
                fields[i] = self.plan.result_fields(i, names[i])
        text = pa.large_string()
        only = request.only_scanned
        self.text_columns = [i for i in range(stop - start)
                             if i not in fields and not only]
        self.schema = pa.schema([f for i in range(stop - start)
                                 for f in (fields[i] if i in fields
                                           else [] if only else [pa.field(names[i], text)])])
        self._rendered = io.BytesIO()
        # The header is rendered once, by render_header.
        options = dataclasses.replace(context.write_options, header=False, encoding=None)
        self._sink = CsvSink(self._rendered, self.schema, options, source.name)
        self.single(False)

    def _plan(self, special: list[int], names: list[str], hints: list[Any]) -> TablePlan:
        """A TablePlan for the group's decimals and dates, and every column cumnunique
        scans (the scan rules of a narrow file, column by column)."""
        import pyarrow as pa

        from cumtool.columns import Item, Selection
        from cumtool.tables import TableOptions, TablePlan

        columns = Selection(tuple(Item(str(i), position=i) for i in special))
        # A text cell that reads as a --na marker is missing for cumnunique, as a text
        # column of a narrow CSV (runner.table_options).
        options = TableOptions(columns=(columns,),
                               text_na=frozenset(self._context.source.na_values),
                               first_column=self.start,
                               repeated=frozenset(self._context.repeated))
        schema = pa.schema([pa.field(n, pa.large_string()) for n in names])
        plan = TablePlan(self._context.request.op, "rows", self._context.dtype, schema,
                         self._name, options, hints, **self._context.scan)
        plan.where = self._context.source.locate  # and name the line of a row
        return plan

    def _spec(self, position: int) -> Any:
        """The spec of a column of numbers: the same for every column of its type, made
        once (an error names the first such column, as on the narrow path)."""
        from cumtool import kernels
        from cumtool.columnar import numpy_dtype

        arrow_type = self.parse[position]
        key = (str(arrow_type), "")
        specs = self._context.specs
        if key not in specs:
            source_dtype = numpy_dtype(arrow_type)
            assert source_dtype is not None
            specs[key] = kernels.make_spec(
                self._context.request.op, source_dtype, self._context.dtype,
                what=f"column {self._context.label(self.start + position)}",
                **self._context.scan)
        return specs[key]

    def single(self, alone: bool) -> None:
        """Whether this group's one column is the whole output (written as CsvSink
        writes a table of one column), else it is written as one of many."""
        self._sink.set_single(alone)

    def render_header(self) -> list[bytes]:
        """The group's column names, quoted as CsvSink quotes a header."""
        return [self._context.write_options.delimiter.join(
            self._sink.quote(name) for name in self.schema.names).encode()]

    def render(self, columns: list[tuple[str | None, ...]], n: int, na: pl.Series,
               decimal_comma: bool) -> list[bytes]:
        """The output records (without line ends) of this group's columns of a batch of
        `n` records (`columns`: the whole batch's cells, column by column)."""
        import itertools

        import polars as pl
        import pyarrow as pa

        start = self.start
        results = self._scan(self._parsed(columns, n, na, decimal_comma), n)
        text: dict[int, pa.Array] = {}
        if self.text_columns:
            cells = pl.Series(list(itertools.chain.from_iterable(
                columns[start + i] for i in self.text_columns)), dtype=pl.String)
            stacked = cells.to_arrow()
            del cells
            text = {i: stacked.slice(k * n, n) for k, i in enumerate(self.text_columns)}
        arrays: list[pa.Array] = []
        for i in range(self.stop - start):
            if i in results:
                arrays.extend(a for a in results[i] if a is not None)
            elif i in text:
                arrays.append(text[i])
        return self._render(pa.RecordBatch.from_arrays(arrays, schema=self.schema), n)

    def _render(self, batch: pa.RecordBatch, count: int) -> list[bytes]:
        import numpy as np

        from cumtool.sinks import output_name, reporting

        with reporting(output_name(self._context.request.output)):
            self._sink.write(batch)
        rendered = self._rendered.getvalue()
        self._rendered.seek(0)
        self._rendered.truncate()
        data = np.frombuffer(rendered, dtype=np.uint8)
        ends = dialect.record_ends(data)
        if ends.shape[0] != count:
            raise AssertionError(f"{ends.shape[0]} records rendered for {count}")
        starts = np.concatenate(([0], ends[:-1] + 1))
        return [rendered[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]

    def _parsed(self, columns: list[tuple[str | None, ...]], n: int, na: pl.Series,
                decimal_comma: bool) -> dict[str, tuple[list[int], pa.Array]]:
        """The scanned columns converted as CsvSource converts them (missing markers
        become nulls; a cell that is neither is an error naming its row and column): all
        the group's columns of a type in one conversion, stacked one after another."""
        import itertools

        import numpy as np
        import polars as pl
        import pyarrow as pa

        from cumtool.formats.csv.csvcells import (
            comma_decimals,
            convert,
            markers_parse,
            surprise,
        )

        start = self.start
        by_type: dict[str, list[int]] = {}
        for i in self.selected:
            by_type.setdefault(str(self.parse[i]), []).append(i)
        out: dict[str, tuple[list[int], pa.Array]] = {}
        for key, positions in by_type.items():
            arrow_type = self.parse[positions[0]]
            cells = pl.Series(list(itertools.chain.from_iterable(
                columns[start + i] for i in positions)), dtype=pl.String)
            if arrow_type is None:  # text, which cumnunique compares as it was read
                out[key] = (positions, _arrow(cells))
                continue
            numeric = pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type)
            given = cells
            if decimal_comma and numeric:
                cells = comma_decimals(cells)
            parsed = convert(cells, arrow_type)
            check_all = markers_parse(self._context.source.markers, arrow_type)
            if parsed.null_count() or check_all:
                # As CsvSource: a column whose cells all parse as they are is taken as
                # parsed (unless a missing marker parses too), the others through missing
                # markers and stripped spaces.
                k = len(positions)
                failed = (np.ones(k, dtype=bool) if check_all
                          else parsed.is_null().to_numpy().reshape(k, n).any(axis=1))
                stripped = cells.str.strip_chars()
                kept = pl.select(pl.when(stripped.is_in(na)).then(None)
                                 .otherwise(stripped)).to_series()
                careful = convert(kept, arrow_type)
                slow = pl.Series(failed.repeat(n))
                bad = (careful.is_null() & kept.is_not_null() & slow).to_numpy().reshape(k, n)
                if bad.any():
                    column = int(bad.any(axis=1).argmax())
                    at = int(bad[column].argmax())
                    from cumtool.formats import row_text

                    row = self.rows_done + at + 1
                    where = row_text(row, self._context.source.row_line(row - 1))
                    source = self._context.source
                    raise surprise(self._name, where, source.column_names,
                                   start + positions[column],
                                   str(given[column * n + at]).strip(), arrow_type,
                                   source.na_values, decimal_comma)
                parsed = pl.select(pl.when(slow).then(careful).otherwise(parsed)).to_series()
            out[key] = (positions, _arrow(parsed))
        return out

    def _scan(self, stacks: dict[str, tuple[list[int], pa.Array]],
              n: int) -> dict[int, tuple[pa.Array, pa.Array | None]]:
        """Each scanned column's result (and index) for a batch: a block of columns that
        share a type in one kernel call, decimals and dates through the plan. Overflows
        carry their place in the whole table: (row from 0, rank among the scanned)."""
        from cumtool import kernels
        from cumtool.columnar import arrow_column, column_to_numpy
        from cumtool.errors import ScanOverflowError
        from cumtool.kernels import overflow_hint

        results: dict[int, tuple[pa.Array, pa.Array | None]] = {}
        overflows: list[ScanOverflowError] = []
        context = self._context
        for spec, columns, carry in self._blocks:
            positions, stacked = stacks[str(self.parse[columns[0]])]
            assert positions == columns
            k = len(columns)
            values, valid = column_to_numpy(stacked)
            block = values.reshape(k, n).T
            valid_block = None if valid is None else valid.reshape(k, n).T
            try:
                result = kernels.scan_block(spec, block, valid_block, carry)
            except ScanOverflowError as error:
                row, line = error.position[0], error.position[1]
                column = self.start + columns[line]
                from cumtool.formats import row_text

                at = self.rows_done + row
                overflows.append(ScanOverflowError(
                    f"{self._name}: column {context.label(column)}, "
                    f"{row_text(at + 1, context.source.row_line(at))}: {error.raw}"
                    f"{overflow_hint(context.request.overflow, error)}",
                    (self.rows_done + row, context.rank[column])))
                continue
            flat = result.values.T.reshape(-1)
            missing = None if valid is None else ~valid
            if result.missing is not None:  # a statistic of nothing (--exclusive at the start)
                stat_missing = result.missing.T.reshape(-1)
                missing = stat_missing if missing is None else missing | stat_missing
            out = arrow_column(flat, missing)
            index_stack = None
            if result.indices is not None:
                flat_indices = result.indices.T.reshape(-1)
                index_stack = arrow_column(flat_indices, flat_indices < 0)
            for j, i in enumerate(columns):
                results[i] = (out.slice(j * n, n),
                              None if index_stack is None else index_stack.slice(j * n, n))
        if self.plan is not None:
            plan = self.plan
            plan.rows_done = self.rows_done
            for positions, stacked in stacks.values():
                for j, i in enumerate(positions):
                    if i not in plan.scanned:
                        continue
                    try:
                        results[i] = plan.scan_column(i, stacked.slice(j * n, n), None)
                    except ScanOverflowError as error:
                        row = error.position[0]
                        overflows.append(ScanOverflowError(
                            error.raw, (row, context.rank[self.start + i])))
        if overflows:
            raise min(overflows, key=lambda error: error.position)
        return results


def _arrow(series: pl.Series) -> pa.Array:
    """A polars series as one Arrow array."""
    import pyarrow as pa

    stacked = series.to_arrow()
    if isinstance(stacked, pa.ChunkedArray):
        stacked = stacked.combine_chunks()
    return stacked


def _carry(spec: Any, lines: int) -> Any:
    from cumtool import kernels

    return kernels.initial_carry(spec, (lines,))
