/* Sequential float64 recurrences that have no exact vectorised numpy form.
 *
 * Each function here is the loop that cumtool's Python code also runs (the fallback when
 * this module is not built), with the same float64 operations in the same order, so the
 * results are the same bits. The operations are plain IEEE binary64: this file must be
 * compiled without contraction into fused multiply-adds (setup.py passes
 * -ffp-contract=off), and exp and log1p are the C library's, as numpy's logaddexp uses.
 *
 * Arrays come through the buffer protocol as 2-D (rows, lines) float64 blocks of any
 * strides; the scan runs down each line (grouped_accumulate: down one column, by group).
 * The GIL is released while a loop runs, so the caller can scan disjoint line ranges on
 * several threads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

/* A build that would round differently fails here, and cumtool then runs its Python
   fallback (the extension is optional): no fused or reordered operations, no wider
   intermediates (x87). */
#if defined(__FAST_MATH__)
#error "_sequential.c must not be compiled with -ffast-math"
#endif
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "_sequential.c needs double arithmetic evaluated in double (FLT_EVAL_METHOD 0)"
#endif
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

typedef struct {
    Py_buffer view;
    char *base;
    Py_ssize_t rows, lines;      /* a 1-D buffer has rows = its length, lines = 1 */
    Py_ssize_t row_step, line_step;  /* in bytes */
} Block;

/* kind: 'd' float64, 'q' int64, '?' bool. ndim: 1 or 2. */
static int take(PyObject *obj, Block *block, int ndim, char kind, int writable,
                const char *what)
{
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &block->view, flags) < 0)
        return -1;
    /* Native byte order only: a format of one code, or '@', '=' or the native order's
       prefix before it ('>d' read as 'd' would give garbage). */
    const char *format = block->view.format ? block->view.format : "B";
    if (format[0] == '@' || format[0] == '='
        || format[0] == (PY_LITTLE_ENDIAN ? '<' : '>'))
        format++;
    const char code = strlen(format) == 1 ? format[0] : '\0';
    int ok = block->view.ndim == ndim;
    if (kind == 'd')
        ok = ok && code == 'd' && block->view.itemsize == 8;
    else if (kind == 'q')
        ok = ok && (code == 'q' || code == 'l') && block->view.itemsize == 8;
    else
        ok = ok && code == '?' && block->view.itemsize == 1;
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: expected a %d-D buffer of kind '%c'", what, ndim,
                     kind);
        PyBuffer_Release(&block->view);
        return -1;
    }
    block->base = (char *)block->view.buf;
    block->rows = block->view.shape[0];
    block->row_step = block->view.strides[0];
    block->lines = ndim == 2 ? block->view.shape[1] : 1;
    block->line_step = ndim == 2 ? block->view.strides[1] : 0;
    return 0;
}

#define AT(block, type, row, line) \
    (*(type *)((block).base + (row) * (block).row_step + (line) * (block).line_step))
#define ITEM(block, type, i) (*(type *)((block).base + (i) * (block).row_step))

/* The buffers a call has taken, released together however the call ends. */
typedef struct {
    Py_buffer *views[8];
    int count;
} Held;

static int hold(Held *held, PyObject *obj, Block *block, int ndim, char kind, int writable,
                const char *what)
{
    if (take(obj, block, ndim, kind, writable, what) < 0)
        return -1;
    held->views[held->count++] = &block->view;
    return 0;
}

static void let_go(Held *held)
{
    while (held->count > 0)
        PyBuffer_Release(held->views[--held->count]);
}

static int check_lines(const Block *x, const Block *other, const char *what)
{
    if (other->rows != x->lines) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd values, one per line", what,
                     x->lines);
        return -1;
    }
    return 0;
}

static int check_shape(const Block *x, const Block *other, const char *what)
{
    if (other->rows != x->rows || other->lines != x->lines) {
        PyErr_Format(PyExc_ValueError, "%s: expected the shape of the block", what);
        return -1;
    }
    return 0;
}

/* A scan's x, its start (a value a line) and out (x's shape, written), all of `kind`,
   held together; -1 (all let go, the error set) where one does not fit. */
static int hold_scan(Held *held, PyObject *x_obj, PyObject *start_obj, PyObject *out_obj,
                     int ndim, char kind, Block *x, Block *start, Block *out)
{
    if (hold(held, x_obj, x, ndim, kind, 0, "x") < 0
        || hold(held, start_obj, start, 1, kind, 0, "start") < 0
        || hold(held, out_obj, out, ndim, kind, 1, "out") < 0
        || check_lines(x, start, "start") < 0 || check_shape(x, out, "out") < 0) {
        let_go(held);
        return -1;
    }
    return 0;
}

static int check_range(const Block *x, Py_ssize_t lo, Py_ssize_t hi)
{
    if (lo < 0 || hi > x->lines || lo > hi) {
        PyErr_SetString(PyExc_ValueError, "line range out of bounds");
        return -1;
    }
    return 0;
}

/* The loops below run row by row across the lines, each line's running value read back
   from the row before it (a count, where kept, from a small array for a chunk of lines):
   a C-order block is then read once, in order, and the lines' recurrences (each a chain
   of dependent operations) overlap in the processor. Each line still sees its operations
   in its own order: the same bits as line by line. */
#define CHUNK_LINES 512

/* A count for each line of a chunk (8 bytes each: a double or an int64), taken with the
   GIL held. */
static void *chunk_counts(void)
{
    void *counts = PyMem_Malloc(8 * CHUNK_LINES);
    if (counts == NULL)
        PyErr_NoMemory();
    return counts;
}

#include "logaddexp.h"

PyDoc_STRVAR(logaddexp_accumulate_doc,
"logaddexp_accumulate(block, start, lo, hi)\n--\n\n"
"In place, for lines lo..hi of the 2-D float64 block: block[0] = logaddexp(start, "
"block[0]),\nthen block[i] = logaddexp(block[i - 1], block[i]); as numpy's\n"
"logaddexp(start, block[:1]) followed by logaddexp.accumulate(block, axis=0).");

static PyObject *logaddexp_accumulate(PyObject *self, PyObject *args)
{
    PyObject *block_obj, *start_obj;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OOnn", &block_obj, &start_obj, &lo, &hi))
        return NULL;
    Block acc, start;
    Held held = {0};
    if (hold(&held, block_obj, &acc, 2, 'd', 1, "block") < 0
        || hold(&held, start_obj, &start, 1, 'd', 0, "start") < 0
        || check_lines(&acc, &start, "start") < 0 || check_range(&acc, lo, hi) < 0) {
        let_go(&held);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t row = 0; row < acc.rows; row++) {
        for (Py_ssize_t line = lo; line < hi; line++) {
            const double before = row ? AT(acc, double, row - 1, line)
                                      : ITEM(start, double, line);
            double *cell = &AT(acc, double, row, line);
            *cell = logaddexp(before, *cell);
        }
    }
    Py_END_ALLOW_THREADS
    let_go(&held);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(accumulate_rows_doc,
"accumulate_rows(op, x, start, out)\n--\n\n"
"The running sum (op 0) or product (op 1) of the 2-D float64 block x down each line,\n"
"from start, into out (of x's shape; it may be x itself): out[0] = start op x[0], then\n"
"out[i] = out[i - 1] op x[i]. The same operations as numpy's add or multiply of start\n"
"and x[:1] followed by accumulate(axis=0), but taken row by row through memory: numpy\n"
"walks a C-order block once per line, at a stride of a row.");

static PyObject *accumulate_rows(PyObject *self, PyObject *args)
{
    int op;
    PyObject *x_obj, *start_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "iOOO", &op, &x_obj, &start_obj, &out_obj))
        return NULL;
    if (op != 0 && op != 1) {
        PyErr_SetString(PyExc_ValueError, "op must be 0 (sum) or 1 (product)");
        return NULL;
    }
    Block x, start, out;
    Held held = {0};
    if (hold_scan(&held, x_obj, start_obj, out_obj, 2, 'd', &x, &start, &out) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    if (x.lines == 1) {
        /* One line (a table's column): the running value stays in a register, not read
           back from out at every row (the same operations, the same order). */
        double s = ITEM(start, double, 0);
        if (op == 0)
            for (Py_ssize_t row = 0; row < x.rows; row++)
                AT(out, double, row, 0) = s = s + AT(x, double, row, 0);
        else
            for (Py_ssize_t row = 0; row < x.rows; row++)
                AT(out, double, row, 0) = s = s * AT(x, double, row, 0);
    } else
    for (Py_ssize_t row = 0; row < x.rows; row++) {
        for (Py_ssize_t line = 0; line < x.lines; line++) {
            const double before = row ? AT(out, double, row - 1, line)
                                      : ITEM(start, double, line);
            const double value = AT(x, double, row, line);
            AT(out, double, row, line) = op == 0 ? before + value : before * value;
        }
    }
    Py_END_ALLOW_THREADS
    let_go(&held);
    Py_RETURN_NONE;
}

/* The folds' columns: `lines` float64 vectors of one length (xs), and each one's present
   mask, a bool vector of that length or None (ps, `has` marking those given). */
typedef struct {
    PyObject *columns, *presents;     /* the sequences the caller gave, as fast sequences */
    Py_ssize_t lines;
    Block *xs, *ps;
    char *has;
    Py_ssize_t taken, present_taken;  /* the buffers held, for close_columns */
} FoldColumns;

/* Take the folds' columns and their masks: 0, or -1 with an exception set (close_columns
   lets go of what was taken either way). */
static int open_columns(FoldColumns *c, PyObject *columns_obj, PyObject *presents_obj)
{
    memset(c, 0, sizeof(*c));
    c->columns = PySequence_Fast(columns_obj, "columns: expected a sequence");
    if (c->columns == NULL)
        return -1;
    c->presents = PySequence_Fast(presents_obj, "presents: expected a sequence");
    if (c->presents == NULL)
        return -1;
    const Py_ssize_t lines = c->lines = PySequence_Fast_GET_SIZE(c->columns);
    c->xs = PyMem_Calloc(lines ? lines : 1, sizeof(Block));
    c->ps = PyMem_Calloc(lines ? lines : 1, sizeof(Block));
    c->has = PyMem_Calloc(lines ? lines : 1, 1);
    if (c->xs == NULL || c->ps == NULL || c->has == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(c->presents) != lines) {
        PyErr_SetString(PyExc_ValueError, "presents: expected one per column");
        return -1;
    }
    Block *xs = c->xs, *ps = c->ps;
    for (; c->taken < lines; c->taken++) {
        if (take(PySequence_Fast_GET_ITEM(c->columns, c->taken), &xs[c->taken], 1, 'd', 0,
                 "column") < 0)
            return -1;
        if (xs[c->taken].rows != xs[0].rows) {
            c->taken++;
            PyErr_SetString(PyExc_ValueError, "columns: expected one length");
            return -1;
        }
    }
    for (; c->present_taken < lines; c->present_taken++) {
        PyObject *p = PySequence_Fast_GET_ITEM(c->presents, c->present_taken);
        if (p == Py_None)
            continue;
        if (take(p, &ps[c->present_taken], 1, '?', 0, "present") < 0)
            return -1;
        c->has[c->present_taken] = 1;
        if (ps[c->present_taken].rows != xs[0].rows) {
            c->present_taken++;
            PyErr_SetString(PyExc_ValueError, "present: expected the column's length");
            return -1;
        }
    }
    return 0;
}

static void close_columns(FoldColumns *c)
{
    for (Py_ssize_t i = 0; i < c->taken; i++)
        PyBuffer_Release(&c->xs[i].view);
    for (Py_ssize_t i = 0; i < c->present_taken; i++)
        if (c->has[i])
            PyBuffer_Release(&c->ps[i].view);
    PyMem_Free(c->xs);
    PyMem_Free(c->ps);
    PyMem_Free(c->has);
    Py_XDECREF(c->columns);
    Py_XDECREF(c->presents);
}

PyDoc_STRVAR(fold_doc,
"fold(op, columns, presents, skipna, identity, start)\n--\n\n"
"The running value after the last row of each 1-D float64 column (a sequence, all of\n"
"one length), from start (a float64 per column, updated in place), building no output:\n"
"op 0 sum, 1 product, 2 logaddexp. presents: a sequence of as many 1-D bool buffers or\n"
"None (all present). A cell not present, or a NaN with skipna, counts as identity, as\n"
"the scans set such cells to it before accumulating: the bits of the last value of\n"
"logaddexp_accumulate or accumulate_rows (numpy's accumulate) over the same cells.");

/* A distributed run's chain link: only the running values move on, so nothing is
   written. Each column's recurrence is a chain of dependent operations; FOLD_LINES
   columns at a time are stepped row by row, so that their chains overlap in the
   processor (three times faster for logaddexp's exp and log1p). */
#define FOLD_LINES 8
static const char ALL_PRESENT = 1;

/* A running NaN stays the same NaN, as x86's addsd and mulsd keep their first operand's
   NaN (numpy's accumulate, and accumulate_rows); C may swap the operands of + and *,
   which would keep the cell's NaN where both are NaNs (of other signs or payloads). */
#define KEEP_NAN(s, step) (isnan(s) ? (s) : (step))

/* Every row of the columns first .. first + width - 1: s[j] = STEP with the cell v (the
   identity where MASKED says it is skipped: not present, or NaN with skipna). One loop
   an op, so that the op is not chosen again at every cell. */
#define FOLD_ROWS(STEP, MASKED)                                                    \
    for (Py_ssize_t row = 0; row < rows; row++) {                                  \
        for (int j = 0; j < width; j++) {                                          \
            double v = *(const double *)x[j];                                      \
            x[j] += x_step[j];                                                     \
            if (MASKED) {                                                          \
                /* the identity's bits where skipped, by a mask: missing cells come \
                   at random, and a branch would be mispredicted at each */         \
                const uint64_t keep = (uint64_t)0 - ((uint64_t)(*p[j] != 0)        \
                                                     & (uint64_t)(!skipna | (v == v))); \
                uint64_t bits, other;                                              \
                memcpy(&bits, &v, 8);                                              \
                memcpy(&other, &identity, 8);                                      \
                bits = (bits & keep) | (other & ~keep);                            \
                memcpy(&v, &bits, 8);                                              \
                p[j] += p_step[j];                                                 \
            }                                                                      \
            s[j] = STEP;                                                           \
        }                                                                          \
    }

/* Eight contiguous columns with nothing skipped, summed (or multiplied) with their
   running values in eight variables, which the compiler keeps in registers. */
#define EIGHT(DO) DO(0) DO(1) DO(2) DO(3) DO(4) DO(5) DO(6) DO(7)
static void fold_eight(int product, const char *const x[FOLD_LINES], double s[FOLD_LINES],
                       Py_ssize_t rows)
{
#define LOAD(j) const double *c##j = (const double *)x[j]; double r##j = s[j];
#define ADD(j) r##j = KEEP_NAN(r##j, r##j + c##j[row]);
#define MUL(j) r##j = KEEP_NAN(r##j, r##j * c##j[row]);
#define STORE(j) s[j] = r##j;
    EIGHT(LOAD)
    if (product) {
        for (Py_ssize_t row = 0; row < rows; row++) {
            EIGHT(MUL)
        }
    } else {
        for (Py_ssize_t row = 0; row < rows; row++) {
            EIGHT(ADD)
        }
    }
    EIGHT(STORE)
#undef LOAD
#undef ADD
#undef MUL
#undef STORE
}

static PyObject *fold(PyObject *self, PyObject *args)
{
    int op, skipna;
    double identity;
    PyObject *columns_obj, *presents_obj, *start_obj;
    if (!PyArg_ParseTuple(args, "iOOpdO", &op, &columns_obj, &presents_obj, &skipna,
                          &identity, &start_obj))
        return NULL;
    if (op < 0 || op > 2) {
        PyErr_SetString(PyExc_ValueError, "op must be 0 (sum), 1 (product) or 2 (logaddexp)");
        return NULL;
    }
    FoldColumns cols;
    Block start;
    int start_taken = 0, failed = 1;
    if (open_columns(&cols, columns_obj, presents_obj) < 0)
        goto done;
    const Py_ssize_t lines = cols.lines;
    const Block *xs = cols.xs, *ps = cols.ps;
    const char *has = cols.has;
    if (take(start_obj, &start, 1, 'd', 1, "start") < 0)
        goto done;
    start_taken = 1;
    if (start.rows != lines) {
        PyErr_SetString(PyExc_ValueError, "start: expected one value per column");
        goto done;
    }
    failed = 0;
    const Py_ssize_t rows = lines ? xs[0].rows : 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t first = 0; first < lines; first += FOLD_LINES) {
        const int width = (int)(lines - first < FOLD_LINES ? lines - first : FOLD_LINES);
        double s[FOLD_LINES];
        const char *x[FOLD_LINES], *p[FOLD_LINES];
        Py_ssize_t x_step[FOLD_LINES], p_step[FOLD_LINES];
        int masked = skipna;
        for (int j = 0; j < width; j++) {
            const Py_ssize_t line = first + j;
            s[j] = ITEM(start, double, line);
            x[j] = xs[line].base;
            x_step[j] = xs[line].row_step;
            /* all present: a single true byte, read at every row */
            p[j] = has[line] ? ps[line].base : (const char *)&ALL_PRESENT;
            p_step[j] = has[line] ? ps[line].row_step : 0;
            masked |= has[line];
        }
        int contiguous = width == FOLD_LINES;
        for (int j = 0; j < width; j++)
            contiguous &= x_step[j] == (Py_ssize_t)sizeof(double);
        if (!masked && contiguous && op != 2) {
            /* Eight whole columns: their sums in registers, the rows read in order. */
            fold_eight(op == 1, x, s, rows);
        } else if (!masked) {
            switch (op) {
            case 0: FOLD_ROWS(KEEP_NAN(s[j], s[j] + v), 0); break;
            case 1: FOLD_ROWS(KEEP_NAN(s[j], s[j] * v), 0); break;
            default: FOLD_ROWS(logaddexp(s[j], v), 0); break;
            }
        } else {
            switch (op) {
            case 0: FOLD_ROWS(KEEP_NAN(s[j], s[j] + v), 1); break;
            case 1: FOLD_ROWS(KEEP_NAN(s[j], s[j] * v), 1); break;
            default: FOLD_ROWS(logaddexp(s[j], v), 1); break;
            }
        }
        for (int j = 0; j < width; j++)
            ITEM(start, double, first + j) = s[j];
    }
    Py_END_ALLOW_THREADS
done:
    close_columns(&cols);
    if (start_taken)
        PyBuffer_Release(&start.view);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

/* The arguments every state recurrence takes: the values, which of them are present
 * (None: all), the carried state value and count per line, and the output block. */
typedef struct {
    Block x, present, value, count, out;
    int has_present;
} Recurrence;

/* Takes the Recurrence's buffers into `held` and checks their shapes and counts. */
static int take_recurrence(Held *held, Recurrence *r, PyObject *x, PyObject *present,
                           PyObject *value, PyObject *count, PyObject *out)
{
    r->has_present = present != Py_None;
    if (hold(held, x, &r->x, 2, 'd', 0, "x") < 0
        || (r->has_present && hold(held, present, &r->present, 2, '?', 0, "present") < 0)
        || hold(held, value, &r->value, 1, 'd', 0, "start value") < 0
        || hold(held, count, &r->count, 1, 'q', 0, "start count") < 0
        || hold(held, out, &r->out, 2, 'd', 1, "out") < 0
        || (r->has_present && check_shape(&r->x, &r->present, "present") < 0)
        || check_shape(&r->x, &r->out, "out") < 0
        || check_lines(&r->x, &r->value, "start value") < 0
        || check_lines(&r->x, &r->count, "start count") < 0)
        return -1;
    for (Py_ssize_t line = 0; line < r->count.rows; line++) {
        if (ITEM(r->count, int64_t, line) < 0) {  /* it indexes the weights (ewma) */
            PyErr_SetString(PyExc_ValueError, "start count: a count below 0");
            return -1;
        }
    }
    return 0;
}

/* One step of each statistic's recurrence (welford_step, ewma_weighted), shared by its
   scan below, by fold_stats and by _csvtext.c's compiled pipeline (statsteps.h), so
   that a distributed run's fold and the pipeline do the scan's operations as it does. */
#include "statsteps.h"

/* y after a present value with c values before it (the weights: see ewma_means). */
static inline double ewma_step(double y, double value, int64_t c, const Block *old,
                               const Block *total, int64_t last_weight, double new_weight)
{
    return ewma_weighted(y, value, c, old->base, old->row_step, total->base,
                         total->row_step, last_weight, new_weight);
}

PyDoc_STRVAR(welford_doc,
"welford(x, present, start_m, start_n, start_m2, out, out_m2)\n--\n\n"
"Welford's running mean and sum of squared deviations of each line of x (2-D float64),\n"
"from the carried m, n and M2: at each present cell n += 1; d = x - m; m += d / n;\n"
"M2 += d * (x - m). out and out_m2 hold m and M2 after each cell (a cell that is not\n"
"present keeps the state before it). present: 2-D bool or None.");

static PyObject *welford(PyObject *self, PyObject *args)
{
    PyObject *x, *present, *start_m, *start_n, *start_m2_obj, *out, *out_m2_obj;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &x, &present, &start_m, &start_n, &start_m2_obj,
                          &out, &out_m2_obj))
        return NULL;
    Recurrence r;
    Block start_m2, out_m2;
    Held held = {0};
    if (take_recurrence(&held, &r, x, present, start_m, start_n, out) < 0
        || hold(&held, start_m2_obj, &start_m2, 1, 'd', 0, "start M2") < 0
        || hold(&held, out_m2_obj, &out_m2, 2, 'd', 1, "out M2") < 0
        || check_lines(&r.x, &start_m2, "start M2") < 0
        || check_shape(&r.x, &out_m2, "out M2") < 0) {
        let_go(&held);
        return NULL;
    }
    double *counts = chunk_counts();
    if (counts == NULL) {
        let_go(&held);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t first = 0; first < r.x.lines; first += CHUNK_LINES) {
        const Py_ssize_t last = r.x.lines - first < CHUNK_LINES ? r.x.lines
                                                                : first + CHUNK_LINES;
        for (Py_ssize_t line = first; line < last; line++)
            counts[line - first] = (double)ITEM(r.count, int64_t, line);
        for (Py_ssize_t row = 0; row < r.x.rows; row++) {
            for (Py_ssize_t line = first; line < last; line++) {
                double m = row ? AT(r.out, double, row - 1, line) : ITEM(r.value, double, line);
                double m2 = row ? AT(out_m2, double, row - 1, line)
                                : ITEM(start_m2, double, line);
                if (!r.has_present || AT(r.present, char, row, line))
                    welford_step(AT(r.x, double, row, line), &counts[line - first], &m, &m2);
                AT(r.out, double, row, line) = m;
                AT(out_m2, double, row, line) = m2;
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(counts);
    let_go(&held);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(ewma_means_doc,
"ewma_means(x, present, start_y, start_n, old_by_count, total_by_count, new, out)\n--\n\n"
"The exponentially weighted mean of each line of x (2-D float64), from the carried\n"
"mean and count. At a present value with c values before it: if c == 0, y = x; else if\n"
"y != x, y = (old[c] * y + new * x) / total[c], with c past the end of the weight\n"
"vectors (1-D float64) taken as their last entry. out holds y after each cell.");

static PyObject *ewma_means(PyObject *self, PyObject *args)
{
    PyObject *x, *present, *start_y, *start_n, *old_obj, *total_obj, *out;
    double new_weight;
    if (!PyArg_ParseTuple(args, "OOOOOOdO", &x, &present, &start_y, &start_n, &old_obj,
                          &total_obj, &new_weight, &out))
        return NULL;
    Recurrence r;
    Block old, total;
    Held held = {0};
    if (take_recurrence(&held, &r, x, present, start_y, start_n, out) < 0
        || hold(&held, old_obj, &old, 1, 'd', 0, "old_by_count") < 0
        || hold(&held, total_obj, &total, 1, 'd', 0, "total_by_count") < 0) {
        let_go(&held);
        return NULL;
    }
    if (old.rows == 0 || total.rows != old.rows) {
        PyErr_SetString(PyExc_ValueError, "weights: expected two vectors of one length");
        let_go(&held);
        return NULL;
    }
    const int64_t last_weight = (int64_t)old.rows - 1;
    int64_t *counts = chunk_counts();
    if (counts == NULL) {
        let_go(&held);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t first = 0; first < r.x.lines; first += CHUNK_LINES) {
        const Py_ssize_t last = r.x.lines - first < CHUNK_LINES ? r.x.lines
                                                                : first + CHUNK_LINES;
        for (Py_ssize_t line = first; line < last; line++)
            counts[line - first] = ITEM(r.count, int64_t, line);
        for (Py_ssize_t row = 0; row < r.x.rows; row++) {
            for (Py_ssize_t line = first; line < last; line++) {
                double y = row ? AT(r.out, double, row - 1, line) : ITEM(r.value, double, line);
                if (!r.has_present || AT(r.present, char, row, line))
                    y = ewma_step(y, AT(r.x, double, row, line), counts[line - first]++,
                                  &old, &total, last_weight, new_weight);
                AT(r.out, double, row, line) = y;
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(counts);
    let_go(&held);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(fold_stats_doc,
"fold_stats(kind, columns, presents, skipna, n, a, b, old_by_count, total_by_count, new)\n"
"--\n\n"
"The state after the last row of each 1-D float64 column (a sequence, all of one\n"
"length), from the carried one, building no output; the state is updated in place: n\n"
"(int64, the count of values), a and b (float64), one of each per column. kind 0, the\n"
"running mean's sum: a = s, s + cell at each row (0.0 for a cell skipped; its first\n"
"row's step is the caller's, as numpy takes it); 1, Welford: a = m, b = M2 (welford's\n"
"steps); 2, ewma:\n"
"a = y (ewma_means's steps, with its weight vectors and new weight); 3, the running\n"
"mean's sum with --compensated: a = s, b = c (neumaier's steps, every row's: a skipped\n"
"cell adds 0.0). presents: 1-D bool\n"
"buffers or None (all present); a NaN with skipna is skipped too. b, the weights and\n"
"new are read by the kinds that use them only.");

/* A distributed run's chain link for the statistics, as `fold` is for sums: FOLD_LINES
   columns stepped row by row, their chains of dependent operations (a division a value)
   overlapping. */
static PyObject *fold_stats(PyObject *self, PyObject *args)
{
    int kind, skipna;
    double new_weight;
    PyObject *columns_obj, *presents_obj, *n_obj, *a_obj, *b_obj, *old_obj, *total_obj;
    if (!PyArg_ParseTuple(args, "iOOpOOOOOd", &kind, &columns_obj, &presents_obj, &skipna,
                          &n_obj, &a_obj, &b_obj, &old_obj, &total_obj, &new_weight))
        return NULL;
    if (kind < 0 || kind > 3) {
        PyErr_SetString(PyExc_ValueError,
                        "kind must be 0 (mean), 1 (Welford), 2 (ewma) or 3 (Neumaier's mean)");
        return NULL;
    }
    FoldColumns cols;
    Block n, a, b, old, total;
    Held held = {0};
    int failed = 1;
    if (open_columns(&cols, columns_obj, presents_obj) < 0)
        goto done;
    const Py_ssize_t lines = cols.lines;
    const Block *xs = cols.xs, *ps = cols.ps;
    const char *has = cols.has;
    if (hold(&held, n_obj, &n, 1, 'q', 1, "n") < 0 || hold(&held, a_obj, &a, 1, 'd', 1, "a") < 0
        || hold(&held, b_obj, &b, 1, 'd', 1, "b") < 0
        || hold(&held, old_obj, &old, 1, 'd', 0, "old_by_count") < 0
        || hold(&held, total_obj, &total, 1, 'd', 0, "total_by_count") < 0)
        goto done;
    if (n.rows != lines || a.rows != lines || b.rows != lines) {
        PyErr_SetString(PyExc_ValueError, "n, a, b: expected one value per column");
        goto done;
    }
    if (kind == 2 && (old.rows == 0 || total.rows != old.rows)) {
        PyErr_SetString(PyExc_ValueError, "weights: expected two vectors of one length");
        goto done;
    }
    for (Py_ssize_t line = 0; line < lines; line++) {
        if (ITEM(n, int64_t, line) < 0) {  /* it indexes the weights (ewma) */
            PyErr_SetString(PyExc_ValueError, "n: a count below 0");
            goto done;
        }
    }
    failed = 0;
    const Py_ssize_t rows = lines ? xs[0].rows : 0;
    const int64_t last_weight = (int64_t)old.rows - 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t first = 0; first < lines && rows > 0; first += FOLD_LINES) {
        const int width = (int)(lines - first < FOLD_LINES ? lines - first : FOLD_LINES);
        double va[FOLD_LINES], vb[FOLD_LINES], count[FOLD_LINES];
        int64_t c[FOLD_LINES];
        const char *x[FOLD_LINES], *p[FOLD_LINES];
        Py_ssize_t x_step[FOLD_LINES], p_step[FOLD_LINES];
        for (int j = 0; j < width; j++) {
            const Py_ssize_t line = first + j;
            c[j] = ITEM(n, int64_t, line);
            count[j] = (double)c[j];  /* welford counts in a double, as its scan does */
            va[j] = ITEM(a, double, line);
            vb[j] = ITEM(b, double, line);
            x[j] = xs[line].base;
            x_step[j] = xs[line].row_step;
            p[j] = has[line] ? ps[line].base : (const char *)&ALL_PRESENT;
            p_step[j] = has[line] ? ps[line].row_step : 0;
        }
/* Every row of the chunk's columns, the cell v and whether it is counted (present, not a
   NaN that skipna skips): one loop a kind, so that the kind is not chosen at every cell. */
#define STAT_ROWS(STEP)                                                            \
        for (Py_ssize_t row = 0; row < rows; row++) {                              \
            for (int j = 0; j < width; j++) {                                      \
                const double v = *(const double *)x[j];                            \
                const int present = *p[j] != 0 && !(skipna && isnan(v));           \
                x[j] += x_step[j];                                                 \
                p[j] += p_step[j];                                                 \
                STEP                                                               \
            }                                                                      \
        }
        int whole = !skipna && width == FOLD_LINES;  /* eight columns, nothing skipped */
        for (int j = 0; j < width; j++)
            whole &= p_step[j] == 0 && x_step[j] == (Py_ssize_t)sizeof(double);
        if (kind == 0 && whole) {
            fold_eight(0, x, va, rows);  /* the sum's fast loop (fold's) */
            for (int j = 0; j < width; j++)
                c[j] += rows;
        } else if (kind == 0) {
            STAT_ROWS(va[j] = KEEP_NAN(va[j], va[j] + (present ? v : 0.0));
                      c[j] += present;)
        } else if (kind == 3) {
            /* neumaier's step (below), a skipped cell adding 0.0 as it does */
            STAT_ROWS(const double term = present ? v : 0.0;
                      const double t = va[j] + term;
                      if (isfinite(t))
                          vb[j] += fabs(va[j]) >= fabs(term) ? (va[j] - t) + term
                                                             : (term - t) + va[j];
                      else
                          vb[j] = 0.0;
                      va[j] = t;
                      c[j] += present;)
        } else if (kind == 1) {
            STAT_ROWS(if (present) { welford_step(v, &count[j], &va[j], &vb[j]); c[j]++; })
        } else {
            STAT_ROWS(if (present) va[j] = ewma_step(va[j], v, c[j]++, &old, &total,
                                                     last_weight, new_weight);)
        }
#undef STAT_ROWS
        for (int j = 0; j < width; j++) {
            ITEM(n, int64_t, first + j) = c[j];
            ITEM(a, double, first + j) = va[j];
            ITEM(b, double, first + j) = vb[j];
        }
    }
    Py_END_ALLOW_THREADS
done:
    close_columns(&cols);
    let_go(&held);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(neumaier_doc,
"neumaier(x, present, start_s, start_c, out_s, out_c)\n--\n\n"
"Neumaier's compensated running sum of each line of x (2-D float64), from the carried s\n"
"and c: at each cell (0.0 where not present) t = s + x; where t is finite, c += (s - t)\n"
"+ x if |s| >= |x|, else (x - t) + s; s = t. out_s and out_c hold s and c after each cell,\n"
"c being 0.0 where s is not finite (it stays so from there on).");

static PyObject *neumaier(PyObject *self, PyObject *args)
{
    PyObject *x_obj, *present_obj, *start_s_obj, *start_c_obj, *out_s_obj, *out_c_obj;
    if (!PyArg_ParseTuple(args, "OOOOOO", &x_obj, &present_obj, &start_s_obj, &start_c_obj,
                          &out_s_obj, &out_c_obj))
        return NULL;
    Block x, present, start_s, start_c, out_s, out_c;
    const int has_present = present_obj != Py_None;
    Held held = {0};
    if (hold(&held, x_obj, &x, 2, 'd', 0, "x") < 0
        || (has_present && hold(&held, present_obj, &present, 2, '?', 0, "present") < 0)
        || hold(&held, start_s_obj, &start_s, 1, 'd', 0, "start s") < 0
        || hold(&held, start_c_obj, &start_c, 1, 'd', 0, "start c") < 0
        || hold(&held, out_s_obj, &out_s, 2, 'd', 1, "out s") < 0
        || hold(&held, out_c_obj, &out_c, 2, 'd', 1, "out c") < 0
        || (has_present && check_shape(&x, &present, "present") < 0)
        || check_lines(&x, &start_s, "start s") < 0 || check_lines(&x, &start_c, "start c") < 0
        || check_shape(&x, &out_s, "out s") < 0 || check_shape(&x, &out_c, "out c") < 0) {
        let_go(&held);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t row = 0; row < x.rows; row++) {
        for (Py_ssize_t line = 0; line < x.lines; line++) {
            const double sum = row ? AT(out_s, double, row - 1, line)
                                   : ITEM(start_s, double, line);
            double c = row ? AT(out_c, double, row - 1, line) : ITEM(start_c, double, line);
            const double term = !has_present || AT(present, char, row, line)
                                ? AT(x, double, row, line) : 0.0;
            const double t = sum + term;
            if (isfinite(t))
                c += fabs(sum) >= fabs(term) ? (sum - t) + term : (term - t) + sum;
            else
                c = 0.0;  /* and t stays not finite: so does every later sum */
            AT(out_s, double, row, line) = t;
            AT(out_c, double, row, line) = c;
        }
    }
    Py_END_ALLOW_THREADS
    let_go(&held);
    Py_RETURN_NONE;
}

/* *result = a + b (a * b) wrapped to 64 bits, two's complement; true if it overflowed. */
static inline int add_overflows(int64_t a, int64_t b, int64_t *result)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_add_overflow(a, b, result);
#else
    *result = (int64_t)((uint64_t)a + (uint64_t)b);
    return (b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b);
#endif
}

static inline int mul_overflows(int64_t a, int64_t b, int64_t *result)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_mul_overflow(a, b, result);
#else
    *result = (int64_t)((uint64_t)a * (uint64_t)b);
    if (a == 0 || b == 0)
        return 0;
    if ((a == -1 && b == INT64_MIN) || (b == -1 && a == INT64_MIN))
        return 1;
    return *result / b != a;
#endif
}

PyDoc_STRVAR(scan_column_doc,
"scan_column(x, start, out, step, integer)\n--\n\n"
"A column's running value from start[0] into out (of x's length; it may be x itself),\n"
"kept in a register: numpy's accumulate reads it back from memory at every row. x and\n"
"out are int64 with `integer`, else float64. step 0: cummax, 1: cummin, with torch's\n"
"ties (the later element: -0.0 after 0.0; a NaN wins and stays, each later NaN taking\n"
"over with its own bits); 2: cumsum of int64,\n"
"wrapped to 64 bits as numpy's add wraps; 3: the same, checked. Returns -1, or with\n"
"step 3 the first row whose sum leaves int64 (out is unfinished from there).");

enum { COLUMN_MAX, COLUMN_MIN, COLUMN_SUM, COLUMN_SUM_CHECKED };

static PyObject *scan_column(PyObject *self, PyObject *args)
{
    PyObject *x_obj, *start_obj, *out_obj;
    int step, integer;
    if (!PyArg_ParseTuple(args, "OOOip", &x_obj, &start_obj, &out_obj, &step, &integer))
        return NULL;
    if (step < COLUMN_MAX || step > COLUMN_SUM_CHECKED || (step >= COLUMN_SUM && !integer)) {
        PyErr_SetString(PyExc_ValueError, "step must be 0 to 3 (2 and 3: int64 only)");
        return NULL;
    }
    Block x, start, out;
    Held held = {0};
    if (hold_scan(&held, x_obj, start_obj, out_obj, 1, integer ? 'q' : 'd', &x, &start,
                  &out) < 0)
        return NULL;
    Py_ssize_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    if (!integer) {
        double s = ITEM(start, double, 0);
        for (Py_ssize_t row = 0; row < x.rows; row++) {
            const double v = ITEM(x, double, row);
            if (isnan(v) || (!isnan(s) && (step == COLUMN_MIN ? v <= s : v >= s)))
                s = v;
            ITEM(out, double, row) = s;
        }
    } else if (step == COLUMN_SUM_CHECKED) {
        int64_t s = ITEM(start, int64_t, 0);
        for (Py_ssize_t row = 0; row < x.rows; row++) {
            if (add_overflows(s, ITEM(x, int64_t, row), &s)) {
                bad = row;
                break;
            }
            ITEM(out, int64_t, row) = s;
        }
    } else if (step == COLUMN_SUM) {
        uint64_t u = (uint64_t)ITEM(start, int64_t, 0);
        for (Py_ssize_t row = 0; row < x.rows; row++) {
            u += (uint64_t)ITEM(x, int64_t, row);
            ITEM(out, int64_t, row) = (int64_t)u;
        }
    } else {
        int64_t s = ITEM(start, int64_t, 0);
        for (Py_ssize_t row = 0; row < x.rows; row++) {
            const int64_t v = ITEM(x, int64_t, row);
            if (step == COLUMN_MIN ? v < s : v > s)
                s = v;
            ITEM(out, int64_t, row) = s;
        }
    }
    Py_END_ALLOW_THREADS
    let_go(&held);
    return PyLong_FromSsize_t(bad);
}

PyDoc_STRVAR(grouped_accumulate_doc,
"grouped_accumulate(op, wrap, values, present, groups, resets, state, out, exclusive=False,\n"
"                   skipna=False)\n--\n\n"
"A grouped running sum (op 0) or product (op 1) of a batch, in row order: at each row i,\n"
"g = groups[i]; if resets[i], state[g] = the identity; then state[g] = state[g] + values[i]\n"
"(or *), a cell that is not present taken as the identity, and out[i] = state[g] (with\n"
"exclusive, the state before the row). With skipna a NaN value is skipped: state[g] is\n"
"left as it is and out[i] = the NaN. As numpy's add (multiply) applied to the carry, then\n"
"accumulated over each group's rows. values, state and out: 1-D, all float64 or all\n"
"int64; groups: 1-D int64 in range(len(state)); present, resets: 1-D bool or None. int64\n"
"wraps around if wrap, else the scan stops at the first result that does not fit.\n"
"Returns that row, or -1; state is then left part-way, for the caller to restore.");

static PyObject *grouped_accumulate(PyObject *self, PyObject *args)
{
    int op, wrap, exclusive = 0, skipna = 0;
    PyObject *values_obj, *present_obj, *groups_obj, *resets_obj, *state_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "ipOOOOOO|pp", &op, &wrap, &values_obj, &present_obj,
                          &groups_obj, &resets_obj, &state_obj, &out_obj, &exclusive,
                          &skipna))
        return NULL;
    if (op != 0 && op != 1) {
        PyErr_SetString(PyExc_ValueError, "op: 0 (sum) or 1 (product)");
        return NULL;
    }
    Block values, present, groups, resets, state, out;
    const int has_present = present_obj != Py_None, has_resets = resets_obj != Py_None;
    Held held = {0};
    PyObject *result = NULL;
    Py_ssize_t overflow = -1;
    int bad_group = 0;
    /* float64 or int64, as the values are: the state and out must be the same */
    char kind = 'd';
    if (hold(&held, values_obj, &values, 1, 'd', 0, "values") < 0) {
        PyErr_Clear();
        kind = 'q';
        if (hold(&held, values_obj, &values, 1, 'q', 0, "values (float64 or int64)") < 0)
            goto done;
    }
    if ((has_present && hold(&held, present_obj, &present, 1, '?', 0, "present") < 0)
        || hold(&held, groups_obj, &groups, 1, 'q', 0, "groups") < 0
        || (has_resets && hold(&held, resets_obj, &resets, 1, '?', 0, "resets") < 0)
        || hold(&held, state_obj, &state, 1, kind, 1, "state (the kind of values)") < 0
        || hold(&held, out_obj, &out, 1, kind, 1, "out (the kind of values)") < 0)
        goto done;
    const Py_ssize_t n = values.rows;
    if ((has_present && present.rows != n) || groups.rows != n
        || (has_resets && resets.rows != n) || out.rows != n) {
        PyErr_SetString(PyExc_ValueError, "present, groups, resets and out: expected one "
                        "entry per value");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {  /* first, so that this error leaves state as is */
        const int64_t g = ITEM(groups, int64_t, i);
        if (g < 0 || g >= state.rows) {
            PyErr_SetString(PyExc_ValueError, "groups: a group id out of range of state");
            goto done;
        }
    }
#define PRESENT(i) (!has_present || ITEM(present, char, i))
#define RESET(i) (has_resets && ITEM(resets, char, i))
    Py_BEGIN_ALLOW_THREADS
    if (kind == 'd') {
        const double identity = op == 0 ? 0.0 : 1.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            const int64_t g = ITEM(groups, int64_t, i);
            if ((uint64_t)g >= (uint64_t)state.rows) {  /* changed since the check above */
                bad_group = 1;
                break;
            }
            double *running = &ITEM(state, double, g);
            if (RESET(i))
                *running = identity;
            const double x = PRESENT(i) ? ITEM(values, double, i) : identity;
            if (skipna && isnan(x)) {  /* skipped, and kept in place */
                ITEM(out, double, i) = x;
                continue;
            }
            const double before = *running;
            *running = op == 0 ? before + x : before * x;
            ITEM(out, double, i) = exclusive ? before : *running;
        }
    } else {
        const int64_t identity = op == 0 ? 0 : 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            const int64_t g = ITEM(groups, int64_t, i);
            if ((uint64_t)g >= (uint64_t)state.rows) {  /* changed since the check above */
                bad_group = 1;
                break;
            }
            int64_t *running = &ITEM(state, int64_t, g);
            if (RESET(i))
                *running = identity;
            const int64_t x = PRESENT(i) ? ITEM(values, int64_t, i) : identity;
            int64_t next;
            const int over = op == 0 ? add_overflows(*running, x, &next)
                                     : mul_overflows(*running, x, &next);
            if (over && !wrap) {
                overflow = i;
                break;
            }
            ITEM(out, int64_t, i) = exclusive ? *running : next;
            *running = next;  /* on overflow: the low 64 bits, two's complement */
        }
    }
    Py_END_ALLOW_THREADS
#undef PRESENT
#undef RESET
    if (bad_group)  /* groups shares memory with state or out */
        PyErr_SetString(PyExc_ValueError, "groups: a group id out of range of state");
    else
        result = PyLong_FromSsize_t(overflow);
done:
    let_go(&held);
    return result;
}

/* Dense ids for group keys (--by), in order of first appearance, kept across batches.
 *
 * A KeyTable numbers the distinct byte strings it is shown. A row's key is a fixed number
 * of bytes (width > 0: a row of an integer, date or canonical float column, or several
 * columns' ids side by side) or a variable number (width 0: a text or binary cell, cut by
 * int64 offsets). A row that is not valid (a missing key) has one more key of its own.
 * Keys are compared byte for byte: the caller makes equal values equal bytes (one NaN,
 * 0.0 for -0.0).
 *
 * The table keeps each key's bytes in an arena, and an index of 16-byte slots (open
 * addressing, linear probing, at most half full). A slot holds the key's first 8 bytes,
 * 28 bits of its hash with its length (up to 15) below them, and its id + 1 (0: empty):
 * a key of 8 bytes or fewer is matched in its slot alone, one cache line, and the index
 * grows without reading the keys again (the tag holds the bits that place a slot). The rows'
 * hashes are taken a few rows ahead and their slots prefetched, so that the cache misses
 * of a table larger than the cache (100,000 groups and more) overlap.
 */
typedef struct {
    uint64_t word;   /* the key's first 8 bytes, zero-padded */
    uint32_t tag;    /* hash bits 36..63, then min(length, 15) in the low 4 bits */
    uint32_t id1;    /* id + 1; 0: an empty slot */
} Slot;

typedef struct {
    PyObject_HEAD
    Py_ssize_t width;          /* bytes a key, or 0: variable */
    Py_ssize_t count;          /* keys numbered so far, the missing key included */
    int64_t null_id;           /* the missing key's id, or -1 before one is seen */
    Slot *slots;
    size_t mask;               /* the number of slots less one (a power of two less one) */
    int64_t *starts;           /* key id's bytes: arena[starts[id]:starts[id + 1]] */
    Py_ssize_t starts_capacity;
    unsigned char *arena;
    size_t arena_used, arena_capacity;
    int busy;                  /* encode() runs without the GIL: one call at a time */
    int broken;                /* a call failed half-way: the table cannot be trusted */
} KeyTable;

#define KEY_MAX_COUNT ((Py_ssize_t)0xFFFFFFFE)  /* every id + 1 fits in 32 bits */
#define KEY_AHEAD 8  /* rows hashed, and their slots prefetched, ahead of the current one */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)0)
#endif

static inline uint64_t mix64(uint64_t x)  /* murmur3's finaliser */
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The first min(length, 8) bytes of p, zero-padded; memory up to `end` may be read. */
static inline uint64_t first_word(const unsigned char *p, size_t length,
                                  const unsigned char *end)
{
    uint64_t word = 0;
    if (length >= 8) {
        memcpy(&word, p, 8);
    } else if (length > 0) {
#if PY_LITTLE_ENDIAN
        if ((size_t)(end - p) >= 8) {  /* one load, the bytes past the key masked off */
            memcpy(&word, p, 8);
            return word & (((uint64_t)1 << (8 * length)) - 1);
        }
#endif
        memcpy(&word, p, length);
    }
    return word;
}

static inline uint64_t hash_bytes(const unsigned char *p, size_t length,
                                  const unsigned char *end)
{
    uint64_t h = mix64(first_word(p, length, end)
                       ^ ((uint64_t)length * 0x9e3779b97f4a7c15ULL));
    for (size_t at = 8; at < length; at += 8) {
        const size_t rest = length - at;
        h = mix64(h ^ first_word(p + at, rest < 8 ? rest : 8, end));
    }
    return h;
}

static inline uint32_t slot_tag(uint64_t h, size_t length)
{
    return ((uint32_t)(h >> 32) & ~(uint32_t)15) | (uint32_t)(length < 15 ? length : 15);
}

static int key_table_init(KeyTable *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"width", NULL};
    Py_ssize_t width;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n:KeyTable", names, &width))
        return -1;
    if (width < 0) {
        PyErr_SetString(PyExc_ValueError, "width: 0 (variable) or a number of bytes");
        return -1;
    }
    if (self->slots != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "KeyTable: already initialised");
        return -1;
    }
    self->width = width;
    self->count = 0;
    self->null_id = -1;
    self->mask = 255;
    self->starts_capacity = 256;
    self->arena_capacity = 4096;
    self->arena_used = 0;
    self->slots = PyMem_RawCalloc(self->mask + 1, sizeof(Slot));
    self->starts = PyMem_RawMalloc((size_t)self->starts_capacity * sizeof(int64_t));
    self->arena = PyMem_RawMalloc(self->arena_capacity);
    if (self->slots == NULL || self->starts == NULL || self->arena == NULL) {
        PyMem_RawFree(self->slots);
        PyMem_RawFree(self->starts);
        PyMem_RawFree(self->arena);
        self->slots = NULL;
        self->starts = NULL;
        self->arena = NULL;
        PyErr_NoMemory();
        return -1;
    }
    self->starts[0] = 0;
    return 0;
}

static void key_table_dealloc(KeyTable *self)
{
    PyMem_RawFree(self->slots);
    PyMem_RawFree(self->starts);
    PyMem_RawFree(self->arena);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A key's first slot to probe: the hash bits that its tag holds (bits 36..63), then bits
   0..35 for an index of more than 2**28 slots. */
static inline size_t slot_home(uint64_t h, size_t mask)
{
    return (size_t)((h >> 36) | (h << 28)) & mask;
}

/* Twice the slots, every key placed again: from its tag while the index has at most 2**28
   slots (no key is read), else from its bytes' hash. 0, or -1: no memory (the table is as
   it was). Needs no GIL. */
static int key_table_grow(KeyTable *t)
{
    const size_t mask = t->mask * 2 + 1;
    Slot *slots = PyMem_RawCalloc(mask + 1, sizeof(Slot));
    if (slots == NULL)
        return -1;
    for (size_t old = 0; old <= t->mask; old++) {
        const Slot slot = t->slots[old];
        if (slot.id1 == 0)
            continue;
        size_t at;
        if (mask < ((size_t)1 << 28)) {
            at = (size_t)(slot.tag >> 4) & mask;
        } else {
            const int64_t id = (int64_t)slot.id1 - 1;
            at = slot_home(hash_bytes(t->arena + t->starts[id],
                                      (size_t)(t->starts[id + 1] - t->starts[id]),
                                      t->arena + t->arena_capacity), mask);
        }
        while (slots[at].id1 != 0)
            at = (at + 1) & mask;
        slots[at] = slot;
    }
    PyMem_RawFree(t->slots);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

/* Room for `keys` more keys and `bytes` more bytes of them. 0, or -1: no memory. */
static int key_table_reserve(KeyTable *t, Py_ssize_t keys, size_t bytes)
{
    if (t->count + keys + 1 > t->starts_capacity) {
        Py_ssize_t capacity = t->starts_capacity;
        while (t->count + keys + 1 > capacity)
            capacity *= 2;
        int64_t *starts = PyMem_RawRealloc(t->starts, (size_t)capacity * sizeof(int64_t));
        if (starts == NULL)
            return -1;
        t->starts = starts;
        t->starts_capacity = capacity;
    }
    if (bytes > t->arena_capacity - t->arena_used) {
        size_t capacity = t->arena_capacity;
        while (bytes > capacity - t->arena_used) {
            if (capacity > ((size_t)-1) / 4)
                return -1;
            capacity *= 2;
        }
        unsigned char *arena = PyMem_RawRealloc(t->arena, capacity);
        if (arena == NULL)
            return -1;
        t->arena = arena;
        t->arena_capacity = capacity;
    }
    return 0;
}

/* The id of the key p[:length] of hash h, numbered next if new (its bytes copied to the
   arena, for which room was reserved). -1: no memory to grow the index. No GIL needed. */
static inline int64_t key_table_find(KeyTable *t, const unsigned char *p, size_t length,
                                     uint64_t h, const unsigned char *end)
{
    const uint64_t word = first_word(p, length, end);
    const uint32_t tag = slot_tag(h, length);
    size_t at = slot_home(h, t->mask);
    for (;;) {
        const Slot *slot = &t->slots[at];
        if (slot->id1 == 0)
            break;
        if (slot->tag == tag && slot->word == word) {
            const int64_t id = (int64_t)slot->id1 - 1;
            if (length <= 8)  /* the tag holds the length: the whole key matched */
                return id;
            const int64_t start = t->starts[id];
            if ((size_t)(t->starts[id + 1] - start) == length
                && memcmp(t->arena + start + 8, p + 8, length - 8) == 0)
                return id;
        }
        at = (at + 1) & t->mask;
    }
    const int64_t id = t->count;
    if (length)
        memcpy(t->arena + t->arena_used, p, length);
    t->arena_used += length;
    t->starts[id + 1] = (int64_t)t->arena_used;
    t->slots[at].word = word;
    t->slots[at].tag = tag;
    t->slots[at].id1 = (uint32_t)(id + 1);
    t->count++;
    if ((size_t)t->count * 2 > t->mask + 1 && key_table_grow(t) < 0)
        return -1;
    return id;
}

/* A row as the loop below sees it: its key's bytes and their hash, or missing. */
typedef struct {
    const unsigned char *p;
    size_t length;
    uint64_t h;
    int missing;  /* 1: the missing key; -1: offsets out of the data (changed meanwhile) */
} KeyRow;

PyDoc_STRVAR(key_table_encode_doc,
"encode(data, offsets, valid, empty_is_missing, out, firsts, ends=None) -> int\n--\n\n"
"Each row's key id into out (1-D int64), new keys numbered on from count in order of\n"
"first appearance. Row i's key is data[i * width:(i + 1) * width] (a table of fixed\n"
"width; offsets None) or data[offsets[i]:offsets[i + 1]] (width 0; offsets 1-D int64 of\n"
"one more entry than rows). A row where valid (1-D bool, or None: all) is false, or an\n"
"empty one where empty_is_missing, has the missing key. The row where each new key\n"
"first appears goes to firsts (1-D int64, at least one entry per row), in id order.\n"
"Returns the number of new keys. An error found before the scan leaves the table as it\n"
"was; one during it (no memory) leaves it unusable.\n\n"
"With ends (1-D int64, one entry per row; width 0 only), row i's key is\n"
"data[offsets[i]:ends[i]] and offsets has one entry per row: cells cut from a text\n"
"(formats/csv/fast's bounds), which need not follow one another.");

static PyObject *key_table_encode(KeyTable *self, PyObject *args)
{
    PyObject *data_obj, *offsets_obj, *valid_obj, *out_obj, *firsts_obj, *ends_obj = Py_None;
    int empty_is_missing;
    if (!PyArg_ParseTuple(args, "OOOpOO|O:encode", &data_obj, &offsets_obj, &valid_obj,
                          &empty_is_missing, &out_obj, &firsts_obj, &ends_obj))
        return NULL;
    if (self->slots == NULL || self->broken) {
        PyErr_SetString(PyExc_RuntimeError, self->broken
                        ? "KeyTable: unusable after a failed encode()"
                        : "KeyTable: not initialised");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "KeyTable: encode() is running already");
        return NULL;
    }
    Py_buffer data;
    if (PyObject_GetBuffer(data_obj, &data, PyBUF_SIMPLE) < 0)
        return NULL;
    Block offsets, valid, out, firsts, ends;
    const int has_offsets = offsets_obj != Py_None, has_valid = valid_obj != Py_None;
    const int has_ends = ends_obj != Py_None;
    Held held = {0};
    PyObject *result = NULL;
    if ((has_offsets && hold(&held, offsets_obj, &offsets, 1, 'q', 0, "offsets") < 0)
        || (has_valid && hold(&held, valid_obj, &valid, 1, '?', 0, "valid") < 0)
        || hold(&held, out_obj, &out, 1, 'q', 1, "out") < 0
        || hold(&held, firsts_obj, &firsts, 1, 'q', 1, "firsts") < 0
        || (has_ends && hold(&held, ends_obj, &ends, 1, 'q', 0, "ends") < 0))
        goto done;
    const Py_ssize_t n = out.rows;
    const size_t size = (size_t)data.len;
    if ((self->width > 0) == has_offsets) {
        PyErr_SetString(PyExc_ValueError, "offsets: None for a table of fixed width, and "
                        "only then");
        goto done;
    }
    if (has_ends && !has_offsets) {
        PyErr_SetString(PyExc_ValueError, "ends: only with offsets (a table of width 0)");
        goto done;
    }
    if ((has_offsets && offsets.rows != n + (has_ends ? 0 : 1))
        || (has_ends && ends.rows != n) || (has_valid && valid.rows != n)
        || firsts.rows < n) {
        PyErr_SetString(PyExc_ValueError, "offsets, valid and firsts: expected one entry "
                        "per row (offsets: one more)");
        goto done;
    }
    size_t bytes = 0;  /* the most the rows can add to the arena */
    if (has_ends) {
        for (Py_ssize_t i = 0; i < n; i++) {
            const int64_t start = ITEM(offsets, int64_t, i), end = ITEM(ends, int64_t, i);
            if (start < 0 || end < start || (uint64_t)end > size) {
                PyErr_SetString(PyExc_ValueError, "offsets, ends: a cell out of the data");
                goto done;
            }
            bytes += (size_t)(end - start);
        }
    } else if (has_offsets) {
        int64_t before = ITEM(offsets, int64_t, 0);
        if (before < 0 || (uint64_t)before > size) {
            PyErr_SetString(PyExc_ValueError, "offsets: out of the data");
            goto done;
        }
        for (Py_ssize_t i = 1; i <= n; i++) {
            const int64_t at = ITEM(offsets, int64_t, i);
            if (at < before || (uint64_t)at > size) {
                PyErr_SetString(PyExc_ValueError, "offsets: decreasing, or out of the data");
                goto done;
            }
            before = at;
        }
        bytes = (size_t)(before - ITEM(offsets, int64_t, 0));
    } else {
        if ((size_t)n > size / (size_t)self->width) {
            PyErr_SetString(PyExc_ValueError, "data: fewer bytes than rows * width");
            goto done;
        }
        bytes = (size_t)n * (size_t)self->width;
    }
    if (n > KEY_MAX_COUNT - self->count) {
        PyErr_SetString(PyExc_OverflowError, "KeyTable: more than 2**32 - 2 keys");
        goto done;
    }
    if (key_table_reserve(self, n, bytes) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    const Py_ssize_t count_before = self->count;
    const unsigned char *base = (const unsigned char *)data.buf;
    const unsigned char *limit = base + size;
    const size_t width = (size_t)self->width;
    const size_t arena_end = self->arena_used + bytes;
    int64_t next = count_before;  /* the id a new key gets */
    int failed = 0;  /* 1: no memory; 2: the offsets changed since they were checked */
    KeyRow ahead[KEY_AHEAD];
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
/* Row j's key and hash into ahead[j % KEY_AHEAD], and a prefetch of its slot. */
#define STAGE(j) do { \
        KeyRow *row = &ahead[(j) % KEY_AHEAD]; \
        row->missing = has_valid && !ITEM(valid, char, (j)); \
        if (has_offsets) { \
            const int64_t start = ITEM(offsets, int64_t, (j)); \
            const int64_t end = has_ends ? ITEM(ends, int64_t, (j)) \
                                         : ITEM(offsets, int64_t, (j) + 1); \
            /* checked again: another thread may have written them meanwhile */ \
            if (start < 0 || end < start || (uint64_t)end > size) { \
                row->missing = -1; \
            } else { \
                row->p = base + start; \
                row->length = (size_t)(end - start); \
            } \
        } else { \
            row->p = base + (size_t)(j) * width; \
            row->length = width; \
        } \
        if (row->missing == 0 && empty_is_missing && row->length == 0) \
            row->missing = 1; \
        if (row->missing == 0) { \
            row->h = hash_bytes(row->p, row->length, limit); \
            PREFETCH(&self->slots[slot_home(row->h, self->mask)]); \
        } \
    } while (0)
    for (Py_ssize_t j = 0; j < n && j < KEY_AHEAD; j++)
        STAGE(j);
    for (Py_ssize_t i = 0; i < n; i++) {
        const KeyRow row = ahead[i % KEY_AHEAD];
        if (i + KEY_AHEAD < n)
            STAGE(i + KEY_AHEAD);
        int64_t id;
        if (row.missing < 0 || (row.missing == 0
                                && row.length > arena_end - self->arena_used)) {
            failed = 2;
            break;
        }
        if (row.missing) {
            if (self->null_id < 0) {
                self->null_id = self->count;
                self->starts[self->count + 1] = (int64_t)self->arena_used;
                self->count++;
            }
            id = self->null_id;
        } else {
            id = key_table_find(self, row.p, row.length, row.h, limit);
            if (id < 0) {
                failed = 1;
                break;
            }
        }
        if (id == next) {  /* ids are numbered in turn: a new key's is the next one */
            ITEM(firsts, int64_t, next - count_before) = i;
            next++;
        }
        ITEM(out, int64_t, i) = id;
    }
#undef STAGE
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (failed) {
        self->broken = 1;
        if (failed == 1)
            PyErr_NoMemory();
        else
            PyErr_SetString(PyExc_ValueError, "offsets: changed while read");
        goto done;
    }
    result = PyLong_FromSsize_t(self->count - count_before);
done:
    let_go(&held);
    PyBuffer_Release(&data);
    return result;
}

static PyObject *key_table_count(KeyTable *self, void *closure)
{
    return PyLong_FromSsize_t(self->count);
}

static PyObject *key_table_width(KeyTable *self, void *closure)
{
    return PyLong_FromSsize_t(self->width);
}

static PyMethodDef key_table_methods[] = {
    {"encode", (PyCFunction)key_table_encode, METH_VARARGS, key_table_encode_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef key_table_getset[] = {
    {"count", (getter)key_table_count, NULL, "keys numbered so far", NULL},
    {"width", (getter)key_table_width, NULL, "bytes a key, or 0: variable", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(key_table_doc,
"KeyTable(width)\n--\n\n"
"Dense ids (0, 1, ...) for byte-string keys, in order of first appearance, kept across\n"
"calls of encode(): keys of `width` bytes, or of any length where width is 0.");

static PyTypeObject KeyTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cumtool._sequential.KeyTable",
    .tp_basicsize = sizeof(KeyTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = key_table_doc,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)key_table_init,
    .tp_dealloc = (destructor)key_table_dealloc,
    .tp_methods = key_table_methods,
    .tp_getset = key_table_getset,
};

static PyMethodDef methods[] = {
    {"logaddexp_accumulate", logaddexp_accumulate, METH_VARARGS, logaddexp_accumulate_doc},
    {"accumulate_rows", accumulate_rows, METH_VARARGS, accumulate_rows_doc},
    {"scan_column", scan_column, METH_VARARGS, scan_column_doc},
    {"fold", fold, METH_VARARGS, fold_doc},
    {"welford", welford, METH_VARARGS, welford_doc},
    {"ewma_means", ewma_means, METH_VARARGS, ewma_means_doc},
    {"neumaier", neumaier, METH_VARARGS, neumaier_doc},
    {"fold_stats", fold_stats, METH_VARARGS, fold_stats_doc},
    {"grouped_accumulate", grouped_accumulate, METH_VARARGS, grouped_accumulate_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cumtool._sequential",
    .m_doc = "Sequential float64 recurrences in C (see the comment at the top of "
             "_sequential.c).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__sequential(void)
{
    if (PyType_Ready(&KeyTableType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&KeyTableType);
    if (PyModule_AddObject(m, "KeyTable", (PyObject *)&KeyTableType) < 0) {
        Py_DECREF(&KeyTableType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
