"""`-o DIR/`, one output per input, for both engines (datasets.py, distributed.py): every
output is written first into a hidden staging folder in DIR, and put in place only once
all of them succeeded. On a disk they are renamed together by a commit (cumtool.commit:
all or none, even for a run killed meanwhile); on an object store (s3://, ...), which has
no rename and no folders, each is moved into place and a `_SUCCESS` marker follows them.
A run that fails removes the staging folder, and DIR itself if the run made it, leaving
whatever DIR held as it was.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile
import uuid
from collections.abc import Iterator

from cumtool import commit, remote
from cumtool.errors import OutputError

SUCCESS_MARKER = "_SUCCESS"  # written last into an object store's DIR/


class Staging:
    """The staging folder of one run's -o DIR/ (made by `stage`)."""

    def __init__(self, directory: str) -> None:
        self.given = directory  # as the user wrote it: messages name the outputs so
        self.remote = remote.is_url(directory)
        # Absolute: the workers of a Dask cluster run in another directory.
        self.directory = directory if self.remote else os.path.abspath(directory)
        self.made = False  # DIR made for this run: removed again if the run fails
        self.folder = ""

    def _make(self) -> None:
        if self.remote:
            remote.check_output_url(self.directory)
            # An object store has no folders to make: the name prefixes the objects.
            self.folder = remote.join(self.directory, f"{commit.STAGE_PREFIX}{os.getpid()}-"
                                                      f"{uuid.uuid4().hex[:12]}")
            return
        directory = self.directory
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise OutputError(f"cannot write {self.given.rstrip('/' + os.sep)}/: it is a "
                              "file, not a folder")
        try:
            if not os.path.isdir(directory):
                os.makedirs(directory)
                self.made = True
            commit.recover_directory(directory)  # what a run killed while renaming left
            commit.remove_leftovers(directory, "")
            self.folder = tempfile.mkdtemp(prefix=f"{commit.STAGE_PREFIX}{os.getpid()}-",
                                           dir=directory)
        except OSError as error:
            raise OutputError(f"cannot write {self.given}: {error.strerror or error}"
                              ) from None

    def staged(self, relative: str) -> str:
        """Where the output named `relative` under DIR is written first."""
        return remote.join(self.folder, relative)

    def target(self, relative: str) -> str:
        """The output's name under DIR as given, for messages."""
        return remote.join(self.given, relative)

    def put_in_place(self, relatives: list[str],
                     together: commit.Commit | None = None) -> None:
        """Every output is complete: each staged file replaces its target. On a disk the
        renames join `together` (a --state run's commit, which the caller applies with
        the state), else a commit of their own, applied now; on an object store each is
        moved, then the _SUCCESS marker is written."""
        if self.remote:
            self._move_remote(relatives)
            return
        own = together is None
        if together is None:
            together = commit.Commit(os.path.join(
                self.directory, f"{commit.DIRECTORY_RECORD}{os.getpid()}"))
        together.then(lambda: shutil.rmtree(self.folder, True))
        for relative in relatives:
            target = os.path.join(self.directory, relative)
            try:
                os.makedirs(os.path.dirname(target), exist_ok=True)  # a name in a subfolder
            except OSError as error:
                raise OutputError(f"cannot write {self.target(relative)}: "
                                  f"{error.strerror or error}") from None
            together.add(self.staged(relative), target)
        if own:
            together.apply()

    def _move_remote(self, relatives: list[str]) -> None:
        fs, _path = remote.filesystem(self.directory)
        for relative in relatives:
            source = remote.filesystem(self.staged(relative))[1]
            target = remote.filesystem(remote.join(self.directory, relative))[1]
            try:
                fs.mv(source, target)
            except OSError as error:
                raise OutputError(f"cannot write {self.target(relative)}: "
                                  f"{error.strerror or error}") from None
        fs.pipe_file(posixpath.join(_path, SUCCESS_MARKER), b"")

    def _remove(self) -> None:
        if not self.folder:
            return
        if self.remote:
            fs, path = remote.filesystem(self.folder)
            with contextlib.suppress(OSError):  # (nothing there: nothing was written)
                fs.rm(path, recursive=True)
            return
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.made:  # a failed run leaves no folder it made (after a success: its files)
            with contextlib.suppress(OSError):
                os.rmdir(self.directory)


@contextlib.contextmanager
def stage(directory: str) -> Iterator[Staging]:
    """The staging folder of -o `directory`/, made now (and DIR with it), removed when the
    block ends: by then its outputs are in place (`Staging.put_in_place`), or the run
    failed and they are dropped."""
    staging = Staging(directory)
    try:
        staging._make()
        yield staging
    finally:
        staging._remove()
