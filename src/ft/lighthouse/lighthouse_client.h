/* Internals of the lighthouse client: the HTTP transport (libcurl, one
 * connection per call in flight, retries, abort) and the conversion of its
 * answers to the quorum core's types, which the manager computes with. */
#ifndef FTC_FT_LIGHTHOUSE_CLIENT_H
#define FTC_FT_LIGHTHOUSE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base_int.h"
#include "ft/quorum/quorum.h"
#include "ftc/ft.h"

/* One HTTP exchange's outcome. */
typedef struct ftc_lhc_reply {
    long status; /* HTTP status */
    ftc_buf body;
} ftc_lhc_reply;

void ftc__lhc_reply_init(ftc_lhc_reply *r, size_t max);
void ftc__lhc_reply_fini(ftc_lhc_reply *r);

/* Sends method path (with the query) and body (NULL: none) to the
 * lighthouse and reads the answer, retrying refused or reset connections
 * and 503 answers with backoff until dl. 0 with reply->status set, or
 * FTC_ETIMEDOUT, FTC_ECANCELED (ftc_lighthouse_client_abort), FTC_EMSGSIZE
 * (answer over max_response_bytes), FTC_EPROTO. */
int ftc__lhc_exchange(ftc_lighthouse_client *c, const char *method,
                      const char *path, const char *body, size_t len,
                      ftc_deadline dl, ftc_lhc_reply *reply);

/* Whether name is a valid job name, [A-Za-z0-9._-]{1,64} (shared with the
 * lighthouse, lighthouse_job.c). */
bool ftc__lh_job_name_ok(const char *name);

/* The client's job name and the deadline of a call's timeout_ms. */
const char *ftc__lhc_job(const ftc_lighthouse_client *c);
ftc_deadline ftc__lhc_deadline(const ftc_lighthouse_client *c,
                               int64_t timeout_ms);

/* The code for a non-200 answer, with the lighthouse's error and detail in
 * the message: 400 FTC_EINVAL, 401/403 FTC_EAUTH, 404 FTC_ENOENT, 409
 * FTC_ESTALE, 413/429 FTC_EMSGSIZE, 5xx FTC_EPEER, else FTC_EPROTO. */
int ftc__lhc_status_error(const ftc_lighthouse_client *c,
                          const ftc_lhc_reply *reply, const char *what);

/* A public quorum as the core's, for ftc__quorum_results: deep copy into
 * an initialised dst (ftc__quorum_fini). FTC_EINVAL (a string without NUL,
 * negative step, data not at its length), FTC_ENOMEM; dst empty then. */
int ftc__lighthouse_quorum_to_core(const ftc_lighthouse_quorum *q,
                                   ftc_quorum *dst);

#endif
