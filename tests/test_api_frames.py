"""cumtool.scan on DataFrames: anything with `__arrow_c_stream__` goes in, read without a
copy; polars and pandas DataFrames come back as such, other streams as a pyarrow Table."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import cumtool


def test_polars_in_polars_out():
    frame = pl.DataFrame({"store": ["n", "s", "n", "s"], "units": [1, 10, None, 30],
                          "price": [0.5, 1.0, 1.5, 2.0]})
    out = cumtool.scan(frame, "cumsum", by="store")
    assert isinstance(out, pl.DataFrame)
    assert out.schema == pl.Schema({"store": pl.String, "units": pl.Int64,
                                    "price": pl.Float64})
    assert out.to_dict(as_series=False) == {"store": ["n", "s", "n", "s"],
                                            "units": [1, 10, None, 40],
                                            "price": [0.5, 1.0, 2.0, 3.0]}


def test_polars_columns_that_are_not_scanned_are_not_copied():
    frame = pl.DataFrame({"w": [1.0, 2.0, 3.0], "v": [1, 2, 3]})
    out = cumtool.scan(frame, "cumsum", columns=["w"])
    address = frame["v"].to_numpy().__array_interface__["data"][0]
    assert out["v"].to_numpy().__array_interface__["data"][0] == address
    assert out["w"].to_list() == [1.0, 3.0, 6.0]


def test_pandas_in_pandas_out_keeps_the_index():
    frame = pd.DataFrame({"units": [3, 4, 5], "name": ["a", "b", "c"]},
                         index=pd.Index([10, 20, 30], name="row"))
    out = cumtool.scan(frame, "cummax", keep=True)
    assert isinstance(out, pd.DataFrame)
    assert list(out.index) == [10, 20, 30] and out.index.name == "row"
    assert out.to_dict("list") == {"units": [3, 4, 5], "name": ["a", "b", "c"],
                                   "units_cummax": [3, 4, 5]}
    assert out["units_cummax"].dtype == np.dtype("int64")


def test_a_pyarrow_reader_gives_a_table():
    table = pa.table({"x": [1, 2, 3], "s": ["a", "b", "c"]})
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=1))
    out = cumtool.scan(reader, "cumprod", reverse=True)
    assert isinstance(out, pa.Table)
    assert out.to_pydict() == {"x": [6, 6, 3], "s": ["a", "b", "c"]}


def test_a_duckdb_relation_gives_a_table():
    import duckdb
    relation = duckdb.sql("select range::BIGINT as n from range(1, 5)")
    out = cumtool.scan(relation, "cumsum")
    assert isinstance(out, pa.Table)
    assert out.column("n").to_pylist() == [1, 3, 6, 10]


@pytest.mark.parametrize("series, kind", [
    pytest.param(lambda: pl.Series("a", [1, 2, 3]), pl.Series, id="polars"),
    pytest.param(lambda: pd.Series([1, 2, 3], index=[5, 6, 7]), pd.Series, id="pandas")])
def test_a_series_comes_back_as_a_series_of_its_library(series, kind):
    given = series()
    out = cumtool.scan(given, "cumsum")
    assert isinstance(out, kind)
    assert out.to_list() == [1, 3, 6]
    assert out.name == given.name
    if kind is pd.Series:
        assert out.index.tolist() == [5, 6, 7]


def test_errors_name_the_table_column():
    frame = pl.DataFrame({"n": ["a", "b"]})
    with pytest.raises(cumtool.DataError, match="column 'n' is not numeric"):
        cumtool.scan(frame, "cumsum", columns=["n"])


def test_overflow_in_a_frame_is_a_scan_overflow_error():
    frame = pl.DataFrame({"n": pl.Series([100, 100], dtype=pl.Int8)})
    with pytest.raises(cumtool.ScanOverflowError, match="row 2"):
        cumtool.scan(frame, "cumsum", dtype="int8")


def test_numpy_input_imports_neither_polars_nor_pandas():
    code = ("import sys\nimport numpy as np\nimport cumtool\n"
            "cumtool.scan(np.arange(4), 'cumsum')\n"
            "print('polars' in sys.modules, 'pandas' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False False"


# Files, Series, and misuse: the API is one more front end of the CLI's readers --------------

def test_a_csv_path_is_read_as_the_cli_reads_it(tmp_path):
    import pyarrow as pa

    import cumtool

    path = tmp_path / "sales.csv"
    path.write_text("code,units,name\n007,3,a\n008,NA,b\n009,4,c\n")
    table = cumtool.scan(str(path), "cumsum")
    code = table.schema.field("code").type
    assert pa.types.is_string(code) or pa.types.is_large_string(code)  # a code stays text
    assert table.column("code").to_pylist() == ["007", "008", "009"]
    assert table.column("units").to_pylist() == [3, None, 7]  # NA is missing
    assert cumtool.scan(path, "cumsum").equals(table)  # an os.PathLike too
    with open(path, "rb") as stream:
        assert cumtool.scan(stream, "cumsum").equals(table)


def test_to_asks_for_polars_or_pandas(tmp_path):
    import pandas as pd
    import polars as pl

    import cumtool

    path = tmp_path / "t.csv"
    path.write_text("x\n1\n2\n")
    frame = cumtool.scan(str(path), "cumsum", to="polars")
    assert isinstance(frame, pl.DataFrame) and frame["x"].to_list() == [1, 3]
    assert cumtool.scan(str(path), "cumsum", to="pandas").equals(pd.DataFrame({"x": [1, 3]}))
    with pytest.raises(cumtool.UsageError, match="to= must be 'arrow', 'polars' or 'pandas'"):
        cumtool.scan(str(path), "cumsum", to="excel")


def test_a_npy_path_gives_an_array(tmp_path):
    import cumtool

    np.save(tmp_path / "a.npy", np.array([1, 2, 3], dtype=np.int16))
    result = cumtool.scan(str(tmp_path / "a.npy"), "cumsum")
    assert result.dtype == np.int64 and result.tolist() == [1, 3, 6]


def test_a_missing_file_is_a_data_error(tmp_path):
    import cumtool

    with pytest.raises(cumtool.DataError, match="no such file"):
        cumtool.scan(str(tmp_path / "nope.csv"), "cumsum")


def test_a_series_is_a_one_column_table_of_its_library():
    import pandas as pd
    import polars as pl

    import cumtool

    result = cumtool.scan(pl.Series("x", [1, None, 3]), "cumsum")
    assert isinstance(result, pl.Series)
    assert (result.name, result.to_list()) == ("x", [1, None, 4])
    assert result.to_list() == cumtool.scan(pl.DataFrame({"x": [1, None, 3]}),
                                            "cumsum")["x"].to_list()
    floats = pd.Series([1.0, float("nan"), 3.0], name="x")
    result = cumtool.scan(floats, "cumsum")
    assert isinstance(result, pd.Series)
    assert result.name == "x"
    assert result.equals(cumtool.scan(floats.to_frame(), "cumsum")["x"])


def test_a_request_built_by_hand_with_text_columns_is_a_usage_error():
    from cumtool.engine import Request, run
    from cumtool.errors import UsageError

    with pytest.raises(UsageError, match=r"Request\(by=\.\.\.\) takes a tuple"):
        run(Request("cumsum", "x.csv", by="store"))  # type: ignore[arg-type]


def test_polars_text_columns_as_views_reverse_and_group():
    """polars hands its text over as string views, which Arrow's take and sets do not
    know: reversed, grouped and counted runs read them as text (they crashed with
    ArrowNotImplementedError)."""
    frame = pl.DataFrame({"city": ["Oslo", "Lima", "Oslo", None, "Lima"],
                          "tags": [["a"], [], None, ["b", "c"], ["d"]],
                          "n": [1, 2, 3, 4, 5]})
    assert pa.RecordBatchReader.from_stream(frame).schema.field("city").type == pa.string_view()
    back = cumtool.scan(frame, "cumsum", reverse=True)
    assert back.to_dict(as_series=False) == {"city": ["Oslo", "Lima", "Oslo", None, "Lima"],
                                             "tags": [["a"], [], None, ["b", "c"], ["d"]],
                                             "n": [15, 14, 12, 9, 5]}
    grouped = cumtool.scan(frame, "cumsum", by="city", reverse=True, columns=["n"])
    assert grouped["n"].to_list() == [4, 7, 3, 4, 5]
    counted = cumtool.scan(frame, "cumnunique", columns=["city"], reverse=True)
    assert counted["city"].to_list() == [2, 2, 2, None, 1]  # a missing cell: missing


def test_pandas_nullable_columns_come_back_in_the_results_types():
    """A pandas nullable column (Int64, UInt8) whose results are floats comes back
    Float64, missing cells <NA>: the frame's own dtypes made cummean Int64 (1.5 was a
    crash, ArrowInvalid, and 2.0 came back 2)."""
    frame = pd.DataFrame({"a": pd.array([1, None, 4], dtype="Int64"),
                          "c": pd.array([1, 2, 4], dtype="UInt8"), "i": [1, 2, 3]},
                         index=pd.Index(["x", "y", "z"], name="id"))
    mean = cumtool.scan(frame, "cummean")
    assert dict(mean.dtypes) == {"a": pd.Float64Dtype(), "c": pd.Float64Dtype(),
                                 "i": np.dtype("float64")}
    assert mean["a"].tolist() == [1.0, pd.NA, 2.5]
    assert mean["c"].tolist() == [1.0, 1.5, 7 / 3]
    assert list(mean.index) == ["x", "y", "z"] and mean.index.name == "id"
    share = cumtool.scan(frame, "cumsum", share=True, columns=["a"])
    assert share["a"].tolist() == [0.2, pd.NA, 1.0]
    sums = cumtool.scan(frame, "cumsum")  # integers stay nullable integers
    assert dict(sums.dtypes) == {"a": pd.Int64Dtype(), "c": pd.Int64Dtype(),
                                 "i": np.dtype("int64")}
    assert sums["a"].tolist() == [1, pd.NA, 5]


def test_cumnunique_of_pandas_text_is_int64_not_text():
    """pandas 3's default `str` dtype was put back on the counts: '1', '2', '2'."""
    out = cumtool.scan(pd.DataFrame({"s": ["a", "b", "a"], "t": ["x", None, "x"]}),
                       "cumnunique", columns=["s", "t"])
    assert out["s"].dtype == np.dtype("int64") and out["s"].tolist() == [1, 2, 2]
    # Not a nullable column (pandas' str holds NaN): its missing count is NaN.
    assert out["t"].dtype == np.dtype("float64")
    assert out["t"].isna().tolist() == [False, True, False] and out["t"][2] == 1


def test_columns_added_for_nullable_columns_are_nullable():
    """They came back float64 with NaN: only the columns of the input were fitted."""
    frame = pd.DataFrame({"b": pd.array([1, None, 3], dtype="Int64"),
                          "f": pd.array([1.5, None, 0.5], dtype="Float64"),
                          "n": [3, 1, 2]})
    out = cumtool.scan(frame, "cumsum,cummax", indices=True)
    assert dict(out.dtypes.astype(str)) == {
        "b": "Int64", "f": "Float64", "n": "int64",
        "b_cumsum": "Int64", "b_cummax": "Int64", "b_cummax_index": "Int64",
        "f_cumsum": "Float64", "f_cummax": "Float64", "f_cummax_index": "Int64",
        "n_cumsum": "int64", "n_cummax": "int64", "n_cummax_index": "int64"}
    assert out["b_cumsum"].tolist() == [1, pd.NA, 4]
    assert out["b_cummax_index"].tolist() == [0, pd.NA, 2]
    kept = cumtool.scan(frame[["b"]], "cummean", keep=True)
    assert kept.dtypes.astype(str).tolist() == ["Int64", "Float64"]
    assert kept["b_cummean"].tolist() == [1.0, pd.NA, 2.0]
    indexed = cumtool.scan(frame[["b"]], "cummax", indices=True)
    assert indexed.dtypes.astype(str).tolist() == ["Int64", "Int64"]
    assert indexed["b_index"].tolist() == [0, pd.NA, 2]


def test_a_pandas_frame_labelled_by_numbers_gains_named_columns():
    """pd.DataFrame(array)'s columns are 0, 1: pandas read '0_cumsum' as such a label, a
    raw ValueError. The labels stay; the added columns are named as for text labels."""
    frame = pd.DataFrame(np.array([[1, 2], [3, 4]]), index=[7, 8])
    frame.columns.name = "lab"
    out = cumtool.scan(frame, "cumsum", keep=True)
    assert out.columns.tolist() == [0, 1, "0_cumsum", "1_cumsum"]
    assert out.columns.name == "lab" and out.index.tolist() == [7, 8]
    assert out[0].tolist() == [1, 3] and out["1_cumsum"].tolist() == [2, 6]
    assert cumtool.scan(frame, "cummax", indices=True).columns.tolist() == [
        0, "0_index", 1, "1_index"]
    assert cumtool.scan(frame, "cumsum").columns.tolist() == [0, 1]  # as before
    tuples = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "x"),
                                                                      ("a", "y")]))
    assert cumtool.scan(tuples, "cumsum", keep=True).columns.tolist() == [
        ("a", "x"), ("a", "y"), "('a', 'x')_cumsum", "('a', 'y')_cumsum"]


@pytest.mark.parametrize("keywords, expected", [
    ({"op": "cumsum", "keep": True}, {"q": [1, 3, 2], "q_cumsum": [1, 4, 6]}),
    ({"op": "cumsum,cummax"}, {"q": [1, 3, 2], "q_cumsum": [1, 4, 6], "q_cummax": [1, 3, 3]}),
    ({"op": "cummax", "indices": True}, {"q": [1, 3, 3], "q_index": [0, 1, 1]}),
], ids=["keep", "several-ops", "indices"])
@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_a_series_with_more_than_one_result_column_gives_a_frame(library, keywords,
                                                                 expected):
    """Such a Series came back as its first column: the input given back (keep, several
    ops) or the values without their indices."""
    if library == "pandas":
        out = cumtool.scan(pd.Series([1, 3, 2], name="q", index=[5, 6, 7]), **keywords)
        assert isinstance(out, pd.DataFrame) and out.index.tolist() == [5, 6, 7]
        assert out.to_dict("list") == expected
    else:
        out = cumtool.scan(pl.Series("q", [1, 3, 2]), **keywords)
        assert isinstance(out, pl.DataFrame)
        assert out.to_dict(as_series=False) == expected
    assert all(str(dtype).lower() == "int64" for dtype in out.dtypes)


def test_an_unnamed_pandas_series_with_indices_is_labelled_as_to_frame_labels_it():
    """It was a raw ValueError: pandas read '0_index' as a label like to_frame()'s 0."""
    out = cumtool.scan(pd.Series([1, 3, 2]), "cummax", indices=True)
    assert out.columns.tolist() == [0, "0_index"]
    assert out[0].tolist() == [1, 3, 3] and out["0_index"].tolist() == [0, 1, 1]


@pytest.mark.parametrize("series", [lambda: pd.Series([1, 2]), lambda: pl.Series([1, 2])],
                         ids=["pandas", "polars"])
def test_to_on_a_series_is_refused_as_on_a_frame(series):
    """It was ignored: a pandas Series came back with to='polars'."""
    with pytest.raises(cumtool.UsageError) as caught:
        cumtool.scan(series(), "cumsum", to="polars")
    assert str(caught.value) == "to= is for files (a path, a URL or a binary file object)"


def test_cumnunique_of_polars_categorical_and_enum_columns():
    """Their Arrow dictionaries hold string views, which were not unwrapped: a raw
    ArrowNotImplementedError from array_take."""
    frame = pl.DataFrame({"c": pl.Series(["a", "b", "a", None], dtype=pl.Categorical),
                          "e": pl.Series(["a", "b", "a", "b"], dtype=pl.Enum(["a", "b"])),
                          "x": [1, 2, 3, 4]})
    out = cumtool.scan(frame, "cumnunique", columns=["c", "e"])
    assert out.schema == pl.Schema({"c": pl.Int64, "e": pl.Int64, "x": pl.Int64})
    assert out.to_dict(as_series=False) == {"c": [1, 2, 2, None], "e": [1, 2, 2, 2],
                                            "x": [1, 2, 3, 4]}
    passed = cumtool.scan(frame, "cumsum")  # not scanned: they come back as they were
    assert passed.schema["c"] == pl.Categorical and passed.schema["e"] == pl.Enum(["a", "b"])
    assert passed["c"].to_list() == ["a", "b", "a", None]


def test_a_pandas_frame_with_a_repeated_column_name_is_a_data_error_naming_it():
    """It was pyarrow's bare ValueError, "Duplicate column names found"."""
    frame = pd.DataFrame([[1, 2, 3]], columns=["a", "b", "a"])
    with pytest.raises(cumtool.DataError) as caught:
        cumtool.scan(frame, "cumsum")
    assert str(caught.value) == ("the DataFrame has more than one column named 'a', which "
                                 "pandas cannot hand over to Arrow; rename them first")


@pytest.mark.parametrize("given, error, message", [
    (lambda: pl.LazyFrame({"a": [1, 2]}), cumtool.UsageError,
     "a polars LazyFrame is a query, not a table: give its collect()"),
    (lambda: pl.DataFrame({"a": pl.Series([1, 2], dtype=pl.Int128)}), cumtool.DataError,
     "the DataFrame cannot be handed over to Arrow: Invalid or unsupported format string: "
     "'_pli128'; cast the columns of types Arrow has not (polars' Int128) first"),
    (lambda: pd.DataFrame({"a": pd.Series([1, "x"], dtype=object)}), cumtool.DataError,
     "the DataFrame cannot be handed over to Arrow: Could not convert 'x' with type str: "
     "tried to convert to int64; Conversion failed for column a with type object"),
], ids=["lazyframe", "int128", "pandas-mixed-objects"])
def test_frames_arrow_cannot_read_are_said_so(given, error, message):
    """They were a message about numpy's Python objects, or polars' own raw error."""
    with pytest.raises(error) as caught:
        cumtool.scan(given(), "cumsum")
    assert str(caught.value) == message
