/* The store client's c10d barrier: one CONTROL_BARRIER against an ftc
 * server, and c10d's own plain ops against PyTorch's servers. */
#include <stdio.h>
#include <string.h>

#include "store/client/client_int.h"

/* What c10d's StoreCollectives writes. */
#define JOINED "joined"
#define COMPLETED "<val_ignored>"

/* ftc server: one request. The answer starts like a WAIT's (so a timeout
 * is cancelled in-protocol the same way), then i64 arrived and
 * str last_members follow its 00. */
static int one_request(ftc__store_call *k, const char *key, int rank, int world,
                       ftc_store_barrier_result *res)
{
    ftc__store_conn *c = k->conn;
    int rc = ftc__store_call_send(k, ftc__store_enc_control_barrier(
                                         &c->req, k->prefix, key, world, rank));
    if (rc == 0) {
        rc = ftc__store_conn_recv_wait(c, 1, k->dl, k->cancel);
    }
    if (rc == FTC_ETIMEDOUT && c->held_replies) {
        /* Cancelled in time: its 01 was the whole answer. */
        c->held_replies = 0;
        return rc;
    }
    if (rc != 0) {
        return rc;
    }
    ftc__deadline dl = ftc__store_call_fetch_deadline(k);
    rc = ftc__store_conn_recv_i64(c, &res->arrived, dl);
    if (rc == 0) {
        rc = ftc__store_conn_recv_value(c, &res->last_members,
                                        &res->last_members_len, dl, k->cancel);
    }
    if (rc == 0 && c->cancel_owed) {
        /* Done as the timed-out wait was cancelled: the cancel's own
         * answer follows. */
        rc = ftc__store_conn_recv_cancel_owed(c);
    }
    return rc;
}

/* "<key>/<suffix>" in a new buffer (ftc__free), or NULL. */
static char *subkey(const char *key, const char *suffix)
{
    size_t n = strlen(key) + strlen(suffix) + 2;
    char *p = ftc__malloc(n);
    if (p != NULL) {
        snprintf(p, n, "%s/%s", key, suffix);
    }
    return p;
}

/* The last arrival compare_sets last_members (so an abandonment marker
 * already there stays), and when that stored c10d's value SETs it again:
 * PyTorch's 1.13 and non-libuv 2.x servers wake no waiter on a
 * compare_set. The SET has no reply, so it costs no round trip. */
static int complete(ftc__store_call *k, const char *last_key,
                    ftc_store_barrier_result *res)
{
    ftc__store_conn *c = k->conn;
    int rc = ftc__store_call_send(
        k, ftc__store_enc_compare_set(&c->req, k->prefix, last_key, "", 0,
                                      COMPLETED, strlen(COMPLETED)));
    if (rc == 0) {
        rc = ftc__store_conn_recv_value(
            c, &res->last_members, &res->last_members_len, k->dl, k->cancel);
    }
    if (rc == 0 && res->last_members_len == strlen(COMPLETED) &&
        memcmp(res->last_members, COMPLETED, strlen(COMPLETED)) == 0) {
        rc = ftc__store_call_send(
            k,
            ftc__store_enc_key_value(&c->req, FTC__OP_SET, k->prefix, last_key,
                                     COMPLETED, strlen(COMPLETED)));
    }
    return rc;
}

/* Plain ops, as c10d does them (PyTorch's servers, and the 1.13 dialect).
 * The SET has no reply, so it shares the ADD's write. */
static int plain_ops(ftc__store_call *k, const char *key, int rank, int world,
                     ftc_store_barrier_result *res)
{
    ftc__store_conn *c = k->conn;
    char rank_s[16];
    snprintf(rank_s, sizeof(rank_s), "%d", rank);
    char *rank_key = subkey(key, rank_s);
    char *count_key = subkey(key, "num_members");
    char *last_key = subkey(key, "last_members");
    int rc = FTC_ENOMEM;
    if (rank_key == NULL || count_key == NULL || last_key == NULL) {
        ftc__seterr(rc, "barrier keys");
        goto done;
    }
    rc = ftc__store_enc_key_value(&c->req, FTC__OP_SET, k->prefix, rank_key,
                                  JOINED, strlen(JOINED));
    if (rc == 0) {
        rc = ftc__store_enc_add(&c->req, k->prefix, count_key, 1);
    }
    rc = ftc__store_call_i64(k, rc, &res->arrived);
    if (rc == 0 && res->arrived == world) {
        rc = complete(k, last_key, res);
    } else if (rc == 0 && res->arrived < world) {
        const char *const *named = k->keys;
        const char *wait_on[] = {last_key};
        k->keys = wait_on;
        rc = ftc__store_call_get(k, &res->last_members, &res->last_members_len);
        k->keys = named;
    }
done:
    ftc__free(last_key);
    ftc__free(count_key);
    ftc__free(rank_key);
    return rc;
}

int ftc_store_client_barrier(ftc_store_client *client, const char *key,
                             int rank, int world_size,
                             ftc_store_barrier_result *out, int64_t timeout_ms)
{
    ftc_store_barrier_result res = {0, NULL, 0};
    if (out != NULL) {
        *out = res;
    }
    if (world_size < 1 || rank < 0 || rank >= world_size) {
        return ftc__seterr(FTC_EINVAL,
                           "store barrier: rank %d is not a seat of world "
                           "size %d",
                           rank, world_size);
    }
    ftc__store_call k;
    int rc =
        ftc__store_call_begin(&k, client, "barrier", &key, 1, timeout_ms, 0);
    if (rc != 0) {
        return rc;
    }
    rc = k.conn->server == FTC__STORE_SERVER_FTC
             ? one_request(&k, key, rank, world_size, &res)
             : plain_ops(&k, key, rank, world_size, &res);
    if (rc == 0 && res.arrived > world_size) {
        rc = ftc__seterr(FTC_ESTALE,
                         "%lld arrivals for world size %d (a rank entered "
                         "twice, or the ranks disagree on the world size)",
                         (long long)res.arrived, world_size);
    }
    if (rc == 0 && out != NULL) {
        *out = res;
    } else {
        ftc__free(res.last_members);
    }
    return ftc__store_call_end(&k, rc);
}
