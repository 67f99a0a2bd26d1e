"""The terminal view: a rich table of the result, first and last rows of a big one.

Only `HEAD_ROWS` + `TAIL_ROWS` rows are ever kept, so printing a huge result costs no
memory. Missing cells print as a dim `null`, NaN as `nan`, so the two are never confused.
"""

from __future__ import annotations

import collections
from typing import IO, cast

import numpy as np
import pyarrow as pa
from rich.console import Console
from rich.table import Table
from rich.text import Text

HEAD_ROWS = 10
TAIL_ROWS = 10
MAX_SLICES = 6
MISSING = Text("null", style="dim italic")


def _cell(value: object) -> Text | str:
    if value is None:
        return MISSING
    if isinstance(value, np.floating | float):
        if np.isnan(value):
            return Text("nan", style="magenta")
        return str(value)
    if isinstance(value, np.complexfloating | complex):
        return str(value).strip("()")
    return str(value)


def _is_numeric(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_integer(dtype) or pa.types.is_floating(dtype)
                or pa.types.is_decimal(dtype))


def _dtype_label(dtype: pa.DataType) -> str:
    if pa.types.is_large_string(dtype) or pa.types.is_string(dtype):
        return "str"
    return {"halffloat": "float16", "float": "float32", "double": "float64"}.get(str(dtype),
                                                                                str(dtype))


def _numpy_cells(values: np.ndarray) -> list[object]:
    return [values.dtype.type(v) if values.dtype.kind in "fc" else v for v in values.tolist()]


class PrettySink:
    """Collects the head and tail of a result and renders it as a rich table on close."""

    def __init__(self, stream: IO[bytes], caption: str, console: Console | None = None) -> None:
        self._stream = stream
        self._caption = caption
        self._console = console
        self._schema: pa.Schema | None = None
        self._head: list[pa.RecordBatch] = []
        self._head_rows = 0
        self._tail: collections.deque[pa.RecordBatch] = collections.deque()
        self._tail_rows = 0
        self._rows = 0
        self._array_head: list[tuple[np.ndarray, np.ndarray | None]] = []
        self._array_tail: collections.deque[tuple[np.ndarray, np.ndarray | None]] = (
            collections.deque())
        self._array_shape: tuple[int, ...] | None = None

    # Tables ------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch) -> None:
        self._schema = batch.schema
        self._rows += batch.num_rows
        if self._head_rows < HEAD_ROWS:
            take = batch.slice(0, HEAD_ROWS - self._head_rows)
            self._head.append(take)
            self._head_rows += take.num_rows
            batch = batch.slice(take.num_rows)
        if batch.num_rows:
            self._tail.append(batch.slice(max(0, batch.num_rows - TAIL_ROWS)))
            self._tail_rows += self._tail[-1].num_rows
            while self._tail_rows - self._tail[0].num_rows >= TAIL_ROWS:
                self._tail_rows -= self._tail.popleft().num_rows

    # Arrays ------------------------------------------------------------------
    def write_array(self, shape: tuple[int, ...], values: np.ndarray,
                    indices: np.ndarray | None) -> None:
        self._array_shape = shape
        if values.ndim == 0:
            self._array_head.append((values.reshape(1), None if indices is None
                                     else indices.reshape(1)))
            return
        for start in range(values.shape[0]):
            row = (values[start], None if indices is None else indices[start])
            if len(self._array_head) < HEAD_ROWS:
                self._array_head.append(row)
            else:
                self._array_tail.append(row)
                if len(self._array_tail) > TAIL_ROWS:
                    self._array_tail.popleft()
        self._rows += values.shape[0]

    def close(self) -> None:
        console = self._console or Console(
            file=cast(IO[str], _TextAdapter(self._stream)), highlight=False, soft_wrap=False
        )
        if self._array_shape is not None:
            self._render_array(console)
        else:
            console.print(self._table_from_batches())

    def _table_from_batches(self) -> Table:
        assert self._schema is not None
        table = Table(caption=f"{self._caption}, {self._rows} rows x {len(self._schema)} columns")
        for field in self._schema:
            numeric = _is_numeric(field.type)
            table.add_column(f"{field.name}\n{_dtype_label(field.type)}",
                             justify="right" if numeric else "left")
        for batch in self._head:
            self._add_rows(table, batch)
        hidden = self._rows - self._head_rows - self._tail_rows
        if hidden > 0:
            table.add_row(*(["…"] * len(self._schema)))
        elif hidden < 0:
            # Head and tail overlap on a short result: drop the repeated rows.
            overlap = -hidden
            while overlap and self._tail:
                first = self._tail[0]
                cut = min(overlap, first.num_rows)
                self._tail[0] = first.slice(cut)
                overlap -= cut
                if not self._tail[0].num_rows:
                    self._tail.popleft()
        for batch in self._tail:
            self._add_rows(table, batch)
        return table

    @staticmethod
    def _add_rows(table: Table, batch: pa.RecordBatch) -> None:
        columns = []
        for column in batch.columns:
            if pa.types.is_floating(column.type):
                values = column.to_numpy(zero_copy_only=False)
                nulls = column.is_null().to_numpy(zero_copy_only=False)
                columns.append([None if null else value
                                for value, null in zip(_numpy_cells(values), nulls, strict=True)])
            else:
                columns.append(column.to_pylist())
        for row in zip(*columns, strict=True):
            table.add_row(*(_cell(value) for value in row))

    def _render_array(self, console: Console) -> None:
        assert self._array_shape is not None
        rows = list(self._array_head)
        hidden = self._rows - len(self._array_head) - len(self._array_tail)
        shape = self._array_shape
        caption = f"{self._caption}, shape {shape}"
        if len(shape) <= 2:
            console.print(self._array_table(rows + list(self._array_tail), hidden, caption))
            return
        # N-d: one 2-D slice per leading index, labelled like numpy's `a[i, j, :, :]`.
        shown = rows[:MAX_SLICES] if hidden > 0 else rows + list(self._array_tail)
        for index, (values, indices) in enumerate(shown):
            for sub in np.ndindex(values.shape[:-2]):
                label = ", ".join(str(i) for i in (index, *sub))
                block = values[sub]
                block_indices = None if indices is None else indices[sub]
                table = self._array_table(
                    [(block[i], None if block_indices is None else block_indices[i])
                     for i in range(block.shape[0])], 0, f"[{label}, :, :]")
                console.print(table)
        if hidden > 0 or len(rows) > MAX_SLICES:
            console.print(f"… {shape[0] - len(shown)} more slices along axis 0 …")
        console.print(caption)

    @staticmethod
    def _array_table(rows: list[tuple[np.ndarray, np.ndarray | None]], hidden: int,
                     caption: str) -> Table:
        table = Table(caption=caption)
        first = rows[0][0] if rows else np.empty(0)
        width = 1 if first.ndim == 0 else first.shape[0]
        dtype = str(first.dtype)
        with_indices = bool(rows) and rows[0][1] is not None
        for column in range(width):
            table.add_column(f"{column}\n{dtype}", justify="right")
            if with_indices:
                table.add_column(f"{column}_index\nint64", justify="right")
        for number, (values, indices) in enumerate(rows):
            if number == HEAD_ROWS and hidden > 0:
                table.add_row(*(["…"] * len(table.columns)))
            cells: list[Text | str] = []
            flat = np.atleast_1d(values)
            flat_indices = None if indices is None else np.atleast_1d(indices)
            for column, value in enumerate(_numpy_cells(flat)):
                cells.append(_cell(value))
                if flat_indices is not None:
                    cells.append(str(flat_indices[column]))
            table.add_row(*cells)
        return table


class _TextAdapter:
    """rich writes text; the sink's stream takes bytes."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(text.encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return False
