/* One `ftc bench store` client: connect, prepare its keys, line up with the
 * others, then run one op in a closed loop (or R barrier rounds), timing
 * every call. Keys follow ../shared/anchors/tcpstore_bench.py. */
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "bench/cmd_bench.h"
#include "ftc/ftc.h"

#define CALL_TIMEOUT_MS 120000
#define SMALL_KEYS 1000 /* distinct keys per client for small values */
#define BIG_KEYS 8      /* ... and for values of 64 KiB and more */

const char *const bench_op_names[BENCH_NOPS + 1] = {"set", "get", "add",
                                                    "barrier", NULL};

const char *bench_op_name(bench_op op)
{
    return bench_op_names[op];
}

int bench_op_parse(const char *name)
{
    for (int i = 0; i < BENCH_NOPS; i++) {
        if (strcmp(name, bench_op_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

void bench_result_free(bench_result *r)
{
    ftc__free(r->exits);
    r->exits = NULL;
}

typedef struct client {
    const bench_cell *cell;
    int id;
    ftc_store_client *c;
    char (*keys)[96];
    int nkeys;
    char ctr[96]; /* the counter every add hits */
    uint8_t *value;
} client;

static int fail(bench_result *r, int rc, const char *what)
{
    r->rc = rc;
    snprintf(r->err, sizeof(r->err), "%s: %s", what, ftc_last_error());
    return rc;
}

static int prepare(client *k, bench_result *r)
{
    const bench_cell *cell = k->cell;
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.dialect = cell->dialect;
    o.connect_timeout_ms = CALL_TIMEOUT_MS;
    o.max_value_bytes = cell->value_bytes + 1024;
    int rc = ftc_store_client_connect(cell->addr, &o, &k->c);
    if (rc != 0) {
        return fail(r, rc, "connect");
    }
    k->nkeys = cell->value_bytes >= 65536 ? BIG_KEYS : SMALL_KEYS;
    k->keys = ftc__calloc((size_t)k->nkeys, sizeof(*k->keys));
    k->value = ftc__malloc(cell->value_bytes + 1);
    if (k->keys == NULL || k->value == NULL) {
        return fail(r, FTC_ENOMEM, "keys");
    }
    memset(k->value, 'v', cell->value_bytes);
    snprintf(k->ctr, sizeof(k->ctr), "%s/ctr", cell->prefix);
    for (int i = 0; i < k->nkeys; i++) {
        snprintf(k->keys[i], sizeof(k->keys[i]), "%s/c%d/k%d", cell->prefix,
                 k->id, i);
    }
    for (int i = 0; cell->op == BENCH_GET && i < k->nkeys; i++) {
        rc = ftc_store_client_set(k->c, k->keys[i], k->value, cell->value_bytes,
                                  CALL_TIMEOUT_MS);
        if (rc != 0) {
            return fail(r, rc, "set the keys to get");
        }
    }
    return 0;
}

static int one_op(client *k, uint64_t i)
{
    const bench_cell *cell = k->cell;
    const char *key = k->keys[i % (uint64_t)k->nkeys];
    if (cell->op == BENCH_SET) {
        return ftc_store_client_set(k->c, key, k->value, cell->value_bytes,
                                    CALL_TIMEOUT_MS);
    }
    if (cell->op == BENCH_ADD) {
        return ftc_store_client_add(k->c, k->ctr, 1, NULL, CALL_TIMEOUT_MS);
    }
    void *v = NULL;
    size_t n = 0;
    int rc = ftc_store_client_get(k->c, key, &v, &n, CALL_TIMEOUT_MS);
    if (rc == 0 && n != cell->value_bytes) {
        rc = FTC_EPROTO;
    }
    ftc_free(v);
    return rc;
}

/* A closed loop for duration_ms. Small ops are timed in batches of 50
 * between clock checks, as the PyTorch anchor does. */
static void run_throughput(client *k, bench_result *r)
{
    const bench_cell *cell = k->cell;
    int batch = cell->value_bytes >= 65536 ? 1 : 50;
    r->t0_ns = ftc__now_ns();
    int64_t end = r->t0_ns + cell->duration_ms * 1000000;
    uint64_t i = 0;
    int64_t now = r->t0_ns;
    while (now < end) {
        for (int b = 0; b < batch; b++, i++) {
            int rc = one_op(k, i);
            int64_t after = ftc__now_ns();
            if (rc != 0) {
                fail(r, rc, bench_op_name(cell->op));
                return;
            }
            bench_hist_add(&r->hist, (uint64_t)(after - now));
            now = after;
        }
    }
    /* set sends no reply: one round trip on the same connection makes
     * the time include the server applying every set. */
    if (cell->op == BENCH_SET) {
        char sync[96];
        snprintf(sync, sizeof(sync), "%s/sync", cell->prefix);
        int rc = ftc_store_client_add(k->c, sync, 0, NULL, CALL_TIMEOUT_MS);
        if (rc != 0) {
            fail(r, rc, "sync");
            return;
        }
    }
    r->ops = i;
    r->t1_ns = ftc__now_ns();
}

/* R rounds of c10d's store barrier (ftc_store_client_barrier: one request
 * per client against ftc's server, plain ops against PyTorch's). */
static void run_barrier(client *k, bench_result *r)
{
    const bench_cell *cell = k->cell;
    r->exits = ftc__calloc((size_t)cell->rounds, sizeof(*r->exits));
    if (r->exits == NULL) {
        fail(r, FTC_ENOMEM, "barrier");
        return;
    }
    r->t0_ns = ftc__now_ns();
    for (int round = 0; round < cell->rounds; round++) {
        char key[96];
        snprintf(key, sizeof(key), "%s/b%d", cell->prefix, round);
        int rc = ftc_store_client_barrier(k->c, key, k->id, cell->clients, NULL,
                                          CALL_TIMEOUT_MS);
        if (rc != 0) {
            fail(r, rc, "barrier");
            return;
        }
        r->exits[round] = ftc__now_ns();
        r->nexits = round + 1;
    }
    r->ops = (uint64_t)cell->rounds;
    r->t1_ns = ftc__now_ns();
}

void bench_client_run(const bench_cell *cell, int id, bench_result *r,
                      void (*start)(void *arg), void *arg)
{
    memset(r, 0, sizeof(*r));
    client k = {.cell = cell, .id = id};
    prepare(&k, r);
    start(arg); /* also after a failure: the others must not wait for it */
    if (r->rc == 0 && cell->op == BENCH_BARRIER) {
        run_barrier(&k, r);
    } else if (r->rc == 0) {
        run_throughput(&k, r);
    }
    ftc_store_client_close(k.c);
    ftc__free(k.keys);
    ftc__free(k.value);
}
