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


@dataclass(frozen=True)
class Option:
    """One option of some ops: the CLI flag, the `cumtool.scan` keyword (and Request
    field) it sets, and what it means."""

    flag: str  # "--span"
    help: str  # the CLI's --help line
    type: type = bool  # int, float, or bool: an on/off flag
    metavar: str | None = None
    keyword: str = ""  # the API keyword; "" : the flag's name ("--span": span)
    default: Any = None  # the keyword's value when not given
    negates: bool = False  # a flag that turns its keyword off: --no-adjust is adjust=False
    # The keyword's value from the flag's text, where Click's type does not make it
    # (--halflife: a number of rows, or a duration with --times).
    parse: Callable[[Any], Any] | None = None

    @property
    def name(self) -> str:
        return self.keyword or self.flag.removeprefix("--").replace("-", "_")

    @property
    def is_flag(self) -> bool:
        return self.type is bool

    def given(self, value: Any) -> bool:
        return value != self.default

    def from_cli(self, value: Any) -> Any:
        """The keyword's value from the parsed flag (Click's value: None or the flag's)."""
        if self.is_flag:
            return not value if self.negates else bool(value)
        if value is not None and self.parse is not None:
            return self.parse(value)
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
