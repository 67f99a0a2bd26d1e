"""diff: the difference from the previous value, cumsum's inverse."""

from __future__ import annotations

from cumtool.ops.decl import Op

OPS = (Op(
    "diff",
    summary="Difference from the previous value (the first value itself): the inverse of "
            "cumsum.",
    short="Difference from the previous value: cumsum's inverse",
    example="cumtool diff sample_data/cumulative_cases.csv -c cases --by region --keep",
    exclusive=False, stat=True),)
