/* Which ranks of a tcp group share a host, for the hierarchical schedules:
 * ranks whose addresses have the same host part and whose FTC_PG_HOST_ID
 * is the same (the rendezvous record and the split record carry it). The
 * same test as a shared-memory lane's, made from what every rank knows of
 * every other, so every rank derives the same layout. */
#include <stdlib.h>

#include "base/addr.h"
#include "base/log.h"
#include "pg/tcp/tcp_int.h"

typedef struct keyed {
    char key[FTC_HOST_MAX + FTC__PG_HOST_ID_MAX + 1];
    int rank;
} keyed;

static int by_key_then_rank(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c != 0 ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

int ftc__tcp_hosts(ftc__tcp *g, const char *const *addrs,
                   const char *const *host_ids)
{
    int n = g->size;
    keyed *k = ftc__calloc((size_t)n, sizeof(*k));
    int *host_of = ftc__calloc((size_t)n, sizeof(*host_of));
    if (k == NULL || host_of == NULL) {
        ftc__free(k);
        ftc__free(host_of);
        return ftc__seterr(FTC_ENOMEM, "host layout: out of memory");
    }
    for (int r = 0; r < n; r++) {
        char host[FTC_HOST_MAX] = "";
        int port;
        if (ftc__addr_split(addrs[r], -1, host, sizeof(host), &port) != 0) {
            /* Never equal to another rank's key: a host of its own. */
            snprintf(host, sizeof(host), "#%d", r);
        }
        snprintf(k[r].key, sizeof(k[r].key), "%s|%s", host,
                 host_ids != NULL && host_ids[r] != NULL ? host_ids[r] : "");
        k[r].rank = r;
    }
    qsort(k, (size_t)n, sizeof(*k), by_key_then_rank);
    for (int i = 0; i < n; i++) {
        bool same = i > 0 && strcmp(k[i].key, k[i - 1].key) == 0;
        host_of[k[i].rank] = same ? host_of[k[i - 1].rank] : k[i].rank;
    }
    int rc = ftc__sched_hosts_init(&g->hosts, host_of, n, g->rank);
    ftc__free(k);
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
                     "a rank per host, or hosts of unequal sizes)",
                     (unsigned long long)g->group_id, g->rank);
    }
    return rc;
}
