"""One run's options as plain, frozen data, checked before any file is opened.

The CLI builds a Request from its flags and `engine.run` carries it out; readers and
writers take only the parts they need (`csv_read`, `csv_write`). `check` makes every
check that needs no input data, so a bad option or combination is a usage error before
the input is opened: `cumtool cumsum missing.csv --to bogus` complains about --to.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal, TypeVar

from cumtool.columns import Selection
from cumtool.errors import UsageError, option
from cumtool.formats import (
    DEFAULT_NA,
    CsvReadOptions,
    CsvWriteOptions,
    FileKind,
    delimiter_option,
    encoding_option,
)
from cumtool.formats.registry import (
    BINARY_OUTPUTS,
    CHART_IMAGES,
    DELIMITED,
    INPUT_FORMATS,
    OUTPUT_FORMATS,
    check_format_name,
    format_named,
    kind_from_name,
)
from cumtool.ops.decl import Option
from cumtool.options import BY_FIELD, GENERAL, refuse_unread
from cumtool.remote import is_url

Overflow = Literal["error", "wrap"]


def said(path: str) -> str:
    """An input as messages name it: standard input, not '-'."""
    return "standard input" if path == "-" else path


# The ops --share is for: their final values are a total and counts.
SHARE_OPS = ("cumsum", "cumcount", "cumnunique")

def check_share(ops: list[str], share: bool, **given: bool) -> None:
    """--share: for cumsum, cumcount and cumnunique, in a run that reads its input twice
    and writes once (SEMANTICS.md, "Periods and shares"); `given`: whether each option
    that cannot go with it is (state, line_buffered, reset, growing). The command line's
    check (Request.check) and cumtool.scan's."""
    if not share:
        return
    other = [op for op in ops if op not in SHARE_OPS]
    if other:
        raise UsageError(f"{option('share')} divides running totals and counts by their "
                         f"final values: it is for {', '.join(SHARE_OPS)}, not {other[0]}")
    for flag, on in given.items():
        if on:
            raise UsageError(f"{option('share')} reads the whole input before it "
                             f"writes, and {option(flag)} "
                             + ("writes each row as it is read" if flag == "line_buffered"
                                else "starts runs whose final values it does not know"
                                if flag == "reset" else "carries runs on across inputs")
                             + "; leave one out")


# The chart's size: least (width, height) and most, in characters and in pixels.
CHART_CELLS = ((30, 8), 1000)
CHART_PIXELS = ((100, 100), 10000)


# A field's default is its option's (cumtool/options.py), `name: type = DECLARED`: the type
# stays here, where mypy reads it, and the value has one home.
DECLARED: Any = object()

_T = TypeVar("_T")


def _declared_defaults(cls: type[_T]) -> type[_T]:
    """Fill each `= DECLARED` default from the option's declaration before @dataclass reads
    the class, and fail at import where an option declared has no field or a field no
    declaration: neither can be forgotten."""
    names = inspect.get_annotations(cls)
    undeclared = [name for name in names if name not in BY_FIELD]
    missing = [name for name in BY_FIELD if name not in names]
    if undeclared or missing:
        raise RuntimeError(f"Request fields without a declaration in cumtool/options.py: "
                           f"{undeclared}; declared options without a Request field: "
                           f"{missing}")
    for name in names:
        if cls.__dict__.get(name) is DECLARED:
            setattr(cls, name, BY_FIELD[name].default)
    return cls


@dataclass(frozen=True)
@_declared_defaults
class Request:
    """One cumtool run, as plain data: the CLI builds it from its flags. Each field is an
    option declared in cumtool/options.py, its default the declaration's."""

    op: str
    input: str = DECLARED
    output: str | None = DECLARED  # None or "-": standard output
    from_format: str | None = DECLARED
    to_format: str | None = DECLARED
    axis: str = DECLARED
    dtype: str | None = DECLARED
    columns: tuple[Selection, ...] = DECLARED  # -c, as given (cumtool.columns.parse)
    delimiter: str | None = DECLARED
    header: bool = DECLARED
    indices: bool = DECLARED
    overflow: Overflow = DECLARED
    skipna: bool = DECLARED
    batch_rows: int | None = DECLARED  # None: sized for speed; tests use tiny batches
    stdout_is_terminal: bool = DECLARED
    progress: bool = DECLARED  # a progress bar on stderr for long runs (the CLI: stderr is a tty)
    by: tuple[Selection, ...] = DECLARED
    reset: Selection | None = DECLARED
    reverse: bool = DECLARED
    exclusive: bool = DECLARED
    keep: bool = DECLARED
    decimal: bool = DECLARED
    exclude: tuple[Selection, ...] = DECLARED
    only_scanned: bool = DECLARED
    na: tuple[str, ...] | None = DECLARED  # missing-cell markers (None: SEMANTICS.md's list)
    na_rep: str = DECLARED
    out_delimiter: str | None = DECLARED
    decimal_comma: bool = DECLARED
    encoding: str | None = DECLARED  # of CSV/TSV input and output (None: UTF-8)
    # The terminal table: rows shown (the first and last half); None: all.
    table_rows: int | None = DECLARED
    precision: int = DECLARED  # the terminal table: significant digits of floats
    max_record_size: int | None = DECLARED  # bytes in one CSV/TSV record (None: 32 MiB)
    line_buffered: bool = DECLARED  # each row written as read; types from the first data row
    comment: str | None = DECLARED  # CSV/TSV: lines starting with this character are skipped
    ragged: bool = DECLARED  # CSV/TSV: rows shorter than the header end in missing cells
    out_encoding: str | None = DECLARED  # of CSV/TSV output (None: as --encoding)
    out_decimal: str | None = DECLARED  # "point" or "comma" in CSV/TSV output (None: as read)
    sheet: str | None = DECLARED  # a spreadsheet's sheet: its name, or its number from 1
    # Every INPUT argument (files, globs, directories) when there are several or any is
    # not a plain file; `input` is then the first (cumtool.inputs, cumtool.datasets).
    inputs: tuple[str, ...] = DECLARED
    state: str | None = DECLARED  # --state FILE: the carried state, loaded and saved
    run_id: str | None = DECLARED  # --run-id ID: names the run (a retry has the last one's)
    wait: float | None = DECLARED  # --wait SECONDS: for another run that holds the state
    # --growing: inputs consumed before that have grown are continued; a last line
    # without its line end waits for the next run (SEMANTICS.md, "Resumed runs").
    growing: bool = DECLARED
    threads: int | None = DECLARED  # --threads N (None: CUMTOOL_THREADS, else the usable cores)
    filename_column: str | None = DECLARED  # --filename-column NAME: each row's input path
    # The ops' own options (cumtool.ops: ddof, span, compensated, ...), by API keyword, as
    # given; one not given is its default.
    params: Mapping[str, Any] = field(default_factory=dict)
    engine: str = DECLARED  # or "dask": cumtool/distributed.py
    scheduler: str | None = DECLARED  # --engine dask: a scheduler's address (None: see there)
    # The chart (--to chart, -o FILE.svg|png): the column along the horizontal axis (not
    # scanned: it joins `exclude`; None: the row number), and its size in character cells
    # on the terminal or in pixels in an image (None: the terminal's, or 1000 x 500).
    x: Selection | None = DECLARED
    x_format: str | None = DECLARED  # --x-format: the strftime layout of --x's dates
    width: int | None = DECLARED
    height: int | None = DECLARED
    # One `note: ...` line on stderr where a run does what the user may not expect (a
    # column of numbers left out for one text cell); the CLI's -q silences them, the
    # Python API shows none.
    notes: bool = DECLARED
    # Input columns (positions) read as float64 whatever their first rows say: a rerun's,
    # after a decimal came late in an integer column (engine.run).
    widen: tuple[int, ...] = DECLARED
    # --period day|week|month|quarter|year --time COL (--year-start MM-DD): each row's
    # calendar period of COL is a key of its group (cumtool.periods).
    period: str | None = DECLARED
    time: Selection | None = DECLARED
    year_start: str | None = DECLARED
    # --share: each running value over its group's final value (a first pass finds them).
    share: bool = DECLARED

    def check(self) -> None:
        """Raise UsageError for a bad option or combination; reads nothing."""
        self._check_selections()
        from cumtool.kernels import parse_dtype  # numpy: not for `cumtool --help`

        if self.dtype is not None:
            parse_dtype(self.dtype)
        from cumtool.ops import INDEXED, OPS

        unknown = [op for op in self.ops if op not in OPS]
        if unknown or len(set(self.ops)) != len(self.ops):
            raise UsageError(f"{self.op!r} is not an op or a list of different ops; choose "
                             f"from {', '.join(OPS)} (e.g. cumsum,cummax)")
        # An option is refused only when it means nothing for every op asked for.
        if self.indices and not set(INDEXED) & set(self.ops):
            raise UsageError(f"--indices is only for {' and '.join(INDEXED)}, not {self.op}")
        self.stat_options()
        if self.threads is not None and (isinstance(self.threads, bool)
                                         or not isinstance(self.threads, int)
                                         or self.threads < 1):
            raise UsageError(f"--threads {self.threads!r} is not a count of threads (1 or "
                             "more)")
        from cumtool import native

        native.check_threads()
        if self.batch_rows is not None and self.batch_rows < 1:
            raise UsageError("--batch-rows must be at least 1")
        if self.max_record_size is not None:
            from cumtool.formats.records import size_option

            size_option(self.max_record_size, "--max-record-size")
        if self.out_decimal is not None and self.out_decimal not in ("point", "comma"):
            raise UsageError(f"--out-decimal {self.out_decimal!r} is not a decimal mark; "
                             "choose point (1.5) or comma (1,5)")
        self.period_of()
        self._check_share()
        if self.line_buffered and self.reverse:
            raise UsageError("--line-buffered writes each row as it is read, and --reverse "
                             "needs the last row first; leave one out")
        if self.from_format:
            check_format_name(self.from_format, INPUT_FORMATS, "--from")
        self.csv_read("csv")
        self.csv_write("csv")
        from cumtool import inputs

        inputs.check(self.inputs or (self.input,), self.output, reverse=self.reverse,
                     state=self.state, filename_column=self.filename_column,
                     to_format=self.to_format, run_id=self.run_id, wait=self.wait,
                     growing=self.growing)
        self._check_output()
        self._check_chart()
        self._check_engine()
        named = None if self.input == "-" else kind_from_name(self.input)
        if named is not None and named.format not in INPUT_FORMATS and not self.from_format:
            raise UsageError(f"{self.input}: cumtool writes {named.format}s but does not "
                             f"read them; give a table or an array (--from FORMAT)")
        if (self.from_format or (named.format if named else None)) == "npy":
            from cumtool.ops import REGISTRY

            for op in self.ops:
                if REGISTRY[op].distinct:
                    raise UsageError(f"{op} counts the distinct values of a table's columns "
                                     f"(CSV, TSV, Parquet ...), and {said(self.input)} is an array")
        # Each input whose format --from or its name tells: what it does not honour is
        # refused before any is opened (sources.open_source refuses it for the others).
        for each in self.inputs or (self.input,):
            known = None if each == "-" else kind_from_name(each)
            fmt = self.from_format.lower() if self.from_format else (
                known.format if known else None)
            if fmt in INPUT_FORMATS:
                self.refuse_unread(fmt, said(each))
        if self.sheet is not None:
            from cumtool.formats.excel import check_sheet

            check_sheet(self.sheet)

    def _check_selections(self) -> None:
        """Request is built by the CLI from parsed flags; built by hand, a column given
        as text is named as a mistake here, not met as an AttributeError later."""
        from cumtool.columns import Selection

        for name in ("columns", "by", "exclude"):
            given = getattr(self, name)
            if not isinstance(given, tuple) or not all(isinstance(s, Selection)
                                                        for s in given):
                raise UsageError(
                    f"Request({name}=...) takes a tuple of cumtool.columns.parse(TEXT, "
                    f"OPTION) selections, not {given!r}; cumtool.scan({name}=...) takes "
                    "column names")
        for name in ("reset", "time"):
            given = getattr(self, name)
            if given is not None and not isinstance(given, Selection):
                raise UsageError(f"Request({name}=...) takes a cumtool.columns.parse(TEXT, "
                                 f"OPTION) selection, not {given!r}")

    def period_of(self) -> Any:
        """--period, --time and --year-start, checked: a cumtool.periods.Period, or None."""
        if self.period is None and self.time is None and self.year_start is None:
            return None  # the common run: numpy-free start-up does not load periods
        from cumtool import periods

        return periods.check(self.period, self.time, self.year_start)

    def _check_share(self) -> None:
        check_share(self.ops, self.share, state=self.state is not None,
                    line_buffered=self.line_buffered, reset=self.reset is not None,
                    growing=self.growing)

    def _check_output(self) -> None:
        from cumtool.inputs import per_input_output

        if per_input_output(self.output):  # -o DIR/: formats as the inputs', or --to
            if self.to_format:
                check_format_name(self.to_format, OUTPUT_FORMATS, "--to")
            return
        to_stdout = self.output in (None, "-")
        named = None if to_stdout else kind_from_name(str(self.output))
        if named is not None and named.format not in OUTPUT_FORMATS:  # a spreadsheet
            named = None
        fmt = (check_format_name(self.to_format, OUTPUT_FORMATS, "--to") if self.to_format
               else named.format if named else None)
        if fmt is None and not to_stdout:
            raise UsageError(
                f"cannot tell the output format from {self.output!r}; add --to "
                f"({', '.join(OUTPUT_FORMATS)}) or use a known extension (.csv, .tsv, .csv.gz, "
                ".parquet, .npy, .jsonl, .arrow)")
        if fmt in BINARY_OUTPUTS and to_stdout and self.stdout_is_terminal:
            # As gzip and zstd refuse to write compressed data to a terminal.
            raise UsageError(f"{fmt} output is binary; write it with -o FILE or pipe it")
        if named is not None and named.compression and fmt not in DELIMITED:
            raise UsageError(
                f"{self.output}: {named.compression} compression is for csv and tsv output "
                f"only, not {fmt}; leave the compression suffix off")

    def _chart_format(self) -> str | None:
        """The output format as far as options tell it (None: the input's, or a table)."""
        if self.to_format:
            return self.to_format.lower()
        if self.output in (None, "-"):
            return None
        named = kind_from_name(str(self.output))
        return named.format if named else None

    def chart_image(self) -> str | None:
        """`svg` or `png` when the chart is drawn as an image (-o's extension), else None."""
        if self.output in (None, "-"):
            return None
        name = str(self.output).lower()
        return next((ext[1:] for ext in CHART_IMAGES if name.endswith(ext)), None)

    def _check_chart(self) -> None:
        chart = self._chart_format() == "chart"
        given = [flag for flag, value in (("--x", self.x), ("--x-format", self.x_format),
                                          ("--width", self.width), ("--height", self.height))
                 if value is not None]
        if given and not chart:
            raise UsageError(f"{given[0]} is for charts: add --to chart (or -o FILE.svg, "
                             "-o FILE.png)")
        if not chart:
            return
        if self.x_format is not None and self.x is None:
            raise UsageError("--x-format is the layout of the --x column's dates: add --x COL")
        if self.x_format is not None and "%" not in self.x_format:
            raise UsageError(f"--x-format {self.x_format!r} is not a strftime layout: "
                             "write it with % fields, e.g. %d/%m/%Y")
        from cumtool.inputs import per_input_output

        if per_input_output(self.output):
            raise UsageError("a chart is one picture of the whole run: -o names a file "
                             "(FILE.svg, FILE.png, or a text file), not a folder")
        if self.indices:
            raise UsageError("--indices: a chart draws the running values, not their "
                             "positions; leave --indices out")
        if self.only_scanned and (self.x is not None or self.by):
            raise UsageError(f"--only-scanned would leave out the "
                             f"{'--x' if self.x is not None else '--by'} column the chart "
                             "needs; leave --only-scanned out")
        image = self.chart_image() is not None
        low, high = ((CHART_PIXELS[0], CHART_PIXELS[1]) if image
                     else (CHART_CELLS[0], CHART_CELLS[1]))
        for flag, value, least, unit in (
                ("--width", self.width, low[0], "pixels" if image else "characters"),
                ("--height", self.height, low[1], "pixels" if image else "lines")):
            if value is not None and not least <= value <= high:
                raise UsageError(f"{flag} {value}: {'an image' if image else 'a terminal'} "
                                 f"chart takes {least} to {high} {unit}")

    def output_format(self, input_kind: FileKind) -> FileKind:
        """The output's format: --to, else -o's extension, else a table on a terminal or
        the input's format (the names were checked by `check`)."""
        named = kind_from_name(self.output) if self.output not in (None, "-") else None
        if self.to_format:
            return FileKind(self.to_format.lower(), named.compression if named else None)
        if named is not None:
            return named
        if self.stdout_is_terminal:
            return FileKind("table")
        # A spreadsheet (read, not written) goes on as CSV.
        return FileKind(input_kind.format if input_kind.format in OUTPUT_FORMATS else "csv")

    def check_table_output(self, output_format: str) -> None:
        """What a table's output cannot hold, refused once for every driver: an option of
        another output's (Option.outputs: --na-rep of Parquet); .npy holds one array, not
        a table's results beside their indices."""
        from cumtool.options import refuse_unwritten

        refuse_unwritten(self.given(), output_format)
        if output_format == "npy" and self.indices:
            raise UsageError("--indices with .npy output needs .npy input; write csv or "
                             "parquet")

    def stat_options(self) -> dict[str, object]:
        """The op options of the run (cumtool.ops), checked, as the scan kernels take them."""
        from cumtool.ops import scan_params

        return scan_params(self.ops, {"indices": self.indices, **self.params},
                           exclusive=self.exclusive)

    def scan_options(self) -> dict[str, Any]:
        """Every option the scan kernels take (make_spec's keywords), for any reader."""
        return dict(overflow=self.overflow, skipna=self.skipna, indices=self.indices,
                    exclusive=self.exclusive, **self.stat_options())

    def _check_engine(self) -> None:
        from cumtool import engines

        engines.check(self)  # a known engine, and no option it cannot honour
        if is_url(self.output):
            from cumtool.remote import check_output_url

            check_output_url(str(self.output))

    @property
    def ops(self) -> list[str]:
        """The ops of the run: one, or several in one pass (`cumsum,cummax`)."""
        return self.op.split(",")

    def given(self) -> list[Option]:
        """The declared options this run gives a value other than the default (general
        ones, cumtool.options, then the ops' own in `params`): what each path checks
        against what it honours."""
        given = [declared for declared in GENERAL
                 if (declared.given(getattr(self, declared.name))
                     if declared.given_if is not None
                     else getattr(self, declared.name) != _DEFAULTS.get(declared.name))]
        from cumtool.ops import KEYWORDS

        return given + [KEYWORDS[name] for name, value in self.params.items()
                        if name in KEYWORDS and KEYWORDS[name].given(value)]

    def refuse_unread(self, fmt: str, name: str) -> None:
        """Refuse by name each option this run gives that input of format `fmt` (named
        `name`) does not honour (Option.inputs; the one check, options.refuse_unread).
        Standard input from a terminal is line-buffered by the CLI, not by the user
        (cli._run): that is no option given."""
        given = self.given()
        if self.line_buffered and self.input == "-" and not self.inputs and _stdin_is_terminal():
            given = [declared for declared in given if declared.name != "line_buffered"]
        refuse_unread(given, fmt, name)

    def csv_read(self, fmt: str) -> CsvReadOptions:
        return CsvReadOptions(
            delimiter=delimiter_option(
                self.delimiter, format_named(fmt).delimiter or ",", "--delimiter"),
            header=self.header,
            na_values=DEFAULT_NA if self.na is None else self.na,
            decimal_comma=self.decimal_comma, encoding=encoding_option(self.encoding),
            line_buffered=self.line_buffered, comment=self._comment(fmt), ragged=self.ragged)

    def _comment(self, fmt: str) -> str | None:
        """--comment, checked: one ASCII character that is no delimiter, quote or line
        end (the reader looks for it as one byte at the start of a line)."""
        comment = self.comment
        if comment is None:
            return None
        delimiter = delimiter_option(self.delimiter, format_named(fmt).delimiter or ",",
                                     "--delimiter")
        if len(comment) != 1 or not comment.isascii() or comment in "\r\n\"" or (
                comment == delimiter):
            raise UsageError(f"--comment {comment!r} must be one ASCII character that is "
                             "not the delimiter, a quote or a line end (e.g. '#')")
        return comment

    def csv_write(self, fmt: str) -> CsvWriteOptions:
        """The output's delimiter follows its format (-d is the input's), or
        --out-delimiter; numbers written 1,5 (--decimal-comma, unless --out-decimal
        point) make a csv ;-separated, as spreadsheets that write 1,5 do. The text is in
        --out-encoding, else --encoding: by default the output is the input's bytes."""
        comma = self.decimal_comma if self.out_decimal is None else self.out_decimal == "comma"
        default = format_named(fmt).delimiter or ","
        if comma and default == ",":
            default = ";"
        delimiter = delimiter_option(self.out_delimiter, default, "--out-delimiter")
        if self.out_delimiter is not None and (delimiter.isalnum() or delimiter in ".+-"):
            # Numbers are written unquoted: 3.5 with a '.' delimiter would read as 3 and 5.
            raise UsageError(f"--out-delimiter {self.out_delimiter!r} can be part of a number; "
                             "choose another (',', ';', '|', '\\t')")
        if comma and delimiter == ",":
            given = "--out-decimal comma" if self.out_decimal else "--decimal-comma"
            raise UsageError(f"{given} writes 1,5: the output's delimiter cannot be a "
                             "comma too; leave --out-delimiter out (csv output then uses ';')")
        encoding = (encoding_option(self.encoding) if self.out_encoding is None
                    else encoding_option(self.out_encoding, "--out-encoding"))
        return CsvWriteOptions(delimiter=delimiter, header=self.header, na_rep=self.na_rep,
                               decimal_comma=comma, encoding=encoding)


def _stdin_is_terminal() -> bool:
    import sys

    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # closed
        return False


def _named_fields(made: Any) -> Any:
    """Request's own __init__, but a keyword it does not take is refused as the API's are
    (a UsageError naming it, with those close to it; also the TypeError Python raises)."""
    names = {each.name for each in fields(Request)}

    def checked(self: Request, *args: Any, **given: Any) -> None:
        for name in given:
            if name not in names:
                from cumtool.errors import UnknownKeyword
                from cumtool.suggest import close_keywords

                raise UnknownKeyword(f"Request() got an unexpected keyword argument "
                                     f"{name!r}" + close_keywords(name, sorted(names)))
        made(self, *args, **given)

    checked.__doc__, checked.__signature__ = made.__doc__, inspect.signature(made)  # type: ignore[attr-defined]
    return checked


Request.__init__ = _named_fields(Request.__init__)  # type: ignore[method-assign]


# Each field's default ("op" has none): an option differing from it is given.
_DEFAULTS = {each.name: each.default if each.default is not MISSING
             else each.default_factory() if each.default_factory is not MISSING else MISSING
             for each in fields(Request)}
