"""The command line: Click parses options into an engine Request; the package's own
exceptions become one `Error: ...` line and an exit status. Nothing numeric is imported
here, so `cumtool --help` starts fast."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import click

from cumtool.choices import DTYPE_NAMES, OVERFLOW_CHOICES, TORCH_ALIASES
from cumtool.commit import STOP_SIGNALS, check_stop, committed, request_stop
from cumtool.engines import ENGINES
from cumtool.errors import EXIT_INTERRUPTED, CumtoolError, Stopped, UsageError
from cumtool.ops import OPS, REGISTRY, Option, options_of
from cumtool.params import FROM_FORMAT, TO_FORMAT, AxisType, DtypeChoice
from cumtool.view import printable

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as other Unix tools report a closed pipe

# Bare `cumtool` shows the help as an error (Click 8.2 and later).
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


def complete_path(ctx: click.Context, param: click.Parameter, incomplete: str) -> Any:
    """Shell completion of a path (cumtool.completion, loaded only when completing)."""
    from cumtool import completion

    return completion.complete_path(ctx, param, incomplete)


def complete_columns(ctx: click.Context, param: click.Parameter, incomplete: str) -> Any:
    """Shell completion of column names (cumtool.completion)."""
    from cumtool import completion

    return completion.complete_columns(ctx, param, incomplete)


def _selections(_ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """-c, --exclude, --by and --reset as parsed selections (cumtool.columns), so a bad one
    is a usage error before any file is opened."""
    from cumtool.columns import parse

    option = param.opts[-1] if param.name != "columns" else "-c"
    if value is None or isinstance(value, str):
        return None if value is None else _parsed(parse, value, option)
    return tuple(_parsed(parse, text, option) for text in value)


def _parsed(parse: Callable[[str, str], Any], text: str, option: str) -> Any:
    try:
        return parse(text, option)
    except CumtoolError as error:
        raise click.BadParameter(error.cli_message()) from None


def _na_list(_ctx: click.Context, _param: click.Parameter, value: str | None
             ) -> tuple[str, ...] | None:
    return None if value is None else tuple(value.split(","))


def _table_rows(_ctx: click.Context, _param: click.Parameter, value: str) -> int | None:
    text = value.strip().lower()
    if text in ("all", "0"):
        return None
    if not text.isdigit():
        raise click.BadParameter(f"{value!r} is not a number of rows or 'all'")
    return int(text)


def _size(_ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    from cumtool.formats.records import size_option  # numpy: only when a size is given

    return int(_parsed(size_option, value, param.opts[-1]))


def scan_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """The options every operation shares."""
    options = [
        click.argument("input", nargs=-1, metavar="[INPUT]...",
                       shell_complete=complete_path),
        click.option("-a", "--axis", "--dim", "axis", type=AxisType(), default="rows",
                     show_default=True,
                     help="rows (index, 0): down each column; columns (1): across each "
                          "row; or any integer axis of an N-d .npy array."),
        # Sixteen names: listed in the help text, as a metavar they would not fit a line.
        click.option("-t", "--dtype", type=DtypeChoice(), default=None, metavar="DTYPE",
                     help=f"Cast the input to this dtype first, then scan: "
                          f"{', '.join(DTYPE_NAMES)}; or torch's {', '.join(TORCH_ALIASES)}, "
                          "torch.float32, ..."),
        click.option("-o", "--output", default=None, metavar="PATH",
                     shell_complete=complete_path,
                     help="Write here (format from the extension); '-' or none: "
                          "standard output; DIR/ (ending in /): one output per input, "
                          "under the same relative names."),
        click.option("--state", default=None, metavar="FILE", shell_complete=complete_path,
                     help="Tables: continue from the running values saved in FILE (if it "
                          "exists), and save them there when the run succeeds (for "
                          "cron: day by day gives the bits of one run; a retried or "
                          "overlapping run never counts a row twice)."),
        click.option("--run-id", "run_id", default=None, metavar="ID",
                     help="With --state: name this run (e.g. $(date +%F)); a run with the "
                          "last run's ID is a retry of it (default: the options and the "
                          "inputs' bytes)."),
        click.option("--wait", "wait", type=click.FloatRange(min=0), default=None,
                     metavar="SECONDS",
                     help="With --state: wait up to SECONDS for another run holding the "
                          "state to finish (default: fail at once with status 75)."),
        click.option("--growing", is_flag=True,
                     help="With --state: the inputs are logs being appended to; scan only "
                          "the rows added since the last run (a last line without its "
                          "line end waits for the next run). Name each run with --run-id."),
        click.option("--filename-column", "filename_column", default=None, metavar="NAME",
                     help="Tables: add a first column NAME holding each row's input path "
                          "as given (--by NAME: a running total per file)."),
        click.option("--from", "from_format", type=FROM_FORMAT, default=None,
                     help="Input format (default: from the extension, else the first "
                          "bytes)."),
        click.option("--to", "to_format", type=TO_FORMAT, default=None,
                     help="Output format (default: from -o, else a table on a terminal, "
                          "else the input's format)."),
        click.option("--sheet", default=None, metavar="NAME|N",
                     help="Spreadsheets (.xlsx, .xls, .ods): the sheet to read, by name or "
                          "number from 1 (default: the first)."),
        click.option("-c", "--columns", multiple=True, callback=_selections,
                     shell_complete=complete_columns,
                     metavar="COLS", help="Columns to scan (default: every numeric column); "
                     "the others pass through. Names, 1-based positions, ranges (2-4, a-c), "
                     "\"quoted, names\", name[k] for a repeated name, !COLS for all but "
                     "COLS; repeat to add."),
        click.option("--exclude", multiple=True, callback=_selections, metavar="COLS",
                     shell_complete=complete_columns,
                     help="Do not scan these columns (scan the rest of the default or "
                          "-c columns); repeat to add."),
        click.option("--only-scanned", "only_scanned", is_flag=True,
                     help="Write only the scanned columns (with --keep: each and its "
                          "result), e.g. to write .npy from a CSV with text columns."),
        click.option("-d", "--delimiter", default=None,
                     help="The input's field delimiter (default ',' or tab for .tsv; '\\t' "
                          "for tab)."),
        click.option("--out-delimiter", "out_delimiter", default=None, metavar="C",
                     help="The output's field delimiter (default: ',' for csv, tab for tsv; "
                          "';' for csv with --decimal-comma): one ASCII character that "
                          "cannot be part of a number."),
        click.option("--na", default=None, callback=_na_list, metavar="LIST",
                     help="Comma-separated cell texts that mean a missing cell, replacing "
                          "the default NA,N/A,n/a,NULL,null,None,<NA>,#N/A (an empty cell "
                          "is always missing)."),
        click.option("--na-rep", "na_rep", default="", metavar="TEXT",
                     help="How a missing cell is written in csv/tsv output (default: empty)."),
        click.option("--encoding", default=None, metavar="ENC",
                     help="CSV/TSV text encoding (latin-1, cp1252, ...) of the input, and "
                          "of csv/tsv output (default: UTF-8)."),
        click.option("--decimal-comma", "decimal_comma", is_flag=True,
                     help="Numbers are written 1,5 (European): read them so, and write "
                          "results so."),
        click.option("--out-encoding", "out_encoding", default=None, metavar="ENC",
                     help="The text encoding of csv/tsv output (default: --encoding's, so "
                          "unscanned cells come out byte for byte)."),
        click.option("--out-decimal", "out_decimal", type=click.Choice(["point", "comma"]),
                     default=None,
                     help="The decimal mark of numbers in csv/tsv output (default: comma "
                          "with --decimal-comma, else point)."),
        click.option("--no-header", "no_header", is_flag=True,
                     help="CSV has no header row: columns are named 1, 2, ... and the "
                          "output has no header either."),
        click.option("--comment", default=None, metavar="CHAR",
                     help="CSV/TSV: skip lines that start with CHAR (e.g. '#'), as blank "
                          "lines are; CHAR elsewhere is data."),
        click.option("--ragged", is_flag=True,
                     help="CSV/TSV: rows shorter than the header end in missing cells "
                          "(a longer row is still an error)."),
        click.option("--overflow", type=click.Choice(OVERFLOW_CHOICES), default="error",
                     show_default=True,
                     help="Integer overflow: stop with an error, or wrap around as torch."),
        click.option("--skipna", is_flag=True,
                     help="Treat NaN like a missing cell: skipped by the scan, kept in place."),
        click.option("--by", "by", multiple=True, callback=_selections, metavar="COLS",
                     shell_complete=complete_columns,
                     help="Tables: a separate running scan for each distinct value (or "
                          "combination) of these key columns; rows keep their order."),
        click.option("--reset", default=None, callback=_selections, metavar="COL",
                     shell_complete=complete_columns,
                     help="Tables: start the scan afresh at every row where COL is true or "
                          "non-zero."),
        click.option("--period", type=click.Choice(["day", "week", "month", "quarter",
                                                    "year"]), default=None,
                     help="Tables: the calendar period of --time's date is part of each "
                          "row's group, as --by columns are: a scan per day, ISO week "
                          "(Monday first), month, quarter or year (month-to-date, ...)."),
        click.option("--time", default=None, callback=_selections, metavar="COL",
                     shell_complete=complete_columns,
                     help="With --period: the column of dates or times (ISO text such as "
                          "2024-03-01 or 2024-03-01T09:30, or a date or timestamp column); "
                          "not scanned."),
        click.option("--year-start", "year_start", default=None, metavar="MM-DD",
                     help="With --period year or quarter: the day years start (fiscal "
                          "04-01, water years 10-01); quarters start every 3 months from "
                          "it [default: 01-01]."),
        click.option("--share", is_flag=True,
                     help="cumsum, cumcount, cumnunique: each running value divided by its "
                          "group's final value, as float64 (Pareto shares); reads the input "
                          "twice."),
        click.option("--reverse", is_flag=True,
                     help="Scan from the last element to the first; output keeps input order."),
        click.option("--exclusive", is_flag=True,
                     help="out[i] covers the elements before i only; out[0] is the identity."),
        click.option("--keep", is_flag=True,
                     help="Tables: keep the input columns and append each result as "
                          "<name>_<op>."),
        click.option("--decimal", is_flag=True,
                     help="CSV: read float columns as exact decimals with the places their "
                          "cells have (money): 19.99 + 0.01 is 20.00."),
        click.option("-q", "--quiet", is_flag=True,
                     help="No progress bar (it shows only on a terminal, for long runs) and no "
                          "notes (`note: ...` lines on stderr)."),
        click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Threads to run on (never changes results) [default: "
                          "$CUMTOOL_THREADS, else the cores this process may use: its "
                          "CPU affinity and cgroup quota]."),
        click.option("--batch-rows", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Rows per batch (default: sized for speed and memory)."),
        click.option("-n", "--rows", "table_rows", default="20", callback=_table_rows,
                     metavar="N", show_default=True,
                     help="Table view: rows shown, the first and last N/2 of them; "
                          "'all' or 0: every row."),
        click.option("--precision", type=click.IntRange(1, 17), default=6, metavar="N",
                     show_default=True,
                     help="Table view: digits of floats: a column's own decimal places "
                          "where they are at most N, else N significant digits (files and "
                          "pipes keep every digit)."),
        click.option("--x", "x", default=None, callback=_selections, metavar="COL",
                     shell_complete=complete_columns,
                     help="Chart: the column along the horizontal axis (numbers, or dates "
                          "as 2024-03-01, 2024/03/01, 01-Mar-24, 'Mar 1, 2024', 03/25/2024; "
                          "not scanned) [default: the row number, from 1]."),
        click.option("--x-format", "x_format", default=None, metavar="FMT",
                     help="Chart: the layout of the --x dates, as strftime writes it "
                          "(%d/%m/%Y), where cumtool cannot tell it, as for 01/02/2024."),
        click.option("--width", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Chart: its width, in characters on the terminal or in pixels "
                          "in an image [default: the terminal's, else 80; 1000 pixels]."),
        click.option("--height", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Chart: its height, in lines on the terminal or in pixels in an "
                          "image [default: the terminal's less one line, for the prompt, "
                          "else 24; 500 pixels]."),
        click.option("--max-record-size", "max_record_size", default=None,
                     callback=_size, metavar="SIZE",
                     help="Longest CSV/TSV record (row) read, e.g. 64M; a longer one is an "
                          "error, so memory stays bounded [default: 32M]."),
        click.option("--line-buffered", "line_buffered", is_flag=True,
                     help="For `tail -f` pipelines: write each row as soon as it is read; "
                          "column types are judged from the first data row (--dtype fixes "
                          "them). Standard input from a terminal is read so."),
        click.option("--engine", type=click.Choice(list(ENGINES)), default="local",
                     show_default=True,
                     help="Where the scan runs: this process, or the workers of a Dask "
                          "cluster (tables; the same bits; pip install 'cumtool[dask]')."),
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="--engine dask: the scheduler to use (default: "
                          "$DASK_SCHEDULER_ADDRESS, else a local cluster, a worker per "
                          "core)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _make_command(op: str) -> click.Command:
    ops = op.split(",")
    if len(ops) == 1:
        summary, example, short = REGISTRY[op].summary, REGISTRY[op].example, REGISTRY[op].short
    else:
        summary = (f"{', '.join(ops)} in one pass: the input's columns are kept, and after "
                   "them come, for each scanned column, <name>_<op> for each op.")
        example = f"cumtool {op} sample_data/daily_sales.csv"
        short = None

    @click.command(name=op, short_help=short, help=f"{summary}\n\nINPUT is a CSV, TSV (plain or "
                   "compressed), Parquet, .npy, JSON Lines, Arrow IPC or spreadsheet (.xlsx, "
                   ".xls, .ods) file, or '-' / nothing for standard input. Several INPUTs, "
                   "quoted globs ('logs/*.csv', in natural order) and directories "
                   "(hive-partitioned Parquet too) are read as one table.",
                   epilog=f"\b\nExample:\n  {example}")
    @scan_options
    @click.pass_context
    def command(ctx: click.Context, **options: Any) -> None:
        _run(ctx, op, options)

    # The options of some ops only (cumtool.ops), offered where one of the ops has them.
    for declared in options_of(ops):
        command = _click_option(declared)(command)
    return command


def _click_option(declared: Option) -> Callable[..., Any]:
    if declared.is_flag:
        return click.option(declared.flag, _param_name(declared), is_flag=True,
                            help=declared.help)
    return click.option(declared.flag, _param_name(declared), type=declared.type,
                        default=None, metavar=declared.metavar, help=declared.help)


def _param_name(declared: Option) -> str:
    """Click's name of the option's value: the flag's (--no-adjust: no_adjust)."""
    return declared.flag.removeprefix("--").replace("-", "_")


def _run(ctx: click.Context, op: str, options: dict[str, Any]) -> None:
    from cumtool.engine import Request, run

    given = tuple(options["input"])
    request = Request(
        op=op, input=given[0] if given else "-", output=options["output"],
        inputs=given if len(given) > 1 else (), state=options["state"],
        run_id=options["run_id"], wait=options["wait"], growing=options["growing"],
        threads=options["threads"],
        filename_column=options["filename_column"],
        from_format=options["from_format"], to_format=options["to_format"],
        axis=options["axis"], dtype=options["dtype"], columns=options["columns"],
        delimiter=options["delimiter"], header=not options["no_header"],
        overflow=options["overflow"],
        skipna=options["skipna"], batch_rows=options["batch_rows"],
        by=options["by"], reset=options["reset"], reverse=options["reverse"],
        exclusive=options["exclusive"], keep=options["keep"], decimal=options["decimal"],
        exclude=options["exclude"], only_scanned=options["only_scanned"], na=options["na"],
        na_rep=options["na_rep"], out_delimiter=options["out_delimiter"],
        decimal_comma=options["decimal_comma"], encoding=options["encoding"],
        stdout_is_terminal=sys.stdout is not None and sys.stdout.isatty(),
        progress=not options["quiet"] and sys.stderr is not None and sys.stderr.isatty(),
        notes=not options["quiet"],
        table_rows=options["table_rows"], precision=options["precision"],
        max_record_size=options["max_record_size"], sheet=options["sheet"],
        indices=options.get("indices", False),
        params={declared.name: declared.from_cli(options[_param_name(declared)])
                for declared in options_of(op.split(",")) if declared.name != "indices"},
        engine=options["engine"], scheduler=options["scheduler"],
        x=options["x"], x_format=options["x_format"], width=options["width"],
        height=options["height"],
        # What is typed on a terminal goes out line by line (SEMANTICS.md, "Tables").
        out_encoding=options["out_encoding"], out_decimal=options["out_decimal"],
        comment=options["comment"], ragged=options["ragged"],
        period=options["period"], time=options["time"], year_start=options["year_start"],
        share=options["share"],
        line_buffered=options["line_buffered"] or (
            given in ((), ("-",)) and not options["reverse"] and sys.stdin is not None
            and sys.stdin.isatty()),
    )
    try:
        if not given and sys.stdin is not None and sys.stdin.isatty():
            # Not a wait for input no one sends: only an explicit '-' reads what is typed.
            raise UsageError(f"no input: give a file, or pipe data into cumtool (cumtool "
                             f"{op} data.csv, or ... | cumtool {op})")
        with _stopping_on_signals():
            run(request)
    except CumtoolError as error:
        try:
            # A stop signal whose exception was lost (one raised while a module compiles)
            # is why the run ended, not the error that followed it (an empty FIFO).
            check_stop()
        except Stopped as stop:
            click.echo(f"Error: {stop.message()}", err=True)
            status = stop.exit_code
        else:
            # One line, even when a name in the message holds a line break; and a control
            # character from a file (a terminal escape sequence) is shown, not obeyed.
            click.echo(f"Error: {printable(error.cli_message())}", err=True)
            status = error.exit_code
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from complaining
        # again when it flushes standard output at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = EXIT_BROKEN_PIPE
    except Stopped as stop:
        # SIGTERM (kill, cron, systemd) and SIGHUP (a closed terminal) end a run like
        # Ctrl-C, with the shell's status for a signal: 128 + its number (143, 129).
        click.echo(f"Error: {stop.message()}", err=True)
        status = stop.exit_code
    except KeyboardInterrupt:
        click.echo("Error: interrupted", err=True)
        status = EXIT_INTERRUPTED
    except Exception as error:
        # A fault cumtool did not word (a bug, or an OSError no layer caught): still one
        # line and status 1, never a traceback; CUMTOOL_DEBUG=1 shows where it came from.
        if os.environ.get("CUMTOOL_DEBUG"):
            raise
        click.echo(f"Error: {printable(_unexpected(error))}", err=True)
        status = 1
    else:
        return
    # Exit outside the handlers: an exit raised inside one keeps the failed run's frames
    # (and its reader thread, blocked on standard input) alive until interpreter shutdown,
    # which then aborts with "could not acquire lock for <stdin>".
    ctx.exit(status)


def _unexpected(error: Exception) -> str:
    text = " ".join(str(error).split())[:300]
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror or text}"
    return (f"internal error: {type(error).__name__}: {text} (a bug in cumtool; run with "
            "CUMTOOL_DEBUG=1 to see where, and report it)")


@contextlib.contextmanager
def _stopping_on_signals() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into an exception in the main thread while the run
    lasts, so the output's temporary file is removed. Only the first signal stops the
    run: a second one must not cut the clean-up short. Once the run's files are in place
    (cumtool.commit), a stop signal is no failure: the run has done its work, and a retry
    wrapper must not be told otherwise."""
    stopped = False
    committed.clear()

    def stop(number: int, _frame: object) -> None:
        nonlocal stopped
        if not stopped and request_stop(number):
            stopped = True
            raise Stopped(number)

    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        yield  # no SIGHUP on Windows; handlers can be set from the main thread only
        return
    previous = {number: signal.signal(number, stop) for number in STOP_SIGNALS}
    try:
        check_stop()  # a signal that came while the modules loaded, its exception lost
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class _Cli(click.Group):
    """Click's own errors the way cumtool's are: one `Error: ...` line, escaped like any
    text from outside (an argument may hold a terminal escape sequence), and a hint
    line, instead of Click's usage block."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(OPS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """An op, or several ops in one pass: `cumsum,cummax` (each once, in that order).
        An op's command is made when first asked for: making all of them (some 375 Click
        options) was 4 ms of every run's start."""
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in OPS:
            command = _make_command(cmd_name)
            self.add_command(command)
            return command
        ops = cmd_name.split(",")
        if command is None and len(ops) > 1 and len(set(ops)) == len(ops) and all(
                op in OPS for op in ops):
            return _make_command(cmd_name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """Click's, but an unknown op gets the ops it is close to (cumtool.suggest)."""
        name = click.utils.make_str(args[0])
        if ctx.resilient_parsing or not name[:1].isalnum():  # completion; `--help`
            return super().resolve_command(ctx, args)
        command = self.get_command(ctx, name)
        if command is None:
            from cumtool.suggest import unknown_op

            raise click.UsageError(unknown_op(name, OPS), ctx)
        return name, command, args[1:]

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:  # a caller that handles Click's exceptions itself
            return super().main(args, prog_name, complete_var, False, **extra)
        if any(name.endswith("_COMPLETE") for name in os.environ):
            # Shell completion asked for: its bash script class is registered on import.
            import cumtool.completion  # noqa: F401
        if "numpy" not in sys.modules:
            # numpy's OpenBLAS starts a thread per core when imported: about 80 ms of CPU
            # and 10 ms of wall time on 2 cores, for a tool that multiplies no matrices.
            # A setting of the user's own is kept.
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            status = super().main(args, prog_name, complete_var, False, **extra)
        except _NO_ARGS_IS_HELP as error:  # bare `cumtool`: the help
            error.show()
            status = error.exit_code
        except click.ClickException as error:
            message = (_no_such_option(error) if isinstance(error, click.NoSuchOption)
                       else error.format_message())
            click.echo(f"Error: {printable(message)}", err=True)
            ctx = getattr(error, "ctx", None)
            if ctx is not None and ctx.command.get_help_option(ctx) is not None:
                help_name = max(ctx.command.get_help_option_names(ctx), key=len)
                click.echo(f"Try '{printable(ctx.command_path)} {help_name}'.", err=True)
            status = error.exit_code
        except click.Abort:  # Ctrl-C while Click parsed the command line
            click.echo("Error: interrupted", err=True)
            status = EXIT_INTERRUPTED
        except Stopped as stop:  # a stop signal while Click parsed the command line
            click.echo(f"Error: {stop.message()}", err=True)
            status = stop.exit_code
        sys.exit(status if isinstance(status, int) else 0)


def _no_such_option(error: click.NoSuchOption) -> str:
    """Click's message for an unknown option, with cumtool's suggestions in place of
    Click's: the option a synonym stands for (--group: --by), close spellings, or the ops
    that take it (--indices: cummax and cummin)."""
    from cumtool.ops import OPS_OF_OPTION
    from cumtool.suggest import close_options, did_you_mean

    typed = error.option_name
    message = f"No such option {typed!r}."
    ctx = error.ctx
    if ctx is None:
        return message
    if typed in OPS_OF_OPTION and not isinstance(ctx.command, click.Group):
        takers = OPS_OF_OPTION[typed]
        return (f"No such option {typed!r} for {ctx.info_name}: only "
                f"{', '.join(takers[:-1]) + ' and ' if len(takers) > 1 else ''}"
                f"{takers[-1]} {'take' if len(takers) > 1 else 'takes'} it.")
    offered = [name for param in ctx.command.get_params(ctx)
               for name in (*param.opts, *param.secondary_opts)]
    return message + did_you_mean(close_options(typed, offered))


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cumtool", prog_name="cumtool")
def main() -> None:
    """Running totals and other cumulative operations on CSV, TSV, Parquet, .npy, JSON
    Lines, Arrow IPC and spreadsheet files.

    \b
    Examples:
      cumtool cumsum sample_data/daily_sales.csv
      cumtool cumsum,cummax sample_data/daily_sales.csv -c units
      cumtool cumprod sample_data/cumprod_matrix.csv --axis columns
      cat data.npy | cumtool cummax - --axis 2 > out.npy

    Several ops in one pass (cumsum,cummax) keep the input's columns and append the
    results after them: units_cumsum, units_cummax.

    Exit status: 0 success, 1 data or I/O error, 2 usage error, 75 --state held by
    another run (try again later, or --wait), 129 hung up (SIGHUP), 130 interrupted
    (Ctrl-C, SIGINT), 141 output pipe closed early (e.g. `| head`), 143 terminated
    (SIGTERM). A failed or stopped run leaves any existing output file as it was.
    """

