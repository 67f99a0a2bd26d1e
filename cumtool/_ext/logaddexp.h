/* logcumsumexp's step, once: _sequential.c's scans and folds and _csvtext.c's compiled
   pipeline include it (each a static copy: the extensions share no symbols), so the two
   give the same bits. Compiled with -ffp-contract=off (setup.py); exp and log1p are the C
   library's, as numpy's logaddexp uses. */
#ifndef CUMTOOL_LOGADDEXP_H
#define CUMTOOL_LOGADDEXP_H

#include <math.h>

#define LOGE2 0.693147180559945309417232121458176568

/* numpy's npy_logaddexp for float64, operation for operation; with one shortcut that
   gives the same bits. When the larger value x (|x| >= 1) exceeds the other by more than
   40, x + log1p(exp(-tmp)) adds at most exp(-40) < 4.3e-18 to x, less than half of x's
   last place (>= 2**-53): the sum rounds back to x, so x is returned without calling
   exp and log1p. A running log-sum-exp well above its next value, the common case, costs
   a comparison. */
#define NEGLIGIBLE_GAP 40.0

static inline double logaddexp(double x, double y)
{
    if (x == y)
        return x + LOGE2;  /* infinities of the same sign */
    const double tmp = x - y;
    if (tmp > NEGLIGIBLE_GAP && fabs(x) >= 1.0)
        return x;
    if (tmp < -NEGLIGIBLE_GAP && fabs(y) >= 1.0)
        return y;
    if (tmp > 0)
        return x + log1p(exp(-tmp));
    else if (tmp <= 0)
        return y + log1p(exp(tmp));
    return tmp;  /* NaN */
}

#endif
