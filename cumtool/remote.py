"""Inputs and outputs named by fsspec URLs (s3://, gs://, az://, https://...), through the
optional `cloud` extra (`pip install 'cumtool[cloud]'`: fsspec, s3fs, gcsfs, adlfs).

An input URL is opened as a seekable binary stream and read like a local file. An output
URL is written to a local temporary file first and uploaded only once the run has
succeeded, so a failed run leaves the remote object as it was (object stores have no
rename; an upload replaces the object whole or not at all).

This module imports fsspec only when a URL is actually opened: `is_url` is plain text.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from cumtool.errors import CumtoolError, DataError, OutputError, UsageError, extra_missing

# A scheme of two letters or more: `C:\data.csv` is a Windows path, not a URL.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")
_READ_ONLY = ("http", "https")
# Which package serves a scheme, for the message when it is missing.
_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs",
             "abfs": "adlfs", "abfss": "adlfs", "http": "aiohttp", "https": "aiohttp"}


def is_url(path: str | None) -> bool:
    """Whether `path` names a remote object (`file://` is a local path, also accepted)."""
    return path is not None and _URL.match(path) is not None


def scheme(url: str) -> str:
    found = _URL.match(url)
    return found.group(1).lower() if found else "file"


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of `url` and the path within it."""
    try:
        import fsspec
    except ImportError:
        raise extra_missing(f"{url}: opening URLs", "cloud") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError:
        package = _PACKAGES.get(scheme(url), "an fsspec implementation")
        raise extra_missing(f"{url}: opening {scheme(url)}:// URLs ({package})", "cloud"
                            ) from None
    except ValueError as error:
        raise UsageError(f"{url}: no filesystem for {scheme(url)}:// ({error})") from None


def _reason(error: BaseException) -> str:
    text = getattr(error, "strerror", None) or str(error) or type(error).__name__
    return " ".join(str(text).split())[:300]


def _failure(error: Exception) -> str:
    """A storage library's own failure, its type named (`NoCredentialsError: Unable to
    locate credentials`): configuration to fix, not a bug of cumtool's."""
    return f"{type(error).__name__}: {_reason(error)}"


def open_input(url: str, stack: contextlib.ExitStack) -> IO[bytes]:
    """A seekable binary stream of the object at `url`, closed with `stack`."""
    fs, path = filesystem(url)
    try:
        if fs.isdir(path):
            raise DataError(f"{url}: is a directory, not a file")
        stream = fs.open(path, "rb")
    except FileNotFoundError:
        raise DataError(f"{url}: no such file") from None
    except PermissionError as error:
        raise DataError(f"{url}: cannot read: {_reason(error)}") from None
    except OSError as error:
        raise DataError(f"{url}: cannot read: {_reason(error)}") from None
    except CumtoolError:
        raise
    except Exception as error:  # the store's own (botocore's NoCredentialsError, ...)
        raise DataError(f"{url}: cannot read: {_failure(error)}") from None
    return stack.enter_context(stream)


def check_output_url(url: str) -> None:
    """Refuse, before any input is read, an output URL that cannot be written to."""
    if scheme(url) in _READ_ONLY:
        raise UsageError(f"cannot write {url}: {scheme(url)}:// URLs are read-only; write "
                         "to s3://, gs://, az:// or a local file")


@contextlib.contextmanager
def uploading(url: str) -> Iterator[IO[bytes]]:
    """A local temporary file, uploaded to `url` once the block succeeds; on failure it is
    removed and the remote object is left as it was."""
    check_output_url(url)
    fs, path = filesystem(url)
    descriptor, local = tempfile.mkstemp(prefix=".cumtool-upload-", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            yield stream
        upload(fs, local, path, url)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(local)


def upload(fs: Any, local: str, path: str, url: str) -> None:
    try:
        fs.put_file(local, path)
    except (OSError, ValueError) as error:  # s3fs: ValueError for a bad bucket name
        raise OutputError(f"cannot write {url}: {_reason(error)}") from None
    except Exception as error:  # the store's own (botocore's NoCredentialsError, ...)
        raise OutputError(f"cannot write {url}: {_failure(error)}") from None


def join(base: str, name: str) -> str:
    """`name` under the directory `base` (a URL or a local path)."""
    if is_url(base):
        return base.rstrip("/") + "/" + name.lstrip("/")
    return os.path.join(base, name)
