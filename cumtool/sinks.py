"""Where results go, by output format: CSV/TSV (optionally compressed), Parquet, .npy
(.npz with indices), the terminal table or a chart (on the terminal, or an SVG or PNG),
with adapters so that tables can be written as arrays and arrays as tables. Writers'
modules load only for their format."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from cumtool import kernels
from cumtool.errors import DataError, UsageError
from cumtool.formats import (
    DELIMITED,
    ArraySink,
    FileKind,
    TableSink,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from cumtool.request import Request
    from cumtool.view import View


def table_sink(request: Request, out: FileKind, stream: IO[bytes], schema: pa.Schema,
                view: View, source_name: str) -> TableSink:
    # Each writer's module (and its library) loads only when used.
    if out.format in ("jsonl", "arrow", "arrows"):
        return _more_table_sink(out, stream, schema)
    if out.format == "chart":
        return _chart_sink(request, stream, schema, view, source_name)
    if out.format in (*DELIMITED, "table") and _has_json_text(schema):
        import pyarrow as pa

        from cumtool.formats.jsonl import cell_text

        # JSON Lines' nested and mixed values: strings as their text, the rest as JSON.
        fields = [f.remove_metadata() for f in schema]
        plain = table_sink(request, out, stream, pa.schema(fields, metadata=schema.metadata),
                           view, source_name)
        return _Converting(plain, cell_text)
    if out.format in DELIMITED:
        from cumtool.formats.csvwrite import CompressingSink, CsvSink

        return CompressingSink(CsvSink, stream, out.compression, schema,
                                request.csv_write(out.format), source_name)
    if out.format == "parquet":
        from cumtool.formats.parquet import ParquetSink

        return ParquetSink(stream, schema)
    if out.format == "table":
        from cumtool.formats.pretty import PrettySink

        return _InMemory(PrettySink(stream, view, console=_terminal_console(request, stream),
                                    schema=schema, encoding=_text_encoding(request),
                                    keys=_key_names(request, schema)))
    from cumtool.formats.npy import NpyTableSink

    return _TableToNpy(NpyTableSink, stream, schema)


def _chart_sink(request: Request, stream: IO[bytes], schema: pa.Schema, view: View,
                source_name: str) -> TableSink:
    """The chart decimates as it goes: it holds no rows, and draws on close."""
    from cumtool.formats.chart import ChartOptions, ChartSink

    image = request.chart_image()
    options = ChartOptions(ops=tuple(request.ops), keep=request.keep or len(request.ops) > 1,
                           x=request.x, by=request.by, width=request.width,
                           height=request.height, image=image)
    console = None if image else _terminal_console(request, stream)
    return ChartSink(stream, schema, view, options, source_name, console=console,
                     encoding=_text_encoding(request))


def _key_names(request: Request, schema: pa.Schema) -> frozenset[str]:
    """The --by columns, which the terminal table keeps in view whatever its width."""
    from cumtool.columns import resolve
    from cumtool.errors import CumtoolError

    keys: list[str] = []
    for selection in request.by:
        try:
            keys.extend(schema.names[i] for i in resolve(selection, schema.names, "output"))
        except CumtoolError:  # the plan has said what is wrong with it already
            continue
    return frozenset(keys)


def _has_json_text(schema: pa.Schema) -> bool:
    return any(f.metadata and b"cumtool.json" in f.metadata for f in schema)


def _more_table_sink(out: FileKind, stream: IO[bytes], schema: pa.Schema) -> TableSink:
    if out.compression:
        raise UsageError(f"{out.compression} compression is for csv and tsv output only, "
                         f"not {out.format}")
    if out.format == "jsonl":
        from cumtool.formats.jsonl import JsonlSink

        return JsonlSink(stream, schema)
    from cumtool.formats.arrow_ipc import ArrowSink

    return ArrowSink(stream, schema, file_format=out.format == "arrow")


class _Converting:
    """A sink whose batches are converted first."""

    def __init__(self, sink: TableSink, convert: Any) -> None:
        self._sink = sink
        self._convert = convert

    def write(self, batch: pa.RecordBatch) -> None:
        self._sink.write(self._convert(batch))

    def close(self) -> None:
        self._sink.close()

    def abort(self) -> None:
        self._sink.abort()


class _InMemory:
    """A sink that holds only memory until `close` (the terminal view): abort drops it."""

    def __init__(self, sink: Any) -> None:
        self._sink = sink

    def write(self, batch: pa.RecordBatch) -> None:
        self._sink.write(batch)

    def close(self) -> None:
        self._sink.close()

    def abort(self) -> None:
        self._sink = None


def _text_encoding(request: Request) -> str:
    """The table's text: in the locale's encoding on standard output, else UTF-8."""
    if request.output in (None, "-"):
        return getattr(sys.stdout, "encoding", None) or "utf-8"
    return "utf-8"


def _terminal_console(request: Request, stream: IO[bytes]) -> Any:
    if request.output in (None, "-") and request.stdout_is_terminal:
        from cumtool.formats.pretty import terminal_console

        return terminal_console(stream, _text_encoding(request))
    return None


class _TableToNpy:
    """A table written as a 2-D .npy: every column must be numeric and complete."""

    def __init__(self, sink_type: Any, stream: IO[bytes], schema: pa.Schema) -> None:
        import pyarrow as pa

        from cumtool.columnar import numpy_dtype

        dtypes = []
        for f in schema:
            # A decimal's numpy dtype is its scaled int64 (for scans); .npy gets its value.
            dtype = np.dtype(np.float64) if pa.types.is_decimal(f.type) else numpy_dtype(f.type)
            if dtype is None:
                raise UsageError(
                    f".npy output holds numbers only, but column {f.name!r} is {f.type}; "
                    "add --only-scanned to write the scanned columns alone, or write csv "
                    "or parquet"
                )
            dtypes.append(dtype)
        self._sink = sink_type(stream, schema.names, np.result_type(*dtypes))

    def write(self, batch: pa.RecordBatch) -> None:
        import pyarrow as pa

        from cumtool.columnar import column_to_numpy, decimal_to_float

        columns = []
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            if pa.types.is_decimal(column.type):
                column = decimal_to_float(column)
            values, valid = column_to_numpy(column)
            if valid is not None:
                row = int(np.flatnonzero(~valid)[0]) + 1
                raise DataError(f"column {name!r} has a missing cell (row {row} of a batch), "
                                "which .npy cannot hold; write csv or parquet instead")
            columns.append(values)
        if columns:
            self._sink.write_rows(np.column_stack(columns))

    def close(self) -> None:
        self._sink.close()

    def abort(self) -> None:
        self._sink.abort()


def array_sink(request: Request, out: FileKind, stream: IO[bytes], shape: tuple[int, ...],
                spec: kernels.ScanSpec, view: View, source_name: str) -> ArraySink:
    from cumtool.formats.npy import NpySink

    if out.format == "npy":
        if out.compression:
            raise UsageError("compressed .npy output is not supported; write .npy")
        if request.indices and str(request.output).lower().endswith(".npy"):
            raise UsageError(f"--indices writes values and indices as a .npz archive; name "
                             f"the output .npz, not {request.output}")
        return NpySink(stream, shape, spec.out_dtype, request.indices)
    if out.format == "table":
        from cumtool.formats.pretty import PrettySink

        return _ArrayToPretty(PrettySink(stream, view, console=_terminal_console(request, stream),
                                         encoding=_text_encoding(request)), shape)
    if len(shape) > 2:
        raise UsageError(f"a {len(shape)}-d array cannot be written as {out.format}; "
                         "write .npy or use --to table")
    if spec.out_dtype.kind == "c":
        raise UsageError(f"complex values cannot be written as {out.format}; write .npy")
    import pyarrow as pa

    width = shape[1] if len(shape) == 2 else 1
    if width > MAX_TABLE_COLUMNS:
        # Each column of a table costs memory in every batch, whatever its rows.
        raise UsageError(f"{source_name}: {width} columns are too many for {out.format} "
                         f"output (at most {MAX_TABLE_COLUMNS}, to stay within memory); "
                         "write .npy")
    names = [str(i) for i in range(width)]
    fields = []
    for name in names:
        fields.append(pa.field(name, pa.from_numpy_dtype(spec.out_dtype)))
        if request.indices:
            fields.append(pa.field(f"{name}_index", pa.int64()))
    schema = pa.schema(fields)
    sink = table_sink(request, out, stream, schema, view, source_name)
    return _ArrayToTable(sink, schema)


MAX_TABLE_COLUMNS = 1 << 15


class _ArrayToTable:
    """1-D and 2-D array blocks as table batches: columns named 0, 1, ..."""

    def __init__(self, sink: TableSink, schema: pa.Schema) -> None:
        self._sink = sink
        self._schema = schema

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        import pyarrow as pa

        from cumtool.columnar import arrow_column

        # Explicit width: reshape(n, -1) cannot infer it for an empty block.
        width = int(np.prod(values.shape[1:], dtype=np.int64))
        values = values.reshape(values.shape[0] if values.ndim else 1, width)
        if indices is not None:
            indices = indices.reshape(values.shape)
        arrays = []
        for i in range(values.shape[1]):
            arrays.append(arrow_column(values[:, i], None))
            if indices is not None:
                arrays.append(arrow_column(indices[:, i], None))
        self._sink.write(pa.RecordBatch.from_arrays(arrays, schema=self._schema))

    def close(self) -> None:
        self._sink.close()

    def abort(self) -> None:
        self._sink.abort()


class _ArrayToPretty:
    """Array blocks for the terminal view, which holds only memory until `close`."""

    def __init__(self, sink: Any, shape: tuple[int, ...]) -> None:
        self._sink = sink
        self._shape = shape

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        self._sink.write_array(self._shape, values, indices)

    def close(self) -> None:
        self._sink.close()

    def abort(self) -> None:
        self._sink = None
