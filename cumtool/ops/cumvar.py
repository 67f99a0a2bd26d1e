"""cumvar and cumstd: the running variance (Welford, float64) and its square root."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cumtool.errors import UsageError, option
from cumtool.ops.decl import Op, Option, numpy_on_first_use
from cumtool.ops.spec import StatKernel

if TYPE_CHECKING:
    import numpy as np

    from cumtool.ops.spec import ScanSpec, States

else:
    np = numpy_on_first_use(globals())

DDOF = Option(
    "--ddof", type=int, metavar="N",
    help="cumvar, cumstd: delta degrees of freedom, divide by count - N (N >= 0) "
         "[default: 1]")


def params(given: Mapping[str, Any]) -> dict[str, Any]:
    ddof = 1 if given["ddof"] is None else given["ddof"]
    if ddof < 0:
        raise UsageError(f"{option('ddof', str(ddof))} is out of range: it needs N >= 0")
    # Beyond any count of rows every result is NaN, as at 2**63 - 1, which C loops hold.
    return {"ddof": min(int(ddof), 2**63 - 1)}


def _welford_means(values: list[float], m: float, n: int) -> list[float]:
    means: list[float] = []
    keep = means.append
    for x in values:
        n += 1
        m += (x - m) / n
        keep(m)
    return means


def _welford_means_rows(x: np.ndarray, m: np.ndarray, before: np.ndarray) -> np.ndarray:
    result: np.ndarray = m + (x - m) / (before + 1)
    return result


class CumVar(StatKernel):
    """Welford, the contract's n += 1; d = x - m; m += d / n; M2 += d * (x - m), step by
    step. In C both run in one loop. Without it only the mean needs a loop: the M2 terms
    d * (x - m) are then summed left to right by numpy's accumulate, the same additions."""

    name = "cumvar"

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("m", np.float64), ("m2", np.float64)])

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        from cumtool import native, stats

        states = stats.blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        x = stats.as_float64(x)
        with np.errstate(all="ignore"):
            if native.SEQUENTIAL is not None:
                block, mask, flat = stats.as_lines(x, present, start)
                means, m2 = np.empty(block.shape), np.empty(block.shape)
                native.SEQUENTIAL.welford(block, mask, stats.column_of(flat, "m"),
                                          stats.column_of(flat, "n", np.int64),
                                          stats.column_of(flat, "m2"), means, m2)
                states["m"] = means.reshape(x.shape)
                states["m2"] = m2.reshape(x.shape)
                return states
            means = stats.sequential(x, present, start, count, "m", _welford_means,
                                _welford_means_rows)
            terms = (x - stats.before(start["m"], means)) * (x - means)
            if present is not None:
                terms[~present] = 0.0  # M2 + 0.0 is M2: M2 is never -0.0 (from +0.0)
            terms[:1] += start["m2"][np.newaxis]
            np.add.accumulate(terms, axis=0, out=terms)
        states["m"] = means
        states["m2"] = terms
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        from cumtool import stats

        n = states["n"]
        ddof = spec.param("ddof")
        with np.errstate(divide="ignore", invalid="ignore"):
            var = states["m2"] / stats.by_count(n, lambda c: c - ddof)
        var[stats.by_count(n, lambda c: c <= ddof)] = np.nan
        return var


class CumStd(CumVar):
    name = "cumstd"

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.sqrt(super().output(spec, states))


OPS = (
    Op("cumvar",
       summary="Running variance (Welford, float64): out[i] = var(x[0..i]) with --ddof "
               "(default 1); NaN while the count is at most ddof.",
       short="Running variance (Welford, float64; --ddof, default 1)",
       example="cumtool cumvar sample_data/daily_sales.csv -c revenue --ddof 0",
       options=(DDOF,), params=params, parameters={"ddof": 1}, decimals="float64",
       stat=True, kernel=CumVar()),
    Op("cumstd",
       summary="Running standard deviation: the square root of cumvar (Welford, float64, "
               "--ddof, default 1).",
       short="Running standard deviation: the square root of cumvar",
       example="cumtool cumstd sample_data/daily_sales.csv -c units --by store --keep",
       options=(DDOF,), params=params, parameters={"ddof": 1}, decimals="float64",
       stat=True, kernel=CumStd()),
)
