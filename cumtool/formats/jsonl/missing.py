"""How a JSON Lines column's missing cells are written back: null, absent, or each as it
was (field metadata, read by jsonl.py's writer). Light: the sinks ask it of typed outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

FIELD_MISSING = b"cumtool.json.missing"  # b"null": a missing cell is written as null
EACH = b"each "  # FIELD_MISSING b"each TOKEN KEY": null or absent, row by row (_NullRows)


def stored_schema(schema: pa.Schema) -> pa.Schema:
    """A schema as a typed file (Parquet, Arrow) stores it: a column that tells null from
    an absent key row by row does so through this run's memory (EACH's token), which a
    file cannot carry, so there its missing cells are nulls."""
    import pyarrow as pa

    fields = []
    for f in schema:
        if (f.metadata or {}).get(FIELD_MISSING, b"").startswith(EACH):
            f = f.with_metadata({**f.metadata, FIELD_MISSING: b"null"})
        fields.append(f)
    return pa.schema(fields, metadata=schema.metadata)
