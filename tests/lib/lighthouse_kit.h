/* Helpers of the lighthouse integration tests: plain HTTP requests (to
 * check codes and bodies the C client hides), raw socket bytes (for
 * malformed requests), status polling and joins on their own thread. */
#ifndef FTC_TEST_LIGHTHOUSE_UTIL_H
#define FTC_TEST_LIGHTHOUSE_UTIL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ftc/ftc.h"

/* One HTTP request with libcurl; returns the status (0 if none came) and
 * the body in *out (malloc'd, NUL-terminated; may be NULL). token may be
 * NULL. */
long lt_http(const char *addr, const char *method, const char *path,
             const char *body, const char *token, char **out);
/* The JSON of a 200 answer to GET path, failing the test otherwise. */
json_t *lt_get_json(const char *addr, const char *path);

/* Sends len raw bytes, then reads until the peer closes or timeout_ms
 * (scaled) passes. Returns the bytes read into reply (NUL-terminated) and
 * sets *closed when the peer closed the connection. */
size_t lt_raw(const char *addr, const char *bytes, size_t len, char *reply,
              size_t cap, int64_t timeout_ms, bool *closed);

/* A connection from source address `from` (a 127/8 address other than
 * the server's clients', standing for another host) to addr ("host:port",
 * IPv4) that sends bytes and stays open: a slowloris. Returns the fd. */
int lt_connect_from(const char *from, const char *addr, const char *bytes);

/* Whether replica_id is a participant (waiting join) of job. */
bool lt_is_participant(const char *addr, const char *job, const char *id);
/* An integer field of the job's status ("counter", "watches_waiting"). */
long long lt_status_int(const char *addr, const char *job, const char *key);

/* A client of addr with a 20 s (scaled) default timeout. */
ftc_lighthouse_client *lt_client(const char *addr);

/* A member whose address and store derive from its id. */
ftc_lighthouse_member lt_member(const char *id, int64_t step);

/* A join on its own thread. */
typedef struct lt_join {
    ftc_lighthouse_client *client;
    ftc_lighthouse_member member;
    int64_t timeout_ms;
    int rc;
    ftc_lighthouse_join_result result;
    char error[512];
    pthread_t thread;
    atomic_bool done;
} lt_join;

void lt_join_start(lt_join *j, ftc_lighthouse_client *c,
                   const ftc_lighthouse_member *m, int64_t timeout_ms);
/* Joins the thread; returns its rc. */
int lt_join_wait(lt_join *j);

/* Index of id in a quorum, -1 if absent. */
long lt_find(const ftc_lighthouse_quorum *q, const char *id);

#endif
