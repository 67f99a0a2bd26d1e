"""JSON Lines: one JSON object per line, read and written by jsonl.py (loaded, with
pyarrow, only when used)."""

from __future__ import annotations

from cumtool.formats import BOM, Format, Opening, SourceBase, TableSink, Writing

NAME = "jsonl"


def _read(opening: Opening) -> SourceBase:
    from cumtool.formats.jsonl.jsonl import JsonlSource
    from cumtool.formats.records import MAX_RECORD_BYTES

    stream = opening.seekable()  # read twice (columns first, then batches)
    request = opening.request
    # read behind a run that may start with the first lines' types (runner.run_table
    # decides); every other reader of the source waits for the whole input's
    return JsonlSource(stream, opening.name, request.batch_rows,
                       request.max_record_size or MAX_RECORD_BYTES, opening.float_columns,
                       overlap=True)


def _write(writing: Writing) -> TableSink:
    from cumtool.formats.jsonl.jsonl import JsonlSink

    assert writing.schema is not None
    return JsonlSink(writing.stream, writing.schema, writing.threads())


def _first_line_is_object(head: bytes) -> bool:
    return is_json_object(head.split(b"\n", 1)[0])


def is_json_object(line: bytes) -> bool:
    """A line that is a whole JSON object: JSON Lines (no CSV header is one)."""
    text = line.removeprefix(BOM).strip()
    if not (text.startswith(b"{") and text.endswith(b"}")):
        return False
    import json

    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def looks_like_json(head: bytes) -> bool:
    """JSON that is not JSON Lines: an array (`[{...}, ...]`), or one object spread over
    lines (pretty-printed). A CSV header starts with neither."""
    text = head.removeprefix(BOM).lstrip()
    if text.startswith(b"["):
        rest = text[1:].lstrip()
        return rest[:1] in (b"{", b"[", b"]", b'"') or rest[:1].isdigit()
    if text.startswith(b"{"):
        first = text.split(b"\n", 1)[0].strip()
        return first == b"{" or (first.startswith(b'{"') and not is_json_object(first))
    return False


FORMATS = (
    Format(NAME, (".jsonl", ".ndjson"), rank=50, sniff=_first_line_is_object,
           line_oriented=True, reader=_read, writer=_write),
)
