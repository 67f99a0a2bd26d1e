"""How messages list a header's columns."""

from __future__ import annotations


def test_a_long_header_is_listed_by_its_first_names_and_a_count(invoke, write_file):
    """A file of 100,000 columns gave an error line of over 500 kB."""
    names = [f"c{i}" for i in range(60)]
    path = write_file("a.csv", ",".join(names) + "\n" + ",".join(["x"] * 60) + "\n")
    result = invoke("cumsum", str(path), "-c", "nosuch")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: no column 'nosuch'; columns: "
                             + ", ".join(names[:50]) + " and 10 more\n")
    result = invoke("cumsum", str(path))
    assert result.stderr == (f"Error: {path}: no numeric columns to scan; columns: "
                             + ", ".join(names[:50]) + " and 10 more\n")
