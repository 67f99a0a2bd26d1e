"""The closed sets of option values that are not format names: the `--dtype` spellings and
the `--axis` words. Plain names and checks, importable without numpy, so the command
line's start-up can list them in `--help` and in shell completion (kernels.py turns a name
into a numpy dtype)."""

from __future__ import annotations

from cumtool.errors import UsageError, option

AXIS_NAMES = {"rows": 0, "index": 0, "columns": 1}  # --axis words; integers work too
OVERFLOW_CHOICES = ("error", "wrap")  # --overflow: integer overflow stops, or wraps as torch

DTYPE_NAMES = (
    "int8", "int16", "int32", "int64", "uint8",
    "float16", "float32", "float64", "complex64", "complex128",
)
# torch's spellings of the same dtypes.
TORCH_ALIASES = {
    "long": "int64", "short": "int16", "half": "float16",
    "double": "float64", "cfloat": "complex64", "cdouble": "complex128",
}
# torch reads these as 32 bits, numpy and pandas users mean 64: refused, naming both.
AMBIGUOUS = {"float": ("float32", "float64"), "int": ("int32", "int64")}
REFUSED_DTYPES = ("bool", "uint16", "uint32", "uint64", "bfloat16")
# What `--dtype` offers: numpy's names, then torch's other spellings of them.
DTYPE_CHOICES = (*DTYPE_NAMES, *TORCH_ALIASES)
# torch's own names (`torch.float` is 32 bits there, so it is not ambiguous).
TORCH_NAMES = tuple(f"torch.{name}" for name in (*DTYPE_CHOICES, *AMBIGUOUS))


def accepted_dtype_names() -> str:
    return ", ".join(DTYPE_CHOICES)


def dtype_name(name: str) -> str:
    """numpy's name for a `--dtype` value (numpy or torch spelling, any case); raises
    UsageError naming what is accepted."""
    key = name.strip().lower()
    if key in AMBIGUOUS:
        torch_means, numpy_means = AMBIGUOUS[key]
        raise UsageError(f"{option('dtype')} {name!r} is ambiguous: torch reads it as "
                         f"{torch_means}, numpy and pandas as {numpy_means}; give the width: "
                         f"{torch_means} or {numpy_means}")
    if key.startswith("torch."):  # torch's own name is not ambiguous: torch.float is 32 bits
        key = key.removeprefix("torch.")
        key = AMBIGUOUS[key][0] if key in AMBIGUOUS else key
    key = TORCH_ALIASES.get(key, key)
    if key in DTYPE_NAMES:
        return key
    why = "is not supported" if key in REFUSED_DTYPES else "is not a dtype"
    raise UsageError(f"{option('dtype')} {name!r} {why}; accepted: {accepted_dtype_names()}")


def check_axis(text: str) -> str:
    """An `--axis` value as given, if it is a word or an integer; whether the input has
    that axis is known only once it is open (engine.py, tables.py)."""
    key = text.strip().lower()
    if key not in AXIS_NAMES:
        try:
            int(key)
        except ValueError:
            raise UsageError(f"{option('axis')} {text!r} is not an axis; use rows (index, 0), "
                             "columns (1), or an integer axis of a .npy array") from None
    return text
