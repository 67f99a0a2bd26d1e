"""`cumtool.scan`: the engine on in-memory data, for Python users.

numpy arrays go through the same kernels as .npy files, Arrow tables through the same
TablePlan as CSV and Parquet; so the API and the CLI cannot disagree.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import numbers
import os
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from cumtool import kernels
from cumtool.choices import OVERFLOW_CHOICES
from cumtool.engine import array_index, resolve_array_axis
from cumtool.errors import DataError, ScanOverflowError, UnknownKeyword, UsageError
from cumtool.formats import SourceBase, TableSource
from cumtool.options import API_DEFAULTS, API_KEYWORDS, BY_FIELD
from cumtool.runner import scan_batches


def scan(data: Any, op: str, axis: int | str = API_DEFAULTS["axis"],
         dtype: Any = API_DEFAULTS["dtype"], *, to: str | None = None,
         **keywords: Any) -> Any:
    """Scan `data` along `axis` with the CLI's rules.

    `data` is a table: a pyarrow Table, RecordBatch or RecordBatchReader, or any
    DataFrame that offers an Arrow stream (`__arrow_c_stream__`: polars, pandas, DuckDB),
    read without a copy; it returns the result as a polars DataFrame for a polars one, a
    pandas DataFrame for a pandas one and a pyarrow Table otherwise, as the CLI would
    write it (`by` and `reset` name columns). Or `data` is anything numpy.asarray
    accepts (returns the result array, or `(values, indices)` with `indices=True`; there
    `by` and `reset` are arrays with one entry per position along axis 0 of a 1-D or 2-D
    array); a pyarrow Array or ChunkedArray is such a 1-D array whose missing cells stay
    missing, and its results are of its kind.
    Raises cumtool.UsageError for bad arguments (an unknown keyword too) and
    cumtool.DataError (ScanOverflowError) for data that cannot be scanned, e.g. integer
    overflow without overflow="wrap".
    The ops' own options are keywords of the CLI option's name (cumtool.ops): `ddof`
    (cumvar, cumstd), one of `alpha`, `span`, `com`, `halflife` and `adjust` (ewma), and
    `compensated` (cumsum of floats, cummean), `times` (ewma: a column's times, with
    `halflife` a duration such as "2 days").

    `data` may also be a file: a path (str or os.PathLike), a URL, or a binary file
    object, read by the CLI's readers with the CLI's rules (codes such as 007 stay text,
    NA markers are missing cells). A table comes back as a pyarrow Table, or as a
    polars or pandas DataFrame with `to="polars"` or `to="pandas"`; a .npy file as an
    array. A polars or pandas Series is a one-column table and comes back as a Series of
    its own library; with `keep`, several ops or `indices`, as that one-column table's
    result, a DataFrame of its library.
    """
    # The general options by their declared keywords (cumtool.options: api=True), each at
    # its declared default where not given, passed on as one mapping; the rest are the
    # ops' own.
    given, params = _keywords({"axis": axis, "dtype": dtype, **keywords})
    _check_flags(given, params)
    if to not in (None, "arrow", "polars", "pandas"):
        raise UsageError(f"to= must be 'arrow', 'polars' or 'pandas', not {to!r}")
    if _dask_frame(data):
        # Its partitions gathered into the pandas frame they make (numpy.asarray would
        # give one float array, NaN spreading and integers made floats): a pandas result.
        return scan(data.compute(), op, to=to, **given, **params)
    series = _series_library(data)
    if series is not None:
        frame = data.to_frame()
        result = scan(frame, op, to=to, **given, **params)
        if series == "pandas":
            result.index = data.index
        # The input kept, several ops or an index column: more than one column, so the
        # frame (the Series alone would be the input given back, or lose the indices).
        if given["keep"] or given["indices"] or len(op.split(",")) > 1:
            return result
        if series == "polars":
            return result.to_series()
        return result.iloc[:, 0].rename(data.name)
    if _is_file(data):
        return _scan_file(data, op, to, given, params)
    if isinstance(data, io.TextIOBase):  # not an array of Python objects, as numpy sees it
        raise UsageError("the file object given is in text mode: open it in binary mode "
                         "('rb'), or give its path")
    if type(data).__module__.split(".")[0] == "polars" and type(data).__name__ == "LazyFrame":
        raise UsageError("a polars LazyFrame is a query, not a table: give its collect()")
    if to is not None:
        raise UsageError("to= is for files (a path, a URL or a binary file object)")
    _check_arguments(op, given["overflow"], params)
    cast = _dtype_argument(given["dtype"])
    options = _kernel_options(op, given, params)
    reverse, by, reset = given["reverse"], given["by"], given["reset"]
    stream = None if _is_arrow(data) else _arrow_stream(data)
    if _is_arrow(data) or stream is not None:
        table = _scan_table(data if stream is None else stream, op, str(given["axis"]), cast,
                            options, reverse=reverse, by=by, reset=reset,
                            columns=given["columns"], keep=given["keep"],
                            exclude=given["exclude"], periods=_periods(given),
                            times=params.get("times"))
        return table if stream is None else _same_kind(table, data, op)
    if given["columns"] is not None or given["keep"] or given["exclude"] is not None:
        raise UsageError("columns=, exclude= and keep= are for Arrow tables")
    if (*_periods(given)[:3], params.get("times")) != (None,) * 4 or given["share"]:
        raise UsageError("period=, time=, year_start=, share= and times= are for tables")
    if "," in op:  # an array's result is one array: several ops make a table's columns
        raise UsageError(f"several ops ({op}) are for tables; scan an array one op at a "
                         "time")
    if _is_arrow_array(data):
        return _scan_arrow_array(data, op, given, cast, options)
    try:
        array = np.asarray(data)
    except ValueError as error:  # a ragged list
        raise DataError(f"cumtool.scan needs a rectangular array: {error}") from None
    if array.dtype.hasobject:
        raise DataError("cumtool.scan needs a numeric array, not Python objects")
    spec = kernels.make_spec(op, array.dtype, cast, what="the array",
                             **options)
    axis_number = _array_axis(given["axis"], array.ndim)
    if by is not None or reset is not None:
        return _scan_keyed_array(spec, array, axis_number, by, reset, reverse, cast,
                                 options)
    try:
        result = kernels.scan_array(spec, array, axis_number, reverse=reverse)
    except ScanOverflowError as error:
        # The kernel counts along the scanned axis first; report the input's own index.
        index = array_index(error.position, axis_number, 0) if array.ndim else ()
        if reverse and index:
            index = tuple(array.shape[axis_number] - 1 - i if d == axis_number else i
                          for d, i in enumerate(index))
        raise ScanOverflowError(error.raw + kernels.overflow_hint(given["overflow"], error),
                                index) from None
    return (result.values, result.indices) if given["indices"] else result.values


def _keywords(keywords: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """scan()'s keywords split: the general options (options.API_KEYWORDS), each at its
    declared default where not given, and the ops' own (cumtool.ops.KEYWORDS); any other
    is refused by name, with the keywords it is close to."""
    from cumtool.ops import KEYWORDS

    given = {name: keywords.pop(name, default) for name, default in API_DEFAULTS.items()}
    for name in keywords:
        if name not in KEYWORDS:
            from cumtool.suggest import close_keywords

            raise UnknownKeyword(f"scan() got an unexpected keyword argument {name!r}"
                                 + close_keywords(name, [*API_KEYWORDS, "to", *KEYWORDS]))
    return given, keywords


def _check_flags(given: dict[str, Any], params: dict[str, Any]) -> None:
    """The flags (reverse=, keep=, adjust=...) are True or False: "false" or "no" is truthy
    and would turn them on, None off. numpy's bools are taken as Python's."""
    from cumtool.ops import KEYWORDS

    for keywords, declared in ((given, BY_FIELD), (params, KEYWORDS)):
        for name, value in keywords.items():
            if declared[name].type is not bool:
                continue
            if not isinstance(value, bool | np.bool_):
                raise UsageError(f"{name}= must be True or False, not {value!r}")
            keywords[name] = bool(value)


def _periods(given: dict[str, Any]) -> tuple[Any, Any, Any, bool]:
    """period=, time=, year_start= and share=, as _scan_table takes them."""
    return given["period"], given["time"], given["year_start"], given["share"]


def _signature() -> inspect.Signature:
    """scan()'s signature as help() and inspect.signature show it: `data`, `op`, `axis`
    and `dtype`, then every other declared keyword (options.API_KEYWORDS) with its
    default, `to`, and the ops' own as **params."""
    own = list(inspect.signature(scan).parameters.values())
    declared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
                for name, default in API_DEFAULTS.items()
                if name not in {parameter.name for parameter in own}]
    return inspect.Signature([*own[:-2], *declared, own[-2], own[-1].replace(name="params")])


def _keywords_help() -> str:
    """The part of scan()'s docstring that lists the declared keywords, each with its
    default and its help (Option.api_help, else the command line's)."""
    import textwrap

    lines = ["", "    Keywords, each the command line's option of that name (cumtool/options.py):",
             ""]
    for name, default in API_DEFAULTS.items():
        declared = BY_FIELD[name]
        lines.append(f"    {name}={default!r}")
        text = declared.api_help or declared.help
        if declared.choices and not declared.api_help:
            text += f" One of {', '.join(repr(choice) for choice in declared.choices)}."
        lines += textwrap.wrap(text, 88, initial_indent=" " * 8, subsequent_indent=" " * 8,
                               break_on_hyphens=False)
    return "\n".join(lines) + "\n"


setattr(scan, "__signature__", _signature())  # noqa: B010 (mypy knows no such attribute)
if scan.__doc__ is not None:  # None under python -OO
    scan.__doc__ += _keywords_help()


def _dask_frame(data: Any) -> bool:
    """A Dask DataFrame or Series (dask.dataframe), which computes to a pandas one."""
    return (type(data).__module__.split(".")[0] == "dask"
            and type(data).__name__ in ("DataFrame", "Series") and hasattr(data, "compute"))


def _series_library(data: Any) -> str | None:
    """'polars' or 'pandas' for a Series of theirs (a one-column table), else None."""
    module = type(data).__module__.split(".")[0]
    if type(data).__name__ == "Series" and module in ("polars", "pandas"):
        return module
    return None


def _is_file(data: Any) -> bool:
    """A path, a URL or a binary file object: text is never an array to scan."""
    if isinstance(data, str | os.PathLike):
        return True
    return hasattr(data, "read") and not isinstance(data, io.TextIOBase)


def _scan_file(data: Any, op: str, to: str | None, given: dict[str, Any],
               params: dict[str, Any]) -> Any:
    """A file read as the CLI reads it, scanned as cumtool.scan scans tables or arrays.
    `given`: scan()'s general keywords (options.API_KEYWORDS), by name."""
    from cumtool.request import Request
    from cumtool.sources import open_source

    path = "-" if not isinstance(data, str | os.PathLike) else os.fspath(data)
    if path == "-" and getattr(data, "closed", False):
        raise UsageError("the file object given is closed: give it open, or its path")
    request = Request(op=op, input=path)
    cast = _dtype_argument(given["dtype"])
    # What the command line refuses before it opens the input (Request.check) is refused
    # before it here too: a usage error, not the data error that reading may meet first.
    from cumtool import periods as calendar
    from cumtool.request import check_share

    periods = (given["period"], given["time"], given["year_start"], given["share"])
    _check_arguments(op, given["overflow"], params)
    options = _kernel_options(op, given, params)
    calendar.check(periods[0], periods[1], periods[2])
    check_share(op.split(","), periods[3], reset=given["reset"] is not None)
    with contextlib.ExitStack() as stack:
        if path == "-":
            from cumtool.formats import peekable

            source, kind = open_source(request, cast, stack, stdin=peekable(data))
        else:
            source, kind = open_source(request, cast, stack)
        _refuse_unread(given, kind.format, source.name)
        if source.layout == "array":  # an array (.npy): read whole, then as an array
            if to is not None:
                raise UsageError(f"to= is for tables; {source.name} is an array")
            read = source.array()
            blocks = list(read.blocks(max(1, read.shape[0]) if read.shape else 1))
            array = (np.concatenate(blocks) if read.shape else blocks[0])
            return scan(array, op, **given, **params)
        if source.layout == "wide":
            raise UsageError(f"{source.name} has too many columns for cumtool.scan; use "
                             "the command line")
        from cumtool.formats.registry import DELIMITED
        from cumtool.runner import text_markers

        result = _scan_table(source, op, str(given["axis"]), cast, options,
                             reverse=given["reverse"], by=given["by"], reset=given["reset"],
                             columns=given["columns"], keep=given["keep"],
                             exclude=given["exclude"],
                             text_na=text_markers(request, kind.format in DELIMITED),
                             periods=periods, times=params.get("times"))
    if to == "polars":
        import polars as pl

        return pl.from_arrow(result)
    return result.to_pandas() if to == "pandas" else result


def _refuse_unread(given: dict[str, Any], fmt: str, name: str) -> None:
    """The command line's refusal (options.refuse_unread) of a keyword given for an input
    whose format does not honour it: columns= on a .npy file, by name, not ignored."""
    from cumtool.options import BY_FIELD, refuse_unread

    def is_set(value: Any, default: Any) -> bool:  # `by` may be an array: no ==
        if value is None or value is False or (isinstance(value, tuple | list)
                                                and not value):
            return False
        return not (isinstance(value, str | int | float) and value == default)

    refuse_unread([BY_FIELD[keyword] for keyword, value in given.items()
                   if is_set(value, BY_FIELD[keyword].default)], fmt, name)


def _kernel_options(op: str, given: dict[str, Any], params: dict[str, Any]
                    ) -> dict[str, Any]:
    """The scan's keywords for kernels.make_spec and tables.make_plan, from scan()'s
    general keywords (`given`) and the ops' own (`params`, which _check_arguments
    checked)."""
    from cumtool.ops import scan_params

    indices = given["indices"]
    return dict(overflow=given["overflow"], skipna=given["skipna"], indices=indices,
                exclusive=given["exclusive"],
                **scan_params(op.split(","), {"indices": indices, **params},
                              exclusive=given["exclusive"]))


def _check_arguments(op: Any, overflow: Any, params: dict[str, Any]) -> None:
    """What Click checks on the command line (an unknown keyword: _keywords): a typo in
    overflow= must not wrap quietly, nor a ddof of 0.5 be taken as 0."""
    from cumtool.ops import KEYWORDS

    if not isinstance(op, str):
        raise UsageError(f"op= must be a string such as 'cumsum' or 'cumsum,cummax', not "
                         f"{op!r}")
    if overflow not in OVERFLOW_CHOICES:
        raise UsageError(f"overflow= must be 'error' or 'wrap', not {overflow!r}")
    for name, value in params.items():
        wanted = KEYWORDS[name].type
        if value is None or wanted is bool:
            continue
        if wanted is int and (isinstance(value, bool)
                              or not isinstance(value, numbers.Integral)):
            raise UsageError(f"{name}= must be an integer, not {value!r}")
        if wanted is float and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            raise UsageError(f"{name}= must be a number, not {value!r}")


def _dtype_argument(dtype: Any) -> np.dtype | None:
    """dtype= as a name ('float32', 'torch.float32') or as numpy takes it (np.float32,
    float, np.dtype('int16'))."""
    if dtype is None:
        return None
    if not isinstance(dtype, str):
        try:
            dtype = np.dtype(dtype).name
        except (TypeError, ValueError):
            raise UsageError(f"dtype= {dtype!r} is not a dtype; give a name such as "
                             "'float64'") from None
    return kernels.parse_dtype(dtype)


def _arrow_stream(data: Any) -> Any:
    """A pyarrow RecordBatchReader over a DataFrame (polars, pandas, DuckDB, a pyarrow
    reader: anything with `__arrow_c_stream__` whose rows are records), sharing its
    buffers; None for anything else (a Series streams values, not records: numpy reads
    it)."""
    if isinstance(data, np.ndarray) or not hasattr(data, "__arrow_c_stream__"):
        return None
    if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns") \
            and not data.columns.is_unique:
        # pyarrow refuses it ("Duplicate column names found") with no name of ours.
        repeated = data.columns[data.columns.duplicated()][0]
        raise DataError(f"the DataFrame has more than one column named {repeated!r}, which "
                        "pandas cannot hand over to Arrow; rename them first")
    import pyarrow as pa

    try:
        return pa.RecordBatchReader.from_stream(data)
    except pa.ArrowInvalid as error:
        if type(data).__name__ != "DataFrame":
            return None  # a stream of plain values (a Series), not of records
        # A column Arrow cannot take (polars' Int128, pandas' mixed objects): numpy would
        # fail on it in words of its own.
        hint = ("; cast the columns of types Arrow has not (polars' Int128) first"
                if "format string" in str(error) else "")
        reason = "; ".join(str(part) for part in error.args)  # pandas: (why, which column)
        raise DataError(f"the DataFrame cannot be handed over to Arrow: {reason}{hint}"
                        ) from None


def _same_kind(table: Any, given: Any, op: str) -> Any:
    """The result as the kind of object given: polars and pandas DataFrames as such,
    anything else as the pyarrow Table."""
    module = type(given).__module__.split(".")[0]
    if module == "polars" and type(given).__name__ == "DataFrame":
        import polars as pl

        return pl.from_arrow(table)
    if module == "pandas" and type(given).__name__ == "DataFrame":
        return _pandas_frame(table, given, op.split(","))
    return table


def _pandas_frame(table: Any, given: Any, ops: list[str]) -> Any:
    """The result table as a pandas DataFrame: dtypes by _pandas_types_fitting, and the
    given frame's column labels where they are not text (pd.DataFrame(array)'s 0, 1, or
    tuples of a MultiIndex): pandas' metadata would read an added column's name,
    '0_cumsum', as such a label and fail. Those keep their labels; the added columns are
    labelled by their names (text)."""
    import json

    pandas = json.loads((table.schema.metadata or {}).get(b"pandas", b"{}"))
    levels = pandas.get("column_indexes", [])
    fields = [entry.get("field_name") for entry in pandas.get("columns", [])]
    table = _pandas_types_fitting(table, ops)
    if not set(table.schema.names) - set(fields) or (len(levels) <= 1 and all(
            level.get("pandas_type") in ("unicode", "string") for level in levels)):
        return table.to_pandas()
    import pandas as pd

    labels = dict(zip(fields, given.columns, strict=False))  # its columns come first
    pandas = json.loads(table.schema.metadata[b"pandas"])
    del pandas["column_indexes"]
    table = table.replace_schema_metadata({**table.schema.metadata,
                                           b"pandas": json.dumps(pandas).encode()})
    frame = table.to_pandas()
    frame.columns = pd.Index([labels.get(name, name) for name in frame.columns],
                             dtype=object, tupleize_cols=False,
                             name=given.columns.name if len(levels) == 1 else None)
    return frame


def _pandas_types_fitting(table: Any, ops: list[str]) -> Any:
    """The table, its pandas metadata (which pandas' nullable dtypes, Int64 and the like,
    come back by) fitted to the types of its results: cummean of an Int64 column is
    Float64, where the metadata of the input would make it Int64 (and fail on 2.5);
    cumnunique of a `str` column (pandas 3's text) int64, not its counts as text. The
    results added for a nullable column (keep=True, several ops, indices=True) are of
    the nullable dtype of their type too (Int64, not float64 with NaN)."""
    import json

    import pyarrow as pa

    meta = table.schema.metadata or {}
    if b"pandas" not in meta:
        return table
    pandas = json.loads(meta[b"pandas"])
    names = set(table.schema.names)
    nullable_sources = []
    for entry in pandas.get("columns", []):
        name, numpy_type = entry.get("field_name"), entry.get("numpy_type")
        if name not in names:
            continue
        arrow_type = table.schema.field(name).type
        if numpy_type == "str" and not pa.types.is_string(arrow_type) \
                and not pa.types.is_large_string(arrow_type):
            # pandas 3's text (NaN for missing, not nullable): a numpy dtype, as pandas
            # gives for its counts.
            entry["numpy_type"] = arrow_type.to_pandas_dtype().__name__
            entry["pandas_type"] = _PANDAS_TYPES.get(str(arrow_type), "object")
            continue
        if numpy_type not in _NULLABLE.values():
            continue  # numpy's own dtypes follow the Arrow type
        nullable_sources.append(name)
        nullable = _NULLABLE.get(str(arrow_type))
        if nullable != numpy_type:
            entry["numpy_type"] = nullable or arrow_type.to_pandas_dtype().__name__
            entry["pandas_type"] = _PANDAS_TYPES.get(str(arrow_type), "object")
    known = {entry.get("field_name") for entry in pandas.get("columns", [])}
    for source in nullable_sources:
        suffixes = ["index", *ops, *(f"{op}_index" for op in ops)]
        for name in (f"{source}_{suffix}" for suffix in suffixes):
            nullable = (_NULLABLE.get(str(table.schema.field(name).type))
                        if name in names and name not in known else None)
            if nullable is not None:
                pandas["columns"].append({"name": name, "field_name": name,
                                          "pandas_type": _PANDAS_TYPES[str(
                                              table.schema.field(name).type)],
                                          "numpy_type": nullable, "metadata": None})
                known.add(name)
    meta = {**meta, b"pandas": json.dumps(pandas).encode()}
    return table.replace_schema_metadata(meta) if isinstance(table, pa.Table) else table


# pandas' nullable dtypes by the Arrow type they hold, and pandas' names of those types
# (its metadata's `numpy_type` and `pandas_type`).
_NULLABLE = {**{f"int{n}": f"Int{n}" for n in (8, 16, 32, 64)},
             **{f"uint{n}": f"UInt{n}" for n in (8, 16, 32, 64)},
             "float": "Float32", "double": "Float64", "bool": "boolean",
             "string": "string", "large_string": "string"}
_PANDAS_TYPES = {**{f"int{n}": f"int{n}" for n in (8, 16, 32, 64)},
                 **{f"uint{n}": f"uint{n}" for n in (8, 16, 32, 64)},
                 "float": "float32", "double": "float64", "bool": "bool",
                 "string": "unicode", "large_string": "unicode"}


def _is_arrow(data: Any) -> bool:
    module = type(data).__module__
    return module.startswith("pyarrow") and type(data).__name__ in ("Table", "RecordBatch")


def _array_axis(axis: Any, ndim: int) -> int:
    """axis= of an array: a name (rows, columns, index) or an integer, refused in the
    API's words, the value as it was given (the engine's say --axis, of text)."""
    from cumtool.choices import AXIS_NAMES

    given = ((isinstance(axis, str) and (axis.strip().lower() in AXIS_NAMES
                                        or axis.strip().lstrip("-").isdigit()))
             or (isinstance(axis, int | np.integer) and not isinstance(axis, bool)))
    try:
        if given:
            return resolve_array_axis(str(axis), ndim)
    except UsageError:
        pass
    low, high = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    names = "'rows'" if ndim <= 1 else "'rows', 'columns'"
    raise UsageError(f"axis={axis!r} is not an axis of a {ndim}-d array; give {names} or an "
                     f"integer from {low} to {high}")


def _is_arrow_array(data: Any) -> bool:
    """A pyarrow Array or ChunkedArray: one column, which may have missing cells."""
    if not type(data).__module__.startswith("pyarrow"):
        return False
    import pyarrow as pa

    return isinstance(data, pa.Array | pa.ChunkedArray)


def _scan_arrow_array(data: Any, op: str, given: dict[str, Any], dtype: np.dtype | None,
                      options: dict[str, Any]) -> Any:
    """A pyarrow Array or ChunkedArray: a 1-D array scanned as a table's one column, so
    that its missing cells stay missing and its integers integers (numpy.asarray made
    them NaN, and the integers floats); the result is of its kind, with the keywords of
    arrays (`by` and `reset`: one entry per position)."""
    import pyarrow as pa

    _array_axis(given["axis"], 1)
    column = data if isinstance(data, pa.ChunkedArray) else pa.chunked_array([data],
                                                                             data.type)
    keys = _array_keys(given["by"], given["reset"], len(column))
    try:
        out = _scan_table(pa.table({"values": column, **keys}), op, "rows", dtype, options,
                          reverse=given["reverse"],
                          by=[name for name in keys if name != "reset"] or None,
                          reset="reset" if "reset" in keys else None, columns=["values"],
                          keep=False)
    except ScanOverflowError as error:
        raise _array_overflow(error, 1) from None
    results = [out.column("values")]
    if options["indices"]:
        results.append(out.column("values_index"))
    if not isinstance(data, pa.ChunkedArray):
        results = [result.combine_chunks() for result in results]
    return tuple(results) if options["indices"] else results[0]


def _scan_table(data: Any, op: str, axis: str, dtype: np.dtype | None,
                options: dict[str, Any], *, reverse: bool, by: Any, reset: Any,
                columns: Sequence[str | int] | None, keep: bool,
                exclude: Sequence[str | int] | None = None,
                text_na: frozenset[str] = frozenset(),
                periods: tuple[Any, Any, Any, bool] = (None, None, None, False),
                times: Any = None) -> Any:
    """An Arrow table or reader, or a file's table source (whose reader parses the
    columns the plan scans, as the CLI's does), scanned into a pyarrow Table. `text_na`:
    the cell texts that are missing in text columns (a CSV's NA markers)."""
    import pyarrow as pa

    from cumtool.columns import names
    from cumtool.tables import TableOptions, make_plan

    def chosen(given: Any, keyword: str) -> tuple[Any, ...]:
        if given is None:
            return ()
        return (names([given] if isinstance(given, str | int) else given, keyword),)

    period, time, year_start, share = periods
    from cumtool import periods as calendar

    time_column = chosen(time, "time=")[0] if time is not None else None
    table_options = TableOptions(
        columns=chosen(columns, "columns="), exclude=chosen(exclude, "exclude="),
        by=chosen(by, "by="), reset=chosen(reset, "reset=")[0] if reset is not None else None,
        keep=keep, reverse=reverse, text_na=text_na,
        # A table comes back typed, as the CLI's Arrow and Parquet outputs write it: a
        # column of numbers or dates read from text is one, scanned or not.
        typed_output=True,
        period=calendar.check(period, time_column, year_start), time=time_column,
        share=bool(share), times=chosen(times, "times=")[0] if times is not None else None)
    from cumtool.request import check_share

    check_share(op.split(","), share, reset=reset is not None)
    if isinstance(data, SourceBase):  # a file's source
        data = cast(TableSource, data)
        schema, name, hints = data.schema, data.name, data.hints
        plan = make_plan(op, axis, dtype, schema, name, table_options, hints, **options)
        locate = data.locator  # messages name a row's line, as the CLI's (state.prepare)
        _locate(plan, locate)

        def read() -> Any:
            return data.batches(plan.parse, plan.text_unused)
    else:
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        # A reader (a DataFrame's stream) is read batch by batch, as a file is; polars'
        # text comes as views, read as the large types (columnar.without_views).
        from cumtool.columnar import batch_without_views, schema_without_views

        schema, name, hints = schema_without_views(table.schema), "the table", None
        stored = table if isinstance(table, pa.RecordBatchReader) else table.to_batches()
        batches = (batch_without_views(batch, schema) for batch in stored)
        plan = make_plan(op, axis, dtype, schema, name, table_options, **options)
        locate = None

        def read() -> Any:
            return iter(batches)
    collected = _Collected()
    with contextlib.ExitStack() as stack:  # --reverse spools, removed at the end
        if share:  # a first pass for the final values: the input is read twice
            from cumtool.runner import track_finals

            held = list(read())
            first = make_plan(op, axis, dtype, schema, name, table_options, hints,
                              **{**options, "exclusive": False})
            _locate(first, locate)  # an overflow in the first pass names its line too
            for each, found in zip(plan.op_plans(), track_finals(
                    first, iter(held), reverse, stack), strict=True):
                each.finals = found

            def read() -> Any:
                return iter(held)
        scan_batches(plan, read, collected, reverse and plan.axis == 0, stack)
    return pa.Table.from_batches(collected.batches, schema=plan.schema)


def _locate(plan: Any, locate: Any) -> None:
    """A plan's messages name a row's line where the reader knows it (`locate`)."""
    if locate is not None:
        for each in plan.op_plans():
            each.where = locate


class _Collected:
    """The sink of cumtool.scan on a table: the output batches, in memory."""

    def __init__(self) -> None:
        self.batches: list[Any] = []

    def write(self, batch: Any) -> None:
        self.batches.append(batch)

    def close(self) -> None:
        pass

    def abort(self) -> None:
        self.batches.clear()


def _scan_keyed_array(spec: kernels.ScanSpec, array: np.ndarray, axis: int, by: Any,
                      reset: Any, reverse: bool, dtype: np.dtype | None,
                      options: dict[str, Any]) -> Any:
    """by=/reset= on an array: through the table path, one column per line."""
    import pyarrow as pa

    from cumtool.columnar import arrow_column

    if array.ndim not in (1, 2) or axis != 0:
        raise UsageError("by= and reset= on arrays need a 1-D or 2-D array and axis 0")
    if spec.in_dtype.kind == "c" or spec.source_dtype.kind == "c":
        raise UsageError("by= and reset= cannot scan complex values")
    # Explicit width: reshape(n, -1) cannot infer it for an empty array.
    matrix = _native(array.reshape(array.shape[0],
                                   array.shape[1] if array.ndim == 2 else 1))
    names = [f"c{i}" for i in range(matrix.shape[1])]
    # Built from the buffers (arrow_column): pa.table() of numpy arrays imports pandas.
    arrays: dict[str, Any] = {name: arrow_column(matrix[:, i], None)
                              for i, name in enumerate(names)}
    keys = _array_keys(by, reset, array.shape[0])
    table = pa.table({**arrays, **keys})
    try:
        out = _scan_table(table, spec.op, "rows", dtype, options, reverse=reverse,
                          by=[name for name in keys if name != "reset"] or None,
                          reset="reset" if reset is not None else None, columns=names,
                          keep=False)
    except ScanOverflowError as error:
        raise _array_overflow(error, array.ndim) from None
    values = np.column_stack([_numpy(out.column(n)) for n in names]).reshape(array.shape)
    if spec.indices:
        # A table's null index (the identity, with exclusive=True) is -1 in an array.
        indices = np.column_stack([_numpy(out.column(f"{n}_index").fill_null(-1))
                                   for n in names]).reshape(array.shape)
        return values, indices
    return values


def _numpy(column: Any) -> np.ndarray:
    """A result column as numpy: from its buffers (to_numpy imports pandas), or, where
    it has missing cells (NaN in an array), by to_numpy."""
    from cumtool.columnar import column_to_numpy

    values, valid = column_to_numpy(column)
    return values if valid is None else column.to_numpy()


def _native(array: np.ndarray) -> np.ndarray:
    """The array in the machine's byte order: Arrow takes no byte-swapped ones (a
    big-endian '>f8' from a file written elsewhere)."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def _array_keys(by: Any, reset: Any, rows: int) -> dict[str, Any]:
    """by= and reset= of an array as Arrow columns (key0, key1..., reset): one key (a row
    of keys) and one flag per position along axis 0."""
    import pyarrow as pa

    from cumtool.columnar import arrow_column

    for keyword, given in (("by", by), ("reset", reset)):
        if isinstance(given, str):  # np.asarray("k") is one key, not a column's name
            raise UsageError(f"{keyword}= on an array is an array with one entry per "
                             f"position along axis 0; a column's name ({given!r}) is for "
                             "tables")
    columns: dict[str, Any] = {}
    if by is not None:
        keys = np.asarray(by)
        if keys.ndim == 0 or keys.shape[0] != rows:
            count = "one key" if keys.ndim == 0 else f"{keys.shape[0]} entries"
            raise UsageError(f"by= has {count}, the array {rows} along axis 0")
        keys = _native(keys.reshape(rows, int(np.prod(keys.shape[1:], dtype=np.int64))))
        if keys.dtype.kind == "c":  # a complex key is its two parts (Arrow has no complex)
            keys = np.concatenate([keys.real, keys.imag], axis=1)
        for i in range(keys.shape[1]):
            column = keys[:, i]
            try:
                columns[f"key{i}"] = (arrow_column(column, None) if column.dtype.kind in "biuf"
                                      else pa.array(column))
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
                raise UsageError(f"by= needs keys of one kind in each column (numbers, "
                                 f"text, dates...): {error}") from None
    if reset is not None:
        flags = np.asarray(reset).astype(bool)
        if flags.shape != (rows,):
            raise UsageError(f"reset= needs {rows} flags, one per row")
        columns["reset"] = arrow_column(flags, None)
    return columns


def _array_overflow(error: ScanOverflowError, ndim: int) -> ScanOverflowError:
    """An overflow in an array's scan through a table: the array's own index, and no table
    or CLI wording, as without by=."""
    row, line = error.position
    reason = error.raw.split(": ", 2)[2]
    return ScanOverflowError(reason, (row,) if ndim == 1 else (row, line))
