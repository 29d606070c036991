/* Opens the webgpu.h implementation with dlopen, once per process, and fills wgt_W. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"

wgt_wgpu_procs wgt_W;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static void *library;
static char loaded_path[1024];

/* Where to look when neither the argument nor WGT_WEBGPU_LIB names a library: the copy that
 * `make deps` fetched into the source tree (a development build), then the installed copy. */
static const char *default_path(void)
{
    if (access(WGT_DEV_WEBGPU_LIB, R_OK) == 0) return WGT_DEV_WEBGPU_LIB;
    return WGT_INSTALLED_WEBGPU_LIB;
}

wgt_status wgt_wgpu_load(const char *path)
{
    if (!path || !*path) path = getenv("WGT_WEBGPU_LIB");
    if (!path || !*path) path = default_path();
    pthread_mutex_lock(&load_lock);
    if (library) {
        wgt_status st = WGT_OK;
        if (strcmp(path, loaded_path) != 0)
            st = wgt_error(WGT_ERR_MISUSE,
                           "the WebGPU library %s is already loaded in this process; "
                           "cannot also load %s", loaded_path, path);
        pthread_mutex_unlock(&load_lock);
        return st;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        pthread_mutex_unlock(&load_lock);
        return wgt_error(WGT_ERR_NO_DEVICE,
                         "cannot load the WebGPU library %s (%s): run 'make deps' to fetch Dawn, "
                         "or point WGT_WEBGPU_LIB at a webgpu.h implementation", path,
                         why ? why : "unknown error");
    }
    wgt_wgpu_procs procs;
#define WGT_LOAD_PROC(ret, name, params)                                                           \
    *(void **)&procs.name = dlsym(lib, "wgpu" #name);                                              \
    if (!procs.name) {                                                                             \
        dlclose(lib);                                                                              \
        pthread_mutex_unlock(&load_lock);                                                          \
        return wgt_error(WGT_ERR_NO_DEVICE,                                                        \
                         "the WebGPU library %s has no symbol wgpu" #name                          \
                         ": it is not a webgpu.h implementation wgt supports", path);              \
    }
    WGT_WGPU_PROCS(WGT_LOAD_PROC)
#undef WGT_LOAD_PROC
    wgt_W = procs;
    library = lib;
    snprintf(loaded_path, sizeof loaded_path, "%s", path);
    pthread_mutex_unlock(&load_lock);
    return WGT_OK;
}
