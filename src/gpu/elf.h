/* ELF64 symbol lookup in a shared object's file (elf.c): finds functions that dlsym cannot see. */
#ifndef WGT_GPU_ELF_H
#define WGT_GPU_ELF_H

#include <stdint.h>

#include "core/error.h"

typedef struct wgt_elf_symbols {
    const char *const *names; /* [n] the functions wanted */
    uint64_t *values;         /* [n] out: st_value of each defined function found (either table), else 0 */
    int n;
    int imports_napi;         /* out: the dynamic table has undefined napi_* symbols (a Node addon) */
    char probe_name[128];     /* out: an exported function and its st_value, to check the load bias */
    uint64_t probe_value;
} wgt_elf_symbols;

/* Reads .symtab and .dynsym of the file at path. Fails (naming the file) if it is not an ELF64
 * shared object for this machine or its section headers lie outside the file. */
wgt_status wgt_elf_read_symbols(const char *path, wgt_elf_symbols *out);

#endif
