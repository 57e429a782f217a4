/* Starts the embedded lighthouse (ftc_lighthouse_create, ftc/ft.h) for
 * `ftc run`, or passes the user's address through. Builds without ftc/ft.h
 * need --lighthouse. */
#include "run/run_lighthouse.h"

#include <stdio.h>
#include <stdlib.h>

#include "ftc/ftc.h"

#if defined(__has_include)
#if __has_include("ftc/ft.h")
#include "base/base_int.h"
#include "ftc/ft.h"
#define RUN_EMBEDDED_LIGHTHOUSE 1
#endif
#endif

#ifdef RUN_EMBEDDED_LIGHTHOUSE

struct run_lighthouse {
    ftc_lighthouse *lh;
};

static int start_embedded(run_lighthouse **out, const char *host,
                          const char *job, int min_replicas, const char *token,
                          char *addr, size_t cap)
{
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    char bind[FTC_HOST_MAX + 16];
    ftc__addr_join(host, 0, bind, sizeof(bind));
    o.bind = bind;
    o.min_replicas = (uint64_t)min_replicas;
    o.token = token;
    /* The job's TLS certificate serves the lighthouse too. */
    o.tls_cert = getenv("FTC_TLS_CERT");
    o.tls_key = getenv("FTC_TLS_KEY");
    ftc_lighthouse *lh = NULL;
    char spec[128];
    snprintf(spec, sizeof(spec), "%s:min_replicas=%d", job, min_replicas);
    int rc = ftc_lighthouse_create(&o, &lh);
    if (rc == 0) {
        rc = ftc_lighthouse_configure_job(lh, spec);
    }
    if (rc == 0) {
        size_t n = 0;
        if (o.tls_cert != NULL) {
            n = (size_t)snprintf(addr, cap, "https://");
        }
        rc = ftc_lighthouse_address(lh, addr + n, cap - n);
    }
    run_lighthouse *w = rc == 0 ? ftc__malloc(sizeof(*w)) : NULL;
    if (w == NULL) {
        fprintf(stderr, "ftc run: cannot start the lighthouse: %s\n",
                rc != 0 ? ftc_last_error() : "out of memory");
        ftc_lighthouse_destroy(lh);
        return -1;
    }
    w->lh = lh;
    *out = w;
    return 0;
}

void run_lighthouse_stop(run_lighthouse *w)
{
    if (w != NULL) {
        ftc_lighthouse_destroy(w->lh);
        ftc__free(w);
    }
}

#else

static int start_embedded(run_lighthouse **out, const char *host,
                          const char *job, int min_replicas, const char *token,
                          char *addr, size_t cap)
{
    (void)out;
    (void)token;
    (void)host;
    (void)job;
    (void)min_replicas;
    (void)addr;
    (void)cap;
    fprintf(stderr, "ftc run: this build has no embedded lighthouse; "
                    "pass --lighthouse HOST:PORT\n");
    return -1;
}

void run_lighthouse_stop(run_lighthouse *w)
{
    (void)w;
}

#endif

int run_lighthouse_start(run_lighthouse **out, const char *given,
                         const char *host, const char *job, int min_replicas,
                         const char *token, char *addr, size_t cap)
{
    *out = NULL;
    if (given != NULL) {
        if ((size_t)snprintf(addr, cap, "%s", given) >= cap) {
            fprintf(stderr, "ftc run: --lighthouse address too long\n");
            return -1;
        }
        return 0;
    }
    return start_embedded(out, host, job, min_replicas, token, addr, cap);
}
