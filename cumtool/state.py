"""`--state FILE`: the carried state of a table run, saved and loaded, so that a run
resumed tomorrow continues today's running values bit for bit.

The file is JSON (format "cumtool-state", version 1; docs/datasets.md describes it), so a
cron user can read it. It holds what the run was made with (op, axis, scanned columns,
--by, --reset, --dtype, --filename-column, and each column's scan spec: dtypes,
--overflow, --skipna, --indices, --exclusive and whatever options an op adds), the rows
scanned so far, and every carry object's fields as they are, whatever the op: the state
is taken from the objects, not from a list of ops. Floats are stored exactly, as C99
hexadecimal text (Python's float.hex: "0x1.3333333333334p-2", "-0x0.0p+0", "inf"), and a
NaN as its IEEE bits ("nan:0x7ff8000000000000"), since its sign and payload can reach the
output. The file is written atomically, and only after the run's output is complete.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from cumtool.errors import DataError, OutputError, UsageError, option
from cumtool.kernels import ScanSpec
from cumtool.request import Request

FORMAT = "cumtool-state"
VERSION = 1
_ABOUT = ("The carried state of a cumtool run (--state); see cumtool's docs/datasets.md. "
          "Floats are C99 hex (float.fromhex), a NaN its IEEE bits.")


def prepare(request: Request, plan: Any, source: Any) -> Callable[[], None]:
    """Before a table run: make error positions name the file and row within it, load
    the state if --state names an existing file; return what saves it after success."""
    plans = getattr(plan, "plans", [plan])
    locate = getattr(source, "locate", None)
    if locate is not None:
        for each in plans:
            each.where = _locator(locate, each)
    if request.state is None:
        return lambda: None
    path = request.state
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):  # found now, not after the output is written
        raise OutputError(f"cannot write {path}: directory {folder} does not exist")
    made_with = _made_with(request, plans)
    if os.path.exists(path):
        _load(path, made_with, plans)
    try:  # a carry this module cannot write is found now, not after the output is written
        for each in plans:
            _plan_record(each)
    except TypeError as error:
        raise UsageError(f"{option('state')} cannot save the state of {request.op}: "
                         f"{error}") from None

    def save() -> None:
        _save(path, made_with, plans)

    return save


def hints(request: Request, source: Any) -> list[Any] | None:
    """What each text column holds: as the source judged it, except where it had no
    value to judge from (a day with no rows, or with a column all missing): there, as the
    state saved it, so that a quiet day does not turn yesterday's float column into a
    guessed integer or text one."""
    judged = getattr(source, "hints", None)
    if judged is None or request.state is None or not os.path.exists(request.state):
        return judged
    import pyarrow as pa

    from cumtool.formats import ColumnHint

    document = _read(request.state)
    try:
        made_with = document["made_with"]
        saved = {c["name"]: c for c in document["plans"][0]["columns"]}
    except (KeyError, TypeError, IndexError) as error:
        raise _damaged(request.state, f"{type(error).__name__}: {error}") from None
    no_rows = getattr(source, "sampled_rows", 1) == 0
    result = []
    for name, hint in zip(source.schema.names, judged, strict=True):
        record = saved.get(name)
        if not no_rows and hint.kind != "empty":
            result.append(hint)
        elif record is not None:
            scale = record.get("decimal_scale")
            arrow_type = (pa.decimal128(38, scale) if scale is not None
                          else pa.from_numpy_dtype(np.dtype(record["spec"]["source_dtype"])))
            kind = "float" if pa.types.is_floating(arrow_type) else "int"
            result.append(ColumnHint(arrow_type, True, kind))
        elif not no_rows:
            result.append(hint)
        elif name == made_with.get("reset"):
            result.append(ColumnHint(pa.int64(), False, "int"))
        else:
            result.append(ColumnHint(None, False, "text"))
    return result


def _locator(locate: Callable[[int], tuple[str, int]], plan: Any
             ) -> Callable[[int], tuple[str, int]]:
    return lambda row: locate(row - plan.rows_before)


# What the state was made with --------------------------------------------------------

def _made_with(request: Request, plans: list[Any]) -> dict[str, Any]:
    first = plans[0]
    return {
        "op": request.op,
        "axis": "rows" if first.axis == 0 else "columns",
        "columns": [first.names[i] for i in first.selected],
        "by": [first.names[i] for i in first.by],
        "reset": None if first.reset is None else first.names[first.reset],
        "dtype": None if request.dtype is None else str(_dtype(request.dtype)),
        "filename_column": request.filename_column,
    }


def _dtype(name: str) -> np.dtype:
    from cumtool.kernels import parse_dtype

    return parse_dtype(name)


def _spec_record(spec: ScanSpec) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        if isinstance(value, np.generic):
            value = value.item()
        if not (value is None or isinstance(value, bool | int | float | str)):
            value = str(value)  # a dtype, or an option an op adds
        record[field.name] = value
    return record


_OPTION_OF = {"axis": "axis", "by": "by", "reset": "reset", "dtype": "dtype",
              "filename_column": "filename_column", "in_dtype": "dtype",
              "acc_dtype": "dtype", "out_dtype": "dtype"}


def _refuse(path: str, key: str, saved: Any, current: Any) -> UsageError:
    """The first difference between the state's options and this run's, named."""
    head = f"{option('state', path)} was made"
    if key == "op":
        return UsageError(f"{head} by {saved}, and this run is {current}; use another state "
                          "file for another op")
    if key == "columns":
        return UsageError(f"{head} for columns {', '.join(map(repr, saved))}, and this run "
                          f"scans {', '.join(map(repr, current))}; choose the same with "
                          f"{option('columns')}")
    name = _OPTION_OF.get(key, key)

    def shown(value: Any) -> str:
        if isinstance(value, list):
            return option(name, ",".join(value)) if value else f"no {option(name)}"
        if isinstance(value, bool):
            return option(name) if value else f"no {option(name)}"
        return f"no {option(name)}" if value is None else option(name, str(value))

    return UsageError(f"{head} with {shown(saved)}, and this run has {shown(current)}; "
                      "give the same options, or another state file")


def _compare(path: str, saved: dict[str, Any], current: dict[str, Any]) -> None:
    for key, value in current.items():
        if key not in saved:
            raise _damaged(path, f"it has no {key!r}")
        if saved[key] != value:
            raise _refuse(path, key, saved[key], value)


# Loading and saving --------------------------------------------------------------------

def _damaged(path: str, why: str) -> DataError:
    return DataError(f"{path}: not a cumtool state file that this version can use ({why}); "
                     f"remove it to start afresh, or give another {option('state')} file")


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as stream:
            document = json.load(stream)
    except OSError as error:
        raise DataError(f"{path}: cannot read: {error.strerror or error}") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise _damaged(path, f"not JSON: {error}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise _damaged(path, f"no \"format\": \"{FORMAT}\"")
    if document.get("version") != VERSION:
        raise _damaged(path, f"version {document.get('version')!r}, this cumtool reads "
                             f"version {VERSION}")
    return document


def _load(path: str, made_with: dict[str, Any], plans: list[Any]) -> None:
    document = _read(path)
    try:
        _compare(path, document["made_with"], made_with)
        saved_plans = document["plans"]
        rows = int(document["rows"])
        if len(saved_plans) != len(plans):
            raise _damaged(path, "another number of ops")
        for plan, saved in zip(plans, saved_plans, strict=True):
            _restore_plan(path, plan, saved)
            plan.rows_done = rows
            plan.rows_before = rows
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise _damaged(path, f"{type(error).__name__}: {error}") from None


def _restore_plan(path: str, plan: Any, saved: dict[str, Any]) -> None:
    columns = saved["columns"]
    if len(columns) != len(plan.selected):
        raise _damaged(path, "another number of columns")
    for position, record in zip(plan.selected, columns, strict=True):
        spec = _spec_record(plan.specs[position])
        for key, value in spec.items():
            if record["spec"].get(key) != value:
                if key == "source_dtype":
                    raise DataError(
                        f"{option('state', path)} was made when column "
                        f"{plan.label(position)} held {record['spec'].get(key)}, and it "
                        f"holds {value} now; the inputs must keep their types")
                raise _refuse(path, key, record["spec"].get(key), value)
        if record.get("decimal_scale") != plan.decimal_scale.get(position):
            raise DataError(f"{option('state', path)} was made when column "
                            f"{plan.label(position)} had {record.get('decimal_scale')} decimal "
                            f"places, and it has {plan.decimal_scale.get(position)} now")
        _restore_object(path, plan.carries[position], record["carry"])
        if position in plan.group_carries:
            _restore_object(path, plan.group_carries[position], record["group_carry"])
    if plan.group_keys is not None:
        groups = saved["groups"]
        known = None if groups["keys"] is None else _decode_frame(groups["keys"])
        plan.group_keys.restore(known, int(groups["count"]))


def _save(path: str, made_with: dict[str, Any], plans: list[Any]) -> None:
    from cumtool.output import open_output

    document = {
        "format": FORMAT,
        "version": VERSION,
        "about": _ABOUT,
        "made_with": made_with,
        "rows": int(plans[0].rows_done),
        "plans": [_plan_record(plan) for plan in plans],
    }
    text = _pretty(document, 5, "") + "\n"
    with open_output(path) as stream:
        stream.write(text.encode("utf-8"))


def _pretty(value: Any, depth: int, indent: str) -> str:
    """JSON laid out a line per key down to `depth`, each deeper value on one line: easy
    to read, and the long arrays of a state with many groups go through json's fast C
    encoder (indent= would take its pure-Python one: seconds for 100,000 groups)."""
    if depth == 0 or not isinstance(value, dict | list) or not value:
        return json.dumps(value, separators=(", ", ": "), allow_nan=False)
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {_pretty(v, depth - 1, inner)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    items = [inner + _pretty(v, depth - 1, inner) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + indent + "]"


def _plan_record(plan: Any) -> dict[str, Any]:
    columns = []
    for position in plan.selected:
        record: dict[str, Any] = {
            "name": plan.names[position],
            "spec": _spec_record(plan.specs[position]),
            "decimal_scale": plan.decimal_scale.get(position),
            "carry": _encode_object(plan.carries[position]),
        }
        if position in plan.group_carries:
            record["group_carry"] = _encode_object(plan.group_carries[position])
        columns.append(record)
    result: dict[str, Any] = {"op": plan.op, "columns": columns}
    if plan.group_keys is not None:
        known = plan.group_keys.known()
        result["groups"] = {"count": plan.group_keys.count,
                            "keys": None if known is None else _encode_frame(known)}
    return result


# Objects: every field of a carry, whatever the op --------------------------------------

def _fields(obj: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(obj).items() if not isinstance(v, ScanSpec)}


def _encode_object(obj: Any) -> dict[str, Any]:
    return {name: _encode_value(value) for name, value in _fields(obj).items()}


def _encode_value(value: Any) -> Any:
    if isinstance(value, np.ndarray | np.generic):  # a numpy scalar: as a 0-d array
        return encode_array(np.asarray(value))
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"float": _float_text(value, np.asarray(value).view(np.uint64).item(), 16)}
    if isinstance(value, list | tuple):
        return {"list": [_encode_value(item) for item in value]}
    if hasattr(value, "__dict__"):
        return {"object": _encode_object(value)}
    raise TypeError(f"cannot save a carried {type(value).__name__}")


def _restore_object(path: str, obj: Any, saved: dict[str, Any]) -> None:
    fields = _fields(obj)
    if set(fields) != set(saved):
        raise _damaged(path, f"its carried fields {sorted(saved)} are not this version's "
                             f"{sorted(fields)}")
    for name, template in fields.items():
        value = saved[name]
        if isinstance(value, dict) and "object" in value:
            _restore_object(path, template, value["object"])
            continue
        decoded = _decode_value(value)
        if isinstance(template, np.ndarray | np.generic) and (
                not isinstance(decoded, np.ndarray | np.generic)
                or decoded.dtype != template.dtype):
            raise _damaged(path, f"field {name!r} is not {template.dtype}")
        counts = (np.asarray(decoded)["n"] if isinstance(decoded, np.ndarray | np.generic)
                  and decoded.dtype.names and "n" in decoded.dtype.names else None)
        if counts is not None and (counts < 0).any():
            raise _damaged(path, f"field {name!r} holds a count below 0")
        setattr(obj, name, decoded)


def _decode_value(value: Any) -> Any:
    if isinstance(value, dict):
        if "float" in value:
            return float(_floats([value["float"]], np.dtype(np.float64))[0])
        if "list" in value:
            return [_decode_value(item) for item in value["list"]]
        return decode_array(value)
    return value


def _float_text(value: float, bits: int, digits: int) -> str:
    return f"nan:0x{bits:0{digits}x}" if value != value else float(value).hex()


def encode_array(array: np.ndarray) -> dict[str, Any]:
    """An array as JSON, exactly: dtype, shape and values (floats in hex). A record array
    (the running statistics' state: count, mean, M2 ...) is saved field by field."""
    if array.dtype.names is not None:
        return {"record": [[name, str(array.dtype[name].str)] for name in array.dtype.names],
                "shape": list(array.shape),
                "fields": {name: encode_array(np.ascontiguousarray(array[name]))
                           for name in array.dtype.names}}
    flat = np.ascontiguousarray(array).reshape(-1)
    kind = array.dtype.kind
    values: list[Any]
    if kind == "f":
        bits = flat.view(f"u{flat.dtype.itemsize}").tolist()
        values = [_float_text(v, b, 2 * flat.dtype.itemsize)
                  for v, b in zip(flat.tolist(), bits, strict=True)]
    elif kind == "c":
        values = [encode_array(flat.real)["values"], encode_array(flat.imag)["values"]]
    elif kind in "biu":
        values = flat.tolist()
    else:
        raise TypeError(f"cannot save a carried array of {array.dtype}")
    return {"dtype": array.dtype.str, "shape": list(array.shape), "values": values}


def decode_array(record: dict[str, Any]) -> np.ndarray:
    if "record" in record:
        array = np.empty(tuple(int(n) for n in record["shape"]),
                         np.dtype([(str(name), str(kind)) for name, kind in record["record"]]))
        for name, field in record["fields"].items():
            array[name] = decode_array(field)
        return array
    dtype = np.dtype(record["dtype"])
    shape = tuple(int(n) for n in record["shape"])
    values = record["values"]
    if dtype.kind == "f":
        flat = _floats(values, dtype)
    elif dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        flat = np.empty(len(values[0]), dtype)
        flat.real = _floats(values[0], part)
        flat.imag = _floats(values[1], part)
    else:
        flat = np.array(values, dtype=dtype)
    return flat.reshape(shape)


def _floats(texts: list[str], dtype: np.dtype) -> np.ndarray:
    out = np.empty(len(texts), dtype)
    bits = out.view(f"u{dtype.itemsize}")
    for i, text in enumerate(texts):
        if text.startswith("nan:"):
            bits[i] = int(text[4:], 16)
        else:
            out[i] = float.fromhex(text)
    return out


# Group keys: a small table, column by column ------------------------------------------

def _encode_frame(frame: Any) -> list[dict[str, Any]]:
    import pyarrow as pa

    table = frame.to_arrow()
    columns = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        column = column.combine_chunks()
        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or (
                pa.types.is_string_view(kind)):
            record = {"type": "large_string", "values": column.cast(pa.large_string())
                      .to_pylist()}
        elif pa.types.is_integer(kind) or pa.types.is_boolean(kind):
            record = {"type": str(kind), "values": column.to_pylist()}
        elif pa.types.is_floating(kind):
            valid = column.is_valid().to_numpy(zero_copy_only=False)
            values = encode_array(column.fill_null(0).to_numpy(zero_copy_only=False))["values"]
            record = {"type": str(kind),
                      "values": [v if ok else None for v, ok in zip(values, valid, strict=True)]}
        else:  # dates, decimals, timestamps: Arrow's own bytes, exact for any type
            sink = pa.BufferOutputStream()
            one = pa.table({name: column})
            with pa.ipc.new_stream(sink, one.schema) as writer:
                writer.write_table(one)
            record = {"type": str(kind),
                      "arrow_ipc_base64": base64.b64encode(sink.getvalue()).decode("ascii")}
        columns.append({"name": name, **record})
    return columns


def _decode_frame(columns: list[dict[str, Any]]) -> Any:
    import polars as pl
    import pyarrow as pa

    arrays = []
    for record in columns:
        if "arrow_ipc_base64" in record:
            data = base64.b64decode(record["arrow_ipc_base64"])
            arrays.append(pa.ipc.open_stream(data).read_all().column(0).combine_chunks())
            continue
        kind = pa.type_for_alias(record["type"])
        values = record["values"]
        if pa.types.is_floating(kind):
            present = [v is not None for v in values]
            floats = _floats([v if v is not None else "0x0.0p+0" for v in values],
                             np.dtype(kind.to_pandas_dtype()))
            arrays.append(pa.array(floats, type=kind, mask=~np.array(present, dtype=bool)))
        else:
            arrays.append(pa.array(values, type=kind))
    table = pa.table(arrays, names=[record["name"] for record in columns])
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame
