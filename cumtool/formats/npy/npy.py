""".npy arrays in and out, streamed in C-order blocks along axis 0; .npz for value+index pairs.

Object arrays are refused before any data is read: cumtool never unpickles.
"""

from __future__ import annotations

import contextlib
import io
import math
import mmap
import os
import tempfile
import tokenize
import warnings
import zipfile
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import numpy as np
from numpy.lib import format as npformat

from cumtool.errors import DataError, FormatError, UsageError
from cumtool.formats import SourceBase
from cumtool.kernels import is_scannable
from cumtool.output import DiscardableStream, spooling
from cumtool.pipeline import spool_stream

if TYPE_CHECKING:
    import pyarrow as pa

_READ_PIECE = 16 << 20
_EMPTY_CELLS = 1 << 24
MAX_DIMS = 64  # numpy's own limit: a header may claim more
# Arrays are scanned row by row along axis 0, and a few rows (the carried running value,
# blocks queued for reading and writing) are in memory at once: a row's size is capped so
# that they fit the 256 MiB bound.
MAX_ROW_BYTES = 16 << 20


class _SmallReads:
    """Caps each read: a header length field may claim up to 4 GiB, and numpy reads what
    it claims in one call, which allocates it all before finding the stream shorter."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        return self._stream.read(min(size, 1 << 16) if size >= 0 else 1 << 16)


def _read_header(stream: IO[bytes], name: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    small = _SmallReads(stream)
    try:
        with warnings.catch_warnings():
            # numpy warns (on standard error) about headers "created on Python 2".
            warnings.simplefilter("ignore")
            return _parse_header(small)
    except (ValueError, OSError, SyntaxError, EOFError, UnicodeDecodeError, TypeError,
            RecursionError, tokenize.TokenError) as error:  # numpy's header parsing
        reason = " ".join(str(error).split())[:200]
        raise FormatError(f"{name}: not a valid .npy file: {reason}") from None


def _parse_header(small: _SmallReads) -> tuple[tuple[int, ...], bool, np.dtype]:
    version = npformat.read_magic(small)
    if version == (1, 0):
        return npformat.read_array_header_1_0(small)
    if version == (2, 0):
        return npformat.read_array_header_2_0(small)
    if version != (3, 0):
        raise ValueError(f"unknown format version {version[0]}.{version[1]}")
    # Version 3.0 (a UTF-8 header) has no public reader; numpy 2 keeps it here.
    impl = getattr(npformat, "_read_array_header", None)
    if impl is None:
        from numpy.lib import _format_impl

        impl = getattr(_format_impl, "_read_array_header")  # noqa: B009
    header: tuple[tuple[int, ...], bool, np.dtype] = impl(small, version)
    return header


def _check_dtype(dtype: np.dtype, name: str) -> None:
    if dtype.hasobject:
        raise FormatError(f"{name}: .npy holds Python objects; cumtool never unpickles data")
    if dtype.fields is not None or dtype.subdtype is not None:
        raise FormatError(
            f"{name}: .npy holds structured dtype {dtype}; need a plain numeric array"
        )
    if not is_scannable(dtype):
        raise FormatError(f"{name}: .npy has dtype {dtype}, which cumtool cannot scan")


class NpySource(SourceBase):
    """A .npy array from a file (read by position; memory-mapped in Fortran order) or a
    stream (read block by block)."""

    layout = "array"

    def __init__(self, stream: IO[bytes], name: str, path: str | None = None) -> None:
        self.name = name
        shape, fortran, dtype = _read_header(stream, name)
        _check_dtype(dtype, name)
        self.shape: tuple[int, ...] = tuple(int(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise FormatError(f"{name}: not a valid .npy file: shape {self.shape} has a "
                              "negative dimension")
        if len(self.shape) > MAX_DIMS:
            raise FormatError(f"{name}: .npy has {len(self.shape)} dimensions; numpy (and "
                              f"cumtool) handle at most {MAX_DIMS}")
        row_bytes = math.prod(self.shape[1:]) * dtype.itemsize
        if row_bytes > MAX_ROW_BYTES:
            raise FormatError(
                f"{name}: .npy of shape {self.shape}: one row along axis 0 holds "
                f"{row_bytes / (1 << 20):.0f} MiB; cumtool scans row by row in bounded "
                f"memory and takes rows of at most {MAX_ROW_BYTES >> 20} MiB (reshape it)")
        if math.prod(self.shape) == 0 and math.prod(n for n in self.shape if n) > _EMPTY_CELLS:
            # No data bounds the other dimensions of an empty array, yet a scan keeps a
            # running value per line and a table has a column per cell of a row.
            raise FormatError(f"{name}: not a valid .npy file: shape {self.shape} is empty "
                              "but has dimensions too large to process")
        self.dtype: np.dtype = dtype
        self._head = b""  # bytes read ahead from a stream, consumed first
        self._stream = stream
        self._offset = stream.tell() if stream.seekable() else 0
        self._array: np.ndarray | None = None
        self._fd: int | None = None  # a file's, its rows read by position (`_rows`)
        expected = math.prod(self.shape) * dtype.itemsize
        if path is not None:
            size = stream.seek(0, 2)
            if size - self._offset < expected:
                raise FormatError(
                    f"{name}: .npy is truncated: header promises {expected} data bytes, "
                    f"file has {size - self._offset}"
                )
            if expected and self.shape and not fortran:
                # Its rows read by position (os.preadv), not memory-mapped: a file cut
                # short while it is read is an error, where a mapped page past its end
                # kills the run (SIGBUS).
                self._fd = stream.fileno()
            else:
                self._array = np.memmap(
                    path, dtype=dtype, mode="r", offset=self._offset, shape=self.shape,
                    order="F" if fortran else "C",
                ) if expected else np.empty(self.shape, dtype)
        elif fortran:
            # Its rows are scattered through the data: spool it to disk, not to memory.
            self._array = self._spooled(expected)
        elif expected and self.shape:
            # A stream's header cannot be checked against a file size: make sure the first
            # row is really there before anything of a row's size is allocated for it.
            self._head = self._read_exact(expected // self.shape[0]).tobytes()

    def _spooled(self, size: int) -> np.ndarray:
        """The rest of a stream (`size` bytes), memory-mapped from an anonymous temporary
        file: nothing is left behind however the run ends."""
        with spool_stream(self._stream, size) as spool:
            stored = os.fstat(spool.fileno()).st_size
            if stored < size:
                raise FormatError(f"{self.name}: .npy is truncated ({stored} of {size} bytes)")
            if not size:
                return np.empty(self.shape, self.dtype)
            # The mapping keeps the file's data after it is closed.
            return np.memmap(spool, dtype=self.dtype, mode="r", shape=self.shape, order="F")

    def _rows(self, start: int, stop: int) -> np.ndarray:
        """Rows `start` to `stop` of a file's array, read by position."""
        assert self._fd is not None
        block = np.empty((stop - start, *self.shape[1:]), self.dtype)
        view = block.data.cast("B")
        at = self._offset + start * math.prod(self.shape[1:]) * self.dtype.itemsize
        done = 0
        while done < view.nbytes:
            try:
                got = os.preadv(self._fd, [view[done:]], at + done)
            except OSError as error:
                raise FormatError(f"{self.name}: cannot read: {error.strerror or error}"
                                  ) from None
            if not got:
                raise FormatError(f"{self.name}: .npy is truncated: it was cut short while "
                                  f"it was read (no data at byte {at + done})")
            done += got
        return block

    def _read_exact(self, size: int) -> np.ndarray:
        # In pieces: one read() of what a (corrupt) header promises would allocate it all
        # before finding out the stream is shorter.
        data = bytearray(self._head[:size])
        self._head = self._head[size:]
        while len(data) < size:
            piece = self._stream.read(min(size - len(data), _READ_PIECE))
            if not piece:
                raise FormatError(
                    f"{self.name}: .npy is truncated ({len(data)} of {size} bytes)")
            data += piece
        return np.frombuffer(data, dtype=np.uint8)

    def blocks(self, rows: int) -> Iterator[np.ndarray]:
        """Blocks of at most `rows` along axis 0 (the whole array once if it is 0-d)."""
        if not self.shape:
            yield (self._array if self._array is not None else
                   self._read_exact(self.dtype.itemsize).view(self.dtype)).reshape(())
            return
        total = self.shape[0]
        if math.prod(self.shape) == 0:  # one empty block, even for a shape like (10**18, 0)
            yield np.empty(self.shape, self.dtype)
            return
        row_bytes = math.prod(self.shape[1:]) * self.dtype.itemsize
        for start in range(0, total, rows):
            stop = min(start + rows, total)
            if self._fd is not None:
                yield self._rows(start, stop)
            elif self._array is not None:
                yield np.ascontiguousarray(self._array[start:stop])
                _drop_pages(self._array)
            else:
                raw = self._read_exact((stop - start) * row_bytes)
                yield raw.view(self.dtype).reshape((stop - start, *self.shape[1:]))

    def reversed_blocks(self, rows: int) -> Iterator[np.ndarray]:
        """Blocks from the last row to the first, each with its rows reversed. A stream is
        spooled to a temporary file first (memory stays bounded)."""
        if self._fd is not None:
            for stop in range(self.shape[0], 0, -rows):
                yield np.ascontiguousarray(self._rows(max(0, stop - rows), stop)[::-1])
            return
        if self._array is None:
            with tempfile.TemporaryFile(suffix=".cumtool-spool") as spool:
                for block in self.blocks(rows):
                    spool.write(np.ascontiguousarray(block).data)
                spool.flush()
                if spool.tell() == 0:
                    yield np.empty(self.shape, self.dtype)
                    return
                mapped = np.memmap(spool, dtype=self.dtype, mode="r", shape=self.shape)
                yield from _reversed_blocks_of(mapped, rows)
            return
        yield from _reversed_blocks_of(self._array, rows)


def _reversed_blocks_of(array: np.ndarray, rows: int) -> Iterator[np.ndarray]:
    total = array.shape[0]
    for stop in range(total, 0, -rows):
        start = max(0, stop - rows)
        yield np.ascontiguousarray(array[start:stop][::-1])
        _drop_pages(array)


def _drop_pages(array: np.ndarray) -> None:
    """Unmap the pages of a memory-mapped file read so far: they count as the process's
    memory while mapped (a 1 GB .npy peaked at 1 GB), and are read again from the page
    cache if touched again. A block handed out may be a view of the mapping: it stays
    valid."""
    mapped = getattr(array, "_mmap", None)
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if mapped is not None and advice is not None:
        with contextlib.suppress(OSError, ValueError):
            mapped.madvise(advice)


def _header_bytes(shape: tuple[int, ...], dtype: np.dtype) -> bytes:
    header = {"descr": npformat.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    spool = io.BytesIO()
    try:
        npformat.write_array_header_1_0(spool, header)
    except ValueError:  # header longer than version 1.0 allows
        spool = io.BytesIO()
        npformat.write_array_header_2_0(spool, header)
    return spool.getvalue()


class NpySink:
    """Writes an array of known shape block by block; with indices, a .npz of both."""

    def __init__(
        self, stream: IO[bytes], shape: tuple[int, ...], dtype: np.dtype, with_indices: bool
    ) -> None:
        self._stream = stream
        self._shape = shape
        self._dtype = dtype
        self._zip: zipfile.ZipFile | None = None
        self._indices_spool: IO[bytes] | None = None
        self._out = DiscardableStream(stream)
        self._values: IO[bytes] = stream
        try:
            if with_indices:
                self._zip = zipfile.ZipFile(self._out, mode="w", allowZip64=True)
                self._values = self._zip.open("values.npy", mode="w", force_zip64=True)
                with spooling():
                    self._indices_spool = tempfile.TemporaryFile()
                    self._indices_spool.write(_header_bytes(shape, np.dtype(np.int64)))
            self._values.write(_header_bytes(shape, dtype))
        except BaseException:
            self.abort()  # no engine holds this sink yet to abort it
            raise

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        self._values.write(np.ascontiguousarray(values, dtype=self._dtype).data)
        if self._indices_spool is not None and indices is not None:
            with spooling():
                self._indices_spool.write(np.ascontiguousarray(indices, dtype=np.int64).data)

    def close(self) -> None:
        if self._zip is None or self._indices_spool is None:
            return
        self._values.close()
        with spooling():
            self._indices_spool.seek(0)
        with self._zip.open("indices.npy", mode="w", force_zip64=True) as entry:
            while True:
                with spooling():
                    chunk = self._indices_spool.read(1 << 20)
                if not chunk:
                    break
                entry.write(chunk)
        self._indices_spool.close()
        self._zip.close()

    def abort(self) -> None:
        """After a failure: let go of the .npz quietly (its output is discarded), or the
        zip module complains about an open entry, with a traceback, at exit."""
        if self._indices_spool is not None:
            self._indices_spool.close()
        if self._zip is None:
            return
        self._out.discard()  # the zip's directory goes nowhere
        with contextlib.suppress(OSError, ValueError):
            if self._values is not self._stream:  # an entry of the zip was opened
                self._values.close()
        with contextlib.suppress(OSError, ValueError):
            self._zip.close()


class NpyTableSink:
    """A table written as a 2-D .npy (rows x numeric columns). The row count is known only
    at the end, so rows are spooled to a temporary file and the header written last."""

    def __init__(self, stream: IO[bytes], columns: list[str], dtype: np.dtype) -> None:
        self._stream = stream
        self._columns = columns
        self._dtype = dtype
        self._rows = 0
        with spooling():
            self._spool = tempfile.TemporaryFile()

    def write_rows(self, block: np.ndarray) -> None:
        with spooling():
            self._spool.write(np.ascontiguousarray(block, dtype=self._dtype).data)
        self._rows += block.shape[0]

    def close(self) -> None:
        self._stream.write(_header_bytes((self._rows, len(self._columns)), self._dtype))
        with spooling():
            self._spool.seek(0)
        while True:
            with spooling():
                chunk = self._spool.read(1 << 22)
            if not chunk:
                break
            self._stream.write(chunk)
        self._spool.close()

    def abort(self) -> None:
        self._spool.close()


class NpzOfOps:
    """Several ops on one array (`cumsum,cummax`) as one .npz: an entry per op in the
    order given (and `<op>_indices` after cummax/cummin with --indices). Each entry is
    written as the run goes to a .npy spool of its own; `close` zips them into the output
    in order, as numpy.load reads them back."""

    def __init__(self, stream: IO[bytes], shape: tuple[int, ...],
                 entries: list[tuple[str, np.dtype, bool]]) -> None:
        self._out = DiscardableStream(stream)
        self._spools: list[tuple[str, IO[bytes]]] = []
        self.writers: list[_OpEntries] = []
        try:
            for name, dtype, with_indices in entries:
                values = self._spool(name, shape, dtype)
                indices = (self._spool(f"{name}_indices", shape, np.dtype(np.int64))
                           if with_indices else None)
                self.writers.append(_OpEntries(values, indices))
        except BaseException:
            self.abort()
            raise

    def _spool(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> NpySink:
        with spooling():
            spool = tempfile.TemporaryFile()
        self._spools.append((name, spool))
        return NpySink(spool, shape, dtype, with_indices=False)

    def close(self) -> None:
        with zipfile.ZipFile(self._out, mode="w", allowZip64=True) as archive:
            for name, spool in self._spools:
                with spooling():
                    spool.seek(0)
                with archive.open(f"{name}.npy", mode="w", force_zip64=True) as entry:
                    while True:
                        with spooling():
                            chunk = spool.read(1 << 20)
                        if not chunk:
                            break
                        entry.write(chunk)
                spool.close()

    def abort(self) -> None:
        self._out.discard()
        for _name, spool in self._spools:
            spool.close()


class _OpEntries:
    """One op's array sink: its values, and its positions, each to an entry's spool."""

    def __init__(self, values: NpySink, indices: NpySink | None) -> None:
        self._values = values
        self._indices = indices

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        with spooling():
            self._values.write(values, None)
            if self._indices is not None and indices is not None:
                self._indices.write(indices, None)

    def close(self) -> None:
        """Nothing to do: the spools are zipped by NpzOfOps.close."""

    def abort(self) -> None:
        """Nothing to do: NpzOfOps.abort closes the spools."""


class TableToNpy:
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
        self._rows = 0  # written so far

    def write(self, batch: pa.RecordBatch) -> None:
        import pyarrow as pa

        from cumtool.columnar import column_to_numpy, decimal_to_float

        columns = []
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            if pa.types.is_decimal(column.type):
                column = decimal_to_float(column)
            values, valid = column_to_numpy(column)
            if valid is not None:
                row = self._rows + int(np.flatnonzero(~valid)[0]) + 1
                raise DataError(f"column {name!r} has a missing cell at row {row} of the "
                                "output, which .npy cannot hold; write csv or parquet "
                                "instead")
            columns.append(values)
        if columns:
            self._sink.write_rows(np.column_stack(columns))
        self._rows += batch.num_rows

    def close(self) -> None:
        self._sink.close()

    def abort(self) -> None:
        self._sink.abort()
