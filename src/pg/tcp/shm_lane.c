/* Setting up the shared-memory lanes of a new group, on the collective
 * connections the mesh just made (blocking, until the create's deadline):
 * the lower rank of each pair offers a fresh memfd segment by its pid, fd
 * number and a random nonce written inside it; the higher rank opens
 * /proc/<pid>/fd/<fd>, checks that it is such a segment holding that
 * nonce, maps it and answers. Only a segment both hold becomes a lane, so
 * both ends always agree; anything else keeps the TCP connection. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pg/tcp/tcp_int.h"

#define MAGIC "FTCSHM1"
#define MEMFD_NAME "ftc-pg-lane"
/* Bytes of a host identity (FTC_PG_HOST_ID), NUL-padded. */
#define HOST_ID FTC__PG_HOST_ID_MAX
/* pid, fd, ring bytes, nonce, the offerer's host identity */
#define OFFER_BODY (4 + 4 + 8 + FTC__SHM_NONCE + HOST_ID)
#define REASON_MAX 256

/* The segment's first page. */
typedef struct seg_header {
    char magic[8];
    uint64_t ring;
    uint8_t nonce[FTC__SHM_NONCE];
} seg_header;

/* Closes a segment's memfd with the raw system call. ThreadSanitizer
 * does not see memfd_create make a descriptor, and libuv (the store
 * server's loop, often in the same process) closes its own with the raw
 * call too: a memfd given the number of a connection libuv once read
 * would make our close(2) look like a race with that old read. */
static void close_memfd(int fd)
{
    syscall(SYS_close, fd);
}

static void lane_free(ftc__shm_lane *l)
{
    if (l == NULL) {
        return;
    }
    if (l->map != NULL) {
        munmap(l->map, FTC__SHM_SEG_BYTES);
    }
    if (l->memfd >= 0) {
        close_memfd(l->memfd);
    }
    ftc__free(l);
}

void ftc__shm_lane_close(ftc__chan *c)
{
    lane_free(c->lane);
    c->lane = NULL;
}

/* Points the lane at its rings: the lower rank sends on the first. */
static void lane_wire(ftc__shm_lane *l, bool lower)
{
    ftc__shm_ctl *ctl = (ftc__shm_ctl *)(l->map + FTC__SHM_CTL_OFF);
    uint8_t *data = l->map + FTC__SHM_DATA_OFF;
    int t = lower ? 0 : 1;
    l->tx_ctl = &ctl[t];
    l->rx_ctl = &ctl[1 - t];
    l->tx = data + (size_t)t * FTC__SHM_RING;
    l->rx = data + (size_t)(1 - t) * FTC__SHM_RING;
}

static ftc__shm_lane *lane_new(void)
{
    ftc__shm_lane *l = ftc__calloc(1, sizeof(*l));
    if (l != NULL) {
        l->memfd = -1;
    }
    return l;
}

int ftc__shm_lane_create(ftc__chan *c, uint8_t nonce[FTC__SHM_NONCE], char *why,
                         size_t cap)
{
    _Static_assert(sizeof(ftc__shm_ctl) == 256, "control lines");
    _Static_assert(2 * sizeof(ftc__shm_ctl) <= 4096, "control page");
    ftc__shm_lane *l = lane_new();
    if (l == NULL) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    l->memfd = memfd_create(MEMFD_NAME, MFD_CLOEXEC);
    if (l->memfd < 0 || ftruncate(l->memfd, FTC__SHM_SEG_BYTES) != 0) {
        snprintf(why, cap, "memfd of %zu bytes: %s", FTC__SHM_SEG_BYTES,
                 strerror(errno));
        lane_free(l);
        return -1;
    }
    void *m = mmap(NULL, FTC__SHM_SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                   l->memfd, 0);
    if (m == MAP_FAILED ||
        getrandom(nonce, FTC__SHM_NONCE, 0) != FTC__SHM_NONCE) {
        snprintf(why, cap, "mapping the segment: %s", strerror(errno));
        if (m != MAP_FAILED) {
            munmap(m, FTC__SHM_SEG_BYTES);
        }
        lane_free(l);
        return -1;
    }
    l->map = m;
    seg_header *h = m;
    memcpy(h->magic, MAGIC, sizeof(h->magic));
    h->ring = FTC__SHM_RING;
    memcpy(h->nonce, nonce, FTC__SHM_NONCE);
    lane_wire(l, true);
    c->lane = l;
    return 0;
}

int ftc__shm_lane_open(ftc__chan *c, uint32_t pid, int32_t fd, uint64_t ring,
                       const uint8_t nonce[FTC__SHM_NONCE], char *why,
                       size_t cap)
{
    if (ring != FTC__SHM_RING || fd < 0) {
        snprintf(why, cap, "its ring of %llu bytes differs from this rank's %u",
                 (unsigned long long)ring, FTC__SHM_RING);
        return -1;
    }
    char path[64], target[128];
    snprintf(path, sizeof(path), "/proc/%u/fd/%d", pid, fd);
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n < 0) {
        snprintf(why, cap, "%s: %s (not this host, or another user?)", path,
                 strerror(errno));
        return -1;
    }
    target[n] = '\0';
    if (strncmp(target, "/memfd:" MEMFD_NAME, strlen("/memfd:" MEMFD_NAME)) !=
        0) {
        snprintf(why, cap, "%s is not a lane's segment", path);
        return -1;
    }
    int f = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (f < 0 || fstat(f, &st) != 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size != FTC__SHM_SEG_BYTES) {
        snprintf(why, cap, "%s: %s", path,
                 f < 0 ? strerror(errno) : "not a segment of a lane's size");
        if (f >= 0) {
            close(f);
        }
        return -1;
    }
    void *m = mmap(NULL, FTC__SHM_SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                   f, 0);
    close(f);
    if (m == MAP_FAILED) {
        snprintf(why, cap, "mapping %s: %s", path, strerror(errno));
        return -1;
    }
    const seg_header *h = m;
    ftc__shm_lane *l = NULL;
    if (memcmp(h->magic, MAGIC, sizeof(h->magic)) != 0 ||
        memcmp(h->nonce, nonce, FTC__SHM_NONCE) != 0) {
        snprintf(why, cap, "%s holds another segment (not this host?)", path);
    } else if ((l = lane_new()) == NULL) {
        snprintf(why, cap, "out of memory");
    }
    if (l == NULL) {
        munmap(m, FTC__SHM_SEG_BYTES);
        return -1;
    }
    l->map = m;
    lane_wire(l, false);
    c->lane = l;
    return 0;
}

/* ------------------------------------------------------------ the talk */

static int send_frame(ftc__tcp *g, ftc__chan *c, int kind, int flags,
                      const void *body, size_t len, ftc__deadline dl)
{
    ftc__pgw_hdr h = {.kind = (uint8_t)kind,
                      .flags = (uint8_t)flags,
                      .group = g->group_id,
                      .epoch = g->epoch,
                      .tag = (uint32_t)c->stream,
                      .src = (uint32_t)g->rank,
                      .len = len};
    uint8_t hdr[FTC__PGW_HDR];
    ftc__pgw_encode(hdr, &h);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)body, len}};
    int rc =
        ftc__sock_sendv_all(c->fd, iov, len > 0 ? 2 : 1, dl, g->setup_cancel);
    if (rc != 0) {
        g->blame[c->peer] = true; /* the connection broke or stalled */
        return ftc__adderr(rc, "shared-memory set-up with %s", c->name);
    }
    return 0;
}

/* Reads the frame of this kind the peer sends on c next: body up to cap
 * bytes (NUL-terminated), *len its length. */
static int recv_frame(ftc__tcp *g, ftc__chan *c, int kind, ftc__pgw_hdr *h,
                      uint8_t *body, size_t cap, ftc__deadline dl)
{
    uint8_t hdr[FTC__PGW_HDR];
    int rc = ftc__sock_recv_all(c->fd, hdr, sizeof(hdr), dl, g->setup_cancel);
    rc = rc != 0 ? rc : ftc__pgw_decode(hdr, h);
    if (rc == 0 && (h->kind != kind || h->group != g->group_id ||
                    h->epoch != g->epoch || h->src != (uint32_t)c->peer ||
                    h->tag != (uint32_t)c->stream || h->len >= cap)) {
        rc = ftc__seterr(FTC_EPROTO,
                         "unexpected message (kind %u, %llu bytes) where a "
                         "shared-memory %s was due",
                         h->kind, (unsigned long long)h->len,
                         kind == FTC__PGW_SHM_OFFER ? "offer" : "answer");
    }
    if (rc == 0) {
        rc = ftc__sock_recv_all(c->fd, body, (size_t)h->len, dl,
                                g->setup_cancel);
        body[h->len] = '\0';
    }
    if (rc != 0) {
        /* Silent, gone, or not speaking the protocol. */
        g->blame[c->peer] = true;
        return ftc__adderr(rc, "shared-memory set-up with %s", c->name);
    }
    return 0;
}

/* This host's identity (ftc__pg_host_id), NUL-padded. */
static void host_id(uint8_t out[HOST_ID])
{
    memset(out, 0, HOST_ID);
    ftc__pg_host_id((char *)out);
}

/* Whether this rank would carry channel c over shared memory, and if not,
 * why (for FTC_PG_TRANSPORT_SHM's error). */
static bool wants(const ftc__tcp *g, const ftc__chan *c, char *why, size_t cap)
{
    if (g->transport == FTC_PG_TRANSPORT_TCP) {
        snprintf(why, cap, "the transport is tcp");
        return false;
    }
    if (c->protect) {
        snprintf(why, cap, "its messages are protected (FTC_PG_PROTECT)");
        return false;
    }
    if (!ftc__sock_same_host(c->fd)) {
        snprintf(why, cap, "it is on another host");
        return false;
    }
    return true;
}

static int offer(ftc__tcp *g, ftc__chan *c, const uint8_t host[HOST_ID],
                 ftc__deadline dl)
{
    char why[REASON_MAX];
    uint8_t body[OFFER_BODY], nonce[FTC__SHM_NONCE];
    if (!wants(g, c, why, sizeof(why)) ||
        ftc__shm_lane_create(c, nonce, why, sizeof(why)) != 0) {
        FTC_LOG_DEBUG("pg.shm", "no lane to %s: %s", c->name, why);
        return send_frame(g, c, FTC__PGW_SHM_OFFER, 0, NULL, 0, dl);
    }
    ftc__put_u32le(body, (uint32_t)getpid());
    ftc__put_u32le(body + 4, (uint32_t)c->lane->memfd);
    ftc__put_u64le(body + 8, FTC__SHM_RING);
    memcpy(body + 16, nonce, FTC__SHM_NONCE);
    memcpy(body + 16 + FTC__SHM_NONCE, host, HOST_ID);
    return send_frame(g, c, FTC__PGW_SHM_OFFER, 1, body, sizeof(body), dl);
}

static int answer(ftc__tcp *g, ftc__chan *c, const uint8_t mine[HOST_ID],
                  ftc__deadline dl)
{
    ftc__pgw_hdr h;
    uint8_t body[OFFER_BODY + 1];
    int rc = recv_frame(g, c, FTC__PGW_SHM_OFFER, &h, body, sizeof(body), dl);
    if (rc != 0) {
        return rc;
    }
    char why[REASON_MAX] = "";
    bool took = false;
    const uint8_t *theirs = body + 16 + FTC__SHM_NONCE;
    if (h.flags == 1 && h.len == OFFER_BODY &&
        memcmp(theirs, mine, HOST_ID) != 0) {
        snprintf(why, sizeof(why),
                 "another host: its FTC_PG_HOST_ID is '%.32s', the offer's "
                 "'%.32s'",
                 (const char *)mine, (const char *)theirs);
    } else if (h.flags == 1 && h.len == OFFER_BODY &&
               wants(g, c, why, sizeof(why))) {
        took = ftc__shm_lane_open(
                   c, ftc__get_u32le(body), (int32_t)ftc__get_u32le(body + 4),
                   ftc__get_u64le(body + 8), body + 16, why, sizeof(why)) == 0;
    }
    return send_frame(g, c, FTC__PGW_SHM_ANSWER, took, took ? NULL : why,
                      took ? 0 : strlen(why), dl);
}

static int hear_answer(ftc__tcp *g, ftc__chan *c, ftc__deadline dl)
{
    ftc__pgw_hdr h;
    uint8_t why[REASON_MAX + 1];
    int rc = recv_frame(g, c, FTC__PGW_SHM_ANSWER, &h, why, sizeof(why), dl);
    if (rc == 0 && c->lane != NULL) {
        /* The peer has mapped it (or never will): the fd is not needed. */
        close_memfd(c->lane->memfd);
        c->lane->memfd = -1;
        if (h.flags != 1) {
            FTC_LOG_INFO("pg.shm", "%s keeps TCP: %s", c->name,
                         why[0] != '\0' ? (const char *)why
                                        : "it does not use shared memory");
            ftc__shm_lane_close(c);
        }
    }
    return rc;
}

/* With FTC_PG_TRANSPORT_SHM, every pair must have its lanes. */
static int require_lanes(const ftc__tcp *g)
{
    for (int i = 0; i < g->size * g->streams; i++) {
        const ftc__chan *c = &g->coll[i];
        char why[REASON_MAX] = "the peer did not take the segment (its "
                               "log says why)";
        if (c->fd >= 0 && c->lane == NULL) {
            wants(g, c, why, sizeof(why));
            return ftc__seterr(FTC_ENOTSUP,
                               "FTC_PG_TRANSPORT=shm: no shared memory with "
                               "%s: %s",
                               c->name, why);
        }
    }
    return 0;
}

int ftc__shm_connect(ftc__tcp *g, ftc__deadline dl)
{
    /* Offers go out first, so every rank's answers and offers are on the
     * wire before anyone waits for them: no cycle of waiting ranks. */
    int rc = 0;
    int nch = g->size * g->streams;
    uint8_t host[HOST_ID];
    host_id(host);
    for (int i = 0; rc == 0 && i < nch; i++) {
        if (g->coll[i].fd >= 0 && g->coll[i].peer > g->rank) {
            rc = offer(g, &g->coll[i], host, dl);
        }
    }
    for (int i = 0; rc == 0 && i < nch; i++) {
        if (g->coll[i].fd >= 0 && g->coll[i].peer < g->rank) {
            rc = answer(g, &g->coll[i], host, dl);
        }
    }
    for (int i = 0; rc == 0 && i < nch; i++) {
        if (g->coll[i].fd >= 0 && g->coll[i].peer > g->rank) {
            rc = hear_answer(g, &g->coll[i], dl);
        }
    }
    if (rc == 0 && g->transport == FTC_PG_TRANSPORT_SHM) {
        rc = require_lanes(g);
    }
    int lanes = 0;
    for (int i = 0; i < nch; i++) {
        lanes += g->coll[i].lane != NULL;
    }
    g->nlanes = lanes;
    if (rc == 0 && lanes > 0) {
        FTC_LOG_INFO("pg.shm",
                     "group %016llx rank %d: %d of %d collective channels "
                     "over shared memory",
                     (unsigned long long)g->group_id, g->rank, g->nlanes,
                     nch - g->streams);
    }
    return rc;
}
