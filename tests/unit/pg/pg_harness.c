/* Test harness for process groups (see pg_harness.h). */
#include "pg_harness.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg/tcp/tcp.h"

typedef struct member {
    pthread_t t;
    int rank, n;
    const ftc_pg_opts *opts;
    ftc__pg_listener l;
    const char **addrs;
    pgt_fn fn;
    void *arg;
    int rc;
    char err[256];
} member;

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    }
    return h;
}

static void *member_main(void *p)
{
    member *m = p;
    ftc_pg *pg = NULL;
    m->rc = ftc__pg_create_from_peers(&pg, &m->l, m->addrs, m->rank, m->n,
                                      0x7e57, NULL, m->opts);
    if (m->rc == 0) {
        m->rc = m->fn(pg, m->arg);
    }
    if (m->rc != 0) {
        snprintf(m->err, sizeof(m->err), "%s", ftc_last_error());
    }
    ftc_pg_destroy(pg);
    return NULL;
}

void pgt_run_threads(int n, const ftc_pg_opts *opts, pgt_fn fn, void *arg)
{
    member *ms = calloc((size_t)n, sizeof(*ms));
    const char **addrs = calloc((size_t)n, sizeof(*addrs));
    for (int i = 0; i < n; i++) {
        TK_OK(ftc__pg_listen("127.0.0.1", &ms[i].l));
        addrs[i] = ms[i].l.addr;
        ms[i].rank = i;
        ms[i].n = n;
        ms[i].opts = opts;
        ms[i].addrs = addrs;
        ms[i].fn = fn;
        ms[i].arg = arg;
    }
    for (int i = 0; i < n; i++) {
        assert_int_equal(pthread_create(&ms[i].t, NULL, member_main, &ms[i]),
                         0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(ms[i].t, NULL);
    }
    for (int i = 0; i < n; i++) {
        if (ms[i].rc != 0) {
            fail_msg("rank %d of %d: %s (%s)", i, n, ftc_err_name(ms[i].rc),
                     ms[i].err);
        }
    }
    free(addrs);
    free(ms);
}

/* Writes dir/name.rank atomically (write, then rename). */
static int publish(const char *dir, const char *name, int rank,
                   const char *addr)
{
    char tmp[512], path[512];
    snprintf(tmp, sizeof(tmp), "%s/%s.%d.tmp", dir, name, rank);
    snprintf(path, sizeof(path), "%s/%s.%d", dir, name, rank);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        return FTC_ESYS;
    }
    fputs(addr, f);
    fclose(f);
    return rename(tmp, path) == 0 ? 0 : FTC_ESYS;
}

static int read_addr(const char *dir, const char *name, int rank, char *out,
                     size_t cap)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.%d", dir, name, rank);
    int64_t end = tk_now_ms() + tk_ms(20000);
    int pause = 1;
    for (;;) {
        FILE *f = fopen(path, "r");
        if (f != NULL) {
            char *got = fgets(out, (int)cap, f);
            fclose(f);
            return got != NULL ? 0 : FTC_EPROTO;
        }
        if (tk_now_ms() > end) {
            return FTC_ETIMEDOUT;
        }
        tk_pause_ms(pause);
        pause = pause < 20 ? pause * 2 : 20;
    }
}

int pgt_create_in_dir(const char *dir, const char *name, int rank, int n,
                      const ftc_pg_opts *opts, ftc_pg **out)
{
    ftc__pg_listener l;
    int rc = ftc__pg_listen("127.0.0.1", &l);
    if (rc == 0) {
        rc = publish(dir, name, rank, l.addr);
    }
    char(*bufs)[FTC_HOST_MAX + 16] = calloc((size_t)n, sizeof(*bufs));
    const char **addrs = calloc((size_t)n, sizeof(*addrs));
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = read_addr(dir, name, i, bufs[i], sizeof(bufs[i]));
        addrs[i] = bufs[i];
    }
    if (rc == 0) {
        rc = ftc__pg_create_from_peers(out, &l, addrs, rank, n, hash_name(name),
                                       NULL, opts);
    } else {
        ftc__pg_listener_close(&l);
    }
    free(bufs);
    free(addrs);
    return rc;
}

/* Small integers: exact in every dtype, and their sums and products over
 * up to 8 ranks stay exact (and inside i8 for sums). */
double pgt_value(int seed, int rank, size_t i, int dtype, int op)
{
    uint64_t x = (uint64_t)seed * 2654435761u + (uint64_t)rank * 40503u +
                 i * 2246822519u;
    x ^= x >> 13;
    x *= 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    if (op == FTC_OP_PROD) {
        int v = (int)(x % 3); /* 1, 2 or -1 */
        double p = v == 0 ? 1 : (v == 1 ? 2 : -1);
        return dtype == FTC_DTYPE_U8 ? (p < 0 ? 1 : p) : p;
    }
    int v = (int)(x % 15);
    if (dtype == FTC_DTYPE_U8) {
        return v;
    }
    return v - 7;
}

int pgt_wait(ftc_work *w)
{
    int rc = ftc_work_wait(w, tk_ms(60000));
    ftc_work_release(w);
    return rc;
}
