"""Where results go: a file written atomically, or standard output.

A file is written to a hidden temporary file beside the target and renamed over it only
once complete, so a failed or interrupted run leaves no partial file and any existing file
untouched; `-o` may therefore name the input itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Any

from cumtool.commit import TEMPORARY_SUFFIX, Commit, remove_leftovers, temporary_prefix
from cumtool.errors import OutputError
from cumtool.remote import is_url


class _WriteOnly:
    """What the writers (pyarrow, polars, numpy) ask of a stream they are handed: written
    in order, never sought or read, and closed by its owner, never by them."""

    closed = False

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


class _GuardedStream(_WriteOnly):
    """Turns OSError on write into an OutputError that names the target. With
    `writeback`, the file's pages start on their way to disk as it is written (see
    _Writeback)."""

    def __init__(self, stream: IO[bytes], name: str, flush_each: bool = False,
                 writeback: bool = False) -> None:
        self._stream = stream
        self.name = name
        self._flush_each = flush_each
        self._writeback = _Writeback(stream) if writeback else None

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
            if self._writeback is not None:
                self._writeback.wrote(size)
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

    def write_directly(self, writer: Callable[[int, int], int]) -> int | None:
        """Where the stream is a regular file's, `writer(fd, writeback)` writes the rest of
        it straight to the descriptor (what this stream holds flushed first; `writeback`:
        how often to start the disk's writes, 0 for none) and returns how many bytes, or
        -1 where it took none; a failed write is worded as write()'s. None where the
        stream is not a regular file's: the caller writes through write()."""
        try:
            fd = self._stream.fileno()
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
        except (OSError, ValueError, AttributeError):
            return None
        self.flush()
        try:
            count = writer(fd, _WRITEBACK_BYTES if self._writeback is not None else 0)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputError(f"cannot write {self.name}: {error.strerror or error}") from None
        if count < 0:
            return None
        self._writeback = None  # the writer started the disk's writes of what it wrote
        return count

    def tell(self) -> int:
        return self._stream.tell()

    def rewind_point(self) -> int | None:
        """Where this stream is a regular file's written at its end (not opened to
        append, nothing after the position), that position: `rewind` can then cut the
        file back to it, leaving it as it was. None where it cannot."""
        try:
            fd = self._stream.fileno()
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or not self._stream.seekable():
                return None
            import fcntl

            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
                return None  # others may write at its end too: never cut back
            self.flush()
            point = os.lseek(fd, 0, os.SEEK_CUR)
            return point if point == os.fstat(fd).st_size else None
        except (OSError, ValueError, AttributeError, ImportError):  # (no fcntl: Windows)
            return None

    def rewind(self, point: int) -> None:
        """Cut the file back to `point` (rewind_point's) and write on from there."""
        try:
            self._stream.flush()
            self._stream.seek(point)
            self._stream.truncate(point)
        except OSError as error:
            raise OutputError(f"cannot write {self.name}: {error.strerror or error}") from None


# Linux's sync_file_range(2) flag: start writing the range's dirty pages, do not wait.
_SYNC_FILE_RANGE_WRITE = 2
_WRITEBACK_BYTES = 8 << 20


class _Writeback:
    """Starts the disk writes of a file that will be fsynced, every _WRITEBACK_BYTES as it
    is written (sync_file_range, SYNC_FILE_RANGE_WRITE: Linux only; no wait for the disk),
    so that the fsync at the end finds most pages already written. On Parquet -> Parquet
    2M x 8 (87 MB) the final fsync took 41-54 ms of the run's end, 3-5 ms with this.
    Nothing here is needed for durability: the fsync is. Where the call is missing or
    fails, it is not tried again (an I/O error is the fsync's to report)."""

    _call: Any = None  # libc's sync_file_range, once looked up; False: none

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._pending = 0  # bytes written since the last call
        self._started = 0  # where that call's range ended
        self._off = False

    def wrote(self, size: int) -> None:
        self._pending += size
        if self._off or self._pending < _WRITEBACK_BYTES:
            return
        call = _sync_call()
        try:
            fd = self._stream.fileno()
        except (OSError, ValueError, AttributeError):
            fd = -1
        if not call or fd < 0:
            self._off = True
            return
        # What the buffered writer holds goes to the kernel first (its failure is the
        # write's). The file is written from its start, in order: it ends where this says.
        self._stream.flush()
        if call(fd, self._started, self._pending, _SYNC_FILE_RANGE_WRITE) != 0:
            self._off = True
            return
        self._started += self._pending
        self._pending = 0


def _sync_call() -> Any:
    """libc's sync_file_range, looked up once for the process (_Writeback._call, which
    the tests replace), or False where there is none."""
    if _Writeback._call is None:
        _Writeback._call = _sync_file_range()
    return _Writeback._call


def _sync_file_range() -> Any:
    """libc's sync_file_range through ctypes (loaded only for outputs of several MB), or
    False where there is none."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        call = ctypes.CDLL(None).sync_file_range
    except (OSError, AttributeError):
        return False
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


class DiscardableStream(_WriteOnly):
    """A writer's stream that can be told to drop what comes next: an aborted writer
    (Parquet, a compressor, a zip) still writes its trailer when released, and that must
    neither fail again on a full disk nor reach a file that is being discarded."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._discarding = False
        self._position = 0  # while discarding: where the writer believes it is

    def discard(self) -> None:
        self._discarding = True  # first: a stream without tell() (output held back) too
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self._position = self._stream.tell()

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._discarding:
            size = memoryview(data).nbytes
            self._position += size
            return size
        return self._stream.write(data)

    def flush(self) -> None:
        if not self._discarding:
            self._stream.flush()

    def tell(self) -> int:
        return self._position if self._discarding else self._stream.tell()



def _failed(path: str, error: OSError) -> OutputError:
    return OutputError(f"cannot write {path}: {error.strerror or error}")


def _close_quietly(stream: IO[bytes]) -> None:
    """Close after a failure: a second error (the flush of a full disk) must not replace
    the first one, which is already on its way to the user."""
    with contextlib.suppress(OSError, ValueError):
        stream.close()


def staged_output(path: str | None) -> bool:
    """Whether open_output(path) writes a file beside its target and renames it over the
    target only once the run ends well (`_replacing`): a run dropped leaves nothing of it.
    Standard output and a device or pipe are written as they go; a URL counts as not
    staged too."""
    if path is None or path == "-" or is_url(path) or named_descriptor(path) is not None:
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # open_output words it


@contextlib.contextmanager
def open_output(path: str | None, commit: Commit | None = None) -> Iterator[IO[bytes]]:
    """Yield a binary stream for `path` ('-' or None: standard output). With `commit`, a
    file is left complete and fsynced beside its target, to be renamed by the commit
    together with the run's other files (cumtool.commit)."""
    if path is None or path == "-":
        if sys.stdout is None:  # started with standard output closed (`>&-`)
            raise OutputError("cannot write standard output: it is closed")
        # Flushed at every write so that a pipeline's next stage sees rows as they come.
        with _written(sys.stdout.buffer, "standard output", owned=False,
                      flush_each=True) as stdout:
            yield stdout
        return
    descriptor = named_descriptor(path)
    if descriptor is not None:  # /dev/stdout, /dev/fd/3: the open file, not its name
        with _on_descriptor(path, descriptor) as stream:
            yield stream
        return
    if is_url(path):  # uploaded from a local temporary file once complete
        from cumtool.remote import uploading

        with uploading(path) as local:
            guarded = _GuardedStream(local, path)
            yield guarded  # type: ignore[misc]
            guarded.flush()
        return
    try:
        info = os.stat(path)
    except FileNotFoundError:  # a new file (or a dangling link, written through)
        info = None
    except OSError as error:  # a symlink loop, a path through a file, ...
        raise _failed(path, error) from None
    if info is not None and not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
        # A device or a pipe (/dev/null, /dev/stdout, a FIFO): write to it directly; a
        # temporary file renamed over it would replace the device node itself.
        with _special_file(path) as special:
            yield special
        return
    with _replacing(path, info, commit) as replacement:
        yield replacement


# The names of this process's own open descriptors (Linux's /proc, and /dev's links to it).
_DESCRIPTOR_NAME = re.compile(
    r"/dev/(?:std(?P<std>in|out|err)|fd/(?P<fd>[0-9]+))"
    r"|/proc/(?P<pid>self|thread-self|[0-9]+)(?:/task/[0-9]+)?/fd/(?P<proc_fd>[0-9]+)")
_STANDARD = {"in": 0, "out": 1, "err": 2}


def named_descriptor(path: str) -> int | None:
    """The descriptor of this process that `path` names, itself or through links: where
    standard output is a file, /dev/stdout resolves to that file's path, and a temporary
    file renamed over it would take the place of what the shell opened (`>>` appending
    to a log, `{ ...; } > file` gathering several commands' output), losing it."""
    seen = path
    for _ in range(40):  # as the kernel follows links
        found = _DESCRIPTOR_NAME.fullmatch(os.path.normpath(seen))
        if found is not None:
            if found["std"] is not None:
                return _STANDARD[found["std"]]
            if found["fd"] is not None:
                return int(found["fd"])
            if found["pid"] in ("self", "thread-self") or int(found["pid"]) == os.getpid():
                return int(found["proc_fd"])
            return None  # another process's: a file like any other
        if not os.path.islink(seen):
            return None
        seen = os.path.join(os.path.dirname(seen), os.readlink(seen))
    return None


@contextlib.contextmanager
def _on_descriptor(path: str, descriptor: int) -> Iterator[IO[bytes]]:
    """Written where the descriptor stands, as a redirect writes it (never cut, never
    renamed over), each write flushed as standard output's are; the descriptor stays
    open (a run dropped for another may still cut its own output back: runner._InPlace)."""
    if descriptor == 1 and sys.stdout is not None:
        stream: Any = sys.stdout.buffer
    else:
        try:
            stream = os.fdopen(descriptor, "wb", closefd=False)
        except OSError as error:
            raise _failed(path, error) from None
    with _written(stream, path, owned=False, flush_each=True) as guarded:
        yield guarded


@contextlib.contextmanager
def _special_file(path: str) -> Iterator[IO[bytes]]:
    try:
        special = open(path, "wb")
    except OSError as error:
        raise _failed(path, error) from None
    with _written(special, path) as guarded:
        yield guarded


@contextlib.contextmanager
def _written(stream: IO[bytes], path: str, owned: bool = True, flush_each: bool = False
             ) -> Iterator[IO[bytes]]:
    """`stream` written (guarded), flushed, and closed where it is ours: a close's
    failure is the output's, a failed run's close quiet."""
    guarded = _GuardedStream(stream, path, flush_each=flush_each)
    try:
        yield guarded  # type: ignore[misc]
        guarded.flush()
    except BaseException:
        if owned:
            _close_quietly(stream)
        raise
    if owned:
        try:
            stream.close()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _failed(path, error) from None


def no_directory(path: str, directory: str) -> OutputError:
    """The error of an output `path` whose `directory` is not there, or is a file."""
    return OutputError(f"cannot write {path}: {directory} is not a directory"
                       if os.path.exists(directory) else
                       f"cannot write {path}: directory {directory} does not exist")


@contextlib.contextmanager
def _replacing(path: str, info: os.stat_result | None, commit: Commit | None
               ) -> Iterator[IO[bytes]]:
    """A temporary file beside the target, renamed over it once complete (by `commit`,
    when given, with the run's other files)."""
    target = os.path.realpath(path)  # through a symlink: replace the file, keep the link
    directory, base = os.path.split(target)
    if not os.path.isdir(directory):
        raise no_directory(path, directory)
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise OutputError(f"cannot write {path}: it is a directory")
    if info is not None and not _may_write(target):
        # rename() would replace it anyway (it asks only for the directory's permission);
        # refuse as a plain write would.
        raise OutputError(f"cannot write {path}: Permission denied")
    try:
        # O_PATH: a directory one may write but not list (mode 0333) is still usable.
        directory_fd = os.open(directory, getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)
    except OSError as error:
        raise _failed(path, error) from None
    remove_leftovers(directory, base)  # of runs killed before they could clean up
    try:
        with _temporary(path, directory, directory_fd, base) as (raw, name):
            guarded = _GuardedStream(raw, path, writeback=True)
            yield guarded  # type: ignore[misc]
            guarded.flush()
            try:
                _settle(raw.fileno(), info)
                ours = os.fstat(raw.fileno())
                raw.close()
                # Rename only the file this run wrote: a name swapped for a symlink (or
                # any other file) would put that in place of the target.
                now = os.stat(name, dir_fd=directory_fd, follow_symlinks=False)
                if (now.st_dev, now.st_ino) != (ours.st_dev, ours.st_ino):
                    raise OutputError(f"cannot write {path}: its temporary file {name} was "
                                      "replaced by another program")
                if commit is not None:
                    commit.add(os.path.join(directory, name), target)
                else:
                    os.replace(name, base, src_dir_fd=directory_fd, dst_dir_fd=directory_fd)
            except OSError as error:
                raise _failed(path, error) from None
    finally:
        os.close(directory_fd)


@contextlib.contextmanager
def _temporary(path: str, directory: str, directory_fd: int, base: str
               ) -> Iterator[tuple[IO[bytes], str]]:
    """A new private file in `directory`; removed again unless renamed away."""
    name: str | None = None
    raw: IO[bytes] | None = None
    try:  # from the start: a signal (SIGTERM) may land as soon as the file exists
        try:
            fd, temporary = tempfile.mkstemp(prefix=_temporary_prefix(directory, base),
                                             suffix=TEMPORARY_SUFFIX, dir=directory)
        except OSError as error:
            raise _failed(path, error) from None
        name = os.path.basename(temporary)
        raw = os.fdopen(fd, "wb")
        yield raw, name
    except BaseException:
        if raw is not None:
            _close_quietly(raw)
        if name is not None:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=directory_fd)
        raise


_RANDOM_PART = 8  # what mkstemp adds between prefix and suffix


def _temporary_prefix(directory: str, base: str) -> str:
    """`.<base>.<pid>.`, with `base` shortened so that the whole name fits the file-name
    limit (the pid lets a later run tell a killed run's leftovers from a live one's)."""
    try:
        limit = os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    room = limit - len(temporary_prefix("") + TEMPORARY_SUFFIX) - _RANDOM_PART
    while base and len(os.fsencode(base)) > room:
        base = base[:-1]
    return temporary_prefix(base)


def _may_write(target: str) -> bool:
    effective = os.access in os.supports_effective_ids
    return os.access(target, os.W_OK, effective_ids=effective)


def _settle(fd: int, replaced: os.stat_result | None) -> None:
    """Make the file durable, with the replaced file's owner, group and mode (a new one:
    what any other program would create), all through the descriptor: the name could
    meanwhile point elsewhere."""
    if replaced is None:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        os.fsync(fd)
        return
    if (replaced.st_uid, replaced.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, replaced.st_uid, replaced.st_gid)
        except PermissionError:  # only root may give a file away; keep the group if we can
            with contextlib.suppress(PermissionError):
                os.fchown(fd, -1, replaced.st_gid)
    os.fchmod(fd, stat.S_IMODE(replaced.st_mode))  # after fchown, which clears set-id bits
    os.fsync(fd)


@contextlib.contextmanager
def spooling() -> Iterator[None]:
    """Around work on temporary spool files (--reverse, .npz indices, tables as .npy): an
    OSError there is a full or unwritable temporary directory, said in one line."""
    try:
        yield
    except OSError as error:
        if isinstance(error, BrokenPipeError):
            raise
        raise spool_error(error) from None


def spool_error(error: OSError) -> OutputError:
    number = error.errno
    if number is None:  # Arrow's spool writer gives the errno only in its message
        found = re.search(r"\[errno (\d+)\]", str(error), re.IGNORECASE)
        number = int(found.group(1)) if found else None
    reason = os.strerror(number) if number else (
        error.strerror or " ".join(str(error).split())[:200])
    return OutputError(f"cannot write a temporary file in {tempfile.gettempdir()}: {reason} "
                       "(TMPDIR chooses where temporary files go)")
