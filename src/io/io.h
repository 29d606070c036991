/* Shared pieces of the io layer: read-only file maps, UTF-8 validation, a name -> index table. */
#ifndef WGT_IO_IO_H
#define WGT_IO_IO_H

#include <stddef.h>
#include <stdint.h>

#include "wgt.h"

/* The largest header (GGUF metadata + tensor infos, safetensors JSON) we accept: real files need
 * a few MB (a 256k-token vocabulary is about 10 MB); more is a hostile or broken file. */
#define WGT_IO_MAX_HEADER (100ull << 20)

typedef struct wgt_map {
    const uint8_t *data; /* NULL for an empty file */
    uint64_t size;
    int borrowed;        /* data belongs to the caller (in-memory files, fuzzing) */
} wgt_map;

/* Map a whole file read-only. Errors name the path. */
wgt_status wgt_map_open(const char *path, wgt_map *out);
void wgt_map_close(wgt_map *m);

/* In-memory files (borrowed, not copied; the caller keeps data alive): what the fuzz targets
 * use, and a way to parse a header already in memory. name stands for the path in messages. */
wgt_status wgt_gguf_open_memory(const char *name, const void *data, uint64_t size, wgt_gguf **out);
wgt_status wgt_safetensors_open_memory(const char *name, const void *data, uint64_t size,
                                       wgt_safetensors **out);

/* The safetensors dtype name of a type ("F32", "BF16", "F8_E4M3", ...), NULL if it has none. */
const char *wgt_st_dtype_name(wgt_ftype t);

/* 1 when s[0..len) is valid UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF). */
int wgt_utf8_valid(const char *s, uint64_t len);

/* Open-addressing table from NUL-terminated names (borrowed, not copied) to indexes. */
typedef struct wgt_names {
    const char **keys;
    int64_t *vals;
    uint64_t cap; /* a power of two, at least twice the count */
} wgt_names;

/* Room for n names. WGT_ERR_OUT_OF_MEMORY on failure. */
wgt_status wgt_names_init(wgt_names *t, uint64_t n);
/* Insert; returns the index already stored under name if it is a duplicate, else -1. */
int64_t wgt_names_put(wgt_names *t, const char *name, int64_t val);
int64_t wgt_names_get(const wgt_names *t, const char *name); /* -1 if absent */
void wgt_names_free(wgt_names *t);

/* Write bytes to f (a FILE *), as a status naming path. */
wgt_status wgt_write_all(void *f, const void *data, uint64_t bytes, const char *path);

/* Copy s into fresh memory with a NUL (NULL on failure). */
char *wgt_strndup(const char *s, uint64_t len);

/* What the GGUF and safetensors writers share: the tensors declared before any data, and the
 * stream of their bytes, tensor after tensor in declared order, each followed by zeros up to a
 * multiple of align (GGUF's alignment; 1 for safetensors, which packs them). */
typedef struct wgt_wtensor {
    char *name;
    wgt_ftype type;
    uint32_t n_dims;
    int64_t dims[8];  /* in the format's order: GGUF's ne (contiguous first, unused 1), safetensors' shape */
    uint64_t bytes;   /* of its data, unpadded */
    uint64_t offset;  /* from the data section's start (the GGUF header writes it) */
} wgt_wtensor;

typedef struct wgt_wtensors {
    const char *path;   /* for messages (the writer's) */
    uint32_t align;
    int row_first;      /* dims[0] is the contiguous one (GGUF), else dims[n_dims - 1] */
    wgt_wtensor *t;
    uint64_t n, cap;
    uint64_t current;   /* the tensor receiving bytes */
    uint64_t written;   /* its bytes so far */
} wgt_wtensors;

/* Declare a tensor of n_dims dims (at most 8; the rest of dims[] become 1): refuses a duplicate
 * name, a negative or overflowing shape, rows that are not whole blocks of the type. */
wgt_status wgt_wtensors_add(wgt_wtensors *s, const char *name, wgt_ftype type, uint32_t n_dims, const int64_t *dims);
/* The next bytes of the tensors' data, into f; more than declared is WGT_ERR_MISUSE. */
wgt_status wgt_wtensors_write(wgt_wtensors *s, void *f, const void *data, uint64_t bytes);
/* The end of the data: WGT_ERR_MISUSE naming the first tensor short of its bytes. */
wgt_status wgt_wtensors_finish(wgt_wtensors *s, void *f);
void wgt_wtensors_free(wgt_wtensors *s);
/* What the GGUF and safetensors writers share: the file that appears under its name only when
 * complete (wgt_output), the tensors and their data stream, and the format's header, written by
 * start(owner) before the first data bytes (or at finish when there are none). */
typedef struct wgt_wfile {
    char *path;
    wgt_output *out;  /* the temporary file until finish renames it */
    void *f;          /* its stream (FILE *) */
    wgt_wtensors ts;  /* the tensors (dims in the format's order) and their data stream */
    int started;      /* header written: data is being streamed */
    wgt_status failed;
    wgt_status (*start)(void *owner);
    void *owner;
} wgt_wfile;

/* Open path through wgt_output (opts: whether an existing file may be replaced); align and
 * row_first set ts's. */
wgt_status wgt_wfile_open(wgt_wfile *w, const char *path, const wgt_output_options *opts, uint32_t align,
                          int row_first, wgt_status (*start)(void *owner), void *owner);
/* The next bytes of the tensors' data (the header first, once); a failure sticks. */
wgt_status wgt_wfile_write(wgt_wfile *w, const void *data, uint64_t bytes);
/* The end: every tensor complete, then the file appears under its name. */
wgt_status wgt_wfile_finish(wgt_wfile *w);
/* Removes the temporary file (never the final name) and frees what w holds. */
void wgt_wfile_free(wgt_wfile *w);

/* Zeros into f from offset at up to the next multiple of align. */
wgt_status wgt_write_pad(void *f, uint64_t at, uint32_t align, const char *path);

#endif
