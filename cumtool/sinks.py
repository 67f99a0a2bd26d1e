"""Where results go: the output format's writer (each format package declares its own),
with the adapters every format shares: JSON Lines' nested values as text, and an array
written as a table. Writers' modules load only for their format."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from cumtool import kernels
from cumtool.errors import CumtoolError, OutputError, UsageError
from cumtool.formats import (
    ArraySink,
    FileKind,
    TableSink,
    WriteRequest,
    Writing,
    holds_json_text,
)
from cumtool.formats.registry import format_named
from cumtool.pipeline import drain

if TYPE_CHECKING:
    import pyarrow as pa

    from cumtool.view import View


def table_sink(request: WriteRequest, out: FileKind, stream: IO[bytes], schema: pa.Schema,
               view: View | None, source_name: str, output: str | None = None) -> TableSink:
    """The writer of a table's batches in the output's format (cumtool.formats.registry);
    each writer's module (and its library) loads only when used. `output`: the output as
    its failures name it (default: --output, or standard output)."""
    name = output_name(output or request.output)
    with reporting(name):
        return Reporting(_table_sink(request, out, stream, schema, view, source_name), name)


def _table_sink(request: WriteRequest, out: FileKind, stream: IO[bytes], schema: pa.Schema,
                view: View | None, source_name: str) -> TableSink:
    declared = format_named(out.format)
    if out.compression and not declared.delimited:
        raise UsageError(f"{out.compression} compression is for csv and tsv output only, "
                         f"not {out.format}")
    assert declared.writer is not None  # the options name output formats only
    if declared.nested_as_text and _has_json_text(schema):
        import pyarrow as pa

        from cumtool.formats.jsonl.jsonl import cell_text

        # JSON Lines' nested and mixed values: strings as their text, the rest as JSON.
        fields = [f.remove_metadata() for f in schema]
        plain = declared.writer(Writing(stream, pa.schema(fields, metadata=schema.metadata),
                                        out, request, view, source_name))
        return _Converting(plain, cell_text)
    if declared.typed:
        from cumtool.formats.jsonl.missing import stored_schema

        schema = stored_schema(schema)
    return declared.writer(Writing(stream, schema, out, request, view, source_name))


def output_name(output: str | None) -> str:
    """An output as messages name it."""
    return "standard output" if output in (None, "-") else str(output)


def writer_failed(output: str, error: Exception) -> OutputError:
    """A writer's own failure (not cumtool's errors, nor OSError, which the output stream
    reports itself) as one line that names the output and keeps the failure's type and
    text: what went wrong is still said, but never as a traceback."""
    if isinstance(error, UnicodeEncodeError):  # a character --out-encoding lacks
        from cumtool.errors import option

        found = error.object[error.start:error.end]
        codes = ", ".join(f"U+{ord(c):04X}" for c in found[:3])
        return OutputError(f"cannot write {output}: {found[:3]!r} ({codes}) cannot be "
                           f"written in {error.encoding}, the output's encoding; choose one "
                           f"that has it ({option('out_encoding', 'utf-8')})")
    text = " ".join(str(error).split())
    return OutputError(f"cannot write {output}: {type(error).__name__}"
                       + (f": {text}" if text else ""))


@contextlib.contextmanager
def reporting(output: str) -> Iterator[None]:
    """Around a writer's call: its failures inside pyarrow, polars or a C loop (a
    ValueError, a TypeError, ...) become writer_failed's one line."""
    try:
        yield
    except (CumtoolError, OSError, MemoryError):  # memory is the run's, not the writer's
        raise
    except Exception as error:
        raise writer_failed(output, error) from error


class Reporting:
    """A writer (of batches, or of an array's blocks) whose failures are reported."""

    def __init__(self, sink: Any, output: str) -> None:
        self._sink = sink
        self._output = output

    def write(self, *items: Any) -> None:
        with reporting(self._output):
            self._sink.write(*items)

    def close(self) -> None:
        with reporting(self._output):
            self._sink.close()

    def drain(self) -> None:
        with reporting(self._output):
            drain(self._sink)

    def abort(self) -> None:
        self._sink.abort()


def _has_json_text(schema: pa.Schema) -> bool:
    return any(holds_json_text(f) for f in schema)


class _Converting:
    """A sink whose batches are converted first."""

    def __init__(self, sink: TableSink, convert: Any) -> None:
        self._sink = sink
        self._convert = convert

    def write(self, batch: pa.RecordBatch) -> None:
        self._sink.write(self._convert(batch))

    def close(self) -> None:
        self._sink.close()

    def drain(self) -> None:
        drain(self._sink)

    def abort(self) -> None:
        self._sink.abort()


def array_sink(request: WriteRequest, out: FileKind, stream: IO[bytes],
               shape: tuple[int, ...], spec: kernels.ScanSpec, view: View | None,
               source_name: str) -> ArraySink:
    """The writer of an array's blocks: the format's own array writer (.npy, the terminal
    table), else a table of columns 0, 1, ... (1-D and 2-D arrays only)."""
    declared = format_named(out.format)
    if declared.array_writer is not None:
        name = output_name(request.output)
        with reporting(name):
            return Reporting(declared.array_writer(Writing(stream, None, out, request, view,
                                                           source_name), shape, spec.out_dtype),
                             name)
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
    return ArrayToTable(sink, schema)


MAX_TABLE_COLUMNS = 1 << 15


class ArrayToTable:
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

    def drain(self) -> None:
        drain(self._sink)

    def abort(self) -> None:
        self._sink.abort()
