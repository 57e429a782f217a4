/* Telling the other members of a Baby group that this one failed. An
 * inner library such as oneCCL never notices a killed peer: the others
 * would wait in their collective until its deadline. So a member whose
 * group fails for a reason of the Baby layer (abort, a dead or hung
 * child, a deadline, a protocol error) writes "<inner prefix>/failed" in
 * the store, and every member keeps one get on that key outstanding on a
 * connection of its own: when it returns, the group fails at once with
 * FTC_EPEER naming the member and its reason, and its child is killed. */
#include <stdio.h>
#include <string.h>

#include "pg/baby/parent.h"

/* The pause before the watch asks again after the store failed. */
#define RETRY_MS 1000

static void *watch_peers(void *arg)
{
    baby *b = arg;
    for (;;) {
        void *v = NULL;
        size_t len = 0;
        int rc = ftc_store_client_get(b->peers_wait, b->peers_key, &v, &len,
                                      FTC_TIMEOUT_INFINITE);
        pthread_mutex_lock(&b->mu);
        bool stop = b->peers_stop;
        pthread_mutex_unlock(&b->mu);
        if (stop) {
            ftc_free(v);
            break;
        }
        if (rc == 0) {
            char msg[FTC__PG_MSG_MAX];
            snprintf(msg, sizeof(msg), "%s: member %.*s", b->name,
                     (int)(len < 300 ? len : 300), (const char *)v);
            ftc_free(v);
            ftc__baby_fail(b, FTC_EPEER, msg, FTC__BABY_SILENT);
            break; /* told once: the group is failed for good */
        }
        /* The store is unreachable for now: ask again later. */
        ftc__deadline dl = ftc__deadline_in_ms(RETRY_MS);
        pthread_mutex_lock(&b->mu);
        struct timespec ts = {.tv_sec = dl.ns / 1000000000,
                              .tv_nsec = dl.ns % 1000000000};
        while (!b->peers_stop &&
               pthread_cond_timedwait(&b->cv, &b->mu, &ts) == 0) {
        }
        stop = b->peers_stop;
        pthread_mutex_unlock(&b->mu);
        if (stop) {
            break;
        }
    }
    pthread_mutex_lock(&b->mu);
    b->peers_done = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static int reach(baby *b, ftc_store_client **conn, ftc_store_client **view)
{
    return ftc__store_client_reach(&b->store, conn, view);
}

int ftc__baby_peers_start(baby *b, const char *prefix)
{
    snprintf(b->peers_key, sizeof(b->peers_key), "%s/failed", prefix);
    int rc = reach(b, &b->peers_wait_conn, &b->peers_wait);
    rc = rc != 0 ? rc : reach(b, &b->peers_tell_conn, &b->peers_tell);
    rc = rc != 0 ? rc
                 : ftc__thread_start(&b->peers_thread, "ftc-baby-peers",
                                     watch_peers, b);
    if (rc != 0) {
        ftc__baby_peers_close(b);
        return ftc__adderr(rc, "%s: the failure watch", b->name);
    }
    b->peers_started = true;
    return 0;
}

void ftc__baby_peers_tell(baby *b, const char *msg)
{
    if (!b->peers_started) {
        return;
    }
    char value[FTC__PG_MSG_MAX + 32];
    int n = snprintf(value, sizeof(value), "rank %d failed: %s", b->rank, msg);
    /* One message out, no answer to wait for. */
    ftc_store_client_set(
        b->peers_tell, b->peers_key, value,
        (size_t)n < sizeof(value) ? (size_t)n : sizeof(value) - 1, 1000);
}

void ftc__baby_peers_stop(baby *b)
{
    if (b->peers_started) {
        pthread_mutex_lock(&b->mu);
        b->peers_stop = true;
        pthread_cond_broadcast(&b->cv);
        while (!b->peers_done) {
            /* A cancel before the get started is dropped: repeat it. */
            ftc_store_client_cancel(b->peers_wait);
            ftc__deadline dl = ftc__deadline_in_ms(10);
            struct timespec ts = {.tv_sec = dl.ns / 1000000000,
                                  .tv_nsec = dl.ns % 1000000000};
            pthread_cond_timedwait(&b->cv, &b->mu, &ts);
        }
        pthread_mutex_unlock(&b->mu);
        pthread_join(b->peers_thread, NULL);
        b->peers_started = false;
    }
    ftc__baby_peers_close(b);
}

void ftc__baby_peers_close(baby *b)
{
    ftc_store_client *c[] = {b->peers_wait, b->peers_wait_conn, b->peers_tell,
                             b->peers_tell_conn};
    for (size_t i = 0; i < 4; i++) {
        /* A view and its connection may be one handle. */
        bool seen = false;
        for (size_t j = 0; j < i; j++) {
            seen |= c[j] == c[i];
        }
        if (!seen) {
            ftc_store_client_close(c[i]);
        }
    }
    b->peers_wait = b->peers_wait_conn = NULL;
    b->peers_tell = b->peers_tell_conn = NULL;
}
