"""Click parameter types for the option values cumtool knows in advance: `--help` and
shell completion list them, and a wrong one stops the command line before any file is
opened, with cumtool's own one-line message (formats/__init__.py, choices.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from cumtool.choices import AXIS_NAMES, DTYPE_CHOICES, TORCH_NAMES, check_axis, dtype_name
from cumtool.errors import UsageError

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


class OptionValueError(click.ClickException):
    """A wrong option value, shown like cumtool's other usage errors: one `Error:` line
    whose message names the option, and status 2."""

    exit_code = 2


class CheckedChoice(click.Choice):
    """A closed set of values, listed by `--help` and completion, checked by `check`: it
    returns the value to use or raises cumtool's UsageError, whose message is kept."""

    def __init__(self, choices: Sequence[str], check: Callable[[str], str]) -> None:
        super().__init__(choices, case_sensitive=False)
        self.check = check

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        try:
            return self.check(str(value))
        except UsageError as error:
            raise OptionValueError(error.cli_message()) from None


def _dtype(name: str) -> str:
    dtype_name(name)  # raises UsageError; the engine maps the name as given (kernels.py)
    return name


class DtypeChoice(CheckedChoice):
    """`--dtype`: numpy's names and torch's other spellings. `float` and `int` are not
    among them: they are refused as ambiguous, naming both widths. torch's own names
    (`torch.float32`) are accepted too, and completed once `torch.` is begun."""

    def __init__(self) -> None:
        super().__init__(DTYPE_CHOICES, _dtype)

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        typed = incomplete.lower()
        names = DTYPE_CHOICES
        if typed and ("torch.".startswith(typed) or typed.startswith("torch.")):
            names = TORCH_NAMES
        return [CompletionItem(name) for name in names if name.startswith(typed)]


class AxisType(click.ParamType):
    """`--axis`: a word (rows, index, columns) or any integer; the input decides later
    whether it has that axis. Completion offers the words."""

    name = "axis"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None
                    ) -> str | None:
        return "[" + "|".join(AXIS_NAMES) + "|N]"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        try:
            return check_axis(str(value))
        except UsageError as error:
            raise OptionValueError(error.cli_message()) from None

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(word) for word in AXIS_NAMES
                if word.startswith(incomplete.lower())]


class IntRange(click.IntRange):
    """Click's, but text that is no number is "not a valid integer", as an op's integer
    option says it, not "not a valid integer range"."""

    name = "integer"


class FloatRange(click.FloatRange):
    """Click's, but text that is no number is "not a valid float", as an op's float
    option says it, not "not a valid float range"."""

    name = "float"
