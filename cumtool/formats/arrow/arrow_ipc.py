"""Arrow IPC in and out with pyarrow: the file format (`.arrow`, `.feather` v2) and the
stream format (`.arrows`, and what pipes carry). Columns keep their Arrow types exactly
(decimals, dictionaries, time zones): batches pass through as they are."""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Mapping
from typing import IO, Any

import pyarrow as pa
import pyarrow.ipc as ipc

from cumtool.columnar import batch_without_views, schema_without_views
from cumtool.errors import DataError
from cumtool.formats import SourceBase, unreadable
from cumtool.output import DiscardableStream

# What pyarrow raises on a damaged or truncated file (a MemoryError for a size read from
# corrupt metadata).
_DAMAGE = (pa.ArrowException, OSError, UnicodeDecodeError, MemoryError)
# A file written as one huge batch is handed on in slices (zero-copy) of this many rows,
# so the results of one batch stay small.
MAX_BATCH_ROWS = 1 << 17


class ArrowSource(SourceBase):
    """An Arrow IPC file (`stream=False`: random access, read by position when it is a path)
    or stream, read batch by batch. A file read from a pipe comes spooled to disk."""

    def __init__(self, stream: IO[bytes] | str, name: str, *, file_format: bool,
                 batch_rows: int | None) -> None:
        self.name = name
        self._fmt = "arrow" if file_format else "arrows"
        self._batch_rows = batch_rows or MAX_BATCH_ROWS
        self._file: Any = None
        self._stream: Any = None
        try:
            # Read by position, not memory-mapped: a file cut short while it is read is
            # an error here, where a mapped page past its end kills the run (SIGBUS).
            source: Any = pa.OSFile(stream) if isinstance(stream, str) else stream
            if file_format:
                self._file = ipc.open_file(source)
                self._schema = self._file.schema
            else:
                self._stream = ipc.open_stream(source)
                self._schema = self._stream.schema
        except _DAMAGE as error:
            raise unreadable(name, self._fmt, error) from None
        self._schema = schema_without_views(self._schema)  # polars writes its text as views
        self.num_rows = self._rows()

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def _rows(self) -> int | None:
        """Rows in all (a file's batch lengths are in its footer; a stream's are not)."""
        if self._file is None:
            return None
        try:
            return int(self._file.count_rows())  # from the batches' headers only
        except _DAMAGE:
            return None

    def _stored(self) -> Iterator[pa.RecordBatch]:
        if self._file is not None:
            for i in range(self._file.num_record_batches):
                yield self._file.get_batch(i)
        else:
            yield from self._stream

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]:
        """The stored batches, sliced to at most the batch size. Arrow columns are typed:
        nothing is parsed or left out (`parse` and `unused` are for text formats)."""
        try:
            for batch in self._stored():
                # The reader checks only the layout: offsets, UTF-8 and dictionary indices
                # out of range would reach the writers (polars panics on them).
                batch.validate(full=True)
                batch = batch_without_views(batch, self._schema)
                for start in range(0, max(batch.num_rows, 1), self._batch_rows):
                    yield batch.slice(start, self._batch_rows)
        except _DAMAGE as error:
            raise unreadable(self.name, self._fmt, error) from None


class ArrowSink:
    """An Arrow IPC file or stream, uncompressed (the fastest to write and to read back;
    a pipe's reader gets each batch as it is written)."""

    def __init__(self, stream: IO[bytes], schema: pa.Schema, *, file_format: bool) -> None:
        self._out = DiscardableStream(stream)
        # Batches may carry different dictionaries (one per Parquet row group): a stream
        # sends the replacement, a file (which allows none) gets the new entries as deltas.
        options = ipc.IpcWriteOptions(emit_dictionary_deltas=True)
        opener = ipc.new_file if file_format else ipc.new_stream
        self._writer = opener(self._out, schema, options=options)
        self._file_format = file_format
        self._dictionaries: dict[int, pa.Array] = {}

    def write(self, batch: pa.RecordBatch) -> None:
        if self._file_format:
            batch = self._one_dictionary(batch)
        try:
            self._writer.write_batch(batch)
        except pa.ArrowException as error:
            raise DataError(f"cannot write Arrow IPC: {error}") from None

    def _one_dictionary(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """An IPC file allows one dictionary per column, growing by deltas only: a batch
        whose dictionary is another (a stream's replacement, Parquet's row groups) has
        its indices mapped into the dictionary so far, extended by its new values."""
        arrays = list(batch.columns)
        changed = False
        for i, column in enumerate(arrays):
            if not pa.types.is_dictionary(column.type):
                continue
            seen = self._dictionaries.get(i)
            dictionary = column.dictionary
            if seen is None or (len(dictionary) >= len(seen)
                                and dictionary.slice(0, len(seen)).equals(seen)):
                self._dictionaries[i] = dictionary
                continue
            import pyarrow.compute as pc

            grown = pa.concat_arrays([seen, dictionary]).unique()
            indices = pc.index_in(column.dictionary_decode(), value_set=grown)
            try:
                arrays[i] = pa.DictionaryArray.from_arrays(
                    indices.cast(column.type.index_type), grown)
            except pa.ArrowInvalid:
                raise DataError(f"column {batch.schema.names[i]!r}: its dictionary outgrows "
                                f"its {column.type.index_type} indices; write arrows (the "
                                "stream format) instead") from None
            self._dictionaries[i] = grown
            changed = True
        return pa.RecordBatch.from_arrays(arrays, schema=batch.schema) if changed else batch

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        """Release the writer after a failure; its footer goes nowhere."""
        self._out.discard()
        with contextlib.suppress(pa.ArrowException, OSError, ValueError):
            self._writer.close()
