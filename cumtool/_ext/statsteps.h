/* The running statistics' recurrences, one step each, once: _sequential.c's scans and
   folds and _csvtext.c's compiled pipeline include them (each a static copy: the
   extensions share no symbols), so that the pipeline's serial step does the kernels'
   float operations as they do them and the bits cannot drift. Compiled with
   -ffp-contract=off (setup.py). */
#ifndef CUMTOOL_STATSTEPS_H
#define CUMTOOL_STATSTEPS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* A running NaN stays the same NaN, as x86's addsd and mulsd keep their first operand's
   NaN (numpy's accumulate, and accumulate_rows); C may swap the operands of + and *,
   which would keep the cell's NaN where both are NaNs (of other signs or payloads). */
#ifndef KEEP_NAN
#define KEEP_NAN(s, step) (isnan(s) ? (s) : (step))
#endif

/* Welford (cumvar, cumstd): n += 1; d = x - m; m += d / n; M2 += d * (x - m). */
static inline void welford_step(double value, double *n, double *m, double *m2)
{
    const double d = value - *m;
    *n += 1.0;
    /* The running value's NaN first, as the Python loop and numpy's accumulate keep it:
       the compiler may swap the operands of +, and did so differently in the two loops. */
    *m = KEEP_NAN(*m, *m + d / *n);
    *m2 = KEEP_NAN(*m2, *m2 + d * (value - *m));
}

/* ewma's y after a present value with c values before it: the decayed old weight and
   the total at index min(c, last_weight) of their vectors (float64, `old_step` and
   `total_step` bytes apart; see _sequential.c's ewma_means), the new value's weight. */
static inline double ewma_weighted(double y, double value, int64_t c, const char *old,
                                   ptrdiff_t old_step, const char *total,
                                   ptrdiff_t total_step, int64_t last_weight,
                                   double new_weight)
{
    if (c == 0)
        return value;
    if (y != value) {
        const int64_t k = c < last_weight ? c : last_weight;
        const double kept = *(const double *)(old + k * old_step) * y;
        /* the kept mean's NaN first, as the Python loop's (w * y + new * x) keeps it */
        return KEEP_NAN(kept, kept + new_weight * value)
            / *(const double *)(total + k * total_step);
    }
    return y;
}

#endif
