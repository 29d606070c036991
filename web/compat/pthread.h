/* The pthread calls the library makes, for the browser build: wasi-libc (Debian's, 2022) has no
 * pthread.h, and the page's module runs on one thread, so a once-flag and an uncontended mutex are
 * all that is needed. */
#ifndef WGT_WEB_COMPAT_PTHREAD_H
#define WGT_WEB_COMPAT_PTHREAD_H
typedef int pthread_once_t;
typedef int pthread_mutex_t;
#define PTHREAD_ONCE_INIT 0
#define PTHREAD_MUTEX_INITIALIZER 0
static inline int pthread_once(pthread_once_t *once, void (*init)(void))
{
    if (!*once) {
        *once = 1;
        init();
    }
    return 0;
}
static inline int pthread_mutex_lock(pthread_mutex_t *m) { (void)m; return 0; }
static inline int pthread_mutex_unlock(pthread_mutex_t *m) { (void)m; return 0; }
#endif
