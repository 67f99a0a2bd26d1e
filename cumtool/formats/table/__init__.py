"""The terminal table (`--to table`, and the default on a terminal): the first and last
rows, aligned and labelled. pretty.py (with rich) loads only when a table is shown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cumtool.formats import ArraySink, Format, TableSink, Writing

if TYPE_CHECKING:
    import numpy as np


def console_for(writing: Writing) -> Any:
    """The terminal's console when the output goes to one (its width and colours)."""
    if writing.to_terminal():
        from cumtool.formats.table.pretty import terminal_console

        return terminal_console(writing.stream, writing.text_encoding())
    return None


def _write(writing: Writing) -> TableSink:
    from cumtool.formats.table.pretty import InMemory, PrettySink, key_names

    assert writing.schema is not None and writing.view is not None
    return InMemory(PrettySink(writing.stream, writing.view, console=console_for(writing),
                               schema=writing.schema, encoding=writing.text_encoding(),
                               keys=key_names(writing.request.by, writing.schema)))


def _write_array(writing: Writing, shape: tuple[int, ...], dtype: np.dtype) -> ArraySink:
    from cumtool.formats.table.pretty import ArrayToPretty, PrettySink

    assert writing.view is not None
    return ArrayToPretty(PrettySink(writing.stream, writing.view, console=console_for(writing),
                                    encoding=writing.text_encoding()), shape)


FORMATS = (
    # Typed, so a column is labelled (and aligned) as it was read: an unscanned column of
    # integers is int64, not text.
    Format("table", (), rank=110, kind="view", typed=True, nested_as_text=True,
           writer=_write, array_writer=_write_array),
)
