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
import contextlib
import dataclasses
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from cumtool.commit import RECORD_SUFFIX, Commit, StateLock, recover, remove_leftovers
from cumtool.errors import DataError, UsageError, option
from cumtool.fingerprint import Print, Span, fingerprint, header_record, spool_stdin
from cumtool.kernels import ScanSpec
from cumtool.options import GENERAL
from cumtool.request import Request

FORMAT = "cumtool-state"
VERSION = 2  # 1: no run identity, no inputs, no "before" (still read)
_ABOUT = ("The carried state of a cumtool run (--state); see cumtool's docs/datasets.md. "
          "Floats are C99 hex (float.fromhex), a NaN its IEEE bits.")
# Request's fields that never change what a run writes (Option.identity, declared with
# each option in cumtool/options.py): a run's identity leaves them out.
_NOT_IN_IDENTITY = tuple(declared.name for declared in GENERAL if not declared.identity)
# Request's fields when a run's identity was first made (version 2): a field added since
# counts only where it is not its default, so that a retry across an upgrade is still
# known as one.
_FIELDS_OF_VERSION_2 = (
    "op", "input", "output", "from_format", "to_format", "axis", "dtype", "columns",
    "delimiter", "header", "indices", "overflow", "skipna", "by", "reset", "reverse",
    "exclusive", "keep", "decimal", "exclude", "only_scanned", "na", "na_rep",
    "out_delimiter", "decimal_comma", "encoding", "max_record_size", "line_buffered",
    "out_encoding", "out_decimal", "sheet", "inputs", "filename_column", "x", "width",
    "height")
# The ops' options that were Request's fields when a run's identity was first made.
_OP_OPTIONS_OF_VERSION_2 = ("ddof", "com", "span", "halflife", "alpha", "adjust",
                            "compensated")


@dataclasses.dataclass
class Resume:
    """A --state run before it reads: the lock it holds, the commit its files go
    through, what it starts from (the saved values, or for a retry the values from before
    the last run), and how each input is read (whole, continued, or up to its size)."""

    path: str  # as given
    real: str  # through symlinks: where the state, its lock and its record live
    commit: Commit
    document: dict[str, Any] | None  # as saved (None: no state yet)
    base: dict[str, Any]  # {"rows", "plans" (None: from the start), "inputs"}
    identity: str
    run_id: str | None
    prints: list[Print]
    spans: dict[str, Span]  # by absolute path
    stdin: Any = None  # standard input, spooled while fingerprinted
    # What each input has given once this run is done: its path, the bytes consumed and
    # their SHA-256, and whether they end a line.
    consumed: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def begin(request: Request, stack: contextlib.ExitStack) -> Resume | None:
    """Before a --state run reads anything: hold the lock, finish a commit a killed run
    left, fingerprint the inputs and decide: a retry (same identity as the last run)
    starts from the values before it; a new run from the saved values; a grown input is
    continued past what was consumed."""
    if request.state is None:
        return None
    path = request.state
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):  # found now, not after the output is written
        from cumtool.output import no_directory

        raise no_directory(path, folder)
    _refuse_a_data_file(request, path, real)
    lock = StateLock(real, request.wait, path)
    stack.callback(lock.release)
    recover(real + RECORD_SUFFIX)  # a run killed while putting its files in place
    remove_leftovers(folder, os.path.basename(real + RECORD_SUFFIX))
    document = _read(path) if os.path.exists(real) else None
    after = _snapshot(document)
    before = _before(document)
    from cumtool import inputs

    stdin = None
    prints: list[Print] = []
    given = request.inputs or (request.input,)
    from cumtool import remote

    names = [name for argument in given
             for name in ([argument] if argument == "-" or remote.is_url(argument)
                          else [f.path for f in inputs.expand((argument,))])]
    # A FIFO (or <(process substitution)) can be read once only, and a URL is best read
    # once: copied while hashed.
    piped = {n for n in names if n != "-" and (remote.is_url(n) or (
        os.path.exists(n) and not os.path.isfile(n)))}
    paths = [os.path.abspath(n) for n in names if n != "-" and n not in piped]
    # The bytes the last run and the one before it consumed: a retry starts from the
    # latter, and a retry by --run-id of a grown log ends where the last run did.
    sizes: dict[str, list[int]] = {}
    for snapshot in (after, before):
        for consumed_path, (size, _) in _known(snapshot).items():
            sizes.setdefault(consumed_path, []).append(size)
    # hashlib (it loads OpenSSL: 2-3 ms) and concurrent.futures (3 ms, where a run uses
    # no pool) load for --state runs only, not at every general run's start-up
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:  # the hashing overlaps the imports
        printing = pool.submit(fingerprint, paths, sizes)
        _import_table_libraries()
        by_path = printing.result()
    spools: dict[str, Any] = {}
    for name in names:
        if name == "-" or name in piped:
            spool, spooled = spool_stdin(None if name == "-" else name)
            stack.callback(spool.close)
            prints.append(spooled)
            if name == "-":
                stdin = spool
            else:
                spools[_key(name)] = Span(0, spooled.size, b"", spool)
        else:
            prints.append(by_path[os.path.abspath(name)])
    read = [_read_part(request, name, p) for name, p in zip(names, prints, strict=True)]
    identity = _identity(request, read)
    last = (document or {}).get("last_run") or {}
    retry = last.get("identity") == identity
    base = before if retry else after
    # A retry by --run-id reads what the last run read, not what was appended since.
    until = _known(after) if retry and request.run_id is not None else {}
    spans, consumed = _spans(request, names, prints, read, base, until)
    commit = Commit(real + RECORD_SUFFIX)
    return Resume(path, real, commit, document,
                  base or {"rows": 0, "plans": None, "inputs": []},
                  identity, request.run_id, prints, spans | spools, stdin, consumed)


def _read_part(request: Request, name: str, fingerprinted: Print) -> Print:
    """The input as far as this run may read it: a growing log's bytes up to the end of
    its last line (the line being written waits for the next run)."""
    if not (request.growing and name != "-" and os.path.isfile(name)
            and _continuable(request, name)):
        return fingerprinted
    size, sha256 = fingerprinted.whole_lines
    if _open_record(request, name, fingerprinted):
        size, sha256 = fingerprinted.whole_records
    return dataclasses.replace(fingerprinted, size=size, sha256=sha256, ends_line=True)


# A tail longer than this is no record being written but quotes gone wrong: the reader
# names them.
_OPEN_RECORD_LIMIT = 4 << 20


def _open_record(request: Request, name: str, fingerprinted: Print) -> bool:
    """Whether a growing CSV or TSV log ends in a record its writer is still writing:
    after its last line end outside quotes, one record whose quoted field holds a line end
    and is not closed yet (the quote would close it as RFC 4180 allows), or is closed but
    has no line end after it yet. Its lines wait with it; a quote that is wrong anyway is
    left to the reader's error."""
    start = fingerprinted.whole_records[0]
    fmt = _format_of(request, name) or "csv"
    if (fingerprinted.whole_lines[0] == start or fmt == "jsonl"
            or fingerprinted.size - start > _OPEN_RECORD_LIMIT):
        return False
    options = request.csv_read(fmt)
    encoding = options.encoding or "utf-8"
    try:
        if '"\n'.encode(encoding) != b'"\n':
            return False  # (the quote parity is counted in ASCII bytes)
        with open(name, "rb") as stream:
            stream.seek(start)
            tail = stream.read(fingerprinted.size - start).decode(encoding, "replace")
    except (OSError, LookupError):
        return False
    from cumtool.formats.csv import dialect

    return (dialect.records(tail + dialect.QUOTE, options.delimiter) is not None
            or dialect.records(tail, options.delimiter) is not None)


def _refuse_a_data_file(request: Request, path: str, real: str) -> None:
    """--state naming an input or the output (a slip for `--state data.csv.state`): the
    state's error for a file it cannot use says to remove it, which would be the data."""
    from cumtool import inputs, remote

    given = [a for a in (request.inputs or (request.input,))
             if a != "-" and not remote.is_url(a) and (os.path.exists(a) or inputs.is_glob(a))]
    files = [f.path for f in inputs.expand(tuple(given))]  # globs and folders: their files
    for role, named in (("an input", files), ("the output", [request.output])):
        for name in named:
            if name not in (None, "-") and os.path.realpath(str(name)) == real:
                raise UsageError(f"{option('state')} {path} is {role}: give the state a "
                                 f"file of its own (e.g. {path}.state)")


def span_of(resume: Resume | None, name: str) -> Span | None:
    """How the input `name` is read in this run (None: as usual)."""
    return None if resume is None else resume.spans.get(_key(name))


def _key(name: str) -> str:
    from cumtool import remote

    return name if remote.is_url(name) else os.path.abspath(name)


def _import_table_libraries() -> None:
    """What every --state run needs next, loaded while the inputs are hashed."""
    import polars  # noqa: F401
    import pyarrow  # noqa: F401


def _known(snapshot: dict[str, Any] | None) -> dict[str, tuple[int, str]]:
    return {r["path"]: (r["size"], r["sha256"]) for r in (snapshot or {}).get("inputs", [])}


def _identity(request: Request, prints: list[Print]) -> str:
    """The run's identity: its options and each input's fingerprint, or --run-id."""
    defaults = {f.name: f.default for f in dataclasses.fields(Request)}
    options = {k: v for k, v in dataclasses.asdict(request).items()
               if k not in _NOT_IN_IDENTITY and k != "params"
               and (k in _FIELDS_OF_VERSION_2 or v != defaults.get(k))}
    options.update(_op_options(request))
    options["input"] = os.path.abspath(request.input) if request.input != "-" else "-"
    options["inputs"] = [os.path.abspath(i) if i != "-" else "-" for i in request.inputs]
    if request.output not in (None, "-") and not str(request.output).endswith(("/", os.sep)):
        options["output"] = os.path.abspath(str(request.output))
    what: dict[str, Any] = {"options": options}
    if request.run_id is not None:
        what["run_id"] = request.run_id
    else:
        what["inputs"] = [[p.path, p.size, p.sha256] for p in prints]
    import hashlib

    text = json.dumps(what, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _op_options(request: Request) -> dict[str, Any]:
    """The ops' options in the identity as they were when they were Request's fields
    (every one, at its default where not given), so that a run keeps its identity; an
    option added since counts only where given."""
    from cumtool.ops import KEYWORDS

    options = {}
    for name, declared in KEYWORDS.items():
        value = request.params.get(name, declared.default)
        if name != "indices" and (name in _OP_OPTIONS_OF_VERSION_2 or declared.given(value)):
            options[name] = value
    return options


def _spans(request: Request, names: list[str], prints: list[Print], read: list[Print],
           base: dict[str, Any] | None, until: dict[str, tuple[int, str]]
           ) -> tuple[dict[str, Span], list[dict[str, Any]]]:
    """How each text input is read: up to the size it was fingerprinted at (rows
    appended meanwhile are the next run's), or with --growing to its last line end
    (`read`, of `_read_part`), and past the bytes a run consumed before when the input
    has grown from them; and what each input has given once the run is done."""
    before = {r["path"]: r for r in (base or {}).get("inputs", [])}
    consumed = dict(before)
    spans: dict[str, Span] = {}
    for name, whole, fingerprinted in zip(names, prints, read, strict=True):
        if name != "-" and fingerprinted.path != "-":
            consumed[fingerprinted.path] = _record(fingerprinted.path, fingerprinted.size,
                                                   fingerprinted.sha256,
                                                   fingerprinted.ends_line)
        if name == "-" or not os.path.isfile(name) or not _continuable(request, name):
            continue
        path = fingerprinted.path
        record = before.get(path)
        start = 0
        end = fingerprinted.size
        # Its consumed bytes are still its first ones: read on after them. A line-oriented
        # input's rows are its lines, so one that has not grown gives no new row, whatever
        # the run's name (a log that stayed quiet for an hour is not counted again).
        if record is not None and whole.has_prefix(record["size"], record["sha256"]):
            start = record["size"]
            if path in until and whole.has_prefix(*until[path]):
                end = until[path][0]  # a retry by --run-id: the last run's rows again
                consumed[path] = _record(path, end, until[path][1], True)
            if end > start and not request.growing:
                raise UsageError(
                    f"{name}: it has grown since {option('state', request.state)} consumed "
                    f"its first {start:,} bytes; give {option('growing')} to count only "
                    "the rows appended since (and name each run with "
                    f"{option('run_id')} ID, so that a retry is known as one), or give the "
                    "file whole to a new state file")
            if end > start and not record.get("ends_line", True):
                raise DataError(
                    f"{name}: it has grown since {option('state', request.state)} consumed "
                    f"its first {start:,} bytes, which ended inside a line; the rows "
                    "after them cannot be told from that line's end. Give the file whole "
                    "to a new state file, or restore the state from before that run")
            end = max(end, start)
        elif record is not None and request.growing and whole.size < record["size"]:
            from cumtool.notes import note

            # logrotate's copytruncate, or a log started again: a new input, said so.
            note(request, f"{name}: it is shorter than the {record['size']:,} bytes the "
                          "state consumed before (rotated or truncated?); it is read "
                          "whole, as a new input")
        elif path in until and whole.has_prefix(*until[path]):
            # A retry of a first run by --run-id: the rows that run read, not those since.
            end = until[path][0]
            consumed[path] = _record(path, end, until[path][1], True)
        if end < whole.size and request.growing and path not in until:
            from cumtool.notes import note

            if end < whole.whole_lines[0]:
                note(request, f"{name}: its last record, from line {_line_of(path, end)}, "
                              "has no end yet (a quoted field holds its line ends; it is "
                              "being written); it waits for the next run")
            else:
                note(request, f"{name}: its last line has no line end yet (it is being "
                              "written); it waits for the next run")
        header = b""
        if start and request.header and _format_of(request, name) != "jsonl":
            header = header_record(name, request.comment)
        spans[path] = Span(start, end, header)
    return spans, list(consumed.values())


def _line_of(path: str, at: int) -> int:
    """The line number (from 1) of byte `at`: the line ends (LF, or a lone CR) before it,
    counted a block at a time."""
    line = 1
    last = b""
    with open(path, "rb") as stream:
        while at > 0 and (block := stream.read(min(at, 1 << 20))):
            at -= len(block)
            line += (block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n")
                     - (last == b"\r" and block[:1] == b"\n"))
            last = block[-1:]
    return line


def _record(path: str, size: int, sha256: str, ends_line: bool) -> dict[str, Any]:
    return {"path": path, "size": size, "sha256": sha256, "ends_line": ends_line}


def _format_of(request: Request, name: str) -> str | None:
    from cumtool.formats.registry import kind_from_name

    if request.from_format:
        return request.from_format.lower()
    kind = kind_from_name(name)
    if kind is None or kind.compression is not None:
        return None
    return kind.format


def _continuable(request: Request, name: str) -> bool:
    """Uncompressed CSV, TSV and JSON Lines: rows can be read from a byte offset on."""
    from cumtool.formats.registry import LINE_ORIENTED

    if _format_of(request, name) not in LINE_ORIENTED:
        return False
    try:
        with open(name, "rb") as stream:
            head = stream.read(4)
    except OSError:
        return False
    return not head.startswith((b"\x1f\x8b", b"PAR1", b"\x93NUMPY", b"ARROW1"))


def _snapshot(document: dict[str, Any] | None) -> dict[str, Any] | None:
    if document is None:
        return None
    return {"rows": document["rows"], "plans": document["plans"],
            "inputs": document.get("inputs", [])}


def _before(document: dict[str, Any] | None) -> dict[str, Any] | None:
    last = (document or {}).get("last_run")
    if not last:
        return None
    return last["before"]


def prepare(request: Request, plan: Any, source: Any, resume: Resume | None = None
            ) -> Callable[[], None]:
    """Before a table run: make error positions name the file and row within it, start
    from the saved values (`resume`); return what saves the state and commits the run's
    files after success."""
    plans = plan.op_plans()
    locate = source.locator
    if locate is not None:
        for each in plans:
            each.where = _locator(locate, each)
    if resume is None:
        return lambda: None
    path = resume.path
    made_with = _made_with(request, plans)
    if resume.document is not None:
        widen = _compare(path, resume.document["made_with"], made_with)
        if resume.base["plans"] is not None:
            _load(path, resume.base, plans, widen)
    try:  # a carry this module cannot write is found now, not after the output is written
        for each in plans:
            _plan_record(each)
    except TypeError as error:
        raise UsageError(f"{option('state')} cannot save the state of {request.op}: "
                         f"{error}") from None

    def save() -> None:
        # A run that scanned no new row (a look at the output elsewhere, a quiet log)
        # leaves the state and the last run's identity as they were, so that the retry
        # that follows it is still known as one; its output is put in place all the same.
        if plans[0].rows_done != resume.base["rows"]:
            _save(resume, made_with, plans)
        resume.commit.apply()

    return save


def hints(source: Any, resume: Resume | None) -> list[Any] | None:
    """What each text column holds: as the source judged it, except where it had no
    value to judge from (a day with no rows, or with a column all missing): there, as the
    state saved it (read once, by `begin`), so that a quiet day does not turn yesterday's
    float column into a guessed integer or text one."""
    judged = source.hints
    if judged is None or resume is None or resume.document is None:
        return judged
    import pyarrow as pa

    from cumtool.formats import ColumnHint

    document = resume.document
    path = resume.path
    try:
        made_with = document["made_with"]
        saved = {c["name"]: c for c in document["plans"][0]["columns"]}
    except (KeyError, TypeError, IndexError) as error:
        raise _damaged(path, f"{type(error).__name__}: {error}") from None
    no_rows = source.sampled_rows == 0
    result = []
    for name, hint in zip(source.schema.names, judged, strict=True):
        record = saved.get(name)
        # A day of whole numbers in a column the state carries as float64 is read as
        # float64: the bits of one run over all the days, where the column is judged
        # float (its cells hold the same values either way).
        whole_day = (record is not None and hint.kind == "int" and hint.parse_as is not None
                     and record.get("decimal_scale") is None and _holds_floats(record))
        if not no_rows and hint.kind != "empty" and not whole_day:
            result.append(hint)
        elif record is not None:
            scale = record.get("decimal_scale")
            held = (pa.decimal128(38, scale) if scale is not None
                    else pa.from_numpy_dtype(np.dtype(record["spec"]["source_dtype"])))
            kind = "float" if pa.types.is_floating(held) else "int"
            result.append(ColumnHint(held, True, kind))
        elif not no_rows:
            result.append(hint)
        elif name == made_with.get("reset"):
            result.append(ColumnHint(pa.int64(), False, "int"))
        else:
            result.append(ColumnHint(None, False, "text"))
    return result


def _holds_floats(record: dict[str, Any]) -> bool:
    try:
        return np.dtype(record["spec"]["source_dtype"]).kind == "f"
    except (KeyError, TypeError):
        return False


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
        # Given only (a state saved before --period existed compares as it was).
        **({"period": request.period_of().shown, "time": first.names[first.time]}
           if request.period is not None else {}),
    }


def _dtype(name: str) -> np.dtype:
    from cumtool.kernels import parse_dtype

    return parse_dtype(name)


def _spec_record(spec: ScanSpec) -> dict[str, Any]:
    record: dict[str, Any] = {}
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)
              if f.name not in ("kernel", "params")}  # the op's code; its parameters:
    for name, value in {**fields, **dict(spec.params)}.items():  # beside the fields
        if isinstance(value, np.generic):
            value = value.item()
        if not (value is None or isinstance(value, bool | int | float | str)):
            value = str(value)  # a dtype, or an option an op adds
        record[name] = value
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


_GIVEN_ONLY = ("period", "time")


def _compare(path: str, saved: dict[str, Any], current: dict[str, Any]) -> bool:
    """Refuse the first difference; whether this run widens the state's integers to
    --dtype float64 (allowed where the state was made with no --dtype)."""
    widen = False
    for key in _GIVEN_ONLY:  # --period and --time: in a state made with them only
        if saved.get(key) != current.get(key):
            raise _refuse(path, key, saved.get(key), current.get(key))
    for key, value in current.items():
        if key in _GIVEN_ONLY:
            continue
        if key not in saved:
            raise _damaged(path, f"it has no {key!r}")
        if saved[key] != value:
            if key == "dtype" and saved[key] is None and value == "float64":
                widen = True
                continue
            raise _refuse(path, key, saved[key], value)
    return widen


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
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise _damaged(path, f"not JSON: {error}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise _damaged(path, f"no \"format\": \"{FORMAT}\"")
    if document.get("version") not in (1, VERSION):
        raise _damaged(path, f"version {document.get('version')!r}, this cumtool reads "
                             f"versions 1 and {VERSION}")
    try:
        _check_document(path, document)
    except _DECODING as error:  # a field of another shape than the checks name
        raise _damaged(path, f"{type(error).__name__}: {error}") from None
    return document


# What a field of the wrong shape or size raises as it is read back.
_DECODING = (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError)


def _field(path: str, where: str, why: str) -> DataError:
    return DataError(f"{path}: field {where} {why}; the state file contradicts itself "
                     f"(edited by hand, or damaged): remove it to start afresh, or give "
                     f"another {option('state')} file")


def _check_document(path: str, document: dict[str, Any]) -> None:
    """Every part of the state agrees with every other: counts, shapes, group keys
    (one line naming the field at fault, never a silent restart)."""
    snapshots = [("", document)]
    last = document.get("last_run")
    if document.get("version", 1) >= 2:
        if not isinstance(last, dict | type(None)):
            raise _field(path, "last_run", "is not an object")
        if last is not None:
            if not isinstance(last.get("identity"), str):
                raise _field(path, "last_run.identity", "is not a text")
            before = last.get("before")
            if not isinstance(before, dict):
                raise _field(path, "last_run.before", "is not an object")
            if before.get("plans") is not None:
                snapshots.append(("last_run.before.", before))
            elif not isinstance(before.get("rows"), int) or before["rows"] != 0:
                raise _field(path, "last_run.before.rows", "is not 0 with no plans")
    for prefix, snapshot in snapshots:
        rows = snapshot.get("rows")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise _field(path, f"{prefix}rows", "is not a count of rows")
        plans = snapshot.get("plans")
        if not isinstance(plans, list) or not plans:
            raise _field(path, f"{prefix}plans", "is not a list of plans")
        for k, plan in enumerate(plans):
            _check_plan(path, f"{prefix}plans[{k}]", plan, rows)
        _check_made_with(path, prefix, document.get("made_with"), plans)
        if not isinstance(snapshot.get("inputs", []), list):
            raise _field(path, f"{prefix}inputs", "is not a list")
        for k, record in enumerate(snapshot.get("inputs", [])):
            where = f"{prefix}inputs[{k}]"
            if not (isinstance(record, dict) and isinstance(record.get("path"), str)
                    and isinstance(record.get("size"), int) and record["size"] >= 0
                    and isinstance(record.get("sha256"), str)
                    and len(record["sha256"]) == 64):
                raise _field(path, where, "is not a path, a size and a SHA-256")


def _check_made_with(path: str, prefix: str, made: Any, plans: list[Any]) -> None:
    """The plans are those of the ops and columns the state says it was made with: each
    op's, in order, each of the columns named (an edited name would carry one column's
    values into another)."""
    if not isinstance(made, dict) or not isinstance(made.get("op"), str):
        return  # said where the run compares them (`_refuse`)
    ops = made["op"].split(",")
    if len(ops) != len(plans):
        raise _field(path, f"{prefix}plans", f"holds {len(plans)} ops, and made_with.op "
                                             f"names {len(ops)}")
    columns = made.get("columns")
    for k, (op, plan) in enumerate(zip(ops, plans, strict=True)):
        if plan.get("op") != op:
            raise _field(path, f"{prefix}plans[{k}].op", f"is not {op!r}, as made_with.op "
                                                          "says")
        if made.get("axis") != "rows" or not isinstance(columns, list):
            continue
        for c, column in enumerate(plan["columns"]):
            name = column.get("name") if isinstance(column, dict) else None
            if name not in columns:
                raise _field(path, f"{prefix}plans[{k}].columns[{c}].name",
                             "is not one of made_with.columns")
            spec = column.get("spec")
            if isinstance(spec, dict) and spec.get("op") != op:
                raise _field(path, f"{prefix}plans[{k}].columns[{c}].spec.op",
                             f"is not {op!r}, as made_with.op says")


def _check_plan(path: str, where: str, plan: Any, rows: int) -> None:
    if not isinstance(plan, dict) or not isinstance(plan.get("columns"), list):
        raise _field(path, f"{where}.columns", "is not a list")
    for c, column in enumerate(plan["columns"]):
        for kind in ("carry", "group_carry"):
            carry = column.get(kind) if isinstance(column, dict) else None
            index = carry.get("index") if isinstance(carry, dict) else None
            values = index.get("values") if isinstance(index, dict) else None
            # A position (--indices) is a row already scanned, or -1: none yet.
            if isinstance(values, list) and any(
                    not isinstance(v, int) or not -1 <= v < rows for v in values):
                raise _field(path, f"{where}.columns[{c}].{kind}.index",
                             f"holds a position outside rows 0 to {rows - 1}")
    groups = plan.get("groups")
    if groups is None:
        return
    count = groups.get("count") if isinstance(groups, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise _field(path, f"{where}.groups.count", "is not a count")
    keys = groups.get("keys")
    if keys is not None:
        try:
            frame = _decode_frame(keys)
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise _field(path, f"{where}.groups.keys", f"cannot be read ({error})") from None
        from cumtool.groups import GROUP_ID

        if frame.height != count:
            raise _field(path, f"{where}.groups.keys",
                         f"holds {frame.height} keys for a count of {count} groups")
        if GROUP_ID not in frame.columns:
            raise _field(path, f"{where}.groups.keys", f"has no {GROUP_ID!r} column")
        ids = np.sort(frame.get_column(GROUP_ID).to_numpy())
        if not np.array_equal(ids, np.arange(count)):
            raise _field(path, f"{where}.groups.keys",
                         f"does not number its groups 0 to {count - 1} once each")
        if frame.drop(GROUP_ID).is_duplicated().any():
            raise _field(path, f"{where}.groups.keys", "repeats a group key")
    elif count:
        raise _field(path, f"{where}.groups.keys", f"is empty for {count} groups")
    for c, column in enumerate(plan["columns"]):
        carry = column.get("group_carry") if isinstance(column, dict) else None
        if not isinstance(carry, dict):
            raise _field(path, f"{where}.columns[{c}].group_carry", "is missing")
        for name, value in carry.items():
            shape = value.get("shape") if isinstance(value, dict) else None
            if isinstance(shape, list) and shape and shape[0] != count:
                raise _field(path, f"{where}.columns[{c}].group_carry.{name}",
                             f"holds {shape[0]} groups, and groups.count is {count}")


def _load(path: str, base: dict[str, Any], plans: list[Any], widen: bool) -> None:
    try:
        saved_plans = base["plans"]
        rows = int(base["rows"])
        if len(saved_plans) != len(plans):
            raise _damaged(path, "another number of ops")
        for plan, saved in zip(plans, saved_plans, strict=True):
            _restore_plan(path, plan, saved, widen)
            plan.rows_done = rows
            plan.rows_before = rows
    except _DECODING as error:
        raise _damaged(path, f"{type(error).__name__}: {error}") from None


_WIDENED = ("source_dtype", "in_dtype", "acc_dtype", "out_dtype", "state_dtype")


def _restore_plan(path: str, plan: Any, saved: dict[str, Any], widen: bool) -> None:
    columns = saved["columns"]
    if len(columns) != len(plan.selected):
        raise _damaged(path, "another number of columns")
    for position, record in zip(plan.selected, columns, strict=True):
        spec = _spec_record(plan.specs[position])
        # A parameter the op has gained since the state was saved: its default then.
        defaults = _parameters(plan.specs[position].op)
        for key, value in spec.items():
            saved_value = record["spec"].get(key, defaults.get(key))
            if saved_value != value:
                if widen and key in _WIDENED:
                    continue
                if key == "source_dtype":
                    held = record["spec"].get(key)
                    hint = ("the inputs must keep their types" if held is None
                            or np.dtype(held).kind not in "iub" or value != "float64"
                            else f"add {option('dtype', 'float64')} to go on in float64 "
                                 "(the saved values convert exactly up to 2**53)")
                    # --decimal holds a column as scaled int64: said as its decimal type.
                    before = record.get("decimal_scale")
                    now = plan.decimal_scale.get(position)
                    raise DataError(
                        f"{option('state', path)} was made when column "
                        f"{plan.label(position)} held "
                        f"{held if before is None else f'decimals of {before} places'}, "
                        f"and it holds {value if now is None else f'decimals of {now} places'}"
                        f" now; {hint}")
                raise _refuse(path, key, saved_value, value)
        if record.get("decimal_scale") != plan.decimal_scale.get(position):
            raise DataError(f"{option('state', path)} was made when column "
                            f"{plan.label(position)} had {record.get('decimal_scale')} decimal "
                            f"places, and it has {plan.decimal_scale.get(position)} now")
        _restore_object(path, plan.carries[position], record["carry"], widen)
        if position in plan.group_carries:
            _restore_object(path, plan.group_carries[position], record["group_carry"],
                            widen)
    if plan.group_keys is not None:
        groups = saved["groups"]
        known = None if groups["keys"] is None else _decode_frame(groups["keys"])
        plan.group_keys.restore(known, int(groups["count"]))


def _parameters(op: str) -> dict[str, Any]:
    from cumtool.ops import REGISTRY

    return dict(REGISTRY[op].parameters)


def _save(resume: Resume, made_with: dict[str, Any], plans: list[Any]) -> None:
    """The state after this run, written beside its target for the commit: the values,
    what each input has given so far, and this run's identity with the values it started
    from (so that a retry starts from them again)."""
    from cumtool.output import open_output

    document = {
        "format": FORMAT,
        "version": VERSION,
        "about": _ABOUT,
        "made_with": made_with,
        "rows": int(plans[0].rows_done),
        "plans": [_plan_record(plan) for plan in plans],
        "inputs": resume.consumed,
        "last_run": {"identity": resume.identity, "run_id": resume.run_id,
                     "before": resume.base},
    }
    text = _pretty(document, 5, "") + "\n"
    with open_output(resume.path, resume.commit) as stream:
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
    """An object's carried fields: not its spec, nor a GroupCarry's spare room."""
    from cumtool.grouped import Room

    return {k: v for k, v in vars(obj).items() if not isinstance(v, ScanSpec | Room)}


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


def _restore_object(path: str, obj: Any, saved: dict[str, Any], widen: bool = False
                    ) -> None:
    fields = _fields(obj)
    if set(fields) != set(saved):
        raise _damaged(path, f"its carried fields {sorted(saved)} are not this version's "
                             f"{sorted(fields)}")
    for name, template in fields.items():
        value = saved[name]
        if isinstance(value, dict) and "object" in value:
            _restore_object(path, template, value["object"], widen)
            continue
        decoded = _decode_value(value)
        if isinstance(template, int) and not isinstance(template, bool) and not (
                isinstance(decoded, int) and not isinstance(decoded, bool)
                and 0 <= decoded < 2**63):  # a carry's positions scanned (offset)
            raise _damaged(path, f"field {name!r} is not a count of positions")
        if widen:
            decoded = _widened(path, name, decoded, template)
        if isinstance(template, np.ndarray | np.generic) and (
                not isinstance(decoded, np.ndarray | np.generic)
                or decoded.dtype != template.dtype):
            raise _damaged(path, f"field {name!r} is not {template.dtype}")
        counts = (np.asarray(decoded)["n"] if isinstance(decoded, np.ndarray | np.generic)
                  and decoded.dtype.names and "n" in decoded.dtype.names else None)
        if counts is not None and (counts < 0).any():
            raise _damaged(path, f"field {name!r} holds a count below 0")
        setattr(obj, name, decoded)


def _widened(path: str, name: str, decoded: Any, template: Any) -> Any:
    """An integer carried value as float64, where this run adds --dtype float64 to a
    state made without: only when every value converts exactly (|v| <= 2**53). A record
    of fields (diff's count, last value and output) converts field by field."""
    names = getattr(getattr(template, "dtype", None), "names", None)
    if (names and isinstance(decoded, np.ndarray | np.generic)
            and decoded.dtype.names == names and decoded.dtype != template.dtype):
        record = np.asarray(decoded)
        widened_record = np.empty(record.shape, dtype=template.dtype)
        for field in names:
            column = record[field]
            wanted = template.dtype[field]
            if wanted.kind == "f" and column.dtype.kind in "iub":
                column = _widened(path, f"{name}.{field}", column, np.empty(0, wanted))
            widened_record[field] = column
        return widened_record if isinstance(decoded, np.ndarray) else widened_record[()]
    if not (isinstance(template, np.ndarray | np.generic) and template.dtype.kind == "f"
            and isinstance(decoded, np.ndarray | np.generic) and decoded.dtype.kind in "iub"):
        return decoded
    values = np.asarray(decoded)
    if values.size and max(abs(int(v)) for v in values.ravel().tolist()) > 2**53:
        raise DataError(f"{option('state', path)}: the carried value {name!r} holds "
                        "integers beyond 2**53, which float64 cannot hold exactly; go on "
                        f"without {option('dtype', 'float64')}")
    widened = values.astype(template.dtype)
    return widened if isinstance(decoded, np.ndarray) else widened[()]


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


# Floats beyond this many in one array (a carry per group of a --by run) are saved as the
# base64 of their little-endian bytes: exact as the hex text, and 20 times faster to write
# and read for 100,000 groups, where hex text was most of --state's cost.
_FLOATS_AS_TEXT = 64


def encode_array(array: np.ndarray, compact: bool = True) -> dict[str, Any]:
    """An array as JSON, exactly: dtype, shape and values (floats in hex, or a long float
    array as base64 bytes when `compact`). A record array (the running statistics' state:
    count, mean, M2 ...) is saved field by field."""
    if array.dtype.names is not None:
        return {"record": [[name, str(array.dtype[name].str)] for name in array.dtype.names],
                "shape": list(array.shape),
                "fields": {name: encode_array(np.ascontiguousarray(array[name]))
                           for name in array.dtype.names}}
    flat = np.ascontiguousarray(array).reshape(-1)
    kind = array.dtype.kind
    values: list[Any]
    if compact and kind in "fc" and flat.size > _FLOATS_AS_TEXT:
        little = flat.astype(flat.dtype.newbyteorder("<"), copy=False)
        return {"dtype": array.dtype.str, "shape": list(array.shape),
                "base64": base64.b64encode(little.tobytes()).decode("ascii")}
    if kind == "f":
        bits = flat.view(f"u{flat.dtype.itemsize}").tolist()
        values = [_float_text(v, b, 2 * flat.dtype.itemsize)
                  for v, b in zip(flat.tolist(), bits, strict=True)]
    elif kind == "c":
        values = [encode_array(flat.real, False)["values"],
                  encode_array(flat.imag, False)["values"]]
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
    if "base64" in record:
        data = base64.b64decode(record["base64"], validate=True)
        little = np.frombuffer(data, dtype.newbyteorder("<"))
        if little.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{little.size} values for a shape of {list(shape)}")
        return little.astype(dtype).reshape(shape)
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
            values = encode_array(column.fill_null(0).to_numpy(zero_copy_only=False),
                                  False)["values"]
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
    """The saved group keys as the polars DataFrame they were. Built from numpy arrays
    and polars Series, not pyarrow.array over lists, which imports pandas (0.2 s)."""
    import polars as pl

    series = []
    for record in columns:
        name = record["name"]
        if "arrow_ipc_base64" in record:
            import pyarrow as pa

            data = base64.b64decode(record["arrow_ipc_base64"])
            array = pa.ipc.open_stream(data).read_all().column(0).combine_chunks()
            series.append(pl.Series(name, array))
            continue
        kind = record["type"]
        values = record["values"]
        if kind in _FLOAT_KEYS:
            missing = np.flatnonzero([v is None for v in values])
            floats = _floats([v if v is not None else "0x0.0p+0" for v in values],
                             np.dtype(_FLOAT_KEYS[kind]))
            column = pl.Series(name, floats)  # the exact bits, NaN payloads included
            series.append(column.scatter(missing, None) if missing.size else column)
        elif kind in ("large_string", "string", "utf8", "large_utf8"):
            series.append(pl.Series(name, values, dtype=pl.String))
        elif kind in _INTEGER_KEYS:
            series.append(pl.Series(name, values, dtype=getattr(pl, _INTEGER_KEYS[kind])))
        else:
            raise ValueError(f"a key column of type {kind!r}")
    return pl.DataFrame(series)


# Arrow's names of the key types saved as JSON values -> numpy's and polars' dtypes.
_FLOAT_KEYS = {"halffloat": "f2", "float": "f4", "double": "f8"}
_INTEGER_KEYS = {"int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64",
                 "uint8": "UInt8", "uint16": "UInt16", "uint32": "UInt32",
                 "uint64": "UInt64", "bool": "Boolean"}
