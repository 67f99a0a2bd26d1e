"""NumPy's .npy: an N-d array read and written in blocks along axis 0 (a table written as
a 2-D array of its columns); --indices writes an .npz of values and indices. npy.py loads
only when used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cumtool.errors import FormatError, UsageError
from cumtool.formats import ArraySink, Format, Opening, SourceBase, TableSink, Writing

if TYPE_CHECKING:
    import numpy as np

MAGIC = b"\x93NUMPY"


def _read(opening: Opening) -> SourceBase:
    from cumtool import remote
    from cumtool.formats.npy.npy import NpySource

    name = opening.name
    if opening.head.startswith(b"PK") or name.lower().endswith(".npz"):
        raise FormatError(f"{name}: .npz input is not supported; give a .npy file")
    path = opening.path
    return NpySource(opening.stream, name, None if path is None or remote.is_url(path)
                     else path)


def _write(writing: Writing) -> TableSink:
    from cumtool.formats.npy.npy import NpyTableSink, TableToNpy

    assert writing.schema is not None
    return TableToNpy(NpyTableSink, writing.stream, writing.schema)


def _write_array(writing: Writing, shape: tuple[int, ...], dtype: np.dtype) -> ArraySink:
    from cumtool.formats.npy.npy import NpySink

    request = writing.request
    if writing.kind.compression:
        raise UsageError("compressed .npy output is not supported; write .npy")
    if request.indices and str(request.output).lower().endswith(".npy"):
        raise UsageError(f"--indices writes values and indices as a .npz archive; name "
                         f"the output .npz, not {request.output}")
    return NpySink(writing.stream, shape, dtype, request.indices)


FORMATS = (
    Format("npy", (".npy", ".npz"), rank=40, kind="array", typed=True, binary=True,
           magic=(MAGIC,), by_magic=True, reader=_read, writer=_write,
           array_writer=_write_array),
)
