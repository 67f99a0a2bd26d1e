"""What an op module declares: the op (its name, help, example, options and the
parameters its scan takes) and each of its options. Plain data, importable without numpy:
the command line builds its commands, `--help` and shell completion from it at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np

    from cumtool.ops.spec import Accumulator, StatKernel

# An op's check of its options as given (by keyword; only those it declares, None or the
# default where not given): the parameters its scan takes, or UsageError.
Params = Callable[[Mapping[str, Any]], dict[str, Any]]


class _Same:
    def __repr__(self) -> str:
        return "SAME"


# Option.api_default of an option whose default in cumtool.scan is its `default`.
SAME: Any = _Same()


# Whether a path honours an option given (a value other than Request's default):
# "honours" it; "hands over" the run to the general path (the small and compiled CSV paths,
# small.options_fit); "not its output" where only other writers read it (the chart, the
# table view); "refuses" it by name, before any input is read (--engine dask, and arrays
# for the options of tables). None: not declared, which a path takes as not honoured.
Honours = Literal["honours", "hands over", "not its output", "refuses"]


@dataclass(frozen=True)
class Option:
    """One option: the CLI flag, the Request field (and `cumtool.scan` keyword) it sets,
    what it means, how its text is read and which paths honour it. An op's options
    (cumtool.ops) set Request.params[keyword]; the general ones (cumtool.options), the
    Request field of that name."""

    flag: str  # "--span"; "" for a Request field no flag sets (the front ends fill it)
    help: str  # the CLI's --help line
    type: type = bool  # int, float, str, or bool: an on/off flag
    metavar: str | None = None
    keyword: str = ""  # the API keyword (Request field); "" : the flag's name ("--span": span)
    default: Any = None  # the keyword's value when not given (a general option's: the CLI's)
    negates: bool = False  # a flag that turns its keyword off: --no-adjust is adjust=False
    # The keyword's value from the flag's text, where Click's type does not make it
    # (--halflife: a number of rows, or a duration with --times); a UsageError it raises
    # is the command line's usage error naming the option.
    parse: Callable[[Any], Any] | None = None
    aliases: tuple[str, ...] = ()  # other spellings: "-a", "--dim" (short ones lead --help)
    choices: tuple[str, ...] = ()  # the values it takes (--help and completion list them)
    least: float | None = None  # the smallest number it takes
    most: float | None = None  # the largest
    multiple: bool = False  # given again, it adds: the value is a tuple
    complete: Literal["", "path", "columns"] = ""  # what the shell completes
    show_default: bool = False
    api: bool = False  # a general option that cumtool.scan takes as a keyword
    # Its default there, where it is not `default`: axis=0 as numpy's; columns=None, not
    # the command line's empty selection, as the API takes names (None: not given).
    api_default: Any = SAME
    # Its entry in help(cumtool.scan), where `help` speaks of the command line (its flags,
    # its text syntax); "": `help`.
    api_help: str = ""
    # Whether a value is given, where differing from the default does not say it
    # (--axis: index and 0 are rows).
    given_if: Callable[[Any], bool] | None = None
    # Which paths honour it (Honours). An op's option left None is a parameter of its
    # kernel, which every path runs; a general option must say (tests/test_option_paths.py).
    small: Honours | None = None  # the small and compiled CSV paths
    dask: Honours | None = None  # --engine dask
    wide: Honours | None = None  # CSV too wide for whole-width batches (widerun)
    # Which input formats honour it: "all", a group of them that
    # cumtool/formats/registry.py derives from the formats' own declarations (INPUT_GROUPS:
    # "tables", "text", "lines", "spreadsheets"), or format names. Any other input
    # refuses it by name (options.refuse_unread), whether it is named, sniffed or one of a
    # dataset's. An op's option left None is a parameter of its kernel, which reads every
    # input; a general option must say (tests/test_option_paths.py).
    inputs: str | tuple[str, ...] | None = None
    # Which output formats honour it (format names); None: every one. Any other table
    # output refuses it by name (options.refuse_unwritten): --na-rep means nothing to
    # Parquet, whose missing cells are nulls.
    outputs: tuple[str, ...] | None = None
    # Said after that refusal, where another option does what the user may have meant
    # (--encoding of a Parquet input: --out-encoding sets the output's).
    elsewhere: str = ""
    # False: it never changes what a run writes (--threads, --wait, the table view's
    # --precision), so a --state run's identity (state.py) leaves it out and a retry that
    # changes it is still a retry. Left True, a new option is part of the identity.
    identity: bool = True

    @property
    def name(self) -> str:
        return self.keyword or self.flag.removeprefix("--").replace("-", "_")

    @property
    def dest(self) -> str:
        """Click's name of its value: the keyword's, or the flag's where the flag turns the
        keyword off (--no-header: no_header)."""
        return self.flag.removeprefix("--").replace("-", "_") if self.negates else self.name

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every spelling, as --help lists them: short ones, the flag, long ones."""
        return (*(a for a in self.aliases if not a.startswith("--")), self.flag,
                *(a for a in self.aliases if a.startswith("--")))

    @property
    def tables_only(self) -> bool:
        """Whether arrays (.npy) refuse it: it is for tables (Option.inputs)."""
        return self.inputs == "tables"

    @property
    def is_flag(self) -> bool:
        return self.type is bool

    @property
    def keyword_default(self) -> Any:
        """Its default as a keyword of cumtool.scan (Option.api_default)."""
        return self.default if self.api_default is SAME else self.api_default

    def given(self, value: Any) -> bool:
        if self.given_if is not None:
            return self.given_if(value)
        return value != self.default

    def from_cli(self, value: Any) -> Any:
        """The keyword's value from the parsed flag (Click's value, `parse` applied: None
        or the flag's)."""
        if self.is_flag:
            return not value if self.negates else bool(value)
        return self.default if value is None else value


@dataclass(frozen=True)
class Op:
    """One op: all that the command line, the API and the scan need to know of it."""

    name: str
    summary: str  # the command's --help, first paragraph
    short: str  # its line in `cumtool --help`: short enough to show whole
    example: str  # a command that runs on sample_data/ (README's examples test runs it)
    options: tuple[Option, ...] = ()  # options of this op only (or of a few ops)
    params: Params | None = None  # its options as given -> its scan's parameters
    # The parameters its scan takes (ScanSpec.params), each with its default: the value
    # a state file saved before the parameter existed means.
    parameters: Mapping[str, Any] = field(default_factory=dict)
    exclusive: bool = True  # False: --exclusive means nothing for it (refused)
    # A 0-d array (one value) is refused, as numpy's and torch's diff refuse it.
    needs_dimension: bool = False
    dates: bool = False  # dates and times are scanned (as their integers): cummax, cummin
    # Decimal columns (--decimal, Parquet decimals): "exact" keeps their places, "float64"
    # computes in float64, "count" counts them (the result is no decimal).
    decimals: Literal["exact", "float64", "count"] = "exact"
    stat: bool = False  # scanned by stats.py's driver (its state is a record of fields)
    # Compares values rather than computing with them (cumnunique): a column of any type
    # named with -c is scanned (text, booleans, dates), down the rows of a table only, by
    # cumtool/distinct.py, which carries the values seen themselves.
    distinct: bool = False
    # How kernels.py accumulates it (cumsum, cumprod, cummax, cummin, logcumsumexp).
    accumulator: Accumulator | None = None
    # How stats.py scans it: a stat op's kernel, and cumsum's with --compensated.
    kernel: StatKernel | None = None
    # Where only some of its scans need the kernel: whether these parameters do.
    kernel_when: Callable[[Mapping[str, Any]], bool] | None = None
    # Its parameters for a scan in this accumulator dtype (cumsum: an integer sum is
    # exact, so it is never compensated).
    fit: Callable[[dict[str, Any], np.dtype], dict[str, Any]] | None = None


def numpy_on_first_use(namespace: dict[str, Any], name: str = "np") -> Any:
    """A stand-in for numpy in an op module's `namespace`, bound to `name`: the first use
    imports numpy and puts it in the stand-in's place, so an op module costs the command
    line's start-up (which reads every op's declaration) no numpy import. Use it as
    `np = numpy_on_first_use(globals())`, with `import numpy as np` under TYPE_CHECKING,
    and use numpy inside functions only, not at the module's top level."""

    class _Numpy:
        def __getattr__(self, attribute: str) -> Any:
            import numpy

            namespace[name] = numpy
            return getattr(numpy, attribute)

    return _Numpy()
