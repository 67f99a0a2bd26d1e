""".npy input read by position."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("reverse", [False, True])
def test_a_file_cut_short_while_it_is_read_is_an_error(tmp_path, reverse):
    """Memory-mapped, the rows past the new end were a SIGBUS: the run died with no word,
    its temporary file left."""
    from cumtool.errors import FormatError
    from cumtool.formats.npy.npy import NpySource

    path = tmp_path / "a.npy"
    np.save(path, np.arange(30_000, dtype=np.float64))
    with open(path, "rb") as stream:
        source = NpySource(stream, str(path), str(path))
        blocks = source.reversed_blocks(10_000) if reverse else source.blocks(10_000)
        first = next(blocks)
        expected = np.arange(20_000, 30_000)[::-1] if reverse else np.arange(10_000)
        assert first.tolist() == expected.tolist()
        with open(path, "r+b") as cut:
            cut.truncate(128 + 8 * 5_000)
        with pytest.raises(FormatError, match=rf"^{path}: \.npy is truncated: it was cut "
                                              r"short while it was read \(no data at byte "):
            list(blocks)


@pytest.mark.parametrize("batch", [[], ["--batch-rows", "1000"]])
def test_a_missing_cell_into_npy_is_named_by_its_row_whatever_the_batches(invoke, write_file,
                                                                          tmp_path, batch):
    """It said `row 37001 of a batch`, and with --batch-rows 1000 `row 1 of a batch`."""
    rows = "".join(f"{'' if i == 37_000 else i},1\n" for i in range(50_000))
    path = write_file("m.csv", "a,b\n" + rows)
    result = invoke("cumsum", str(path), "-o", str(tmp_path / "m.npy"), *batch)
    assert result.exit_code == 1
    assert result.stderr == ("Error: column 'a' has a missing cell at row 37001 of the output, "
                             "which .npy cannot hold; write csv or parquet instead\n")
    assert not (tmp_path / "m.npy").exists()
