/* Special functions the C library lacks: erfinv, digamma (special.c). */
#ifndef WGT_CPU_SPECIAL_H
#define WGT_CPU_SPECIAL_H

/* Inverse of erf on (-1, 1); +-inf at +-1, NaN outside. */
double wgt_cpu_erfinv(double y);
/* d/dx lgamma(x); -inf at 0 (PyTorch), NaN at negative integers. */
double wgt_cpu_digamma(double x);

#endif
