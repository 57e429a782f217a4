/* The healing client's state, shared by its files: heal_client.c (the
 * handle, requests, metadata over libcurl, the fetch) and heal_chunks.c
 * (the chunk transfers over plain sockets, on several receiving threads:
 * lanes). */
#ifndef FTC_FT_HEAL_CLIENT_INT_H
#define FTC_FT_HEAL_CLIENT_INT_H

#include <curl/curl.h>
#include <pthread.h>

#include "base/xxh.h"
#include "ft/heal/heal.h"
#include "ft/heal/heal_tls.h"

#define FTC__HEAL_MAX_STREAMS 64
/* Receiving threads of one fetch, each with its own multi handle. */
#define FTC__HEAL_MAX_LANES 8

struct ftc__heal_client {
    /* multi[0] serves the metadata; created once. */
    CURLM *multi[FTC__HEAL_MAX_LANES];
    atomic_bool aborted;
    ftc__event abort_ev; /* set while aborted: wakes the chunk lanes */
    char *tls_ca;        /* what https sources must chain to (NULL: system) */
    bool insecure;       /* the token may go in clear text to other hosts */
};

/* Bytes of a chunk answer's status line and headers. */
#define FTC__HEAL_HEAD_MAX 1024

/* One transfer slot, on one lane (only that lane's thread touches it):
 * chunk after chunk on one kept-alive connection to a source, the body
 * received straight into the destination (heal_chunks.c). The easy
 * handle serves the metadata requests (xs[0]). */
typedef struct ftc__heal_xfer {
    CURL *easy;
    XXH3_state_t *hash;
    struct ftc__heal_fetch_state *ctx;
    bool busy;
    uint32_t chunk;
    size_t src;
    uint64_t off, len, got;
    uint64_t incident;  /* its source's failures when it started */
    size_t cursor;      /* buffer holding stream position off + got */
    int fd;             /* its connection (-1: none), to source fd_src */
    ftc__heal_tls *tls; /* on fd, for an https source; NULL: plain */
    size_t fd_src;
    bool reused;  /* the request went on a kept-alive connection */
    bool in_body; /* the answer's head is in */
    bool close;   /* the answer said Connection: close */
    long status;
    size_t head_len;
    int64_t last_ns; /* when a byte last came (a stall is given up) */
    bool gone;       /* a metadata answer was 410: no state of the step */
    char head[FTC__HEAL_HEAD_MAX];
    char error[CURL_ERROR_SIZE];
} ftc__heal_xfer;

/* The state of one fetch. The chunk tables are shared by the lanes under
 * mu; the layout, destinations, starts and checksums are read-only once
 * the chunks start. */
typedef struct ftc__heal_fetch_state {
    ftc__heal_client *c;
    const ftc__heal_fetch *f;
    ftc__heal_meta meta;
    struct curl_slist *headers;
    ftc__heal_trust *trust; /* for https sources; NULL when none is */
    /* Per source, the chunk checksums of its own metadata (NULL: it has
     * none of this step). A chunk is asked only of sources whose checksum
     * for it equals the reference's: replicas may legitimately differ in
     * part of their state (DiLoCo's local parameters), and a chunk from
     * such a source would only fail its check. */
    uint64_t **hashes;
    size_t ref; /* the source whose metadata is the reference */
    /* f's layout and destinations, or the adopted ones (NULL until the
     * reference metadata is in). */
    const ftc__heal_state *layout;
    void *const *dest;
    uint64_t *starts; /* stream offset of each local buffer */
    pthread_mutex_t mu;
    uint32_t *queue;    /* chunks waiting for a transfer */
    size_t queued;      /* entries in queue */
    size_t *next_src;   /* per chunk: the source to ask next */
    uint32_t *attempts; /* per chunk */
    bool *dead;         /* per source */
    /* Per source: failures (transfers that failed after the previous
     * failure, so that the answers one restart cut count once), and
     * failures since its last success; two in a row make it dead. */
    uint64_t *incidents;
    uint32_t *strikes;
    uint32_t done;
    int rc;                      /* the first lane's failure */
    char rc_msg[512];            /* its message */
    char error[CURL_ERROR_SIZE]; /* the last source failure */
    unsigned lanes;
    ftc__event wake[FTC__HEAL_MAX_LANES]; /* a chunk was queued, or the end */
    ftc__heal_fetch_result *out;
} ftc__heal_fetch_state;

/* "http[s]://<host:port>/v1/heal/<step>/<what>" into out. */
void ftc__heal_url(const char *source, int64_t step, const char *what,
                   char *out, size_t cap);
/* Resets e for one request: URL, headers, stall and deadline limits. */
void ftc__heal_request(ftc__heal_fetch_state *ft, CURL *e, const char *url,
                       char *errbuf, ftc__deadline dl);
/* FTC_ECANCELED after an abort, FTC_ETIMEDOUT (saying how many chunks
 * are in) once dl passed, else 0. */
int ftc__heal_check(ftc__heal_fetch_state *ft, ftc__deadline dl);
/* Waits for activity on multi, at most until `until` (never past dl):
 * FTC_ECANCELED after an abort, FTC_ETIMEDOUT once dl passed. */
int ftc__heal_wait(ftc__heal_fetch_state *ft, CURLM *multi, ftc__deadline dl,
                   ftc__deadline until);

/* Allocates the chunk tables and queues every chunk. */
int ftc__heal_chunks_prepare(ftc__heal_fetch_state *ft);
/* Fetches every chunk over xs[0..nx) on ft->lanes lanes (the caller's
 * thread is lane 0), until all are in place or one lane fails. */
int ftc__heal_chunks_run(ftc__heal_fetch_state *ft, ftc__heal_xfer *xs,
                         unsigned nx, ftc__deadline dl);
/* Frees the chunk tables. */
void ftc__heal_chunks_free(ftc__heal_fetch_state *ft);

#endif
