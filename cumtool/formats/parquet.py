"""Parquet in and out with pyarrow, batch by batch."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq

from cumtool.formats import unreadable


class ParquetSource:
    """A Parquet file read by row-group batches. Parquet keeps its footer at the end, so a
    non-seekable stream (standard input) is first read into memory."""

    def __init__(self, stream: IO[bytes] | str, name: str, batch_rows: int) -> None:
        self.name = name
        self._batch_rows = batch_rows
        if not isinstance(stream, str) and not stream.seekable():
            stream = io.BytesIO(stream.read())
        try:
            self._file = pq.ParquetFile(stream)
            self._schema = self._file.schema_arrow
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as error:
            raise unreadable(name, "parquet", error) from None

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def num_rows(self) -> int:
        return int(self._file.metadata.num_rows)

    def batches(self) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._file.iter_batches(batch_size=self._batch_rows)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as error:
            raise unreadable(self.name, "parquet", error) from None


class ParquetSink:
    def __init__(self, stream: IO[bytes], schema: pa.Schema) -> None:
        self._writer = pq.ParquetWriter(stream, schema.remove_metadata())

    def write(self, batch: pa.RecordBatch) -> None:
        self._writer.write_batch(batch)

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        """Release the writer after a failure; the half-written file is discarded anyway."""
        with contextlib.suppress(pa.ArrowException, OSError, ValueError):
            self._writer.close()
