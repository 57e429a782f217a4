/* The healing server's handle, shared by its two files: heal_server.c
 * (HTTP answers, start, stop, restart) and heal_lend.c (lending the live
 * buffers: who must release them, and taking them back). */
#ifndef FTC_FT_HEAL_SERVER_INT_H
#define FTC_FT_HEAL_SERVER_INT_H

#include <microhttpd.h>
#include <pthread.h>

#include "ft/heal/heal.h"
#include "ft/http_admit.h"
#include "ft/http_tls.h"
#include "ft/http_util.h"

struct ftc__heal_server {
    struct MHD_Daemon *mhd;
    unsigned threads, max_connections, idle_s; /* to restart it */
    ftc__http_tls tls;                         /* likewise */
    ftc__http_admit admit; /* who gets a connection (its own lock) */
    char address[FTC__HEAL_ADDR_MAX];
    bool has_token;
    unsigned char token_hash[FTC__TOKEN_HASH_BYTES];
    /* mu guards everything below but the counters (atomics); the only
     * lock of the server, nested with no other. Under it only memory
     * changes and cv waits run: snapshots are unreferenced and the daemon
     * stopped or restarted (MHD_stop_daemon joins its threads) after
     * unlocking. */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a release came, an answer ended, closing */
    ftc__heal_snapshot *current;
    /* While lending, current is the lent snapshot and these are the
     * healers expected to release it. */
    bool lending;
    char (*healers)[FTC__HEAL_ID_MAX];
    bool *released;
    size_t n_healers, n_released;
    /* Releases that came before their step was lent (a healer done with
     * its other sources while this one still rebuilt its group): counted
     * when that step is lent, so the round does not wait for them until
     * its bound. At most FTC__HEAL_EARLY_MAX, the oldest dropped. */
    struct ftc__heal_early {
        int64_t step;
        char id[FTC__HEAL_ID_MAX];
    } * early;
    size_t n_early;
    int64_t last_step; /* the newest step lent, published or refused; -1 */
    bool closing;
    int64_t refused_step; /* answered 410 (ftc__heal_server_refuse); -1 */
    int fault;
    uint32_t fault_chunk;
    atomic_uint_fast64_t meta_served, chunks_served, bytes_served, refused;
    atomic_uint_fast64_t releases, cuts;
};

#define FTC__HEAL_EARLY_MAX 256

/* Records a release of the lent snapshot of step by replica_id (step -1:
 * whatever is lent), or, for a step newer than any lent, published or
 * refused yet, remembers it for when that step is lent. False if neither
 * (an older step, or step -1 while nothing is lent). */
bool ftc__heal_lend_release(ftc__heal_server *s, int64_t step,
                            const char *replica_id);
/* Frees the lending's bookkeeping (s->mu held). */
void ftc__heal_lend_clear(ftc__heal_server *s);
/* Closes every connection, ending every answer: the daemon stops and
 * starts again on the same listening socket. */
void ftc__heal_server_restart(ftc__heal_server *s);

#endif
