"""An independent, deliberately slow and simple reference of SEMANTICS.md, for tests.

Written from the contract, not from cumtool: every line along the axis is walked one
element at a time with Python scalars, the running value held in the contract's wide
accumulator (float16 -> float32, float32 -> float64, complex64 -> complex128, integers
-> exact Python ints checked against int64), and rounded once into the output dtype.
Nothing here imports cumtool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from helpers import int_fits as _int_fits
from helpers import log_add_exp as _log_add_exp
from helpers import wrap_int as _wrap

OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")

_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_C64, _C128 = np.dtype(np.complex64), np.dtype(np.complex128)
_I64 = np.dtype(np.int64)
_WIDE = {_F16: _F32, _F32: _F64, _F64: _F64, _C64: _C128, _C128: _C128}
# Above this magnitude a float -> int cast is not two's complement in torch or numpy
# (C leaves it undefined); the contract cannot ask for a value there, so neither do we.
FLOAT_TO_INT_WRAP_LIMIT = 2**31


class ReferenceOverflow(Exception):
    """The contract says this input is an error: an integer (or uint64 >= 2**63, or
    NaN/inf cast to an integer) that does not fit, with overflow="error"."""


class Undefined(Exception):
    """The contract refuses this combination (cummax of complex, logcumsumexp cast to an
    integer dtype), or leaves the value undefined."""


@dataclass
class Expected:
    values: np.ndarray  # output dtype, input shape
    indices: np.ndarray | None  # int64, -1 where the cell was skipped
    skipped: np.ndarray  # bool: missing cells, and NaN cells under skipna


def output_dtype(op: str, source: np.dtype, cast: np.dtype | None = None) -> np.dtype:
    """The contract's table "Output dtype"; `cast` is --dtype."""
    source = np.dtype(source)
    if cast is not None:
        cast = np.dtype(cast)
        if op == "logcumsumexp" and cast.kind not in "fc":
            raise Undefined("logcumsumexp needs a floating or complex --dtype")
        if op in ("cummax", "cummin") and cast.kind == "c":
            raise Undefined(f"{op} is not defined for complex")
        return cast
    if op in ("cummax", "cummin"):
        if source.kind == "c":
            raise Undefined(f"{op} is not defined for complex")
        return source
    if source.kind in "biu":
        return _F64 if op == "logcumsumexp" else _I64
    return source


def _cast_element(value: object, target: np.dtype, overflow: str) -> object:
    """One element of the --dtype cast, as a Python/numpy scalar of `target`."""
    if target.kind in "iu":
        if isinstance(value, (complex, np.complexfloating)):
            value = value.real
        if isinstance(value, (float, np.floating)):
            number = float(value)
            if not math.isfinite(number):
                raise ReferenceOverflow(f"{number} cannot be cast to {target}")
            whole = math.trunc(number)
            if _int_fits(whole, target):
                return whole
            if overflow == "error":
                raise ReferenceOverflow(f"{number} does not fit {target}")
            if abs(whole) >= FLOAT_TO_INT_WRAP_LIMIT:
                raise Undefined(f"float {number} cast to {target} is not defined")
            return _wrap(whole, target)
        whole = int(value)  # type: ignore[call-overload]
        if _int_fits(whole, target):
            return whole
        if overflow == "error":
            raise ReferenceOverflow(f"{whole} does not fit {target}")
        return _wrap(whole, target)
    if target.kind == "f" and isinstance(value, (complex, np.complexfloating)):
        value = value.real
    with np.errstate(all="ignore"):
        # Rounding a single number to a float type is IEEE round-to-nearest: no library
        # policy in it (a finite value too large for the target becomes inf, as in torch).
        return np.array([value]).astype(target)[0]


def _complex_log_add_exp(x: complex, y: complex) -> complex:
    """torch's complex log-add-exp: order by real part, -inf identity, NaN spreads."""
    x, y = np.complex128(x), np.complex128(y)
    if np.isnan(y.real) or np.isnan(y.imag):
        return complex(math.nan, math.nan)
    if np.isnan(x.real) or np.isnan(x.imag):
        return complex(math.nan, math.nan)
    low, high = (x, y) if x.real < y.real else (y, x)
    with np.errstate(all="ignore"):
        if not math.isfinite(low.real) and low.real == high.real:
            if low.real < 0:
                return complex(low)
            return complex(np.log(np.exp(low) + np.exp(high)))
        return complex(np.log1p(np.exp(low - high)) + high)


def _scan_line(values: list[object], skip: list[bool], op: str, in_dtype: np.dtype,
               out_dtype: np.dtype, overflow: str, from_uint64: bool
               ) -> tuple[list[object], list[int]]:
    """One line along the axis: outputs (Python scalars) and cummax/cummin indices."""
    outs: list[object] = []
    positions: list[int] = []
    kind = in_dtype.kind
    if op in ("cummax", "cummin"):
        current: object = None
        at = -1
        for i, (x, skipped) in enumerate(zip(values, skip, strict=True)):
            if not skipped:
                is_nan = kind == "f" and math.isnan(float(x))  # type: ignore[arg-type]
                current_nan = (current is not None and kind == "f"
                               and math.isnan(float(current)))  # type: ignore[arg-type]
                if current is None or is_nan:
                    take = True
                elif current_nan:
                    take = False
                elif op == "cummax":
                    take = x >= current  # type: ignore[operator]
                else:
                    take = x <= current  # type: ignore[operator]
                if take:
                    current, at = x, i
            outs.append(x if skipped else current)
            positions.append(-1 if skipped else at)
        return outs, positions

    if kind in "biu" and op != "logcumsumexp":
        running = 0 if op == "cumsum" else 1
        for x, skipped in zip(values, skip, strict=True):
            if not skipped:
                term = int(x)  # type: ignore[call-overload]
                if from_uint64 and term > int(np.iinfo(np.int64).max) and overflow == "error":
                    raise ReferenceOverflow(f"uint64 value {term} overflows int64")
                running = running + term if op == "cumsum" else running * term
                if overflow == "error" and not (_int_fits(running, _I64)
                                                and _int_fits(running, out_dtype)):
                    raise ReferenceOverflow(f"{op} reaches {running}")
            outs.append(_wrap(running, out_dtype) if not skipped else 0)
        return outs, positions

    # Floating and complex arithmetic in the accumulator type, rounded once per element.
    acc = _F64 if kind in "biu" else _WIDE[in_dtype]
    if op == "cumsum":
        running_acc = acc.type(0.0)  # +0.0: [-0.0] sums to 0.0
    elif op == "cumprod":
        running_acc = acc.type(1.0)
    else:
        running_acc = acc.type(-math.inf)
    for x, skipped in zip(values, skip, strict=True):
        if not skipped:
            with np.errstate(all="ignore"):
                term = acc.type(x)
                if op == "cumsum":
                    running_acc = acc.type(running_acc + term)
                elif op == "cumprod":
                    running_acc = acc.type(running_acc * term)
                elif acc.kind == "c":
                    running_acc = acc.type(_complex_log_add_exp(complex(term),
                                                                complex(running_acc)))
                else:
                    running_acc = acc.type(_log_add_exp(float(term), float(running_acc)))
        with np.errstate(all="ignore"):
            outs.append(out_dtype.type(running_acc) if not skipped else x)
    return outs, positions


def reference_scan(
    data: object, op: str, axis: int = 0, dtype: np.dtype | str | None = None, *,
    overflow: str = "error", skipna: bool = False, valid: np.ndarray | None = None,
) -> Expected:
    """What SEMANTICS.md says `op` gives on `data` along `axis`.

    `valid` marks present cells (tables: False is an empty CSV field or a Parquet null).
    Raises ReferenceOverflow where the contract reports an error, Undefined where it
    refuses the combination.
    """
    if op not in OPS:
        raise Undefined(f"unknown op {op}")
    x = np.asarray(data)
    if not x.dtype.isnative:  # byte order is the file's business: results are native
        x = x.astype(x.dtype.newbyteorder("="))
    cast = None if dtype is None else np.dtype(dtype)
    out_dtype = output_dtype(op, x.dtype, cast)
    in_dtype = cast if cast is not None else x.dtype
    present = np.ones(x.shape, bool) if valid is None else np.asarray(valid, bool)

    if x.ndim == 0:
        # A 0-d array is returned unchanged in the output dtype (torch copies it: no +0.0
        # start, no 1 * x), though a value that cannot be scanned is still an error; an
        # integer result is the one-element scan's (wrap-around included).
        one = reference_scan(x.reshape(1), op, 0, cast, overflow=overflow, skipna=skipna)
        values = one.values.reshape(())
        if out_dtype.kind in "fc":
            value = x[()] if cast is None else _cast_element(x[()], cast, overflow)
            with np.errstate(all="ignore"):
                values = np.array(value).astype(out_dtype).reshape(())
        indices = None if one.indices is None else one.indices.reshape(())
        return Expected(values, indices, one.skipped.reshape(()))

    axis = axis % x.ndim
    moved = np.moveaxis(x, axis, 0)
    moved_present = np.moveaxis(present, axis, 0)
    n = moved.shape[0]
    width = math.prod(moved.shape[1:])
    lines = moved.reshape(n, width)
    line_present = moved_present.reshape(n, width)
    out = np.empty(lines.shape, out_dtype)
    positions = np.full(lines.shape, -1, np.int64)
    skipped_all = np.zeros(lines.shape, bool)
    for j in range(lines.shape[1]):
        raw = [lines[i, j] for i in range(n)]
        skip = [not bool(line_present[i, j]) for i in range(n)]
        values = [r if s else (_cast_element(r, cast, overflow) if cast is not None else r)
                  for r, s in zip(raw, skip, strict=True)]
        if skipna and in_dtype.kind in "fc":
            skip = [s or bool(np.isnan(v)) for s, v in zip(skip, values, strict=True)]
        line_out, line_pos = _scan_line(values, skip, op, in_dtype, out_dtype, overflow,
                                        x.dtype == np.uint64 and cast is None)
        for i in range(n):
            if skip[i] and not line_present[i, j]:
                out[i, j] = 0  # a missing cell: its value is not part of the contract
            else:
                with np.errstate(all="ignore"):
                    out[i, j] = line_out[i]
        if line_pos:
            positions[:, j] = line_pos
        skipped_all[:, j] = skip
    shape = moved.shape
    values_nd = np.moveaxis(out.reshape(shape), 0, axis)
    indices_nd = (np.moveaxis(positions.reshape(shape), 0, axis)
                  if op in ("cummax", "cummin") else None)
    skipped_nd = np.moveaxis(skipped_all.reshape(shape), 0, axis)
    return Expected(values_nd, indices_nd, skipped_nd)
