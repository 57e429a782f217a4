/* The collectives. Each follows c10d's StoreCollectives key layout, turns
 * its timeout into one deadline for all its store calls, and reports
 * timeouts with the ranks that never arrived. */
#include <stdio.h>
#include <string.h>

#include "control/control_int.h"

/* What c10d's last arriver writes; any other value of last_members written
 * by ftc starts with ABANDONED and says why. */
#define COMPLETED "<val_ignored>"
#define ABANDONED "ftc:abandoned:"

typedef struct call {
    ftc_control *g;
    const char *op;
    char key[FTC__CONTROL_KEY_MAX];
    ftc__deadline dl;
    int64_t start_ms;
} call;

static int begin(call *c, ftc_control *g, const char *op, const char *key,
                 const char *also_suffix, int64_t timeout_ms)
{
    ftc__clearerr();
    c->g = g;
    c->op = op;
    c->start_ms = ftc__now_ms();
    c->dl =
        ftc__deadline_from_timeout(timeout_ms, FTC__CONTROL_DEFAULT_TIMEOUT_MS);
    if (g == NULL) {
        return ftc__seterr(FTC_EMISUSE, "%s: group is NULL", op);
    }
    char name[40];
    snprintf(name, sizeof(name), "ftc_control_%s", op);
    int rc = ftc__timeout_check(timeout_ms, name);
    if (rc != 0) {
        return rc;
    }
    return ftc__control_claim_key(g, op, key, also_suffix, c->key,
                                  sizeof(c->key));
}

static int64_t left(const call *c)
{
    return ftc__control_left_ms(c->dl);
}

static int64_t elapsed(const call *c)
{
    return ftc__now_ms() - c->start_ms;
}

/* Adds context to a store failure that is not a timeout. */
static int store_error(const call *c, int rc)
{
    return ftc__adderr(rc, "%s '%s'", c->op, c->key);
}

/* Writes this rank's contribution to "<key>/<rank>". */
static int set_own(const call *c, const void *data, size_t len)
{
    char rank_key[FTC__CONTROL_KEY_MAX];
    ftc__control_rank_key(rank_key, c->key, c->g->rank);
    int rc = ftc_store_client_set(c->g->store, rank_key, data, len, left(c));
    return rc != 0 ? store_error(c, rc) : 0;
}

static int is_abandoned(const void *v, size_t len)
{
    return len >= strlen(ABANDONED) &&
           memcmp(v, ABANDONED, strlen(ABANDONED)) == 0;
}

static int abandoned_error(const call *c, const void *v, size_t len)
{
    size_t skip = strlen(ABANDONED);
    return ftc__seterr(FTC_ECANCELED, "%s '%s' was abandoned: %.*s", c->op,
                       c->key, (int)(len - skip), (const char *)v + skip);
}

/* After this rank timed out: writes the abandonment reason to
 * last_members unless the barrier completed in the meantime, in which case
 * the barrier succeeded after all (returns 0). A marker that took is SET
 * once more because PyTorch's 1.13 and non-libuv 2.x servers wake no
 * waiter on a compare_set. */
static int abandon(const call *c, const char *last_key, const char *reason)
{
    char marker[600];
    int n = snprintf(marker, sizeof(marker), "%s%s", ABANDONED, reason);
    void *cur = NULL;
    size_t cur_len = 0;
    int rc = ftc_store_client_compare_set(c->g->store, last_key, "", 0, marker,
                                          (size_t)n, &cur, &cur_len,
                                          FTC__CONTROL_GRACE_MS);
    int completed = rc == 0 && !is_abandoned(cur, cur_len);
    if (rc == 0 && cur_len == (size_t)n && memcmp(cur, marker, cur_len) == 0) {
        ftc_store_client_set(c->g->store, last_key, marker, (size_t)n,
                             FTC__CONTROL_GRACE_MS);
    }
    ftc_free(cur);
    return completed ? 0 : FTC_ETIMEDOUT;
}

/* c10d's barrier through the store client (one request on an ftc
 * server). After a timeout this rank marks the barrier abandoned, unless
 * it completed meanwhile; a rank that finds it abandoned fails with the
 * reason. */
static int barrier_on(call *c, const char *bkey)
{
    ftc_control *g = c->g;
    ftc_store_barrier_result res;
    int rc = ftc_store_client_barrier(g->store, bkey, g->rank, g->world, &res,
                                      left(c));
    if (rc == FTC_ETIMEDOUT) {
        int64_t took = elapsed(c);
        ftc__control_timeout_error(g, c->op, bkey, -1, took);
        char reason[512];
        snprintf(reason, sizeof(reason), "rank %d gave up: %s", g->rank,
                 ftc_last_error());
        char saved[512];
        snprintf(saved, sizeof(saved), "%s", ftc_last_error());
        char last_key[FTC__CONTROL_KEY_MAX];
        ftc__control_subkey(last_key, bkey, "last_members");
        if (abandon(c, last_key, reason) == 0) {
            ftc__clearerr();
            return 0;
        }
        return ftc__seterr(FTC_ETIMEDOUT, "%s", saved);
    }
    if (rc != 0) {
        return store_error(c, rc);
    }
    rc = is_abandoned(res.last_members, res.last_members_len)
             ? abandoned_error(c, res.last_members, res.last_members_len)
             : 0;
    ftc_free(res.last_members);
    return rc;
}

int ftc_control_barrier(ftc_control *g, const char *key, int64_t timeout_ms)
{
    call c;
    int rc = begin(&c, g, "barrier", key, NULL, timeout_ms);
    return rc != 0 ? rc : barrier_on(&c, c.key);
}

int ftc_control_broadcast_send(ftc_control *g, const char *key,
                               const void *data, size_t len, int64_t timeout_ms)
{
    call c;
    int rc = begin(&c, g, "broadcast", key, NULL, timeout_ms);
    if (rc == 0) {
        rc = ftc_store_client_set(g->store, c.key, data, len, left(&c));
        if (rc != 0) {
            rc = store_error(&c, rc);
        }
    }
    return rc;
}

/* Receives the one value a single sender writes under key. */
static int recv_one(call *c, const char *key, const char *sender, void **data,
                    size_t *len)
{
    int rc = ftc_store_client_get(c->g->store, key, data, len, left(c));
    if (rc == FTC_ETIMEDOUT) {
        return ftc__seterr(rc,
                           "%s '%s' timed out after %lld ms: nothing "
                           "from the %s (%s)",
                           c->op, c->key, (long long)elapsed(c), sender,
                           ftc_last_error());
    }
    return rc != 0 ? store_error(c, rc) : 0;
}

int ftc_control_broadcast_recv(ftc_control *g, const char *key, void **data,
                               size_t *len, int64_t timeout_ms)
{
    call c;
    int rc = begin(&c, g, "broadcast", key, NULL, timeout_ms);
    return rc != 0 ? rc : recv_one(&c, c.key, "root", data, len);
}

int ftc_control_gather_send(ftc_control *g, const char *key, const void *data,
                            size_t len, int64_t timeout_ms)
{
    call c;
    int rc = begin(&c, g, "gather", key, NULL, timeout_ms);
    return rc != 0 ? rc : set_own(&c, data, len);
}

/* Fetches "<key>/<i>" for every rank i except skip (-1: none) into out[i],
 * in one multi_get; on a timeout names the missing ranks. */
static int fetch_ranks(call *c, int skip, ftc_store_value *out)
{
    ftc_control *g = c->g;
    int n = g->world - (skip >= 0 ? 1 : 0);
    char(*names)[FTC__CONTROL_KEY_MAX] =
        ftc__malloc((size_t)(n > 0 ? n : 1) * sizeof(*names));
    const char **keys = ftc__malloc((size_t)(n > 0 ? n : 1) * sizeof(*keys));
    ftc_store_value *got = ftc__calloc((size_t)(n > 0 ? n : 1), sizeof(*got));
    int rc = FTC_ENOMEM;
    if (names == NULL || keys == NULL || got == NULL) {
        ftc__seterr(rc, "%s '%s': key list", c->op, c->key);
        goto done;
    }
    for (int r = 0, k = 0; r < g->world; r++) {
        if (r != skip) {
            ftc__control_rank_key(names[k], c->key, r);
            keys[k] = names[k];
            k++;
        }
    }
    rc = n == 0 ? 0
                : ftc_store_client_multi_get(g->store, keys, (size_t)n, got,
                                             left(c));
    if (rc == FTC_ETIMEDOUT) {
        rc = ftc__control_timeout_error(g, c->op, c->key, skip, elapsed(c));
    } else if (rc != 0) {
        rc = store_error(c, rc);
    } else {
        for (int r = 0, k = 0; r < g->world; r++) {
            if (r != skip) {
                out[r] = got[k++];
            }
        }
    }
done:
    ftc__free(got);
    ftc__free(keys);
    ftc__free(names);
    return rc;
}

/* Puts a copy of this rank's own data at out[rank]. */
static int put_own(const call *c, ftc_store_value *out, const void *data,
                   size_t len)
{
    void *copy = ftc__memdup(data, len);
    if (copy == NULL) {
        return ftc__seterr(FTC_ENOMEM, "%s '%s': %zu B", c->op, c->key, len);
    }
    out[c->g->rank] = (ftc_store_value){copy, len};
    return 0;
}

int ftc_control_gather_recv(ftc_control *g, const char *key, const void *data,
                            size_t len, ftc_store_value *out,
                            int64_t timeout_ms)
{
    call c;
    int rc = begin(&c, g, "gather", key, NULL, timeout_ms);
    if (rc != 0) {
        return rc;
    }
    memset(out, 0, (size_t)g->world * sizeof(*out));
    rc = fetch_ranks(&c, g->rank, out);
    if (rc == 0) {
        rc = put_own(&c, out, data, len);
    }
    if (rc != 0) {
        ftc_store_values_free(out, (size_t)g->world);
    }
    return rc;
}

int ftc_control_scatter_send(ftc_control *g, const char *key,
                             const ftc_store_value *data, void **mine,
                             size_t *mine_len, int64_t timeout_ms)
{
    call c;
    int rc = begin(&c, g, "scatter", key, NULL, timeout_ms);
    if (rc != 0) {
        return rc;
    }
    int n = g->world - 1;
    char(*names)[FTC__CONTROL_KEY_MAX] =
        ftc__malloc((size_t)(n > 0 ? n : 1) * sizeof(*names));
    const char **keys = ftc__malloc((size_t)(n > 0 ? n : 1) * sizeof(*keys));
    ftc_store_value *vals =
        ftc__malloc((size_t)(n > 0 ? n : 1) * sizeof(*vals));
    void *own = ftc__memdup(data[g->rank].data, data[g->rank].len);
    rc = FTC_ENOMEM;
    if (names == NULL || keys == NULL || vals == NULL || own == NULL) {
        ftc__seterr(rc, "scatter '%s': buffers", c.key);
        goto done;
    }
    for (int r = 0, k = 0; r < g->world; r++) {
        if (r != g->rank) {
            ftc__control_rank_key(names[k], c.key, r);
            keys[k] = names[k];
            vals[k] = data[r];
            k++;
        }
    }
    rc = n == 0 ? 0
                : ftc_store_client_multi_set(g->store, keys, vals, (size_t)n,
                                             left(&c));
    if (rc != 0) {
        rc = store_error(&c, rc);
        goto done;
    }
    *mine = own;
    *mine_len = data[g->rank].len;
    own = NULL;
done:
    ftc__free(own);
    ftc__free(vals);
    ftc__free(keys);
    ftc__free(names);
    return rc;
}

int ftc_control_scatter_recv(ftc_control *g, const char *key, void **data,
                             size_t *len, int64_t timeout_ms)
{
    call c;
    int rc = begin(&c, g, "scatter", key, NULL, timeout_ms);
    if (rc != 0) {
        return rc;
    }
    char rank_key[FTC__CONTROL_KEY_MAX];
    ftc__control_rank_key(rank_key, c.key, g->rank);
    return recv_one(&c, rank_key, "root", data, len);
}

int ftc_control_all_gather(ftc_control *g, const char *key, const void *data,
                           size_t len, ftc_store_value *out, int64_t timeout_ms)
{
    call c;
    int rc = begin(&c, g, "all_gather", key, NULL, timeout_ms);
    if (rc != 0) {
        return rc;
    }
    rc = set_own(&c, data, len);
    if (rc != 0) {
        return rc;
    }
    memset(out, 0, (size_t)g->world * sizeof(*out));
    /* Our own value comes back from the store like the others': one
     * request, and every rank sees the same bytes. */
    rc = fetch_ranks(&c, -1, out);
    if (rc != 0) {
        ftc_store_values_free(out, (size_t)g->world);
    }
    return rc;
}

int ftc_control_all_sum(ftc_control *g, const char *key, int64_t value,
                        int64_t *sum, int64_t timeout_ms)
{
    call c;
    int rc = begin(&c, g, "all_sum", key, "barrier", timeout_ms);
    if (rc != 0) {
        return rc;
    }
    rc = ftc_store_client_add(g->store, c.key, value, NULL, left(&c));
    if (rc != 0) {
        return store_error(&c, rc);
    }
    char bkey[FTC__CONTROL_KEY_MAX];
    ftc__control_subkey(bkey, c.key, "barrier");
    rc = barrier_on(&c, bkey);
    if (rc != 0) {
        return rc;
    }
    rc = ftc_store_client_add(g->store, c.key, 0, sum, left(&c));
    return rc != 0 ? store_error(&c, rc) : 0;
}
