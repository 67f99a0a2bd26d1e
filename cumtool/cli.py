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

from cumtool.commit import check_stop, committed, handled_signals, request_stop, stop_now
from cumtool.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    CumtoolError,
    Stopped,
    UsageError,
)
from cumtool.ops import OPS, REGISTRY, Option, options_of
from cumtool.options import BY_FIELD, FLAGS
from cumtool.params import AxisType, CheckedChoice, DtypeChoice, FloatRange, IntRange
from cumtool.view import printable

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


def _whole(bound: float | None) -> int | None:
    """An integer option's bound (declared as a number) as click's IntRange takes it."""
    return None if bound is None else int(bound)


def _checked(parse: Callable[[Any], Any], multiple: bool) -> Callable[..., Any]:
    """A declared option's `parse` as Click's callback: its UsageError (a bad selection,
    size or row count) is Click's usage error naming the option, before any file opens;
    once (`-c 'a,': an empty column name`), where the message names it already."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        try:
            if multiple:
                return tuple(parse(text) for text in value)
            return None if value is None else parse(value)
        except CumtoolError as error:
            message = error.cli_message()
            if any(message.startswith(name + " ") for name in param.opts):
                raise click.UsageError(message, ctx) from None
            raise click.BadParameter(message, ctx, param) from None

    return callback


# The options whose Click type does more than check a value (completion, a metavar).
_PARAM_TYPES: dict[str, Callable[[], click.ParamType]] = {"axis": AxisType,
                                                          "dtype": DtypeChoice}
_COMPLETE = {"path": complete_path, "columns": complete_columns}


def _click_option(declared: Option, general: bool = False) -> Callable[..., Any]:
    """The Click option of a declared one (cumtool.options, cumtool.ops): a general one's
    default is its own, an op's is None (not given: cumtool.ops.scan_params)."""
    names = (*declared.spellings, declared.dest)
    if declared.is_flag:
        return click.option(*names, is_flag=True, help=declared.help)
    kind: Any = declared.type
    callback = None
    if declared.name in _PARAM_TYPES:
        kind = _PARAM_TYPES[declared.name]()
    elif declared.choices and declared.parse is not None:
        kind = CheckedChoice(declared.choices, declared.parse)
    elif declared.choices:
        kind = click.Choice(list(declared.choices))
    elif declared.type is int and (declared.least is not None or declared.most is not None):
        kind = IntRange(min=_whole(declared.least), max=_whole(declared.most))
    elif declared.least is not None or declared.most is not None:
        kind = FloatRange(min=declared.least, max=declared.most)
    elif declared.parse is not None:
        callback = _checked(declared.parse, declared.multiple)
    return click.option(*names, type=kind, default=declared.default if general else None,
                        multiple=declared.multiple, callback=callback,
                        metavar=declared.metavar, show_default=declared.show_default,
                        shell_complete=_COMPLETE.get(declared.complete), help=declared.help)


def scan_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """The options every operation shares (cumtool.options), after INPUT."""
    for declared in reversed(FLAGS):
        function = _click_option(declared, general=True)(function)
    return click.argument("input", nargs=-1, metavar="[INPUT]...",
                          shell_complete=complete_path)(function)


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


def _run(ctx: click.Context, op: str, options: dict[str, Any]) -> None:
    try:
        from cumtool.engine import Request, run
    except Exception:
        # A stop signal while the engine's modules load can come back wrapped in what ran
        # then (a RuntimeError from a class's __set_name__): the stop, not a traceback.
        check_stop()
        raise
    from cumtool import native

    native.cap_malloc_arenas()  # before any thread allocates

    given = tuple(options["input"])
    # Click gives each general option's value, its default included ('-n all' is None).
    fields = {declared.name: declared.from_cli(options[declared.dest]) if declared.is_flag
              else options[declared.dest] for declared in FLAGS}
    # What is typed on a terminal goes out line by line (SEMANTICS.md, "Tables").
    fields["line_buffered"] = fields["line_buffered"] or (
        given in ((), ("-",)) and not options["reverse"] and sys.stdin is not None
        and sys.stdin.isatty())
    # The ops' own options, in Request.params; one that is a Request field (--indices of
    # cummax and cummin) sets its field.
    own = {declared.name: declared.from_cli(options[declared.dest])
           for declared in options_of(op.split(","))}
    fields.update({name: value for name, value in own.items() if name in BY_FIELD})
    request = Request(
        **fields, op=op, input=given[0] if given else "-",
        inputs=given if len(given) > 1 else (),
        stdout_is_terminal=sys.stdout is not None and sys.stdout.isatty(),
        progress=not options["quiet"] and sys.stderr is not None and sys.stderr.isatty(),
        params={name: value for name, value in own.items() if name not in BY_FIELD})
    try:
        if not given and sys.stdin is not None and sys.stdin.isatty():
            # Not a wait for input no one sends: only an explicit '-' reads what is typed.
            raise UsageError(f"no input: give a file, or pipe data into cumtool (cumtool "
                             f"{op} data.csv, or ... | cumtool {op})")
        from cumtool.inputs import check_not_standard_output

        check_not_standard_output(given, request.output)
        with _stopping_on_signals():
            run(request)
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
        try:
            # A stop signal whose exception was lost (one raised while a module compiles)
            # or wrapped in another (raised inside a class's creation) is why the run
            # ended, not the error that followed it (an empty FIFO).
            check_stop()
        except Stopped as stop:
            click.echo(f"Error: {stop.message()}", err=True)
            status = stop.exit_code
        else:
            if isinstance(error, CumtoolError):
                # One line, even when a name in the message holds a line break; and a
                # control character from a file (a terminal escape sequence) is shown,
                # not obeyed.
                click.echo(f"Error: {printable(error.cli_message())}", err=True)
                status = error.exit_code
            else:
                # A fault cumtool did not word (a bug, or an OSError no layer caught):
                # still one line and status 1, never a traceback; CUMTOOL_DEBUG=1 shows
                # where it came from.
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
    if isinstance(error, MemoryError) or (isinstance(error, ImportError) and any(
            sign in text for sign in ("failed to map segment", "Cannot allocate memory"))):
        # no bug: a limit (ulimit -v, a container's), met by Python or by a library loading
        return ("out of memory: the system gave no more; the values of --by's groups and "
                "cumnunique's are held in memory, the rest is read and written in batches")
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

    def stop(number: int, frame: object) -> None:
        nonlocal stopped
        if not stopped and request_stop(number) and stop_now(frame):
            stopped = True
            raise Stopped(number)

    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        yield  # no SIGHUP on Windows; handlers can be set from the main thread only
        return
    previous = {number: signal.signal(number, stop) for number in handled_signals()}
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
        if sys.stdout is None and not _runs(sys.argv[1:] if args is None else list(args)):
            # The help or the version to nowhere (`>&-`): Click would write nothing, and
            # say 0.
            click.echo("Error: cannot write standard output: it is closed", err=True)
            sys.exit(1)
        try:
            status = super().main(args, prog_name, complete_var, False, **extra)
        except _NO_ARGS_IS_HELP as error:  # bare `cumtool`: the help
            error.show()
            status = error.exit_code
        except click.ClickException as error:
            message = printable(_no_such_option(error) if isinstance(error, click.NoSuchOption)
                                else error.format_message())
            ctx = getattr(error, "ctx", None)
            if ctx is not None and ctx.command.get_help_option(ctx) is not None:
                # The help to read, on the same line: every error is one line.
                help_name = max(ctx.command.get_help_option_names(ctx), key=len)
                message += ("" if message.endswith((".", "?")) else ".") + (
                    f" Try '{printable(ctx.command_path)} {help_name}'.")
            click.echo(f"Error: {message}", err=True)
            status = error.exit_code
        except click.Abort:  # Ctrl-C while Click parsed the command line
            click.echo("Error: interrupted", err=True)
            status = EXIT_INTERRUPTED
        except Stopped as stop:  # a stop signal while Click parsed the command line
            click.echo(f"Error: {stop.message()}", err=True)
            status = stop.exit_code
        except OSError as error:  # the help or the version not written (a run words its own)
            if os.environ.get("CUMTOOL_DEBUG"):  # a run's own fault, let through to be seen
                raise
            status = _not_written(error)
        except SystemExit as ended:
            # Click's own way with a closed pipe (EPIPE) is status 1, its streams pacified:
            # a run's is 141 (README's exit statuses).
            # (Its wrapper's name, not the class: Click 8.5 made it private.)
            pacified = type(sys.stdout).__name__.lstrip("_") == "PacifyFlushWrapper"
            if ended.code != 1 or not pacified:
                raise
            status = _not_written(BrokenPipeError())
        sys.exit(status if isinstance(status, int) else 0)


def _runs(args: list[str]) -> bool:
    """Whether the command line runs an op (whose own output says where it goes), not the
    help or the version only."""
    return bool(args) and not {"-h", "--help", "--version"} & set(args)


def _not_written(error: OSError) -> int:
    """The status of the help or the version that standard output did not take: quiet
    141 where the reader went away (`| head`), as a run's; one line and 1 where it failed
    (a full disk)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        # What is still buffered would fail again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if isinstance(error, BrokenPipeError):
        return EXIT_BROKEN_PIPE
    click.echo(f"Error: cannot write standard output: {error.strerror or error}", err=True)
    return 1


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

