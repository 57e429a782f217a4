/* Whom this rank could not reach: the replica groups its cross-replica
 * process group blamed for failing (ftc_pg_failed_peers), that never met
 * it when a group was built (ftc_pg_create_failed_peers), or whose store
 * it could not reach to build one. The next round's arrival reports them;
 * the leader sends the union with its join, and the lighthouse leaves out
 * the groups the reports show cut off (ftc_lighthouse_opts.exclude_ms),
 * so that the others can go on during a partition between groups. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/addr.h"
#include "ft/manager/manager.h"

void ftc__manager_suspect(ftc_manager *m, const char *replica_id)
{
    if (replica_id == NULL || replica_id[0] == '\0' ||
        strlen(replica_id) >= FTC__QUORUM_STR_MAX) {
        return;
    }
    pthread_mutex_lock(&m->err_mu);
    bool seen = false;
    for (size_t i = 0; i < m->n_suspects && !seen; i++) {
        seen = strcmp(m->suspects[i], replica_id) == 0;
    }
    if (!seen && m->n_suspects < FTC__QUORUM_SUSPECTS_MAX) {
        memcpy(m->suspects[m->n_suspects++], replica_id,
               strlen(replica_id) + 1);
    }
    pthread_mutex_unlock(&m->err_mu);
}

void ftc__manager_suspect_ranks(ftc_manager *m, const int *ranks, int n,
                                const char (*ids)[FTC__QUORUM_STR_MAX],
                                size_t n_ids)
{
    for (int i = 0; i < n; i++) {
        if (ranks[i] >= 0 && (size_t)ranks[i] < n_ids) {
            ftc__manager_suspect(m, ids[ranks[i]]);
        }
    }
}

void ftc__manager_note_pg_failure(ftc_manager *m)
{
    int ranks[FTC__QUORUM_SUSPECTS_MAX];
    char(*ids)[FTC__QUORUM_STR_MAX] = NULL;
    int n = 0;
    size_t n_ids = 0;
    /* Under pg_mu only (no nesting with err_mu): copy, then record. No
     * round runs here, so the installed group cannot be replaced. */
    pthread_mutex_lock(&m->pg_mu);
    /* Each failed group once: a round that fails before it replaces the
     * group must not report the same peers again (they may have been
     * left out and be back meanwhile). */
    if (m->pg != NULL && m->pg_quorum_id != m->pg_blamed_quorum_id &&
        ftc_pg_status(m->pg) != 0) {
        m->pg_blamed_quorum_id = m->pg_quorum_id;
        n = ftc_pg_failed_peers(m->pg, ranks, FTC__QUORUM_SUSPECTS_MAX);
        n = n < FTC__QUORUM_SUSPECTS_MAX ? n : FTC__QUORUM_SUSPECTS_MAX;
        if (n > 0 && m->pg_n > 0) {
            ids = ftc__memdup(m->pg_members, m->pg_n * sizeof(*ids));
            n_ids = ids != NULL ? m->pg_n : 0;
        }
    }
    pthread_mutex_unlock(&m->pg_mu);
    ftc__manager_suspect_ranks(m, ranks, n,
                               (const char(*)[FTC__QUORUM_STR_MAX])ids, n_ids);
    ftc__free(ids);
}

/* A non-blocking connect to a member's healing server ("http://h:p"):
 * the fd, or -1 when it completed or cannot even start (*reached says
 * which: only silence is evidence of a partition, so what cannot start
 * counts as reached). */
static int start_connect(const char *address, bool *reached)
{
    const char *hp = strstr(address, "://");
    hp = hp != NULL ? hp + 3 : address;
    char host[FTC_HOST_MAX], port[16];
    int p;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG};
    struct addrinfo *ai = NULL;
    *reached = true;
    if (ftc__addr_split(hp, -1, host, sizeof(host), &p) != 0) {
        return -1;
    }
    snprintf(port, sizeof(port), "%d", p);
    if (getaddrinfo(host, port, &hints, &ai) != 0) {
        return -1;
    }
    int fd =
        socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 &&
        errno == EINPROGRESS) {
        *reached = false; /* until it completes */
    } else if (fd >= 0) {
        *reached =
            errno != EHOSTUNREACH && errno != ENETUNREACH && errno != ETIMEDOUT;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

size_t ftc__manager_probe(const ftc_lighthouse_quorum *q, const char *own_id,
                          ftc__deadline dl, const char **silent)
{
    size_t n = q->n_members < FTC__QUORUM_SUSPECTS_MAX
                   ? q->n_members
                   : FTC__QUORUM_SUSPECTS_MAX;
    struct pollfd pfd[FTC__QUORUM_SUSPECTS_MAX];
    bool reached[FTC__QUORUM_SUSPECTS_MAX];
    for (size_t i = 0; i < n; i++) {
        pfd[i] = (struct pollfd){.fd = -1, .events = POLLOUT};
        reached[i] = true;
        if (strcmp(q->members[i].replica_id, own_id) != 0) {
            pfd[i].fd = start_connect(q->members[i].address, &reached[i]);
        }
    }
    for (;;) {
        size_t waiting = 0;
        for (size_t i = 0; i < n; i++) {
            waiting += pfd[i].fd >= 0;
        }
        int64_t left = ftc__manager_left_ms(dl);
        if (waiting == 0 || left <= 0) {
            break;
        }
        if (poll(pfd, (nfds_t)n, (int)(left < 100 ? left : 100)) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        for (size_t i = 0; i < n; i++) {
            int err = 0;
            socklen_t len = sizeof(err);
            if (pfd[i].fd < 0 || pfd[i].revents == 0 ||
                getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
                continue;
            }
            /* Connected, or refused: the host answered either way. */
            reached[i] = err == 0 || err == ECONNREFUSED;
            close(pfd[i].fd);
            pfd[i].fd = -1;
        }
    }
    size_t n_silent = 0;
    for (size_t i = 0; i < n; i++) {
        if (pfd[i].fd >= 0) {
            close(pfd[i].fd);
        }
        if (!reached[i]) {
            silent[n_silent++] = q->members[i].replica_id;
        }
    }
    return n_silent;
}

int ftc__manager_take_suspects(ftc_manager *m, ftc__manager_arrival *a)
{
    const char *ids[FTC__QUORUM_SUSPECTS_MAX];
    ftc__quorum_member tmp;
    memset(&tmp, 0, sizeof(tmp));
    pthread_mutex_lock(&m->err_mu);
    for (size_t i = 0; i < m->n_suspects; i++) {
        ids[i] = m->suspects[i];
    }
    int rc = ftc__quorum_member_set_suspects(&tmp, ids, m->n_suspects);
    if (rc == 0) {
        m->n_suspects = 0;
    }
    pthread_mutex_unlock(&m->err_mu);
    a->suspects = tmp.suspects;
    a->suspects_len = tmp.suspects_len;
    a->n_suspects = tmp.n_suspects;
    return rc;
}
