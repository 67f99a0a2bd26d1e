"""Every general option, declared once (an op's own options are declared in its module,
cumtool/ops): its flag, the Request field it sets (and the `cumtool.scan` keyword where
the API has one), its help, how its text is read and checked, and which paths honour it.

From these the command line makes its options and maps them to a Request (cli.py),
`--help` and docs/options.md follow, the small path hands over what it does not honour
(small.options_fit), the Dask engine (engines.py) and the path of CSVs too wide for
whole-width batches (widerun.refuse_unsupported) refuse by name what they do not, and
an input whose format does not honour an option refuses it by name (`refuse_unread`:
--na on Parquet, --by on an array). A new option is one entry here, its Request field, and
what it does; tests/test_option_paths.py fails until each field is declared with every
path and the inputs it is for.

Plain data, importable without numpy: the command line reads it at start-up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Literal

from cumtool.choices import (
    AXIS_NAMES,
    DTYPE_CHOICES,
    DTYPE_NAMES,
    OVERFLOW_CHOICES,
    TORCH_ALIASES,
    check_axis,
)
from cumtool.errors import UsageError, option
from cumtool.formats.registry import (
    DELIMITED,
    INPUT_FORMATS,
    INPUT_GROUPS,
    OUTPUT_FORMATS,
    check_format_name,
    input_group,
)
from cumtool.ops import OPTIONS
from cumtool.ops.decl import Option

ENGINE_NAMES = ("local", "dask")  # --engine; engines.ENGINES checks each

# What the output text options (--na-rep, --out-delimiter, ...) are written in.
TEXT_OUTPUTS = DELIMITED


def _selection(flag: str) -> Any:
    """A column selection's text parsed (cumtool.columns), so a bad one is a usage error
    before any file is opened."""

    def parse(text: str) -> Any:
        from cumtool.columns import parse as parse_selection

        return parse_selection(text, flag)

    return parse


def _table_rows(value: str | int) -> int | None:
    text = str(value).strip().lower()
    if text in ("all", "0"):
        return None
    if not text.isdigit():
        raise UsageError(f"{value!r} is not a number of rows or 'all'")
    return int(text)


def _size(text: str) -> int | None:
    from cumtool.formats.records import size_option  # numpy: only when a size is given

    return size_option(text, "--max-record-size")


def _along_rows(axis: Any) -> bool:
    key = str(axis).strip().lower()
    return AXIS_NAMES.get(key) == 0 or key in ("0", "-2")


# In --help's order. `small`: the small and compiled CSV paths; `dask`: --engine dask
# (ops/decl.Honours says what each answer means).
GENERAL: tuple[Option, ...] = (
    # Checked by Click's type, cli._PARAM_TYPES (its metavar lists the words).
    Option("--axis", aliases=("-a", "--dim"), type=str, default="rows", show_default=True,
           parse=check_axis, given_if=lambda axis: not _along_rows(axis), api=True,
           api_default=0,
           api_help="0, 'rows' or 'index': down each column; 1 or 'columns': across each "
                    "row; or any integer axis of an N-d array.",
           help="rows (index, 0): down each column; columns (1): across each row; or any "
                "integer axis of an N-d .npy array.",
           inputs="all", small="hands over", dask="refuses", wide="refuses"),
    # Sixteen names: listed in the help text, as a metavar they would not fit a line.
    # Checked by Click's type, cli._PARAM_TYPES (which completes torch's names too).
    Option("--dtype", aliases=("-t",), type=str, metavar="DTYPE", choices=DTYPE_CHOICES,
           api=True,
           help=f"Cast the input to this dtype first, then scan: {', '.join(DTYPE_NAMES)}; "
                f"or torch's {', '.join(TORCH_ALIASES)}, torch.float32, ...",
           api_help="Cast the input to this dtype first, then scan: a name ('float32', "
                    "'torch.float32') or what numpy takes (np.float32, float).",
           inputs="all", small="honours", dask="honours", wide="honours"),
    Option("--output", aliases=("-o",), type=str, metavar="PATH", complete="path",
           help="Write here (format from the extension); '-' or none: standard output; "
                "DIR/ (ending in /): one output per input, under the same relative names.",
           inputs="all", small="honours", dask="honours", wide="honours"),
    Option("--state", type=str, metavar="FILE", complete="path", inputs="tables",
           help="Tables: continue from the running values saved in FILE (if it exists), "
                "and save them there when the run succeeds (for cron: day by day gives the "
                "bits of one run; a retried or overlapping run never counts a row twice).",
           identity=False, small="hands over", dask="refuses", wide="refuses"),
    Option("--run-id", type=str, metavar="ID",
           help="With --state: name this run (e.g. $(date +%F)); a run with the last run's "
                "ID and options (-o too) is a retry of it, and writes its rows again; "
                "another -o only looks on, writing the rows since (default ID: the options "
                "and the inputs' bytes).",
           inputs="all", identity=False, small="not its output", dask="honours", wide="refuses"),
    Option("--wait", type=float, least=0, metavar="SECONDS",
           help="With --state: wait up to SECONDS for another run holding the state to "
                "finish (default: fail at once with status 75).",
           inputs="all", identity=False, small="not its output", dask="honours", wide="refuses"),
    Option("--growing", default=False,
           help="With --state: the inputs are logs being appended to; scan only the rows "
                "added since the last run (a last line without its line end waits for the "
                "next run). Name each run with --run-id.",
           inputs="lines", identity=False, small="not its output", dask="honours", wide="refuses"),
    Option("--filename-column", type=str, metavar="NAME", inputs="tables",
           help="Tables: add a first column NAME holding each row's input path as given "
                "(--by NAME: a running total per file).",
           small="hands over", dask="refuses", wide="refuses"),
    Option("--from", keyword="from_format", type=str, choices=INPUT_FORMATS,
           parse=lambda name: check_format_name(name, INPUT_FORMATS, "--from"),
           help="Input format (default: from the extension, else the first bytes).",
           inputs="all", small="honours", dask="honours", wide="honours"),
    Option("--to", keyword="to_format", type=str, choices=OUTPUT_FORMATS,
           parse=lambda name: check_format_name(name, OUTPUT_FORMATS, "--to"),
           help="Output format (default: from -o, else a table on a terminal, else the "
                "input's format).",
           inputs="all", small="honours", dask="honours", wide="honours"),
    Option("--sheet", type=str, metavar="NAME|N",
           help="Spreadsheets (.xlsx, .xls, .ods): the sheet to read, by name or number "
                "from 1 (default: the first).",
           inputs="spreadsheets", small="hands over", dask="honours", wide="not its output"),
    Option("--columns", aliases=("-c",), type=str, multiple=True, default=(),
           parse=_selection("-c"), complete="columns", metavar="COLS", api=True,
           api_default=None, inputs="tables",
           api_help="Tables: the columns to scan, a name or position or a list of them "
                    "(None: every numeric column); the others pass through.",
           help="Columns to scan (default: every numeric column); the others pass through. "
                "Names, 1-based positions, ranges (2-4, a-c), \"quoted, names\", name[k] for "
                "a repeated name, !COLS for all but COLS; repeat to add.",
           small="honours", dask="honours", wide="honours"),
    Option("--exclude", type=str, multiple=True, default=(), parse=_selection("--exclude"),
           metavar="COLS", complete="columns", api=True, api_default=None, inputs="tables",
           api_help="Tables: columns not to scan (of the default ones or `columns`).",
           help="Do not scan these columns (scan the rest of the default or -c columns); "
                "repeat to add.",
           small="honours", dask="honours", wide="honours"),
    Option("--only-scanned", default=False, inputs="tables",
           help="Write only the scanned columns (with --keep: each and its result), e.g. to "
                "write .npy from a CSV with text columns.",
           small="honours", dask="honours", wide="honours"),
    Option("--delimiter", aliases=("-d",), type=str,
           help="The input's field delimiter (default ',' or tab for .tsv; '\\t' for tab).",
           inputs="text", small="honours", dask="honours", wide="honours"),
    Option("--out-delimiter", type=str, metavar="C",
           help="The output's field delimiter (default: ',' for csv, tab for tsv; ';' for "
                "csv with --decimal-comma): one ASCII character that cannot be part of a "
                "number.",
           inputs="all", outputs=TEXT_OUTPUTS,
           small="honours", dask="honours", wide="honours"),
    Option("--na", type=str, metavar="LIST", parse=lambda text: tuple(text.split(",")),
           help="Comma-separated cell texts that mean a missing cell, replacing the default "
                "NA,N/A,n/a,NULL,null,None,<NA>,#N/A (an empty cell is always missing).",
           inputs="text", small="honours", dask="honours", wide="honours"),
    Option("--na-rep", type=str, default="", metavar="TEXT",
           help="How a missing cell is written in csv/tsv output (default: empty).",
           inputs="all", outputs=TEXT_OUTPUTS,
           small="honours", dask="honours", wide="honours"),
    Option("--encoding", type=str, metavar="ENC",
           help="CSV/TSV text encoding (latin-1, cp1252, ...) of the input, and of csv/tsv "
                "output (default: UTF-8).",
           inputs="text", elsewhere="for the output's encoding: --out-encoding",
           small="hands over", dask="honours", wide="honours"),
    Option("--decimal-comma", default=False,
           help="Numbers are written 1,5 (European): read them so, and write results so.",
           inputs="text", elsewhere="for numbers written 1,5: --out-decimal comma",
           small="hands over", dask="honours", wide="honours"),
    Option("--out-encoding", type=str, metavar="ENC",
           help="The text encoding of csv/tsv output (default: --encoding's, so unscanned "
                "cells come out byte for byte).",
           inputs="all", outputs=TEXT_OUTPUTS,
           small="hands over", dask="honours", wide="honours"),
    Option("--out-decimal", type=str, choices=("point", "comma"),
           help="The decimal mark of numbers in csv/tsv output (default: comma with "
                "--decimal-comma, else point).",
           inputs="all", outputs=TEXT_OUTPUTS,
           small="hands over", dask="honours", wide="honours"),
    Option("--no-header", keyword="header", default=True, negates=True,
           help="CSV has no header row: columns are named 1, 2, ... and the output has no "
                "header either.",
           inputs="all", small="honours", dask="honours", wide="honours"),
    # Comment lines and short rows: the streaming path's reader alone knows them
    # (formats/records.py, formats/csv/csv.py).
    Option("--comment", type=str, metavar="CHAR",
           help="CSV/TSV: skip lines that start with CHAR (e.g. '#'), as blank lines are; "
                "CHAR elsewhere is data.",
           inputs="text", small="hands over", dask="honours", wide="honours"),
    Option("--ragged", default=False,
           help="CSV/TSV: rows shorter than the header end in missing cells (a longer row "
                "is still an error).",
           inputs="text", small="hands over", dask="honours", wide="honours"),
    Option("--overflow", type=str, choices=OVERFLOW_CHOICES, default="error",
           show_default=True, api=True,
           help="Integer overflow: stop with an error, or wrap around as torch.",
           inputs="all", small="honours", dask="honours", wide="honours"),
    Option("--skipna", default=False, api=True,
           help="Treat NaN like a missing cell: skipped by the scan, kept in place.",
           inputs="all", small="honours", dask="honours", wide="honours"),
    Option("--by", type=str, multiple=True, default=(), parse=_selection("--by"),
           metavar="COLS", complete="columns", api=True, api_default=None, inputs="tables",
           api_help="A separate running scan for each distinct value (or combination) of "
                    "these key columns of a table (a name or a list), or of an array's keys, "
                    "one per position along axis 0; rows keep their order.",
           help="Tables: a separate running scan for each distinct value (or combination) of "
                "these key columns; rows keep their order.",
           small="honours", dask="refuses", wide="refuses"),
    Option("--reset", type=str, parse=_selection("--reset"), metavar="COL",
           complete="columns", api=True, inputs="tables",
           help="Tables: start the scan afresh at every row where COL is true or non-zero.",
           api_help="Start the scan afresh at every row where this column of a table is true "
                    "or non-zero; for an array, flags, one per position along axis 0.",
           small="hands over", dask="refuses", wide="refuses"),
    Option("--period", type=str, choices=("day", "week", "month", "quarter", "year"),
           api=True, inputs="tables",
           api_help="Tables: the calendar period of `time`'s date is part of each row's "
                    "group, as `by` columns are: a scan per 'day', ISO 'week' (Monday "
                    "first), 'month', 'quarter' or 'year' (month-to-date, ...).",
           help="Tables: the calendar period of --time's date is part of each row's group, "
                "as --by columns are: a scan per day, ISO week (Monday first), month, "
                "quarter or year (month-to-date, ...).",
           small="honours", dask="refuses", wide="refuses"),
    Option("--time", type=str, parse=_selection("--time"), metavar="COL",
           complete="columns", api=True,
           api_help="With `period`: the column of dates or times (ISO text such as "
                    "2024-03-01 or 2024-03-01T09:30, or a date or timestamp column); not "
                    "scanned.",
           help="With --period: the column of dates or times (ISO text such as 2024-03-01 or "
                "2024-03-01T09:30, or a date or timestamp column); not scanned.",
           inputs="all", small="honours", dask="refuses", wide="refuses"),
    Option("--year-start", type=str, metavar="MM-DD", api=True,
           api_help="With `period` 'year' or 'quarter': the day years start (fiscal "
                    "'04-01', water years '10-01'); None: '01-01'.",
           help="With --period year or quarter: the day years start (fiscal 04-01, water "
                "years 10-01); quarters start every 3 months from it [default: 01-01].",
           inputs="all", small="honours", dask="refuses", wide="refuses"),
    Option("--share", default=False, api=True, inputs="tables",
           help="cumsum, cumcount, cumnunique: each running value divided by its group's "
                "final value, as float64 (Pareto shares); reads the input twice.",
           small="honours", dask="refuses", wide="refuses"),
    Option("--reverse", default=False, api=True,
           help="Scan from the last element to the first; output keeps input order.",
           inputs="all", small="hands over", dask="refuses", wide="refuses"),
    Option("--exclusive", default=False, api=True,
           help="out[i] covers the elements before i only; out[0] is the identity.",
           inputs="all", small="honours", dask="honours", wide="honours"),
    Option("--keep", default=False, api=True, inputs="tables",
           help="Tables: keep the input columns and append each result as <name>_<op>.",
           small="honours", dask="honours", wide="refuses"),
    Option("--decimal", default=False,
           help="CSV: read float columns as exact decimals with the places their cells have "
                "(money): 19.99 + 0.01 is 20.00.",
           inputs="text", small="hands over", dask="honours", wide="honours"),
    # -q sets two fields: no notes, and (with `progress`, which the CLI also gives a
    # terminal) no progress bar.
    # Its default is Request's, where the API shows no notes; the command line's is on
    # unless -q (Option.from_cli).
    Option("--quiet", aliases=("-q",), keyword="notes", default=False, negates=True,
           help="No progress bar (it shows only on a terminal, for long runs) and no notes "
                "(`note: ...` lines on stderr).",
           inputs="all", identity=False, small="honours", dask="honours", wide="honours"),
    Option("--threads", type=int, least=1, metavar="N",
           help="Threads to run on (never changes results) [default: $CUMTOOL_THREADS, else "
                "the cores this process may use: its CPU affinity and cgroup quota].",
           inputs="all", identity=False, small="honours", dask="honours", wide="honours"),
    # Batches asked for are the streaming path's own (and tests').
    # (at most a 32-bit count: more rows than a batch can hold are no batch)
    Option("--batch-rows", type=int, least=1, most=2**31 - 1, metavar="N",
           help="Rows per batch (default: sized for speed and memory).",
           inputs="all", identity=False, small="hands over", dask="honours", wide="honours"),
    Option("--rows", aliases=("-n",), keyword="table_rows", type=str, default=20,
           parse=_table_rows, metavar="N", show_default=True,
           help="Table view: rows shown, the first and last N/2 of them; 'all' or 0: every "
                "row.",
           inputs="all", identity=False, small="not its output", dask="honours",
           wide="not its output"),
    Option("--precision", type=int, least=1, most=17, default=6, metavar="N",
           show_default=True,
           help="Table view: digits of floats: a column's own decimal places where they are "
                "at most N, else N significant digits (files and pipes keep every digit).",
           inputs="all", identity=False, small="not its output", dask="honours",
           wide="not its output"),
    Option("--x", type=str, parse=_selection("--x"), metavar="COL", complete="columns",
           help="Chart: the column along the horizontal axis (numbers, or dates as "
                "2024-03-01, 2024/03/01, 01-Mar-24, 'Mar 1, 2024', 03/25/2024; not scanned) "
                "[default: the row number, from 1].",
           inputs="all", small="not its output", dask="honours", wide="not its output"),
    Option("--x-format", type=str, metavar="FMT",
           help="Chart: the layout of the --x dates, as strftime writes it (%d/%m/%Y), where "
                "cumtool cannot tell it, as for 01/02/2024.",
           inputs="all", identity=False, small="not its output", dask="honours",
           wide="not its output"),
    Option("--width", type=int, least=1, metavar="N",
           help="Chart: its width, in characters on the terminal or in pixels in an image "
                "[default: the terminal's, else 80; 1000 pixels].",
           inputs="all", small="not its output", dask="honours", wide="not its output"),
    Option("--height", type=int, least=1, metavar="N",
           help="Chart: its height, in lines on the terminal or in pixels in an image "
                "[default: the terminal's less one line, for the prompt, else 24; 500 "
                "pixels].",
           inputs="all", small="not its output", dask="honours", wide="not its output"),
    Option("--max-record-size", type=str, parse=_size, metavar="SIZE",
           help="Longest CSV/TSV record (row) read, e.g. 64M; a longer one is an error, so "
                "memory stays bounded [default: 32M].",
           inputs="lines", small="hands over", dask="honours", wide="honours"),
    # Types judged from the first row: the streaming path's.
    Option("--line-buffered", default=False,
           help="For `tail -f` pipelines: write each row as soon as it is read; column types "
                "are judged from the first data row (--dtype fixes them). Standard input "
                "from a terminal is read so.",
           inputs="text", small="hands over", dask="honours", wide="honours"),
    Option("--engine", type=str, choices=ENGINE_NAMES, default="local", show_default=True,
           help="Where the scan runs: this process, or the workers of a Dask cluster "
                "(tables; the same bits; pip install 'cumtool[dask]').",
           inputs="all", identity=False, small="not its output", dask="honours",
           wide="not its output"),
    Option("--scheduler", type=str, metavar="ADDRESS",
           help="--engine dask: the scheduler to use (default: $DASK_SCHEDULER_ADDRESS, else "
                "a local cluster, a worker per core).",
           inputs="all", identity=False, small="not its output", dask="honours",
           wide="not its output"),
    # Request fields no flag sets: the front ends fill them (cli._run, api.scan).
    Option("", keyword="op", type=str, help="The op, or several in one pass (cumsum,cummax).",
           inputs="all", small="honours", dask="honours", wide="honours"),
    Option("", keyword="input", type=str, default="-",
           help="The input: a path, a URL or '-' (standard input).",
           inputs="all", small="honours", dask="honours", wide="honours"),
    Option("", keyword="inputs", type=tuple, default=(),
           help="Every INPUT argument, when there are several or one is not a plain file.",
           inputs="all", small="honours", dask="honours", wide="refuses"),
    Option("", keyword="params", type=dict,
           help="The ops' own options by keyword (each declared by its op, with its paths).",
           inputs="all", small="honours", dask="honours", wide="honours"),
    # The field cummax's and cummin's --indices sets, with the paths they declare.
    dataclasses.replace(OPTIONS["--indices"], flag="", keyword="indices", dask="honours",
                        wide="honours", inputs="all", api=True,
                        api_help="cummax, cummin: also return the position each value came "
                                 "from: (values, indices) for an array, a <name>_index "
                                 "column for a table."),
    Option("", keyword="stdout_is_terminal", help="A table on a terminal, not CSV.",
           default=False, inputs="all", identity=False, small="honours", dask="honours",
           wide="honours"),
    Option("", keyword="progress", help="A progress bar on stderr (the CLI: stderr is a tty).",
           default=False, inputs="all", identity=False, small="honours", dask="honours",
           wide="honours"),
    Option("", keyword="widen", type=tuple, default=(),
           help="Input columns read as float64: a rerun's, after a decimal came late in an "
                "integer column (engine.run).",
           inputs="text", small="hands over", dask="honours", wide="honours"),
)

FLAGS = tuple(declared for declared in GENERAL if declared.flag)
BY_FIELD = {declared.name: declared for declared in GENERAL}
# cumtool.scan's keywords that are general options (the ops' own are cumtool.ops.KEYWORDS),
# and their defaults there: api.scan's signature and help are made from these.
API_KEYWORDS = tuple(declared.name for declared in GENERAL if declared.api)
API_DEFAULTS = {name: BY_FIELD[name].keyword_default for name in API_KEYWORDS}
# The options that work on tables only (arrays refuse them by name, as `refuse_unread`).
TABLE_ONLY = tuple(declared for declared in GENERAL if declared.tables_only)


def named(declared: Option) -> str:
    """The option as a message names it: the flag, or the API keyword where the CLI spells
    it `--keyword` (errors.option words it for each front end)."""
    if declared.flag == "--" + declared.name.replace("_", "-"):
        return option(declared.name)
    return declared.flag or declared.name


def honoured(declared: Option, path: Literal["small", "dask", "wide"]) -> bool:
    """Whether `path` honours the option when given (Option.small, Option.dask,
    Option.wide)."""
    how = getattr(declared, path)
    if how is None:
        # An op's option is a parameter of its kernel, which every path runs; any other
        # that does not say is not honoured (and fails tests/test_option_paths.py).
        return OPTIONS.get(declared.flag) is declared
    return how in ("honours", "not its output")


def inputs_of(declared: Option) -> tuple[str, ...]:
    """The input formats that honour the option when given (Option.inputs)."""
    if declared.inputs is None:
        # An op's option is a parameter of its kernel, which reads every input; any other
        # that does not say is honoured by none (and fails tests/test_option_paths.py).
        return INPUT_FORMATS if OPTIONS.get(declared.flag) is declared else ()
    if isinstance(declared.inputs, str):
        return INPUT_GROUPS[declared.inputs][1]
    return declared.inputs


def inputs_said(declared: Option) -> str:
    """Which inputs the option is for, as its refusal says it: `CSV and TSV input`."""
    if isinstance(declared.inputs, str):
        return INPUT_GROUPS[declared.inputs][0]
    return input_group(inputs_of(declared)) if inputs_of(declared) else "no input"


def refuse_unwritten(given: Iterable[Option], fmt: str) -> None:
    """The one refusal of an option given for an output whose format does not honour it
    (Option.outputs), by name: `--na-rep is for csv and tsv output; this run writes
    parquet`. The terminal's table and chart are views of the rows, not an output in a
    format: the command tried there before it goes into a pipe or a cron job keeps them."""
    from cumtool.formats.registry import format_named

    if format_named(fmt).kind == "view":
        return
    for declared in given:
        if declared.outputs is not None and fmt not in declared.outputs:
            raise UsageError(f"{named(declared)} is for {' and '.join(declared.outputs)} "
                             f"output; this run writes {fmt}")


def refuse_unread(given: Iterable[Option], fmt: str, name: str) -> None:
    """The one refusal of an option given for an input whose format does not honour it
    (Option.inputs), by name, before the input is read: `--na is for CSV and TSV input;
    a.npy is read as npy`. `given`: the options the run sets (Request.given); `name`:
    the input as messages name it."""
    for declared in given:
        if fmt not in inputs_of(declared):
            instead = f" ({declared.elsewhere})" if declared.elsewhere else ""
            raise UsageError(f"{named(declared)} is for {inputs_said(declared)}; {name} is "
                             f"read as {fmt}{instead}")
