/* ftc_pg_create: rendezvous through a store. The pg layer agrees on a
 * fresh group id (rank 0's random number, under "<prefix>/backend/group")
 * and calls the chosen backend's create. tcp's create (here): every rank
 * publishes "host:port|nonce|host" under "<prefix>/pg/rank/<r>" (host:
 * ftc__pg_host_key, 16 hex digits; sealed with the token when there is one,
 * bound to the prefix, rank, group id and epoch), fetches all of them in one
 * multi_get (which waits for the missing ones), and connects the mesh. */
#include <stdlib.h>

#include "base/auth.h"
#include "pg/pg_int.h"
#include "pg/tcp/tcp.h"
#include "store/client/endpoint.h"

#define KEY_MAX 512
#define TEXT_MAX (FTC_HOST_MAX + 40 + 17)
#define VALUE_MAX (TEXT_MAX + FTC__AUTH_SEAL_EXTRA)

static const char seal_label[] = "ftc pg rendezvous v1";

/* What a rank's record is bound to. */
static void seal_context(char *out, size_t cap,
                         const ftc_pg_backend_create_args *args, int rank)
{
    snprintf(out, cap, "%s|%d|%016llx|%llu", args->prefix, rank,
             (unsigned long long)args->group_id,
             (unsigned long long)args->epoch);
}

/* The text of rank's record: unsealed with key (NULL: the group has no
 * token, and the record must not be sealed either). */
static int unseal(const ftc_store_value *v, int rank, const uint8_t *key,
                  const ftc_pg_backend_create_args *args, size_t *len)
{
    *len = v->len;
    bool sealed = memchr(v->data, '\n', v->len) != NULL;
    if (key == NULL) {
        return !sealed ? 0
                       : ftc__seterr(FTC_EAUTH,
                                     "rank %d sealed its record (it has a "
                                     "token) and this rank has none",
                                     rank);
    }
    char ctx[KEY_MAX + 64];
    seal_context(ctx, sizeof(ctx), args, rank);
    int rc = ftc__auth_unseal(key, seal_label, ctx, v->data, v->len, len);
    return rc == 0 ? 0
                   : ftc__seterr(FTC_EAUTH,
                                 "rank %d's record under '%s' is not sealed "
                                 "with this group's token (changed in the "
                                 "store, or another token)",
                                 rank, args->prefix);
}

/* Parses "host:port|nonce|host" (len bytes of v; "|host" may be absent:
 * an unknown host, 0): the address is copied into addr, the host key into
 * *host. */
static int parse(const ftc_store_value *v, size_t len, int rank, char *addr,
                 size_t cap, uint64_t *host, uint64_t *nonce)
{
    char text[VALUE_MAX + 1];
    if (len == 0 || len > TEXT_MAX) {
        return ftc__seterr(FTC_EPROTO, "rank %d published %zu bytes", rank,
                           len);
    }
    memcpy(text, v->data, len);
    text[len] = '\0';
    char *bar = strchr(text, '|');
    char *end = NULL, *host_end = NULL;
    if (bar != NULL) {
        *bar = '\0';
        *nonce = strtoull(bar + 1, &end, 16);
    }
    *host = 0;
    if (end != NULL && *end == '|') {
        *host = strtoull(end + 1, &host_end, 16);
    }
    bool ok = bar != NULL && end == bar + 17 && strlen(text) < cap &&
              (*end == '\0' || (host_end == end + 17 && *host_end == '\0'));
    if (!ok) {
        return ftc__seterr(FTC_EPROTO, "rank %d published '%.*s'", rank,
                           (int)len, (const char *)v->data);
    }
    memcpy(addr, text, strlen(text) + 1);
    return 0;
}

static void key_of(char *out, const char *prefix, int rank)
{
    snprintf(out, KEY_MAX, "%s/pg/rank/%d", prefix, rank);
}

/* After the multi_get timed out: blames the ranks whose key is still
 * missing, asked one key at a time within BLAME_GRACE_MS (the deadline of
 * the create has passed). What cannot be asked in that time is not
 * blamed; ftc_last_error keeps the timeout's message. */
#define BLAME_GRACE_MS 1000

static void blame_unpublished(ftc_store_client *store, const char **keys,
                              int rank, int size, ftc_pg_backend_rendezvous *rv)
{
    char msg[FTC__ERR_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", ftc_last_error());
    ftc__deadline dl = ftc__deadline_in_ms(BLAME_GRACE_MS);
    int rc = 0;
    for (int i = 0; rc == 0 && i < size && !ftc__deadline_expired(dl); i++) {
        int ready = 1;
        if (i != rank) {
            rc = ftc_store_client_check(store, &keys[i], 1, &ready,
                                        ftc__deadline_left_ms(dl));
        }
        if (rc == 0 && !ready) {
            rc = ftc_pg_backend_blame(rv, &i, 1);
        }
    }
    ftc__seterr(FTC_ETIMEDOUT, "%s", msg);
}

int ftc__tcp_create(const ftc_pg_backend_create_args *args, void **impl)
{
    *impl = NULL;
    if (args->store == NULL) {
        return ftc__seterr(FTC_EINVAL,
                           "tcp: a subgroup is built by ftc_pg_split");
    }
    ftc_store_client *store = args->store;
    const char *prefix = args->prefix;
    int rank = args->rank, size = args->size;
    ftc__deadline dl = {args->deadline_ns};
    uint8_t key_buf[FTC__AUTH_KEY];
    const uint8_t *key = NULL;
    if (args->opts->token != NULL) {
        int krc = ftc__auth_key(args->opts->token, key_buf);
        if (krc != 0) {
            return krc;
        }
        key = key_buf;
    }
    ftc__pg_listener l;
    int rc = ftc__pg_listen(args->opts->host, &l);
    if (rc != 0) {
        return rc;
    }
    char(*keys)[KEY_MAX] = ftc__calloc((size_t)size, KEY_MAX);
    const char **kp = ftc__calloc((size_t)size, sizeof(*kp));
    char(*addrs)[FTC_HOST_MAX + 16] =
        ftc__calloc((size_t)size, FTC_HOST_MAX + 16);
    const char **ap = ftc__calloc((size_t)size, sizeof(*ap));
    uint64_t *hosts = ftc__calloc((size_t)size, sizeof(*hosts));
    ftc_store_value *vals = ftc__calloc((size_t)size, sizeof(*vals));
    if (!keys || !kp || !addrs || !ap || !hosts || !vals) {
        rc = ftc__seterr(FTC_ENOMEM, "create: out of memory");
    }
    for (int i = 0; rc == 0 && i < size; i++) {
        key_of(keys[i], prefix, i);
        kp[i] = keys[i];
        ap[i] = addrs[i];
    }
    if (rc == 0) {
        char value[VALUE_MAX + 1], ctx[KEY_MAX + 64];
        int n = snprintf(value, TEXT_MAX + 1, "%s|%016llx|%016llx", l.addr,
                         (unsigned long long)ftc__rand_u64(),
                         (unsigned long long)ftc__pg_host_key());
        if (key != NULL) {
            seal_context(ctx, sizeof(ctx), args, rank);
            ftc__auth_seal(key, seal_label, ctx, value, (size_t)n, value + n);
            n += FTC__AUTH_SEAL_EXTRA;
        }
        rc = ftc_store_client_set(store, keys[rank], value, (size_t)n,
                                  ftc__deadline_left_ms(dl));
    }
    if (rc == 0) {
        rc = ftc_store_client_multi_get(store, kp, (size_t)size, vals,
                                        ftc__deadline_left_ms(dl));
        if (rc == FTC_ETIMEDOUT) {
            blame_unpublished(store, kp, rank, size, args->rendezvous);
        }
    }
    uint64_t nonce = 0;
    for (int i = 0; rc == 0 && i < size; i++) {
        size_t len;
        rc = unseal(&vals[i], i, key, args, &len);
        rc = rc != 0 ? rc
                     : parse(&vals[i], len, i, addrs[i], FTC_HOST_MAX + 16,
                             &hosts[i], &nonce);
    }
    if (rc == 0) {
        /* A cancel of the store client (another thread's
         * ftc_store_client_cancel) ends the mesh's waits too. */
        ftc__event cancel = {ftc__store_client_cancel_fd(store)};
        rc = ftc__tcp_build(args->group, &l, ap, hosts, args->group_id,
                            args->deadline_ns, &cancel, args->rendezvous, impl);
    } else {
        ftc__adderr(rc, "process group rendezvous under '%s'", prefix);
        ftc__pg_listener_close(&l);
    }
    if (vals != NULL) {
        ftc_store_values_free(vals, (size_t)size);
    }
    ftc__free(vals);
    ftc__free(keys);
    ftc__free(kp);
    ftc__free(addrs);
    ftc__free(ap);
    ftc__free(hosts);
    ftc__auth_wipe(key_buf, sizeof(key_buf));
    return rc;
}

/* ftc_pg_create within rv (store, prefix, rank and size: the caller's
 * arguments, unchecked). */
static int create(ftc_pg_backend_rendezvous *rv, const ftc_pg_opts *opts,
                  ftc_pg **out)
{
    if (out == NULL) {
        return ftc__seterr(FTC_EINVAL, "create: out is NULL");
    }
    *out = NULL;
    const char *prefix = rv->prefix;
    int rank = rv->rank, size = rv->size;
    if (rv->store == NULL || prefix == NULL || prefix[0] == '\0' ||
        strlen(prefix) > KEY_MAX - 32 || size < 1 || rank < 0 || rank >= size) {
        return ftc__seterr(FTC_EINVAL,
                           "create: needs a store, a prefix and 0 <= rank "
                           "(%d) < size (%d)",
                           rank, size);
    }
    ftc_pg_opts o;
    int rc = ftc__pg_resolve_opts(&o, opts);
    const ftc_pg_backend *be = NULL;
    if (rc == 0) {
        /* Before anything is published: a backend that cannot be loaded
         * leaves no trace in the store. */
        rc = ftc__pg_backend_get(ftc__pg_backend_choose(&o, "tcp"), &be);
    }
    if (rc == 0 && strcmp(be->name, "xccl") == 0) {
        rc = ftc__xccl_prepare(&o, rank, size); /* oneCCL loaded here */
    }
    if (rc != 0) {
        return rc;
    }
    ftc__deadline dl =
        ftc__deadline_from_timeout(o.connect_timeout_ms, o.connect_timeout_ms);
    uint8_t id[8];
    ftc__put_u64le(id, ftc__rand_u64());
    rc = ftc_pg_backend_exchange(rv, "group", id, sizeof(id), dl.ns);
    if (rc != 0) {
        return ftc__adderr(rc, "process group rendezvous under '%s'", prefix);
    }
    return ftc__pg_build(be, rv, rank, size, NULL, ftc__get_u64le(id), &o,
                         dl.ns, out);
}

int ftc_pg_create(ftc_store_client *store, const char *prefix, int rank,
                  int size, const ftc_pg_opts *opts, ftc_pg **out)
{
    ftc__clearerr();
    ftc_pg_backend_rendezvous rv = {
        .store = store, .prefix = prefix, .rank = rank, .size = size};
    int rc = create(&rv, opts, out);
    /* This thread's ftc_pg_create_failed_peers from here on. */
    ftc__pg_rendezvous_done(&rv, rc);
    return rc;
}
