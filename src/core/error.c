#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local char last_message[2048];

const char *wgt_version(void) { return WGT_VERSION_STRING; }

const char *wgt_status_str(wgt_status status)
{
    switch (status) {
    case WGT_OK: return "ok";
    case WGT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case WGT_ERR_MISUSE: return "API misuse";
    case WGT_ERR_OUT_OF_MEMORY: return "out of memory";
    case WGT_ERR_NOT_FOUND: return "not found";
    case WGT_ERR_IO: return "I/O error";
    case WGT_ERR_FORMAT: return "malformed file";
    case WGT_ERR_UNSUPPORTED: return "unsupported";
    case WGT_ERR_SHAPE: return "shape mismatch";
    case WGT_ERR_DTYPE: return "dtype mismatch";
    case WGT_ERR_NO_DEVICE: return "no WebGPU device";
    case WGT_ERR_DEVICE_LOST: return "device lost";
    case WGT_ERR_SHADER: return "shader compilation failed";
    case WGT_ERR_GPU: return "WebGPU error";
    case WGT_ERR_TIMEOUT: return "timed out";
    case WGT_ERR_LIMIT: return "past a limit";
    case WGT_ERR_INTERNAL: return "internal error";
    case WGT_ERR_STALE: return "stale graph";
    }
    return "unknown status";
}

const char *wgt_errmsg(void) { return last_message; }

void wgt_error_clear(void) { last_message[0] = 0; }

wgt_status wgt_error(wgt_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    return status;
}

void *wgt_malloc_array(size_t count, size_t size)
{
    if (size && count > (size_t)-1 / size) return NULL;
    size_t bytes = count * size;
    return malloc(bytes ? bytes : 1);
}
