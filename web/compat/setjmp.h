/* setjmp/longjmp for the browser build: wasi-libc has none. clang lowers these two calls itself
 * (-mllvm -wasm-enable-sjlj, WebAssembly exception handling); web/compat/sjlj.c holds the small
 * runtime the lowering calls. jmp_buf holds the id saveSetjmp gives a setjmp call. */
#ifndef WGT_WEB_COMPAT_SETJMP_H
#define WGT_WEB_COMPAT_SETJMP_H
typedef unsigned long jmp_buf[4];
int setjmp(jmp_buf env) __attribute__((returns_twice));
_Noreturn void longjmp(jmp_buf env, int val);
#endif
