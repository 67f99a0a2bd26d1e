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

#define NUMTEXT_CORE_ONLY
#include "_numtext.c"

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

/* number cells ------------------------------------------------------------------------ */

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* small._INT: [+-]?[0-9]+ */
static int integer_text(const char *t, Py_ssize_t n)
{
    Py_ssize_t i = n > 0 && (t[0] == '+' || t[0] == '-');
    if (i == n)
        return 0;
    for (; i < n; i++)
        if (!is_digit(t[i]))
            return 0;
    return 1;
}

/* small._int64 on an integer text: 1 with *value when it fits int64, else 0. */
static int int64_of(const char *t, Py_ssize_t n, int64_t *value)
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
    if (negative) {
        if (magnitude > (uint64_t)INT64_MAX + 1)
            return 0;
        *value = magnitude == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)magnitude;
    } else {
        if (magnitude > (uint64_t)INT64_MAX)
            return 0;
        *value = (int64_t)magnitude;
    }
    return 1;
}

static int same_word(const char *t, Py_ssize_t n, const char *word)
{
    Py_ssize_t size = (Py_ssize_t)strlen(word);
    if (n != size)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = t[i] >= 'A' && t[i] <= 'Z' ? (char)(t[i] - 'A' + 'a') : t[i];
        if (c != word[i])
            return 0;
    }
    return 1;
}

/* small._FLOAT: [+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)? or a signed inf,
   infinity or nan in any case (ASCII). */
static int float_text(const char *t, Py_ssize_t n)
{
    Py_ssize_t i = n > 0 && (t[0] == '+' || t[0] == '-');
    if (same_word(t + i, n - i, "inf") || same_word(t + i, n - i, "infinity")
        || same_word(t + i, n - i, "nan"))
        return 1;
    Py_ssize_t digits = 0;
    while (i < n && is_digit(t[i])) {
        i++;
        digits++;
    }
    if (digits) {
        if (i < n && t[i] == '.')
            i++;
        while (i < n && is_digit(t[i]))
            i++;
    } else {
        if (!(i + 1 < n && t[i] == '.' && is_digit(t[i + 1])))
            return 0;
        i++;
        while (i < n && is_digit(t[i]))
            i++;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        Py_ssize_t j = i + 1;
        if (j < n && (t[j] == '+' || t[j] == '-'))
            j++;
        Py_ssize_t exponent_digits = 0;
        while (j < n && is_digit(t[j])) {
            j++;
            exponent_digits++;
        }
        if (exponent_digits)
            i = j;
    }
    return i == n;
}

/* small._LEADING_ZERO.match: [+-]?0[0-9] at the start of a str of any characters */
static int leading_zero(PyObject *text)
{
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_UCS4 c = n > 0 ? PyUnicode_READ(kind, data, 0) : 0;
    Py_ssize_t i = c == '+' || c == '-';
    return i + 1 < n && PyUnicode_READ(kind, data, i) == '0'
        && PyUnicode_READ(kind, data, i + 1) >= '0' && PyUnicode_READ(kind, data, i + 1) <= '9';
}

/* str.strip(): an exact ASCII str here (the whitespace of Py_UNICODE_ISSPACE below 128),
   anything else by its method. A new reference to a str, or NULL with an error. */
static PyObject *stripped(PyObject *cell)
{
    if (!PyUnicode_Check(cell)) {
        PyErr_SetString(PyExc_TypeError, "a cell must be a str or None");
        return NULL;
    }
    if (!PyUnicode_CheckExact(cell) || !PyUnicode_IS_ASCII(cell)) {
        PyObject *text = PyObject_CallMethod(cell, "strip", NULL);
        if (text != NULL && !PyUnicode_Check(text)) {
            Py_DECREF(text);
            PyErr_SetString(PyExc_TypeError, "a cell's strip() must return a str");
            return NULL;
        }
        return text;
    }
    const char *t = (const char *)PyUnicode_DATA(cell);
    Py_ssize_t n = PyUnicode_GET_LENGTH(cell), first = 0, last = n;
#define SPACE(c) (((c) >= 9 && (c) <= 13) || ((c) >= 28 && (c) <= 32))
    while (first < n && SPACE(t[first]))
        first++;
    while (last > first && SPACE(t[last - 1]))
        last--;
#undef SPACE
    if (first == 0 && last == n) {
        Py_INCREF(cell);
        return cell;
    }
    return PyUnicode_Substring(cell, first, last);
}

/* A new list of the cells `column` of the first `limit` rows (lists), or NULL with an
   error. The loops below go through this copy: Python code they call (a marker's __eq__,
   a str subclass's strip) cannot change it under them. */
static PyObject *cells_of(PyObject *rows, Py_ssize_t column, Py_ssize_t limit)
{
    Py_ssize_t total = PyList_GET_SIZE(rows);
    if (limit < total)
        total = limit < 0 ? 0 : limit;
    PyObject *cells = PyList_New(total);
    if (cells == NULL)
        return NULL;
    for (Py_ssize_t r = 0; r < total; r++) {
        PyObject *row = PyList_GET_ITEM(rows, r);
        if (!PyList_Check(row) || column < 0 || column >= PyList_GET_SIZE(row)) {
            PyErr_SetString(PyExc_IndexError, "a row is not a list with that column");
            Py_DECREF(cells);
            return NULL;
        }
        PyObject *cell = PyList_GET_ITEM(row, column);
        Py_INCREF(cell);
        PyList_SET_ITEM(cells, r, cell);
    }
    return cells;
}

enum { KIND_INT64 = 0, KIND_BIG_INTEGER = 1, KIND_FLOAT = 2, KIND_OTHER = 3 };

PyDoc_STRVAR(judge_cells_doc,
"judge_cells(rows, column, markers, limit) -> (cells, leading_zero, kind)\n\n"
"small._judge's reading of a column: of its first `limit` rows, the cells that are not\n"
"None and, stripped, not in `markers`: how many; whether any starts with a leading\n"
"zero; and kind 0 (all int64), 1 (all integers, some beyond int64), 2 (all floats)\n"
"or 3 (other).");

/* What a column's cells are so far (judge_cells, judge_bounds). */
typedef struct {
    Py_ssize_t count;
    int zero, all_integer, all_int64, all_float;
} Judged;

/* One cell, stripped and not a marker, of ASCII text t[:n]. */
static void judge_ascii(Judged *j, const char *t, Py_ssize_t n)
{
    j->count++;
    Py_ssize_t i = n > 0 && (t[0] == '+' || t[0] == '-');
    j->zero = j->zero || (i + 1 < n && t[i] == '0' && is_digit(t[i + 1]));
    int integer = integer_text(t, n);
    int64_t ignored;
    if (!integer)
        j->all_integer = 0;
    else if (j->all_int64 && !int64_of(t, n, &ignored))
        j->all_int64 = 0;
    if (!integer && j->all_float && !float_text(t, n))
        j->all_float = 0;  /* an integer's text is a float's too */
}

/* One cell (a str, not None): stripped, skipped if a marker. 0, or -1 with an error. */
static int judge_text(Judged *j, PyObject *cell, PyObject *markers)
{
    PyObject *text = stripped(cell);
    int marker = text == NULL ? -1 : PySet_Contains(markers, text);
    if (marker == 0) {
        if (PyUnicode_IS_ASCII(text)) {
            judge_ascii(j, (const char *)PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text));
        } else {  /* the number grammar is ASCII */
            j->count++;
            j->zero = j->zero || leading_zero(text);
            j->all_integer = j->all_float = 0;
        }
    }
    Py_XDECREF(text);
    return marker < 0 ? -1 : 0;
}

static PyObject *judged_result(const Judged *j)
{
    int kind = j->all_integer ? (j->all_int64 ? KIND_INT64 : KIND_BIG_INTEGER)
                              : (j->all_float ? KIND_FLOAT : KIND_OTHER);
    return Py_BuildValue("nOi", j->count, j->zero ? Py_True : Py_False, kind);
}

static PyObject *judge_cells(PyObject *self, PyObject *args)
{
    PyObject *rows, *markers;
    Py_ssize_t column, limit;
    if (!PyArg_ParseTuple(args, "O!nO!n", &PyList_Type, &rows, &column, &PySet_Type,
                          &markers, &limit))
        return NULL;
    PyObject *cells = cells_of(rows, column, limit);
    if (cells == NULL)
        return NULL;
    Judged j = {0, 0, 1, 1, 1};
    for (Py_ssize_t r = 0; r < PyList_GET_SIZE(cells); r++) {
        PyObject *cell = PyList_GET_ITEM(cells, r);
        if (cell != Py_None && judge_text(&j, cell, markers) < 0) {
            Py_DECREF(cells);
            return NULL;
        }
    }
    Py_DECREF(cells);
    return judged_result(&j);
}

PyDoc_STRVAR(judge_bounds_doc,
"judge_bounds(data, starts, ends, flags, markers) -> (cells, leading_zero, kind)\n\n"
"judge_cells of one column cut by `cut`: cell r is data[starts[r]:ends[r]] with flag\n"
"flags[r] (1-D int64, int64 and uint8, one entry a row), read as small.records reads\n"
"it (an empty unquoted cell None, a quoted one's doubled quotes as one), without a str\n"
"a cell where it is ASCII. The data are UTF-8, as cut checks them.");

static PyObject *judge_bounds(PyObject *self, PyObject *args)
{
    Py_buffer data, starts, ends, flags;
    PyObject *markers;
    if (!PyArg_ParseTuple(args, "y*y*y*y*O!", &data, &starts, &ends, &flags, &PySet_Type,
                          &markers))
        return NULL;
    PyObject *result = NULL, *ascii_markers = NULL;
    char *scratch = NULL;
    Py_ssize_t scratch_size = 0;
    const Py_ssize_t n = flags.len;
    if (starts.len != n * 8 || ends.len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "judge_bounds: starts and ends 8 bytes a cell, "
                        "flags one");
        goto done;
    }
    /* The ASCII markers, as bytes: an ASCII cell is one only if its bytes are equal.
       Taken from a copy: a marker's __eq__ cannot change the set under the loop. */
    ascii_markers = PyList_New(0);
    PyObject *copy = ascii_markers == NULL ? NULL : PySequence_List(markers);
    if (copy == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(copy); k++) {
        PyObject *marker = PyList_GET_ITEM(copy, k);
        if (PyUnicode_CheckExact(marker) && PyUnicode_IS_ASCII(marker)
            && PyList_Append(ascii_markers, marker) < 0) {
            Py_DECREF(copy);
            goto done;
        }
    }
    Py_DECREF(copy);
    const unsigned char *t = data.buf;
    const int64_t *s = starts.buf, *e = ends.buf;
    const unsigned char *f = flags.buf;
    Judged j = {0, 0, 1, 1, 1};
    for (Py_ssize_t r = 0; r < n; r++) {
        const int64_t a = s[r], b = e[r];
        if (a < 0 || b < a || b > data.len) {
            PyErr_SetString(PyExc_ValueError, "judge_bounds: a cell out of the data");
            goto done;
        }
        if (b == a && f[r] == 0)
            continue;  /* None */
        int ascii = f[r] != 2;
        for (int64_t i = a; i < b && ascii; i++)
            ascii = t[i] < 0x80;
        if (!ascii) {  /* as a str, as judge_cells reads it */
            PyObject *cell = cell_text((const char *)t + a, (Py_ssize_t)(b - a), f[r] == 2,
                                       &scratch, &scratch_size);
            int failed = cell == NULL || judge_text(&j, cell, markers) < 0;
            Py_XDECREF(cell);
            if (failed)
                goto done;
            continue;
        }
        int64_t first = a, last = b;
#define SPACE(c) (((c) >= 9 && (c) <= 13) || ((c) >= 28 && (c) <= 32))
        while (first < last && SPACE(t[first]))
            first++;
        while (last > first && SPACE(t[last - 1]))
            last--;
#undef SPACE
        const Py_ssize_t size = (Py_ssize_t)(last - first);
        int marker = 0;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(ascii_markers) && !marker; k++) {
            PyObject *word = PyList_GET_ITEM(ascii_markers, k);
            marker = PyUnicode_GET_LENGTH(word) == size
                && memcmp(PyUnicode_DATA(word), t + first, (size_t)size) == 0;
        }
        if (!marker)
            judge_ascii(&j, (const char *)t + first, size);
    }
    result = judged_result(&j);
done:
    PyMem_Free(scratch);
    Py_XDECREF(ascii_markers);
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&flags);
    return result;
}

/* One cell's number (kind 'q': int64 by _INT and _int64; 'd': float64 by _FLOAT and
   float()), written to out. 1 if it is one, 0 if not, -1 with an error. */
static int number_of(PyObject *text, char kind, char *out)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "a cell must be a str or None");
        return -1;
    }
    if (!PyUnicode_IS_ASCII(text))
        return 0;  /* the number grammar is ASCII */
    Py_ssize_t n;
    const char *t = PyUnicode_AsUTF8AndSize(text, &n);  /* an ASCII str's own data */
    if (t == NULL)
        return -1;
    if (kind == 'q') {
        int64_t value;
        if (!integer_text(t, n) || !int64_of(t, n, &value))
            return 0;
        memcpy(out, &value, sizeof value);
        return 1;
    }
    if (!float_text(t, n))
        return 0;
    char *stop;
    double value = PyOS_string_to_double(t, &stop, NULL);
    if (value == -1.0 && PyErr_Occurred())
        return -1;
    if (stop != t + n) {  /* the grammar above and float()'s disagree: not expected */
        PyErr_Format(PyExc_ValueError, "parse_cells: float() stops early in %R", text);
        return -1;
    }
    memcpy(out, &value, sizeof value);
    return 1;
}

PyDoc_STRVAR(parse_cells_doc,
"parse_cells(rows, column, kind, markers, values, valid) -> int\n\n"
"small._parse's reading of a column into `values` (a writable 1-D buffer of kind 'q',\n"
"int64, or 'd', float64, one item per row). With markers None, every cell as it is\n"
"(`valid` is not touched); else each stripped, None and the markers missing (0, and\n"
"False in `valid`). Returns -1 when every cell is read, else the row of the first that\n"
"is not a number (values are then partly written).");

static PyObject *parse_cells(PyObject *self, PyObject *args)
{
    PyObject *rows, *markers, *values_obj, *valid_obj;
    Py_ssize_t column;
    int kind;
    if (!PyArg_ParseTuple(args, "O!nCOOO", &PyList_Type, &rows, &column, &kind, &markers,
                          &values_obj, &valid_obj))
        return NULL;
    if ((kind != 'q' && kind != 'd') || (markers != Py_None && !PySet_Check(markers))) {
        PyErr_SetString(PyExc_TypeError, "parse_cells: kind 'q' or 'd', markers a set or None");
        return NULL;
    }
    PyObject *cells = cells_of(rows, column, PY_SSIZE_T_MAX);
    if (cells == NULL)
        return NULL;
    Py_buffer values, valid = {0};
    if (PyObject_GetBuffer(values_obj, &values, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_ND) < 0) {
        Py_DECREF(cells);
        return NULL;
    }
    Py_ssize_t total = PyList_GET_SIZE(cells), failed_row = -1;
    const char *format = values.format ? values.format : "B";
    int fits = values.ndim == 1 && values.itemsize == 8 && values.shape[0] == total
        && (kind == 'd' ? strcmp(format, "d") == 0
                        : strcmp(format, "q") == 0 || strcmp(format, "l") == 0);
    if (fits && markers != Py_None) {
        if (PyObject_GetBuffer(valid_obj, &valid, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_ND) < 0) {
            PyBuffer_Release(&values);
            Py_DECREF(cells);
            return NULL;
        }
        fits = valid.ndim == 1 && valid.itemsize == 1 && valid.shape[0] == total
            && valid.format != NULL && strcmp(valid.format, "?") == 0;
    }
    if (!fits) {
        PyErr_SetString(PyExc_TypeError, "parse_cells: values (and valid) must be C-contiguous "
                                         "1-D buffers of the kind given, one item per row");
        goto failed;
    }
    char *out = values.buf;
    for (Py_ssize_t r = 0; r < total && failed_row < 0; r++, out += 8) {
        PyObject *cell = PyList_GET_ITEM(cells, r);
        if (markers == Py_None) {
            int read = cell == Py_None ? 0 : number_of(cell, (char)kind, out);
            if (read < 0)
                goto failed;
            if (read == 0)
                failed_row = r;
            continue;
        }
        PyObject *text = cell == Py_None ? NULL : stripped(cell);
        if (cell != Py_None && text == NULL)
            goto failed;
        int missing = text == NULL ? 1 : PySet_Contains(markers, text);
        int read = missing == 0 ? number_of(text, (char)kind, out) : 0;
        Py_XDECREF(text);
        if (missing < 0 || read < 0)
            goto failed;
        if (missing)
            memset(out, 0, 8);
        else if (read == 0)
            failed_row = r;
        ((char *)valid.buf)[r] = !missing;
    }
    PyBuffer_Release(&values);
    if (valid.obj != NULL)
        PyBuffer_Release(&valid);
    Py_DECREF(cells);
    return PyLong_FromSsize_t(failed_row);
failed:
    PyBuffer_Release(&values);
    if (valid.obj != NULL)
        PyBuffer_Release(&valid);
    Py_DECREF(cells);
    return NULL;
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


/* the streaming pipeline (cumtool/fastcsv.py) ----------------------------------------- */

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

PyDoc_STRVAR(cut_doc,
"cut(data, begin, delimiter, width, final, starts, ends, flags) -> (rows, end, status)\n\n"
"fastcsv.cut_py in C: the records of data[begin:] cut into cells as small._records cuts\n"
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
    const unsigned char *t = data.buf;
    const Py_ssize_t n = data.len;
    const unsigned char d = (unsigned char)delimiter;
    int64_t *starts = starts_view.buf, *ends = ends_view.buf;
    unsigned char *flags = flags_view.buf;
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
    Py_BEGIN_ALLOW_THREADS
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
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("nni", rows, end, status);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts_view);
    PyBuffer_Release(&ends_view);
    PyBuffer_Release(&flags_view);
    return result;
}

/* One output column of assemble: an input column's cells, or a result's numbers. */
typedef struct {
    Py_ssize_t column;   /* the input column, or -1: a result */
    int kind;            /* a result's values: 'd' float64 or 'q' int64 */
    Py_buffer values, missing, null;  /* a result's (missing.obj NULL: none missing) */
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
"fastcsv.assemble_py in C: `rows` lines of output, each the `columns` (an int: that\n"
"input column's cells, as cut() wrote their bounds with `capacity`; a triple (values,\n"
"missing, null): a result's float64 or int64 values written as format_floats and\n"
"format_ints write them, `null` where `missing`, a bool array or None) joined by\n"
"`delimiter`, input cells quoted as small._write quotes text (`by_sink`: CsvSink quotes\n"
"it itself; `single`: a row's only cell). The GIL is released.");

static PyObject *assemble(PyObject *self, PyObject *args)
{
    Py_buffer data, starts_view, ends_view, flags_view;
    Py_ssize_t capacity, rows;
    PyObject *columns;
    int delimiter, by_sink, single;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nnO!Cpp", &data, &starts_view, &ends_view,
                          &flags_view, &capacity, &rows, &PyList_Type, &columns, &delimiter,
                          &by_sink, &single))
        return NULL;
    PyObject *out = NULL;
    const Py_ssize_t count = PyList_GET_SIZE(columns);
    OutColumn *plan = PyMem_Calloc((size_t)(count > 0 ? count : 1), sizeof(OutColumn));
    Py_ssize_t filled = 0;
    if (plan == NULL) {
        PyErr_NoMemory();
        goto done;
    }
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
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_TypeError, "assemble: a column is an int or (values, "
                            "missing, null)");
            goto done;
        }
        if (take_numbers(&plan[k], item, rows) < 0)
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
        if (plan[k].column < 0) {
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
    out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL)
        goto done;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
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
                if (column->missing.obj != NULL && ((const char *)column->missing.buf)[r]) {
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
    if (_PyBytes_Resize(&out, written) < 0)
        out = NULL;
done:
    for (Py_ssize_t k = 0; k < filled; k++)
        let_column_go(&plan[k]);
    PyMem_Free(plan);
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts_view);
    PyBuffer_Release(&ends_view);
    PyBuffer_Release(&flags_view);
    return out;
}

static PyMethodDef methods[] = {
    {"records", records, METH_VARARGS, records_doc},
    {"judge_cells", judge_cells, METH_VARARGS, judge_cells_doc},
    {"judge_bounds", judge_bounds, METH_VARARGS, judge_bounds_doc},
    {"parse_cells", parse_cells, METH_VARARGS, parse_cells_doc},
    {"float_texts", float_texts, METH_VARARGS, float_texts_doc},
    {"cut", cut, METH_VARARGS, cut_doc},
    {"assemble", assemble, METH_VARARGS, assemble_doc},
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
    return PyModule_Create(&module);
}
