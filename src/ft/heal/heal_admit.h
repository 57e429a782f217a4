/* Who the healing server admits (issue 15, exhaustion): the healers the
 * manager vouched for this round (the quorum's members that heal from
 * this rank, named by the lighthouse) are always let in, up to the
 * server's connection limit; everyone else, a stranger, shares what is
 * left after the reserve kept for them, at most a few connections from
 * one address. So held-open connections from elsewhere (slowloris) cannot
 * delay a heal; refusals are counted and logged as one summary line at a
 * time. */
#ifndef FTC_FT_HEAL_ADMIT_H
#define FTC_FT_HEAL_ADMIT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

/* Strangers' addresses tracked at once. */
#define FTC__HEAL_ADMIT_SLOTS 1024

typedef struct ftc__heal_admit {
    unsigned max_strangers;   /* the limit less the reserve */
    unsigned max_per_address; /* strangers from one address */
    pthread_mutex_t mu;       /* everything below */
    struct sockaddr_storage *vouched;
    size_t n_vouched;
    unsigned strangers; /* open stranger connections */
    struct ftc__heal_admit_slot {
        struct sockaddr_storage addr; /* ss_family 0: free */
        unsigned open;
    } slots[FTC__HEAL_ADMIT_SLOTS];
    atomic_uint_fast64_t refused; /* connections refused, ever */
    uint64_t refused_logged;      /* of those, reported so far */
    int64_t logged_ns;            /* when the last summary went out */
} ftc__heal_admit;

/* max_connections is the server's limit; reserve of it is kept for the
 * vouched healers; max_per_address caps one stranger address. */
void ftc__heal_admit_init(ftc__heal_admit *a, unsigned max_connections,
                          unsigned reserve, unsigned max_per_address);
void ftc__heal_admit_fini(ftc__heal_admit *a);
/* Replaces the vouched set with the hosts of addrs ("host:port" or
 * "https://host:port"; a name is resolved now). Thread-safe. */
void ftc__heal_admit_vouch(ftc__heal_admit *a, const char *const *addrs,
                           size_t n);

/* libmicrohttpd's accept policy (cls: the ftc__heal_admit). */
enum MHD_Result ftc__heal_admit_accept(void *cls, const struct sockaddr *addr,
                                       socklen_t len);
/* MHD_OPTION_NOTIFY_CONNECTION: counts strangers' connections open. */
void ftc__heal_admit_notify(void *cls, struct MHD_Connection *c,
                            void **socket_context,
                            enum MHD_ConnectionNotificationCode code);

#endif
