/* Adapter selection and its overrides, good and bad, and the loader's failure modes. Runs once per
 * adapter of the suite (the runner sets WGT_BACKEND); every case restores the environment. */
#include <stdlib.h>
#include <string.h>

#include "support/check.h"
#include "wgt.h"

static char runner_backend[64];

static void reset_env(void)
{
    const char *vars[] = {"WGT_ADAPTER", "WGT_COMPAT", "WGT_LIMITS", "WGT_FORCE_FALLBACK_ADAPTER",
                          "WGT_DEBUG", "WGT_MAX_BATCH", "WGT_DUMP_SHADERS", "WGT_KERNEL_DIR", "WGT_WEBGPU_LIB"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    if (runner_backend[0]) setenv("WGT_BACKEND", runner_backend, 1);
    else unsetenv("WGT_BACKEND");
}

/* Creating a context with var=value must fail with `want`, and the message must name the variable. */
static void expect_bad(const char *var, const char *value, wgt_status want)
{
    reset_env();
    setenv(var, value, 1);
    wgt_context *ctx = (wgt_context *)1;
    wgt_status st = wgt_context_create(NULL, &ctx);
    CHECK(st == want, "%s=%s gave %s, want %s", var, value, wgt_status_str(st), wgt_status_str(want));
    CHECK(ctx == NULL, "%s=%s: the out handle must be NULL on failure", var, value);
    CHECK(strstr(wgt_errmsg(), var) != NULL, "%s=%s: message does not name the variable: %s", var, value,
          wgt_errmsg());
    if (ctx) wgt_context_free(ctx);
}

int main(void)
{
    const char *b = getenv("WGT_BACKEND");
    if (b) snprintf(runner_backend, sizeof runner_backend, "%s", b);

    /* The loader: a missing library and a library that is not webgpu.h. Before any good load,
     * because a process keeps the first library it loads. */
    reset_env();
    setenv("WGT_WEBGPU_LIB", "/nonexistent/libwebgpu.so", 1);
    wgt_context *ctx = NULL;
    wgt_status st = wgt_context_create(NULL, &ctx);
    CHECK(st == WGT_ERR_NO_DEVICE && !ctx, "missing library gave %s", wgt_status_str(st));
    CHECK(strstr(wgt_errmsg(), "/nonexistent/libwebgpu.so") && strstr(wgt_errmsg(), "WGT_WEBGPU_LIB"),
          "message should name the path and the variable: %s", wgt_errmsg());
    setenv("WGT_WEBGPU_LIB", "libm.so.6", 1);
    st = wgt_context_create(NULL, &ctx);
    CHECK(st == WGT_ERR_NO_DEVICE && !ctx, "libm gave %s", wgt_status_str(st));
    CHECK(strstr(wgt_errmsg(), "no symbol wgpu") != NULL, "message should say a symbol is missing: %s", wgt_errmsg());

    /* Bad values of every variable are refused with a message naming it. */
    expect_bad("WGT_BACKEND", "cuda", WGT_ERR_INVALID_ARGUMENT);
    expect_bad("WGT_COMPAT", "maybe", WGT_ERR_INVALID_ARGUMENT);
    expect_bad("WGT_LIMITS", "huge", WGT_ERR_INVALID_ARGUMENT);
    expect_bad("WGT_FORCE_FALLBACK_ADAPTER", "2", WGT_ERR_INVALID_ARGUMENT);
    expect_bad("WGT_DEBUG", "verbose", WGT_ERR_INVALID_ARGUMENT);
    expect_bad("WGT_MAX_BATCH", "0", WGT_ERR_INVALID_ARGUMENT);
    expect_bad("WGT_MAX_BATCH", "12abc", WGT_ERR_INVALID_ARGUMENT);
    expect_bad("WGT_ADAPTER", "99", WGT_ERR_INVALID_ARGUMENT);
    expect_bad("WGT_ADAPTER", "no-such-gpu-name", WGT_ERR_NOT_FOUND);
    expect_bad("WGT_DUMP_SHADERS", "/proc/version", WGT_ERR_INVALID_ARGUMENT);
    expect_bad("WGT_KERNEL_DIR", "/nonexistent-kernels", WGT_ERR_INVALID_ARGUMENT);

    /* The default choice on this adapter of the suite: a CPU adapter found by itself. */
    reset_env();
    MUST(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    MUST(wgt_context_adapter_info(ctx, &info));
    CHECK(info.is_cpu, "on the test machine the adapter should be a CPU adapter, got '%s'", info.name);
    CHECK(strstr(info.name, "llvmpipe") != NULL, "expected llvmpipe, got '%s'", info.name);
    if (!strcmp(runner_backend, "opengles")) {
        CHECK(info.backend == WGT_BACKEND_OPENGLES && info.compat, "WGT_BACKEND=opengles gave %s compat=%d",
              info.backend_name, info.compat);
        CHECK(!info.has_f16 && !info.has_subgroups, "GLES compat should grant neither f16 nor subgroups");
    } else {
        CHECK(info.backend == WGT_BACKEND_VULKAN, "expected Vulkan, got %s", info.backend_name);
        CHECK(info.has_f16 && info.has_subgroups && info.has_timestamps,
              "lavapipe offers f16, subgroups and timestamps: granted %d %d %d", info.has_f16, info.has_subgroups,
              info.has_timestamps);
        CHECK(info.limits.subgroup_min_size >= 4, "subgroup size %u", info.limits.subgroup_min_size);
    }
    CHECK(info.limits.max_storage_buffer_binding_size >= (128u << 20), "binding limit %llu",
          (unsigned long long)info.limits.max_storage_buffer_binding_size);
    CHECK(wgt_context_health(ctx) == WGT_OK, "fresh context unhealthy");
    wgt_context_free(ctx);

    /* WGT_LIMITS=default: the WebGPU spec's default limits, whatever the adapter offers. */
    reset_env();
    setenv("WGT_LIMITS", "default", 1);
    MUST(wgt_context_create(NULL, &ctx));
    MUST(wgt_context_adapter_info(ctx, &info));
    CHECK(info.limits.max_storage_buffer_binding_size == (128u << 20), "default binding limit %llu",
          (unsigned long long)info.limits.max_storage_buffer_binding_size);
    CHECK(info.limits.max_buffer_size == (256u << 20), "default buffer limit %llu",
          (unsigned long long)info.limits.max_buffer_size);
    CHECK(info.limits.max_compute_workgroup_storage_size == 16384, "default workgroup storage %u",
          info.limits.max_compute_workgroup_storage_size);
    wgt_context_free(ctx);

    /* WGT_ADAPTER by index and by name; the list names the adapter of this run. */
    reset_env();
    wgt_adapter_info list[8];
    int n = 0;
    MUST(wgt_list_adapters(NULL, list, 8, &n));
    CHECK(n >= 1, "no adapters listed");
    setenv("WGT_ADAPTER", "0", 1);
    MUST(wgt_context_create(NULL, &ctx));
    MUST(wgt_context_adapter_info(ctx, &info));
    CHECK(!strcmp(info.name, list[0].name) && info.backend == list[0].backend, "WGT_ADAPTER=0 gave '%s' (%s)",
          info.name, info.backend_name);
    wgt_context_free(ctx);
    setenv("WGT_ADAPTER", "LLVMPIPE", 1); /* a case-insensitive substring */
    MUST(wgt_context_create(NULL, &ctx));
    wgt_context_free(ctx);

    /* Options override the environment. */
    reset_env();
    setenv("WGT_MAX_BATCH", "not-a-number", 1);
    wgt_context_options opts = {0};
    opts.max_batch = 8;
    MUST(wgt_context_create(&opts, &ctx));
    wgt_context_free(ctx);
    opts.max_batch = -1;
    st = wgt_context_create(&opts, &ctx);
    CHECK(st == WGT_ERR_INVALID_ARGUMENT, "max_batch=-1 gave %s", wgt_status_str(st));

    /* Freeing NULL is a no-op; NULL arguments are statuses. */
    wgt_context_free(NULL);
    CHECK(wgt_context_create(NULL, NULL) == WGT_ERR_INVALID_ARGUMENT, "NULL out");
    CHECK(wgt_context_adapter_info(NULL, &info) == WGT_ERR_INVALID_ARGUMENT, "NULL ctx");
    return test_finish("test_gpu_context");
}
