/* LD_PRELOAD shim for test_convert_safety.sh: stops the process (SIGSTOP) when it fsyncs one of
 * wgt's temporary output files (".NAME.wgt-XXXXXX"), which the writer does once, after the last
 * byte and before the rename. The test then sends SIGINT, SIGTERM or SIGKILL to the stopped process
 * and continues it, so the signal lands at the worst moment (a complete temporary file, the final
 * name not yet replaced) whatever the machine's speed. Not part of libwgt. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int fsync(int fd)
{
    static int (*real_fsync)(int);
    static int stopped;
    if (!real_fsync) real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0 && !stopped) {
        target[n] = 0;
        const char *base = strrchr(target, '/');
        base = base ? base + 1 : target;
        if (base[0] == '.' && strstr(base, ".wgt-")) {
            stopped = 1;
            raise(SIGSTOP);
        }
    }
    return real_fsync ? real_fsync(fd) : -1;
}
