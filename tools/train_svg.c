/* The loss curve of `wgt train` as a small SVG: training loss per step, evaluation loss at the
 * steps it was measured, axes with a few round ticks. Written through wgt_output (a temporary
 * file renamed into place). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_svg.h"

/* A round tick step for a range: 1, 2 or 5 times a power of ten, about n ticks. */
static double tick_step(double range, int n)
{
    double raw = range / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

int train_write_svg(const char *path, const double *loss, int64_t n, const int64_t *eval_step,
                    const double *eval_loss, int64_t n_eval, const char *title)
{
    const double W = 720, H = 420, l = 64, r = 20, t = 36, b = 48;
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(loss[i])) lo = fmin(lo, loss[i]), hi = fmax(hi, loss[i]);
    for (int64_t i = 0; i < n_eval; i++)
        if (isfinite(eval_loss[i])) lo = fmin(lo, eval_loss[i]), hi = fmax(hi, eval_loss[i]);
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (hi - lo < 1e-9) lo -= 0.5, hi += 0.5;
    double ys = tick_step(hi - lo, 5);
    lo = floor(lo / ys) * ys, hi = ceil(hi / ys) * ys;
    double xmax = n > 1 ? (double)n : 2;
#define X(step) (l + ((double)(step) - 1) / (xmax - 1) * (W - l - r))
#define Y(v) (t + (hi - (v)) / (hi - lo) * (H - t - b))
    wgt_output_options oo = {0};
    oo.replace = 1;
    wgt_output *o;
    if (wgt_output_open(path, &oo, &o)) return -1;
    FILE *f = wgt_output_file(o);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%g\" y=\"22\" font-size=\"14\">", l);
    for (const char *p = title; *p; p++) /* escape the few characters XML reserves */
        if (*p == '<') fputs("&lt;", f);
        else if (*p == '>') fputs("&gt;", f);
        else if (*p == '&') fputs("&amp;", f);
        else fputc(*p, f);
    fprintf(f, "</text>\n");
    for (double v = lo; v <= hi + ys / 2; v += ys) {
        fprintf(f, "<line x1=\"%g\" x2=\"%g\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", l, W - r, Y(v), Y(v));
        fprintf(f, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", l - 6, Y(v) + 4, v);
    }
    double xs = tick_step(xmax - 1, 6);
    for (double s = xs; s <= xmax; s += xs)
        fprintf(f, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%g</text>\n", X(s), H - b + 18, s);
    fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">step</text>\n", (l + W - r) / 2, H - 8);
    fprintf(f, "<text transform=\"translate(16 %g) rotate(-90)\" text-anchor=\"middle\">loss (nats/token)</text>\n",
            (t + H - b) / 2);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"");
    for (int64_t i = 0; i < n; i++)
        if (isfinite(loss[i])) fprintf(f, "%.1f,%.1f ", X(i + 1), Y(loss[i]));
    fprintf(f, "\"/>\n");
    if (n_eval > 0) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" points=\"");
        for (int64_t i = 0; i < n_eval; i++)
            if (isfinite(eval_loss[i])) fprintf(f, "%.1f,%.1f ", X(eval_step[i]), Y(eval_loss[i]));
        fprintf(f, "\"/>\n");
    }
    fprintf(f, "<text x=\"%g\" y=\"%g\" fill=\"#1f77b4\">training</text>", W - r - 150, t + 14);
    if (n_eval > 0) fprintf(f, "<text x=\"%g\" y=\"%g\" fill=\"#d62728\">held-out</text>", W - r - 70, t + 14);
    fprintf(f, "\n</svg>\n");
#undef X
#undef Y
    if (ferror(f)) {
        wgt_output_abort(o);
        return -1;
    }
    return wgt_output_commit(o) ? -1 : 0;
}
