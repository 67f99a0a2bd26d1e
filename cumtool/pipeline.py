"""Overlap of reading, scanning and writing, and the progress bar.

Reading (parsing) runs one batch ahead in a thread and writing one batch behind in
another; polars, pyarrow and numpy release the GIL while they work, so on two cores the
three stages run side by side. Queues are short, so memory stays a few batches.
Exceptions raised in a thread are re-raised in the main thread at the next hand-over.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import IO, TYPE_CHECKING, Any, TypeVar

from cumtool.output import spool_error, spooling

if TYPE_CHECKING:
    import concurrent.futures

    import numpy as np
    import pyarrow as pa

    from cumtool.formats import ArraySink, TableSink

T = TypeVar("T")
_DONE = object()
_ABORTED = RuntimeError("aborted")  # stands in for the failure while queued writes drain
QUEUE_DEPTH = 2


def prefetch(items: Iterator[T], depth: int = QUEUE_DEPTH) -> Generator[T, None, None]:
    """Iterate `items` in a background thread, `depth` items ahead."""
    handoff: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((_DONE, None))
        except BaseException as error:  # handed to the main thread, which re-raises it
            put((_DONE, error))

    thread = threading.Thread(target=work, name="cumtool-reader", daemon=True)
    thread.start()
    try:
        while True:
            item, error = handoff.get()
            if error is not None:
                raise error
            if item is _DONE:
                return
            yield item
    finally:
        stop.set()
        # The reader may be blocked on input that never comes (a stalled producer on a
        # pipe); it is a daemon thread, so a failed or finished run does not wait for it.
        thread.join(timeout=1.0)


def drain(sink: Any) -> None:
    """Have `sink` write what it holds of the rows given so far (what its threads made
    ahead, or queued), where it holds any; a wrapper passes the call on."""
    call = getattr(sink, "drain", None)
    if call is not None:
        call()


class BackgroundSink:
    """Runs a sink's writes in a thread, in order; `close` waits for them to finish."""

    def __init__(self, sink: TableSink | ArraySink, depth: int = QUEUE_DEPTH) -> None:
        self._sink = sink
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="cumtool-writer", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            call = self._queue.get()
            if call is _DONE:
                return
            if self._error is not None:
                continue  # drain after a failure
            try:
                call()
            except BaseException as error:  # re-raised in the main thread
                self._error = error

    def _raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _submit(self, call: Callable[[], None]) -> None:
        self._raise_pending()
        self._queue.put(call)

    def write(self, *args: Any) -> None:
        self._submit(lambda: self._sink.write(*args))

    def close(self) -> None:
        self._submit(self._sink.close)
        self._queue.put(_DONE)
        self._thread.join()
        self._raise_pending()

    def drain(self) -> None:
        """Write what is queued (and what the sink made ahead), then stop: a run that
        failed on its input keeps the rows before the failure, however far the writes
        had got (abort follows). A write's failure is raised here."""
        if self._thread.is_alive():
            self._queue.put(_DONE)
            self._thread.join()
        self._raise_pending()
        drain(self._sink)

    def abort(self) -> None:
        if self._thread.is_alive():
            self._error = self._error or _ABORTED  # drop the writes still queued
            self._queue.put(_DONE)
            self._thread.join()
        self._sink.abort()


class Regrouped:
    """A sink fed batches of `rows` rows each (the last one fewer), whatever rows the
    batches given hold: where a format's bytes follow its batches (Format.grouped) and
    the input's batches end where reads end. A group that spans batches is copied into
    one batch; one inside a batch is a slice of it."""

    def __init__(self, sink: TableSink, rows: int) -> None:
        self._sink = sink
        self._rows = rows
        self._held: list[pa.RecordBatch] = []
        self._count = 0  # the rows held

    def write(self, batch: pa.RecordBatch) -> None:
        start = 0
        while batch.num_rows - start >= self._rows - self._count:
            take = self._rows - self._count
            piece = batch.slice(start, take)
            start += take
            if self._held:
                self._held.append(piece)
                piece = self._joined()
            self._sink.write(piece)
        if start < batch.num_rows:
            self._held.append(batch.slice(start))
            self._count += batch.num_rows - start

    def _joined(self) -> pa.RecordBatch:
        import pyarrow as pa

        joined = pa.Table.from_batches(self._held).combine_chunks().to_batches()
        self._held, self._count = [], 0
        return joined[0]

    def _rest(self) -> None:
        if self._held:
            self._sink.write(self._joined())

    def close(self) -> None:
        self._rest()
        self._sink.close()

    def drain(self) -> None:
        self._rest()
        drain(self._sink)

    def abort(self) -> None:
        self._held = []
        self._sink.abort()


def written_into(into: bytearray | None, text: bytes) -> bytes | int:
    """A Python writer's `text` as the C writers give theirs (_ext/outroom.h): itself
    without `into`, else its size, written at the start of `into` (grown, never shrunk)."""
    if into is None:
        return text
    into[:len(text)] = text  # (a shorter bytearray grows to the text's size)
    return len(text)


class RenderedAhead:
    """Text made on `workers` threads a few items ahead of its turn (by calls that release
    the GIL while they work: the C writers' loops) and written to a stream in the order
    the calls were put; with one worker, each is made and written at once, on the
    caller's thread. Only the caller writes to the stream."""

    def __init__(self, stream: IO[bytes], workers: int, name: str) -> None:
        self._stream = stream
        self._depth = workers
        self._name = name
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._spare: list[bytearray] = []  # put_into's buffers whose text is written
        self._queue: collections.deque[tuple[concurrent.futures.Future[Any],
                                             Callable[[Any], None] | None]] = \
            collections.deque()

    def put(self, make: Callable[[], Any],
            written: Callable[[Any], None] | None = None) -> None:
        """Make the text of `make()` (bytes or a view) and write it after what was put
        before; then `written(text)`, where given (the text's buffer may be reused)."""
        if self._depth <= 1:
            self._write(make(), written)
            return
        if self._pool is None:
            import concurrent.futures  # loaded only where text is made ahead

            self._pool = concurrent.futures.ThreadPoolExecutor(self._depth,
                                                               thread_name_prefix=self._name)
        self._queue.append((self._pool.submit(make), written))
        # what is made already goes out now (a slow input: text not held back longer)
        while len(self._queue) > self._depth or (self._queue and self._queue[0][0].done()):
            self._write_next()

    def put_into(self, make: Callable[[bytearray], bytes | int]) -> None:
        """put() for text that `make` writes into the buffer it is given, returning its
        size (or bytes of its own): a buffer kept once its text is written, for the text
        after it (_ext/outroom.h says why), unless a view still holds it."""
        self.put(lambda: self._made_into(make), self._give_back)

    def _made_into(self, make: Callable[[bytearray], bytes | int]) -> bytes | memoryview:
        try:
            into = self._spare.pop()  # (on any of the pool's threads)
        except IndexError:
            into = bytearray()
        made = make(into)
        if isinstance(made, int):
            return memoryview(into)[:made]
        self._spare.append(into)
        return made

    def _give_back(self, text: bytes | memoryview) -> None:
        if isinstance(text, memoryview) and isinstance(text.obj, bytearray):
            buffer = text.obj
            try:
                text.release()
            except BufferError:  # a view of this view: the buffer is left to it
                return
            self._spare.append(buffer)

    def _write_next(self) -> None:
        future, written = self._queue.popleft()
        self._write(future.result(), written)  # its error is raised here

    def _write(self, text: Any, written: Callable[[Any], None] | None) -> None:
        self._stream.write(text)
        if written is not None:
            written(text)

    def drain(self) -> None:
        """Write everything put so far (before text written otherwise)."""
        while self._queue:
            self._write_next()

    def close(self) -> None:
        """Write everything put, and end the threads."""
        self.drain()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def abort(self) -> None:
        """Drop what was not written; a call under way runs on, its text unused."""
        for future, _ in self._queue:
            future.cancel()
        self._queue.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class Progress:
    """A rich progress bar on stderr, shown only once a run has taken `delay` seconds."""

    def __init__(self, enabled: bool, total: int | None, unit: str, description: str,
                 delay: float = 1.0, console: Any = None) -> None:
        self._enabled = enabled
        self.total = total  # None: unknown (a pipe), shown as a count without a bar's end
        self.unit = unit  # "bytes" (of the input as stored) or "rows"
        self._description = description
        self._console = console
        self._started_at = time.monotonic()
        self._delay = delay
        self._bar: Any = None
        self._task: Any = None

    def update(self, completed: int) -> None:
        if not self._enabled:
            return
        if self._bar is None:
            if time.monotonic() - self._started_at < self._delay:
                return
            self._start()
        self._bar.update(self._task, completed=completed)

    def _start(self) -> None:
        from rich import progress as rp
        from rich.console import Console

        count: Any = (
            (rp.DownloadColumn() if self.total else rp.FileSizeColumn())
            if self.unit == "bytes" else
            rp.MofNCompleteColumn() if self.total else rp.TextColumn("{task.completed} rows"))
        rate: Any = (rp.TransferSpeedColumn() if self.unit == "bytes"
                     else rp.TextColumn(""))
        self._bar = rp.Progress(
            # Not markup: `[final]` in a file name would vanish, `[/bold]` raise (and
            # rich.markup.escape doubles a trailing backslash).
            rp.TextColumn("{task.description}", markup=False), rp.BarColumn(), count, rate,
            rp.TimeRemainingColumn(), console=self._console or Console(stderr=True),
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(shown(self._description), total=self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def shown(name: str) -> str:
    """A file name as bar text, control characters (a terminal escape, a line break) shown
    escaped rather than obeyed."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def reversed_batches(
    batches: Iterator[pa.RecordBatch], stack: contextlib.ExitStack
) -> tuple[int, Iterator[pa.RecordBatch]]:
    """Spool `batches` to a temporary Arrow file; return the row count and the rows in
    reverse order, batch by batch (read back one at a time: bounded memory at any size)."""
    import pyarrow as pa

    with spooling():
        spool = stack.enter_context(tempfile.NamedTemporaryFile(suffix=".cumtool-spool"))
    total = 0
    writer = None
    try:
        for batch in batches:
            with spooling():
                if writer is None:
                    writer = pa.ipc.new_file(spool.name, batch.schema)
                writer.write_batch(batch)
            total += batch.num_rows
        if writer is None:
            return 0, iter(())
        with spooling():
            writer.close()
    except BaseException:
        if writer is not None:
            with contextlib.suppress(pa.ArrowException, OSError):
                writer.close()
        raise
    return total, (flip_rows(batch) for batch in _backwards(spool.name))


def _backwards(path: str) -> Iterator[pa.RecordBatch]:
    """The batches of an Arrow spool file, last first. Read, not memory-mapped: mapped
    pages stay resident (and counted) until unmapped, so a 10M-row --reverse run held the
    whole spool, 830 MB; a read batch is freed once written."""
    import pyarrow as pa

    with spooling():
        source = pa.OSFile(path)
    with source:
        with spooling():
            reader = pa.ipc.open_file(source)
        for i in reversed(range(reader.num_record_batches)):
            with spooling():
                batch = reader.get_batch(i)
            yield batch


_SPOOL_PIECE = 1 << 20


def spool_stream(stream: IO[bytes], size: int | None = None) -> IO[bytes]:
    """A non-seekable input (or its next `size` bytes) copied to a temporary file, rewound:
    a format read from its end (Parquet's footer) or out of order (a Fortran-order .npy)
    is then read from disk, not held in memory. The file is anonymous (unlinked at once),
    so nothing is left behind however the run ends, SIGKILL included. Read errors pass
    through as they are, for the caller to name the format; a full disk is an
    OutputError."""
    with spooling():
        spool = tempfile.TemporaryFile(suffix=".cumtool-spool")
    try:
        copied = 0
        while size is None or copied < size:
            piece = stream.read(_SPOOL_PIECE if size is None
                                else min(_SPOOL_PIECE, size - copied))
            if not piece:
                break
            with spooling():
                spool.write(piece)
            copied += len(piece)
        with spooling():
            spool.flush()
            spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def spooled_blocks(blocks: Iterator[T]) -> Iterator[T]:
    """Blocks from a reader that spools its input first (.npy from a stream, reversed):
    a full temporary directory said in one line, as for the other spools."""
    try:
        yield from blocks
    except OSError as error:
        if error.errno not in _DISK_FULL:
            raise
        raise spool_error(error) from None


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def flip_rows(batch: pa.RecordBatch | pa.Table) -> Any:
    """The rows of a batch or table in reverse order."""
    import pyarrow as pa

    return batch.take(pa.array(range(batch.num_rows - 1, -1, -1), type=pa.int64()))


class ReversingSink:
    """Collects batches produced in reverse order and writes them in input order."""

    def __init__(self, sink: TableSink, stack: contextlib.ExitStack) -> None:
        self._sink = sink
        self._stack = stack
        self._spool: Any = None
        self._writer: Any = None

    def write(self, batch: pa.RecordBatch) -> None:
        import pyarrow as pa

        with spooling():
            if self._writer is None:
                self._spool = self._stack.enter_context(
                    tempfile.NamedTemporaryFile(suffix=".cumtool-spool"))
                self._writer = pa.ipc.new_file(self._spool.name, batch.schema)
            self._writer.write_batch(batch)

    def close(self) -> None:
        if self._writer is not None:
            with spooling():
                self._writer.close()
            for batch in _backwards(self._spool.name):
                self._sink.write(flip_rows(batch))
        self._sink.close()

    def abort(self) -> None:
        if self._writer is not None:
            import pyarrow as pa

            with contextlib.suppress(pa.ArrowException, OSError):
                self._writer.close()  # its spool file is removed with the run
        self._sink.abort()


class ReversingArraySink:
    """Array blocks produced last block first, written in input order (via a spool)."""

    def __init__(self, sink: ArraySink, stack: contextlib.ExitStack) -> None:
        self._sink = sink
        self._stack = stack
        self._spool: Any = None  # made at the first write, inside the run's failure handling
        self._blocks: list[tuple[int, np.ndarray, np.ndarray | None]] = []
        self._shapes: list[tuple[int, ...]] = []

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        import numpy as np

        with spooling():
            if self._spool is None:
                self._spool = self._stack.enter_context(
                    tempfile.TemporaryFile(suffix=".cumtool-spool"))
            offset = self._spool.tell()
            self._spool.write(np.ascontiguousarray(values).data)
            if indices is not None:
                self._spool.write(np.ascontiguousarray(indices).data)
        # Keep only empty arrays as shape/dtype templates; the data lives in the spool.
        self._blocks.append((offset, values[:0].reshape((0, *values.shape[1:])).copy()
                             if values.ndim else values, None if indices is None
                             else indices[:0].copy()))
        self._shapes.append(values.shape)

    def close(self) -> None:
        import numpy as np

        for (offset, values, indices), shape in zip(reversed(self._blocks),
                                                    reversed(self._shapes), strict=True):
            count = int(np.prod(shape, dtype=np.int64))
            index_block = None
            with spooling():
                self._spool.seek(offset)
                block = np.fromfile(self._spool, dtype=values.dtype, count=count).reshape(shape)
                if indices is not None:
                    index_block = np.fromfile(self._spool, dtype=np.int64,
                                              count=count).reshape(shape)
            self._sink.write(block, index_block)
        self._sink.close()

    def abort(self) -> None:
        self._sink.abort()  # the spool is closed (and so removed) with the run
