/* Number text without the GIL: float64 to the text cumtool writes, and decimal text to
 * float64 and int64, correctly rounded. The foundation of the compiled CSV pipeline
 * (issue 25, part 3); cumtool/numtext.py is the Python twin and reference (float(), int(),
 * repr()), and tests/test_numtext.py compares the two bit for bit.
 *
 * Writing: yyjson's Schubfach (yyjson/, vendored; yyjson/README.md) finds the shortest
 * digits that read back to the value, the closest of them to it, the same digits as
 * repr() (it replaced Ryu's d2d: the same bytes, a fifth fewer ns for 17-digit values,
 * RESULTS-numfmt.md); numtext_format lays them out as small._float_text(repr(v), v, 16,
 * -5) does: plain notation while the decimal point falls in (-5, 16] digits, else
 * d.ddde+XX / d.ddde-XX; "0.0", "-0.0", "NaN", "inf", "-inf".
 *
 * Reading: the grammar of small._FLOAT (sign, digits with at most one point, an optional
 * exponent; inf, infinity, nan in any case) and small._INT, nothing else (no spaces, no
 * underscores). A mantissa of at most 19 significant digits that is at most 2^53, with a
 * power of ten of at most 22, is one exactly rounded multiply or divide (Clinger's fast
 * path); any other mantissa of at most 19 significant digits goes through Eisel-Lemire
 * (ffc_compute_float of the vendored ffc.h, ffc/README.md: a 128-bit product with 5^q,
 * proven sufficient for 19 digits); more digits, and the rare product Eisel-Lemire cannot
 * round, go to the C library's strtod under the "C" locale, which is correctly rounded
 * (glibc, macOS, the Universal CRT).
 *
 * _csvtext.c and _jsonl.c include this file with NUMTEXT_CORE_ONLY defined, for the core
 * functions alone (numtext_format), without the module; _csvtext.c with NUMTEXT_READER
 * too, for the reader (its pipeline parses cells), whose locale numtext_init makes.
 */
#ifndef NUMTEXT_CORE_ONLY
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <locale.h>
#elif defined(__APPLE__)
#include <xlocale.h>
#else
#include <locale.h>
#endif

#if defined(__FAST_MATH__)
#error "_numtext.c must not be compiled with -ffast-math"
#endif
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "_numtext.c needs double arithmetic evaluated in double (FLT_EVAL_METHOD 0)"
#endif

#include "yyjson/f64_to_dec.h"

#define DOUBLE_MANTISSA_BITS 52

/* writing ----------------------------------------------------------------------------- */

/* The longest text numtext_format writes: "-1.2345678901234567e-308", "-0.00001234567890123456". */
#define NUMTEXT_FORMAT_MAX 24

/* Digits two at a time, from yyjson's table of "00".."99": one multiply-shift per pair
   instead of one per digit. */
static inline void write_pair(char *at, uint32_t pair)
{
    memcpy(at, digit_table + 2 * pair, 2);
}

/* How many decimal digits m < 10^17 has (1 for 0): Ryu's decimalLength17, the same
   comparisons from the top down. */
static inline int decimal_length17(uint64_t m)
{
    if (m >= 10000000000000000ull) return 17;
    if (m >= 1000000000000000ull) return 16;
    if (m >= 100000000000000ull) return 15;
    if (m >= 10000000000000ull) return 14;
    if (m >= 1000000000000ull) return 13;
    if (m >= 100000000000ull) return 12;
    if (m >= 10000000000ull) return 11;
    if (m >= 1000000000ull) return 10;
    if (m >= 100000000ull) return 9;
    if (m >= 10000000ull) return 8;
    if (m >= 1000000ull) return 7;
    if (m >= 100000ull) return 6;
    if (m >= 10000ull) return 5;
    if (m >= 1000ull) return 4;
    if (m >= 100ull) return 3;
    if (m >= 10ull) return 2;
    return 1;
}

/* n < 10^8 as exactly 8 digits, zero-padded, at at[0:8]. */
static inline void write_8_digits(char *at, uint32_t n)
{
    const uint32_t high = n / 10000, low = n % 10000;
    write_pair(at, high / 100);
    write_pair(at + 2, high % 100);
    write_pair(at + 4, low / 100);
    write_pair(at + 6, low % 100);
}

/* The `count` digits of m at at[0:count], count being decimal_length17(m) (m < 10^17);
   writes nothing else. */
static inline void write_digits(uint64_t m, int count, char *at)
{
    char *end = at + count;
    uint32_t n = (uint32_t)m;
    if (count > 8) {
        const uint64_t high = m / 100000000;
        write_8_digits(end - 8, (uint32_t)(m - high * 100000000));
        end -= 8;
        count -= 8;
        n = (uint32_t)high;  /* below 10^9 */
        if (count >= 8) {
            const uint32_t top = n / 100000000;
            write_8_digits(end - 8, n - top * 100000000);
            if (count > 8)
                at[0] = (char)('0' + top);
            return;
        }
    }
    /* below 10^8 */
    while (n >= 100) {
        const uint32_t high = n / 100;
        end -= 2;
        write_pair(end, n - high * 100);
        n = high;
    }
    if (n >= 10)
        write_pair(end - 2, n);
    else
        end[-1] = (char)('0' + n);
}

/* p[0:n] = p[1:n + 1], for 1 <= n <= 16: every load before its store, in words. */
static inline void shift_left_one(char *p, int n)
{
    if (n >= 8) {
        uint64_t head, tail;
        memcpy(&head, p + 1, 8);
        memcpy(&tail, p + n - 7, 8);
        memcpy(p, &head, 8);
        memcpy(p + n - 8, &tail, 8);
    } else if (n >= 4) {
        uint32_t head, tail;
        memcpy(&head, p + 1, 4);
        memcpy(&tail, p + n - 3, 4);
        memcpy(p, &head, 4);
        memcpy(p + n - 4, &tail, 4);
    } else if (n >= 2) {
        uint16_t head, tail;
        memcpy(&head, p + 1, 2);
        memcpy(&tail, p + n - 1, 2);
        memcpy(p, &head, 2);
        memcpy(p + n - 2, &tail, 2);
    } else {
        p[0] = p[1];
    }
}

/* `value` as cumtool writes a float64, into out (room for NUMTEXT_FORMAT_MAX bytes: it
   may write past the text's end, never past the room); returns its length. The digits go
   where they belong, two at a time, given the shortest digits d (count of them) and the
   point (value = 0.d * 10**point):
     0 < point <= 16: d[:point] "." d[point:], or d zeros ".0" when count <= point;
     -5 < point <= 0: "0." zeros d;
     else: d[0] "." d[1:] "e" sign power, or d[0] "e" sign power when count is 1.
   `json` (a constant where it is inlined): Python's json module's text instead, repr()
   for a finite value: plain down to -4 < point, a power of at least two digits, and
   "NaN", "Infinity", "-Infinity". */
static inline int format_double(double value, char *out, const int json)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    const int negative = (int)(bits >> 63);
    const uint64_t fraction = bits & ((1ull << DOUBLE_MANTISSA_BITS) - 1);
    const uint32_t biased = (uint32_t)((bits >> DOUBLE_MANTISSA_BITS) & 0x7ffu);
    if (biased == 0x7ffu) {
        if (fraction != 0) {
            memcpy(out, "NaN", 3);
            return 3;
        }
        if (json && negative) {
            memcpy(out, "-Infinity", 9);
            return 9;
        }
        if (json) {
            memcpy(out, "Infinity", 8);
            return 8;
        }
        if (negative) {
            memcpy(out, "-inf", 4);
            return 4;
        }
        memcpy(out, "inf", 3);
        return 3;
    }
    char *p = out;
    if (negative)
        *p++ = '-';
    if (biased == 0 && fraction == 0) {
        memcpy(p, "0.0", 3);
        return (int)(p - out) + 3;
    }
    int count, point;
    if (biased != 0) {
        const uint64_t significand = fraction | (1ull << DOUBLE_MANTISSA_BITS);
        const int32_t exponent = (int32_t)biased - 1075;  /* value = significand * 2^exponent */
        if (exponent <= 0 && exponent >= -DOUBLE_MANTISSA_BITS
            && (significand & ((1ull << -exponent) - 1)) == 0) {
            /* an integer in [1, 2^53), below 10^16: always plain, its digits then ".0" */
            const uint64_t integer = significand >> -exponent;
            count = decimal_length17(integer);
            write_digits(integer, count, p);
            memcpy(p + count, ".0", 2);
            return (int)(p - out) + count + 2;
        }
        /* 16 or 17 digits, the shortest ones followed by zeros; written without those */
        uint64_t digits;
        int32_t power;
        f64_bin_to_dec(fraction, biased, significand, exponent, &digits, &power);
        point = 16 + (digits >= 10000000000000000ull) + power;
        if (point > (json ? -4 : -5) && point <= 0) {
            memcpy(p, "0.0000", 6);
            const char *end = (char *)write_u64_len_16_to_17_trim(digits, (u8 *)p + 2 - point);
            return (int)(end - out);
        }
        memset(p + 1, '0', 16);  /* the zeros of an integer below 10^16 that trim drops */
        count = (int)((char *)write_u64_len_16_to_17_trim(digits, (u8 *)p + 1) - (p + 1));
        if (point > 0 && point <= 16) {
            shift_left_one(p, point);
            p[point] = '.';
            if (count <= point) {
                p[point + 1] = '0';
                return (int)(p - out) + point + 2;
            }
            return (int)(p - out) + count + 1;
        }
    } else {
        /* subnormal, below 2.3e-308: 1 to 17 digits, maybe with zeros at the end */
        uint64_t digits;
        int32_t power;
        f64_bin_to_dec(fraction, 0, fraction, -1074, &digits, &power);
        while (digits % 10 == 0) {
            digits /= 10;
            power++;
        }
        count = decimal_length17(digits);
        point = count + power;
        write_digits(digits, count, p + 1);
    }
    /* the digits are at p[1:count + 1] */
    p[0] = p[1];
    if (count > 1) {
        p[1] = '.';
        p += count + 1;
    } else {
        p += 1;
    }
    *p++ = 'e';
    int power = point - 1;
    if (power < 0) {
        *p++ = '-';
        power = -power;
    } else {
        *p++ = '+';
    }
    if (power >= 100) {
        *p++ = (char)('0' + power / 100);
        write_pair(p, (uint32_t)(power % 100));
        p += 2;
    } else if (power >= 10 || json) {
        write_pair(p, (uint32_t)power);
        p += 2;
    } else {
        *p++ = (char)('0' + power);
    }
    return (int)(p - out);
}

static inline int numtext_format(double value, char *out)
{
    return format_double(value, out, 0);
}

/* `value` as Python's json module writes a float (json.dumps(value)). */
static inline int numtext_format_json(double value, char *out)
{
    return format_double(value, out, 1);
}

/* An int64 as str() writes it, into out (room for 20 bytes); returns its length. */
static int int_text(int64_t value, char *out)
{
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    char *p = out;
    if (value < 0)
        *p++ = '-';
    if (magnitude < 100000000000000000ull) {  /* below 10^17: two digits at a time */
        const int length = decimal_length17(magnitude);
        write_digits(magnitude, length, p);
        return (int)(p - out) + length;
    }
    char digits[20];
    int count = 0;
    do {
        digits[count++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    while (count)
        *p++ = digits[--count];
    return (int)(p - out);
}

#if !defined(NUMTEXT_CORE_ONLY) || defined(NUMTEXT_READER) || defined(NUMTEXT_DECIMAL)

/* a decimal's double: the reader's, and _jsonl.c's (with NUMTEXT_DECIMAL) -------------- */

#define FFC_IMPL
#include "ffc/ffc.h"

static const double POWERS_OF_TEN[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* (-1)**negative * mantissa * 10**power, correctly rounded, where one step decides it:
   1 with *out set; 0 where the caller's slow routine must (`exact` 0: the mantissa lost
   digits, or the exponent did; or Eisel-Lemire could not round). */
static inline int decimal_to_double(uint64_t mantissa, int64_t power, int negative,
                                    int exact, double *out)
{
    if (!exact)
        return 0;
    if (mantissa <= (1ull << 53) && power >= -22 && power <= 22) {
        /* both operands exact: one correctly rounded operation */
        double value = (double)mantissa;
        value = power < 0 ? value / POWERS_OF_TEN[-power] : value * POWERS_OF_TEN[power];
        *out = negative ? -value : value;
        return 1;
    }
    if (mantissa == 0) {
        *out = negative ? -0.0 : 0.0;
        return 1;
    }
    /* mantissa * 10**power exactly, 19 digits at most: Eisel-Lemire */
    ffc_adjusted_mantissa am = ffc_compute_float(power, mantissa, FFC_VALUE_KIND_DOUBLE);
    if (am.power2 < 0)
        return 0;
    uint64_t word = am.mantissa | (uint64_t)am.power2 << DOUBLE_MANTISSA_BITS
        | (uint64_t)negative << 63;
    memcpy(out, &word, sizeof word);
    return 1;
}

#endif

#if !defined(NUMTEXT_CORE_ONLY) || defined(NUMTEXT_READER)

/* reading ----------------------------------------------------------------------------- */

#if defined(_WIN32)
typedef _locale_t numtext_locale;
#else
typedef locale_t numtext_locale;
#endif
static numtext_locale c_locale;  /* made once, at module import */

static inline int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* s[0:size] equals `word` (lower case) in any case */
static int word_is(const char *s, size_t size, const char *word)
{
    size_t length = strlen(word);
    if (size != length)
        return 0;
    for (size_t i = 0; i < size; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != word[i])
            return 0;
    }
    return 1;
}

/* The C library's correctly rounded reading of s[0:size], which the grammar has passed. */
static int slow_double(const char *s, size_t size, double *out)
{
    char small[128];
    char *text = small;
    if (size >= sizeof small) {
        text = malloc(size + 1);
        if (text == NULL)
            return -1;
    }
    memcpy(text, s, size);
    text[size] = '\0';
#if defined(_WIN32)
    *out = _strtod_l(text, NULL, c_locale);
#else
    *out = strtod_l(text, NULL, c_locale);
#endif
    if (text != small)
        free(text);
    return 1;
}

/* s[0:size] as float() reads it, into *out: 1; not a number by small._FLOAT's grammar: 0;
   out of memory: -1. */
static int numtext_parse_double(const char *s, size_t size, double *out)
{
    const char *p = s, *end = s + size;
    int negative = 0;
    if (p < end && (*p == '+' || *p == '-')) {
        negative = *p == '-';
        p++;
    }
    if (p == end)
        return 0;
    if (!is_digit(*p) && *p != '.') {
        size_t rest = (size_t)(end - p);
        if (word_is(p, rest, "inf") || word_is(p, rest, "infinity")) {
            *out = negative ? -HUGE_VAL : HUGE_VAL;
            return 1;
        }
        if (word_is(p, rest, "nan")) {
            *out = negative ? -NAN : NAN;
            return 1;
        }
        return 0;
    }
    uint64_t mantissa = 0;   /* the first 19 significant digits */
    int kept = 0;            /* how many those are */
    int inexact = 0;         /* a nonzero digit after them */
    int64_t shift = 0;       /* value = mantissa * 10**(shift + exponent), nearly */
    int any = 0;
    for (; p < end && is_digit(*p); p++) {
        any = 1;
        int digit = *p - '0';
        if (kept == 0 && digit == 0)
            continue;
        if (kept < 19) {
            mantissa = mantissa * 10 + (uint64_t)digit;
            kept++;
        } else {
            shift++;
            inexact |= digit != 0;
        }
    }
    if (p < end && *p == '.') {
        for (p++; p < end && is_digit(*p); p++) {
            any = 1;
            int digit = *p - '0';
            if (kept == 0 && digit == 0) {
                shift--;
            } else if (kept < 19) {
                mantissa = mantissa * 10 + (uint64_t)digit;
                kept++;
                shift--;
            } else {
                inexact |= digit != 0;
            }
        }
    }
    if (!any)
        return 0;
    int64_t exponent = 0;
    int exponent_huge = 0;  /* beyond 10^8: strtod_l weighs it against the digits' shift */
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int exponent_negative = 0;
        if (p < end && (*p == '+' || *p == '-')) {
            exponent_negative = *p == '-';
            p++;
        }
        if (p == end || !is_digit(*p))
            return 0;
        for (; p < end && is_digit(*p); p++) {
            if (exponent < 100000000)
                exponent = exponent * 10 + (*p - '0');
            else
                exponent_huge = 1;
        }
        if (exponent_negative)
            exponent = -exponent;
    }
    if (p != end)
        return 0;
    if (mantissa == 0) {
        *out = negative ? -0.0 : 0.0;
        return 1;
    }
    if (exponent_huge)  /* 1e999999999 is inf, but 0.(10^9 zeros)1e1000000000 is 1.0 */
        return slow_double(s, size, out);
    if (decimal_to_double(mantissa, shift + exponent, negative, !inexact, out))
        return 1;
    return slow_double(s, size, out);
}

/* s[0:size] as int() reads it, by small._INT's grammar: 1 and *out; not an integer: 0;
   an integer beyond int64: 2. */
static int numtext_parse_int64(const char *s, size_t size, int64_t *out)
{
    const char *p = s, *end = s + size;
    int negative = 0;
    if (p < end && (*p == '+' || *p == '-')) {
        negative = *p == '-';
        p++;
    }
    if (p == end)
        return 0;
    const uint64_t limit = negative ? (1ull << 63) : (1ull << 63) - 1;
    uint64_t value = 0;
    int overflow = 0;
    for (; p < end; p++) {
        if (!is_digit(*p))
            return 0;
        uint64_t digit = (uint64_t)(*p - '0');
        /* below this, value * 10 + 9 fits either sign: no division to check it */
        if (value > 922337203685477579ull && value > (limit - digit) / 10)
            overflow = 1;
        else
            value = value * 10 + digit;
    }
    if (overflow)
        return 2;
    *out = negative ? (int64_t)(0 - value) : (int64_t)value;
    return 1;
}

/* A cell of at most 8 bytes after its sign, read 8 bytes at a time (fast_float's way,
   little-endian only): 1 with its digits' value in *m and how many follow the point in
   *after if it is digits with at most one point (`point`: allowed), at least one digit;
   else 0, for the general reader to judge. p + 8 must not pass `limit` for the one
   8-byte load; else the cell's bytes are copied. Every answer is one the general reader
   gives: Clinger's fast path below needs m < 10^8 <= 2^53 and at most 7 places. */
static inline int short_number(const char *p, size_t r, const char *limit, int point,
                               uint64_t *m, int *after)
{
#if PY_LITTLE_ENDIAN
    if (r == 0 || r > 8)
        return 0;
    uint64_t w = 0;
    if (limit - p >= 8)
        memcpy(&w, p, 8);
    else
        memcpy(&w, p, r);
    if (r < 8)
        w &= (1ull << (8 * r)) - 1;
    size_t n = r;
    *after = 0;
    if (point) {
        const uint64_t x = w ^ 0x2e2e2e2e2e2e2e2eull;  /* a '.' byte becomes 0 */
        const uint64_t dots = (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull;
        if (dots) {  /* the lowest flag is the first '.'; a second fails the digits below */
            const int dot = __builtin_ctzll(dots) >> 3;
            if ((size_t)dot < r) {
                const uint64_t low = dot ? w & ((1ull << (8 * dot)) - 1) : 0;
                const uint64_t high = dot < 7 ? (w >> (8 * dot + 8)) << (8 * dot) : 0;
                w = low | high;
                n = r - 1;
                *after = (int)(r - 1 - (size_t)dot);
            }
        }
    }
    if (n == 0)
        return 0;
    if (n < 8)  /* the digits to the top, leading '0's below: the first byte is the first */
        w = (w << (8 * (8 - n))) | (0x3030303030303030ull & ((1ull << (8 * (8 - n))) - 1));
    if ((((w + 0x4646464646464646ull) | (w - 0x3030303030303030ull))
         & 0x8080808080808080ull) != 0)
        return 0;  /* not all digits */
    w -= 0x3030303030303030ull;
    w = (w * 10) + (w >> 8);
    w = (((w & 0x000000FF000000FFull) * 0x000F424000000064ull)
         + (((w >> 16) & 0x000000FF000000FFull) * 0x0000271000000001ull)) >> 32;
    *m = (uint32_t)w;
    return 1;
#else
    (void)p; (void)r; (void)limit; (void)point; (void)m; (void)after;
    return 0;
#endif
}

/* A cell as numtext_parse_double or numtext_parse_int64 reads it (`ints`), a short one
   by short_number; data ends at `limit`. */
static inline int parse_cell(const char *s, size_t size, const char *limit, int ints,
                             double *d, int64_t *q)
{
    const int negative = size > 0 && s[0] == '-';
    const size_t sign = size > 0 && (s[0] == '-' || s[0] == '+');
    uint64_t m;
    int after;
    if (short_number(s + sign, size - sign, limit, !ints, &m, &after)) {
        if (ints) {
            *q = negative ? -(int64_t)m : (int64_t)m;
        } else {
            const double value = (double)m / POWERS_OF_TEN[after];
            *d = negative ? -value : value;
        }
        return 1;
    }
    return ints ? numtext_parse_int64(s, size, q) : numtext_parse_double(s, size, d);
}

/* The "C" locale strtod_l reads under, made once: at the import of whichever module
   includes the reader. */
static int numtext_init(void)
{
    if (c_locale == (numtext_locale)0) {
#if defined(_WIN32)
        c_locale = _create_locale(LC_NUMERIC, "C");
#else
        c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
#endif
        if (c_locale == (numtext_locale)0) {
            PyErr_SetString(PyExc_ImportError, "_numtext: no \"C\" locale");
            return -1;
        }
    }
    return 0;
}

#endif /* reading */

#ifndef NUMTEXT_CORE_ONLY

/* the module ----------------------------------------------------------------------------- */

static int is_int64(const Py_buffer *view)
{
    return view->itemsize == 8 && view->format != NULL
        && (strcmp(view->format, "l") == 0 || strcmp(view->format, "q") == 0
            || strcmp(view->format, "=q") == 0 || strcmp(view->format, "<q") == 0);
}

static int is_format(const Py_buffer *view, const char *format, Py_ssize_t itemsize)
{
    return view->itemsize == itemsize && view->format != NULL
        && strcmp(view->format, format) == 0;
}

PyDoc_STRVAR(format_floats_doc,
"format_floats(values, missing, null, json=False) -> (text, offsets)\n\n"
"Each float64 of `values` (C-contiguous, 1-D) as cumtool writes it (`json`: as Python's\n"
"json module writes it), `null` (bytes) where\n"
"`missing` (bools as many, or None) is True, one after another in `text` (bytes); value i\n"
"is text[offsets[i]:offsets[i + 1]], `offsets` being len(values) + 1 native int64s as\n"
"bytes. The GIL is released while the values are written.");

/* format_floats (`ints` 0) and format_ints (1): the same arguments and result. */
static PyObject *format_values(PyObject *args, int ints)
{
    const char *name = ints ? "format_ints" : "format_floats";
    PyObject *values_obj, *missing_obj;
    Py_buffer null;
    int json = 0;
    if (!PyArg_ParseTuple(args, ints ? "OOy*" : "OOy*|p", &values_obj, &missing_obj, &null,
                          &json))
        return NULL;
    Py_buffer values = {0}, missing = {0};
    PyObject *text = NULL, *offsets = NULL, *result = NULL;
    if (PyObject_GetBuffer(values_obj, &values, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    int fits = values.ndim == 1 && (ints ? is_int64(&values) : is_format(&values, "d", 8));
    if (fits && missing_obj != Py_None) {
        if (PyObject_GetBuffer(missing_obj, &missing, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        fits = missing.ndim == 1 && is_format(&missing, "?", 1)
            && missing.shape[0] == values.shape[0];
    }
    if (!fits) {
        PyErr_Format(PyExc_TypeError, "%s: values must be a C-contiguous 1-D %s buffer, "
                     "missing None or bools as many", name, ints ? "int64" : "float64");
        goto done;
    }
    const Py_ssize_t total = values.shape[0];
    const Py_ssize_t longest = ints ? 20 : NUMTEXT_FORMAT_MAX;
    const Py_ssize_t widest = null.len > longest ? null.len : longest;
    if (total > 0 && widest > PY_SSIZE_T_MAX / total) {
        PyErr_NoMemory();
        goto done;
    }
    text = PyBytes_FromStringAndSize(NULL, total * widest);
    offsets = PyBytes_FromStringAndSize(NULL, (total + 1) * (Py_ssize_t)sizeof(int64_t));
    if (text == NULL || offsets == NULL)
        goto done;
    char *out = PyBytes_AS_STRING(text);
    int64_t *at = (int64_t *)PyBytes_AS_STRING(offsets);
    const double *floats = values.buf;
    const int64_t *integers = values.buf;
    const char *gone = missing.obj != NULL ? missing.buf : NULL;
    const char *null_text = null.buf;
    const Py_ssize_t null_size = null.len;
    Py_ssize_t size = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < total; i++) {
        at[i] = size;
        if (gone != NULL && gone[i]) {
            memcpy(out + size, null_text, (size_t)null_size);
            size += null_size;
        } else {
            size += ints ? int_text(integers[i], out + size)
                         : json ? numtext_format_json(floats[i], out + size)
                                : numtext_format(floats[i], out + size);
        }
    }
    at[total] = size;
    Py_END_ALLOW_THREADS
    if (_PyBytes_Resize(&text, size) < 0)
        goto done;
    result = PyTuple_Pack(2, text, offsets);
done:
    Py_XDECREF(text);
    Py_XDECREF(offsets);
    PyBuffer_Release(&null);
    if (values.obj != NULL)
        PyBuffer_Release(&values);
    if (missing.obj != NULL)
        PyBuffer_Release(&missing);
    return result;
}

static PyObject *format_floats(PyObject *self, PyObject *args)
{
    return format_values(args, 0);
}

PyDoc_STRVAR(format_ints_doc,
"format_ints(values, missing, null) -> (text, offsets)\n\n"
"format_floats for int64 `values`: each as str() writes it.");

static PyObject *format_ints(PyObject *self, PyObject *args)
{
    return format_values(args, 1);
}

/* What parse_floats and parse_ints share: the data, the cells' bounds, the two outputs. */
typedef struct {
    Py_buffer data, starts, ends, values, status;
} Cells;

static void cells_release(Cells *cells)
{
    Py_buffer *views[] = {&cells->data, &cells->starts, &cells->ends, &cells->values,
                          &cells->status};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        if (views[i]->obj != NULL)
            PyBuffer_Release(views[i]);
}

static int cells_get(Cells *cells, PyObject *args, const char *name,
                     const char *value_format, const char *status_format)
{
    PyObject *data, *starts, *ends, *values, *status;
    memset(cells, 0, sizeof *cells);
    if (!PyArg_ParseTuple(args, "OOOOO", &data, &starts, &ends, &values, &status))
        return -1;
    const int contiguous = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS;
    if (PyObject_GetBuffer(data, &cells->data, PyBUF_SIMPLE) < 0
        || PyObject_GetBuffer(starts, &cells->starts, contiguous) < 0
        || PyObject_GetBuffer(ends, &cells->ends, contiguous) < 0
        || PyObject_GetBuffer(values, &cells->values, contiguous | PyBUF_WRITABLE) < 0
        || PyObject_GetBuffer(status, &cells->status, contiguous | PyBUF_WRITABLE) < 0) {
        cells_release(cells);
        return -1;
    }
    const Py_ssize_t total = cells->starts.len / 8;
    int value_fits = strcmp(value_format, "d") == 0 ? is_format(&cells->values, "d", 8)
                                                    : is_int64(&cells->values);
    if (!(cells->starts.ndim == 1 && is_int64(&cells->starts)
          && cells->ends.ndim == 1 && is_int64(&cells->ends) && cells->ends.len / 8 == total
          && cells->values.ndim == 1 && value_fits && cells->values.len / 8 == total
          && cells->status.ndim == 1 && is_format(&cells->status, status_format, 1)
          && cells->status.len == total)) {
        PyErr_Format(PyExc_TypeError, "%s: starts and ends must be 1-D int64 buffers, "
                     "values and status writable 1-D buffers (%s, %s) as long", name,
                     value_format, status_format);
        cells_release(cells);
        return -1;
    }
    return 0;
}

/* The first cell whose bounds are outside the data, or -1. */
static Py_ssize_t cells_outside(const Cells *cells)
{
    const int64_t *starts = cells->starts.buf, *ends = cells->ends.buf;
    const Py_ssize_t total = cells->starts.len / 8;
    const int64_t length = (int64_t)cells->data.len;
    for (Py_ssize_t i = 0; i < total; i++)
        if (starts[i] < 0 || starts[i] > ends[i] || ends[i] > length)
            return i;
    return -1;
}

PyDoc_STRVAR(parse_floats_doc,
"parse_floats(data, starts, ends, values, ok) -> int\n\n"
"Reads each cell data[starts[i]:ends[i]] (int64 bounds) as float() does into values[i]\n"
"(float64), ok[i] (bool) saying whether it is a number by small._FLOAT's grammar\n"
"(values[i] is then 0.0 where not). Returns how many are not. The GIL is released.");


/* parse_floats (`ints` 0) and parse_ints (1): the same cells in, values and a status
   out. */
static PyObject *parse_values(PyObject *args, int ints)
{
    const char *name = ints ? "parse_ints" : "parse_floats";
    Cells cells;
    if (cells_get(&cells, args, name, ints ? "q" : "d", ints ? "B" : "?") < 0)
        return NULL;
    const char *data = cells.data.buf;
    const int64_t *starts = cells.starts.buf, *ends = cells.ends.buf;
    double *floats = cells.values.buf;
    int64_t *integers = cells.values.buf;
    unsigned char *status = cells.status.buf;  /* bools (0 or 1) for floats */
    const Py_ssize_t total = cells.starts.len / 8;
    const char *limit = data + cells.data.len;
    Py_ssize_t outside, failed = 0, no_memory = 0;
    Py_BEGIN_ALLOW_THREADS
    outside = cells_outside(&cells);
    for (Py_ssize_t i = 0; outside < 0 && i < total; i++) {
        const char *cell = data + starts[i];
        const size_t size = (size_t)(ends[i] - starts[i]);
        int found;
        if (ints) {
            int64_t value = 0;
            found = parse_cell(cell, size, limit, 1, NULL, &value);
            integers[i] = found == 1 ? value : 0;
            status[i] = (unsigned char)found;  /* 2: an integer beyond int64 */
        } else {
            double value = 0.0;
            found = parse_cell(cell, size, limit, 0, &value, NULL);
            no_memory |= found < 0;
            floats[i] = found == 1 ? value : 0.0;
            status[i] = found == 1;
        }
        failed += found != 1;
    }
    Py_END_ALLOW_THREADS
    cells_release(&cells);
    if (outside >= 0)
        return PyErr_Format(PyExc_ValueError, "%s: cell %zd is outside the data", name,
                            outside);
    if (no_memory)
        return PyErr_NoMemory();
    return PyLong_FromSsize_t(failed);
}

static PyObject *parse_floats(PyObject *self, PyObject *args)
{
    return parse_values(args, 0);
}

PyDoc_STRVAR(parse_ints_doc,
"parse_ints(data, starts, ends, values, status) -> int\n\n"
"Reads each cell data[starts[i]:ends[i]] (int64 bounds) as int() does into values[i]\n"
"(int64), status[i] (uint8) 1 where it is an integer by small._INT's grammar within\n"
"int64, 2 where it is one beyond, 0 where it is none (values[i] is then 0). Returns how\n"
"many are not 1. The GIL is released.");

static PyObject *parse_ints(PyObject *self, PyObject *args)
{
    return parse_values(args, 1);
}

static PyMethodDef methods[] = {
    {"format_floats", format_floats, METH_VARARGS, format_floats_doc},
    {"format_ints", format_ints, METH_VARARGS, format_ints_doc},
    {"parse_floats", parse_floats, METH_VARARGS, parse_floats_doc},
    {"parse_ints", parse_ints, METH_VARARGS, parse_ints_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cumtool._ext._numtext",
    .m_doc = "Number text without the GIL (see the comment at the top of _numtext.c).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__numtext(void)
{
    if (numtext_init() < 0)
        return NULL;
    return PyModule_Create(&module);
}

#endif /* NUMTEXT_CORE_ONLY */
