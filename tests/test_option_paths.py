"""Every option (every field of cumtool.request.Request) is classified for each path that
can take a run in its place: the small and compiled CSV paths (small.options_fit decides
for both) and the Dask engine. A path either honours a field, or hands the run to a path
that does, or refuses it by name; none ignores it. A field added to Request fails
`test_every_field_is_classified` until it is classified here, and the classification is
checked against what the paths do, so a forgotten option cannot slip past a deny-list."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cumtool import small
from cumtool.columns import parse
from cumtool.errors import UsageError
from cumtool.request import Request

FIELDS = {f.name for f in dataclasses.fields(Request)}

# A value other than the default, for the fields whose handling is checked below.
SAMPLES: dict[str, Any] = {
    "reset": parse("flag", "--reset"), "reverse": True, "indices": True, "decimal": True,
    "decimal_comma": True, "encoding": "latin-1", "max_record_size": 1 << 20,
    "line_buffered": True, "comment": "#", "ragged": True, "out_encoding": "latin-1",
    "out_decimal": "comma", "batch_rows": 7, "state": "s.json", "sheet": "1",
    "widen": (1,), "filename_column": "file", "axis": "columns",
    "by": (parse("store", "--by"),), "period": "month", "time": parse("date", "--time"),
    "share": True,
}

# The small path and the compiled CSV pipeline (small.options_fit): "honours" what they
# implement; "hands over" what sends the run to the general path (checked: options_fit is
# False with the field given); "not its output" for what only other writers or engines
# read (the chart, the table view, Dask), which the pipeline hands over by output format.
SMALL = {
    **dict.fromkeys(
        ("op", "input", "output", "from_format", "to_format", "dtype", "columns",
         "delimiter", "header", "overflow", "skipna", "by", "exclusive", "keep", "exclude",
         "only_scanned", "na", "na_rep", "out_delimiter", "params", "inputs", "threads",
         "notes", "share", "stdout_is_terminal", "progress", "period", "time",
         "year_start"), "honours"),
    **dict.fromkeys(
        ("axis", "reset", "reverse", "indices", "decimal", "decimal_comma", "encoding",
         "max_record_size", "line_buffered", "comment", "ragged", "out_encoding",
         "out_decimal", "batch_rows", "state", "sheet", "widen", "filename_column"),
        "hands over"),
    **dict.fromkeys(
        ("table_rows", "precision", "x", "x_format", "width", "height", "engine",
         "scheduler", "run_id", "wait", "growing"), "not its output"),
}

# --engine dask: "refuses" by name before any input is read (checked), or "honours".
_DASK_REFUSES = ("by", "reset", "reverse", "state", "filename_column", "period", "time",
                 "share", "axis")
DASK = {**dict.fromkeys(FIELDS, "honours"), **dict.fromkeys(_DASK_REFUSES, "refuses")}


def test_every_field_is_classified() -> None:
    assert set(SMALL) == FIELDS, (
        f"classify {sorted(FIELDS - set(SMALL))} for the small path in {__file__} (and "
        "make small.options_fit hand the run over where it does not honour them)")
    assert set(DASK) == FIELDS
    assert set(SMALL.values()) == {"honours", "hands over", "not its output"}


@pytest.mark.parametrize("name", sorted(n for n, how in SMALL.items() if how == "hands over"))
def test_the_small_path_hands_over_what_it_does_not_honour(name: str) -> None:
    plain = Request(op="cumsum", input="in.csv")
    assert small.options_fit(plain)
    given = dataclasses.replace(plain, **{name: SAMPLES[name]})
    assert not small.options_fit(given), name


@pytest.mark.parametrize("name", sorted(n for n, how in DASK.items() if how == "refuses"))
def test_dask_refuses_by_name_what_it_does_not_honour(name: str) -> None:
    values = {name: SAMPLES.get(name, "s.json")}
    if name == "time":
        values["period"] = "month"
    if name == "period":
        values["time"] = SAMPLES["time"]
    request = Request(op="cumsum", input="in.csv", engine="dask", **values)
    flag = {"time": "--period", "axis": "--axis columns"}.get(
        name, "--" + name.replace("_", "-"))
    with pytest.raises(UsageError) as refused:
        request.check()
    assert refused.value.cli_message().startswith(f"{flag} is not supported with --engine "
                                                  "dask"), refused.value.cli_message()
