"""How one stream of values is scanned (ScanSpec), and what a running statistic's kernel
provides (StatKernel). Importable without numpy: the op modules, which the command line
reads at start-up, define their kernels on these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    import numpy as np

Overflow = Literal["error", "wrap"]
# The float (or complex) type a float of each type accumulates in, by numpy's type code.
_WIDER = {"e": "f", "f": "d", "d": "d", "F": "D", "D": "D"}


def wider_float(dtype: np.dtype) -> np.dtype:
    """The float (or complex) a float of `dtype` accumulates in: the next wider one."""
    import numpy as np

    return np.dtype(_WIDER[np.dtype(dtype).newbyteorder("=").char])

# A block's states: one contiguous array per field of the state (a record array would
# make every pass over a field strided, and the statistics several times slower).
States = dict[str, "np.ndarray"]


@dataclass(frozen=True)
class ScanSpec:
    """How to scan one stream of values: the op and the three dtypes involved."""

    op: str
    source_dtype: np.dtype  # as read
    in_dtype: np.dtype  # after the --dtype cast: what the scan sees
    acc_dtype: np.dtype  # the running value
    out_dtype: np.dtype
    overflow: Overflow = "error"
    skipna: bool = False
    indices: bool = False
    exclusive: bool = False  # out[i] covers the elements before i only
    # The op's own parameters (its Op.parameters, by name): cumvar's ddof, ewma's com and
    # adjust, cumsum's and cummean's compensated. A tuple of (name, value): hashable.
    params: tuple[tuple[str, Any], ...] = ()
    # How it is scanned, from the op's declaration (kernels.make_spec sets it): a
    # StatKernel where stats.py scans it, else the Accumulator kernels.py accumulates.
    kernel: StatKernel | Accumulator | None = field(default=None, compare=False, repr=False)

    def param(self, name: str) -> Any:
        """The value of one of the op's parameters."""
        for key, value in self.params:
            if key == name:
                return value
        raise KeyError(f"{self.op} has no parameter {name!r}")

    @property
    def identity(self) -> np.generic:
        """The running state before any element (a record of several for stats.py's ops:
        count 0, sums and means +0.0)."""
        import numpy as np

        if isinstance(self.kernel, StatKernel):
            start: np.generic = np.zeros(1, dtype=self.kernel.state_dtype(self))[0]
            return start
        return self.accumulator.identity(self.acc_dtype)

    @property
    def is_stat(self) -> bool:
        """Whether stats.py scans this (its ops, and cumsum with --compensated)."""
        return isinstance(self.kernel, StatKernel)

    @property
    def accumulator(self) -> Accumulator:
        """The op's Accumulator, for kernels.py's scans."""
        assert isinstance(self.kernel, Accumulator), f"{self.op} has no accumulator"
        return self.kernel

    @property
    def state_dtype(self) -> np.dtype:
        """The dtype of the carried running state."""
        if self.is_stat:
            return self.identity.dtype
        return self.acc_dtype


class Accumulator:
    """How an accumulating op (cumsum, cumprod, cummax, cummin, logcumsumexp) scans:
    kernels.py accumulates its numpy ufunc down each line from its identity, in the
    dtypes its rule gives (SEMANTICS.md's dtype table). An op module defines one and
    declares it as its Op's accumulator."""

    ufunc: ClassVar[str]  # numpy's name: add, multiply, maximum, minimum, logaddexp
    # The C loop of _sequential.c that runs it (float64 lines, groups): "sum", "product".
    native: ClassVar[str | None] = None
    # numpy's comparison that says an element takes over the running value (ties to the
    # latest): an op that keeps the position its value came from (cummax, cummin).
    takes_over: ClassVar[str | None] = None
    # A 0-d array comes out as it went in (cast to the output dtype), as torch returns it.
    zero_d_unchanged: ClassVar[bool] = True

    def identity(self, dtype: np.dtype) -> np.generic:
        """The value that changes nothing: the running value before any element."""
        raise NotImplementedError

    def dtypes(self, op: str, in_dtype: np.dtype, cast_given: bool, what: str
               ) -> tuple[np.dtype, np.dtype]:
        """(accumulator dtype, output dtype) for input of `in_dtype` (`cast_given`: by
        --dtype); raises UsageError or DataError naming `op` and `what` where the op is
        not defined for it."""
        raise NotImplementedError


class StatKernel:
    """How a running statistic scans (cumtool.stats drives it): its state, its dtypes,
    how a block's states follow from the carried one, and its output. An op module
    defines one and declares it as its Op's kernel; the module imports numpy on first use
    (decl.numpy_on_first_use), so declaring a kernel costs the command line nothing."""

    name: ClassVar[str]
    # --exclusive: where nothing comes before (count 0), the output is a missing cell
    missing_before_first: ClassVar[bool] = True
    complex_ok: ClassVar[bool] = False  # False: complex input is refused, naming the op

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        raise NotImplementedError

    def acc_dtype(self, in_dtype: np.dtype) -> np.dtype:
        """The dtype the scan computes in: int64 for integers, else float64."""
        import numpy as np

        return np.dtype(np.int64 if in_dtype.kind in "biu" else np.float64)

    def out_dtype(self, in_dtype: np.dtype, cast_given: bool) -> np.dtype:
        import numpy as np

        return np.dtype(np.float64)

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        """The state after each element (an array shaped like x per field); `count` is
        the running number of present values, already computed."""
        raise NotImplementedError

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        raise NotImplementedError
