"""CSV and TSV for `--engine dask` (cumtool.distributed): a file cut into byte ranges that
end on record boundaries, and the reader of one range (the file's first record put before
it where that stands in as the header). Loaded only when Dask reads delimited text.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cumtool.formats import BOM, SourceBase
from cumtool.formats.partitioning import Partition, Splitting
from cumtool.formats.partitions import open_location, size_of

if TYPE_CHECKING:
    from cumtool.formats.csv.csv import CsvSource


def _first_record_end(head: bytes) -> int | None:
    """Where the first record of a file's first bytes ends (after its newline), past a
    byte-order mark and blank lines as the reader skips them; None: not within `head`."""
    import numpy as np

    start = 0
    if head.startswith(BOM):
        start = len(BOM)
    while start < len(head) and head[start] in b"\r\n":
        start += 1
    from cumtool.formats.csv import dialect

    outside = dialect.record_ends(np.frombuffer(head, dtype=np.uint8, offset=start))
    return start + int(outside[0]) + 1 if outside.shape[0] else None


def quote_layout(location: str, start: int, end: int) -> tuple[int, int, int]:
    """A worker's look at one byte range of a CSV file: the parity of its quotes, and the
    first newline outside quotes if the range starts outside a quoted field, and if it
    starts inside one (-1: none). A quote always toggles: "" inside a field toggles twice."""
    import numpy as np

    with contextlib.ExitStack() as stack:
        stream = open_location(location, stack)
        stream.seek(start)
        chunk = stream.read(end - start)
    from cumtool.formats.csv import dialect

    data = np.frombuffer(chunk, dtype=np.uint8)
    newlines = np.flatnonzero(data == ord("\n"))
    quotes = np.flatnonzero(data == ord('"'))
    firsts = [newlines[dialect.outside_quotes(quotes, newlines, parity)] for parity in (0, 1)]
    outside, inside = (int(f[0]) if f.shape[0] else -1 for f in firsts)
    return int(quotes.shape[0] % 2), outside, inside


def splittable(request: Any, compression: str | None) -> bool:
    """Byte ranges need an uncompressed file in an encoding where a newline and a quote
    are the bytes 0x0A and 0x22 wherever they occur (not UTF-16); and no --comment: a
    comment line's quotes do not count, which a range's quote parity cannot tell (and
    the header may follow comments), so such a file is read whole, by one worker."""
    if compression is not None or request.comment is not None:
        return False
    encoding = request.encoding or "utf-8"
    try:
        return "\n\"".encode(encoding) == b"\n\"" and "é".encode(encoding) != b""
    except (LookupError, UnicodeError):
        return False


def split(splitting: Splitting) -> list[Partition]:
    """Byte ranges that start on record boundaries. A newline ends a record only outside
    quotes, which no byte range can tell alone: the workers report each range's quote
    parity and its first newline for either starting state, and the client chains the
    parities from the file's start (the reader refuses a quote that RFC 4180 does not
    allow, so the parity is exact for every file that reads at all)."""
    whole = [splitting.whole()]
    if not splittable(splitting.request, splitting.kind.compression):
        return whole
    location, step = splitting.location, splitting.partition_bytes
    size = size_of(location)
    if size <= step:
        return whole
    with contextlib.ExitStack() as stack:
        stream = open_location(location, stack)
        head = stream.read(min(size, max(step, 1 << 20)))
    header_end = _first_record_end(head)
    if header_end is None:  # a first record longer than a partition: read it whole
        return whole
    header = head[:header_end]
    starts = list(range(0, size, step))
    layouts = splitting.gather(quote_layout,
                               [(location, s, min(s + step, size)) for s in starts])
    bounds = [0]
    parity = 0
    for start, (quotes, outside, inside) in zip(starts, layouts, strict=True):
        first = outside if parity == 0 else inside
        if start > 0 and first >= 0 and start + first + 1 > max(bounds[-1], header_end):
            bounds.append(start + first + 1)
        parity ^= quotes
    bounds = [b for b in bounds if b < size] + [size]
    return [splitting.whole(start=a, end=b, header=header if k else b"", first_of_file=k == 0)
            for k, (a, b) in enumerate(itertools.pairwise(bounds))]


def open_partition(part: Partition, request: Any, stack: contextlib.ExitStack,
                   whole: Callable[[], SourceBase] | None = None) -> CsvSource:
    """The reader of a CSV partition: its byte range, after the file's first record where
    that stands in as the header (a whole file too: by the CSV reader, as its byte ranges
    are, not `whole`)."""
    from cumtool.formats.csv.csv import CsvSource
    from cumtool.formats.records import MAX_RECORD_BYTES

    stream = open_location(part.location, stack)
    if part.end is not None:
        stream.seek(part.start)
        stream = io.BytesIO(part.header + stream.read(part.end - part.start))
    options = request.csv_read(part.format)
    if part.header:  # the file's first record stands in as the header: its width
        options = dataclasses.replace(options, header=True)
    return CsvSource(stream, part.name, options, compression=part.compression,
                     decimal=request.decimal,
                     max_record=request.max_record_size or MAX_RECORD_BYTES)
