/* Thread creation with blocked signals and a name for debuggers. */
#include "base/thread.h"

#include <signal.h>
#include <stdio.h>

#include "base/err.h"

int ftc__thread_start(pthread_t *t, const char *name, void *(*fn)(void *),
                      void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        return ftc__seterr_errno(rc, "pthread_create(%s)", name);
    }
    char short_name[16];
    snprintf(short_name, sizeof(short_name), "%s", name);
    pthread_setname_np(*t, short_name);
    return 0;
}
