/* The JSON Lines reader's typed block parser (cumtool/formats/jsonl.py) in C.
 *
 * parse_block reads a block of lines whose keys and value types are known (learnt from the
 * lines before) into columns, or declines the whole block (returns None) at the first thing
 * it does not take as a simple typed line: the caller then reads the block its other ways,
 * which also name a bad line. It takes only what Python's json module reads the same way:
 * flat objects of known keys, each once, with values of the key's kind or null; strings
 * without control characters or lone surrogates (escapes decoded as json does); numbers in JSON's grammar (an int64 column's
 * integers within int64, a float64 column's integers within 2^53, as Python's int to float
 * does exactly). Floats are correctly rounded: the exact fast path (a mantissa below 2^53
 * times or over an exact power of ten, one rounding), else Eisel-Lemire for 19 digits or
 * fewer (ffc_compute_float of the vendored ffc.h, as _numtext.c reads), else CPython's own
 * float() routine, PyOS_string_to_double. The bytes are UTF-8 already (the caller checks).
 *
 * It parses without the GIL, so that the reader's threads parse blocks side by side: its
 * memory is PyMem_Raw*'s, handed to Python as it is (Owned, a buffer: no copy with the GIL
 * held), and only the rare float that needs CPython's routine (over 19 digits, or a
 * product Eisel-Lemire cannot round) takes the GIL back for that number. is_ascii, the
 * parse threads' check of a block's bytes, reads them without the GIL too.
 *
 * jsonl._parse_block_py does the same in Python, rule for rule; tests/test_jsonl.py
 * compares the two.
 *
 * write_lines is the writer's loop: columns of numbers, flags and text (CSV cells, Arrow
 * strings) as lines of JSON objects, the floats written by _numtext.c's core (included
 * here) and the strings escaped as Python's json module writes them.
 * formats/jsonl/lines.py holds its Python twin; tests/test_jsonl_lines.py compares.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define NUMTEXT_CORE_ONLY
#define NUMTEXT_DECIMAL  /* decimal_to_double, the reader's exact steps */
#include "_numtext.c"
#include "outroom.h"

enum { K_NULL = 0, K_BOOL = 1, K_INT = 2, K_FLOAT = 3, K_STRING = 4 };
enum { S_PRESENT = 0, S_NULL = 1, S_ABSENT = 2 };

#define EXACT_FLOAT (((uint64_t)1) << 53)

typedef struct {
    const char *name;
    Py_ssize_t size;
    int kind;
    unsigned char *state;  /* S_* a row */
    unsigned char *values; /* 8 bytes a row (int64, float64), 1 (bool); offsets for strings */
    char *text;            /* strings' bytes */
    Py_ssize_t text_size, text_capacity;
    int big;               /* an int64 beyond 2^53 */
    int all_present;       /* no null or absent cell (found after the parse) */
} Column;

/* Bytes by class, bits: 1 JSON space within a line (space, tab, CR), 2 a byte a string
 * holds as it is (not a quote, a backslash or a control character; a space too). */
static unsigned char CLASS[256];

static void init_classes(void)
{
    for (int c = 0; c < 256; c++)
        CLASS[c] = c >= 0x20 && c != '"' && c != '\\' ? 2 : 0;
    CLASS[' '] |= 1;
    CLASS['\t'] |= 1;
    CLASS['\r'] |= 1;
}

static inline const char *skip_space(const char *p, const char *end)
{
    while (p < end && (CLASS[(unsigned char)*p] & 1))
        p++;
    return p;
}

static inline const char *skip_plain(const char *p, const char *end)
{
    while (p < end && (CLASS[(unsigned char)*p] & 2))
        p++;
    return p;
}

/* A JSON number from p: 0 not one (or not taken), 1 read. *is_int says whether it had
 * neither fraction nor exponent; the integer (when it fits in int64) in *integer; for a
 * float, the value in *real. */
static int number(const char *p, const char *end, const char **after, int *is_int,
                  int64_t *integer, int *fits, double *real)
{
    const char *start = p;
    int negative = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return 0;
    uint64_t mantissa = 0;
    int digits = 0;  /* significant digits in mantissa */
    int overflow = 0;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && *p >= '0' && *p <= '9') {
            if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                digits++;
            } else {
                overflow = 1;
            }
            p++;
        }
    }
    int int_digits_over = overflow;
    long fraction = 0;
    int is_float = 0;
    if (p < end && *p == '.') {
        is_float = 1;
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (digits == 0 && *p == '0') {
                fraction++;  /* leading zeros of the fraction: not significant */
            } else if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                digits++;
                fraction++;
            } else {
                overflow = 1;
            }
            p++;
        }
    }
    long exponent = 0;
    int exponent_huge = 0;  /* digits dropped: only CPython's routine weighs them */
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_float = 1;
        p++;
        int exp_negative = 0;
        if (p < end && (*p == '+' || *p == '-')) {
            exp_negative = *p == '-';
            p++;
        }
        if (p >= end || *p < '0' || *p > '9')
            return 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (exponent < 100000)
                exponent = exponent * 10 + (*p - '0');
            else
                exponent_huge = 1;
            p++;
        }
        if (exp_negative)
            exponent = -exponent;
    }
    *after = p;
    if (!is_float) {
        *is_int = 1;
        /* int64: -2^63 .. 2^63 - 1 */
        if (int_digits_over) {
            *fits = 0;
        } else if (negative) {
            *fits = mantissa <= ((uint64_t)1 << 63);
            *integer = mantissa == ((uint64_t)1 << 63) ? INT64_MIN : -(int64_t)mantissa;
        } else {
            *fits = mantissa < ((uint64_t)1 << 63);
            *integer = (int64_t)mantissa;
        }
        return 1;
    }
    *is_int = 0;
    /* the exact steps of _numtext.c's reader, where no digit was dropped */
    if (decimal_to_double(mantissa, (int64_t)exponent - fraction, negative,
                          !overflow && !exponent_huge, real))
        return 1;
    /* float()'s own routine on a copy that ends where the number does, with the GIL
       (this runs without it; the thread state stays the caller's, so an error set here
       is there when the caller takes the GIL back) */
    Py_ssize_t size = p - start;
    char small[64];
    char *copy = size < (Py_ssize_t)sizeof small ? small : PyMem_RawMalloc((size_t)size + 1);
    if (copy == NULL)
        return -1;
    memcpy(copy, start, (size_t)size);
    copy[size] = '\0';
    char *stop;
    PyGILState_STATE gil = PyGILState_Ensure();
    double value = PyOS_string_to_double(copy, &stop, NULL);
    int failed = value == -1.0 && PyErr_Occurred();
    PyGILState_Release(gil);
    int whole = stop == copy + size;
    if (copy != small)
        PyMem_RawFree(copy);
    if (failed)
        return -1;
    if (!whole)
        return 0;
    *real = value;
    return 1;
}

static int grow_text(Column *c, Py_ssize_t more)
{
    if (c->text_size + more <= c->text_capacity)
        return 0;
    Py_ssize_t capacity = c->text_capacity ? c->text_capacity : 4096;
    while (capacity < c->text_size + more)
        capacity *= 2;
    char *bigger = PyMem_RawRealloc(c->text, (size_t)capacity);
    if (bigger == NULL)
        return -1;  /* MemoryError once the GIL is back */
    c->text = bigger;
    c->text_capacity = capacity;
    return 0;
}

static int grow(char **buffer, Py_ssize_t size, Py_ssize_t *capacity, Py_ssize_t more)
{
    if (size + more <= *capacity)
        return 0;
    Py_ssize_t bigger = *capacity ? *capacity : 256;
    while (bigger < size + more)
        bigger *= 2;
    char *moved = PyMem_RawRealloc(*buffer, (size_t)bigger);
    if (moved == NULL)
        return -1;  /* MemoryError once the GIL is back */
    *buffer = moved;
    *capacity = bigger;
    return 0;
}

static inline int hex4(const char *p, const char *end, unsigned *out)
{
    if (end - p < 4)
        return 0;
    unsigned value = 0;
    for (int k = 0; k < 4; k++) {
        char ch = p[k];
        unsigned digit;
        if (ch >= '0' && ch <= '9')
            digit = (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            digit = (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F')
            digit = (unsigned)(ch - 'A' + 10);
        else
            return 0;
        value = value * 16 + digit;
    }
    *out = value;
    return 1;
}

/* A JSON string from p (just after its opening quote) to its closing quote, its escapes
 * decoded as Python's json does, appended as UTF-8 to buffer (size, capacity): the position
 * after the closing quote; NULL to decline (a control character, a bad escape, a lone
 * surrogate, no closing quote), with *failed set where memory ran out. */
static const char *decode_string(const char *p, const char *end, char **buffer,
                                 Py_ssize_t *size, Py_ssize_t *capacity, int *failed)
{
    for (;;) {
        const char *plain = skip_plain(p, end);
        if (plain > p) {
            if (grow(buffer, *size, capacity, plain - p) < 0) {
                *failed = 1;
                return NULL;
            }
            memcpy(*buffer + *size, p, (size_t)(plain - p));
            *size += plain - p;
            p = plain;
        }
        if (p >= end)
            return NULL;
        if (*p == '"')
            return p + 1;
        if (*p != '\\' || p + 1 >= end)
            return NULL;  /* a control character, or a backslash at the end */
        char escape = p[1];
        p += 2;
        char utf8[4];
        int n = 1;
        switch (escape) {
        case '"': utf8[0] = '"'; break;
        case '\\': utf8[0] = '\\'; break;
        case '/': utf8[0] = '/'; break;
        case 'b': utf8[0] = '\b'; break;
        case 'f': utf8[0] = '\f'; break;
        case 'n': utf8[0] = '\n'; break;
        case 'r': utf8[0] = '\r'; break;
        case 't': utf8[0] = '\t'; break;
        case 'u': {
            unsigned code;
            if (!hex4(p, end, &code))
                return NULL;
            p += 4;
            if (code >= 0xD800 && code <= 0xDBFF) {
                unsigned low;
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, end, &low)
                    || low < 0xDC00 || low > 0xDFFF)
                    return NULL;  /* a lone surrogate: Python keeps it, UTF-8 cannot */
                p += 6;
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            } else if (code >= 0xDC00 && code <= 0xDFFF) {
                return NULL;
            }
            if (code < 0x80) {
                utf8[0] = (char)code;
            } else if (code < 0x800) {
                utf8[0] = (char)(0xC0 | (code >> 6));
                utf8[1] = (char)(0x80 | (code & 0x3F));
                n = 2;
            } else if (code < 0x10000) {
                utf8[0] = (char)(0xE0 | (code >> 12));
                utf8[1] = (char)(0x80 | ((code >> 6) & 0x3F));
                utf8[2] = (char)(0x80 | (code & 0x3F));
                n = 3;
            } else {
                utf8[0] = (char)(0xF0 | (code >> 18));
                utf8[1] = (char)(0x80 | ((code >> 12) & 0x3F));
                utf8[2] = (char)(0x80 | ((code >> 6) & 0x3F));
                utf8[3] = (char)(0x80 | (code & 0x3F));
                n = 4;
            }
            break;
        }
        default:
            return NULL;
        }
        if (grow(buffer, *size, capacity, n) < 0) {
            *failed = 1;
            return NULL;
        }
        memcpy(*buffer + *size, utf8, (size_t)n);
        *size += n;
    }
}

static inline int same_key(const Column *c, const char *name, Py_ssize_t size)
{
    if (c->size != size)
        return 0;
    for (Py_ssize_t k = 0; k < size; k++)
        if (c->name[k] != name[k])
            return 0;
    return 1;
}

#define LINE_END(p) ((p) >= end || *(p) == '\n')

/* One line from *cursor on, to its line feed or `end`: 1 taken (row `row` filled), 0
 * blank, 2 declined, -1 a Python error; where taken or blank, *cursor is left at the line's
 * end. (A line feed stops every token: it is no JSON space here, nor a digit, and no
 * string holds one.) */
static int parse_line(const char **cursor, const char *end, Column *columns,
                      Py_ssize_t count, Py_ssize_t row, Py_ssize_t *guess, char **scratch,
                      Py_ssize_t *scratch_capacity)
{
    const char *p = skip_space(*cursor, end);
    if (LINE_END(p)) {
        *cursor = p;
        return 0;
    }
    if (*p != '{')
        return 2;
    p = skip_space(p + 1, end);
    for (Py_ssize_t i = 0; i < count; i++) {
        Column *c = &columns[i];
        c->state[row] = S_ABSENT;
        if (c->kind == K_STRING)
            ((int32_t *)c->values)[row + 1] = (int32_t)c->text_size;
    }
    if (p < end && *p == '}') {
        p = skip_space(p + 1, end);
        *cursor = p;
        return LINE_END(p) ? 1 : 2;
    }
    for (;;) {
        /* a key */
        if (p >= end || *p != '"')
            return 2;
        const char *name = ++p;
        p = skip_plain(p, end);
        Py_ssize_t size;
        if (p < end && *p == '"') {
            size = p - name;
            p++;
        } else {  /* escapes: the key decoded */
            int failed = 0;
            size = 0;
            p = decode_string(name, end, scratch, &size, scratch_capacity, &failed);
            if (p == NULL)
                return failed ? -1 : 2;
            name = *scratch;
        }
        p = skip_space(p, end);
        if (p >= end || *p != ':')
            return 2;
        p = skip_space(p + 1, end);
        Py_ssize_t at = *guess < count ? *guess : 0;
        Py_ssize_t looked = 0;
        while (looked < count && !same_key(&columns[at], name, size)) {
            at = at + 1 < count ? at + 1 : 0;
            looked++;
        }
        if (looked == count)
            return 2;  /* a key not known yet */
        *guess = at + 1;
        Column *c = &columns[at];
        if (c->state[row] != S_ABSENT)
            return 2;  /* a key twice */
        /* its value */
        if (p >= end)
            return 2;
        if (*p == 'n') {
            if (end - p < 4 || memcmp(p, "null", 4) != 0)
                return 2;
            p += 4;
            c->state[row] = S_NULL;
        } else if (c->kind == K_BOOL && (*p == 't' || *p == 'f')) {
            if (end - p >= 4 && memcmp(p, "true", 4) == 0) {
                c->values[row] = 1;
                p += 4;
            } else if (end - p >= 5 && memcmp(p, "false", 5) == 0) {
                c->values[row] = 0;
                p += 5;
            } else {
                return 2;
            }
            c->state[row] = S_PRESENT;
        } else if (c->kind == K_STRING && *p == '"') {
            const char *text = ++p;
            p = skip_plain(p, end);
            if (p < end && *p == '"') {
                Py_ssize_t length = p - text;
                p++;
                if (grow_text(c, length) < 0)
                    return -1;
                memcpy(c->text + c->text_size, text, (size_t)length);
                c->text_size += length;
            } else {  /* escapes */
                int failed = 0;
                p = decode_string(text, end, &c->text, &c->text_size, &c->text_capacity,
                                  &failed);
                if (p == NULL)
                    return failed ? -1 : 2;
            }
            if (c->text_size > INT32_MAX)
                return 2;
            ((int32_t *)c->values)[row + 1] = (int32_t)c->text_size;
            c->state[row] = S_PRESENT;
        } else if ((c->kind == K_INT || c->kind == K_FLOAT) && (*p == '-' || (*p >= '0'
                                                                               && *p <= '9'))) {
            int is_int = 0, fits = 0;
            int64_t integer = 0;
            double real = 0.0;
            int read = number(p, end, &p, &is_int, &integer, &fits, &real);
            if (read <= 0)
                return read < 0 ? -1 : 2;
            if (c->kind == K_INT) {
                if (!is_int || !fits)
                    return 2;
                memcpy(c->values + 8 * row, &integer, 8);
                if (integer > (int64_t)EXACT_FLOAT || integer < -(int64_t)EXACT_FLOAT)
                    c->big = 1;
            } else {
                if (is_int) {
                    if (!fits || integer > (int64_t)EXACT_FLOAT
                        || integer < -(int64_t)EXACT_FLOAT)
                        return 2;  /* not exact as a float64 */
                    real = (double)integer;
                }
                memcpy(c->values + 8 * row, &real, 8);
            }
            c->state[row] = S_PRESENT;
        } else {
            return 2;
        }
        p = skip_space(p, end);
        if (p < end && *p == ',') {
            p = skip_space(p + 1, end);
            continue;
        }
        if (p < end && *p == '}') {
            p = skip_space(p + 1, end);
            *cursor = p;
            return LINE_END(p) ? 1 : 2;
        }
        return 2;
    }
}

PyDoc_STRVAR(parse_block_doc,
"parse_block(data, start, keys, kinds) -> None or (lines, longest, rows, columns)\n\n"
"The lines of `data` from byte `start` on, each a flat JSON object of the `keys` (UTF-8\n"
"bytes) with values of their `kinds` (bytes, one a key: 0 null, 1 bool, 2 int64, 3 float64,\n"
"4 string; escapes decoded) or null; blank lines are skipped. None where a line is not so. `lines` counts\n"
"every line (as jsonl._lines_of), `longest` is the longest line's length without its line\n"
"feed, `rows` the objects; `columns` holds for each key (values, offsets, text, state, big):\n"
"values 8 bytes a row (int64, float64) or 1 (bool: 0 or 1), None for null and string\n"
"columns; a string column's int32 offsets (rows + 1) and its text; state one byte a row\n"
"(0 a value, 1 null, 2 absent; a missing cell's value is zero, its string empty); big\n"
"whether an int64 is beyond 2^53. The GIL is released while it parses.");

/* The lines from text to end into the columns, without the GIL: 1 taken (*rows,
 * *longest), 2 declined, -1 out of memory or a Python error (set where it was raised). */
static int parse_lines(const char *text, const char *end, Column *columns, Py_ssize_t count,
                       Py_ssize_t lines, Py_ssize_t *rows_out, Py_ssize_t *longest_out)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        Column *c = &columns[i];
        c->state = PyMem_RawMalloc((size_t)lines + 1);
        Py_ssize_t width = c->kind == K_INT || c->kind == K_FLOAT ? 8 * lines
            : c->kind == K_BOOL ? lines : c->kind == K_STRING ? 4 * (lines + 1) : 1;
        c->values = PyMem_RawCalloc((size_t)width + 1, 1);
        if (c->state == NULL || c->values == NULL)
            return -1;
    }
    char *scratch = NULL;  /* a key with escapes, decoded */
    Py_ssize_t rows = 0, longest = 0, guess = 0, scratch_capacity = 0;
    int status = 1;
    for (const char *p = text; p < end; ) {
        const char *stop = p;
        int taken = parse_line(&stop, end, columns, count, rows, &guess, &scratch,
                               &scratch_capacity);
        if (taken < 0 || taken == 2) {
            status = taken;
            break;
        }
        if (stop - p > longest)
            longest = stop - p;
        rows += taken;
        p = stop + 1;  /* past the line feed (or the end) */
    }
    PyMem_RawFree(scratch);
    *rows_out = rows;
    *longest_out = longest;
    return status;
}

/* A column's memory handed to Python as it is, not copied into a bytes object: its
   buffer (read-only) is what numpy and Arrow wrap, and it is freed with the last of
   them. A copy took the GIL for the memcpy and for faulting in the new pages of each
   column (~3 MB a 4 MiB block): at 16 cores the parse threads queued for it. */
typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t size;
} Owned;

static void owned_dealloc(Owned *self)
{
    PyMem_RawFree(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int owned_getbuffer(Owned *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data ? self->data : (void *)"",
                             self->size, 1, flags);
}

static PyBufferProcs owned_buffer = {(getbufferproc)owned_getbuffer, NULL};

static PyTypeObject OwnedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumtool._ext._jsonl.Owned",
    .tp_basicsize = sizeof(Owned),
    .tp_dealloc = (destructor)owned_dealloc,
    .tp_as_buffer = &owned_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A parsed column's bytes (the buffer protocol; bytes() copies them).",
};

/* `*memory` (size bytes) as an Owned, which then frees it (*memory is left NULL). */
static PyObject *owned(void **memory, Py_ssize_t size)
{
    Owned *self = PyObject_New(Owned, &OwnedType);
    if (self == NULL)
        return NULL;
    self->data = *memory;
    self->size = size;
    *memory = NULL;
    return (PyObject *)self;
}

static PyObject *parse_block(PyObject *self, PyObject *args)
{
    Py_buffer data;
    Py_ssize_t start;
    PyObject *keys;
    Py_buffer kinds;
    if (!PyArg_ParseTuple(args, "y*nO!y*", &data, &start, &PyTuple_Type, &keys, &kinds))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(keys);
    Column *columns = NULL;
    if (count != kinds.len || start < 0 || start > data.len) {
        PyErr_SetString(PyExc_ValueError, "parse_block: one kind a key, start within data");
        goto done;
    }
    const char *text = data.buf;
    const char *end = text + data.len;
    columns = PyMem_RawCalloc((size_t)(count ? count : 1), sizeof(Column));
    if (columns == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const unsigned char *kind_of = kinds.buf;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *key = PyTuple_GET_ITEM(keys, i);
        if (!PyBytes_Check(key) || kind_of[i] > K_STRING) {
            PyErr_SetString(PyExc_TypeError, "parse_block: keys are bytes, kinds 0 to 4");
            goto done;
        }
        Column *c = &columns[i];
        c->name = PyBytes_AS_STRING(key);  /* the tuple keeps them while the call lasts */
        c->size = PyBytes_GET_SIZE(key);
        c->kind = kind_of[i];
    }
    Py_ssize_t lines = 0, rows = 0, longest = 0;
    int status;
    Py_BEGIN_ALLOW_THREADS
    /* The lines (rows at most) */
    for (const char *p = text + start; p < end; ) {
        const char *feed = memchr(p, '\n', (size_t)(end - p));
        lines++;
        if (feed == NULL)
            break;
        p = feed + 1;
    }
    status = parse_lines(text + start, end, columns, count, lines, &rows, &longest);
    for (Py_ssize_t i = 0; status >= 0 && status != 2 && i < count; i++) {
        Column *c = &columns[i];
        c->all_present = 1;
        for (Py_ssize_t r = 0; r < rows && c->all_present; r++)
            c->all_present = c->state[r] == S_PRESENT;
    }
    Py_END_ALLOW_THREADS
    if (status < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    if (status == 2) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    PyObject *list = PyList_New(count);
    if (list == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        Column *c = &columns[i];
        const int all_present = c->all_present;
        PyObject *values, *offsets, *strings, *state;
        if (c->kind == K_INT || c->kind == K_FLOAT || c->kind == K_BOOL) {
            values = owned((void **)&c->values, (c->kind == K_BOOL ? 1 : 8) * rows);
            offsets = Py_None;
            strings = Py_None;
            Py_INCREF(offsets);
            Py_INCREF(strings);
        } else if (c->kind == K_STRING) {
            values = Py_None;
            Py_INCREF(values);
            offsets = owned((void **)&c->values, 4 * (rows + 1));
            strings = owned((void **)&c->text, c->text_size);
        } else {
            values = offsets = strings = Py_None;
            Py_INCREF(values);
            Py_INCREF(offsets);
            Py_INCREF(strings);
        }
        if (all_present) {
            state = Py_None;
            Py_INCREF(state);
        } else {
            state = owned((void **)&c->state, rows);
        }
        PyObject *item = NULL;
        if (values && offsets && strings && state)
            item = Py_BuildValue("(NNNNO)", values, offsets, strings, state,
                                 c->big ? Py_True : Py_False);
        else {
            Py_XDECREF(values);
            Py_XDECREF(offsets);
            Py_XDECREF(strings);
            Py_XDECREF(state);
        }
        if (item == NULL) {
            Py_DECREF(list);
            goto done;
        }
        PyList_SET_ITEM(list, i, item);
    }
    result = Py_BuildValue("(nnnN)", lines, longest, rows, list);
done:
    if (columns != NULL) {
        for (Py_ssize_t i = 0; i < count; i++) {
            PyMem_RawFree(columns[i].state);
            PyMem_RawFree(columns[i].values);
            PyMem_RawFree(columns[i].text);
        }
        PyMem_RawFree(columns);
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&kinds);
    return result;
}

/* One column of write_lines: its key, and a float64, int64 or bool value a row; or a CSV
   cell a row, written as a JSON string (kind 's'). */
typedef struct {
    Py_buffer key, values, missing, absent;  /* missing.obj, absent.obj NULL: none */
    Py_buffer data, starts, ends, flags;     /* kind 's': the cells as fastcsv.cut found them */
    int kind;                                /* 'd', 'q', '?' or 's' */
} LineColumn;

static void let_line_column_go(LineColumn *column)
{
    Py_buffer *views[] = {&column->data, &column->starts, &column->ends, &column->flags};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        if (views[i]->obj != NULL)
            PyBuffer_Release(views[i]);
    if (column->key.obj != NULL)
        PyBuffer_Release(&column->key);
    if (column->values.obj != NULL)
        PyBuffer_Release(&column->values);
    if (column->missing.obj != NULL)
        PyBuffer_Release(&column->missing);
    if (column->absent.obj != NULL)
        PyBuffer_Release(&column->absent);
}

/* A mask of write_lines: None (left NULL), or `rows` bools. */
static int take_mask(PyObject *item, Py_buffer *view, Py_ssize_t rows)
{
    if (item == Py_None)
        return 0;
    if (PyObject_GetBuffer(item, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->ndim == 1 && view->itemsize == 1 && view->format != NULL
        && strcmp(view->format, "?") == 0 && view->shape[0] == rows)
        return 0;
    PyErr_SetString(PyExc_ValueError, "write_lines: a mask is None or as many bools as rows");
    return -1;
}

/* A cells column of write_lines: (key, data, starts, ends, flags), `rows` int64 bounds
   within data and uint8 flags each. */
static int take_cells(LineColumn *column, PyObject *item, Py_ssize_t rows)
{
    column->kind = 's';
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &column->data, PyBUF_SIMPLE) < 0)
        return -1;
    Py_buffer *bounds[] = {&column->starts, &column->ends, &column->flags};
    for (int i = 0; i < 3; i++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 2 + i), bounds[i],
                               PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            return -1;
        const Py_ssize_t size = i < 2 ? 8 : 1;
        if (bounds[i]->ndim != 1 || bounds[i]->itemsize != size || bounds[i]->shape[0] != rows
            || bounds[i]->format == NULL || (i < 2 ? strcmp(bounds[i]->format, "q") != 0
                                                      && strcmp(bounds[i]->format, "l") != 0
                                                   : strcmp(bounds[i]->format, "B") != 0)) {
            PyErr_SetString(PyExc_ValueError, "write_lines: cells' starts and ends are as "
                            "many int64s as rows, their flags as many uint8s");
            return -1;
        }
    }
    const int64_t *starts = column->starts.buf, *ends = column->ends.buf;
    for (Py_ssize_t r = 0; r < rows; r++)
        if (starts[r] < 0 || starts[r] > ends[r] || ends[r] > column->data.len) {
            PyErr_SetString(PyExc_ValueError, "write_lines: a cell outside the data");
            return -1;
        }
    if (PyTuple_GET_SIZE(item) == 7
        && (take_mask(PyTuple_GET_ITEM(item, 5), &column->missing, rows) < 0
            || take_mask(PyTuple_GET_ITEM(item, 6), &column->absent, rows) < 0))
        return -1;
    return 0;
}

static int take_line_column(LineColumn *column, PyObject *item, Py_ssize_t rows)
{
    const Py_ssize_t size = PyTuple_Check(item) ? PyTuple_GET_SIZE(item) : 0;
    if (size != 4 && size != 5 && size != 7) {
        PyErr_SetString(PyExc_TypeError, "write_lines: a column is (key, values, missing, "
                        "absent) or (key, data, starts, ends, flags[, missing, absent])");
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), &column->key, PyBUF_SIMPLE) < 0)
        return -1;
    if (size != 4)
        return take_cells(column, item, rows);
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &column->values,
                           PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    const Py_buffer *v = &column->values;
    const char *format = v->format != NULL ? v->format : "B";
    if (v->ndim == 1 && v->shape[0] == rows) {
        if (v->itemsize == 8 && strcmp(format, "d") == 0)
            column->kind = 'd';
        else if (v->itemsize == 8 && (strcmp(format, "q") == 0 || strcmp(format, "l") == 0))
            column->kind = 'q';
        else if (v->itemsize == 1 && strcmp(format, "?") == 0)
            column->kind = '?';
    }
    if (column->kind == 0) {
        PyErr_SetString(PyExc_ValueError, "write_lines: values are as many float64s, int64s "
                        "or bools as rows (C-contiguous)");
        return -1;
    }
    if (take_mask(PyTuple_GET_ITEM(item, 2), &column->missing, rows) < 0
        || take_mask(PyTuple_GET_ITEM(item, 3), &column->absent, rows) < 0)
        return -1;
    return 0;
}

/* Cell r of a cells column as Python's json module writes its text (non-ASCII as it
   is): null where it is empty and was not quoted; a quoted cell's doubled quotes (flag 2)
   are one. Returns the end of what it wrote. */
static char *cell_string(const LineColumn *c, Py_ssize_t r, char *p)
{
    static const char hex[] = "0123456789abcdef";
    const int64_t start = ((const int64_t *)c->starts.buf)[r];
    const int64_t end = ((const int64_t *)c->ends.buf)[r];
    const unsigned char flag = ((const unsigned char *)c->flags.buf)[r];
    if (start == end && flag == 0) {
        memcpy(p, "null", 4);
        return p + 4;
    }
    const unsigned char *s = (const unsigned char *)c->data.buf + start;
    const unsigned char *const stop = (const unsigned char *)c->data.buf + end;
    *p++ = '"';
    while (s < stop) {
        const unsigned char *plain = s;  /* bytes kept as they are, copied at once */
        while (s < stop && (CLASS[*s] & 2))
            s++;
        memcpy(p, plain, (size_t)(s - plain));
        p += s - plain;
        if (s == stop)
            break;
        const unsigned char b = *s++;
        if (b == '"') {
            if (flag == 2 && s < stop && *s == '"')
                s++;  /* a doubled quote is one */
            *p++ = '\\';
            *p++ = '"';
        } else if (b == '\\') {
            *p++ = '\\';
            *p++ = '\\';
        } else {
            *p++ = '\\';
            switch (b) {
            case '\n': *p++ = 'n'; break;
            case '\r': *p++ = 'r'; break;
            case '\t': *p++ = 't'; break;
            case '\b': *p++ = 'b'; break;
            case '\f': *p++ = 'f'; break;
            default:
                memcpy(p, "u00", 3);
                p[3] = hex[b >> 4];
                p[4] = hex[b & 15];
                p += 5;
            }
        }
    }
    *p++ = '"';
    return p;
}

PyDoc_STRVAR(write_lines_doc,
"write_lines(rows, columns, into=None) -> bytes | int\n\n"
"`rows` lines, each a JSON object of the `columns`, in order: tuples (key, values,\n"
"missing, absent), `key` the key's JSON text with its colon (b'\"a\":'), `values` rows\n"
"float64s, int64s or bools, `missing` and `absent` None or rows bools: a value is written\n"
"as Python's json module writes it (floats as repr() does, NaN, Infinity, -Infinity), as\n"
"null where missing, and left out with its key where absent. Or (key, data, starts,\n"
"ends, flags[, missing, absent]): text cells, data[starts[i]:ends[i]], each written as\n"
"the JSON string of its text: CSV cells as fastcsv.cut found them (flag 2: quoted, its\n"
"quotes doubled, which are one), null where empty and unquoted (flag 0); strings with\n"
"flag 1. The GIL is released. `into`: a bytearray the lines are written into, at its\n"
"start, their size returned (outroom.h; one a view holds is left alone: bytes as without).");

static PyObject *write_lines(PyObject *self, PyObject *args)
{
    Py_ssize_t rows;
    PyObject *columns, *into = Py_None;
    if (!PyArg_ParseTuple(args, "nO!|O", &rows, &PyList_Type, &columns, &into))
        return NULL;
    if (outroom_check(into, "write_lines") < 0)
        return NULL;
    if (rows < 0) {
        PyErr_SetString(PyExc_ValueError, "write_lines: rows must not be negative");
        return NULL;
    }
    const Py_ssize_t count = PyList_GET_SIZE(columns);
    LineColumn *plan = PyMem_Calloc((size_t)(count > 0 ? count : 1), sizeof(LineColumn));
    PyObject *out = NULL, *made = NULL;
    if (plan == NULL)
        return PyErr_NoMemory();
    /* a line at most: braces and a LF; a comma, a key and its longest value a column
       (cells: after the lines, six bytes a byte and two quotes, \u00XX at most) */
    Py_ssize_t line = 3, text = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        if (take_line_column(&plan[k], PyList_GET_ITEM(columns, k), rows) < 0)
            goto done;
        if (plan[k].kind == 's') {
            const int64_t *starts = plan[k].starts.buf, *ends = plan[k].ends.buf;
            for (Py_ssize_t r = 0; r < rows; r++) {
                if (ends[r] - starts[r] > (PY_SSIZE_T_MAX / 8 - text) / 6) {
                    PyErr_NoMemory();
                    goto done;
                }
                text += 6 * (Py_ssize_t)(ends[r] - starts[r]) + 2;
            }
        }
        const Py_ssize_t widest = plan[k].kind == 'd' ? NUMTEXT_FORMAT_MAX : 20;
        if (plan[k].key.len > PY_SSIZE_T_MAX / 4 - line - widest) {
            PyErr_NoMemory();
            goto done;
        }
        line += 1 + plan[k].key.len + widest;
    }
    if (rows > 0 && line > (PY_SSIZE_T_MAX / 2 - text) / rows) {
        PyErr_NoMemory();
        goto done;
    }
    char *const o = outroom_take(into, line * rows + text, &made);
    if (o == NULL)
        goto done;
    char *p = o;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; r++) {
        *p++ = '{';
        char *const first = p;
        for (Py_ssize_t k = 0; k < count; k++) {
            const LineColumn *c = &plan[k];
            if (c->absent.obj != NULL && ((const char *)c->absent.buf)[r])
                continue;
            if (p != first)
                *p++ = ',';
            memcpy(p, c->key.buf, (size_t)c->key.len);
            p += c->key.len;
            if (c->missing.obj != NULL && ((const char *)c->missing.buf)[r]) {
                memcpy(p, "null", 4);
                p += 4;
            } else if (c->kind == 's') {
                p = cell_string(c, r, p);
            } else if (c->kind == 'd') {
                p += numtext_format_json(((const double *)c->values.buf)[r], p);
            } else if (c->kind == 'q') {
                p += int_text(((const int64_t *)c->values.buf)[r], p);
            } else if (((const char *)c->values.buf)[r]) {
                memcpy(p, "true", 4);
                p += 4;
            } else {
                memcpy(p, "false", 5);
                p += 5;
            }
        }
        *p++ = '}';
        *p++ = '\n';
    }
    Py_END_ALLOW_THREADS
    out = outroom_result(made, p - o);
    made = NULL;
done:
    Py_XDECREF(made);
    for (Py_ssize_t k = 0; k < count; k++)
        let_line_column_go(&plan[k]);
    PyMem_Free(plan);
    return out;
}

/* Whether a buffer is ASCII alone, looked at without the GIL (bytes.isascii holds it:
   ~1 ms a 4 MiB block, on every parse thread). */
static PyObject *is_ascii(PyObject *self, PyObject *arg)
{
    Py_buffer data;
    if (PyObject_GetBuffer(arg, &data, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *p = data.buf;
    const Py_ssize_t n = data.len;
    uint64_t high = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        memcpy(&word, p + i, 8);
        high |= word;
    }
    for (; i < n; i++)
        high |= p[i];
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyBool_FromLong((high & UINT64_C(0x8080808080808080)) == 0);
}

static PyMethodDef methods[] = {
    {"parse_block", parse_block, METH_VARARGS, parse_block_doc},
    {"is_ascii", is_ascii, METH_O, "Whether a buffer's bytes are all ASCII (below 128)."},
    {"write_lines", write_lines, METH_VARARGS, write_lines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cumtool._jsonl",
    .m_doc = "The JSON Lines reader's typed block parser in C (see the top of _jsonl.c).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__jsonl(void)
{
    init_classes();
    if (PyType_Ready(&OwnedType) < 0)
        return NULL;
    return PyModule_Create(&module);
}
