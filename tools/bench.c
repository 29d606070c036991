/* wgt bench: benchmarks that print figures. --device: the device layer's costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "wgt.h"

int wgt_print_device_bench(wgt_context *ctx, uint64_t max_bytes)
{
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    wgt_device_bench b;
    if (wgt_context_bench(ctx, max_bytes, &b)) {
        fprintf(stderr, "wgt bench: %s\n", wgt_context_errmsg(ctx));
        return 1;
    }
    printf("device: %s (%s%s)\n", info.name, info.backend_name, info.compat ? ", compat" : "");
    printf("dispatch, one pass:        %7.2f us host to record, %7.2f us each end to end\n", b.dispatch_record_us,
           b.dispatch_total_us);
    printf("dispatch, a pass each:     %7.2f us host to record, %7.2f us each end to end\n", b.pass_record_us,
           b.pass_total_us);
    printf("submit and wait (median):  %7.1f us\n", b.submit_wait_us);
    printf("streaming y = a*x + b (bytes per buffer, read+write bandwidth):\n");
    for (int i = 0; i < b.n_sizes; i++)
        printf("  %10.1f MiB  %9.1f GB/s\n", b.bytes[i] / 1048576.0, b.gbps[i]);
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    int device = 0;
    uint64_t max_bytes = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: wgt bench --device [--max-bytes N]\n\n"
                   "--device   microseconds of host time per dispatch (one pass; a pass per dispatch),\n"
                   "           submit-and-wait latency, and streaming bandwidth from 1 MiB to N bytes per\n"
                   "           buffer (default: the device's storage binding limit)\n");
            return 0;
        }
        if (!strcmp(argv[i], "--device")) device = 1;
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) max_bytes = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "wgt bench: unknown option '%s' (see wgt bench --help)\n", argv[i]);
            return 2;
        }
    }
    if (!device) {
        fprintf(stderr, "wgt bench: say what to benchmark: --device (see wgt bench --help)\n");
        return 2;
    }
    wgt_context *ctx;
    if (wgt_context_create(NULL, &ctx)) {
        fprintf(stderr, "wgt bench: %s\n", wgt_errmsg());
        return 1;
    }
    int rc = wgt_print_device_bench(ctx, max_bytes);
    wgt_context_free(ctx);
    return rc;
}
