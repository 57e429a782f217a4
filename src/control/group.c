/* Group views: creation (with the generation handshake that keeps a
 * restarted member out of its old instance's keys) and key naming. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "control/control_int.h"

void ftc_control_opts_init(ftc_control_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->struct_size = sizeof(*opts);
    opts->auto_prefix = "ftc/control";
    opts->generation = -1;
}

int64_t ftc__control_left_ms(ftc__deadline dl)
{
    if (ftc__deadline_is_never(dl)) {
        return FTC_TIMEOUT_INFINITE;
    }
    return ftc__deadline_left_ms(dl);
}

void ftc__control_subkey(char *out, const char *key, const char *suffix)
{
    snprintf(out, FTC__CONTROL_KEY_MAX, "%s/%s", key, suffix);
}

void ftc__control_rank_key(char *out, const char *key, int rank)
{
    snprintf(out, FTC__CONTROL_KEY_MAX, "%s/%d", key, rank);
}

/* Agrees on a generation: the k-th creation of the whole group (counted by
 * one shared counter) is generation k. */
static int agree_generation(ftc_control *g, ftc__deadline dl)
{
    char key[FTC__CONTROL_KEY_MAX];
    ftc__control_subkey(key, g->auto_prefix, "creations");
    int64_t n;
    int rc =
        ftc_store_client_add(g->store, key, 1, &n, ftc__control_left_ms(dl));
    if (rc != 0) {
        return ftc__adderr(rc, "control group: agreeing on a generation");
    }
    g->generation = (n - 1) / g->world;
    return 0;
}

/* Claims this rank's seat in the generation with a compare_set of a
 * random token: a second claim (a restarted member) sees another token. */
static int join_generation(ftc_control *g, ftc__deadline dl)
{
    char key[FTC__CONTROL_KEY_MAX];
    snprintf(key, sizeof(key), "%s/%" PRId64 "/joined/%d", g->auto_prefix,
             g->generation, g->rank);
    char token[32];
    int n = snprintf(token, sizeof(token), "%016" PRIx64, ftc__rand_u64());
    void *cur = NULL;
    size_t cur_len = 0;
    int rc =
        ftc_store_client_compare_set(g->store, key, "", 0, token, (size_t)n,
                                     &cur, &cur_len, ftc__control_left_ms(dl));
    if (rc != 0) {
        return ftc__adderr(rc, "control group: joining generation %" PRId64,
                           g->generation);
    }
    int mine = cur_len == (size_t)n && memcmp(cur, token, (size_t)n) == 0;
    ftc_free(cur);
    if (!mine) {
        return ftc__seterr(FTC_ESTALE,
                           "rank %d already joined generation %" PRId64
                           " of '%s' (a restarted member must join a new "
                           "generation)",
                           g->rank, g->generation, g->auto_prefix);
    }
    return 0;
}

int ftc_control_create(ftc_store_client *store, int rank, int world_size,
                       const ftc_control_opts *opts, ftc_control **out,
                       int64_t timeout_ms)
{
    ftc__clearerr();
    if (out == NULL) {
        return ftc__seterr(FTC_EMISUSE, "ftc_control_create: out is NULL");
    }
    *out = NULL;
    if (store == NULL || world_size < 1 || rank < 0 || rank >= world_size) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_control_create: need a store and 0 <= rank "
                           "(%d) < world_size (%d)",
                           rank, world_size);
    }
    ftc_control_opts defaults, merged;
    ftc_control_opts_init(&defaults);
    merged = defaults;
    int rc = FTC__OPTS_MERGE(&merged, opts, ftc_control_opts, generation);
    rc = rc != 0 ? rc : ftc__timeout_check(timeout_ms, "ftc_control_create");
    if (rc != 0) {
        return rc;
    }
    opts = &merged;
    const char *prefix =
        opts->auto_prefix != NULL ? opts->auto_prefix : defaults.auto_prefix;
    if (strlen(prefix) > FTC__CONTROL_KEY_MAX / 2) {
        return ftc__seterr(FTC_EINVAL, "control auto_prefix is too long");
    }
    ftc_control *g = ftc__calloc(1, sizeof(*g));
    if (g == NULL) {
        return ftc__seterr(FTC_ENOMEM, "control group");
    }
    g->store = store;
    g->rank = rank;
    g->world = world_size;
    g->generation = opts->generation;
    ftc__strset_init(&g->used);
    g->auto_prefix = ftc__strdup(prefix);
    rc = FTC_ENOMEM;
    if (g->auto_prefix == NULL) {
        ftc__seterr(rc, "control group");
        goto fail;
    }
    ftc__deadline dl =
        ftc__deadline_from_timeout(timeout_ms, FTC__CONTROL_DEFAULT_TIMEOUT_MS);
    if (g->generation < 0) {
        rc = agree_generation(g, dl);
        if (rc != 0) {
            goto fail;
        }
    }
    rc = join_generation(g, dl);
    if (rc != 0) {
        goto fail;
    }
    *out = g;
    return 0;
fail:
    ftc_control_destroy(g);
    return rc;
}

void ftc_control_destroy(ftc_control *g)
{
    if (g == NULL) {
        return;
    }
    ftc__strset_free(&g->used);
    ftc__free(g->auto_prefix);
    ftc__free(g);
}

int64_t ftc_control_generation(const ftc_control *g)
{
    return g != NULL ? g->generation : -1;
}

int ftc__control_claim_key(ftc_control *g, const char *op, const char *key,
                           const char *also_suffix, char *out, size_t cap)
{
    if (key == NULL) {
        snprintf(out, cap, "%s/%" PRId64 "/%" PRIu64, g->auto_prefix,
                 g->generation, g->next_auto++);
        return 0;
    }
    /* Room for the longest suffix a collective appends. */
    if (strlen(key) + 32 > cap) {
        return ftc__seterr(FTC_EINVAL, "%s: key of %zu B is too long", op,
                           strlen(key));
    }
    char extra[FTC__CONTROL_KEY_MAX];
    if (also_suffix != NULL) {
        ftc__control_subkey(extra, key, also_suffix);
        if (ftc__strset_contains(&g->used, extra)) {
            return ftc__seterr(FTC_EEXIST, "Key %s has already been used.",
                               extra);
        }
    }
    int rc = ftc__strset_add(&g->used, key);
    if (rc == FTC_EEXIST) {
        return ftc__seterr(FTC_EEXIST, "Key %s has already been used.", key);
    }
    if (rc == 0 && also_suffix != NULL) {
        rc = ftc__strset_add(&g->used, extra);
    }
    if (rc != 0) {
        return rc;
    }
    snprintf(out, cap, "%s", key);
    return 0;
}
