/*
 * The device layer's way of reaching WebGPU in the browser build (make web): instead of dlopen-ing a
 * webgpu.h library (../loader.c), every wgpu* function is a WebAssembly import from the module
 * "wgpu", implemented in JavaScript over navigator.gpu (web/wgpu.js). The rest of src/gpu is the
 * same code as natively.
 *
 * Waiting: the native code waits by calling wgpuInstanceProcessEvents in a loop. Here that import is
 * wrapped in WebAssembly.Suspending (JSPI): when work is pending it suspends this WebAssembly stack
 * until a promise settles (a map, a device request, an error scope), runs the callbacks that became
 * ready, and resumes. The loop never spins: the browser's event loop runs while C waits.
 *
 * Only compiled for wasm32 (CMake leaves src/gpu/web/ out of the native library).
 */
#if defined(__wasm__)
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"

wgt_wgpu_procs wgt_W;
wgt_wgpu_library wgt_L;

/* web/wgpu.js speaks the standard webgpu.h numbering (its feature table maps these to the
 * browser's feature names). */
static const wgt_wgpu_abi abi_browser = {"standard webgpu.h numbering (browser)", (WGPUFeatureName)0x09,
                                         (WGPUFeatureName)0x0B, (WGPUFeatureName)0x12, (WGPUFeatureName)0x01,
                                         (WGPUFeatureName)0x50034, 1};

#define WGT_WEB_IMPORT(ret, name, params) \
    __attribute__((import_module("wgpu"), import_name("wgpu" #name))) ret wgt_web_##name params;
WGT_WGPU_PROCS(WGT_WEB_IMPORT)
#undef WGT_WEB_IMPORT

/* The browser's description of itself (navigator.userAgent), for `info`. */
__attribute__((import_module("wgpu"), import_name("wgtUserAgent"))) size_t wgt_web_user_agent(char *out,
                                                                                              size_t cap);

wgt_status wgt_wgpu_load(const char *path)
{
    (void)path; /* the browser's WebGPU is the only implementation here */
    if (wgt_L.abi) return WGT_OK;
#define WGT_WEB_FILL(ret, name, params) wgt_W.name = wgt_web_##name;
    WGT_WGPU_PROCS(WGT_WEB_FILL)
#undef WGT_WEB_FILL
    memset(&wgt_L, 0, sizeof wgt_L);
    wgt_L.abi = &abi_browser;
    snprintf(wgt_L.path, sizeof wgt_L.path, "navigator.gpu");
    char ua[160] = "";
    size_t n = wgt_web_user_agent(ua, sizeof ua);
    ua[n < sizeof ua ? n : sizeof ua - 1] = 0;
    snprintf(wgt_L.description, sizeof wgt_L.description, "the browser's WebGPU (%s), %s", ua, abi_browser.name);
    return WGT_OK;
}
#endif
