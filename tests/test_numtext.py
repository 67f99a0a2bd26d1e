"""cumtool.numtext: the C number text (_ext/_numtext.c) against CPython's float(), int() and
repr() and against its Python twin, bit for bit: the known hard cases, random doubles
(10^5 in the quick suite, 10^7 under -m slow), random decimals and random junk."""

from __future__ import annotations

import math
import re
import shutil
import struct
import sysconfig
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumtool import numtext

C = numtext.NATIVE
needs_c = pytest.mark.skipif(C is None, reason="cumtool._ext._numtext is not built")

DBL_MAX = 1.7976931348623157e308
DBL_MIN = 2.2250738585072014e-308
TINY = 5e-324  # 2**-1074


def bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)


def float_bits(value: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", value))[0])


def texts_of(text: bytes, offsets: np.ndarray) -> list[bytes]:
    return [text[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def c_format(values: np.ndarray, missing: np.ndarray | None = None,
             null: bytes = b"") -> list[bytes]:
    assert C is not None
    text, offsets = C.format_floats(np.ascontiguousarray(values, dtype=np.float64), missing,
                                    null)
    return texts_of(text, np.frombuffer(offsets, dtype=np.int64))


def c_parse(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    assert C is not None
    data, starts, ends = numtext.cells(texts)
    values = np.empty(len(texts), dtype=np.float64)
    ok = np.empty(len(texts), dtype=np.bool_)
    C.parse_floats(data, starts, ends, values, ok)
    return values, ok


def c_parse_ints(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    assert C is not None
    data, starts, ends = numtext.cells(texts)
    values = np.empty(len(texts), dtype=np.int64)
    status = np.empty(len(texts), dtype=np.uint8)
    C.parse_ints(data, starts, ends, values, status)
    return values, status


def cpython_floats(texts: list[bytes]) -> np.ndarray:
    return np.array([float(t) for t in texts], dtype=np.float64)


def test_the_number_text_loops_are_built_where_a_compiler_is() -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) on this machine")
    assert C is not None


# Writing ------------------------------------------------------------------------------

HARD_VALUES: list[tuple[float, bytes]] = [
    (0.0, b"0.0"), (-0.0, b"-0.0"), (1.0, b"1.0"), (-1.0, b"-1.0"),
    (0.1 + 0.2, b"0.30000000000000004"), (0.1, b"0.1"), (1e23, b"1e+23"),
    (TINY, b"5e-324"), (-TINY, b"-5e-324"), (2.0**-1074 * 3, b"1.5e-323"),
    (DBL_MIN, b"2.2250738585072014e-308"), (DBL_MIN - TINY, b"2.225073858507201e-308"),
    (DBL_MAX, b"1.7976931348623157e+308"), (-DBL_MAX, b"-1.7976931348623157e+308"),
    (9007199254740993.0, b"9007199254740992.0"), (2.0**53 + 2, b"9007199254740994.0"),
    (8.98846567431158e307, b"8.98846567431158e+307"), (2.2250738585072011e-308,
                                                       b"2.225073858507201e-308"),
    (1e15, b"1000000000000000.0"), (1e16, b"1e+16"), (1234567890123456.7,
                                                    b"1234567890123456.8"),
    (12345678901234567.0, b"1.2345678901234568e+16"), (123.456, b"123.456"),
    (1e-4, b"0.0001"), (1e-5, b"0.00001"), (1.5e-5, b"0.000015"), (1e-6, b"1e-6"),
    (0.000123456789, b"0.000123456789"), (1e-100, b"1e-100"), (1e100, b"1e+100"),
    (5e-310, b"5e-310"), (2.0**63, b"9.223372036854776e+18"), (100.0, b"100.0"),
    (264.27, b"264.27"), (-0.5, b"-0.5"), (9007199254741000.0, b"9007199254741000.0"),
    (math.nan, b"NaN"), (-math.nan, b"NaN"), (math.inf, b"inf"), (-math.inf, b"-inf"),
]


@pytest.mark.parametrize(("value", "expected"), HARD_VALUES, ids=[t.decode() for _v, t in
                                                                HARD_VALUES])
def test_hard_values_are_written_as_cumtool_writes_them(value: float, expected: bytes) -> None:
    # the expectation is cumtool's layout of CPython's repr
    assert numtext.layout_text(repr(value), value, 16, -5).encode() == expected
    assert numtext.float_text(value).encode() == expected
    if C is not None:
        assert c_format(np.array([value])) == [expected]


@needs_c
def test_the_missing_are_written_as_null() -> None:
    values = np.array([1.5, math.nan, 2.0, 3.0])
    missing = np.array([False, True, False, True])
    assert c_format(values, missing, b"NA") == [b"1.5", b"NA", b"2.0", b"NA"]
    assert c_format(values, missing, b"x" * 100) == [b"1.5", b"x" * 100, b"2.0", b"x" * 100]
    assert c_format(np.array([], dtype=np.float64)) == []
    text, offsets = numtext.format_floats(values, missing, b"")
    assert (text, offsets.tolist()) == (b"1.52.0", [0, 3, 3, 6, 6])


@needs_c
def test_format_floats_refuses_what_is_not_float64() -> None:
    assert C is not None
    with pytest.raises(TypeError):
        C.format_floats(np.zeros(3, dtype=np.float32), None, b"")
    with pytest.raises(TypeError):
        C.format_floats(np.zeros(3), np.zeros(2, dtype=np.bool_), b"")
    with pytest.raises((TypeError, BufferError, ValueError)):
        C.format_floats(np.zeros((3, 2))[:, 0], None, b"")


@needs_c
def test_every_count_of_digits_at_every_point_is_laid_out_as_repr() -> None:
    # numtext_format writes the digits into place two at a time and slides the integer
    # part left for the point: 1 to 17 digits, the point from 8 before them to 20 after,
    # across the layout's bounds (16 before the point, 5 after), both signs; and integers
    # from 2^53 to 10^16 that end in zeros (digits fewer than the point's place)
    rng = np.random.default_rng(17)
    values = []
    for count in range(1, 18):
        for _ in range(12):
            digits = "".join(str(d) for d in rng.integers(0, 10, size=count))
            digits = str(rng.integers(1, 10)) + digits[1:-1] + str(rng.integers(1, 10))
            values += [float(f"0.{digits[:count]}e{point}") for point in range(-8, 21)]
    values += [float(9007199254741000 + 1000 * k) for k in range(2000)]
    values += [float(10**16 - 10**k) for k in range(1, 16)]
    array = np.array(values + [-v for v in values])
    assert c_format(array) == [numtext.float_text(v).encode() for v in array.tolist()]


def random_doubles(rng: np.random.Generator, count: int) -> np.ndarray:
    """Random bit patterns (every exponent alike: subnormals, huge, NaN payloads), and
    as many short decimals as people write."""
    patterns = rng.integers(0, 1 << 64, size=count, dtype=np.uint64, endpoint=False)
    half = count // 2
    short = (rng.integers(-10**6, 10**6, size=count - half)
             / 10.0 ** rng.integers(0, 8, size=count - half))
    return np.concatenate([patterns[:half].view(np.float64), short])


@needs_c
def test_random_doubles_are_written_as_repr_lays_them_out() -> None:
    values = random_doubles(np.random.default_rng(25), 100_000)
    written = c_format(values)
    assert written == [numtext.float_text(v).encode() for v in values.tolist()]
    text, offsets = numtext.format_floats(values)
    py_text, py_offsets = numtext.format_floats_py(values)
    assert text == py_text
    assert offsets.tolist() == py_offsets.tolist()
    # and the text reads back to the same bits (NaN to NaN)
    back, ok = c_parse(written)
    assert ok.all()
    same = (bits(back) == bits(values)) | (np.isnan(back) & np.isnan(values))
    assert same.all()


def test_the_python_fallback_writes_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.array([v for v, _t in HARD_VALUES])
    missing = np.zeros(len(values), dtype=np.bool_)
    missing[3] = True
    expected = [t for _v, t in HARD_VALUES]
    expected[3] = b"-"
    monkeypatch.setattr(numtext, "NATIVE", None)
    text, offsets = numtext.format_floats(values, missing, b"-")
    assert texts_of(text, offsets) == expected


# Reading ------------------------------------------------------------------------------

LONG = b"1." + b"0" * 798 + b"1"
HARD_TEXTS: list[bytes] = [
    b"0", b"-0", b"+0", b"0.0", b"-0.0", b"-.0e5", b"0e999999999999", b"-0e-99999999999",
    b"1", b"+1", b"-1", b"1.", b".5", b"-.5", b"5.e1", b".5E-1", b"1E5", b"1e+5", b"1e-5",
    b"0.1", b"0.2", b"0.30000000000000004", b"0.3", b"1e23", b"1e22", b"1e-22", b"1e-23",
    b"9007199254740992", b"9007199254740993", b"9007199254740994", b"9007199254740995",
    b"9007199254740993.0000000001", b"9007199254740993" + b"0" * 800 + b"1e-801",
    b"18014398509481985", b"18014398509481986", b"18014398509481987",
    b"9223372036854775807", b"9223372036854776832", b"9223372036854776833",
    b"9999999999999999999", b"9999999999999999999e-343", b"9999999999999999999e290",
    b"2.2250738585072009e-308", b"123456789012345678901234567890",
    b"2.2250738585072011e-308", b"2.2250738585072012e-308", b"2.2250738585072014e-308",
    b"2.225073858507201136057409796709131975934819546351645648e-308",
    b"4.9406564584124654e-324", b"5e-324", b"2.4703282292062327e-324",
    b"2.4703282292062328e-324", b"2.4703282292062327208828439643411068618252990130716238221"
    b"2798825e-324", b"1e-323", b"3e-324", b"7e-324",
    b"1.7976931348623157e308", b"1.7976931348623158e308", b"1.7976931348623159e308",
    b"179769313486231580793728971405301e276", b"8.98846567431158e307",
    b"8.988465674311579538646525953945123668089884894711532863671504057886633790275048156"
    b"63e307",
    b"1e-400", b"-1e-400", b"1e400", b"-1e400", b"1e-99999999999999999999",
    b"1e99999999999999999999", b"0." + b"0" * 400 + b"1", b"1" + b"0" * 400,
    b"0." + b"0" * 1000 + b"1e1001", b"1" + b"0" * 1000 + b"e-1000", b"-1e999999999",
    b"1e-999999999", b"0." + b"0" * 1000 + b"1e1000000000000",
    LONG, b"-" + LONG, b"0." + b"9" * 800, b"9" * 800, b"1" * 800 + b"e-800",
    b"3.14159265358979323846264338327950288419716939937510582097494459",
    b"1.00000000000000011102230246251565404236316680908203125",
    b"1.00000000000000011102230246251565404236316680908203124",
    b"1.00000000000000011102230246251565404236316680908203126",
    b"123.456", b"264.27", b"00000000000000000000000000000012.5", b"0.000015",
    b"inf", b"-inf", b"+inf", b"INF", b"Infinity", b"-iNfInItY", b"nan", b"-nan", b"NaN",
    b"+NAN",
]
NOT_FLOATS: list[bytes] = [
    b"", b"+", b"-", b".", b"+.", b"e5", b".e5", b"1e", b"1e+", b"1e-", b" 1", b"1 ", b"1_000",
    b"0x10", b"1.2.3", b"infx", b"in", b"infinit", b"--1", b"+-1", b"1e5.5", b"1e5e5",
    "١".encode(), b"nan(1)", b"1,5", b"1d5", b"\x001", b"1\x00", b"e", b"E", b"-e1", b"1.e",
    b"\t1", b"1\n",
]


@needs_c
@pytest.mark.parametrize("text", HARD_TEXTS, ids=lambda t: t[:40].decode())
def test_hard_texts_read_as_float_reads_them(text: bytes) -> None:
    values, ok = c_parse([text])
    assert ok.tolist() == [True]
    assert float_bits(values[0]) == float_bits(float(text))


def test_hard_texts_in_python_as_in_c() -> None:
    data, starts, ends = numtext.cells(HARD_TEXTS + NOT_FLOATS)
    values, ok = numtext.parse_floats_py(data, starts, ends)
    assert ok.tolist() == [True] * len(HARD_TEXTS) + [False] * len(NOT_FLOATS)
    assert bits(values[:len(HARD_TEXTS)]).tolist() == [float_bits(float(t))
                                                       for t in HARD_TEXTS]
    if C is not None:
        c_values, c_ok = c_parse(HARD_TEXTS + NOT_FLOATS)
        assert (c_ok == ok).all()
        assert (bits(c_values) == bits(values)).all()


@pytest.mark.parametrize("native", [True, False], ids=["c", "python"])
def test_parse_floats_gives_values_and_ok(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if native and C is None:
        pytest.skip("cumtool._ext._numtext is not built")
    if not native:
        monkeypatch.setattr(numtext, "NATIVE", None)
    data, starts, ends = numtext.cells([b"1.5", b"x", b"-0", b"1e400", b""])
    values, ok = numtext.parse_floats(data, starts, ends)
    assert ok.tolist() == [True, False, True, True, False]
    assert bits(values).tolist() == [float_bits(v) for v in (1.5, 0.0, -0.0, math.inf, 0.0)]
    with pytest.raises(ValueError, match="outside"):
        numtext.parse_floats(data, np.array([0]), np.array([len(data) + 1]))


@needs_c
def test_known_answers() -> None:
    values, ok = c_parse([b"1e-400", b"1e400", b"-1e400", b"9007199254740993",
                          b"2.2250738585072011e-308", b"-0", b"-nan", b"4.9406564584124654e-324",
                          b"2.4703282292062327e-324", b"2.4703282292062328e-324"])
    assert ok.all()
    assert bits(values).tolist() == [
        0, float_bits(math.inf), float_bits(-math.inf), float_bits(2.0**53),
        0x000FFFFFFFFFFFFF, 1 << 63, 0xFFF8000000000000, 1, 0, 1]


@needs_c
@pytest.mark.parametrize("text", NOT_FLOATS, ids=lambda t: repr(t))
def test_what_is_not_a_number_is_not_read(text: bytes) -> None:
    values, ok = c_parse([text])
    assert ok.tolist() == [False]
    assert values.tolist() == [0.0]


def random_decimals(rng: np.random.Generator, count: int) -> list[bytes]:
    """Decimals of 1 to 25 significant digits, the point anywhere, exponents across (and
    beyond) the double range, signs, and the forms float() and numtext.FLOAT_GRAMMAR both take."""
    digits = rng.integers(1, 26, size=count)
    points = rng.integers(-1, 27, size=count)
    exponents = rng.integers(-345, 330, size=count)
    forms = rng.integers(0, 6, size=count)
    signs = rng.choice(np.array(["", "-", "+"]), size=count, p=[0.6, 0.3, 0.1])
    texts = []
    for n, point, exponent, form, sign in zip(digits.tolist(), points.tolist(),
                                               exponents.tolist(), forms.tolist(),
                                               signs.tolist(), strict=True):
        mantissa = str(int(rng.integers(10 ** (n - 1), 10**n, dtype=np.uint64))
                       if n <= 19 else
                       str(int(rng.integers(10**18, 10**19, dtype=np.uint64)))
                       + "".join(map(str, rng.integers(0, 10, size=n - 19).tolist())))
        if 0 <= point <= len(mantissa):
            mantissa = f"{mantissa[:point]}.{mantissa[point:]}"
        if form == 0:
            text = mantissa  # no exponent: plain decimals as people write them
        elif form == 1:
            text = f"{mantissa}e{exponent}"
        elif form == 2:
            text = f"{mantissa}E+{abs(exponent)}" if exponent >= 0 else f"{mantissa}e{exponent}"
        elif form == 3:
            text = f"{mantissa}e{exponent % 23}"  # the fast path's powers, and just past
        elif form == 4:
            text = f"{mantissa}e-{exponent % 40}"
        else:
            text = f"{mantissa}00000000000000000000e{exponent % 60 - 30}"
        texts.append((sign + text).encode())
    return texts


@needs_c
def test_random_decimals_read_as_float_reads_them() -> None:
    texts = random_decimals(np.random.default_rng(7), 100_000)
    values, ok = c_parse(texts)
    assert ok.all()
    expected = cpython_floats(texts)
    wrong = np.flatnonzero(bits(values) != bits(expected))
    assert not len(wrong), [texts[i] for i in wrong[:5]]


@needs_c
def test_random_doubles_read_back_from_repr_and_from_17_digits() -> None:
    values = random_doubles(np.random.default_rng(8), 100_000)
    values = values[~np.isnan(values)]
    listed = values.tolist()
    for texts in ([repr(v).encode() for v in listed], [b"%.17e" % v for v in listed],
                  [b"%.16e" % v for v in listed], [b"%.25g" % v for v in listed]):
        parsed, ok = c_parse(texts)
        assert ok.all()
        assert (bits(parsed) == bits(cpython_floats(texts))).all()


@needs_c
def test_random_junk_reads_as_the_python_twin_reads_it() -> None:
    rng = np.random.default_rng(9)
    alphabet = np.frombuffer(b"0123456789012345678901234.eE+-+-infatyINFATY_ x", dtype=np.uint8)
    texts = [alphabet[rng.integers(0, len(alphabet), size=int(n))].tobytes()
             for n in rng.integers(0, 9, size=50_000)]
    data, starts, ends = numtext.cells(texts)
    values, ok = c_parse(texts)
    py_values, py_ok = numtext.parse_floats_py(data, starts, ends)
    assert (ok == py_ok).all()
    assert (bits(values) == bits(py_values)).all()
    ints, status = c_parse_ints(texts)
    py_ints, py_status = numtext.parse_ints_py(data, starts, ends)
    assert (status == py_status).all()
    assert (ints == py_ints).all()


@needs_c
@settings(max_examples=1500, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(
           [*b"0123456789..+-eE /:\x00\x7f\x80\xa9\xc3\xff"]), max_size=11).map(bytes),
           min_size=1, max_size=12),
       padding=st.integers(0, 9))
def test_short_cells_read_as_the_twin_and_float_read_them(texts: list[bytes],
                                                          padding: int) -> None:
    """Cells of up to 8 bytes after the sign are read 8 bytes at a time (beyond a cell's
    end, or copied near the data's end): the same values and verdicts as the Python twin
    and float(), wherever a cell lies."""
    cells = [b"x" * padding, *texts]  # the last cell ends with the data, the others not
    data, starts, ends = numtext.cells(cells)
    values, ok = c_parse(cells)
    py_values, py_ok = numtext.parse_floats_py(data, starts, ends)
    assert ok.tolist() == py_ok.tolist()
    assert bits(values).tolist() == bits(py_values).tolist()
    for text, value, good in zip(cells, values.tolist(), ok.tolist(), strict=True):
        if good:
            assert float_bits(value) == float_bits(float(text))
    ints, status = c_parse_ints(cells)
    py_ints, py_status = numtext.parse_ints_py(data, starts, ends)
    assert status.tolist() == py_status.tolist() and ints.tolist() == py_ints.tolist()


def test_the_vendored_eisel_lemire_table_is_the_powers_of_five() -> None:
    """ffc.h's 128-bit 5^q (q in [-342, 308]) against Python's exact integers, by
    fast_float's recipe: 5^q shifted into [2^127, 2^128) and truncated; for q < 0 the
    reciprocal, 2^b // 5^-q + 1 (b = z + 127 for q >= -27, else 2z + 128, then truncated
    to 128 bits), z the bit length of 5^-q. A wrong word would misround its whole decade."""
    path = Path(numtext.__file__).parent / "_ext" / "ffc" / "ffc.h"
    if not path.exists():
        pytest.skip("an installed cumtool: the vendored sources are in the checkout")
    header = path.read_text(encoding="utf-8")
    body = header[header.index("FFC_POWERS_OF_FIVE[FFC_POWERS_OF_5_NUMBER_OF_ENTRIES] = {"):]
    words = [int(w, 16) for w in re.findall(r"0x[0-9a-fA-F]+",
                                            body[body.index("{") + 1:body.index("}")])]
    expected = []
    for q in range(-342, 309):
        if q >= 0:
            power = 5**q << max(0, 128 - (5**q).bit_length())
            power >>= max(0, power.bit_length() - 128)
        else:
            reciprocal = 5**-q
            z = reciprocal.bit_length()
            power = 2 ** (z + 127 if q >= -27 else 2 * z + 128) // reciprocal + 1
            power >>= max(0, power.bit_length() - 128)
        expected += [power >> 64, power & ((1 << 64) - 1)]
    assert words == expected


def test_the_vendored_schubfach_table_is_the_powers_of_ten() -> None:
    """yyjson's 128-bit 10^e (e in [-343, 324]), which f64_bin_to_dec's digits rest on,
    against Python's exact integers: 10^e shifted into [2^127, 2^128) and truncated (for
    e < 0, 2^b // 10^-e with the b that puts it there). A wrong word would misprint its
    decade; the random doubles might not meet it."""
    path = Path(numtext.__file__).parent / "_ext" / "yyjson" / "f64_to_dec.h"
    if not path.exists():
        pytest.skip("an installed cumtool: the vendored sources are in the checkout")
    header = path.read_text(encoding="utf-8")
    body = header[header.index("static const u64 pow10_sig_table[] = {"):]
    pairs = re.findall(r"U64\((0x[0-9a-fA-F]+), (0x[0-9a-fA-F]+)\)",
                       body[body.index("{") + 1:body.index("};")])
    words = [int(high, 16) << 32 | int(low, 16) for high, low in pairs]
    expected = []
    for e in range(-343, 325):
        if e >= 0:
            power = 10**e << max(0, 128 - (10**e).bit_length())
            power >>= max(0, power.bit_length() - 128)
        else:
            power = 2 ** (128 + (10**-e).bit_length()) // 10**-e
            power >>= max(0, power.bit_length() - 128)
        expected += [power >> 64, power & ((1 << 64) - 1)]
    assert words == expected


@needs_c
def test_cells_outside_the_data_are_refused() -> None:
    assert C is not None
    values = np.empty(1)
    ok = np.empty(1, dtype=np.bool_)
    for start, end in ((0, 4), (-1, 1), (2, 1)):
        with pytest.raises(ValueError, match="cell 0 is outside"):
            C.parse_floats(b"123", np.array([start]), np.array([end]), values, ok)
    with pytest.raises(TypeError):
        C.parse_floats(b"123", np.array([0]), np.array([1]), np.empty(1, np.float32), ok)
    with pytest.raises(TypeError):
        C.parse_floats(b"123", np.array([0, 1]), np.array([1]), values, ok)


@needs_c
def test_threads_read_and_write_at_once_as_one_does() -> None:
    """The loops run without the GIL and share nothing: slices on several threads give
    what one call gives."""
    rng = np.random.default_rng(11)
    texts = random_decimals(rng, 40_000)
    values = random_doubles(rng, 40_000)
    whole, _ok = c_parse(texts)
    written = c_format(values)
    parts = [(start, start + 5_000) for start in range(0, 40_000, 5_000)]
    with ThreadPoolExecutor(4) as pool:
        parsed = list(pool.map(lambda p: c_parse(texts[p[0]:p[1]])[0], parts))
        formatted = list(pool.map(lambda p: c_format(values[p[0]:p[1]]), parts))
    assert (bits(np.concatenate(parsed)) == bits(whole)).all()
    assert [t for part in formatted for t in part] == written


# Integers -------------------------------------------------------------------------------

INTS: list[tuple[bytes, int, int]] = [
    (b"0", numtext.INT, 0), (b"-0", numtext.INT, 0), (b"+5", numtext.INT, 5),
    (b"007", numtext.INT, 7), (b"0" * 100 + b"1", numtext.INT, 1),
    (b"9223372036854775807", numtext.INT, 2**63 - 1),
    (b"-9223372036854775808", numtext.INT, -(2**63)),
    (b"-9223372036854775807", numtext.INT, -(2**63) + 1),
    (b"9223372036854775808", numtext.BEYOND_INT64, 0),
    (b"-9223372036854775809", numtext.BEYOND_INT64, 0),
    (b"18446744073709551616", numtext.BEYOND_INT64, 0),
    (b"99999999999999999999999", numtext.BEYOND_INT64, 0), (b"9" * 800, numtext.BEYOND_INT64, 0),
    (b"", numtext.NOT_INT, 0), (b"+", numtext.NOT_INT, 0), (b"-", numtext.NOT_INT, 0),
    (b"1.0", numtext.NOT_INT, 0), (b" 1", numtext.NOT_INT, 0), (b"1e3", numtext.NOT_INT, 0),
    (b"1_0", numtext.NOT_INT, 0), (b"--1", numtext.NOT_INT, 0), (b"0x1", numtext.NOT_INT, 0),
]


@pytest.mark.parametrize("native", [True, False], ids=["c", "python"])
def test_integers_read_exactly(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if native and C is None:
        pytest.skip("cumtool._ext._numtext is not built")
    if not native:
        monkeypatch.setattr(numtext, "NATIVE", None)
    data, starts, ends = numtext.cells([t for t, _s, _v in INTS])
    values, status = numtext.parse_ints(data, starts, ends)
    assert status.tolist() == [s for _t, s, _v in INTS]
    assert values.tolist() == [v for _t, _s, v in INTS]


@needs_c
def test_random_integers_read_as_int_reads_them() -> None:
    rng = np.random.default_rng(10)
    numbers = [int(v) >> int(s) for v, s in zip(
        rng.integers(-(2**63), 2**63, size=20_000, dtype=np.int64).tolist(),
        rng.integers(0, 63, size=20_000).tolist(), strict=True)]
    texts = [str(n).encode() for n in numbers] + [str(n * 10).encode() for n in numbers]
    values, status = c_parse_ints(texts)
    expected = [*numbers, *(n * 10 for n in numbers)]
    fits = [-(2**63) <= n < 2**63 for n in expected]
    assert status.tolist() == [numtext.INT if f else numtext.BEYOND_INT64 for f in fits]
    assert [v for v, f in zip(values.tolist(), fits, strict=True) if f] == \
        [n for n, f in zip(expected, fits, strict=True) if f]


# 10^7 random doubles ------------------------------------------------------------------

def chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(size, total - start)


@needs_c
@pytest.mark.slow
def test_ten_million_random_doubles_against_cpython() -> None:
    """10^7 doubles (random bits and short decimals) written as repr() lays them out and
    read back, and 2 * 10^6 random decimal texts read as float() reads them."""
    rng = np.random.default_rng(2025)
    for _start, count in chunks(10_000_000, 500_000):
        values = random_doubles(rng, count)
        listed = values.tolist()
        written = c_format(values)
        assert written == [numtext.float_text(v).encode() for v in listed]
        reprs = [repr(v).encode() for v in listed]
        parsed, ok = c_parse(reprs)
        assert ok.all()
        expected = cpython_floats(reprs)
        assert (bits(parsed) == bits(expected)).all()
        back, ok = c_parse(written)
        assert ok.all()
        assert (bits(back) == bits(expected)).all()
    for _start, count in chunks(2_000_000, 500_000):
        texts = random_decimals(rng, count)
        parsed, ok = c_parse(texts)
        assert ok.all()
        assert (bits(parsed) == bits(cpython_floats(texts))).all()
