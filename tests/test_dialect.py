"""The CSV dialect's rules (formats/csv/dialect.py) and their C twin in _csvtext.c."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cumtool.formats.csv import dialect
from cumtool.formats.csv.small import TEXT


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


@pytest.mark.parametrize(("data", "quoted", "end"), [
    (b'x"\ny\n', True, 5),       # a block that starts inside a quoted field
    (b'x"\ny\n', False, -1),     # the same bytes started outside: both LFs quoted
    (b'x\ny"z', True, -1),        # only a LF inside quotes
    (b'ab\n"c\n', True, 6),
    (b'ab\n"c\n', False, 3),
    (b'"', True, -1),
])
def test_where_the_last_record_of_a_block_read_at_any_offset_ends(data, quoted, end):
    assert dialect.last_record_end(data, quoted) == end
    if TEXT is not None:
        assert TEXT.last_record_end(data, quoted) == end


@given(st.lists(st.sampled_from([b"a", b",", b"\n", b'"', b"\r\n", b'""']), max_size=60),
       st.booleans())
def test_the_twins_find_a_blocks_record_end_from_either_state(pieces, quoted):
    data = b"".join(pieces)
    end = dialect.last_record_end(data, quoted)
    ends = dialect.record_ends(np.frombuffer(data, dtype=np.uint8), int(quoted))
    assert end == (int(ends[-1]) + 1 if ends.shape[0] else -1)
    if TEXT is not None:
        assert TEXT.last_record_end(data, quoted) == end


@pytest.mark.parametrize(("text", "cut"), [
    ("a,b\n", [["a", "b"]]),
    ('"x, y",""\r\n', [["x, y", ""]]),
    (',\n', [[None, None]]),
    ('"say ""hi""",2', [['say "hi"', "2"]]),
    ('"two\nlines",3\n4,5', [["two\nlines", "3"], ["4", "5"]]),
    ("a,", [["a", None]]),
    ("a,b\r", [["a", "b"]]),  # a CR at the end of the text, as before a LF
    ("x\ry,2\n", [["x\ry", "2"]]),  # a lone CR inside a line is the cell's

    ('a"b,c\n', None),
    ('"open,c\n', None),
])
def test_a_fields_text(text, cut):
    assert dialect.records(text, ",") == cut


@given(st.lists(st.sampled_from(['a', '1', ',', '"', '""', '\n', '\r\n', ' ', 'é']),
                max_size=30).map("".join))
def test_the_twins_cut_the_same_fields(text):
    if TEXT is None:
        pytest.skip("_csvtext is not built: the Python rule is all there is")
    # the C cutter's records() takes text without lone CRs (the small path hands those
    # over before cutting)
    assume(text.count("\r") == text.count("\r\n"))
    assert TEXT.records(text.encode(), ",") == dialect.records(text, ",")
