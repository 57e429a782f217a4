/* Admission of an HTTP server's connections (http_admit.h). */
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>

#include "base/addr.h"
#include "base/base_int.h"
#include "ft/http_admit.h"

/* At most one summary of refusals this often. */
#define LOG_EVERY_NS (10 * 1000000000LL)
/* A stranger's connection is counted when it is accepted: the server's
 * thread pool accepts on several threads and tells that a connection
 * started only afterwards, so counting then let two accepts both take
 * the last place. The start turns the reservation into an open
 * connection; one that never starts (the server failed to set it up)
 * lapses after this long. */
#define PENDING_LAPSE_NS (5 * 1000000000LL)

void ftc__http_admit_init(ftc__http_admit *a, unsigned max_connections,
                          unsigned reserve, unsigned max_per_address,
                          const char *tag, const char *strangers_are)
{
    memset(a, 0, sizeof(*a));
    a->tag = tag;
    a->strangers_are = strangers_are;
    a->max_strangers =
        max_connections > reserve ? max_connections - reserve : 0;
    a->max_per_address = max_per_address;
    pthread_mutex_init(&a->mu, NULL);
}

void ftc__http_admit_fini(ftc__http_admit *a)
{
    ftc__free(a->named);
    pthread_mutex_destroy(&a->mu);
}

static bool same_ip(const struct sockaddr *x, const struct sockaddr *y)
{
    if (x->sa_family != y->sa_family) {
        return false;
    }
    if (x->sa_family == AF_INET) {
        return ((const struct sockaddr_in *)(const void *)x)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)(const void *)y)->sin_addr.s_addr;
    }
    return x->sa_family == AF_INET6 &&
           memcmp(&((const struct sockaddr_in6 *)(const void *)x)->sin6_addr,
                  &((const struct sockaddr_in6 *)(const void *)y)->sin6_addr,
                  sizeof(struct in6_addr)) == 0;
}

/* An IPv4-mapped IPv6 address as the IPv4 one (a dual-stack listener
 * sees those), into out; others as they are. */
static const struct sockaddr *plain(const struct sockaddr *sa,
                                    struct sockaddr_in *out)
{
    const struct sockaddr_in6 *a = (const void *)sa;
    if (sa->sa_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
        return sa;
    }
    memset(out, 0, sizeof(*out));
    out->sin_family = AF_INET;
    memcpy(&out->sin_addr, &a->sin6_addr.s6_addr[12], 4);
    return (const struct sockaddr *)out;
}

/* Copies sa (an IPv4 or IPv6 address) into out. */
static void keep(struct sockaddr_storage *out, const struct sockaddr *sa)
{
    memcpy(out, sa,
           sa->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                    : sizeof(struct sockaddr_in6));
}

void ftc__http_admit_vouch(ftc__http_admit *a, const char *const *addrs,
                           size_t n)
{
    struct sockaddr_storage *v = ftc__calloc(n > 0 ? n : 1, sizeof(*v));
    size_t k = 0;
    for (size_t i = 0; v != NULL && i < n; i++) {
        const char *hostport = strstr(addrs[i], "://");
        hostport = hostport != NULL ? hostport + 3 : addrs[i];
        char host[FTC_HOST_MAX];
        int port;
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
        if (ftc__addr_split(hostport, 0, host, sizeof(host), &port) == 0 &&
            getaddrinfo(host, NULL, &hints, &res) == 0) {
            struct sockaddr_in v4;
            const struct sockaddr *sa = plain(res->ai_addr, &v4);
            keep(&v[k++], sa);
        }
        if (res != NULL) {
            freeaddrinfo(res);
        }
    }
    pthread_mutex_lock(&a->mu);
    ftc__free(a->named);
    a->named = v;
    a->n_named = v != NULL ? k : 0;
    pthread_mutex_unlock(&a->mu);
}

/* Whether sa was vouched for (mu held). */
static bool vouched(const ftc__http_admit *a, const struct sockaddr *sa)
{
    for (size_t i = 0; i < a->n_named; i++) {
        if (same_ip((const struct sockaddr *)&a->named[i], sa)) {
            return true;
        }
    }
    for (size_t i = 0; i < a->n_seen; i++) {
        if (same_ip((const struct sockaddr *)&a->seen[i], sa)) {
            return true;
        }
    }
    return false;
}

void ftc__http_admit_vouch_client(ftc__http_admit *a, struct MHD_Connection *c)
{
    /* A connection admitted as vouched for (no stranger slot) has nothing
     * to add: most requests, which then scan nothing. */
    const union MHD_ConnectionInfo *ctx =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ctx == NULL || ctx->socket_context == NULL) {
        return;
    }
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL) {
        return;
    }
    struct sockaddr_in v4;
    const struct sockaddr *sa = plain(info->client_addr, &v4);
    if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    if (!vouched(a, sa)) {
        keep(&a->seen[a->next_seen], sa);
        a->next_seen = (a->next_seen + 1) % FTC__HTTP_ADMIT_SEEN;
        a->n_seen += a->n_seen < FTC__HTTP_ADMIT_SEEN;
    }
    pthread_mutex_unlock(&a->mu);
}

/* The slot of sa's address: its own, else a free one to take (NULL when
 * none is left; mu held). A scan: at most a thousand entries, once per
 * accepted connection. */
static struct ftc__http_admit_slot *slot_of(ftc__http_admit *a,
                                            const struct sockaddr *sa)
{
    struct ftc__http_admit_slot *free_slot = NULL;
    for (size_t i = 0; i < FTC__HTTP_ADMIT_SLOTS; i++) {
        struct ftc__http_admit_slot *s = &a->slots[i];
        if (s->addr.ss_family == 0) {
            free_slot = free_slot != NULL ? free_slot : s;
        } else if (same_ip((const struct sockaddr *)&s->addr, sa)) {
            return s;
        }
    }
    return free_slot;
}

/* Gives back s's reservations that never started (mu held). */
static void lapse_pending(ftc__http_admit *a, struct ftc__http_admit_slot *s,
                          int64_t now)
{
    if (s->pending > 0 && now - s->pending_ns > PENDING_LAPSE_NS) {
        a->strangers -= s->pending;
        s->pending = 0;
        if (s->open == 0) {
            s->addr.ss_family = 0;
        }
    }
}

static void log_refusals(ftc__http_admit *a)
{
    int64_t now = ftc__now_ns();
    uint64_t refused = atomic_load(&a->refused);
    if (now - a->logged_ns < LOG_EVERY_NS || refused == a->refused_logged) {
        return;
    }
    FTC_LOG_WARN(a->tag,
                 "refused %llu connections from %s (%u of theirs open, at "
                 "most %u, %u per address); the slots left are kept for the "
                 "job's own",
                 (unsigned long long)(refused - a->refused_logged),
                 a->strangers_are, a->strangers, a->max_strangers,
                 a->max_per_address);
    a->refused_logged = refused;
    a->logged_ns = now;
}

void ftc__http_admit_counts(ftc__http_admit *a, uint64_t *refused,
                            uint64_t *strangers)
{
    *refused = atomic_load(&a->refused);
    pthread_mutex_lock(&a->mu);
    *strangers = a->strangers;
    pthread_mutex_unlock(&a->mu);
}

enum MHD_Result ftc__http_admit_accept(void *cls, const struct sockaddr *addr,
                                       socklen_t len)
{
    (void)len;
    ftc__http_admit *a = cls;
    struct sockaddr_in v4;
    const struct sockaddr *sa = plain(addr, &v4);
    pthread_mutex_lock(&a->mu);
    bool ok = vouched(a, sa);
    if (!ok) {
        int64_t now = ftc__now_ns();
        struct ftc__http_admit_slot *s = slot_of(a, sa);
        if (s != NULL) {
            lapse_pending(a, s, now);
        }
        ok = s != NULL && a->strangers < a->max_strangers &&
             (s->addr.ss_family == 0 ||
              s->open + s->pending < a->max_per_address);
        if (ok) {
            if (s->addr.ss_family == 0) {
                keep(&s->addr, sa);
            }
            s->pending++;
            s->pending_ns = now;
            a->strangers++;
        }
    }
    if (!ok) {
        atomic_fetch_add(&a->refused, 1);
        log_refusals(a);
    }
    pthread_mutex_unlock(&a->mu);
    return ok ? MHD_YES : MHD_NO;
}

void ftc__http_admit_notify(void *cls, struct MHD_Connection *c,
                            void **socket_context,
                            enum MHD_ConnectionNotificationCode code)
{
    ftc__http_admit *a = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        /* Every connection of these servers (lighthouse, heal) carries the
         * control plane: an answer sent into a partition arrives within a
         * second of its end. */
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (fd != NULL) {
            ftc__sock_cap_rto(fd->connect_fd);
        }
    }
    pthread_mutex_lock(&a->mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        struct sockaddr_in v4;
        const struct sockaddr *sa =
            info != NULL ? plain(info->client_addr, &v4) : NULL;
        struct ftc__http_admit_slot *s =
            sa != NULL && !vouched(a, sa) ? slot_of(a, sa) : NULL;
        if (s != NULL) {
            if (s->addr.ss_family != 0 && s->pending > 0) {
                s->pending--; /* its reservation at accept */
            } else {
                /* Vouched for at accept, no longer: it counts from now. */
                if (s->addr.ss_family == 0) {
                    keep(&s->addr, sa);
                }
                a->strangers++;
            }
            s->open++;
        }
        *socket_context = s; /* NULL: a healer's (or untracked) */
    } else if (*socket_context != NULL) {
        struct ftc__http_admit_slot *s = *socket_context;
        if (--s->open == 0 && s->pending == 0) {
            s->addr.ss_family = 0;
        }
        a->strangers--;
    }
    pthread_mutex_unlock(&a->mu);
}
