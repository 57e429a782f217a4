/* Test harness for process groups (see pg_kit.h). */
#include "pg_kit.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg/tcp/tcp_int.h"

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

static void *member_main(void *p)
{
    member *m = p;
    ftc_pg *pg = NULL;
    m->rc = ftc__pg_create_from_peers(&pg, &m->l, m->addrs, NULL, m->rank, m->n,
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

static ftc_store_server *server;
static char server_addr[64];

static void stop_store(void)
{
    ftc_store_server_destroy(server);
    server = NULL;
}

const char *pgt_store(void)
{
    if (server == NULL) {
        ftc_store_server_opts o;
        ftc_store_server_opts_init(&o);
        o.bind_host = "127.0.0.1";
        TK_OK(ftc_store_server_create(&o, &server));
        snprintf(server_addr, sizeof(server_addr), "127.0.0.1:%d",
                 ftc_store_server_port(server));
        atexit(stop_store);
    }
    return server_addr;
}

int pgt_create(const char *store_addr, const char *name, int rank, int n,
               const ftc_pg_opts *opts, ftc_pg **out)
{
    ftc_store_client *c = NULL;
    int rc = ftc_store_client_connect(store_addr, NULL, &c);
    if (rc == 0) {
        rc = ftc_pg_create(c, name, rank, n, opts, out);
    }
    ftc_store_client_close(c);
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

void pgt_assert_unpublished(ftc_store_client *c, const char *prefix)
{
    char key[128];
    snprintf(key, sizeof(key), "%s/backend/group", prefix);
    const char *keys[] = {key};
    int ready = -1;
    assert_int_equal(ftc_store_client_check(c, keys, 1, &ready, 1000), 0);
    assert_int_equal(ready, 0);
}

int pgt_lane_segments(void)
{
    int n = 0;
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        n += strstr(line, "memfd:ftc-pg-lane") != NULL;
    }
    if (f != NULL) {
        fclose(f);
    }
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300], target[256];
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, target, sizeof(target) - 1);
        if (k > 0) {
            target[k] = '\0';
            n += strstr(target, "memfd:ftc-pg-lane") != NULL;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

int pgt_forgery_caught(ftc_pg *pg, pgt_forgery *f)
{
    int r = ftc_pg_rank(pg);
    float x[4] = {1, 2, 3, 4}, before[4];
    ftc_tensor t = ftc_tensor_cpu(x, 4, FTC_DTYPE_F32);
    ftc_work *w;
    int rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
    rc = rc == 0 ? pgt_wait(w) : rc;
    if (rc != 0) {
        return rc;
    }
    if (r == 1) {
        TK_WAIT_UNTIL(atomic_load(&f->first_done) != 0, 10000);
        f->plant(pg, f->arg);
        atomic_store(&f->planted, 1);
    } else {
        atomic_store(&f->first_done, 1);
        TK_WAIT_UNTIL(atomic_load(&f->planted) != 0, 10000);
    }
    memcpy(before, x, sizeof(before));
    rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
    rc = rc == 0 ? pgt_wait(w) : rc;
    if (r == 0) {
        if (rc != f->want || !strstr(ftc_last_error(), f->word) ||
            !strstr(ftc_last_error(), "rank 1 (127.0.0.1:") ||
            memcmp(before, x, sizeof(before)) != 0) {
            return ftc__seterr(FTC_EPROTO, "rank 0 got %s: %s",
                               ftc_err_name(rc), ftc_last_error());
        }
        return 0;
    }
    /* Rank 1's op may have completed with rank 0's genuine data; its next
     * one hears that rank 0 failed, with the code and rank 0's name. */
    if (rc == 0) {
        rc = ftc_pg_barrier(pg, NULL, &w);
        rc = rc == 0 ? pgt_wait(w) : rc;
    }
    if (rc != f->want || !strstr(ftc_last_error(), "rank 0 (127.0.0.1:")) {
        return ftc__seterr(FTC_EPROTO, "rank 1 got %s: %s", ftc_err_name(rc),
                           ftc_last_error());
    }
    return 0;
}

int pgt_lanes(ftc_pg *pg)
{
    ftc__tcp *g = pg->impl;
    int n = 0;
    for (int i = 0; i < g->size * g->streams; i++) {
        n += g->coll[i].lane != NULL;
    }
    return n;
}
