"""Overlap of reading, scanning and writing, and the progress bar.

Reading (parsing) runs one batch ahead in a thread and writing one batch behind in
another; polars, pyarrow and numpy release the GIL while they work, so on two cores the
three stages run side by side. Queues are short, so memory stays a few batches.
Exceptions raised in a thread are re-raised in the main thread at the next hand-over.
"""

from __future__ import annotations

import contextlib
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

T = TypeVar("T")
_DONE = object()
QUEUE_DEPTH = 2


_M_MMAP_THRESHOLD = -3  # glibc's mallopt() parameter number
_MMAP_THRESHOLD_BYTES = 1 << 20


def return_freed_batches_to_the_os() -> None:
    """Keep peak memory flat on long streams (glibc only; elsewhere nothing to do).

    glibc raises its mmap threshold each time a large block is freed, so after the first
    batches every batch buffer comes from the heap, and freed ones stay in the process:
    resident memory grew to about 400 MB on a 10M-row CSV here. A fixed threshold
    keeps batch-sized buffers memory-mapped and returned on free (about 290 MB)."""
    import ctypes
    import ctypes.util
    import sys

    if not sys.platform.startswith("linux"):
        return
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return


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


class BackgroundSink:
    """Runs a sink's writes in a thread, in order; `close` waits for them to finish."""

    def __init__(self, sink: Any, depth: int = QUEUE_DEPTH) -> None:
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

    def abort(self) -> None:
        self._queue.put(_DONE)
        self._thread.join()
        abort = getattr(self._sink, "abort", None)
        if abort is not None:
            abort()


class Progress:
    """A rich progress bar on stderr, shown only once a run has taken `delay` seconds."""

    def __init__(self, enabled: bool, total: int | None, unit: str, description: str,
                 delay: float = 1.0) -> None:
        self._enabled = enabled
        self._total = total
        self._unit = unit
        self._description = description
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

        count: Any = (rp.DownloadColumn() if self._unit == "bytes"
                      else rp.MofNCompleteColumn() if self._total else
                      rp.TextColumn("{task.completed} rows"))
        rate: Any = (rp.TransferSpeedColumn() if self._unit == "bytes"
                     else rp.TextColumn(""))
        self._bar = rp.Progress(
            rp.TextColumn("{task.description}"), rp.BarColumn(), count, rate,
            rp.TimeRemainingColumn(), console=Console(stderr=True), transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(self._description, total=self._total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def reversed_batches(
    batches: Iterator[pa.RecordBatch], stack: contextlib.ExitStack
) -> tuple[int, Iterator[pa.RecordBatch]]:
    """Spool `batches` to a temporary Arrow file; return the row count and the rows in
    reverse order, batch by batch (memory-mapped: bounded memory at any size)."""
    import pyarrow as pa

    spool = stack.enter_context(tempfile.NamedTemporaryFile(suffix=".cumtool-spool"))
    total = 0
    writer = None
    for batch in batches:
        if writer is None:
            writer = pa.ipc.new_file(spool.name, batch.schema)
        writer.write_batch(batch)
        total += batch.num_rows
    if writer is None:
        return 0, iter(())
    writer.close()

    def backwards() -> Iterator[pa.RecordBatch]:
        with pa.memory_map(spool.name) as source:
            reader = pa.ipc.open_file(source)
            for i in reversed(range(reader.num_record_batches)):
                yield flip_rows(reader.get_batch(i))

    return total, backwards()


def flip_rows(batch: pa.RecordBatch | pa.Table) -> Any:
    """The rows of a batch or table in reverse order."""
    import pyarrow as pa

    return batch.take(pa.array(range(batch.num_rows - 1, -1, -1), type=pa.int64()))


class ReversingSink:
    """Collects batches produced in reverse order and writes them in input order."""

    def __init__(self, sink: Any, stack: contextlib.ExitStack) -> None:
        self._sink = sink
        self._stack = stack
        self._spool: Any = None
        self._writer: Any = None

    def write(self, batch: pa.RecordBatch) -> None:
        import pyarrow as pa

        if self._writer is None:
            self._spool = self._stack.enter_context(
                tempfile.NamedTemporaryFile(suffix=".cumtool-spool"))
            self._writer = pa.ipc.new_file(self._spool.name, batch.schema)
        self._writer.write_batch(batch)

    def close(self) -> None:
        import pyarrow as pa

        if self._writer is not None:
            self._writer.close()
            with pa.memory_map(self._spool.name) as source:
                reader = pa.ipc.open_file(source)
                for i in reversed(range(reader.num_record_batches)):
                    self._sink.write(flip_rows(reader.get_batch(i)))
        self._sink.close()

    def abort(self) -> None:
        abort = getattr(self._sink, "abort", None)
        if abort is not None:
            abort()


class ReversingArraySink:
    """Array blocks produced last block first, written in input order (via a spool)."""

    def __init__(self, sink: Any, stack: contextlib.ExitStack) -> None:
        self._sink = sink
        self._spool = stack.enter_context(tempfile.TemporaryFile(suffix=".cumtool-spool"))
        self._blocks: list[tuple[int, np.ndarray, np.ndarray | None]] = []
        self._shapes: list[tuple[int, ...]] = []

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        import numpy as np

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
            self._spool.seek(offset)
            block = np.fromfile(self._spool, dtype=values.dtype, count=count).reshape(shape)
            index_block = None
            if indices is not None:
                index_block = np.fromfile(self._spool, dtype=np.int64,
                                          count=count).reshape(shape)
            self._sink.write(block, index_block)
        self._sink.close()

    def abort(self) -> None:
        abort = getattr(self._sink, "abort", None)
        if abort is not None:
            abort()
