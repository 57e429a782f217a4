/* Who an HTTP server of the ft layer admits (issue 15, exhaustion):
 * addresses vouched for are always let in, up to the server's connection
 * limit; everyone else, a stranger, shares what is left after the reserve
 * kept for them, at most a few connections from one address. The heal
 * server vouches for the healers its manager names each round (the
 * lighthouse's quorum says who heals from this rank); the lighthouse for
 * the addresses that sent its token. So held-open connections from
 * elsewhere (slowloris) cannot lock the job's own members out.
 * Refusals are counted and logged as one summary line at a time. */
#ifndef FTC_FT_HTTP_ADMIT_H
#define FTC_FT_HTTP_ADMIT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

/* Strangers' addresses tracked at once, and addresses remembered for
 * having sent the token. */
#define FTC__HTTP_ADMIT_SLOTS 1024
#define FTC__HTTP_ADMIT_SEEN 1024

typedef struct ftc__http_admit {
    const char *tag;           /* log tag, e.g. "heal.refused_connections" */
    const char *strangers_are; /* "addresses not healing from this rank" */
    unsigned max_strangers;    /* the limit less the reserve */
    unsigned max_per_address;  /* strangers from one address */
    pthread_mutex_t mu;        /* everything below */
    struct sockaddr_storage *named; /* ftc__http_admit_vouch's */
    size_t n_named;
    struct sockaddr_storage seen[FTC__HTTP_ADMIT_SEEN]; /* a ring */
    size_t n_seen, next_seen;
    unsigned strangers; /* stranger connections open or being set up */
    struct ftc__http_admit_slot {
        struct sockaddr_storage addr; /* ss_family 0: free */
        unsigned open;
        unsigned pending;   /* accepted, not yet started */
        int64_t pending_ns; /* when the last of those was accepted */
    } slots[FTC__HTTP_ADMIT_SLOTS];
    atomic_uint_fast64_t refused; /* connections refused, ever */
    uint64_t refused_logged;      /* of those, reported so far */
    int64_t logged_ns;            /* when the last summary went out */
} ftc__http_admit;

/* max_connections is the server's limit; reserve of it is kept for the
 * vouched addresses; max_per_address caps one stranger address. tag and
 * strangers_are (static strings) word the refusals' log line. */
void ftc__http_admit_init(ftc__http_admit *a, unsigned max_connections,
                          unsigned reserve, unsigned max_per_address,
                          const char *tag, const char *strangers_are);
void ftc__http_admit_fini(ftc__http_admit *a);
/* Replaces the named set with the hosts of addrs ("host:port", or a URL
 * "http[s]://host:port"; a name is resolved now). Thread-safe. */
void ftc__http_admit_vouch(ftc__http_admit *a, const char *const *addrs,
                           size_t n);
/* Remembers the client of c (which proved it holds the token), the oldest
 * of FTC__HTTP_ADMIT_SEEN giving way; only a connection admitted as a
 * stranger's is looked at (the others cost nothing). Thread-safe. */
void ftc__http_admit_vouch_client(ftc__http_admit *a, struct MHD_Connection *c);

/* Connections refused so far, and strangers' connections open now. */
void ftc__http_admit_counts(ftc__http_admit *a, uint64_t *refused,
                            uint64_t *strangers);

/* libmicrohttpd's accept policy (cls: the ftc__http_admit). */
enum MHD_Result ftc__http_admit_accept(void *cls, const struct sockaddr *addr,
                                       socklen_t len);
/* MHD_OPTION_NOTIFY_CONNECTION: counts strangers' connections open, and
 * caps each connection's retransmission timeout (ftc__sock_cap_rto). */
void ftc__http_admit_notify(void *cls, struct MHD_Connection *c,
                            void **socket_context,
                            enum MHD_ConnectionNotificationCode code);

#endif
