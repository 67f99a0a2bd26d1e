"""The operations cumtool offers, importable without numpy (the CLI's help uses this)."""

from __future__ import annotations

TORCH_OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
# Running statistics beyond torch's five (cumtool/stats.py)
STAT_OPS = ("cumcount", "cummean", "cumvar", "cumstd", "ewma", "diff")
OPS = TORCH_OPS + STAT_OPS
INDEXED = ("cummax", "cummin")  # the ops whose results have a position: --indices

# The options that mean something for some ops only, by flag: each is offered (and
# accepted) only when at least one op of the run is listed (SEMANTICS.md).
EWMA_OPTIONS = ("--alpha", "--span", "--com", "--halflife", "--no-adjust")
OPS_OF_OPTION = {
    "--indices": INDEXED,
    "--ddof": ("cumvar", "cumstd"),
    **{flag: ("ewma",) for flag in EWMA_OPTIONS},
    "--compensated": ("cumsum", "cummean"),
}
NO_EXCLUSIVE = ("diff",)  # ops that refuse --exclusive, alone or in a list

SUMMARIES = {
    "cumsum": "Running sum: out[i] = x[0] + ... + x[i].",
    "cumprod": "Running product: out[i] = x[0] * ... * x[i].",
    "cummax": "Running maximum: out[i] = max(x[0..i]); a NaN wins and stays.",
    "cummin": "Running minimum: out[i] = min(x[0..i]); a NaN wins and stays.",
    "logcumsumexp": "Running log-sum-exp: out[i] = log(exp(x[0]) + ... + exp(x[i])), "
    "computed stably.",
    "cumcount": "Running count: out[i] = the number of non-missing values in x[0..i].",
    "cummean": "Running mean: out[i] = (x[0] + ... + x[i]) / cumcount, the sum in float64.",
    "cumvar": "Running variance (Welford, float64): out[i] = var(x[0..i]) with --ddof "
    "(default 1); NaN while the count is at most ddof.",
    "cumstd": "Running standard deviation: the square root of cumvar (Welford, float64, "
    "--ddof, default 1).",
    "ewma": "Exponentially weighted running mean, as pandas' ewm(...).mean(): give one "
    "of --alpha, --span, --com, --halflife.",
    "diff": "Difference from the previous value (the first value itself): the inverse of "
    "cumsum.",
}

EXAMPLES = {
    "cumsum": "cumtool cumsum sample_data/daily_sales.csv -c units,revenue",
    "cumprod": "cumtool cumprod sample_data/cumprod_growth.csv",
    "cummax": "cumtool cummax sample_data/daily_sales.csv -c revenue --indices",
    "cummin": "cumtool cummin sample_data/daily_sales.csv -o lows.parquet",
    "logcumsumexp": "cumtool logcumsumexp sample_data/logcumsumexp_zeros.csv",
    "cumcount": "cumtool cumcount sample_data/daily_sales.csv -c revenue --keep",
    "cummean": "cumtool cummean sample_data/daily_sales.csv -c units --by store --keep",
    "cumvar": "cumtool cumvar sample_data/daily_sales.csv -c revenue --ddof 0",
    "cumstd": "cumtool cumstd sample_data/daily_sales.csv -c units --by store --keep",
    "ewma": "cumtool ewma sample_data/prices.csv -c close --span 3 --keep",
    "diff": "cumtool diff sample_data/cumulative_cases.csv -c cases --by region --keep",
}
