/* A client of etcd's v3 JSON gateway (etcd 3.4: POST /v3/...; keys and
 * values in base64, 64-bit numbers as strings): exactly what the
 * lighthouse's leader election needs, over libcurl and jansson. One
 * thread at a time. Each request tries the endpoints in turn, from the
 * one that answered last, each attempt bounded by attempt_ms (an etcd
 * member cut off from its cluster holds linearizable requests), until
 * the deadline. */
#ifndef FTC_FT_LIGHTHOUSE_ETCD_H
#define FTC_FT_LIGHTHOUSE_ETCD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base_int.h"

typedef struct ftc__etcd ftc__etcd;

/* urls: "http://host:port" client URLs separated by commas (at most 8).
 * FTC_EINVAL (none, too many, not http://), FTC_ENOMEM. */
int ftc__etcd_create(const char *urls, int64_t attempt_ms, ftc__etcd **out);
void ftc__etcd_destroy(ftc__etcd *e);

#define FTC__ETCD_VALUE_MAX 256

/* A key as etcd holds it; found false: absent. */
typedef struct ftc__etcd_kv {
    bool found;
    int64_t create_revision, mod_revision, lease;
    char value[FTC__ETCD_VALUE_MAX]; /* NUL-terminated; longer: FTC_EPROTO */
} ftc__etcd_kv;

/* Errors of every call: FTC_ETIMEDOUT (no endpoint answered by dl),
 * FTC_EPEER (etcd refused, with its message), FTC_EPROTO (an answer that
 * is not etcd's), FTC_ENOMEM. */

int ftc__etcd_get(ftc__etcd *e, const char *key, ftc__deadline dl,
                  ftc__etcd_kv *kv);
/* A new lease of ttl_s seconds. */
int ftc__etcd_lease_grant(ftc__etcd *e, int64_t ttl_s, ftc__deadline dl,
                          int64_t *id);
/* Renews lease id; *ttl_s is its new TTL, 0 when etcd no longer has it. */
int ftc__etcd_lease_keepalive(ftc__etcd *e, int64_t id, ftc__deadline dl,
                              int64_t *ttl_s);
/* Ends lease id and deletes its keys (an unknown lease is not an error). */
int ftc__etcd_lease_revoke(ftc__etcd *e, int64_t id, ftc__deadline dl);
/* Puts key = value attached to lease if key does not exist, in one
 * transaction. *won says whether it did; then *revision is the put's
 * revision (etcd's revisions only grow: a later winner's is larger).
 * Otherwise *holder (may be NULL) is the key as it is. */
int ftc__etcd_put_if_absent(ftc__etcd *e, const char *key, const char *value,
                            int64_t lease, ftc__deadline dl, bool *won,
                            int64_t *revision, ftc__etcd_kv *holder);
/* Puts key = value if guard still exists as created at guard_revision and
 * key was last modified at key_mod_revision (0: key absent), in one
 * transaction; *done says whether. */
int ftc__etcd_put_guarded(ftc__etcd *e, const char *guard,
                          int64_t guard_revision, const char *key,
                          int64_t key_mod_revision, const char *value,
                          ftc__deadline dl, bool *done);

/* Calls each(arg, key, kv) for every key that starts with prefix, in key
 * order, at most limit of them (*more says whether etcd had more); a
 * non-zero return of each stops the walk and is returned. Keys longer
 * than FTC__ETCD_KEY_MAX - 1 bytes are FTC_EPROTO. */
#define FTC__ETCD_KEY_MAX 512
int ftc__etcd_list(ftc__etcd *e, const char *prefix, size_t limit,
                   ftc__deadline dl,
                   int (*each)(void *arg, const char *key,
                               const ftc__etcd_kv *kv),
                   void *arg, bool *more);

/* One write of a guarded transaction: put key = value, or delete key
 * (value NULL). */
typedef struct ftc__etcd_op {
    const char *key;
    const char *value;
} ftc__etcd_op;

/* Applies ops (at most 128, etcd's default --max-txn-ops) in one
 * transaction if guard still exists as created at guard_revision; *done
 * says whether. */
int ftc__etcd_write_guarded(ftc__etcd *e, const char *guard,
                            int64_t guard_revision, const ftc__etcd_op *ops,
                            size_t n, ftc__deadline dl, bool *done);

#endif
