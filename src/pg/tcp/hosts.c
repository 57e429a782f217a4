/* Which ranks of a tcp group share a host, for the hierarchical schedules:
 * ranks with the same host key (ftc__pg_host_key: one kernel, one network
 * namespace, one FTC_PG_HOST_ID), which the rendezvous and split records
 * carry. Every rank sorts the same keys, so every rank derives the same
 * layout. */
#include <stdlib.h>

#include "base/log.h"
#include "pg/tcp/tcp_int.h"

typedef struct keyed {
    uint64_t key;
    int rank;
} keyed;

static int by_key_then_rank(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* host_of[r] = the lowest rank with r's key; 0 when a key is unknown. */
static int map_hosts(const uint64_t *keys, int n, int *host_of)
{
    keyed *k = ftc__calloc((size_t)n, sizeof(*k));
    if (k == NULL) {
        return ftc__seterr(FTC_ENOMEM, "host layout: out of memory");
    }
    for (int r = 0; r < n; r++) {
        k[r] = (keyed){keys[r], r};
    }
    qsort(k, (size_t)n, sizeof(*k), by_key_then_rank);
    for (int i = 0; i < n; i++) {
        bool same = i > 0 && k[i].key == k[i - 1].key;
        host_of[k[i].rank] = same ? host_of[k[i - 1].rank] : k[i].rank;
    }
    ftc__free(k);
    return 0;
}

int ftc__tcp_hosts(ftc__tcp *g, const uint64_t *host_keys)
{
    int n = g->size;
    bool known = host_keys != NULL;
    for (int r = 0; known && r < n; r++) {
        known = host_keys[r] != 0;
    }
    int *host_of = ftc__calloc((size_t)n, sizeof(*host_of));
    int rc = host_of == NULL
                 ? ftc__seterr(FTC_ENOMEM, "host layout: out of memory")
                 : 0;
    if (rc == 0 && known) {
        rc = map_hosts(host_keys, n, host_of);
    }
    /* Unknown keys: every rank its own host, which is no layout. */
    for (int r = 0; rc == 0 && !known && r < n; r++) {
        host_of[r] = r;
    }
    if (rc == 0) {
        rc = ftc__sched_hosts_init(&g->hosts, host_of, n, g->rank);
    }
    ftc__free(host_of);
    if (rc == 0 && g->hosts.nhost > 0) {
        FTC_LOG_INFO("pg.hosts",
                     "group %016llx rank %d: %d hosts of %d ranks, this one "
                     "index %d of host %d (hierarchical collectives)",
                     (unsigned long long)g->group_id, g->rank, g->hosts.nhost,
                     g->hosts.per_host, g->hosts.local, g->hosts.host);
    } else if (rc == 0) {
        FTC_LOG_INFO("pg.hosts",
                     "group %016llx rank %d: no two-level layout (one host, "
                     "a rank per host, hosts of unequal sizes, or unknown)",
                     (unsigned long long)g->group_id, g->rank);
    }
    return rc;
}
