/* Error reporting shared by every layer: a thread-local last message, set with the status. */
#ifndef WGT_CORE_ERROR_H
#define WGT_CORE_ERROR_H

#include "wgt.h"

#if defined(__GNUC__)
#define WGT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define WGT_PRINTF(a, b)
#endif

/* Record status and message as this thread's last error; returns status so callers can
 * `return wgt_error(WGT_ERR_FORMAT, "%s: bad magic", path);`. */
wgt_status wgt_error(wgt_status status, const char *fmt, ...) WGT_PRINTF(2, 3);

/* Clear this thread's last error. */
void wgt_error_clear(void);

/* Checked allocation helpers: NULL on overflow or failure (the caller reports OUT_OF_MEMORY). */
void *wgt_malloc_array(size_t count, size_t size);

#endif
