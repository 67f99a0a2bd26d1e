/* The small path's text loops (cumtool/small.py) in C: cutting a CSV into records,
 * judging and reading a column's number cells, and writing float64s as polars does.
 *
 * Each function does what small.py's Python does with the same input, rule for rule (the
 * fallback when this module is not built); tests/test_small.py compares the two. Numbers
 * are read by CPython's own routine (PyOS_string_to_double is float()'s), so the bits are
 * the same, and written by _numtext.c's numtext_format, included here, whose digits are
 * repr()'s (the shortest, by yyjson's Schubfach; tests/test_numtext.py holds it to repr on 10^7 doubles).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <structmember.h>

#define NUMTEXT_CORE_ONLY
#define NUMTEXT_READER
#include "_numtext.c"
#include "outroom.h"

/* records ----------------------------------------------------------------------------- */

/* A cell's text from UTF-8 bytes; a quoted cell's "" read as one quote. */
static PyObject *cell_text(const char *start, Py_ssize_t size, int doubled, char **scratch,
                           Py_ssize_t *scratch_size)
{
    if (!doubled)
        return PyUnicode_DecodeUTF8(start, size, "strict");
    if (*scratch_size < size) {
        char *bigger = PyMem_Realloc(*scratch, (size_t)size);
        if (bigger == NULL)
            return PyErr_NoMemory();
        *scratch = bigger;
        *scratch_size = size;
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        (*scratch)[kept++] = start[i];
        if (start[i] == '"')
            i++;  /* the second quote of the pair */
    }
    return PyUnicode_DecodeUTF8(*scratch, kept, "strict");
}

PyDoc_STRVAR(records_doc,
"records(data, delimiter) -> list of rows, or None\n\n"
"The records of UTF-8 `data` as small._records_py cuts them with its field pattern: each\n"
"a list of cells, None for an empty unquoted cell. None (for the caller to hand over)\n"
"where a quote breaks RFC 4180. `delimiter` is one ASCII character, not a quote or a\n"
"line end.");

static PyObject *records(PyObject *self, PyObject *args)
{
    Py_buffer data;
    int delimiter;
    if (!PyArg_ParseTuple(args, "y*C", &data, &delimiter))
        return NULL;
    if (delimiter < 0 || delimiter > 127 || delimiter == '"' || delimiter == '\r'
        || delimiter == '\n') {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "records: the delimiter must be one ASCII "
                                          "character other than a quote or a line end");
        return NULL;
    }
    const char *text = data.buf;
    const Py_ssize_t end = data.len;
    const char d = (char)delimiter;
    char *scratch = NULL;
    Py_ssize_t scratch_size = 0;
    PyObject *out = PyList_New(0);
    PyObject *row = PyList_New(0);
    PyObject *cell = NULL, *result = NULL;
    if (out == NULL || row == NULL)
        goto failed;
    Py_ssize_t at = 0;
    while (at < end) {
        if (text[at] == '"') {
            Py_ssize_t close = at + 1;
            int doubled = 0;
            for (;;) {
                if (close >= end)
                    goto handover;  /* no closing quote */
                if (text[close] == '"') {
                    if (close + 1 < end && text[close + 1] == '"') {
                        doubled = 1;
                        close += 2;
                        continue;
                    }
                    break;
                }
                close++;
            }
            cell = cell_text(text + at + 1, close - at - 1, doubled, &scratch, &scratch_size);
            at = close + 1;
        } else {
            Py_ssize_t stop = at;
            while (stop < end && text[stop] != d && text[stop] != '"' && text[stop] != '\r'
                   && text[stop] != '\n')
                stop++;
            if (stop < end && text[stop] == '"')
                goto handover;  /* a quote inside an unquoted cell */
            if (stop == at) {
                cell = Py_None;
                Py_INCREF(cell);
            } else {
                cell = PyUnicode_DecodeUTF8(text + at, stop - at, "strict");
            }
            at = stop;
        }
        if (cell == NULL)
            goto failed;
        /* After a cell: an optional CR, then the delimiter, a line feed or the end. */
        Py_ssize_t next = at < end && text[at] == '\r' ? at + 1 : at;
        int last_of_record;
        if (next == end) {
            last_of_record = 1;
        } else if (text[next] == d || text[next] == '\n') {
            last_of_record = text[next] == '\n';
            next++;
        } else {
            goto handover;
        }
        at = next;
        int appended = PyList_Append(row, cell);
        Py_CLEAR(cell);
        if (appended < 0)
            goto failed;
        if (last_of_record) {
            appended = PyList_Append(out, row);
            Py_DECREF(row);
            row = appended < 0 ? NULL : PyList_New(0);
            if (row == NULL)
                goto failed;
        }
    }
    if (PyList_GET_SIZE(row) > 0) {  /* the text ends with a delimiter: an empty last cell */
        if (PyList_Append(row, Py_None) < 0 || PyList_Append(out, row) < 0)
            goto failed;
    }
    Py_DECREF(row);
    PyMem_Free(scratch);
    PyBuffer_Release(&data);
    return out;
handover:  /* None: the caller hands the run over */
    Py_INCREF(Py_None);
    result = Py_None;
failed:
    Py_XDECREF(cell);
    Py_XDECREF(row);
    Py_XDECREF(out);
    PyMem_Free(scratch);
    PyBuffer_Release(&data);
    return result;
}

/* what a cell is ---------------------------------------------------------------------- */

/* The one rule of what a CSV cell holds, every path's (numtext.cell_kinds_py is its
   Python twin, bit for bit; formats/csv/judge.py, small.py and fast.py all judge by it):
   the cell stripped of Unicode White_Space at both ends (as polars' strip_chars strips),
   then a missing marker, or by numtext's grammar (INT_GRAMMAR, FLOAT_GRAMMAR) an integer
   within int64, an integer beyond it, a float, or other text. With --decimal-comma a
   comma is the point, and a cell that holds a point is not a number. A cell's code is
   its kind, CELL_ZERO where it starts with a leading zero ([+-]?0[0-9]), CELL_EXPONENT
   where it is a float with an exponent or a word (inf, infinity, nan); its places, a
   float's digits after its point where it ends with them and has no exponent, else 0. */
enum { CELL_MISSING = 0, CELL_INT64 = 1, CELL_BIG_INTEGER = 2, CELL_FLOAT = 3,
       CELL_OTHER = 4, CELL_ZERO = 8, CELL_EXPONENT = 16 };

/* The size of the White_Space character (UTF-8) that t[:n] starts with; 0: none. */
static Py_ssize_t space_at(const unsigned char *t, Py_ssize_t n)
{
    if (n >= 1 && ((t[0] >= 9 && t[0] <= 13) || t[0] == ' '))
        return 1;
    if (n >= 2 && t[0] == 0xC2 && (t[1] == 0x85 || t[1] == 0xA0))
        return 2;
    if (n >= 3 && ((t[0] == 0xE1 && t[1] == 0x9A && t[2] == 0x80)
                   || (t[0] == 0xE2 && t[1] == 0x80 && ((t[2] >= 0x80 && t[2] <= 0x8A)
                                                        || t[2] == 0xA8 || t[2] == 0xA9
                                                        || t[2] == 0xAF))
                   || (t[0] == 0xE2 && t[1] == 0x81 && t[2] == 0x9F)
                   || (t[0] == 0xE3 && t[1] == 0x80 && t[2] == 0x80)))
        return 3;
    return 0;
}

/* The size of the White_Space character that t[:n] ends with; 0: none. */
static Py_ssize_t space_before(const unsigned char *t, Py_ssize_t n)
{
    for (Py_ssize_t size = 1; size <= 3 && size <= n; size++)
        if (space_at(t + n - size, size) == size)
            return size;
    return 0;
}

/* An integer's text ([+-]?[0-9]+) within int64. */
static int fits_int64(const unsigned char *t, Py_ssize_t n)
{
    int negative = t[0] == '-';
    Py_ssize_t i = t[0] == '+' || t[0] == '-';
    while (i < n && t[i] == '0')
        i++;
    if (n - i > 19)
        return 0;
    uint64_t magnitude = 0;  /* 19 digits stay below 2**64 */
    for (; i < n; i++)
        magnitude = magnitude * 10 + (uint64_t)(t[i] - '0');
    return magnitude <= (uint64_t)INT64_MAX + (negative ? 1 : 0);
}

static int same_word(const unsigned char *t, Py_ssize_t n, const char *word)
{
    Py_ssize_t size = (Py_ssize_t)strlen(word);
    if (n != size)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = t[i] >= 'A' && t[i] <= 'Z' ? (unsigned char)(t[i] - 'A' + 'a') : t[i];
        if (c != (unsigned char)word[i])
            return 0;
    }
    return 1;
}

/* The code of a cell's stripped text t[:n], not a marker; its places in *places. */
static int number_code(const unsigned char *t, Py_ssize_t n, int comma, Py_ssize_t *places)
{
    *places = 0;
    Py_ssize_t i = n > 0 && (t[0] == '+' || t[0] == '-');
    const int zero = i + 1 < n && t[i] == '0' && is_digit((char)t[i + 1]) ? CELL_ZERO : 0;
    if (comma && n > 0 && memchr(t, '.', (size_t)n) != NULL)
        return zero | CELL_OTHER;
    const unsigned char point = comma ? ',' : '.';
    Py_ssize_t j = i;
    while (j < n && is_digit((char)t[j]))
        j++;
    const Py_ssize_t digits = j - i;
    if (digits && j == n)
        return zero | (fits_int64(t, n) ? CELL_INT64 : CELL_BIG_INTEGER);
    if (same_word(t + i, n - i, "inf") || same_word(t + i, n - i, "infinity")
        || same_word(t + i, n - i, "nan"))
        return zero | CELL_FLOAT | CELL_EXPONENT;
    Py_ssize_t fraction = 0;
    int pointed = 0;
    if (j < n && t[j] == point) {
        pointed = 1;
        j++;
        while (j < n && is_digit((char)t[j])) {
            j++;
            fraction++;
        }
    }
    if (!digits && !fraction)
        return zero | CELL_OTHER;  /* no digit before an exponent */
    int exponent = 0;
    if (j < n && (t[j] == 'e' || t[j] == 'E')) {
        Py_ssize_t k = j + 1;
        if (k < n && (t[k] == '+' || t[k] == '-'))
            k++;
        const Py_ssize_t start = k;
        while (k < n && is_digit((char)t[k]))
            k++;
        if (k > start) {
            j = k;
            exponent = 1;
        }
    }
    if (j != n)
        return zero | CELL_OTHER;
    if (exponent)
        return zero | CELL_FLOAT | CELL_EXPONENT;
    *places = pointed ? fraction : 0;
    return zero | CELL_FLOAT;
}

/* The missing markers as UTF-8 bytes (a sequence of bytes), read once a call. */
typedef struct {
    PyObject *list;  /* a new reference: holds the bytes */
    Py_ssize_t count;
} Markers;

static int markers_of(PyObject *markers, Markers *m)
{
    m->list = PySequence_List(markers);
    if (m->list == NULL)
        return -1;
    m->count = PyList_GET_SIZE(m->list);
    for (Py_ssize_t k = 0; k < m->count; k++)
        if (!PyBytes_Check(PyList_GET_ITEM(m->list, k))) {
            PyErr_SetString(PyExc_TypeError, "the markers must be bytes");
            Py_CLEAR(m->list);
            return -1;
        }
    return 0;
}

static int is_marker(const Markers *m, const unsigned char *t, Py_ssize_t n)
{
    for (Py_ssize_t k = 0; k < m->count; k++) {
        PyObject *word = PyList_GET_ITEM(m->list, k);
        if (PyBytes_GET_SIZE(word) == n && memcmp(PyBytes_AS_STRING(word), t, (size_t)n) == 0)
            return 1;
    }
    return 0;
}

/* Cell bounds as cut cuts them: cell r is data[starts[r]:ends[r]] with flags[r] (0 an
   unquoted cell, missing where empty; 1 a quoted one; 2 a quoted one whose doubled
   quotes are one). */
typedef struct {
    Py_buffer data, starts, ends, flags;
    Py_ssize_t rows;
    int held;  /* how many of the buffers above are held */
    unsigned char *scratch;
    Py_ssize_t scratch_size;
} Bounds;

static int bounds_of(PyObject *args, PyObject **markers, int *comma, PyObject **codes,
                     PyObject **places, Bounds *b, const char *format)
{
    memset(b, 0, sizeof *b);
    if (!PyArg_ParseTuple(args, format, &b->data, &b->starts, &b->ends, &b->flags, markers,
                          comma, codes, places))
        return -1;
    b->held = 4;
    b->rows = b->flags.len;
    if (b->starts.len != b->rows * 8 || b->ends.len != b->rows * 8) {
        PyErr_SetString(PyExc_ValueError, "starts and ends 8 bytes a cell, flags one");
        return -1;
    }
    return 0;
}

static void bounds_release(Bounds *b)
{
    if (b->held) {
        PyBuffer_Release(&b->data);
        PyBuffer_Release(&b->starts);
        PyBuffer_Release(&b->ends);
        PyBuffer_Release(&b->flags);
    }
    PyMem_Free(b->scratch);
}

/* The code of cell r (and its places); -1 with an error. */
static int cell_code(Bounds *b, const Markers *m, int comma, Py_ssize_t r, Py_ssize_t *places)
{
    const int64_t a = ((const int64_t *)b->starts.buf)[r], z = ((const int64_t *)b->ends.buf)[r];
    const unsigned char flag = ((const unsigned char *)b->flags.buf)[r];
    *places = 0;
    if (a < 0 || z < a || z > b->data.len) {
        PyErr_SetString(PyExc_ValueError, "a cell out of the data");
        return -1;
    }
    if (z == a && flag == 0)
        return CELL_MISSING;
    const unsigned char *t = (const unsigned char *)b->data.buf + a;
    Py_ssize_t n = (Py_ssize_t)(z - a);
    if (flag == 2) {  /* "" read as one quote */
        if (b->scratch_size < n) {
            unsigned char *bigger = PyMem_Realloc(b->scratch, (size_t)n);
            if (bigger == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            b->scratch = bigger;
            b->scratch_size = n;
        }
        Py_ssize_t kept = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            b->scratch[kept++] = t[i];
            if (t[i] == '"')
                i++;
        }
        t = b->scratch;
        n = kept;
    }
    Py_ssize_t size;
    while ((size = space_at(t, n)) > 0) {
        t += size;
        n -= size;
    }
    while ((size = space_before(t, n)) > 0)
        n -= size;
    if (is_marker(m, t, n))
        return CELL_MISSING;
    return number_code(t, n, comma, places);
}

PyDoc_STRVAR(cell_kinds_doc,
"cell_kinds(data, starts, ends, flags, markers, decimal_comma, codes, places) -> None\n\n"
"numtext.cell_kinds_py: the code of each cell data[starts[r]:ends[r]] (flags[r]: 0\n"
"unquoted, missing where empty; 1 quoted; 2 quoted with doubled quotes) into codes[r]\n"
"(uint8), and its places into places[r] (int64; places may be None). `markers`: the\n"
"missing markers as UTF-8 bytes.");

static PyObject *cell_kinds(PyObject *self, PyObject *args)
{
    Bounds b;
    PyObject *markers, *codes_object, *places_object, *result = NULL;
    int comma;
    Markers m = {NULL, 0};
    Py_buffer codes = {0}, places = {0};
    int held = 0;
    if (bounds_of(args, &markers, &comma, &codes_object, &places_object, &b,
                  "y*y*y*y*OpOO") < 0 || markers_of(markers, &m) < 0)
        goto done;
    if (PyObject_GetBuffer(codes_object, &codes, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    held = 1;
    if (places_object != Py_None) {
        if (PyObject_GetBuffer(places_object, &places, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        held = 2;
    }
    if (codes.len != b.rows || (held == 2 && places.len != b.rows * 8)) {
        PyErr_SetString(PyExc_ValueError, "cell_kinds: codes one byte a cell, places eight");
        goto done;
    }
    unsigned char *c = codes.buf;
    int64_t *p = held == 2 ? places.buf : NULL;
    for (Py_ssize_t r = 0; r < b.rows; r++) {
        Py_ssize_t found;
        const int code = cell_code(&b, &m, comma, r, &found);
        if (code < 0)
            goto done;
        c[r] = (unsigned char)code;
        if (p != NULL)
            p[r] = (int64_t)found;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    if (held >= 1)
        PyBuffer_Release(&codes);
    if (held == 2)
        PyBuffer_Release(&places);
    Py_XDECREF(m.list);
    bounds_release(&b);
    return result;
}

PyDoc_STRVAR(judge_bounds_doc,
"judge_bounds(data, starts, ends, flags, markers) -> (cells, leading_zero, kind)\n\n"
"numtext.judge_bounds_py: of the cells cell_kinds reads (without --decimal-comma), how\n"
"many are not missing, whether any of those has a leading zero, and what they all are\n"
"(0 integers within int64, 1 integers, 2 numbers, 3 anything else).");

static PyObject *judge_bounds(PyObject *self, PyObject *args)
{
    Bounds b;
    PyObject *markers, *unused = NULL, *result = NULL;
    int comma = 0;
    Markers m = {NULL, 0};
    if (bounds_of(args, &markers, &comma, &unused, &unused, &b, "y*y*y*y*O") < 0
        || markers_of(markers, &m) < 0)
        goto done;
    Py_ssize_t count = 0;
    int zero = 0, kind = CELL_INT64;
    for (Py_ssize_t r = 0; r < b.rows; r++) {
        Py_ssize_t places;
        const int code = cell_code(&b, &m, 0, r, &places);
        if (code < 0)
            goto done;
        if (code == CELL_MISSING)
            continue;
        count++;
        zero = zero || (code & CELL_ZERO);
        if ((code & 7) > kind)
            kind = code & 7;
    }
    result = Py_BuildValue("nOi", count, zero ? Py_True : Py_False, kind - CELL_INT64);
done:
    Py_XDECREF(m.list);
    bounds_release(&b);
    return result;
}

/* float texts ------------------------------------------------------------------------- */

/* Each value as small._float_text(repr(value), value, 16, -5): numtext_format (from
   _numtext.c, on the shortest digits, the digits of repr), which needs neither the GIL
   nor an allocation. */

/* An ASCII text as a str, without decoding. */
static PyObject *ascii_text(const char *text, Py_ssize_t size)
{
    PyObject *out = PyUnicode_New(size, 127);
    if (out != NULL)
        memcpy(PyUnicode_DATA(out), text, (size_t)size);
    return out;
}

PyDoc_STRVAR(float_texts_doc,
"float_texts(values, missing, null) -> list[str]\n\n"
"small._numbers of a float64 column: each value as polars writes it (small._float_text\n"
"of its repr), `null` where `missing` (a bool buffer, or None) is True.");

static PyObject *float_texts(PyObject *self, PyObject *args)
{
    PyObject *values_obj, *missing_obj, *null;
    if (!PyArg_ParseTuple(args, "OOU", &values_obj, &missing_obj, &null))
        return NULL;
    Py_buffer values, missing = {0};
    if (PyObject_GetBuffer(values_obj, &values, PyBUF_FORMAT | PyBUF_ND) < 0)
        return NULL;
    int fits = values.ndim == 1 && values.itemsize == 8 && values.format != NULL
        && strcmp(values.format, "d") == 0;
    if (fits && missing_obj != Py_None) {
        if (PyObject_GetBuffer(missing_obj, &missing, PyBUF_FORMAT | PyBUF_ND) < 0) {
            PyBuffer_Release(&values);
            return NULL;
        }
        fits = missing.ndim == 1 && missing.itemsize == 1 && missing.format != NULL
            && strcmp(missing.format, "?") == 0 && missing.shape[0] == values.shape[0];
    }
    PyObject *out = NULL;
    if (!fits) {
        PyErr_SetString(PyExc_TypeError, "float_texts: values must be a C-contiguous 1-D "
                                         "float64 buffer, missing None or bools as many");
        goto done;
    }
    Py_ssize_t total = values.shape[0];
    out = PyList_New(total);
    if (out == NULL)
        goto done;
    const double *v = values.buf;
    for (Py_ssize_t i = 0; i < total; i++) {
        PyObject *text;
        if (missing.obj != NULL && ((const char *)missing.buf)[i]) {
            text = null;
            Py_INCREF(text);
        } else {
            char buffer[NUMTEXT_FORMAT_MAX];
            text = ascii_text(buffer, numtext_format(v[i], buffer));
        }
        if (text == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, text);
    }
done:
    PyBuffer_Release(&values);
    if (missing.obj != NULL)
        PyBuffer_Release(&missing);
    return out;
}


/* the streaming pipeline (cumtool/formats/csv/fast.py) ---------------------------- */

/* Bytes the small path hands over on wherever they are (small._records): a NUL, the
   characters U+001C-U+001F (str.strip strips them, polars does not), a CR not followed by
   a LF, and bytes that are not UTF-8. 1 if data[begin:end] holds none. */
static int clean_text(const unsigned char *t, Py_ssize_t begin, Py_ssize_t end)
{
    Py_ssize_t i = begin;
    while (i < end) {
        unsigned char c = t[i];
        if (c >= 0x20 && c < 0x80) {
            i++;
            continue;
        }
        if (c < 0x80) {
            if (c == 0 || (c >= 0x1c && c <= 0x1f))
                return 0;
            if (c == '\r' && (i + 1 >= end || t[i + 1] != '\n'))
                return 0;
            i++;
            continue;
        }
        /* UTF-8 as Python's strict decoder takes it: no overlong forms, no surrogates,
           nothing beyond U+10FFFF */
        Py_ssize_t size;
        unsigned char low = 0x80, high = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            size = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            size = 3;
            if (c == 0xe0)
                low = 0xa0;
            else if (c == 0xed)
                high = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            size = 4;
            if (c == 0xf0)
                low = 0x90;
            else if (c == 0xf4)
                high = 0x8f;
        } else {
            return 0;
        }
        if (i + size > end || t[i + 1] < low || t[i + 1] > high)
            return 0;
        for (Py_ssize_t k = 2; k < size; k++)
            if (t[i + k] < 0x80 || t[i + k] > 0xbf)
                return 0;
        i += size;
    }
    return 1;
}

enum { CUT_DONE = 0, CUT_FULL = 1, CUT_UNSURE = 2 };

/* x86-64 always has SSE2; elsewhere cut reads a byte at a time (the same cells) */
#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>
#define CUT_SSE2 1
#else
#define CUT_SSE2 0
#endif

/* The records of t[begin:n] cut into cells (cut's doc says how), without the GIL: the
   one cutter of this path, for cut() and the pipeline below. Returns the status; the
   rows cut and where they end through *rows_out and *end_out. */
static int cut_rows(const unsigned char *t, Py_ssize_t n, Py_ssize_t begin, int delimiter,
                    Py_ssize_t width, int final, int64_t *starts, int64_t *ends,
                    unsigned char *flags, Py_ssize_t capacity, Py_ssize_t *rows_out,
                    Py_ssize_t *end_out)
{
    const unsigned char d = (unsigned char)delimiter;
    Py_ssize_t rows = 0, end = begin;
    int status = CUT_DONE;
    /* What each byte is to the cutter: most are PLAIN and end nothing; HIGH and BAD
       bytes are checked only in the records that hold them (clean_text). */
    enum { PLAIN = 0, DELIMITER, LF, CR, QUOTE, BAD, HIGH };
    unsigned char kind[256];
    memset(kind, PLAIN, 128);
    memset(kind + 128, HIGH, 128);
    kind[0] = BAD;
    for (int c = 0x1c; c <= 0x1f; c++)
        kind[c] = BAD;
    kind['\n'] = LF;
    kind['\r'] = CR;
    kind['"'] = QUOTE;
    kind[d] = DELIMITER;
#if CUT_SSE2
    const __m128i sse_delimiter = _mm_set1_epi8((char)d);
    const __m128i sse_quote = _mm_set1_epi8('"');
    const __m128i sse_space = _mm_set1_epi8(0x20);
#endif
    Py_ssize_t at = begin;
    while (at < n) {
        if (rows == capacity) {
            status = CUT_FULL;
            break;
        }
        Py_ssize_t field = 0;
        int unsure = 0, blank = 0, unfinished = 0, check = 0;
        for (;;) {
            Py_ssize_t cell_start, cell_end;
            unsigned char flag;
            if (at < n && t[at] == '"') {
                const unsigned char *close_at;
                Py_ssize_t close = at + 1;
                flag = 1;
                check = 1;  /* a quoted cell may hold anything: the record is checked */
                for (;;) {
                    close_at = close < n ? memchr(t + close, '"', (size_t)(n - close)) : NULL;
                    if (close_at == NULL) {
                        unfinished = 1;
                        break;
                    }
                    close = close_at - t;
                    if (close + 1 < n && t[close + 1] == '"') {
                        flag = 2;
                        close += 2;
                        continue;
                    }
                    if (close + 1 >= n && !final)
                        unfinished = 1;  /* the next byte may be a second quote */
                    break;
                }
                if (unfinished)
                    break;
                cell_start = at + 1;
                cell_end = close;
                at = close + 1;
            } else {
                Py_ssize_t stop = at;
                unsigned char k = PLAIN;
                for (;;) {
#if CUT_SSE2
                    /* 16 bytes at a time to the next delimiter, quote, control or
                       non-ASCII byte (signed: 0x80-0xff are below 0x20 too) */
                    while (stop + 16 <= n) {
                        const __m128i v = _mm_loadu_si128((const __m128i *)(t + stop));
                        const __m128i hit = _mm_or_si128(
                            _mm_or_si128(_mm_cmpeq_epi8(v, sse_delimiter),
                                         _mm_cmpeq_epi8(v, sse_quote)),
                            _mm_cmplt_epi8(v, sse_space));
                        const int mask = _mm_movemask_epi8(hit);
                        if (mask == 0) {
                            stop += 16;
                            continue;
                        }
                        stop += __builtin_ctz((unsigned)mask);
                        break;
                    }
#endif
                    if (stop >= n)
                        break;
                    k = kind[t[stop]];
                    if (k == PLAIN) {
                        stop++;
                    } else if (k >= BAD) {
                        check = 1;
                        stop++;
                    } else {
                        break;
                    }
                }
                if (stop < n && k == QUOTE) {
                    unsure = 1;  /* a quote inside an unquoted cell */
                    break;
                }
                cell_start = at;
                cell_end = stop;
                flag = 0;
                at = stop;
            }
            /* after a cell: a CR only before a LF; then the delimiter, a LF or the end */
            Py_ssize_t next = at;
            if (next < n && t[next] == '\r') {
                if (next + 1 >= n) {
                    unfinished = !final;
                    unsure = final;
                    break;
                }
                if (t[next + 1] != '\n') {
                    unsure = 1;
                    break;
                }
                next++;
            }
            int last;
            if (next >= n) {
                if (!final) {
                    unfinished = 1;
                    break;
                }
                last = 1;
            } else if (t[next] == d) {
                last = 0;
                next++;
            } else if (t[next] == '\n') {
                last = 1;
                next++;
            } else {
                unsure = 1;  /* text after a closing quote */
                break;
            }
            if (field < width) {
                starts[field * capacity + rows] = cell_start;
                ends[field * capacity + rows] = cell_end;
                flags[field * capacity + rows] = flag;
            }
            if (field == 0 && last && flag == 0 && cell_start == cell_end)
                blank = 1;
            field++;
            at = next;
            if (last)
                break;
        }
        if (unfinished && !unsure) {
            if (final)
                status = CUT_UNSURE;  /* a quote never closed */
            break;
        }
        if (unsure || (!blank && field != width) || (check && !clean_text(t, end, at))) {
            status = CUT_UNSURE;
            break;
        }
        if (!blank)
            rows++;
        end = at;
    }
    *rows_out = rows;
    *end_out = end;
    return status;
}

PyDoc_STRVAR(cut_doc,
"cut(data, begin, delimiter, width, final, starts, ends, flags) -> (rows, end, status)\n\n"
"fast.cut_py in C: the records of data[begin:] cut into cells as small._records cuts\n"
"them (blank lines skipped), each cell's bounds written column by column: cell j of\n"
"row r at [j * capacity + r] of `starts` and `ends` (int64) and `flags` (uint8: 0\n"
"unquoted, 1 quoted, 2 quoted with doubled quotes inside; the bounds are inside the\n"
"quotes), capacity being len(flags) // width. Stops after `capacity` rows, or before a\n"
"record the data do not finish (unless `final`: the data end there). `end` is where the\n"
"rows read end; status 0: every whole record read, 1: stopped at capacity, 2: the\n"
"record at `end` is one the small path hands over on (a stray quote, another field\n"
"count, a lone CR, a NUL, U+001C-U+001F, bytes that are not UTF-8). The GIL is\n"
"released.");

static PyObject *cut(PyObject *self, PyObject *args)
{
    Py_buffer data, starts_view, ends_view, flags_view;
    Py_ssize_t begin, width;
    int delimiter, final;
    if (!PyArg_ParseTuple(args, "y*nCnpw*w*w*", &data, &begin, &delimiter, &width, &final,
                          &starts_view, &ends_view, &flags_view))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t capacity = width > 0 ? flags_view.len / width : 0;
    if (delimiter < 0 || delimiter > 127 || delimiter == '"' || delimiter == '\r'
        || delimiter == '\n' || width <= 0 || begin < 0 || begin > data.len
        || starts_view.len != capacity * width * 8 || ends_view.len != capacity * width * 8
        || flags_view.len != capacity * width) {
        PyErr_SetString(PyExc_ValueError, "cut: a one-byte ASCII delimiter, width > 0, "
                        "begin within the data, starts and ends 8 bytes a cell, flags one");
        goto done;
    }
    Py_ssize_t rows, end;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = cut_rows(data.buf, data.len, begin, delimiter, width, final, starts_view.buf,
                      ends_view.buf, flags_view.buf, capacity, &rows, &end);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("nni", rows, end, status);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts_view);
    PyBuffer_Release(&ends_view);
    PyBuffer_Release(&flags_view);
    return result;
}

/* One output column of assemble: an input column's cells, or a result's numbers, or a
   result's text made beforehand. */
typedef struct {
    Py_ssize_t column;   /* the input column, or -1: a result */
    int kind;            /* a result's values: 'd' float64, 'q' int64, 't' text */
    Py_buffer values, missing, null;  /* a result's (missing.obj NULL: none missing);
                                         text: values the offsets, null the text */
} OutColumn;

/* A result column taken for assemble: (values, missing, null), values a 1-D C-contiguous
   float64 or int64 buffer of `rows` items, missing None or as many bools, null bytes. */
static int take_numbers(OutColumn *column, PyObject *item, Py_ssize_t rows)
{
    PyObject *values = PyTuple_GET_ITEM(item, 0), *missing = PyTuple_GET_ITEM(item, 1);
    if (PyObject_GetBuffer(values, &column->values, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    const char *format = column->values.format ? column->values.format : "B";
    if (column->values.itemsize == 8 && column->values.ndim == 1 && strcmp(format, "d") == 0)
        column->kind = 'd';
    else if (column->values.itemsize == 8 && column->values.ndim == 1
             && (strcmp(format, "q") == 0 || strcmp(format, "l") == 0))
        column->kind = 'q';
    int fits = column->kind != 0 && column->values.shape[0] == rows;
    if (fits && missing != Py_None) {
        if (PyObject_GetBuffer(missing, &column->missing, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            goto failed;
        fits = column->missing.ndim == 1 && column->missing.itemsize == 1
            && column->missing.format != NULL && strcmp(column->missing.format, "?") == 0
            && column->missing.shape[0] == rows;
    }
    if (fits && PyObject_GetBuffer(PyTuple_GET_ITEM(item, 2), &column->null, PyBUF_SIMPLE) == 0)
        return 0;
    if (fits)
        goto failed;  /* the error of null's buffer */
    PyErr_SetString(PyExc_ValueError, "assemble: a result's values must be rows float64s or "
                    "int64s (C-contiguous), missing None or as many bools, null bytes");
failed:
    if (column->missing.obj != NULL)
        PyBuffer_Release(&column->missing);
    PyBuffer_Release(&column->values);
    column->kind = 0;
    return -1;
}

/* A result's text taken for assemble: (text, offsets), row r's cell text[offsets[r]:
   offsets[r + 1]], offsets rows + 1 int64s (C-contiguous); checked where they are read. */
static int take_text(OutColumn *column, PyObject *item, Py_ssize_t rows)
{
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), &column->null, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &column->values,
                           PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
        const char *format = column->values.format ? column->values.format : "B";
        if (column->values.itemsize == 8 && column->values.ndim == 1
            && (strcmp(format, "q") == 0 || strcmp(format, "l") == 0)
            && column->values.shape[0] == rows + 1) {
            column->kind = 't';
            return 0;
        }
        PyBuffer_Release(&column->values);
        PyErr_SetString(PyExc_ValueError, "assemble: a result's text needs rows + 1 int64 "
                        "offsets (C-contiguous)");
    }
    PyBuffer_Release(&column->null);
    return -1;
}

static void let_column_go(OutColumn *column)
{
    if (column->column >= 0 || column->values.obj == NULL)
        return;
    PyBuffer_Release(&column->values);
    if (column->missing.obj != NULL)
        PyBuffer_Release(&column->missing);
    if (column->null.obj != NULL)
        PyBuffer_Release(&column->null);
}

/* Whether an input cell needs quotes in the output (small._write's rules). */
static int needs_quotes(const unsigned char *s, Py_ssize_t size, unsigned char flag,
                        unsigned char out, int empty_quoted)
{
    if (flag == 2)
        return 1;  /* it holds a quote */
    if (size == 0)
        return empty_quoted;
    for (Py_ssize_t i = 0; i < size; i++)
        if (s[i] == out || s[i] == '\r' || s[i] == '\n')
            return 1;
    return 0;
}

PyDoc_STRVAR(assemble_doc,
"assemble(data, starts, ends, flags, capacity, rows, columns, delimiter, by_sink,\n"
"         single) -> bytes\n\n"
"fast.assemble_py in C: `rows` lines of output, each the `columns` (an int: that\n"
"input column's cells, as cut() wrote their bounds with `capacity`; a triple (values,\n"
"missing, null): a result's float64 or int64 values written as format_floats and\n"
"format_ints write them, `null` where `missing`, a bool array or None; a pair (text,\n"
"offsets): a result's cells written beforehand, row r's text[offsets[r]:offsets[r + 1]])\n"
"joined by\n"
"`delimiter`, input cells quoted as small._write quotes text (`by_sink`: CsvSink quotes\n"
"it itself; `single`: a row's only cell). The GIL is released.\n\n"
"`into`, a bytearray no view holds: the lines are written at its start (it grows, never\n"
"shrinks) and their size is returned, so that a writer reuses one buffer instead of\n"
"memory the system maps, faults in and unmaps batch after batch; a bytearray a view\n"
"holds is left alone (bytes are returned, as without `into`).");

static PyObject *assemble(PyObject *self, PyObject *args)
{
    Py_buffer data, starts_view, ends_view, flags_view;
    Py_ssize_t capacity, rows;
    PyObject *columns;
    int delimiter, by_sink, single;
    PyObject *into = Py_None;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nnO!Cpp|O", &data, &starts_view, &ends_view,
                          &flags_view, &capacity, &rows, &PyList_Type, &columns, &delimiter,
                          &by_sink, &single, &into))
        return NULL;
    PyObject *out = NULL, *made = NULL;
    const Py_ssize_t count = PyList_GET_SIZE(columns);
    OutColumn *plan = PyMem_Calloc((size_t)(count > 0 ? count : 1), sizeof(OutColumn));
    Py_ssize_t filled = 0;
    if (plan == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (outroom_check(into, "assemble") < 0)
        goto done;
    const Py_ssize_t cells = flags_view.len;
    if (delimiter < 0 || delimiter > 127 || rows < 0 || capacity < rows || count == 0
        || starts_view.len != cells * 8 || ends_view.len != cells * 8) {
        PyErr_SetString(PyExc_ValueError, "assemble: a one-byte ASCII delimiter, columns, "
                        "and starts, ends and flags as cut() fills them");
        goto done;
    }
    const Py_ssize_t width = capacity > 0 ? cells / capacity : 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *item = PyList_GET_ITEM(columns, k);
        plan[k].column = -1;
        if (PyLong_Check(item)) {
            Py_ssize_t column = PyLong_AsSsize_t(item);
            if (column == -1 && PyErr_Occurred())
                goto done;
            if (column < 0 || column >= width) {
                PyErr_SetString(PyExc_ValueError, "assemble: an input column out of range");
                goto done;
            }
            plan[k].column = column;
            continue;
        }
        if (!PyTuple_Check(item) || (PyTuple_GET_SIZE(item) != 3
                                     && PyTuple_GET_SIZE(item) != 2)) {
            PyErr_SetString(PyExc_TypeError, "assemble: a column is an int, (values, "
                            "missing, null) or (text, offsets)");
            goto done;
        }
        if ((PyTuple_GET_SIZE(item) == 3 ? take_numbers(&plan[k], item, rows)
             : take_text(&plan[k], item, rows)) < 0)
            goto done;
        filled = k + 1;
    }
    filled = count;
    const unsigned char *t = data.buf;
    const int64_t *starts = starts_view.buf, *ends = ends_view.buf;
    const unsigned char *flags = flags_view.buf;
    /* The checks and the size walk every cell: without the GIL, as the writing does (on
       many threads, a loop over cells with the GIL held stalls every other worker). */
    int outside = 0, too_big = 0;
    Py_ssize_t size = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t c = 0; c < cells && !outside; c++)
        if ((starts[c] < 0 || starts[c] > ends[c] || ends[c] > data.len)
            && c % (capacity > 0 ? capacity : 1) < rows)
            outside = 1;
    /* the size: every cell at most its bytes and two quotes, a delimiter or line end */
    for (Py_ssize_t k = 0; k < count && !outside && !too_big; k++) {
        if (plan[k].kind == 't') {
            const int64_t *at = plan[k].values.buf;
            for (Py_ssize_t r = 0; r < rows && !outside; r++)
                if (at[r] < 0 || at[r] > at[r + 1] || at[r + 1] > plan[k].null.len)
                    outside = 1;
                else
                    size += (Py_ssize_t)(at[r + 1] - at[r]) + 1;
        } else if (plan[k].column < 0) {
            const Py_ssize_t longest = plan[k].kind == 'q' ? 20 : NUMTEXT_FORMAT_MAX;
            const Py_ssize_t widest = plan[k].null.len > longest ? plan[k].null.len : longest;
            if (widest + 1 > (PY_SSIZE_T_MAX - size) / (rows > 0 ? rows : 1))
                too_big = 1;
            else
                size += (widest + 1) * rows;
        } else {
            const Py_ssize_t base = plan[k].column * capacity;
            for (Py_ssize_t r = 0; r < rows; r++)
                size += (Py_ssize_t)(ends[base + r] - starts[base + r]) + 3;
        }
    }
    Py_END_ALLOW_THREADS
    if (outside) {
        PyErr_SetString(PyExc_ValueError, "assemble: a cell outside the data");
        goto done;
    }
    if (too_big) {
        PyErr_NoMemory();
        goto done;
    }
    unsigned char *o = (unsigned char *)outroom_take(into, size, &made);
    if (o == NULL)
        goto done;
    const unsigned char d = (unsigned char)delimiter;
    Py_ssize_t written = 0;
    Py_BEGIN_ALLOW_THREADS
    unsigned char *p = o;
    for (Py_ssize_t r = 0; r < rows; r++) {
        for (Py_ssize_t k = 0; k < count; k++) {
            if (k)
                *p++ = d;
            if (plan[k].column < 0) {
                const OutColumn *column = &plan[k];
                if (column->kind == 't') {
                    const int64_t *at = column->values.buf;
                    memcpy(p, (const char *)column->null.buf + at[r], (size_t)(at[r + 1] - at[r]));
                    p += at[r + 1] - at[r];
                } else if (column->missing.obj != NULL && ((const char *)column->missing.buf)[r]) {
                    memcpy(p, column->null.buf, (size_t)column->null.len);
                    p += column->null.len;
                } else if (column->kind == 'd') {
                    p += numtext_format(((const double *)column->values.buf)[r], (char *)p);
                } else {
                    p += int_text(((const int64_t *)column->values.buf)[r], (char *)p);
                }
                continue;
            }
            const Py_ssize_t c = plan[k].column * capacity + r;
            const unsigned char *s = t + starts[c];
            const Py_ssize_t length = (Py_ssize_t)(ends[c] - starts[c]);
            /* an empty cell: polars writes a missing one (unquoted) empty and quotes an
               empty text; CsvSink quotes either only as a row's only cell */
            const int empty_quoted = by_sink ? single : flags[c] != 0;
            if (needs_quotes(s, length, flags[c], d, empty_quoted)) {
                *p++ = '"';
                memcpy(p, s, (size_t)length);  /* quotes inside are doubled already */
                p += length;
                *p++ = '"';
            } else {
                memcpy(p, s, (size_t)length);
                p += length;
            }
        }
        *p++ = '\n';
    }
    written = p - o;
    Py_END_ALLOW_THREADS
    out = outroom_result(made, written);
    made = NULL;
done:
    Py_XDECREF(made);
    for (Py_ssize_t k = 0; k < filled; k++)
        let_column_go(&plan[k]);
    PyMem_Free(plan);
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts_view);
    PyBuffer_Release(&ends_view);
    PyBuffer_Release(&flags_view);
    return out;
}

/* the dialect's record end (formats/csv/dialect.py) ----------------------------- */

/* The last `c` in buf[0:n], or NULL. */
static const char *last_byte(const char *buf, Py_ssize_t n, char c)
{
#if defined(__GLIBC__)
    return n > 0 ? memrchr(buf, c, (size_t)n) : NULL;
#else
    while (n-- > 0)
        if (buf[n] == c)
            return buf + n;
    return NULL;
#endif
}

/* The quotes in buf[0:n]. */
static Py_ssize_t count_quotes(const char *buf, Py_ssize_t n)
{
    Py_ssize_t quotes = 0;
    for (const char *at = buf, *stop = buf + n;
         (at = memchr(at, '"', (size_t)(stop - at))) != NULL; at++)
        quotes++;
    return quotes;
}

/* The end of the last record in a block read at any offset of the input (the pipeline
   reads a file's blocks at fixed offsets, at once; count_quotes on them at once too),
   where the block starts inside quotes (`quoted`) or not, -1 where there is none: just
   past its last LF with an even count of quotes before it, counting `quoted` as one.
   Backward, a stretch between quotes at a time (a stretch's LFs share one state): the
   serial step that chains the blocks walks the last line or two. */
static Py_ssize_t block_end(const char *buf, Py_ssize_t n, Py_ssize_t quotes, int quoted)
{
    Py_ssize_t end = n, after = 0;  /* after: the quotes after the stretch */
    for (;;) {
        const char *quote = after < quotes ? last_byte(buf, end, '"') : NULL;
        const Py_ssize_t begin = quote != NULL ? quote - buf + 1 : 0;
        if (((quotes - after + quoted) & 1) == 0) {  /* the stretch lies outside quotes */
            const char *lf = last_byte(buf + begin, end - begin, '\n');
            if (lf != NULL)
                return lf - buf + 1;
        }
        if (quote == NULL)
            return -1;
        after++;
        end = begin - 1;
    }
}

/* The end of the last whole record in buf[0:n] (just past a LF outside quotes; buf
   starts a record), or -1. */
static Py_ssize_t last_record_end(const char *buf, Py_ssize_t n)
{
    return block_end(buf, n, count_quotes(buf, n), 0);
}

PyDoc_STRVAR(last_record_end_doc,
"last_record_end(data, quoted=False) -> int\n\n"
"formats/csv/dialect.last_record_end in C, walked from the end (block_end): just past\n"
"the last LF outside quotes in data, which starts a record, or inside quotes where\n"
"`quoted` (a block read at any offset); -1 where there is none. The pipeline's reader\n"
"cuts chunks there.");

static PyObject *last_record_end_py(PyObject *self, PyObject *args)
{
    Py_buffer data;
    int quoted = 0;
    if (!PyArg_ParseTuple(args, "y*|p", &data, &quoted))
        return NULL;
    const Py_ssize_t end = block_end(data.buf, data.len, count_quotes(data.buf, data.len),
                                     quoted);
    PyBuffer_Release(&data);
    return PyLong_FromSsize_t(end);
}

/* the compiled pipeline (formats/csv/fast.py's _Job, in one call) --------------- */

/* A run's rows in C from the bytes read to the bytes written, with no GIL held but to
   read a stream and to hand out each chunk's output (docs/architecture.md, "Every
   core"). The input comes in chunks of whole records (a LF outside quotes ends each):
   a regular file's blocks read by the pool at once (chain_blocks), or what the caller
   reads (read_chunk: standard input, a pipe); a pool of threads cuts each chunk and parses its scanned columns, scans them with the
   carried values in chunk order (the one serial step, ~1 ns a cell), and writes the
   chunk's output text; the caller takes the outputs in order. Whatever the Python path
   would hand over on (a record or cell it is unsure of, an int64 overflow), stops the
   pipeline at that chunk: every chunk before it is output, and `status` says why. */

#include "logaddexp.h"
#include "statsteps.h"

#if !defined(_WIN32)
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#define CSV_PIPELINE 1
#else
#define CSV_PIPELINE 0
#endif

#if CSV_PIPELINE

/* the accumulating ops; then the running statistics (fast.py's _PIPELINE_OPS) */
enum { OP_SUM = 0, OP_PROD, OP_MAX, OP_MIN, OP_LSE, OP_COUNT, OP_MEAN, OP_DIFF, OP_VAR,
       OP_STD, OP_EWMA, OP_LAST = OP_EWMA };
enum { STOP_NONE = 0, STOP_HANDOVER = 1, STOP_SCAN = 2, STOP_MEMORY = 3 };
/* a scan's options (fast.py's _SCAN_OPTIONS) */
enum { SCAN_SKIPNA = 1, SCAN_EXCLUSIVE = 2, SCAN_WRAP = 4 };
enum { SLOT_FREE = 0, SLOT_FILLED, SLOT_CUTTING, SLOT_PARSED, SLOT_SCANNED, SLOT_FORMATTING,
       SLOT_READY, SLOT_STOPPED, SLOT_LENT,
       /* a file's block read by the pool (Pipeline.blocks): to read, being read, read and
          waiting for the blocks before it to be chained (chain_blocks), then FILLED */
       SLOT_WANTED, SLOT_READING, SLOT_READ };
/* A file's block is read after this much room, where the record begun in the block
   before it is copied (a longer one moves the block) */
enum { BLOCK_ROOM = 1 << 16 };

typedef struct {
    Py_ssize_t column;   /* the input column */
    int ints;            /* int64 cells, else float64 */
} ParsePlan;

/* A running statistic's state (cumtool/stats.py's kernels' fields): the count of
   present values, and the op's own (cummean: the running sum in a; diff: the last
   present value, in a or q; cumvar, cumstd: Welford's m in a, M2 in b; ewma: y in a).
   All zeros before any value, as the kernels start. */
typedef struct {
    int64_t n;
    double a, b;
    int64_t q;
} StatState;

/* ewma's weights (Ewma.tables, settled: the last entry holds for every later count) */
typedef struct {
    double *old, *total;
    int64_t last;        /* their last index */
    double new_weight;
} EwmaWeights;

typedef struct {
    Py_ssize_t parsed;   /* its column's index among the parsed ones */
    Py_ssize_t result;   /* where its results go among a chunk's numbers: in place of its
                            column's values where it is the column's one scan */
    int op, ints;        /* ints: the column's cells are int64, else float64 */
    int cast;            /* the column's int64 cells scanned as float64 (log-sum-exp) */
    int out_ints;        /* its results are int64, else float64 */
    int stat;            /* a running statistic: its state is `state`, not d or q */
    int skipna;          /* --skipna on a float64 column: a NaN is skipped, kept in place */
    int exclusive;       /* --exclusive: each result is the state before its cell's */
    int wrap;            /* --overflow wrap: int64 sums, products and diffs wrap around */
    Py_ssize_t marks;    /* the row of a chunk's missing flags its results' text follows:
                            its column's, or its own where the scan makes cells missing
                            that are not (a statistic of nothing before the first value
                            with --exclusive; cumcount at a NaN --skipna skips) */
    double d;            /* the running value, carried from chunk to chunk */
    int64_t q;
    unsigned char overflowed;  /* --exclusive int64, --overflow error: the running value
                                  left int64 at the last present cell (an error where
                                  another cell comes, whose result it would be) */
    StatState state;
    int64_t ddof;        /* cumvar, cumstd */
    EwmaWeights ewma;
    void *groups;        /* --by: each group's running value (d or q: the start), or its
                            StatState (zeros) */
    unsigned char *groups_overflowed;  /* --by: each group's `overflowed`, where it is kept */
} ScanPlan;

/* --by: the groups, numbered in the order they first come, by their key cells' bytes
   (fast.py: grouped.CellKeys' identity, an empty cell being the empty key). Open
   addressing on a 64-bit hash that the pool computes. The serial step alone writes: it
   writes a group's key before it stores its slot's hash (release), and fills a grown
   table before it publishes it. The pool reads the table (acquire) for the rows whose
   keys earlier chunks brought, and the serial step numbers the rest: a group's id never
   changes, so what the pool finds is what the serial step would, and what it misses the
   serial step finds or adds, in row order. Keys stay where they were written (in blocks
   that never move); an outgrown table is freed once no thread of the pool reads it
   (each says which table it reads in its scratch's `table`: hazard pointers). */
typedef struct {
    uint64_t hash;       /* 0: empty (hashes are made odd) */
    const char *key;     /* the group's id (int64), its key's size (int64), then its key:
                            each key column's cell as a 4-byte size and its bytes */
} GroupSlot;

typedef struct GroupTable {
    struct GroupTable *older;  /* a table outgrown, not freed yet */
    Py_ssize_t mask;           /* slots - 1 */
    GroupSlot slots[];
} GroupTable;

typedef struct {
    GroupTable *table;   /* the newest, the serial step's (the pool loads it: seq_cst) */
    GroupTable *retired; /* the tables it outgrew that a thread of the pool may still read */
    char *block;         /* the newest block of keys: a pointer to the one before, then keys */
    Py_ssize_t block_used, block_room;
    Py_ssize_t count, room;  /* the groups; the room of the scans' running values */
} Groups;

/* The ordered scan's lanes: each scans its scans' columns of every chunk in chunk order,
   one thread at a time, and lanes run at once (any free thread takes a lane whose next
   chunk is cut). A step of ~1 ns a cell (the plain ops, cumcount, diff, cummean) shares
   one lane with the others like it: a lane a column would cost a hand-off a column a
   chunk for little. A costly step (costly_step: logcumsumexp, cumvar, cumstd, ewma) has
   a lane of its own, so that a chunk's columns are scanned at once. --by: one lane (its groups are
   numbered in row order before any column is scanned). */
typedef struct {
    Py_ssize_t first, count;  /* its scans: Pipeline.lane_scans[first .. first + count) */
    long long next;      /* the next chunk it scans */
    int busy;            /* a thread is scanning it */
} Lane;

typedef struct {
    Py_ssize_t column;   /* an input column's cells, or -1: a scan's results */
    Py_ssize_t scan;
    Py_ssize_t kept;     /* the input column's index among those copied through */
} OutPlan;

/* Cell bounds of a few rows at a time, each thread its own: cut into these and parsed at
   once, a chunk keeps the bounds of the columns copied through alone. */
enum { BATCH_ROWS = 2048, BATCH_CELLS = 1 << 16 };  /* at most, a thread's ~1 MiB */
typedef struct {
    int64_t *starts, *ends;
    unsigned char *flags;
    GroupTable *table;   /* --by: the table of groups this thread reads, or NULL */
} Scratch;

typedef struct {
    int state, stop, final;
    int lanes_left;                   /* the lanes that have not scanned it yet */
    long long seq;
    char *data;                       /* the chunk's records (text), where they are read */
    Py_ssize_t size, capacity;
    const char *text;                 /* its records: `size` bytes in data */
    long long offset;                 /* a file's block: where in the file it is read */
    Py_ssize_t block_size, quotes;    /* its bytes read (at data + BLOCK_ROOM), its quotes */
    int block_errno;                  /* the read's error, or 0 */
    Py_ssize_t rows, row_capacity;
    uint64_t *hashes;                 /* --by: each row's key hash (the pool's) */
    int64_t *group_ids;               /* --by: each row's group (the pool's where an
                                         earlier chunk brought the key, else the
                                         serial step's) */
    int64_t *starts, *ends;           /* kept column k's bounds of row r at [k * rows_cap + r] */
    unsigned char *flags;
    char *numbers;                    /* each parsed column's 8-byte values, then results */
    unsigned char *missing;           /* each parsed column's missing cells, then the
                                         scans' own (ScanPlan.marks) */
    char *out;                        /* the output text */
    Py_ssize_t out_size, out_capacity;
} Slot;

typedef struct {
    PyObject_HEAD
    PyObject *read, *ready;           /* read(n) -> bytes; ready() -> whether more is at hand */
    PyObject *readinto;               /* or readinto(view) -> n, straight into a chunk */
    int views;                        /* hand out views of the chunks' text, not copies */
    double flush;                     /* a chunk read from a trickle waits this long at most */
    int may_wait;                     /* a read may wait: none made yet, or the last short */
    int steady;                       /* reads never wait on a producer (a regular file) */
    long long lent;                   /* the chunk whose text is lent out, or -1 */
    int delimiter, out_delimiter, by_sink, single;
    Py_ssize_t width, chunk_bytes, max_record;
    ParsePlan *parse; Py_ssize_t n_parse;
    ScanPlan *scans; Py_ssize_t n_scans;
    Lane *lanes; int n_lanes;
    Py_ssize_t *lane_scans;           /* the scans by lane */
    OutPlan *outs; Py_ssize_t n_outs;
    Py_ssize_t *kept; Py_ssize_t n_kept;  /* the input columns copied through (and keys) */
    Py_ssize_t *keys; Py_ssize_t n_keys;  /* --by: the key columns' indices among kept */
    Groups groups;
    Py_ssize_t n_numbers;             /* 8-byte arrays a chunk holds: values and results */
    Py_ssize_t n_marks;               /* rows of missing flags a chunk holds: the parsed
                                         columns', then the scans' own (ScanPlan.marks) */
    Scratch *scratch;                 /* one a thread, and one for the caller's */
    int n_scratch;
    Py_ssize_t batch_rows;            /* the rows a scratch holds: fewer for wide rows */
    char **markers; Py_ssize_t *marker_sizes; Py_ssize_t n_markers;
    char *null; Py_ssize_t null_size;
    Slot *slots; int n_slots;
    pthread_t *threads; int n_threads, started;
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    int sync_made;
    /* write_rest: a thread of its own writes the chunks to out_fd, in order */
    pthread_t writer;
    pthread_cond_t freed;             /* the writer let a slot go, or finished */
    int out_fd, writer_started, writer_done, write_errno;
    long long bytes_written;
    long long writeback_every, writeback_from, writeback_pending;
    long long next_read, next_out;
    long long stop_seq;               /* the first chunk a stop was found in (else LLONG_MAX):
                                         no lane scans it or any after it */
    int scan_blocked, shutdown, eof, paused, finished, status;
    char *pending; Py_ssize_t pending_size, pending_capacity;  /* a record read in part */
    /* A regular file read by the pool (`blocks`): block k of chunk_bytes at
       in_offset + k * chunk_bytes, read at once on any thread; the chunks are found in
       them in order (chain_blocks): at most the caller's reads of 636 MB were the serial
       rest of a run on 16 cores. */
    int blocks, in_fd;
    long long in_next, in_known;      /* the next block's offset; the file's size seen */
    long long next_chained;           /* the next block to chain */
    int in_quoted, in_ended;          /* the quote state the next block to chain starts
                                         in; a block came back short (the file's end) */
    Py_ssize_t rows_out;
} Pipeline;

static int grow_bytes(char **buffer, Py_ssize_t *capacity, Py_ssize_t need)
{
    if (need <= *capacity)
        return 0;
    const Py_ssize_t size = (need + 0xffff) & ~(Py_ssize_t)0xffff;  /* no more than asked */
    char *grown = realloc(*buffer, (size_t)size + 16);  /* 16: the 8-byte loads' room */
    if (grown == NULL)
        return -1;
    *buffer = grown;
    *capacity = size;
    return 0;
}

/* The arrays of a chunk of at most `rows` rows. */
static int slot_reserve(Pipeline *p, Slot *s, Py_ssize_t rows)
{
    if (rows <= s->row_capacity)
        return 0;
    const size_t kept = (size_t)rows * (size_t)(p->n_kept ? p->n_kept : 1);
    free(s->starts); free(s->ends); free(s->flags); free(s->numbers); free(s->missing);
    free(s->hashes); free(s->group_ids);
    s->hashes = NULL;
    s->group_ids = NULL;
    if (p->n_keys && (!(s->hashes = malloc((size_t)rows * 8))
                      || !(s->group_ids = malloc((size_t)rows * 8)))) {
        s->row_capacity = 0;
        return -1;
    }
    s->starts = malloc(kept * 8);
    s->ends = malloc(kept * 8);
    s->flags = malloc(kept);
    s->numbers = malloc((size_t)rows * 8 * (size_t)p->n_numbers + 8);
    s->missing = malloc((size_t)rows * (size_t)(p->n_marks ? p->n_marks : 1));
    if (!s->starts || !s->ends || !s->flags || !s->numbers || !s->missing) {
        s->row_capacity = 0;
        return -1;
    }
    s->row_capacity = rows;
    return 0;
}

static int scratch_make(Scratch *scratch, Py_ssize_t width, Py_ssize_t rows)
{
    const size_t cells = (size_t)rows * (size_t)width;
    scratch->starts = malloc(cells * 8);
    scratch->ends = malloc(cells * 8);
    scratch->flags = malloc(cells);
    return scratch->starts && scratch->ends && scratch->flags ? 0 : -1;
}

/* A cell that is not a number as it is, as fastcsv._Job._numbers reads it: its ASCII
   spaces stripped, 1 a missing marker (the empty text is one), 2 a number (*d or *q);
   else 0, for the Python steps to read or word (text that is not ASCII among them: str.strip
   strips more than ASCII spaces). */
static int other_cell(const Pipeline *p, const unsigned char *s, Py_ssize_t size,
                      const char *limit, int ints, double *d, int64_t *q)
{
    for (Py_ssize_t i = 0; i < size; i++)
        if (s[i] >= 0x80)
            return 0;
    while (size > 0 && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r'))) {
        s++;
        size--;
    }
    while (size > 0 && (s[size - 1] == ' ' || (s[size - 1] >= '\t' && s[size - 1] <= '\r')))
        size--;
    for (Py_ssize_t k = 0; k < p->n_markers; k++)
        if (p->marker_sizes[k] == size && memcmp(p->markers[k], s, (size_t)size) == 0)
            return 1;
    return parse_cell((const char *)s, (size_t)size, limit, ints, d, q) == 1 ? 2 : 0;
}

/* A key cell's bytes mixed into h, its size first: several columns' cells do not run
   into each other. */
static uint64_t key_hash(const char *b, Py_ssize_t n, uint64_t h)
{
    h = (h ^ (uint64_t)n) * 0x9e3779b97f4a7c15ull;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        b += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, b, (size_t)n);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}

enum { GROUPS_AHEAD = 16 };  /* rows ahead whose group's slot or value is fetched early */

/* Whether a group's key (its bytes, `size` of them) is row r's key cells. */
static int same_key(const Pipeline *p, const Slot *s, Py_ssize_t r, const char *at,
                    int64_t size)
{
    for (Py_ssize_t k = 0; k < p->n_keys; k++) {
        const Py_ssize_t c = p->keys[k] * s->row_capacity + r;
        const int64_t n = s->ends[c] - s->starts[c];
        uint32_t stored;
        if (size < 4 + n)
            return 0;
        memcpy(&stored, at, 4);
        if (stored != (uint64_t)n || memcmp(at + 4, s->text + s->starts[c], (size_t)n) != 0)
            return 0;
        at += 4 + n;
        size -= 4 + n;
    }
    return size == 0;
}

/* The group of row r's key (hash h) in table t, or -1 where it is not there (yet);
   *empty: the slot where it would go. Any thread: see Groups. */
static int64_t find_group(const Pipeline *p, const Slot *s, Py_ssize_t r, uint64_t h,
                          const GroupTable *t, Py_ssize_t *empty)
{
    Py_ssize_t at = (Py_ssize_t)(h & (uint64_t)t->mask);
    for (;;) {
        const GroupSlot *slot = &t->slots[at];
        const uint64_t seen = __atomic_load_n(&slot->hash, __ATOMIC_ACQUIRE);
        if (!seen) {
            *empty = at;
            return -1;
        }
        if (seen == h) {
            int64_t head[2];  /* the id, the key's size */
            memcpy(head, slot->key, 16);
            if (same_key(p, s, r, slot->key + 16, head[1]))
                return head[0];
        }
        at = (at + 1) & t->mask;
    }
}

/* A table of `slots` slots, with the groups of `old` (or none) in it: NULL out of memory. */
static GroupTable *group_table(const GroupTable *old, Py_ssize_t slots)
{
    GroupTable *t = NULL;
    const size_t bytes = sizeof(GroupTable) + (size_t)slots * sizeof(GroupSlot);
    if (posix_memalign((void **)&t, 64, bytes) != 0)
        return NULL;
    memset(t, 0, bytes);
    t->mask = slots - 1;
    for (Py_ssize_t i = 0; old != NULL && i <= old->mask; i++) {
        if (!old->slots[i].hash)
            continue;
        Py_ssize_t at = (Py_ssize_t)(old->slots[i].hash & (uint64_t)t->mask);
        while (t->slots[at].hash)
            at = (at + 1) & t->mask;
        t->slots[at] = old->slots[i];
    }
    return t;
}

/* The outgrown tables that no thread of the pool reads, freed (all of them: at the end). */
static void free_retired(Pipeline *p, int all)
{
    GroupTable **link = &p->groups.retired;
    while (*link != NULL) {
        GroupTable *t = *link;
        int read = 0;
        for (int i = 0; !all && !read && i < p->n_scratch; i++)
            read = __atomic_load_n(&p->scratch[i].table, __ATOMIC_SEQ_CST) == t;
        if (read) {
            link = &t->older;
        } else {
            *link = t->older;
            free(t);
        }
    }
}

/* A new group of row r's key, in slot `at` of the table: -1 out of memory (or a key of
   4 GiB). */
static int64_t add_group(Pipeline *p, const Slot *s, Py_ssize_t r, uint64_t h, Py_ssize_t at)
{
    Groups *g = &p->groups;
    int64_t size = 0;
    for (Py_ssize_t k = 0; k < p->n_keys; k++) {
        const Py_ssize_t c = p->keys[k] * s->row_capacity + r;
        size += 4 + (s->ends[c] - s->starts[c]);
        if (s->ends[c] - s->starts[c] > (int64_t)UINT32_MAX)
            return -1;
    }
    if (g->count == g->room) {
        const Py_ssize_t room = g->room ? 2 * g->room : 1024;
        for (Py_ssize_t j = 0; j < p->n_scans; j++) {  /* each scan's values, started */
            ScanPlan *scan = &p->scans[j];
            const size_t each = scan->stat ? sizeof(StatState) : 8;
            void *values = realloc(scan->groups, (size_t)room * each);
            if (values == NULL)
                return -1;
            scan->groups = values;
            if (scan->groups_overflowed != NULL || (!scan->stat && scan->ints
                                                    && scan->exclusive && !scan->wrap)) {
                unsigned char *flags = realloc(scan->groups_overflowed, (size_t)room);
                if (flags == NULL)
                    return -1;
                memset(flags + g->room, 0, (size_t)(room - g->room));
                scan->groups_overflowed = flags;
            }
            if (scan->stat) {
                memset((char *)values + (size_t)g->room * each, 0,
                       (size_t)(room - g->room) * each);
                continue;
            }
            for (Py_ssize_t i = g->room; i < room; i++) {
                if (scan->ints)
                    ((int64_t *)values)[i] = scan->q;
                else
                    ((double *)values)[i] = scan->d;
            }
        }
        g->room = room;
    }
    const Py_ssize_t need = (Py_ssize_t)((16 + size + 7) & ~(int64_t)7);  /* 8-byte aligned */
    if (g->block == NULL || g->block_room - g->block_used < need) {
        const Py_ssize_t room = need + 8 > (1 << 20) ? need + 8 : (1 << 20);
        char *block = malloc((size_t)room);
        if (block == NULL)
            return -1;
        memcpy(block, &g->block, sizeof(char *));
        g->block = block;
        g->block_used = 8;
        g->block_room = room;
    }
    char *key = g->block + g->block_used, *to = key + 16;
    const int64_t head[2] = {g->count, size};
    memcpy(key, head, 16);
    for (Py_ssize_t k = 0; k < p->n_keys; k++) {
        const Py_ssize_t c = p->keys[k] * s->row_capacity + r;
        const uint32_t n = (uint32_t)(s->ends[c] - s->starts[c]);
        memcpy(to, &n, 4);
        memcpy(to + 4, s->text + s->starts[c], n);
        to += 4 + n;
    }
    g->block_used += need;
    GroupSlot *slot = &g->table->slots[at];
    slot->key = key;
    __atomic_store_n(&slot->hash, h, __ATOMIC_RELEASE);  /* the pool may find it now */
    return g->count++;
}

/* The groups of the rows the pool left unnumbered (-1), in row order (the serial step).
   -1 where memory ran out. */
static int number_groups(Pipeline *p, Slot *s)
{
    Groups *g = &p->groups;
    int64_t *ids = s->group_ids;
    const uint64_t *hashes = s->hashes;
    const Py_ssize_t rows = s->rows;
    for (Py_ssize_t r = 0; r < rows; r++) {
        if (r + GROUPS_AHEAD < rows && ids[r + GROUPS_AHEAD] < 0 && g->table != NULL)
            __builtin_prefetch(&g->table->slots[hashes[r + GROUPS_AHEAD] & (uint64_t)g->table->mask]);
        if (ids[r] >= 0)
            continue;
        if (g->table == NULL || 2 * (g->count + 1) > g->table->mask + 1) {  /* half full */
            GroupTable *t = group_table(g->table, g->table ? 2 * (g->table->mask + 1) : 4096);
            if (t == NULL)
                return -1;
            GroupTable *old = g->table;
            __atomic_store_n(&g->table, t, __ATOMIC_SEQ_CST);  /* the pool reads it now */
            if (old != NULL) {
                old->older = g->retired;
                g->retired = old;
            }
        }
        Py_ssize_t at;
        int64_t id = find_group(p, s, r, hashes[r], g->table, &at);
        if (id < 0 && (id = add_group(p, s, r, hashes[r], at)) < 0)
            return -1;
        ids[r] = id;
    }
    if (g->retired != NULL)
        free_retired(p, 0);
    return 0;
}

/* The groups of rows [from, to) of a chunk that earlier chunks brought, from their
   hashes (the pool's: see Groups); -1 for the others, which the serial step numbers. */
static void find_groups(Pipeline *p, Slot *s, Scratch *scratch, Py_ssize_t from,
                        Py_ssize_t to)
{
    /* the table read, named in the scratch before it is read: the serial step, which
       publishes a new one before it looks, frees none a thread names */
    GroupTable *t = __atomic_load_n(&p->groups.table, __ATOMIC_SEQ_CST), *now;
    for (;;) {
        __atomic_store_n(&scratch->table, t, __ATOMIC_SEQ_CST);
        if ((now = __atomic_load_n(&p->groups.table, __ATOMIC_SEQ_CST)) == t)
            break;
        t = now;
    }
    const uint64_t *hashes = s->hashes;
    int64_t *ids = s->group_ids;
    if (t == NULL) {
        for (Py_ssize_t r = from; r < to; r++)
            ids[r] = -1;
        return;
    }
    for (Py_ssize_t r = from; r < to && r < from + GROUPS_AHEAD; r++)
        __builtin_prefetch(&t->slots[hashes[r] & (uint64_t)t->mask]);
    for (Py_ssize_t r = from; r < to; r++) {
        if (r + GROUPS_AHEAD < to)
            __builtin_prefetch(&t->slots[hashes[r + GROUPS_AHEAD] & (uint64_t)t->mask]);
        Py_ssize_t at;
        ids[r] = find_group(p, s, r, hashes[r], t, &at);
    }
    __atomic_store_n(&scratch->table, NULL, __ATOMIC_RELEASE);
}

/* Cut a chunk and parse its scanned columns (any thread, no lock held): batch_rows rows
   at a time into the thread's scratch bounds, each batch's number cells parsed while
   they are in cache, and the bounds of the columns copied through kept. */
static void chunk_cut(Pipeline *p, Slot *s, Scratch *scratch)
{
    if (s->stop != STOP_NONE)
        return;  /* read_chunk found a record too long */
    const unsigned char *t = (const unsigned char *)s->text;
    Py_ssize_t lines = 1;
    for (const unsigned char *at = t, *stop = t + s->size;
         (at = memchr(at, '\n', (size_t)(stop - at))) != NULL; at++)
        lines++;
    if (slot_reserve(p, s, lines) < 0) {
        s->stop = STOP_MEMORY;
        return;
    }
    const Py_ssize_t cap = s->row_capacity;
    const char *limit = s->text + s->size;
    Py_ssize_t begin = 0, row0 = 0;
    for (;;) {
        Py_ssize_t rows, end;
        const int status = cut_rows(t, s->size, begin, p->delimiter, p->width, s->final,
                                    scratch->starts, scratch->ends, scratch->flags,
                                    p->batch_rows, &rows, &end);
        if (status == CUT_UNSURE || (status == CUT_DONE && end != s->size)
            || row0 + rows > cap) {
            s->stop = STOP_HANDOVER;
            return;
        }
        for (Py_ssize_t k = 0; k < p->n_parse; k++) {
            const Py_ssize_t base = p->parse[k].column * p->batch_rows;
            const int ints = p->parse[k].ints;
            double *floats = (double *)(s->numbers + (size_t)k * (size_t)cap * 8) + row0;
            int64_t *integers = (int64_t *)floats;
            unsigned char *missing = s->missing + (size_t)k * (size_t)cap + row0;
            for (Py_ssize_t r = 0; r < rows; r++) {
                const char *cell = s->text + scratch->starts[base + r];
                const Py_ssize_t size = (Py_ssize_t)(scratch->ends[base + r]
                                                     - scratch->starts[base + r]);
                double d = 0.0;
                int64_t q = 0;
                const int found = parse_cell(cell, (size_t)size, limit, ints, &d, &q);
                if (found == 1) {
                    if (ints)
                        integers[r] = q;
                    else
                        floats[r] = d;
                    missing[r] = 0;
                    continue;
                }
                if (found < 0) {
                    s->stop = STOP_MEMORY;
                    return;
                }
                /* an empty cell is missing, and so is a marker; a number with spaces
                   is read; any other text the Python steps word */
                const int other = size == 0 ? 1 : scratch->flags[base + r] == 2 ? 0
                    : other_cell(p, (const unsigned char *)cell, size, limit, ints, &d, &q);
                if (other == 0) {
                    s->stop = STOP_HANDOVER;
                    return;
                }
                if (other == 2) {
                    if (ints)
                        integers[r] = q;
                    else
                        floats[r] = d;
                    missing[r] = 0;
                    continue;
                }
                integers[r] = 0;  /* also 0.0 */
                missing[r] = 1;
            }
        }
        for (Py_ssize_t k = 0; k < p->n_kept; k++) {
            const Py_ssize_t from = p->kept[k] * p->batch_rows, to = k * cap + row0;
            memcpy(s->starts + to, scratch->starts + from, (size_t)rows * 8);
            memcpy(s->ends + to, scratch->ends + from, (size_t)rows * 8);
            memcpy(s->flags + to, scratch->flags + from, (size_t)rows);
        }
        for (Py_ssize_t r = 0; p->n_keys && r < rows; r++) {
            uint64_t h = 0x243f6a8885a308d3ull;
            for (Py_ssize_t k = 0; k < p->n_keys; k++) {
                const Py_ssize_t c = p->keys[k] * cap + row0 + r;
                h = key_hash(s->text + s->starts[c], s->ends[c] - s->starts[c], h);
            }
            s->hashes[row0 + r] = h | 1;
        }
        if (p->n_keys)
            find_groups(p, s, scratch, row0, row0 + rows);
        row0 += rows;
        if (status == CUT_DONE)
            break;
        begin = end;
    }
    s->rows = row0;
}

/* One step of a running value: numpy's accumulate from the identity, cell by cell. A
   missing cell adds 0.0 (or multiplies by 1.0), which turns a running -0.0 into 0.0, and
   leaves a max or min as it was; in a max or min a NaN wins and stays, and a tie takes
   the latest (-0.0 and 0.0: torch keeps the last tied element). */
static inline double step_double(int op, double v, double x, int missing)
{
    switch (op) {
    case OP_SUM: return v + (missing ? 0.0 : x);
    case OP_PROD: return v * (missing ? 1.0 : x);
    /* a missing cell steps with the identity, as the Python steps' block holds it */
    case OP_LSE: return logaddexp(v, missing ? -INFINITY : x);
    case OP_MAX: return !missing && (isnan(x) || x >= v) ? x : v;
    default: return !missing && (isnan(x) || x <= v) ? x : v;
    }
}

/* The same for int64: 1 where the exact value leaves int64 (the Python steps word it). */
static inline int step_int(int op, int64_t v, int64_t x, int missing, int64_t *next)
{
    *next = v;
    if (missing)
        return 0;
    switch (op) {
    case OP_SUM: return __builtin_add_overflow(v, x, next);
    case OP_PROD: return __builtin_mul_overflow(v, x, next);
    case OP_MAX: *next = x >= v ? x : v; return 0;
    default: *next = x <= v ? x : v; return 0;
    }
}

/* --skipna, --exclusive and --overflow wrap in the serial step: each a constant of a loop
   of its own where the step is short (the plain ops), so that the plain scan runs the
   loop it ran before. */
#define SCAN_INLINE static inline __attribute__((always_inline))

/* One cell of a float64 scan: *v steps by x (by the identity where the cell is missing,
   or is a NaN that --skipna skips: that leaves every running value as it was), and the
   cell's result: the running value after it, or before it (--exclusive: kernels.py's
   inclusive scan moved down by one); a skipped NaN's result is that NaN, kept in place
   (kernels._scan_inclusive, grouped_accumulate). */
SCAN_INLINE double double_cell(int op, int skipna, int exclusive, double *v, double x,
                               int missing)
{
    const int nan = skipna && isnan(x);  /* a missing cell holds 0.0 */
    const double before = *v;
    *v = step_double(op, before, x, missing || nan);
    return nan ? x : exclusive ? before : *v;
}

/* One cell of an int64 scan (--skipna changes nothing: int64 holds no NaN), its result in
   *y. 1 where the pipeline stops for the Python steps to word the error: where the
   running value leaves int64 (--overflow error); with --exclusive at the next present
   cell after that instead, whose result it would be (kernels._raise_exclusive: no error
   where none comes). --overflow wrap keeps the low 64 bits, as numpy's accumulate. */
SCAN_INLINE int int_cell(int op, int exclusive, int wrap, int64_t *v,
                         unsigned char *overflowed, int64_t x, int missing, int64_t *y)
{
    int64_t next;
    if (missing) {
        *y = *v;
        return 0;
    }
    if (exclusive && !wrap && *overflowed)  /* the flag is kept for these alone */
        return 1;
    if (step_int(op, *v, x, 0, &next) && !wrap) {
        if (!exclusive)
            return 1;
        *overflowed = 1;
    }
    *y = exclusive ? *v : next;
    *v = next;
    return 0;
}

/* A column's cells scanned by one op from *running; under --by (ids) each row from its
   group's running value in running[] (constant options: the step inlines into a loop of
   its own). */
SCAN_INLINE void scan_doubles_as(int op, int skipna, int exclusive, const double *x,
                                 const unsigned char *missing, double *y, Py_ssize_t rows,
                                 double *running, const int64_t *ids)
{
    if (ids == NULL) {
        double v = *running;
        for (Py_ssize_t r = 0; r < rows; r++)
            y[r] = double_cell(op, skipna, exclusive, &v, x[r], missing[r]);
        *running = v;
        return;
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        if (r + GROUPS_AHEAD < rows)
            __builtin_prefetch(&running[ids[r + GROUPS_AHEAD]], 1);
        y[r] = double_cell(op, skipna, exclusive, &running[ids[r]], x[r], missing[r]);
    }
}

#define SCAN_DOUBLES(OP) \
    case OP * 4: scan_doubles_as(OP, 0, 0, x, missing, y, rows, running, ids); break; \
    case OP * 4 + 1: scan_doubles_as(OP, 0, 1, x, missing, y, rows, running, ids); break; \
    case OP * 4 + 2: scan_doubles_as(OP, 1, 0, x, missing, y, rows, running, ids); break; \
    case OP * 4 + 3: scan_doubles_as(OP, 1, 1, x, missing, y, rows, running, ids); break;

static void scan_doubles(const ScanPlan *scan, const double *x, const unsigned char *missing,
                         double *y, Py_ssize_t rows, double *running, const int64_t *ids)
{
    switch (scan->op * 4 + !!scan->skipna * 2 + !!scan->exclusive) {
    SCAN_DOUBLES(OP_SUM)
    SCAN_DOUBLES(OP_PROD)
    SCAN_DOUBLES(OP_LSE)
    SCAN_DOUBLES(OP_MAX)
    SCAN_DOUBLES(OP_MIN)
    default: break;
    }
}

/* The same for int64 cells: 0, or 1 where int_cell stops (the running values are then
   past use: the pipeline stops). `overflowed`: the scan's flag, or under --by each
   group's (NULL where none is kept: no --exclusive, or --overflow wrap). */
SCAN_INLINE int scan_ints_as(int op, int exclusive, int wrap, const int64_t *x,
                             const unsigned char *missing, int64_t *y, Py_ssize_t rows,
                             int64_t *running, unsigned char *overflowed, const int64_t *ids)
{
    unsigned char none = 0;
    if (ids == NULL) {
        int64_t v = *running;
        unsigned char over = overflowed != NULL ? *overflowed : 0;
        for (Py_ssize_t r = 0; r < rows; r++)
            if (int_cell(op, exclusive, wrap, &v, &over, x[r], missing[r], &y[r]))
                return 1;
        *running = v;
        if (overflowed != NULL)
            *overflowed = over;
        return 0;
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        if (r + GROUPS_AHEAD < rows)
            __builtin_prefetch(&running[ids[r + GROUPS_AHEAD]], 1);
        const int64_t g = ids[r];
        if (int_cell(op, exclusive, wrap, &running[g], overflowed != NULL ? &overflowed[g]
                     : &none, x[r], missing[r], &y[r]))
            return 1;
    }
    return 0;
}

#define SCAN_INTS(OP) \
    case OP * 4: return scan_ints_as(OP, 0, 0, x, missing, y, rows, running, over, ids); \
    case OP * 4 + 1: return scan_ints_as(OP, 0, 1, x, missing, y, rows, running, over, ids); \
    case OP * 4 + 2: return scan_ints_as(OP, 1, 0, x, missing, y, rows, running, over, ids); \
    case OP * 4 + 3: return scan_ints_as(OP, 1, 1, x, missing, y, rows, running, over, ids);

static int scan_ints(const ScanPlan *scan, const int64_t *x, const unsigned char *missing,
                     int64_t *y, Py_ssize_t rows, int64_t *running, unsigned char *over,
                     const int64_t *ids)
{
    switch (scan->op * 4 + !!scan->exclusive * 2 + !!scan->wrap) {
    SCAN_INTS(OP_SUM)
    SCAN_INTS(OP_PROD)
    SCAN_INTS(OP_MAX)
    SCAN_INTS(OP_MIN)
    default: return 0;
    }
}

/* A running statistic's result from its state (cumtool/stats.py's kernels' output()):
   cumcount's count; cummean's sum / count, the count cast to float64; cumvar's
   M2 / (n - ddof), NaN while n <= ddof, and cumstd its square root; ewma's y. */
SCAN_INLINE void stat_result(int op, const ScanPlan *scan, const StatState *st, void *y)
{
    double out;
    switch (op) {
    case OP_COUNT:
        memcpy(y, &st->n, 8);
        return;
    case OP_MEAN:
        out = st->a / (double)st->n;
        break;
    case OP_VAR:
    case OP_STD:
        out = st->n <= scan->ddof ? NAN : st->b / (double)(st->n - scan->ddof);
        if (op == OP_STD)
            out = sqrt(out);
        break;
    default:  /* OP_EWMA */
        out = st->a;
        break;
    }
    memcpy(y, &out, 8);
}

/* A running statistic's state after a cell, as its kernel's states() computes it (the
   same float operations in the same order; Welford's and ewma's steps are
   _sequential.c's own, statsteps.h). A skipped cell (missing, or a NaN --skipna skips)
   leaves the state as it was; cummean's sum adds 0.0 there, as the kernel's
   np.where(present, x, 0.0) does. */
SCAN_INLINE void stat_state_step(int op, const ScanPlan *scan, StatState *st, double value,
                                 int skip)
{
    switch (op) {
    case OP_COUNT:
        st->n += !skip;
        return;
    case OP_MEAN:
        /* stats.running_sum: s + x in float64 (an int64 cell cast as numpy casts it) */
        st->n += !skip;
        st->a = st->a + (skip ? 0.0 : value);
        return;
    case OP_VAR:
    case OP_STD:
        /* CumVar.states: Welford on the value as float64, its count as float64 */
        if (!skip) {
            double n = (double)st->n;
            welford_step(value, &n, &st->a, &st->b);
            st->n++;
        }
        return;
    default:  /* OP_EWMA, Ewma.states: ewma_means' step from the count before the value */
        if (!skip)
            st->a = ewma_weighted(st->a, value, st->n++, (const char *)scan->ewma.old, 8,
                                  (const char *)scan->ewma.total, 8, scan->ewma.last,
                                  scan->ewma.new_weight);
        return;
    }
}

/* diff's step (Diff.states): x less the last present value (x itself at the first); a
   skipped cell leaves the last value as it was, and a NaN --skipna skips is its own
   result. 1 where an int64 diff leaves int64 with --overflow error (the Python steps word
   it); with wrap the low 64 bits, as numpy's subtract wraps. */
SCAN_INLINE int diff_step(int ints, int skipna, int wrap, StatState *st, int64_t q,
                          double d, int missing, void *y)
{
    if (missing) {  /* never written out */
        memset(y, 0, 8);
        return 0;
    }
    if (ints) {
        int64_t out_q = q;
        if (st->n != 0 && __builtin_sub_overflow(q, st->q, &out_q) && !wrap)
            return 1;
        st->q = q;
        memcpy(y, &out_q, 8);
    } else {
        if (skipna && isnan(d)) {
            memcpy(y, &d, 8);
            return 0;
        }
        const double out_d = st->n == 0 ? d : d - st->a;
        st->a = d;
        memcpy(y, &out_d, 8);
    }
    st->n++;
    return 0;
}

/* One step of a running statistic, as stats.scan_block computes it: `x` the cell's 8
   bytes (int64 where `ints`, else float64), `y` its result's (int64 for cumcount and an
   int64 diff, else float64). With --exclusive the result is the state's before the cell,
   and a result of nothing (no value before it: cummean, cumvar, cumstd, ewma) is missing;
   a NaN --skipna skips is its own result (cumcount's, an int64, is missing). `marked`:
   the scan's own missing flag of the cell (missing input, or a result missing), where it
   keeps them (ScanPlan.marks), else NULL. A missing cell's result is never written out.
   1 where an int64 diff leaves int64 (the Python steps word it), else 0. */
SCAN_INLINE int stat_step(int op, int ints, int skipna, int exclusive, int wrap,
                          const ScanPlan *scan, StatState *st, const void *x, int missing,
                          void *y, unsigned char *marked)
{
    int64_t q = 0;
    double d = 0.0;
    if (ints)
        memcpy(&q, x, 8);
    else
        memcpy(&d, x, 8);
    if (op == OP_DIFF)  /* never --exclusive (the option refuses it): no marks */
        return diff_step(ints, skipna, wrap, st, q, d, missing, y);
    const int nan = skipna && !ints && isnan(d);  /* a missing cell holds 0.0 */
    const int skip = missing || nan;
    const double value = ints ? (double)q : d;
    int nothing = 0;
    if (exclusive) {
        /* the kernels' missing_before_first: all but cumcount (a count of 0) */
        nothing = st->n == 0 && op != OP_COUNT;
        stat_result(op, scan, st, y);
        stat_state_step(op, scan, st, value, skip);
    } else {
        stat_state_step(op, scan, st, value, skip);
        if (skip && (op == OP_VAR || op == OP_STD))
            memset(y, 0, 8);  /* not written out: no square root */
        else
            stat_result(op, scan, st, y);
    }
    if (nan) {
        if (op == OP_COUNT)
            nothing = 1;
        else {
            memcpy(y, &d, 8);
            nothing = 0;
        }
    }
    if (marked != NULL)
        *marked = (unsigned char)(missing | nothing);
    return 0;
}

/* A column's cells scanned by a statistic from *state (a constant op and cell type: the
   step inlines into a loop of its own); under --by (ids) each row from its group's
   state. 0, or 1 where stat_step found an overflow. Without --by the state is a local's
   until the end: stored through `state` at each cell (y's writes may alias it), it was
   shared with the lanes scanning the scans beside it, and it cost a store a cell. */
#define SCAN_STATS(OP, INTS) \
    if (ids == NULL) { \
        StatState own = *state; \
        for (Py_ssize_t r = 0; r < rows; r++) \
            if (stat_step(OP, INTS, skipna, exclusive, wrap, scan, &own, x + (size_t)r * 8, \
                          missing[r], y + (size_t)r * 8, marked != NULL ? marked + r : NULL)) \
                return 1; \
        *state = own; \
    } else { \
        for (Py_ssize_t r = 0; r < rows; r++) { \
            if (r + GROUPS_AHEAD < rows) \
                __builtin_prefetch(&state[ids[r + GROUPS_AHEAD]], 1); \
            if (stat_step(OP, INTS, skipna, exclusive, wrap, scan, &state[ids[r]], \
                          x + (size_t)r * 8, missing[r], y + (size_t)r * 8, \
                          marked != NULL ? marked + r : NULL)) \
                return 1; \
        } \
    }

static int scan_stats(const ScanPlan *scan, const char *x, const unsigned char *missing,
                      unsigned char *marked, char *y, Py_ssize_t rows, StatState *state,
                      const int64_t *ids)
{
    const int skipna = scan->skipna, exclusive = scan->exclusive, wrap = scan->wrap;
    switch (scan->op * 2 + !!scan->ints) {
    case OP_COUNT * 2: SCAN_STATS(OP_COUNT, 0); break;
    case OP_COUNT * 2 + 1: SCAN_STATS(OP_COUNT, 1); break;
    case OP_MEAN * 2: SCAN_STATS(OP_MEAN, 0); break;
    case OP_MEAN * 2 + 1: SCAN_STATS(OP_MEAN, 1); break;
    case OP_DIFF * 2: SCAN_STATS(OP_DIFF, 0); break;
    case OP_DIFF * 2 + 1: SCAN_STATS(OP_DIFF, 1); break;
    case OP_VAR * 2: SCAN_STATS(OP_VAR, 0); break;
    case OP_VAR * 2 + 1: SCAN_STATS(OP_VAR, 1); break;
    case OP_STD * 2: SCAN_STATS(OP_STD, 0); break;
    case OP_STD * 2 + 1: SCAN_STATS(OP_STD, 1); break;
    case OP_EWMA * 2: SCAN_STATS(OP_EWMA, 0); break;
    default: SCAN_STATS(OP_EWMA, 1); break;
    }
    return 0;
}

/* A step that costs a lane of its own (Lane): on 2M x 8, 18 ns a cell for log-sum-exp,
   4.5 for cumvar, cumstd and ewma, against 0.5-1.3 for the plain ops, cumcount, diff and
   cummean (whose lanes cost more in hand-offs than they took off the serial step) */
static int costly_step(int op)
{
    return op == OP_LSE || op == OP_VAR || op == OP_STD || op == OP_EWMA;
}

/* Scan a lane's columns of a chunk from their carried values (one thread at a time a
   lane, in chunk order); under --by each row from its group's running value. 0, or a
   stop (the carries are then past saving: the pipeline stops at this chunk). */
static int lane_scan(Pipeline *p, const Lane *lane, Slot *s)
{
    if (p->n_keys && number_groups(p, s) < 0)
        return STOP_MEMORY;
    const Py_ssize_t cap = s->row_capacity, rows = s->rows;
    const int64_t *ids = p->n_keys ? s->group_ids : NULL;
    for (Py_ssize_t i = 0; i < lane->count; i++) {
        ScanPlan *scan = &p->scans[p->lane_scans[lane->first + i]];
        const char *in = s->numbers + (size_t)scan->parsed * (size_t)cap * 8;
        const unsigned char *missing = s->missing + (size_t)scan->parsed * (size_t)cap;
        unsigned char *marked = scan->marks == scan->parsed ? NULL
            : s->missing + (size_t)scan->marks * (size_t)cap;
        char *out = s->numbers + (size_t)scan->result * (size_t)cap * 8;
        int bad = 0;
        if (scan->cast) {  /* into its results' room, scanned there in place */
            const int64_t *q = (const int64_t *)in;
            double *d = (double *)out;
            for (Py_ssize_t r = 0; r < rows; r++)
                d[r] = (double)q[r];
            in = out;
        }
        if (scan->stat)
            bad = scan_stats(scan, in, missing, marked, out, rows,
                             ids != NULL ? (StatState *)scan->groups : &scan->state, ids);
        else if (scan->ints)
            bad = scan_ints(scan, (const int64_t *)in, missing, (int64_t *)out, rows,
                            ids != NULL ? (int64_t *)scan->groups : &scan->q,
                            ids != NULL ? scan->groups_overflowed : &scan->overflowed, ids);
        else
            scan_doubles(scan, (const double *)in, missing, (double *)out, rows,
                         ids != NULL ? (double *)scan->groups : &scan->d, ids);
        if (bad)
            return STOP_SCAN;  /* the Python steps word the overflow */
    }
    return STOP_NONE;
}

/* A chunk's output text, as assemble() writes it (any thread, no lock held). The buffer
   grows as rows need it: a number's room (24 bytes) is more than it mostly takes. */
static void chunk_format(Pipeline *p, Slot *s)
{
    const Py_ssize_t cap = s->row_capacity, rows = s->rows;
    Py_ssize_t numbers = 1;  /* a row's room, but for its input cells: the line end */
    for (Py_ssize_t k = 0; k < p->n_outs; k++) {
        if (p->outs[k].column < 0) {
            const Py_ssize_t longest = p->scans[p->outs[k].scan].out_ints ? 20
                : NUMTEXT_FORMAT_MAX;
            numbers += (p->null_size > longest ? p->null_size : longest) + 1;
        } else {
            numbers += 3;  /* two quotes and a delimiter */
        }
    }
    const unsigned char *t = (const unsigned char *)s->text;
    const unsigned char d = (unsigned char)p->out_delimiter;
    Py_ssize_t used = 0;
    for (Py_ssize_t r = 0; r < rows; r++) {
        Py_ssize_t room = numbers;
        for (Py_ssize_t k = 0; k < p->n_kept; k++)
            room += (Py_ssize_t)(s->ends[k * cap + r] - s->starts[k * cap + r]);
        if (s->out_capacity - used < room) {
            const Py_ssize_t guess = used + room + (used + room) / 2 + (rows - r) * numbers / 4;
            if (grow_bytes(&s->out, &s->out_capacity, guess) < 0) {
                s->stop = STOP_MEMORY;
                return;
            }
        }
        unsigned char *o = (unsigned char *)s->out + used;
        for (Py_ssize_t k = 0; k < p->n_outs; k++) {
            if (k)
                *o++ = d;
            const OutPlan *plan = &p->outs[k];
            if (plan->column < 0) {
                const ScanPlan *scan = &p->scans[plan->scan];
                const unsigned char *missing = s->missing + (size_t)scan->marks * (size_t)cap;
                const char *values = s->numbers + (size_t)scan->result * (size_t)cap * 8;
                if (missing[r]) {
                    memcpy(o, p->null, (size_t)p->null_size);
                    o += p->null_size;
                } else if (scan->out_ints) {
                    o += int_text(((const int64_t *)values)[r], (char *)o);
                } else {
                    o += numtext_format(((const double *)values)[r], (char *)o);
                }
                continue;
            }
            const Py_ssize_t c = plan->kept * cap + r;
            const unsigned char *cell = t + s->starts[c];
            const Py_ssize_t length = (Py_ssize_t)(s->ends[c] - s->starts[c]);
            const int empty_quoted = p->by_sink ? p->single : s->flags[c] != 0;
            if (needs_quotes(cell, length, s->flags[c], d, empty_quoted)) {
                *o++ = '"';
                memcpy(o, cell, (size_t)length);
                o += length;
                *o++ = '"';
            } else {
                memcpy(o, cell, (size_t)length);
                o += length;
            }
        }
        *o++ = '\n';
        used = (Py_ssize_t)(o - (unsigned char *)s->out);
    }
    s->out_size = used;
}

/* The lane's next chunk where it is cut and before any stop, else NULL (the lock held). */
static Slot *lane_next(const Pipeline *p, const Lane *lane)
{
    if (lane->next >= p->next_read || lane->next >= p->stop_seq)
        return NULL;
    Slot *s = &p->slots[lane->next % p->n_slots];
    return s->state == SLOT_PARSED ? s : NULL;
}

/* Whether a thread may take the lane: its next chunk cut, before any stop (the lock
   held). */
static int lane_ready(const Pipeline *p, const Lane *lane)
{
    return !lane->busy && lane_next(p, lane) != NULL;
}

/* A lane that is ready, taken by this thread (run_lane lets it go), or NULL. */
static Lane *take_lane(Pipeline *p)
{
    for (int l = 0; l < p->n_lanes; l++)
        if (lane_ready(p, &p->lanes[l])) {
            p->lanes[l].busy = 1;
            return &p->lanes[l];
        }
    return NULL;
}

/* The pipeline stops at chunk `s` (the lock held): the carries end there, and the chunks
   before it are scanned, formatted and output still. Lanes may be scanning it, or chunks
   after it, yet: they leave its state be, and no lane starts on any of them. */
static void stop_at(Pipeline *p, Slot *s, int stop)
{
    s->stop = stop;
    s->state = SLOT_STOPPED;
    if (s->seq < p->stop_seq)
        p->stop_seq = s->seq;
    p->scan_blocked = 1;
    pthread_cond_broadcast(&p->done);
}

/* The ordered scan of a lane (the lock held on entry and on return): this thread scans
   its next chunk and the ones after it that are cut already. A chunk that every lane has
   scanned is ready to format: this thread formats the first (work_once, after), and a
   worker is woken for each other. The lane is taken (take_lane) and let go here. */
static void run_lane(Pipeline *p, Lane *lane)
{
    int scanned = 0;
    Slot *s;
    while ((s = lane_next(p, lane)) != NULL) {
        if (s->stop != STOP_NONE) {  /* the cut found it */
            stop_at(p, s, s->stop);
            break;
        }
        pthread_mutex_unlock(&p->lock);
        const int stop = lane_scan(p, lane, s);
        pthread_mutex_lock(&p->lock);
        if (stop != STOP_NONE) {
            stop_at(p, s, stop);
            break;
        }
        lane->next++;
        if (s->state != SLOT_PARSED || --s->lanes_left > 0)
            continue;  /* stopped meanwhile, or other lanes are still to scan it */
        s->state = SLOT_SCANNED;
        if (scanned++) {  /* signalled unlocked: the woken thread takes the lock at once */
            pthread_mutex_unlock(&p->lock);
            pthread_cond_signal(&p->work);
            pthread_mutex_lock(&p->lock);
        }
    }
    lane->busy = 0;
}

/* A file's block read into its slot (any thread, no lock held): chunk_bytes at its
   offset, fewer only at the file's end, after BLOCK_ROOM; its quotes counted. */
static void block_read(Pipeline *p, Slot *s)
{
    s->block_size = s->quotes = 0;
    s->block_errno = 0;
    if (grow_bytes(&s->data, &s->capacity, BLOCK_ROOM + p->chunk_bytes) < 0) {
        s->block_errno = ENOMEM;
        return;
    }
    char *at = s->data + BLOCK_ROOM;
    while (s->block_size < p->chunk_bytes) {
        const ssize_t got = pread(p->in_fd, at + s->block_size,
                                  (size_t)(p->chunk_bytes - s->block_size),
                                  (off_t)(s->offset + s->block_size));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            s->block_errno = errno;
            return;
        }
        if (got == 0)
            break;
        s->block_size += got;
    }
    s->quotes = count_quotes(at, s->block_size);
}

/* No block is read after `s`, which stops the pipeline (the lock held). */
static void end_blocks(Pipeline *p, Slot *s, int stop)
{
    s->stop = stop;
    p->in_ended = p->eof = 1;
}

/* The chunk of a block read, the blocks before it chained (the lock held): the record
   begun before it (pending), then its records up to its last record end; the rest waits
   for the next block. A short block is the file's end: all of it, the last chunk. */
static void chain_block(Pipeline *p, Slot *s)
{
    char *block = s->data + BLOCK_ROOM;
    s->text = s->data != NULL ? block : "";
    s->size = 0;
    s->final = 1;
    if (p->in_ended)
        return;  /* a block past a short one (a file cut meanwhile): nothing */
    if (s->block_errno) {  /* the Python steps read again from the start and word it */
        end_blocks(p, s, s->block_errno == ENOMEM ? STOP_MEMORY : STOP_HANDOVER);
        return;
    }
    const int last = s->block_size < p->chunk_bytes;
    const Py_ssize_t end = last ? s->block_size
        : block_end(block, s->block_size, s->quotes, p->in_quoted);
    p->in_quoted ^= (int)(s->quotes & 1);
    s->final = last;
    if (end < 0) {  /* no record ends in it: all of it waits for the next */
        if (grow_bytes(&p->pending, &p->pending_capacity,
                       p->pending_size + s->block_size) < 0) {
            end_blocks(p, s, STOP_MEMORY);
            return;
        }
        memcpy(p->pending + p->pending_size, block, (size_t)s->block_size);
        p->pending_size += s->block_size;
        if (p->pending_size > p->max_record)  /* a record too long: the Python steps */
            end_blocks(p, s, STOP_HANDOVER);  /* name it; nothing after it is read */
        return;
    }
    const Py_ssize_t before = p->pending_size, rest = s->block_size - end;
    if (before <= BLOCK_ROOM) {
        s->text = block - before;
    } else {  /* a long record: the block moves after it */
        if (grow_bytes(&s->data, &s->capacity, before + s->block_size) < 0) {
            end_blocks(p, s, STOP_MEMORY);
            return;
        }
        memmove(s->data + before, s->data + BLOCK_ROOM, (size_t)s->block_size);
        s->text = s->data;
    }
    memcpy((char *)s->text, p->pending, (size_t)before);
    s->size = before + end;
    if (grow_bytes(&p->pending, &p->pending_capacity, rest) < 0) {
        end_blocks(p, s, STOP_MEMORY);
        return;
    }
    memcpy(p->pending, s->text + s->size, (size_t)rest);
    p->pending_size = rest;
    if (last)
        end_blocks(p, s, STOP_NONE);  /* the file's end */
}

/* The blocks read whose blocks before them are chained, chained in order (the lock
   held); how many. The caller is told of the file's end. */
static int chain_blocks(Pipeline *p)
{
    int chained = 0;
    const int ended = p->eof;
    while (p->next_chained < p->next_read) {
        Slot *s = &p->slots[p->next_chained % p->n_slots];
        if (s->state != SLOT_READ)
            break;
        chain_block(p, s);
        s->state = SLOT_FILLED;
        p->next_chained++;
        chained++;
    }
    if (p->eof && !ended)
        pthread_cond_broadcast(&p->done);
    return chained;
}

/* Whether the caller may hand the pool the next block to read (the lock held): up to
   the file's size as last seen, looked at again once past it (a file may grow) while no
   block came back short. */
static int block_wanted(Pipeline *p)
{
    if (p->in_ended)
        return 0;
    if (p->in_next <= p->in_known)
        return 1;
    struct stat info;
    if (fstat(p->in_fd, &info) == 0 && (long long)info.st_size > p->in_known)
        p->in_known = (long long)info.st_size;
    return p->in_next <= p->in_known;
}

/* The next block handed to the pool to read into slot `s` (the lock held). */
static void want_block(Pipeline *p, Slot *s)
{
    s->stop = STOP_NONE;
    s->rows = 0;
    s->seq = p->next_read;
    s->offset = p->in_next;
    p->in_next += p->chunk_bytes;
    s->state = SLOT_WANTED;
    p->next_read++;
}

/* One step of work, the lock held: scan a lane whose next chunk is cut, else format the
   oldest scanned chunk, else cut the oldest one read, else read a file's oldest block
   wanted. 0 where there was none. */
static int work_once(Pipeline *p, Scratch *scratch)
{
    Lane *lane = take_lane(p);
    if (lane != NULL) {
        run_lane(p, lane);
        return 1;
    }
    Slot *cut_slot = NULL, *read_slot = NULL;
    for (long long seq = p->next_out; seq < p->next_read; seq++) {
        Slot *s = &p->slots[seq % p->n_slots];
        if (s->state == SLOT_SCANNED && seq < p->stop_seq) {
            s->state = SLOT_FORMATTING;
            pthread_mutex_unlock(&p->lock);
            chunk_format(p, s);
            pthread_mutex_lock(&p->lock);
            s->state = s->stop != STOP_NONE ? SLOT_STOPPED : SLOT_READY;
            if (seq == p->next_out) {  /* the caller waits for the next in order alone */
                pthread_mutex_unlock(&p->lock);
                pthread_cond_signal(&p->done);
                pthread_mutex_lock(&p->lock);
            }
            return 1;
        }
        if (s->state == SLOT_FILLED && cut_slot == NULL)
            cut_slot = s;
        if (s->state == SLOT_WANTED && read_slot == NULL)
            read_slot = s;
    }
    if (cut_slot == NULL && read_slot != NULL) {
        read_slot->state = SLOT_READING;
        pthread_mutex_unlock(&p->lock);
        block_read(p, read_slot);
        pthread_mutex_lock(&p->lock);
        read_slot->state = SLOT_READ;
        /* the chunks it let be found: this thread cuts one, a worker is woken for each
           other */
        for (int more = chain_blocks(p) - 1; more > 0; more--) {
            pthread_mutex_unlock(&p->lock);
            pthread_cond_signal(&p->work);
            pthread_mutex_lock(&p->lock);
        }
        return 1;
    }
    if (cut_slot == NULL)
        return 0;
    cut_slot->state = SLOT_CUTTING;
    pthread_mutex_unlock(&p->lock);
    chunk_cut(p, cut_slot, scratch);
    pthread_mutex_lock(&p->lock);
    cut_slot->lanes_left = p->n_lanes;
    cut_slot->state = SLOT_PARSED;
    /* the lanes it readied: this thread scans one, a worker is woken for each other */
    lane = take_lane(p);
    if (lane == NULL)
        return 1;  /* lanes busy or behind: whoever scans them reaches this chunk */
    int others = 0;
    for (int l = 0; l < p->n_lanes; l++)
        others += lane_ready(p, &p->lanes[l]);
    for (int i = 0; i < others && i < p->n_threads; i++) {
        pthread_mutex_unlock(&p->lock);  /* as in run_lane */
        pthread_cond_signal(&p->work);
        pthread_mutex_lock(&p->lock);
    }
    run_lane(p, lane);
    return 1;
}

typedef struct {
    Pipeline *p;
    Scratch *scratch;
} WorkerArg;

static void *worker(void *arg)
{
    Pipeline *p = ((WorkerArg *)arg)->p;
    Scratch *scratch = ((WorkerArg *)arg)->scratch;
    free(arg);
    pthread_mutex_lock(&p->lock);
    while (!p->shutdown)
        if (!work_once(p, scratch))
            pthread_cond_wait(&p->work, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void stop_threads(Pipeline *p)
{
    if (!p->started)
        return;
    pthread_mutex_lock(&p->lock);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    Py_END_ALLOW_THREADS
    p->started = 0;
}

static double monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* After a short read: 1 where no more input is at hand (a pipe whose producer waits: the
   whole records so far go out before reading on), or where the chunk has been read for
   `flush` seconds (rows that trickle in without a pause go out that often); 0 where it
   reads on; -1 on an error. */
static int input_paused(Pipeline *p, double started)
{
    if (monotonic_seconds() - started > p->flush)
        return 1;
    PyObject *more = PyObject_CallNoArgs(p->ready);
    if (more == NULL)
        return -1;
    const int ready = PyObject_IsTrue(more);
    Py_DECREF(more);
    return ready < 0 ? -1 : !ready;
}

/* Up to `want` bytes of input into `at` (the GIL held: readinto or read is Python's):
   how many, 0 at the end, -1 on an error (an exception set). */
static Py_ssize_t read_some(Pipeline *p, char *at, Py_ssize_t want)
{
    if (p->readinto != NULL) {  /* straight into the chunk */
        PyObject *view = PyMemoryView_FromMemory(at, want, PyBUF_WRITE);
        if (view == NULL)
            return -1;
        PyObject *count = PyObject_CallOneArg(p->readinto, view);
        PyObject *released = PyObject_CallMethod(view, "release", NULL);
        Py_DECREF(view);
        if (count == NULL || released == NULL) {
            Py_XDECREF(count);
            Py_XDECREF(released);
            return -1;
        }
        Py_DECREF(released);
        const Py_ssize_t got = count == Py_None ? -1 : PyLong_AsSsize_t(count);
        Py_DECREF(count);
        if ((got < 0 || got > want) && !PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "Pipeline: readinto(view) reads at most "
                            "len(view) bytes, blocking");
        return got < 0 || got > want ? -1 : got;
    }
    PyObject *bytes = PyObject_CallFunction(p->read, "n", want);
    if (bytes == NULL)
        return -1;
    if (!PyBytes_Check(bytes) || PyBytes_GET_SIZE(bytes) > want) {
        Py_DECREF(bytes);
        PyErr_SetString(PyExc_ValueError, "Pipeline: read(n) returns at most n bytes");
        return -1;
    }
    const Py_ssize_t got = PyBytes_GET_SIZE(bytes);
    Py_BEGIN_ALLOW_THREADS  /* the bytes are held: no other thread waits on a copy */
    memcpy(at, PyBytes_AS_STRING(bytes), (size_t)got);
    Py_END_ALLOW_THREADS
    Py_DECREF(bytes);
    return got;
}

/* Read the next chunk into its slot (the GIL held: read() is Python's): the bytes kept
   from before, then reads, up to the last whole record within chunk_bytes (or the first
   record, where it is longer). 1 when a chunk was filled, 0 when the input ended with
   nothing to fill, -1 on an error (a Python exception set). */
static int read_chunk(Pipeline *p, Slot *s)
{
    s->size = 0;
    s->final = 0;
    if (grow_bytes(&s->data, &s->capacity, p->pending_size + p->chunk_bytes) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(s->data, p->pending, (size_t)p->pending_size);
    s->size = p->pending_size;
    p->pending_size = 0;
    Py_ssize_t boundary = -1;
    int paused = 0, waiting = 0;
    const double started = monotonic_seconds();
    for (;;) {
        if (s->size >= p->chunk_bytes || paused) {
            const Py_ssize_t within = s->size < p->chunk_bytes ? s->size : p->chunk_bytes;
            boundary = last_record_end(s->data, within);
            if (boundary < 0 && within < s->size)
                boundary = last_record_end(s->data, s->size);
            if (boundary >= 0) {
                p->paused = paused;
                break;
            }
            if (s->size > p->max_record) {
                s->stop = STOP_HANDOVER;  /* a record too long: the Python steps name it */
                p->eof = 1;  /* nothing after it is read */
                return 1;
            }
            paused = 0;  /* no whole record yet: wait for one */
            waiting = 1;
        }
        /* records at hand, from a source that may make a read wait (a pipe: its last read
           was short, or none was made yet): no read is made while they could go out */
        if (p->may_wait && !waiting && s->size > 0) {
            if ((paused = input_paused(p, started)) < 0)
                return -1;
            if (paused)
                continue;
        }
        waiting = 0;
        if (s->size >= s->capacity
            && grow_bytes(&s->data, &s->capacity, s->size + s->size / 2) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        const Py_ssize_t room = s->capacity - s->size;
        const Py_ssize_t short_of = p->chunk_bytes - s->size;
        const Py_ssize_t want = short_of > 0 && short_of < room ? short_of : room;
        const Py_ssize_t got = read_some(p, s->data + s->size, want);
        if (got < 0)
            return -1;
        s->size += got;
        if (got == 0) {
            p->eof = 1;
            s->final = 1;
            return s->size > 0;
        }
        p->may_wait = got < want;
        if (got < want && (paused = input_paused(p, started)) < 0)
            return -1;
    }
    /* the bytes after the last whole record wait for the next chunk */
    const Py_ssize_t rest = s->size - boundary;
    if (grow_bytes(&p->pending, &p->pending_capacity, rest) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(p->pending, s->data + boundary, (size_t)rest);
    p->pending_size = rest;
    s->size = boundary;
    return 1;
}

/* Chunks read and not yet formatted (the lock held). */
static int chunks_at_work(const Pipeline *p)
{
    int n = 0;
    for (long long seq = p->next_out; seq < p->next_read; seq++) {
        const int state = p->slots[seq % p->n_slots].state;
        n += state != SLOT_READY && state != SLOT_STOPPED && state != SLOT_LENT;
    }
    return n;
}

/* The next chunk in order read into its slot `s` (read_chunk's answer). */
static int read_next(Pipeline *p, Slot *s)
{
    s->stop = STOP_NONE;
    s->rows = 0;
    s->seq = p->next_read;
    const int filled = read_chunk(p, s);
    s->text = s->data;
    return filled;
}

/* The slot whose text was lent to the caller (pipeline_next's views) is free again. */
static void release_lent(Pipeline *p)
{
    if (p->lent < 0)
        return;
    pthread_mutex_lock(&p->lock);
    p->slots[p->lent % p->n_slots].state = SLOT_FREE;
    p->lent = -1;
    pthread_mutex_unlock(&p->lock);
}

/* All of `size` bytes to `fd`: 0, or the errno of the write that failed. */
static int write_all(int fd, const char *data, Py_ssize_t size)
{
    while (size > 0) {
        const ssize_t n = write(fd, data, (size_t)size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        data += n;
        size -= n;
    }
    return 0;
}

/* write_rest's writer: each chunk's text to out_fd as it is ready, in order, starting
   the disk's writes of what it wrote every writeback_every bytes (sync_file_range, as
   output._Writeback does: the fsync at the end finds most pages written). */
static void *writer_main(void *arg)
{
    Pipeline *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->shutdown)
            break;
        if (p->next_out < p->next_read) {
            Slot *s = &p->slots[p->next_out % p->n_slots];
            if (s->state == SLOT_READY) {
                s->state = SLOT_LENT;
                pthread_mutex_unlock(&p->lock);
                const int failed = write_all(p->out_fd, s->out, s->out_size);
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
                if (!failed && p->writeback_every > 0) {
                    p->writeback_pending += s->out_size;
                    if (p->writeback_pending >= p->writeback_every) {
                        if (sync_file_range(p->out_fd, p->writeback_from, p->writeback_pending,
                                            SYNC_FILE_RANGE_WRITE) != 0)
                            p->writeback_every = 0;  /* not tried again: the fsync reports */
                        p->writeback_from += p->writeback_pending;
                        p->writeback_pending = 0;
                    }
                }
#endif
                pthread_mutex_lock(&p->lock);
                if (failed) {
                    p->write_errno = failed;
                    break;
                }
                p->bytes_written += s->out_size;
                p->rows_out += s->rows;
                s->state = SLOT_FREE;
                p->next_out++;
                pthread_cond_signal(&p->freed);
                continue;
            }
            if (s->state == SLOT_STOPPED) {
                p->status = s->stop;
                break;
            }
        } else if (p->eof) {
            break;
        }
        pthread_cond_wait(&p->done, &p->lock);
    }
    p->writer_done = 1;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* The rest of the output written to `fd` by a thread of the pipeline's own while the
   caller reads (the GIL held only for the reads): at 16 cores the caller's own writes
   were the serial rest of a run to a file. */
static PyObject *pipeline_write_rest(Pipeline *p, PyObject *args)
{
    int fd;
    long long writeback = 0;
    if (!PyArg_ParseTuple(args, "i|L", &fd, &writeback))
        return NULL;
    release_lent(p);  /* the text lent last is written by the caller already */
    if (p->finished || p->n_threads == 0)
        return PyLong_FromLong(-1);  /* nothing taken: the caller goes on as before */
    p->out_fd = fd;
    p->writeback_every = writeback;
    p->writeback_from = writeback > 0 ? (long long)lseek(fd, 0, SEEK_CUR) : 0;
    if (p->writeback_from < 0)
        p->writeback_every = p->writeback_from = 0;
    if (pthread_create(&p->writer, NULL, writer_main, p) != 0) {
        p->out_fd = -1;
        return PyLong_FromLong(-1);
    }
    p->writer_started = 1;
    int failed = 0;  /* -1: a Python exception is set (a read, a signal) */
    for (;;) {
        if (PyErr_CheckSignals() < 0) {
            failed = -1;
            break;
        }
        pthread_mutex_lock(&p->lock);
        if (p->writer_done) {
            pthread_mutex_unlock(&p->lock);
            break;
        }
        Slot *next = &p->slots[p->next_read % p->n_slots];
        if (p->blocks && !p->eof && !p->scan_blocked && next->state == SLOT_FREE
            && block_wanted(p)) {
            want_block(p, next);
            pthread_mutex_unlock(&p->lock);
            pthread_cond_signal(&p->work);
            continue;
        }
        if (!p->blocks && !p->eof && !p->scan_blocked && next->state == SLOT_FREE) {
            pthread_mutex_unlock(&p->lock);
            const int filled = read_next(p, next);
            pthread_mutex_lock(&p->lock);
            p->paused = 0;  /* a file: no producer to wait for, read on */
            if (filled < 0) {
                pthread_mutex_unlock(&p->lock);
                failed = -1;
                break;
            }
            if (filled > 0) {
                next->state = SLOT_FILLED;
                p->next_read++;
                pthread_cond_signal(&p->work);
            }
            if (p->eof)
                pthread_cond_signal(&p->done);  /* the writer may wait for the end */
            pthread_mutex_unlock(&p->lock);
            continue;
        }
        struct timespec until;  /* a while at most: signals are checked between waits */
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000000000;
        }
        Py_BEGIN_ALLOW_THREADS
        pthread_cond_timedwait(&p->freed, &p->lock, &until);
        Py_END_ALLOW_THREADS
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_lock(&p->lock);
    if (failed)
        p->shutdown = 1;  /* the writer too */
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->lock);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(p->writer, NULL);
    Py_END_ALLOW_THREADS
    p->writer_started = 0;
    stop_threads(p);
    p->finished = 1;
    if (failed)
        return NULL;
    if (p->write_errno) {
        errno = p->write_errno;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyLong_FromLongLong(p->bytes_written);
}

static PyObject *pipeline_next(Pipeline *p)
{
    release_lent(p);  /* the caller is done with the text it was lent */
    if (p->finished)
        return NULL;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        /* From a file, the pool is fed before text is handed out: the caller alone reads
           and writes, and a pool left without chunks while it writes ran in bursts, the
           write's time added to the run's (a disk slower than the pool). */
        const int feed = p->steady && p->n_threads > 0 && !p->eof && !p->paused
                         && p->slots[p->next_read % p->n_slots].state == SLOT_FREE
                         && chunks_at_work(p) < p->n_threads
                         && (!p->blocks || block_wanted(p));
        if (feed) {
            ;  /* on to the read below */
        } else if (p->next_out < p->next_read) {
            Slot *s = &p->slots[p->next_out % p->n_slots];
            if (s->state == SLOT_READY && p->views) {
                /* lent until the next call: the caller writes it and asks for more */
                s->state = SLOT_LENT;
                p->lent = p->next_out;
                p->rows_out += s->rows;
                p->next_out++;
                pthread_mutex_unlock(&p->lock);
                return PyMemoryView_FromMemory(s->out, s->out_size, PyBUF_READ);
            }
            if (s->state == SLOT_READY) {
                pthread_mutex_unlock(&p->lock);
                PyObject *out = PyBytes_FromStringAndSize(NULL, s->out_size);
                if (out == NULL)
                    return NULL;
                Py_BEGIN_ALLOW_THREADS
                memcpy(PyBytes_AS_STRING(out), s->out, (size_t)s->out_size);
                Py_END_ALLOW_THREADS
                pthread_mutex_lock(&p->lock);
                s->state = SLOT_FREE;
                p->rows_out += s->rows;
                p->next_out++;
                pthread_mutex_unlock(&p->lock);
                return out;
            }
            if (s->state == SLOT_STOPPED) {
                p->status = s->stop;
                pthread_mutex_unlock(&p->lock);
                stop_threads(p);
                p->finished = 1;
                return NULL;
            }
        } else if (p->eof || p->paused) {
            p->paused = 0;  /* what was read before the pause is out: read on */
            if (p->eof) {
                pthread_mutex_unlock(&p->lock);
                stop_threads(p);
                p->finished = 1;
                return NULL;
            }
        }
        Slot *next = &p->slots[p->next_read % p->n_slots];
        if (p->blocks && !p->eof && next->state == SLOT_FREE && block_wanted(p)) {
            want_block(p, next);  /* the pool reads it: one thread, this one, below */
            pthread_mutex_unlock(&p->lock);
            if (p->n_threads > 0)
                pthread_cond_signal(&p->work);
            continue;
        }
        if (!p->blocks && !p->eof && !p->paused && next->state == SLOT_FREE) {
            pthread_mutex_unlock(&p->lock);
            const int filled = read_next(p, next);
            if (filled < 0) {
                stop_threads(p);
                p->finished = 1;
                return NULL;
            }
            if (filled == 0)
                continue;
            pthread_mutex_lock(&p->lock);
            next->state = SLOT_FILLED;
            p->next_read++;
            if (p->n_threads == 0) {  /* one thread: the caller's */
                Py_BEGIN_ALLOW_THREADS
                while (work_once(p, &p->scratch[0]))
                    ;
                Py_END_ALLOW_THREADS
                pthread_mutex_unlock(&p->lock);
            } else {
                pthread_mutex_unlock(&p->lock);
                pthread_cond_signal(&p->work);
            }
            continue;
        }
        if (p->n_threads == 0) {
            Py_BEGIN_ALLOW_THREADS
            while (work_once(p, &p->scratch[0]))
                ;
            Py_END_ALLOW_THREADS
            pthread_mutex_unlock(&p->lock);
            continue;
        }
        Py_BEGIN_ALLOW_THREADS
        pthread_cond_wait(&p->done, &p->lock);
        Py_END_ALLOW_THREADS
        pthread_mutex_unlock(&p->lock);
    }
}

static void pipeline_dealloc(Pipeline *p)
{
    stop_threads(p);
    if (p->sync_made) {
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->work);
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->freed);
    }
    for (int i = 0; p->slots != NULL && i < p->n_slots; i++) {
        Slot *s = &p->slots[i];
        free(s->data); free(s->starts); free(s->ends); free(s->flags);
        free(s->numbers); free(s->missing); free(s->out);
        free(s->hashes); free(s->group_ids);
    }
    for (Py_ssize_t j = 0; p->scans != NULL && j < p->n_scans; j++) {
        free(p->scans[j].groups);
        free(p->scans[j].groups_overflowed);
        free(p->scans[j].ewma.old);
        free(p->scans[j].ewma.total);
    }
    free_retired(p, 1);
    free(p->groups.table);
    for (char *block = p->groups.block, *before; block != NULL; block = before) {
        memcpy(&before, block, sizeof(char *));
        free(block);
    }
    free(p->keys);
    free(p->slots);
    for (int i = 0; p->scratch != NULL && i <= p->n_threads; i++) {
        free(p->scratch[i].starts);
        free(p->scratch[i].ends);
        free(p->scratch[i].flags);
    }
    free(p->scratch);
    free(p->kept);
    free(p->threads);
    free(p->parse);
    free(p->scans);
    free(p->lanes);
    free(p->lane_scans);
    free(p->outs);
    for (Py_ssize_t k = 0; p->markers != NULL && k < p->n_markers; k++)
        free(p->markers[k]);
    free(p->markers);
    free(p->marker_sizes);
    free(p->null);
    free(p->pending);
    if (p->blocks)
        close(p->in_fd);
    Py_XDECREF(p->read);
    Py_XDECREF(p->ready);
    Py_XDECREF(p->readinto);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static char *copy_bytes(PyObject *bytes, Py_ssize_t *size)
{
    if (!PyBytes_Check(bytes)) {
        PyErr_SetString(PyExc_TypeError, "Pipeline: markers and null are bytes");
        return NULL;
    }
    *size = PyBytes_GET_SIZE(bytes);
    char *copy = malloc((size_t)*size + 1);
    if (copy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(copy, PyBytes_AS_STRING(bytes), (size_t)*size);
    return copy;
}

/* ewma's scan start: (the new value's weight, the old weights, the totals), two lists of
   floats of one length, at least 2 (index 0 is never read: a first value starts y). */
static int ewma_weights_of(EwmaWeights *w, PyObject *start)
{
    PyObject *old, *total;
    if (!PyArg_ParseTuple(start, "dO!O!", &w->new_weight, &PyList_Type, &old, &PyList_Type,
                          &total))
        return -1;
    const Py_ssize_t n = PyList_GET_SIZE(old);
    if (n < 2 || PyList_GET_SIZE(total) != n) {
        PyErr_SetString(PyExc_ValueError, "Pipeline: ewma's weights: two lists of one length");
        return -1;
    }
    w->old = malloc((size_t)n * 8);
    w->total = malloc((size_t)n * 8);
    if (w->old == NULL || w->total == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        w->old[k] = PyFloat_AsDouble(PyList_GET_ITEM(old, k));
        w->total[k] = PyFloat_AsDouble(PyList_GET_ITEM(total, k));
    }
    w->last = n - 1;
    return PyErr_Occurred() ? -1 : 0;
}

static int pipeline_init(Pipeline *p, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"head", "read", "ready", "delimiter", "width", "out_delimiter",
                            "parse", "scans", "columns", "markers", "null", "by_sink",
                            "single", "threads", "chunk_bytes", "max_record", "readinto",
                            "views", "keys", "flush", "cores", "steady", "in_fd", "in_offset",
                            NULL};
    PyObject *head, *read, *ready, *parse, *scans, *columns, *markers, *null;
    PyObject *readinto = Py_None, *keys = NULL;
    int cores = 0, in_fd = -1;
    long long in_offset = 0;
    p->flush = 0.1;
    int threads;
    if (p->slots != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Pipeline: made once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "SOOCnCO!O!O!O!Sppinn|$OpO!dipiL", names, &head,
                                     &read, &ready, &p->delimiter, &p->width,
                                     &p->out_delimiter, &PyList_Type, &parse, &PyList_Type,
                                     &scans, &PyList_Type, &columns, &PyList_Type, &markers,
                                     &null, &p->by_sink, &p->single, &threads,
                                     &p->chunk_bytes, &p->max_record, &readinto,
                                     &p->views, &PyList_Type, &keys, &p->flush, &cores,
                                     &p->steady, &in_fd, &in_offset))
        return -1;
    p->lent = -1;
    p->may_wait = 1;
    if (readinto != Py_None) {
        Py_INCREF(readinto);
        p->readinto = readinto;
    }
    if (p->delimiter < 0 || p->delimiter > 127 || p->delimiter == '"' || p->delimiter == '\r'
        || p->delimiter == '\n' || p->out_delimiter < 0 || p->out_delimiter > 127
        || p->width <= 0 || threads < 1 || p->chunk_bytes < 1 || p->max_record < 1) {
        PyErr_SetString(PyExc_ValueError, "Pipeline: one-byte ASCII delimiters, width > 0, "
                        "threads, chunk_bytes and max_record > 0");
        return -1;
    }
    Py_INCREF(read);
    p->read = read;
    Py_INCREF(ready);
    p->ready = ready;
    p->n_parse = PyList_GET_SIZE(parse);
    p->n_scans = PyList_GET_SIZE(scans);
    p->n_outs = PyList_GET_SIZE(columns);
    p->n_markers = PyList_GET_SIZE(markers);
    p->parse = calloc((size_t)p->n_parse + 1, sizeof(ParsePlan));
    p->scans = calloc((size_t)p->n_scans + 1, sizeof(ScanPlan));
    p->outs = calloc((size_t)p->n_outs + 1, sizeof(OutPlan));
    p->markers = calloc((size_t)p->n_markers + 1, sizeof(char *));
    p->marker_sizes = calloc((size_t)p->n_markers + 1, sizeof(Py_ssize_t));
    if (!p->parse || !p->scans || !p->outs || !p->markers || !p->marker_sizes) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < p->n_parse; k++) {
        if (!PyArg_ParseTuple(PyList_GET_ITEM(parse, k), "np", &p->parse[k].column,
                              &p->parse[k].ints))
            return -1;
        if (p->parse[k].column < 0 || p->parse[k].column >= p->width) {
            PyErr_SetString(PyExc_ValueError, "Pipeline: a parsed column out of range");
            return -1;
        }
    }
    for (Py_ssize_t j = 0; j < p->n_scans; j++) {
        ScanPlan *s = &p->scans[j];
        PyObject *start;
        int options = 0;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(scans, j), "niO|i", &s->parsed, &s->op, &start,
                              &options))
            return -1;
        if (s->parsed < 0 || s->parsed >= p->n_parse || s->op < OP_SUM || s->op > OP_LAST
            || (options & ~(SCAN_SKIPNA | SCAN_EXCLUSIVE | SCAN_WRAP))
            || (s->op == OP_DIFF && (options & SCAN_EXCLUSIVE))) {
            PyErr_SetString(PyExc_ValueError, "Pipeline: a scan's column, op or options out "
                            "of range (diff: no --exclusive)");
            return -1;
        }
        /* log-sum-exp of int64 cells: of the cells as float64 (kernels.cast_input) */
        s->cast = s->op == OP_LSE && p->parse[s->parsed].ints;
        s->ints = p->parse[s->parsed].ints && !s->cast;
        s->stat = s->op >= OP_COUNT;
        s->skipna = !s->ints && (options & SCAN_SKIPNA);  /* int64 holds no NaN */
        s->exclusive = !!(options & SCAN_EXCLUSIVE);
        s->wrap = !!(options & SCAN_WRAP);
        /* cumcount counts, and an int64 column's accumulating ops and diff are int64;
           else float64 */
        s->out_ints = s->op == OP_COUNT || (s->ints && (!s->stat || s->op == OP_DIFF));
        s->result = -1;
        if (s->stat) {
            memset(&s->state, 0, sizeof s->state);  /* the kernels' start */
            if ((s->op == OP_VAR || s->op == OP_STD) && (s->ddof = PyLong_AsLongLong(start)) < 0
                && !PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "Pipeline: ddof below 0");
                return -1;
            }
            if (s->op == OP_EWMA && ewma_weights_of(&s->ewma, start) < 0)
                return -1;
        } else if (s->ints) {
            s->q = PyLong_AsLongLong(start);
        } else {
            s->d = PyFloat_AsDouble(start);
        }
        if (PyErr_Occurred())
            return -1;
    }
    for (Py_ssize_t k = 0; k < p->n_outs; k++) {
        PyObject *item = PyList_GET_ITEM(columns, k);
        if (!PyArg_ParseTuple(item, "nn", &p->outs[k].column, &p->outs[k].scan))
            return -1;
        if (p->outs[k].column >= p->width
            || (p->outs[k].column < 0 && (p->outs[k].scan < 0 || p->outs[k].scan >= p->n_scans))) {
            PyErr_SetString(PyExc_ValueError, "Pipeline: an output column out of range");
            return -1;
        }
    }
    /* a scan that makes cells missing keeps its own flags (ScanPlan.marks) */
    p->n_marks = p->n_parse;
    for (Py_ssize_t j = 0; j < p->n_scans; j++) {
        ScanPlan *s = &p->scans[j];
        const int own = s->stat && ((s->exclusive && s->op != OP_COUNT)
                                    || (s->skipna && s->op == OP_COUNT));
        s->marks = own ? p->n_marks++ : s->parsed;
    }
    /* a column's one scan writes over its values; more than one, each its own */
    p->n_numbers = p->n_parse;
    for (Py_ssize_t j = 0; j < p->n_scans; j++) {
        Py_ssize_t others = 0;
        for (Py_ssize_t i = 0; i < p->n_scans; i++)
            others += i != j && p->scans[i].parsed == p->scans[j].parsed;
        p->scans[j].result = others ? p->n_numbers++ : p->scans[j].parsed;
    }
    const Py_ssize_t n_keys = keys != NULL ? PyList_GET_SIZE(keys) : 0;
    /* the lanes (Lane): the cheap steps' scans in one, a costly step's each its own */
    p->lanes = calloc((size_t)p->n_scans + 1, sizeof(Lane));
    p->lane_scans = calloc((size_t)p->n_scans + 1, sizeof(Py_ssize_t));
    if (p->lanes == NULL || p->lane_scans == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t j = 0; j < p->n_scans; j++)
        if (n_keys || !costly_step(p->scans[j].op))
            p->lane_scans[at++] = j;
    if (at > 0 || p->n_scans == 0) {  /* a lane even of no scans: chunks pass through it */
        p->lanes[0].count = at;
        p->n_lanes = 1;
    }
    for (Py_ssize_t j = 0; j < p->n_scans; j++)
        if (!n_keys && costly_step(p->scans[j].op)) {
            p->lanes[p->n_lanes].first = at;
            p->lanes[p->n_lanes++].count = 1;
            p->lane_scans[at++] = j;
        }
    p->stop_seq = LLONG_MAX;
    p->kept = calloc((size_t)(p->n_outs + n_keys) + 1, sizeof(Py_ssize_t));
    p->keys = calloc((size_t)n_keys + 1, sizeof(Py_ssize_t));
    if (p->kept == NULL || p->keys == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < p->n_outs; k++) {
        if (p->outs[k].column < 0)
            continue;
        Py_ssize_t at = 0;
        while (at < p->n_kept && p->kept[at] != p->outs[k].column)
            at++;
        if (at == p->n_kept)
            p->kept[p->n_kept++] = p->outs[k].column;
        p->outs[k].kept = at;
    }
    for (Py_ssize_t k = 0; k < n_keys; k++) {  /* a key's bounds are kept, output or not */
        const Py_ssize_t column = PyLong_AsSsize_t(PyList_GET_ITEM(keys, k));
        if (column == -1 && PyErr_Occurred())
            return -1;
        if (column < 0 || column >= p->width) {
            PyErr_SetString(PyExc_ValueError, "Pipeline: a key column out of range");
            return -1;
        }
        Py_ssize_t at = 0;
        while (at < p->n_kept && p->kept[at] != column)
            at++;
        if (at == p->n_kept)
            p->kept[p->n_kept++] = column;
        p->keys[p->n_keys++] = at;
    }
    for (Py_ssize_t k = 0; k < p->n_markers; k++)
        if ((p->markers[k] = copy_bytes(PyList_GET_ITEM(markers, k), &p->marker_sizes[k])) == NULL)
            return -1;
    if ((p->null = copy_bytes(null, &p->null_size)) == NULL)
        return -1;
    if (grow_bytes(&p->pending, &p->pending_capacity, PyBytes_GET_SIZE(head)) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(p->pending, PyBytes_AS_STRING(head), (size_t)PyBytes_GET_SIZE(head));
    p->pending_size = PyBytes_GET_SIZE(head);
    if (in_fd >= 0) {  /* a regular file, read from in_offset on by the pool */
        struct stat info;
        if (fstat(in_fd, &info) != 0 || !S_ISREG(info.st_mode) || in_offset < 0) {
            PyErr_SetString(PyExc_ValueError, "Pipeline: in_fd is a regular file's, "
                            "in_offset where its rest starts");
            return -1;
        }
        if ((p->in_fd = dup(in_fd)) < 0)
            return PyErr_SetFromErrno(PyExc_OSError), -1;
        p->blocks = 1;
        p->in_next = in_offset;
        p->in_known = (long long)info.st_size;
        p->in_quoted = (int)(count_quotes(p->pending, p->pending_size) & 1);
    }
    /* one thread: the caller's; else a pool, and a chunk in flight a thread that can
       run (threads beyond the cores wait for one anyway), plus the one being read and
       the one being written: each costs ~4x its bytes of memory, touched once */
    p->n_threads = threads > 1 ? threads : 0;
    const int running = cores > 0 && cores < threads ? cores : threads;
    p->n_slots = threads > 1 ? running + 2 : 2;
    p->slots = calloc((size_t)p->n_slots, sizeof(Slot));
    p->threads = calloc((size_t)(p->n_threads + 1), sizeof(pthread_t));
    p->scratch = calloc((size_t)(p->n_threads + 1), sizeof(Scratch));
    p->n_scratch = p->n_threads + 1;
    if (!p->slots || !p->threads || !p->scratch) {
        PyErr_NoMemory();
        return -1;
    }
    p->batch_rows = BATCH_CELLS / p->width;
    p->batch_rows = p->batch_rows > BATCH_ROWS ? BATCH_ROWS : p->batch_rows < 1 ? 1
        : p->batch_rows;
    for (int i = 0; i <= p->n_threads; i++)
        if (scratch_make(&p->scratch[i], p->width, p->batch_rows) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    p->out_fd = -1;
    if (pthread_mutex_init(&p->lock, NULL) != 0 || pthread_cond_init(&p->work, NULL) != 0
        || pthread_cond_init(&p->done, NULL) != 0 || pthread_cond_init(&p->freed, NULL) != 0) {
        PyErr_SetString(PyExc_OSError, "Pipeline: no mutex");
        return -1;
    }
    p->sync_made = 1;
    for (int i = 0; i < p->n_threads; i++) {
        WorkerArg *arg = malloc(sizeof(WorkerArg));
        if (arg != NULL) {
            arg->p = p;
            arg->scratch = &p->scratch[i + 1];
        }
        if (arg == NULL || pthread_create(&p->threads[i], NULL, worker, arg) != 0) {
            free(arg);
            p->n_threads = i;
            p->started = i > 0;
            stop_threads(p);
            PyErr_SetString(PyExc_OSError, "Pipeline: no thread");
            return -1;
        }
        p->started = 1;
    }
    return 0;
}

static PyObject *pipeline_iter(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *pipeline_close(Pipeline *p, PyObject *unused)
{
    stop_threads(p);
    p->finished = 1;
    Py_RETURN_NONE;
}

static PyMemberDef pipeline_members[] = {
    {"status", T_INT, offsetof(Pipeline, status), READONLY,
     "Why it stopped: 0 the input ended, 1 a record or cell the Python path reads, 2 a "
     "scan it words (an overflow), 3 out of memory."},
    {"rows", T_PYSSIZET, offsetof(Pipeline, rows_out), READONLY, "The rows output."},
    {"blocks", T_INT, offsetof(Pipeline, blocks), READONLY,
     "1 where the pool reads a regular file's blocks itself (in_fd), 0 where the caller "
     "reads the input through read()."},
    {NULL},
};

static PyMethodDef pipeline_methods[] = {
    {"close", (PyCFunction)pipeline_close, METH_NOARGS, "Stop the threads."},
    {"write_rest", (PyCFunction)pipeline_write_rest, METH_VARARGS,
     "write_rest(fd, writeback=0): the rest of the output written to the file `fd` by a\n"
     "thread of the pipeline's own while the caller reads: the bytes written, or -1 where\n"
     "it takes none (one thread; the caller asks for the chunks itself). `writeback`:\n"
     "start the disk's writes every so many bytes (Linux). Raises OSError where a write\n"
     "fails; `status` says afterwards, as after the last chunk, why it stopped."},
    {NULL},
};

PyDoc_STRVAR(pipeline_doc,
"Pipeline(head, read, ready, delimiter, width, out_delimiter, parse, scans, columns,\n"
"         markers, null, by_sink, single, threads, chunk_bytes, max_record)\n\n"
"formats/csv/fast._Job's rows in one compiled loop, an iterator of the output's chunks in order.\n"
"The input is `head` then read(n) (bytes, b\"\" at the end; ready() says whether more is\n"
"at hand after a short read). `parse`: [(column, ints)], the scanned columns; `scans`:\n"
"[(parsed index, op 0 sum 1 prod 2 max 3 min 4 log-sum-exp, start value)]; `columns`: [(input\n"
"column, -1) or (-1, scan)], as assemble() lays them out with `null`, `by_sink`,\n"
"`single`; `markers`: the missing markers' bytes. After the last chunk, `status` and\n"
"`rows` say why it stopped and how many rows came out. Keywords: `readinto`, a stream's\n"
"readinto1, reads straight into the chunks instead of read(); `views`: each chunk's\n"
"text is a memoryview, valid until the next is asked for (not a copy); `keys`: --by's\n"
"columns, each group scanned from its own running value; `flush`: seconds a chunk\n"
"waits for more of a pipe that never pauses (0.1); `cores`: the cores the threads may\n"
"run on (chunks in flight: as many, and two); `steady`: reads never wait on a producer\n"
"(a regular file), so chunks are read ahead of handing text out.");

static PyTypeObject PipelineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumtool._ext._csvtext.Pipeline",
    .tp_basicsize = sizeof(Pipeline),
    .tp_dealloc = (destructor)pipeline_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = pipeline_doc,
    .tp_iter = pipeline_iter,
    .tp_iternext = (iternextfunc)pipeline_next,
    .tp_members = pipeline_members,
    .tp_methods = pipeline_methods,
    .tp_init = (initproc)pipeline_init,
    .tp_new = PyType_GenericNew,
};

#endif  /* CSV_PIPELINE */

static PyMethodDef methods[] = {
    {"records", records, METH_VARARGS, records_doc},
    {"judge_bounds", judge_bounds, METH_VARARGS, judge_bounds_doc},
    {"cell_kinds", cell_kinds, METH_VARARGS, cell_kinds_doc},
    {"float_texts", float_texts, METH_VARARGS, float_texts_doc},
    {"cut", cut, METH_VARARGS, cut_doc},
    {"assemble", assemble, METH_VARARGS, assemble_doc},
    {"last_record_end", last_record_end_py, METH_VARARGS, last_record_end_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cumtool._csvtext",
    .m_doc = "The small path's text loops in C (see the comment at the top of _csvtext.c).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__csvtext(void)
{
    if (numtext_init() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
#if CSV_PIPELINE
    if (m != NULL && (PyType_Ready(&PipelineType) < 0
                      || PyModule_AddObjectRef(m, "Pipeline", (PyObject *)&PipelineType) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
#endif
    return m;
}
