/* The tcp backend as the rest of the pg layer sees it: a listener, and a
 * group made from an explicit list of peer addresses (what store-based
 * rendezvous and split both end in). */
#ifndef FTC_PG_TCP_H
#define FTC_PG_TCP_H

#include "pg/pg_int.h"

typedef struct ftc__pg_listener {
    int fd;
    int port;
    char addr[FTC_HOST_MAX + 16]; /* what peers dial: "host:port" */
} ftc__pg_listener;

/* Listens on an ephemeral port of host (NULL: FTC_PG_HOST, else this
 * host's name's first address, else 127.0.0.1) and fills l->addr. */
int ftc__pg_listen(const char *host, ftc__pg_listener *l);
void ftc__pg_listener_close(ftc__pg_listener *l);

/* Builds rank's member of a group whose members listen at addrs[0..size)
 * (addrs[rank] is l's address) on the hosts host_keys[0..size) name
 * (ftc__pg_host_key; NULL, or a 0: unknown, no hierarchy). Consumes the
 * listener (closed on return). group_id must be the same on every rank and
 * unique to this group; parent_ranks (may be NULL: identity) is copied. Blocks
 * until every connection is made or opts->connect_timeout_ms passes. */
int ftc__pg_create_from_peers(ftc_pg **out, ftc__pg_listener *l,
                              const char *const *addrs,
                              const uint64_t *host_keys, int rank, int size,
                              uint64_t group_id, const int *parent_ranks,
                              const ftc_pg_opts *opts);

/* The tcp member of group pg (initialised by ftc__pg_init) from the
 * members' addresses and host keys: connects the mesh by deadline_ns and
 * starts the engine. Consumes the listener. Fails with FTC_ECANCELED, blaming
 * nobody, once cancel (NULL: none) is signalled. On other failures the members
 * it blames go to rv (ftc_pg_backend_blame; NULL: nowhere). */
int ftc__tcp_build(ftc_pg *pg, ftc__pg_listener *l, const char *const *addrs,
                   const uint64_t *host_keys, uint64_t group_id,
                   int64_t deadline_ns, const ftc__event *cancel,
                   ftc_pg_backend_rendezvous *rv, void **impl);

/* The table's create: the store rendezvous of rendezvous.c (addresses
 * under "<prefix>/pg/rank/<r>"). Subgroups of tcp groups are built by
 * split.c from addresses exchanged over the parent. */
int ftc__tcp_create(const ftc_pg_backend_create_args *args, void **impl);

#ifdef FTC_TESTING
/* Shuts down the collective connection(s) to peer, as a network fault
 * would (chaos tests). */
void ftc__pg_testing_break_link(ftc_pg *pg, int peer);
#endif

#endif
