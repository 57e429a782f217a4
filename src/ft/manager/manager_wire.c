/* The records the ranks of a replica group exchange through their store:
 * arrivals, the leader's answer (a quorum or a failure), votes, and the
 * member data carrying every rank's healing address. JSON (jansson). */
#include <string.h>

#include "base/base_int.h"
#include "ft/lighthouse/lighthouse_json.h"
#include "ft/manager/manager_plan.h"

/* Dumps j (consumed) into a new text; FTC_ENOMEM if j is NULL. */
static int dump(json_t *j, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (j == NULL) {
        return ftc__seterr(FTC_ENOMEM, "group record");
    }
    int rc = ftc__lhj_dump(j, out, len);
    json_decref(j);
    return rc;
}

/* Parses a record; anything malformed is the peer's protocol error. */
static int parse(const void *p, size_t n, const char *what, json_t **out)
{
    int rc = ftc__lhj_parse_object(p, n, out);
    return rc == 0 ? 0
                   : ftc__seterr(FTC_EPROTO, "%s record: %s", what,
                                 ftc_last_error());
}

static int field_error(json_t *j, const char *what)
{
    json_decref(j);
    return ftc__seterr(FTC_EPROTO, "%s record: %s", what, ftc_last_error());
}

/* The suspects as a JSON array of ids. */
static json_t *suspects_json(const ftc__manager_arrival *a)
{
    json_t *arr = json_array();
    const char *id = a->suspects;
    for (uint32_t i = 0; arr != NULL && i < a->n_suspects; i++) {
        if (json_array_append_new(arr, json_string(id)) != 0) {
            json_decref(arr);
            arr = NULL;
        }
        id += strlen(id) + 1;
    }
    return arr;
}

int ftc__manager_arrival_encode(const ftc__manager_arrival *a, char **out,
                                size_t *len)
{
    json_t *j =
        json_pack("{s:I, s:I, s:b, s:s}", "step", (json_int_t)a->step,
                  "commit_failures", (json_int_t)a->commit_failures,
                  "shrink_only", (int)a->shrink_only, "heal", a->heal_address);
    if (j != NULL && a->n_suspects > 0 &&
        json_object_set_new(j, "suspects", suspects_json(a)) != 0) {
        json_decref(j);
        j = NULL;
    }
    return dump(j, out, len);
}

/* An arrival's optional suspects, checked as the lighthouse checks a
 * member's. */
static int get_suspects(const json_t *j, ftc__manager_arrival *a)
{
    ftc__quorum_member m;
    memset(&m, 0, sizeof(m));
    int rc = ftc__lhj_suspects(j, &m);
    a->suspects = m.suspects;
    a->suspects_len = m.suspects_len;
    a->n_suspects = m.n_suspects;
    return rc;
}

void ftc__manager_arrival_fini(ftc__manager_arrival *a)
{
    ftc__free(a->suspects);
    a->suspects = NULL;
    a->suspects_len = 0;
    a->n_suspects = 0;
}

size_t ftc__manager_suspects_union(const ftc__manager_arrival *a, size_t n,
                                   const char **ids)
{
    size_t k = 0;
    for (size_t g = 0; g < n; g++) {
        const char *id = a[g].suspects;
        for (uint32_t i = 0; i < a[g].n_suspects; i++, id += strlen(id) + 1) {
            bool seen = false;
            for (size_t j = 0; j < k && !seen; j++) {
                seen = strcmp(ids[j], id) == 0;
            }
            if (!seen && k < FTC__QUORUM_SUSPECTS_MAX) {
                ids[k++] = id;
            }
        }
    }
    return k;
}

int ftc__manager_arrival_decode(const void *p, size_t n,
                                ftc__manager_arrival *a)
{
    json_t *j;
    int rc = parse(p, n, "arrival", &j);
    if (rc != 0) {
        return rc;
    }
    ftc__manager_arrival t;
    memset(&t, 0, sizeof(t));
    if (ftc__lhj_get_int(j, "step", true, 0, INT64_MAX, &t.step) != 0 ||
        ftc__lhj_get_int(j, "commit_failures", true, 0, INT64_MAX,
                         &t.commit_failures) != 0 ||
        ftc__lhj_get_bool(j, "shrink_only", &t.shrink_only) != 0 ||
        ftc__lhj_get_string(j, "heal", true, t.heal_address,
                            sizeof(t.heal_address)) != 0 ||
        get_suspects(j, &t) != 0) {
        return field_error(j, "arrival");
    }
    json_decref(j);
    *a = t;
    return 0;
}

int ftc__manager_vote_encode(const ftc__manager_vote *v, char **out,
                             size_t *len)
{
    return dump(json_pack("{s:I, s:I, s:b}", "step", (json_int_t)v->step, "at",
                          (json_int_t)v->at, "ok", (int)v->ok),
                out, len);
}

int ftc__manager_vote_decode(const void *p, size_t n, ftc__manager_vote *v)
{
    json_t *j;
    int rc = parse(p, n, "vote", &j);
    if (rc != 0) {
        return rc;
    }
    ftc__manager_vote t = {0, 0, false};
    if (ftc__lhj_get_int(j, "step", true, 0, INT64_MAX, &t.step) != 0 ||
        ftc__lhj_get_int(j, "at", true, 0, INT64_MAX, &t.at) != 0 ||
        json_object_get(j, "ok") == NULL ||
        ftc__lhj_get_bool(j, "ok", &t.ok) != 0) {
        return field_error(j, "vote");
    }
    json_decref(j);
    *v = t;
    return 0;
}

int ftc__manager_result_encode_quorum(const ftc__quorum *q,
                                      const char *replica_id, char **out,
                                      size_t *len)
{
    json_t *jq = ftc__lhj_quorum_json(q);
    if (jq == NULL) {
        *out = NULL;
        return ftc__seterr(FTC_ENOMEM, "quorum record");
    }
    return dump(json_pack("{s:b, s:s, s:o}", "ok", 1, "replica_id", replica_id,
                          "quorum", jq),
                out, len);
}

int ftc__manager_result_encode_error(int code, const char *message, char **out,
                                     size_t *len)
{
    return dump(json_pack("{s:b, s:i, s:s}", "ok", 0, "code", code, "message",
                          message != NULL ? message : ""),
                out, len);
}

/* The members must come in replica_id order, each once (the lighthouse's
 * order), since their positions are the replica ranks. */
static int check_sorted(const ftc__quorum *q)
{
    for (size_t i = 1; i < q->n; i++) {
        if (strcmp(q->members[i - 1].replica_id, q->members[i].replica_id) >=
            0) {
            return ftc__seterr(FTC_EPROTO, "quorum record: members not in "
                                           "replica_id order");
        }
    }
    return q->n > 0 ? 0 : ftc__seterr(FTC_EPROTO, "quorum record: no members");
}

/* A failure the leader recorded: its code (a known negative one) and its
 * message become this rank's. */
static int leader_error(json_t *j)
{
    int64_t code = 0;
    char msg[512] = "";
    if (ftc__lhj_get_int(j, "code", true, FTC__ERR_LOWEST, -1, &code) != 0 ||
        ftc__lhj_get_string(j, "message", false, msg, sizeof(msg)) != 0) {
        return field_error(j, "result");
    }
    json_decref(j);
    return ftc__seterr((int)code, "%s", msg);
}

int ftc__manager_result_decode(const void *p, size_t n, ftc__quorum *q,
                               char *replica_id)
{
    ftc__quorum_init(q);
    json_t *j;
    int rc = parse(p, n, "result", &j);
    if (rc != 0) {
        return rc;
    }
    bool ok = false;
    if (json_object_get(j, "ok") == NULL ||
        ftc__lhj_get_bool(j, "ok", &ok) != 0) {
        return field_error(j, "result");
    }
    if (!ok) {
        return leader_error(j);
    }
    const json_t *jq = json_object_get(j, "quorum");
    if (ftc__lhj_get_string(j, "replica_id", true, replica_id,
                            FTC__QUORUM_STR_MAX) != 0 ||
        !json_is_object(jq) ||
        ftc__lhj_quorum(jq, FTC__QUORUM_MAX_REPLICAS_CEIL, q) != 0) {
        ftc__quorum_fini(q);
        return field_error(j, "result");
    }
    json_decref(j);
    rc = check_sorted(q);
    if (rc != 0) {
        ftc__quorum_fini(q);
    }
    return rc;
}

int ftc__manager_member_data(const ftc__manager_arrival *arrivals, size_t n,
                             char **out, size_t *len)
{
    json_t *heal = json_array();
    for (size_t i = 0; heal != NULL && i < n; i++) {
        if (json_array_append_new(heal,
                                  json_string(arrivals[i].heal_address)) != 0) {
            json_decref(heal);
            heal = NULL;
        }
    }
    return dump(heal != NULL ? json_pack("{s:o}", "heal", heal) : NULL, out,
                len);
}

int ftc__manager_member_heal_address(const ftc__quorum_member *m,
                                     int64_t group_rank,
                                     char out[FTC__QUORUM_STR_MAX])
{
    json_t *j;
    if (m->data == NULL ||
        ftc__lhj_parse_object(m->data, m->data_len, &j) != 0) {
        return ftc__seterr(FTC_EPROTO, "member %s has no healing addresses",
                           m->replica_id);
    }
    const json_t *heal = json_object_get(j, "heal");
    const json_t *a =
        json_is_array(heal) ? json_array_get(heal, (size_t)group_rank) : NULL;
    const char *s = json_is_string(a) ? json_string_value(a) : NULL;
    size_t len = s != NULL ? strlen(s) : 0;
    int rc = 0;
    if (a == NULL && json_is_array(heal)) {
        rc = ftc__seterr(FTC_ENOENT, "member %s has no group rank %lld",
                         m->replica_id, (long long)group_rank);
    } else if (s == NULL || len == 0 || len >= FTC__QUORUM_STR_MAX) {
        rc = ftc__seterr(FTC_EPROTO, "member %s: bad healing address",
                         m->replica_id);
    } else {
        memcpy(out, s, len + 1);
    }
    json_decref(j);
    return rc;
}
