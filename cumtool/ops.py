"""The operations cumtool offers, importable without numpy (the CLI's help uses this)."""

from __future__ import annotations

OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
INDEXED = ("cummax", "cummin")  # the ops whose results have a position: --indices

SUMMARIES = {
    "cumsum": "Running sum: out[i] = x[0] + ... + x[i].",
    "cumprod": "Running product: out[i] = x[0] * ... * x[i].",
    "cummax": "Running maximum: out[i] = max(x[0..i]); a NaN wins and stays.",
    "cummin": "Running minimum: out[i] = min(x[0..i]); a NaN wins and stays.",
    "logcumsumexp": "Running log-sum-exp: out[i] = log(exp(x[0]) + ... + exp(x[i])), "
    "computed stably.",
}

EXAMPLES = {
    "cumsum": "cumtool cumsum sample_data/daily_sales.csv -c units,revenue",
    "cumprod": "cumtool cumprod sample_data/cumprod_growth.csv",
    "cummax": "cumtool cummax sample_data/daily_sales.csv -c revenue --indices",
    "cummin": "cumtool cummin sample_data/daily_sales.csv -o lows.parquet",
    "logcumsumexp": "cumtool logcumsumexp sample_data/logcumsumexp_zeros.csv",
}
