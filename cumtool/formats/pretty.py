"""The terminal view: a rich table of the result, bounded however big the result is.

Of a long result only the first `HEAD_ROWS` and last `TAIL_ROWS` rows are kept, of a wide
one the first and last `EDGE_COLUMNS` columns, and an N-d array shows as labelled 2-D
slices (`[i, j, :, :]`), the first and last `EDGE_SLICES` of them; an ellipsis marks what
is left out. So printing a huge result costs no memory. Missing cells print as a dim
`null`, NaN as `nan`, so the two are never confused. Names and cells are always plain
text, never rich markup, and the caption (op, input and shape) goes on a line of its own
below the table, where a long one cannot be squeezed into the table's width. When not
writing to a terminal the output has no colour codes and is as wide as the table needs.
"""

from __future__ import annotations

import collections
import math
from typing import IO, cast

import numpy as np
import pyarrow as pa
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

HEAD_ROWS = 10
TAIL_ROWS = 10
EDGE_COLUMNS = 6
EDGE_SLICES = 2
ELLIPSIS = "…"
MIN_WIDTH = 80


def _missing() -> Text:
    return Text("null", style="dim italic")


def _cell(value: object) -> Text:
    if value is None:
        return _missing()
    if isinstance(value, np.floating | float):
        if np.isnan(value):
            return Text("nan", style="magenta")
        return Text(str(value))
    if isinstance(value, np.complexfloating | complex):
        return Text(str(value).strip("()"))
    return Text(str(value))


def _keep(count: int, head: int, tail: int) -> tuple[list[int], int | None]:
    """Positions shown of `count` (all, or the first `head` and last `tail`) and where an
    ellipsis goes among them (None: nothing left out)."""
    if count <= head + tail:
        return list(range(count)), None
    return [*range(head), *range(count - tail, count)], head


def _is_numeric(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_integer(dtype) or pa.types.is_floating(dtype)
                or pa.types.is_decimal(dtype))


def _dtype_label(dtype: pa.DataType) -> str:
    if pa.types.is_dictionary(dtype):  # dictionary-encoded: what its values are
        return _dtype_label(dtype.value_type)
    if pa.types.is_large_string(dtype) or pa.types.is_string(dtype):
        return "str"
    return {"halffloat": "float16", "float": "float32", "double": "float64"}.get(str(dtype),
                                                                                str(dtype))


def _numpy_cells(values: np.ndarray) -> list[object]:
    """Python values, except floats stay numpy scalars: str() of a float32 is then its own
    shortest text (0.1), not that of the float64 it would become (0.10000000149011612)."""
    if values.dtype.kind in "fc":
        return list(values)
    return list(values.tolist())


def _arrow_cells(column: pa.Array) -> list[object]:
    if pa.types.is_floating(column.type):
        from cumtool.tables import column_to_numpy  # not to_numpy(): it imports pandas

        values, valid = column_to_numpy(column)
        return [value if valid is None or valid[i] else None
                for i, value in enumerate(_numpy_cells(values))]
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        # Text from a damaged file need not be UTF-8: show it, never fail on it.
        raw = column.cast(pa.large_binary()).to_pylist()
        return [None if cell is None else cell.decode("utf-8", errors="replace")
                for cell in raw]
    return list(column.to_pylist())


def _add_column(table: Table, name: str, dtype: str, numeric: bool) -> None:
    table.add_column(Text(f"{name}\n{dtype}"), justify="right" if numeric else "left",
                     no_wrap=numeric)


def _with_gap(cells: list[Text], gap: int | None, width: int = 1) -> list[Text]:
    """Insert the ellipsis column's cell(s) at `gap`."""
    if gap is None:
        return cells
    return [*cells[:gap * width], Text(ELLIPSIS), *cells[gap * width:]]


class PrettySink:
    """Collects what will be shown of a result and renders it as rich tables on close."""

    def __init__(self, stream: IO[bytes], caption: str, console: Console | None = None,
                 schema: pa.Schema | None = None) -> None:
        self._stream = stream
        self._caption = caption
        self._console = console
        self._schema: pa.Schema | None = None
        self._columns: list[int] = []
        self._column_gap: int | None = None
        if schema is not None:
            self._set_schema(schema)
        self._head: list[pa.RecordBatch] = []
        self._head_rows = 0
        self._tail: collections.deque[pa.RecordBatch] = collections.deque()
        self._tail_rows = 0
        self._rows = 0
        self._array: _ArrayView | None = None

    def _set_schema(self, schema: pa.Schema) -> None:
        self._schema = schema
        self._columns, self._column_gap = _keep(len(schema), EDGE_COLUMNS, EDGE_COLUMNS)

    # Tables ------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch) -> None:
        if self._schema is None:
            self._set_schema(batch.schema)
        self._rows += batch.num_rows
        batch = batch.select(self._columns)
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
        if self._array is None:
            self._array = _ArrayView(shape)
        self._array.add(values, indices)

    def close(self) -> None:
        if self._array is not None:
            renderables = self._array.render(self._caption)
        else:
            renderables = self._render_table()
        console = self._console
        if console is None:
            console = _PipeConsole(
                file=cast(IO[str], _TextAdapter(self._stream)), color_system=None,
                force_terminal=False, highlight=False, soft_wrap=False,
                width=max([MIN_WIDTH, *(_natural_width(r) for r in renderables)]),
            )
        for renderable in renderables:
            # A line of text (the caption) is never broken by us: a terminal narrower than
            # it wraps it on screen, and a copied path stays whole.
            console.print(renderable, soft_wrap=isinstance(renderable, Text))

    def _render_table(self) -> list[RenderableType]:
        schema = self._schema if self._schema is not None else pa.schema([])
        table = Table()
        for number, position in enumerate(self._columns):
            if number == self._column_gap:
                _add_ellipsis_column(table)
            field = schema.field(position)
            _add_column(table, field.name, _dtype_label(field.type), _is_numeric(field.type))
        for batch in self._head:
            self._add_rows(table, batch)
        tail = pa.Table.from_batches(list(self._tail)) if self._tail else None
        shown_tail = 0 if tail is None else min(TAIL_ROWS, tail.num_rows)
        if self._rows - self._head_rows - shown_tail > 0:
            table.add_row(*[Text(ELLIPSIS)] * len(table.columns))
        if tail is not None:
            for batch in tail.slice(tail.num_rows - shown_tail).to_batches():
                self._add_rows(table, batch)
        caption = f"{self._caption}, {self._rows} rows x {len(schema)} columns"
        return [table, Text(caption, style="italic")]

    def _add_rows(self, table: Table, batch: pa.RecordBatch) -> None:
        columns = [_arrow_cells(column) for column in batch.columns]
        for row in zip(*columns, strict=True):
            table.add_row(*_with_gap([_cell(value) for value in row], self._column_gap))


def _add_ellipsis_column(table: Table) -> None:
    table.add_column(Text(f"{ELLIPSIS}\n{ELLIPSIS}"), justify="center", no_wrap=True)


def _natural_width(renderable: RenderableType) -> int:
    """How wide `renderable` is when nothing limits it."""
    measuring = Console(width=1 << 16, color_system=None, force_terminal=False)
    return int(measuring.measure(renderable).maximum)


class _ArrayView:
    """What is shown of an N-d array, collected block by block along axis 0.

    The array is a sequence of 2-D pages: a 0-d or 1-D array is one page of one column, a
    2-D array one page, and an N-d array one page per index of its leading N-2 axes. Only
    the kept pages, cropped to the kept rows and columns, are ever stored."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        ndim = len(shape)
        if ndim <= 2:
            rows = 1 if ndim == 0 else shape[0]
            columns = shape[1] if ndim == 2 else 1
            self.leading: tuple[int, ...] = ()
            self.pages_per_row = 0  # axis 0 runs down the page's rows
        else:
            rows, columns = shape[-2], shape[-1]
            self.leading = shape[:-2]
            self.pages_per_row = math.prod(shape[1:-2])
        self.page_rows = rows
        self.page_columns = columns
        self.row_keep, self.row_gap = _keep(rows, HEAD_ROWS, TAIL_ROWS)
        self.column_keep, self.column_gap = _keep(columns, EDGE_COLUMNS, EDGE_COLUMNS)
        self.pages_total = math.prod(self.leading) if ndim > 2 else 1
        self.page_keep, self.page_gap = _keep(self.pages_total, EDGE_SLICES, EDGE_SLICES)
        self.dtype: np.dtype | None = None
        self.with_indices = False
        self.seen = 0  # positions along axis 0 received so far
        # page number -> row position -> (values, indices) of the kept columns
        self.rows: dict[int, dict[int, tuple[np.ndarray, np.ndarray | None]]] = {}

    def add(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        self.dtype = values.dtype
        self.with_indices = indices is not None
        count = values.shape[0] if values.ndim else 1
        if len(self.shape) <= 2:
            flat = values.reshape(count, self.page_columns)
            flat_indices = None if indices is None else indices.reshape(flat.shape)
            self._keep_rows(0, self.seen, flat, flat_indices)
        else:
            pages = values.reshape(count * self.pages_per_row, self.page_rows,
                                   self.page_columns)
            page_indices = None if indices is None else indices.reshape(pages.shape)
            first = self.seen * self.pages_per_row
            for page in self.page_keep:
                if first <= page < first + pages.shape[0]:
                    local = page - first
                    self._keep_rows(page, 0, pages[local],
                                    None if page_indices is None else page_indices[local])
        self.seen += count

    def _keep_rows(self, page: int, start: int, block: np.ndarray,
                   indices: np.ndarray | None) -> None:
        kept = self.rows.setdefault(page, {})
        for row in self.row_keep:
            if start <= row < start + block.shape[0]:
                local = row - start
                kept[row] = (
                    block[local, self.column_keep].copy(),
                    None if indices is None else indices[local, self.column_keep].copy(),
                )

    def render(self, caption: str) -> list[RenderableType]:
        dtype = str(self.dtype) if self.dtype is not None else "?"
        out: list[RenderableType] = []
        for number, page in enumerate(self.page_keep):
            if number == self.page_gap:
                hidden = self.pages_total - len(self.page_keep)
                out.append(Text(f"{ELLIPSIS} {hidden} more slices {ELLIPSIS}"))
            title = None
            if len(self.shape) > 2:
                label = ", ".join(str(int(i)) for i in np.unravel_index(page, self.leading))
                title = Text(f"[{label}, :, :]")
            out.append(self._page_table(self.rows.get(page, {}), dtype, title))
        out.append(Text(f"{caption}, shape {self.shape}", style="italic"))
        return out

    def _page_table(self, rows: dict[int, tuple[np.ndarray, np.ndarray | None]], dtype: str,
                    title: Text | None) -> Table:
        table = Table(title=title)
        width = 2 if self.with_indices else 1
        for number, column in enumerate(self.column_keep):
            if number == self.column_gap:
                _add_ellipsis_column(table)
            _add_column(table, str(column), dtype, True)
            if self.with_indices:
                _add_column(table, f"{column}_index", "int64", True)
        for number, row in enumerate(self.row_keep):
            if number == self.row_gap:
                table.add_row(*[Text(ELLIPSIS)] * len(table.columns))
            if row not in rows:
                continue
            values, indices = rows[row]
            cells: list[Text] = []
            for column, value in enumerate(_numpy_cells(values)):
                cells.append(_cell(value))
                if indices is not None:
                    cells.append(Text(str(indices[column])))
            table.add_row(*_with_gap(cells, self.column_gap, width))
        return table


class _PipeConsole(Console):
    """rich answers a closed pipe with a silent exit status 1; cumtool's own handler
    gives the 141 of every other output format."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


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
