/* libFuzzer target: every decoder of the lighthouse's JSON codec on
 * arbitrary bytes (requests on the server, answers on the client), the
 * manager's group records (arrivals, votes, answers), and encode-decode
 * round trips of whatever decodes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/lighthouse/lighthouse_json.h"
#include "ft/manager/manager_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_member(const ftc__quorum_member *a,
                        const ftc__quorum_member *b)
{
    if (strcmp(a->replica_id, b->replica_id) != 0 ||
        strcmp(a->address, b->address) != 0 ||
        strcmp(a->store_address, b->store_address) != 0 || a->step != b->step ||
        a->world_size != b->world_size || a->shrink_only != b->shrink_only ||
        a->commit_failures != b->commit_failures ||
        a->data_len != b->data_len ||
        (a->data_len > 0 && memcmp(a->data, b->data, a->data_len) != 0)) {
        abort();
    }
}

/* A decoded member must encode and decode to itself. */
static void round_trip(const ftc__quorum_member *m)
{
    json_t *j = ftc__lhj_member_json(m);
    if (j == NULL) {
        return;
    }
    char *text;
    size_t len;
    if (ftc__lhj_dump(j, &text, &len) == 0) {
        json_t *back;
        ftc__quorum_member again;
        if (ftc__lhj_parse_object(text, len, &back) != 0 ||
            ftc__lhj_member(back, FTC__QUORUM_MAX_DATA_CEIL, &again) != 0) {
            abort();
        }
        same_member(m, &again);
        ftc__quorum_member_fini(&again);
        json_decref(back);
        ftc__free(text);
    }
    json_decref(j);
}

/* A compact answer applied to a roster of four (version 9): what applies
 * must encode and apply again to the same members. */
/* The roster {a, b, c, d} with empty addresses (n 0: out of memory). */
static void four(ftc__quorum *q)
{
    static const char *const ids[] = {"a", "b", "c", "d"};
    ftc__quorum_init(q);
    q->members = ftc__calloc(4, sizeof(*q->members));
    for (size_t i = 0; q->members != NULL && i < 4; i++) {
        if (ftc__quorum_member_set(&q->members[i], ids[i], "", "") != 0) {
            abort();
        }
        q->n = i + 1;
    }
}

/* A delta applied to {a, b, c, d} (roster 8) gives a sorted roster of
 * distinct ids; the delta from {a, b, c, d} to it gives it again. */
static void delta_round_trip(const json_t *j)
{
    ftc__quorum base, q;
    four(&base);
    if (base.n == 4 && ftc__lhj_delta_apply(j, &base, 8, &q) == 0) {
        for (size_t i = 1; i < q.n; i++) {
            if (strcmp(q.members[i - 1].replica_id, q.members[i].replica_id) >=
                0) {
                abort();
            }
        }
        int64_t n = -1;
        if (ftc__lhj_get_int(j, "n", true, 0, INT64_MAX, &n) != 0 ||
            (size_t)n != q.n) {
            abort();
        }
        json_t *d = ftc__lhj_delta_json(&base, 8, &q, 9);
        ftc__quorum again;
        if (d != NULL) {
            if (ftc__lhj_delta_apply(d, &base, 8, &again) != 0 ||
                again.n != q.n || again.quorum_id != q.quorum_id) {
                abort();
            }
            for (size_t i = 0; i < q.n; i++) {
                same_member(&q.members[i], &again.members[i]);
            }
            ftc__quorum_fini(&again);
        }
        json_decref(d);
        ftc__quorum_fini(&q);
    }
    ftc__quorum_fini(&base);
}

static void compact_round_trip(const json_t *j)
{
    ftc__quorum q;
    four(&q);
    if (q.n == 4 && ftc__lhj_compact_apply(j, 9, &q) == 0) {
        ftc__quorum again;
        json_t *c = ftc__lhj_compact_json(&q, 9);
        if (c != NULL && ftc__quorum_copy(&again, &q) == 0) {
            if (ftc__lhj_compact_apply(c, 9, &again) != 0 ||
                again.quorum_id != q.quorum_id) {
                abort();
            }
            for (size_t i = 0; i < 4; i++) {
                same_member(&q.members[i], &again.members[i]);
            }
            ftc__quorum_fini(&again);
        }
        json_decref(c);
    }
    ftc__quorum_fini(&q);
}

/* The manager's records; a decoded arrival encodes and decodes to
 * itself, its suspects included. */
static void manager_records(const char *text, size_t size)
{
    ftc__manager_arrival a, b;
    if (ftc__manager_arrival_decode(text, size, &a) == 0) {
        char *out;
        size_t len;
        if (ftc__manager_arrival_encode(&a, &out, &len) == 0) {
            if (ftc__manager_arrival_decode(out, len, &b) != 0 ||
                b.step != a.step || b.n_suspects != a.n_suspects ||
                b.suspects_len != a.suspects_len ||
                (a.suspects_len > 0 &&
                 memcmp(a.suspects, b.suspects, a.suspects_len) != 0)) {
                abort();
            }
            ftc__manager_arrival_fini(&b);
            ftc__free(out);
        }
        ftc__manager_arrival_fini(&a);
    }
    ftc__manager_vote v;
    (void)ftc__manager_vote_decode(text, size, &v);
    ftc__quorum q;
    char id[FTC__QUORUM_STR_MAX];
    if (ftc__manager_result_decode(text, size, &q, id) == 0) {
        ftc__quorum_fini(&q);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    ftc__quorum_member m;
    int64_t timeout, roster;
    if (ftc__lhj_join_request(text, size, 65536, &m, &timeout, &roster) == 0) {
        round_trip(&m);
        ftc__quorum_member_fini(&m);
    }
    char id[FTC__QUORUM_STR_MAX];
    ftc_lighthouse_replica_stats st;
    bool has_stats;
    ftc__lhj_leaving left;
    if (ftc__lhj_replica_request(text, size, id, &st, &has_stats, &left) == 0 &&
        has_stats) {
        /* what was accepted encodes and decodes to the same */
        json_t *sj = ftc__lhj_replica_stats_json(&st);
        ftc_lighthouse_replica_stats back;
        if (sj == NULL || ftc__lhj_replica_stats(sj, &back) != 0 ||
            back.heals != st.heals || back.heal_bytes != st.heal_bytes ||
            back.heal_seconds != st.heal_seconds ||
            back.served_bytes != st.served_bytes ||
            strcmp(back.healing_from, st.healing_from) != 0 ||
            back.healing_bytes != st.healing_bytes ||
            back.healing_total_bytes != st.healing_total_bytes ||
            back.healing_started_wall_ms != st.healing_started_wall_ms) {
            abort();
        }
        json_decref(sj);
    }
    int64_t quorum_id, step;
    if (ftc__lhj_commit_request(text, size, id, &quorum_id, &step) == 0 &&
        (id[0] == '\0' || quorum_id < 0 || step < 1)) {
        abort(); /* accepted what the parser promises to refuse */
    }
    json_t *j;
    if (ftc__lhj_parse_object(text, size, &j) == 0) {
        ftc__quorum_opts o;
        ftc__quorum_opts_init(&o);
        ftc__lhj_job_options(j, &o);
        ftc__quorum q;
        if (ftc__lhj_quorum(j, 64, &q) == 0) {
            for (size_t i = 0; i < q.n; i++) {
                round_trip(&q.members[i]);
            }
            ftc__quorum_fini(&q);
        }
        compact_round_trip(j);
        delta_round_trip(j);
        json_decref(j);
    }
    manager_records(text, size);
    /* The CLI's --job option text. */
    char spec[256];
    size_t n = size < sizeof(spec) - 1 ? size : sizeof(spec) - 1;
    memcpy(spec, data, n);
    spec[n] = '\0';
    if (ftc__lhj_spec_options(spec, &j) == 0) {
        json_decref(j);
    }
    return 0;
}
