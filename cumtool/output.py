"""Where results go: a file written atomically, or standard output.

A file is written to a hidden temporary file beside the target and renamed over it only
once complete, so a failed or interrupted run leaves no partial file and any existing file
untouched; `-o` may therefore name the input itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import IO

from cumtool.errors import OutputError


class _GuardedStream:
    """Turns OSError on write into an OutputError that names the target."""

    def __init__(self, stream: IO[bytes], name: str, flush_each: bool = False) -> None:
        self._stream = stream
        self.name = name
        self.closed = False
        self._flush_each = flush_each

    def write(self, data: bytes | bytearray | memoryview) -> int:
        try:
            # A big write can come back short (a pipe whose reader left, a full disk) with
            # no exception; write the rest, so that the failure surfaces as an error.
            view = memoryview(data)
            size = view.nbytes
            if view.ndim != 1 or view.format != "B":
                try:
                    view = view.cast("B") if size else memoryview(b"")
                except (TypeError, ValueError):  # not a plain C-contiguous buffer
                    view = memoryview(view.tobytes())
            while view:
                written = self._stream.write(view)
                if written is None or written <= 0:
                    raise OSError(errno.EIO, "short write")
                view = view[written:]
            if self._flush_each:
                self._stream.flush()
            return size
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputError(f"cannot write {self.name}: {error.strerror or error}") from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputError(f"cannot write {self.name}: {error.strerror or error}") from None

    def tell(self) -> int:
        return self._stream.tell()

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def close(self) -> None:
        # The owner closes the real stream; writers that close their target (pyarrow) must
        # not close standard output or the temporary file early.
        self.closed = True


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[IO[bytes]]:
    """Yield a binary stream for `path` ('-' or None: standard output)."""
    if path is None or path == "-":
        if sys.stdout is None:  # started with standard output closed (`>&-`)
            raise OutputError("cannot write standard output: it is closed")
        # Flushed at every write so that a pipeline's next stage sees rows as they come.
        stdout = _GuardedStream(sys.stdout.buffer, "standard output", flush_each=True)
        yield stdout  # type: ignore[misc]
        stdout.flush()
        return
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        # A device or a pipe (/dev/null, /dev/stdout, a FIFO): write to it directly; a
        # temporary file renamed over it would replace the device node itself.
        try:
            special = open(path, "wb")
        except OSError as error:
            raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
        with special:
            guarded = _GuardedStream(special, path)
            yield guarded  # type: ignore[misc]
            guarded.flush()
        return
    target = os.path.realpath(path)  # through a symlink: replace the file, keep the link
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise OutputError(f"cannot write {path}: directory {directory} does not exist")
    if os.path.isdir(target):
        raise OutputError(f"cannot write {path}: it is a directory")
    try:
        fd, temporary = tempfile.mkstemp(
            prefix=f".{os.path.basename(target)}.", suffix=".cumtool-tmp", dir=directory
        )
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb") as raw:
            guarded = _GuardedStream(raw, path)
            yield guarded  # type: ignore[misc]
            guarded.flush()
            try:
                os.fsync(raw.fileno())
            except OSError as error:
                raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
        _copy_mode(target, temporary)
        try:
            os.replace(temporary, target)
        except OSError as error:
            raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _copy_mode(target: str, temporary: str) -> None:
    """A replaced file keeps its permissions; a new one gets the umask's default."""
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(temporary, mode)
