/* Internals of the lighthouse client: the HTTP transport (libcurl, one
 * connection per call in flight, retries, abort) and the conversion of its
 * answers to the quorum core's types, which the manager computes with. */
#ifndef FTC_FT_LIGHTHOUSE_CLIENT_H
#define FTC_FT_LIGHTHOUSE_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/base_int.h"
#include "ft/quorum/quorum.h"
#include "ftc/ft.h"

/* One HTTP exchange's outcome. */
typedef struct ftc__lighthouse_client_reply {
    long status; /* HTTP status */
    ftc__buf body;
    /* The lighthouse may hold it until its own deadline (a long-poll), so
     * its timing out says nothing of the lighthouse; false at init. Such a
     * request carries that deadline, so it is sent once per exchange:
     * instead of sending it again later or elsewhere the exchange returns
     * FTC__LH_AGAIN with at, where to send the rebuilt one. */
    bool waits;
    int at; /* the address to start at; -1 (init): the client's choice */
} ftc__lighthouse_client_reply;

void ftc__lighthouse_client_reply_init(ftc__lighthouse_client_reply *r,
                                       size_t max);
void ftc__lighthouse_client_reply_fini(ftc__lighthouse_client_reply *r);

/* A waiting request must be rebuilt and sent again (reply->waits). */
#define FTC__LH_AGAIN 1

/* Sends method path (with the query) and body (NULL: none) to the
 * lighthouse and reads the answer, retrying refused or reset connections
 * and 503 answers with backoff until dl. 0 with reply->status set, or
 * FTC__LH_AGAIN, FTC_ETIMEDOUT, FTC_ECANCELED
 * (ftc_lighthouse_client_abort), FTC_EMSGSIZE (answer over
 * max_response_bytes), FTC_EPROTO. */
int ftc__lighthouse_client_exchange(ftc_lighthouse_client *c,
                                    const char *method, const char *path,
                                    const char *body, size_t len,
                                    ftc__deadline dl,
                                    ftc__lighthouse_client_reply *reply);

/* Whether name is a valid job name, [A-Za-z0-9._-]{1,64} (shared with the
 * lighthouse, lighthouse_job.c). */
bool ftc__lighthouse_job_name_ok(const char *name);

/* The rosters a client holds for compact quorum answers: the members of
 * the last two full answers and their versions (0: none). Two, because a
 * client shared by threads may store a newer roster between one call's
 * request and its compact answer. */
#define FTC__LH_ROSTERS 2
typedef struct ftc__lighthouse_roster {
    pthread_mutex_t mu; /* the fields below */
    ftc__quorum q[FTC__LH_ROSTERS];
    int64_t version[FTC__LH_ROSTERS];
    unsigned newest; /* the slot of the last one stored */
} ftc__lighthouse_roster;

ftc__lighthouse_roster *ftc__lighthouse_client_roster(ftc_lighthouse_client *c);

/* The client's job name and the deadline of a call's timeout_ms. */
const char *ftc__lighthouse_client_job(const ftc_lighthouse_client *c);
ftc__deadline ftc__lighthouse_client_deadline(const ftc_lighthouse_client *c,
                                              int64_t timeout_ms);

/* The code for a non-200 answer, with the lighthouse's error and detail in
 * the message: 400 FTC_EINVAL, 401/403 FTC_EAUTH, 404 FTC_ENOENT, 409
 * FTC_ESTALE, 413/429 FTC_EMSGSIZE, 5xx FTC_EPEER, else FTC_EPROTO. */
int ftc__lighthouse_client_status_error(
    const ftc_lighthouse_client *c, const ftc__lighthouse_client_reply *reply,
    const char *what);

/* A public quorum as the core's, for ftc__quorum_results: deep copy into
 * an initialised dst (ftc__quorum_fini). FTC_EINVAL (a string without NUL,
 * negative step, data not at its length), FTC_ENOMEM; dst empty then. */
int ftc__lighthouse_quorum_to_core(const ftc_lighthouse_quorum *q,
                                   ftc__quorum *dst);

#endif
