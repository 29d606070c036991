/* Strict command-line option parsing shared by the wgt commands. A value is read whole (no
 * trailing text), of the right type (no "abc" read as 0, no NaN or infinity), and within the
 * option's range; anything else is refused with the option's name, what it got and what it takes,
 * so a typo never runs silently with a default. Option names are '|'-separated aliases, llama.cpp's
 * spelling first where the meaning is the same ("-c|--ctx-size|--ctx").
 *
 *     args a = args_begin("generate", argc, argv);
 *     while (args_next(&a)) {
 *         if (args_flag(&a, "-h|--help")) ...
 *         else if (args_int(&a, "-n|--n-predict", 0, INT32_MAX, &n)) ;
 *         else if (args_float(&a, "--temp", 0, 100, &t)) ;
 *         else return args_unknown(&a);
 *     }
 *     if (a.bad) return 2;
 *
 * Each matcher returns 1 when argv[i] is its option (the value, if any, is consumed), 0 otherwise;
 * a bad or missing value prints the error on stderr and sets a.bad, which ends the loop. */
#ifndef WGT_TOOLS_ARGS_H
#define WGT_TOOLS_ARGS_H

#include <stdint.h>

typedef struct args {
    const char *cmd; /* "generate": messages begin "wgt generate: " */
    int argc;
    char **argv;
    int i;   /* the argument being looked at (0 before args_next) */
    int bad; /* set once an option was refused (its message is printed) */
} args;

args args_begin(const char *cmd, int argc, char **argv);
/* Step to the next argument: 0 at the end or after a refusal. */
int args_next(args *a);
/* The current argument. */
const char *args_cur(const args *a);

int args_flag(args *a, const char *names);
int args_str(args *a, const char *names, const char **out);
/* A whole decimal integer in [lo, hi]. */
int args_int(args *a, const char *names, int64_t lo, int64_t hi, int64_t *out);
int args_int32(args *a, const char *names, int32_t lo, int32_t hi, int32_t *out);
/* A whole unsigned decimal integer (no sign) up to hi. */
int args_u64(args *a, const char *names, uint64_t hi, uint64_t *out);
/* A finite number in [lo, hi]; lo_open: lo itself is excluded (e.g. a penalty > 0). */
int args_double(args *a, const char *names, double lo, int lo_open, double hi, double *out);
int args_float(args *a, const char *names, double lo, int lo_open, double hi, float *out);

/* Refuse the current argument as unknown (or a value option without its value): prints and
 * returns 2, the exit status of a usage error. */
int args_unknown(args *a);

/* The same checks on a lone string (a list element, an environment variable): 0 when s is a whole
 * integer in [lo, hi]; on failure, prints "wgt CMD: WHAT 'S' ..." and returns 1. */
int args_parse_int(const char *cmd, const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out);
/* The same for a finite number in [lo, hi] (lo_open: above lo). */
int args_parse_double(const char *cmd, const char *what, const char *s, double lo, int lo_open, double hi, double *out);

#endif
