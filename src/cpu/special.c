/* erfinv and digamma in double precision, from standard series (no copied code). */
#include "cpu/special.h"

#include <math.h>

double wgt_cpu_erfinv(double y)
{
    if (isnan(y) || y < -1 || y > 1) return NAN;
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    /* Start from the closed-form approximation of Winitzki (a = 0.147), then polish with Newton's
     * method on erf(x) - y, whose derivative is 2/sqrt(pi) exp(-x^2): a few steps reach double
     * precision from a start good to ~2e-3. */
    const double a = 0.147, pi = 3.14159265358979323846;
    double l = log1p(-y * y);
    double t = 2 / (pi * a) + l / 2;
    double x = copysign(sqrt(sqrt(t * t - l / a) - t), y);
    for (int i = 0; i < 4; i++) {
        double err = erf(x) - y;
        double d = 2 / sqrt(pi) * exp(-x * x);
        if (d == 0) break;
        x -= err / d;
    }
    return x;
}

double wgt_cpu_digamma(double x)
{
    const double pi = 3.14159265358979323846;
    if (isnan(x) || x == -INFINITY) return NAN;
    if (x == 0) return copysign(INFINITY, -x); /* PyTorch: digamma(+-0) = -+inf */
    if (x < 0) {
        if (x == floor(x)) return NAN;
        /* Reflection: psi(1 - x) - psi(x) = pi / tan(pi x). */
        return wgt_cpu_digamma(1 - x) - pi / tan(pi * x);
    }
    double r = 0;
    while (x < 10) r -= 1 / x, x += 1; /* psi(x) = psi(x + 1) - 1/x */
    /* Asymptotic series: ln x - 1/(2x) - sum B_2k / (2k x^2k). */
    double x2 = 1 / (x * x);
    double s = x2 * (1.0 / 12 - x2 * (1.0 / 120 - x2 * (1.0 / 252 - x2 * (1.0 / 240 - x2 * (1.0 / 132)))));
    return r + log(x) - 0.5 / x - s;
}
