/*
 * The runtime that clang's WebAssembly setjmp/longjmp lowering (-mllvm -wasm-enable-sjlj, LLVM 14)
 * calls, for the browser build (wasi-libc has no setjmp). The contract, read off the code clang
 * generates: a function that calls setjmp keeps a table of (setjmp id, label) pairs;
 *   saveSetjmp(env, label, table, size)  gives this setjmp call a fresh id, stores it in env[0] and
 *                                        the pair in the table (growing it with realloc), returns
 *                                        the table and leaves its size for getTempRet0();
 *   testSetjmp(id, table, size)          the label of id in the table, 0 if it is not there;
 *   __wasm_longjmp(env, val)             throws the __c_longjmp tag with a pointer to {env, val},
 *                                        which the setjmp function catches (sjlj_throw.S: clang 14
 *                                        cannot define the tag from C).
 * Single-threaded (the page's module runs on one thread).
 */
#include <stdint.h>
#include <stdlib.h>

typedef struct sjlj_entry {
    uint32_t id;    /* 0 ends the used part of the table */
    uint32_t label;
} sjlj_entry;

static uint32_t last_id;
static uint32_t temp_ret;
/* What __wasm_longjmp (sjlj_throw.S) throws a pointer to. */
struct {
    void *env;
    int val;
} wgt_sjlj_thrown;

uint32_t getTempRet0(void) { return temp_ret; }
void setTempRet0(uint32_t v) { temp_ret = v; }

sjlj_entry *saveSetjmp(uint32_t *env, uint32_t label, sjlj_entry *table, uint32_t size)
{
    uint32_t id = ++last_id;
    env[0] = id;
    uint32_t i = 0;
    while (i < size && table[i].id) i++;
    if (i + 1 >= size) { /* keep room for the terminating zero entry */
        uint32_t grown = size * 2 + 2;
        sjlj_entry *t = realloc(table, sizeof *t * (grown + 1));
        if (!t) abort(); /* no memory for a setjmp record: nothing sensible remains */
        table = t;
        size = grown;
    }
    table[i].id = id;
    table[i].label = label;
    table[i + 1].id = 0;
    temp_ret = size;
    return table;
}

uint32_t testSetjmp(uint32_t id, const sjlj_entry *table, uint32_t size)
{
    for (uint32_t i = 0; i < size && table[i].id; i++)
        if (table[i].id == id) return table[i].label;
    return 0;
}
