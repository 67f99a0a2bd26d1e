"""The CSV dialect's rules (formats/csv/dialect.py) and their C twin in _csvtext.c."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cumtool.formats.csv import dialect
from cumtool.small import TEXT


@pytest.mark.parametrize(("text", "delimiter", "empty", "written"), [
    ("plain", ",", False, "plain"),
    ("a,b", ",", False, '"a,b"'),
    ("a,b", "\t", False, "a,b"),
    ('say "hi"', ",", False, '"say ""hi"""'),
    ("two\nlines", ",", False, '"two\nlines"'),
    ("cr\r", ";", False, '"cr\r"'),
    ("", ",", False, ""),
    ("", ",", True, '""'),
])
def test_the_quote_rule(text, delimiter, empty, written):
    assert dialect.quote(text, delimiter, empty) == written


@pytest.mark.parametrize(("data", "end"), [
    (b"", -1),
    (b"a,b", -1),
    (b"a,b\n", 4),
    (b"a,b\nc", 4),
    (b'"x\ny"\nz', 6),
    (b'"x\ny', -1),
    (b'"a""\n"\n', 7),
    (b'1,"\n"\n2,"\n', 6),
])
def test_where_the_last_record_ends(data, end):
    assert dialect.last_record_end(data) == end
    if TEXT is not None:
        assert TEXT.last_record_end(data) == end


@given(st.lists(st.sampled_from([b"a", b",", b"\n", b'"', b"\r\n", b'""']), max_size=40))
def test_the_twins_find_the_same_record_end(pieces):
    data = b"".join(pieces)
    end = dialect.last_record_end(data)
    ends = dialect.record_ends(np.frombuffer(data, dtype=np.uint8))
    assert end == (int(ends[-1]) + 1 if ends.shape[0] else -1)
    if TEXT is not None:
        assert TEXT.last_record_end(data) == end
