"""The Quick start's main job works end to end."""

from conftest import SAMPLE_DATA


def test_cumsum_of_sample_sales_runs(invoke):
    result = invoke("cumsum", str(SAMPLE_DATA / "daily_sales.csv"))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == "date,store,units,revenue"
