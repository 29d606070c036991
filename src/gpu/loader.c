/*
 * Opens the webgpu.h implementation with dlopen, once per process, fills wgt_W (the functions) and
 * wgt_L (which library, which ABI).
 *
 * Two kinds of library are understood:
 *   - one that exports its wgpu* functions (the 2025 Dawn, libwebgpu_wrapper.so; wgpu-native; a
 *     Dawn built by the user): dlsym finds them;
 *   - Dawn's Node addon (dawn.node, the default): it exports none, but its ELF symbol table has them
 *     as local symbols (elf.c); they are dawn_proc thunks that call through a table, installed with
 *     dawnProcSetProcs(dawn::native::GetProcs()) before any is called. It imports Node's napi_*
 *     functions, which must resolve when it loads: libwgt_napi_stub.so provides them (never called).
 * The ABI (feature numbering) is read off the functions the library has: wgpuGetInstanceCapabilities
 * exists only in mid-2025 Dawn, wgpuGetInstanceLimits only in the standard header. A library with
 * neither, or both, is refused rather than guessed at.
 */
#include <dlfcn.h>
#include <libgen.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/elf.h"
#include "gpu/gpu.h"

wgt_wgpu_procs wgt_W;
wgt_wgpu_library wgt_L;

/* Feature numbers per ABI: dawn-2025-06.json against dawn-2026-08.json and the standard header
 * (Dawn's own range starts at 0x50000). */
static const wgt_wgpu_abi abi_2025 = {"mid-2025 Dawn numbering", (WGPUFeatureName)0x03, (WGPUFeatureName)0x0A,
                                      (WGPUFeatureName)0x11, (WGPUFeatureName)0x12, (WGPUFeatureName)0x50037, 0, 20};
static const wgt_wgpu_abi abi_standard = {"standard webgpu.h numbering", (WGPUFeatureName)0x09,
                                          (WGPUFeatureName)0x0B, (WGPUFeatureName)0x12, (WGPUFeatureName)0x01,
                                          (WGPUFeatureName)0x50034, 1, 28};

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static void *library;
static void *napi_stub;

/* Where to look when neither the argument nor WGT_WEBGPU_LIB names a library: the copy that
 * `make deps` fetched into the source tree (a development build), then the installed copy. */
static const char *default_path(void)
{
    if (access(WGT_DEV_WEBGPU_LIB, R_OK) == 0) return WGT_DEV_WEBGPU_LIB;
    return WGT_INSTALLED_WEBGPU_LIB;
}

/* libwgt_napi_stub.so: WGT_NAPI_STUB, the build tree that built this library, next to the running
 * program or one folder up (a build folder carried to another machine: build/wgt, build/tests/x),
 * next to the WebGPU library, then the installed copy. */
static wgt_status load_napi_stub(const char *lib_path)
{
    if (napi_stub) return WGT_OK;
    char exe[1024] = "", exe_dir[1024] = "", lib_dir[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        snprintf(exe_dir, sizeof exe_dir, "%s", dirname(exe));
    }
    snprintf(lib_dir, sizeof lib_dir, "%s", lib_path);
    char cands[6][1100];
    int nc = 0;
    const char *env = getenv("WGT_NAPI_STUB");
    if (env && *env) snprintf(cands[nc++], sizeof cands[0], "%s", env);
    snprintf(cands[nc++], sizeof cands[0], "%s", WGT_DEV_NAPI_STUB);
    if (exe_dir[0]) {
        snprintf(cands[nc++], sizeof cands[0], "%s/libwgt_napi_stub.so", exe_dir);
        snprintf(cands[nc++], sizeof cands[0], "%s/../libwgt_napi_stub.so", exe_dir);
    }
    snprintf(cands[nc++], sizeof cands[0], "%s/libwgt_napi_stub.so", dirname(lib_dir));
    snprintf(cands[nc++], sizeof cands[0], "%s", WGT_INSTALLED_NAPI_STUB);
    for (int i = 0; i < nc; i++) {
        if (access(cands[i], R_OK) != 0) continue;
        napi_stub = dlopen(cands[i], RTLD_NOW | RTLD_GLOBAL);
        if (napi_stub) return WGT_OK;
    }
    return wgt_error(WGT_ERR_NO_DEVICE,
                     "the WebGPU library %s is a Node addon (it imports napi_* functions) and "
                     "libwgt_napi_stub.so, which provides them, was not found (looked at WGT_NAPI_STUB, %s, "
                     "next to the program and the library, %s): build wgt (the stub is built with it) or set "
                     "WGT_NAPI_STUB to its path", lib_path, WGT_DEV_NAPI_STUB, WGT_INSTALLED_NAPI_STUB);
}

/* The names looked up in the ELF file: every wgpu* function wgt calls, then these. */
enum { EXTRA_SET_PROCS, EXTRA_GET_PROCS, EXTRA_CAPS_2025, EXTRA_LIMITS_STD, EXTRA_TICK, EXTRA_SGM_FREE, N_EXTRA };
static const char *const extra_names[N_EXTRA] = {
    "dawnProcSetProcs", "_ZN4dawn6native8GetProcsEv", "wgpuGetInstanceCapabilities", "wgpuGetInstanceLimits",
    "wgpuDeviceTick", "wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers"};

#define WGT_PROC_NAME(ret, name, params) "wgpu" #name,
static const char *const proc_names[] = {WGT_WGPU_PROCS(WGT_PROC_NAME)};
#undef WGT_PROC_NAME
#define N_PROCS (int)(sizeof proc_names / sizeof proc_names[0])

typedef struct resolver {
    void *lib;
    uintptr_t bias;           /* load address - link-time address (link_map l_addr) */
    const uint64_t *values;   /* st_value per name, from the file */
    int from_symtab;
} resolver;

static void *resolve(resolver *r, const char *name, uint64_t value)
{
    void *p = dlsym(r->lib, name);
    if (p) return p;
    if (!value) return NULL;
    r->from_symtab = 1;
    return (void *)(r->bias + value);
}

static void describe(const char *path, wgt_wgpu_library *L)
{
    /* `make deps` writes VERSION (e.g. "npm webgpu@0.6.2") next to each library it fetched. */
    char dir[1024], vpath[1100], version[128] = "";
    snprintf(dir, sizeof dir, "%s", path);
    snprintf(vpath, sizeof vpath, "%s/VERSION", dirname(dir));
    FILE *f = fopen(vpath, "r");
    if (f) {
        if (fgets(version, sizeof version, f)) version[strcspn(version, "\r\n")] = 0;
        fclose(f);
    }
    snprintf(L->description, sizeof L->description, "%s%s%s%s, %s", L->is_dawn ? "Dawn" : "webgpu.h library",
             version[0] ? " (" : "", version, version[0] ? ")" : "",
             L->from_symtab ? "Node addon, functions from its symbol table" : "exported functions");
    size_t len = strlen(L->description);
    snprintf(L->description + len, sizeof L->description - len, ", %s", L->abi->name);
}

/* A name without a slash ("libwebgpu_dawn.so") is searched for as dlopen searches; the symbol
 * tables are read from the file it finds. */
static wgt_status find_file(const char *path, char *out, size_t cap)
{
    snprintf(out, cap, "%s", path);
    if (strchr(path, '/')) return WGT_OK;
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    struct link_map *lm = NULL;
    if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name || !strchr(lm->l_name, '/')) {
        const char *why = h ? "cannot tell which file it is" : dlerror();
        if (h) dlclose(h);
        return wgt_error(WGT_ERR_NO_DEVICE,
                         "cannot load the WebGPU library %s (%s): run 'make deps' to fetch Dawn, "
                         "or point WGT_WEBGPU_LIB at a webgpu.h implementation", path, why ? why : "unknown error");
    }
    snprintf(out, cap, "%s", lm->l_name);
    dlclose(h);
    return WGT_OK;
}

static wgt_status load_locked(const char *path)
{
    char file[1024];
    wgt_status st = find_file(path, file, sizeof file);
    if (st) return st;
    uint64_t values[N_PROCS + N_EXTRA];
    const char *names[N_PROCS + N_EXTRA];
    for (int i = 0; i < N_PROCS; i++) names[i] = proc_names[i];
    for (int i = 0; i < N_EXTRA; i++) names[N_PROCS + i] = extra_names[i];
    wgt_elf_symbols syms = {names, values, N_PROCS + N_EXTRA, 0, "", 0};
    if ((st = wgt_elf_read_symbols(file, &syms))) return st;
    if (syms.imports_napi && (st = load_napi_stub(path))) return st;

    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        return wgt_error(WGT_ERR_NO_DEVICE,
                         "cannot load the WebGPU library %s (%s): run 'make deps' to fetch Dawn, "
                         "or point WGT_WEBGPU_LIB at a webgpu.h implementation", path, why ? why : "unknown error");
    }
    struct link_map *lm = NULL;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
        dlclose(lib);
        return wgt_error(WGT_ERR_NO_DEVICE, "cannot find where %s was loaded (dlinfo failed)", path);
    }
    resolver r = {lib, (uintptr_t)lm->l_addr, values, 0};

    void *found[N_PROCS];
    for (int i = 0; i < N_PROCS; i++) {
        found[i] = resolve(&r, proc_names[i], values[i]);
        if (!found[i]) {
            dlclose(lib);
            return wgt_error(WGT_ERR_NO_DEVICE, "the WebGPU library %s has no symbol %s (neither exported nor in "
                             "its symbol table): it is not a webgpu.h implementation wgt supports", path, proc_names[i]);
        }
    }
    wgt_wgpu_procs procs;
    int k = 0;
#define WGT_SET_PROC(ret, name, params) *(void **)&procs.name = found[k++];
    WGT_WGPU_PROCS(WGT_SET_PROC)
#undef WGT_SET_PROC
    int procs_from_symtab = r.from_symtab;
    /* Addresses taken from the symbol table are right only if the file read is the object loaded:
     * an exported function's address from dlsym must equal bias + its st_value. */
    if (procs_from_symtab && (!syms.probe_name[0] || dlsym(lib, syms.probe_name) != (void *)(r.bias + syms.probe_value))) {
        dlclose(lib);
        return wgt_error(WGT_ERR_NO_DEVICE, "%s: its wgpu* functions are not exported and the symbol table read "
                         "from the file %s (%s): was the file replaced while loading?", path,
                         syms.probe_name[0] ? "does not match the loaded library" : "has no exported function to check it by",
                         syms.probe_name[0] ? syms.probe_name : "none");
    }
    const uint64_t *xv = values + N_PROCS;
    void *caps_2025 = resolve(&r, extra_names[EXTRA_CAPS_2025], xv[EXTRA_CAPS_2025]);
    void *limits_std = resolve(&r, extra_names[EXTRA_LIMITS_STD], xv[EXTRA_LIMITS_STD]);
    if (!!caps_2025 == !!limits_std) {
        dlclose(lib);
        return wgt_error(WGT_ERR_NO_DEVICE,
                         "cannot tell which webgpu.h numbering %s speaks (it has %s of wgpuGetInstanceCapabilities, "
                         "mid-2025 Dawn, and wgpuGetInstanceLimits, standard): wgt knows those two; use the Dawn "
                         "of 'make deps'", path, caps_2025 ? "both" : "neither");
    }
    if (procs_from_symtab) {
        /* dawn.node's wgpu* are thunks through a table Node's module init would fill. */
        void (*set_procs)(const void *) = (void (*)(const void *))resolve(&r, extra_names[EXTRA_SET_PROCS],
                                                                          xv[EXTRA_SET_PROCS]);
        const void *(*get_procs)(void) = (const void *(*)(void))resolve(&r, extra_names[EXTRA_GET_PROCS],
                                                                        xv[EXTRA_GET_PROCS]);
        if (!set_procs || !get_procs) {
            dlclose(lib);
            return wgt_error(WGT_ERR_NO_DEVICE, "%s: its wgpu* functions are not exported and it lacks "
                             "dawnProcSetProcs or dawn::native::GetProcs(), so they cannot be set up", path);
        }
        set_procs(get_procs());
    }
    wgt_wgpu_library L;
    memset(&L, 0, sizeof L);
    L.abi = caps_2025 ? &abi_2025 : &abi_standard;
    L.is_dawn = resolve(&r, extra_names[EXTRA_TICK], xv[EXTRA_TICK]) != NULL;
    L.from_symtab = procs_from_symtab;
    *(void **)&L.AdapterPropertiesSubgroupMatrixConfigsFreeMembers =
        resolve(&r, extra_names[EXTRA_SGM_FREE], xv[EXTRA_SGM_FREE]);
    snprintf(L.path, sizeof L.path, "%s", path);
    describe(path, &L);
    wgt_W = procs;
    wgt_L = L;
    library = lib;
    return WGT_OK;
}

wgt_status wgt_wgpu_load(const char *path)
{
    if (!path || !*path) path = getenv("WGT_WEBGPU_LIB");
    if (!path || !*path) path = default_path();
    if (strlen(path) >= sizeof wgt_L.path)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "the WebGPU library path is longer than %zu bytes: %.80s...",
                         sizeof wgt_L.path - 1, path);
    pthread_mutex_lock(&load_lock);
    wgt_status st = WGT_OK;
    if (library) {
        if (strcmp(path, wgt_L.path) != 0)
            st = wgt_error(WGT_ERR_MISUSE, "the WebGPU library %s is already loaded in this process; "
                           "cannot also load %s", wgt_L.path, path);
    } else {
        st = load_locked(path);
    }
    pthread_mutex_unlock(&load_lock);
    return st;
}
