/* The lighthouse's JSON codec: every field type-checked and length-checked
 * before anything is kept, so a bad request changes nothing. */
#include "ft/lighthouse/lighthouse_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"

int ftc__lhj_parse_object(const char *text, size_t len, json_t **out)
{
    *out = NULL;
    json_error_t e;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    if (j == NULL) {
        return ftc__seterr(FTC_EINVAL, "invalid JSON at line %d column %d: %s",
                           e.line, e.column, e.text);
    }
    if (!json_is_object(j)) {
        json_decref(j);
        return ftc__seterr(FTC_EINVAL, "expected a JSON object");
    }
    *out = j;
    return 0;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

int ftc__lhj_get_string(const json_t *obj, const char *key, bool required,
                        char *out, size_t cap)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        if (required) {
            return ftc__seterr(FTC_EINVAL, "missing field %s", key);
        }
        out[0] = '\0';
        return 0;
    }
    if (!json_is_string(v)) {
        return ftc__seterr(FTC_EINVAL, "%s: expected a string, got %s", key,
                           type_name(v));
    }
    size_t n = json_string_length(v);
    if (n >= cap) {
        return ftc__seterr(FTC_EMSGSIZE, "%s: %zu B > max %zu B", key, n,
                           cap - 1);
    }
    memcpy(out, json_string_value(v), n + 1);
    return 0;
}

int ftc__lhj_get_int(const json_t *obj, const char *key, bool required,
                     int64_t min, int64_t max, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        return required ? ftc__seterr(FTC_EINVAL, "missing field %s", key) : 0;
    }
    if (!json_is_integer(v)) {
        return ftc__seterr(FTC_EINVAL, "%s: expected an integer, got %s", key,
                           type_name(v));
    }
    json_int_t x = json_integer_value(v);
    if (x < min || x > max) {
        return ftc__seterr(FTC_EINVAL,
                           "%s: %lld not in [%" PRId64 ", %" PRId64 "]", key,
                           (long long)x, min, max);
    }
    *out = (int64_t)x;
    return 0;
}

int ftc__lhj_get_bool(const json_t *obj, const char *key, bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        return 0;
    }
    if (!json_is_boolean(v)) {
        return ftc__seterr(FTC_EINVAL, "%s: expected a boolean, got %s", key,
                           type_name(v));
    }
    *out = json_is_true(v);
    return 0;
}

int ftc__lhj_dump(const json_t *j, char **out, size_t *len)
{
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
    size_t n = json_dumpb(j, NULL, 0, flags);
    char *buf = ftc__malloc(n + 1);
    if (buf == NULL) {
        return ftc__seterr(FTC_ENOMEM, "JSON text of %zu B", n);
    }
    if (n > 0 && json_dumpb(j, buf, n, flags) != n) {
        ftc__free(buf);
        return ftc__seterr(FTC_ENOMEM, "JSON text of %zu B", n);
    }
    buf[n] = '\0';
    *out = buf;
    if (len != NULL) {
        *len = n;
    }
    return 0;
}

/* The member's data: any JSON value but null, kept as compact text. */
static int get_data(const json_t *obj, uint32_t max, ftc__quorum_member *m)
{
    const json_t *v = json_object_get(obj, "data");
    if (v == NULL || json_is_null(v)) {
        return 0;
    }
    size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
    if (n > max) {
        return ftc__seterr(FTC_EMSGSIZE, "member.data: %zu B > max %u B", n,
                           max);
    }
    char *text;
    int rc = ftc__lhj_dump(v, &text, &m->data_len);
    if (rc == 0) {
        m->data = text;
    }
    return rc;
}

int ftc__lhj_suspects(const json_t *obj, ftc__quorum_member *m)
{
    const json_t *v = json_object_get(obj, "suspects");
    if (v == NULL || json_is_null(v)) {
        return 0;
    }
    if (!json_is_array(v)) {
        return ftc__seterr(FTC_EINVAL, "suspects: expected an array, got %s",
                           type_name(v));
    }
    size_t n = json_array_size(v);
    if (n > FTC__QUORUM_SUSPECTS_MAX) {
        return ftc__seterr(FTC_EMSGSIZE, "suspects: %zu, at most %d", n,
                           FTC__QUORUM_SUSPECTS_MAX);
    }
    const char *ids[FTC__QUORUM_SUSPECTS_MAX];
    for (size_t i = 0; i < n; i++) {
        ids[i] = json_string_value(json_array_get(v, i));
        if (ids[i] == NULL) {
            return ftc__seterr(FTC_EINVAL, "suspects[%zu]: not a string", i);
        }
    }
    return ftc__quorum_member_set_suspects(m, ids, n);
}

int ftc__lhj_member(const json_t *obj, uint32_t max_data_bytes,
                    ftc__quorum_member *m)
{
    memset(m, 0, sizeof(*m));
    if (!json_is_object(obj)) {
        return ftc__seterr(FTC_EINVAL, "member: expected an object, got %s",
                           obj == NULL ? "nothing" : type_name(obj));
    }
    ftc__quorum_member t;
    memset(&t, 0, sizeof(t));
    int64_t world = 0;
    int rc = ftc__lhj_get_string(obj, "replica_id", true, t.replica_id,
                                 sizeof(t.replica_id));
    if (rc == 0 && t.replica_id[0] == '\0') {
        rc = ftc__seterr(FTC_EINVAL, "replica_id: must not be empty");
    }
    if (rc == 0) {
        rc = ftc__lhj_get_string(obj, "address", false, t.address,
                                 sizeof(t.address));
    }
    if (rc == 0) {
        rc = ftc__lhj_get_string(obj, "store_address", false, t.store_address,
                                 sizeof(t.store_address));
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "step", false, 0, INT64_MAX, &t.step);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "world_size", false, 0, INT64_MAX, &world);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_bool(obj, "shrink_only", &t.shrink_only);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "commit_failures", false, 0, INT64_MAX,
                              &t.commit_failures);
    }
    if (rc == 0) {
        rc = get_data(obj, max_data_bytes, &t);
    }
    if (rc == 0) {
        rc = ftc__lhj_suspects(obj, &t);
    }
    if (rc != 0) {
        ftc__quorum_member_fini(&t);
        return ftc__adderr(rc, "member");
    }
    t.world_size = (uint64_t)world;
    *m = t;
    return 0;
}

/* The member's data as a JSON value; text that is not JSON (only a
 * C caller of the core could store that) travels as a string. */
static json_t *data_json(const ftc__quorum_member *m)
{
    json_t *v = json_loadb(m->data, m->data_len, JSON_DECODE_ANY, NULL);
    return v != NULL ? v : json_stringn(m->data, m->data_len);
}

json_t *ftc__lhj_member_json(const ftc__quorum_member *m)
{
    json_t *j = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:b, s:I}", "replica_id", m->replica_id,
        "address", m->address, "store_address", m->store_address, "step",
        (json_int_t)m->step, "world_size",
        (json_int_t)(m->world_size > INT64_MAX ? INT64_MAX : m->world_size),
        "shrink_only", (int)m->shrink_only, "commit_failures",
        (json_int_t)m->commit_failures);
    if (j != NULL && m->data_len > 0 &&
        json_object_set_new(j, "data", data_json(m)) != 0) {
        json_decref(j);
        j = NULL;
    }
    if (j == NULL) {
        ftc__seterr(FTC_ENOMEM, "JSON of member %s", m->replica_id);
    }
    return j;
}

json_t *ftc__lhj_quorum_json(const ftc__quorum *q)
{
    json_t *members = json_array();
    for (size_t i = 0; members != NULL && i < q->n; i++) {
        json_t *m = ftc__lhj_member_json(&q->members[i]);
        if (m == NULL || json_array_append_new(members, m) != 0) {
            json_decref(members);
            members = NULL;
        }
    }
    json_t *j =
        members == NULL
            ? NULL
            : json_pack("{s:I, s:I, s:I, s:I, s:o}", "quorum_id",
                        (json_int_t)q->quorum_id, "epoch",
                        (json_int_t)ftc__quorum_id_epoch(q->quorum_id),
                        "counter",
                        (json_int_t)ftc__quorum_id_counter(q->quorum_id),
                        "created_wall_ms", (json_int_t)q->created_wall_ms,
                        "members", members);
    if (j == NULL) {
        ftc__seterr(FTC_ENOMEM, "JSON of quorum of %zu", q->n);
    }
    return j;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* FTC_EINVAL naming a replica_id listed twice. A quorum from a lighthouse
 * is sorted, so one pass decides; another order costs a sort. */
static int check_unique(const ftc__quorum *q)
{
    bool sorted = true;
    for (size_t i = 1; i < q->n && sorted; i++) {
        sorted =
            strcmp(q->members[i - 1].replica_id, q->members[i].replica_id) < 0;
    }
    if (sorted) {
        return 0;
    }
    const char **ids = ftc__malloc(q->n * sizeof(*ids));
    if (ids == NULL) {
        return ftc__seterr(FTC_ENOMEM, "quorum of %zu members", q->n);
    }
    for (size_t i = 0; i < q->n; i++) {
        ids[i] = q->members[i].replica_id;
    }
    qsort(ids, q->n, sizeof(*ids), by_id);
    int rc = 0;
    for (size_t i = 1; i < q->n && rc == 0; i++) {
        if (strcmp(ids[i - 1], ids[i]) == 0) {
            rc = ftc__seterr(FTC_EINVAL, "quorum lists %s twice", ids[i]);
        }
    }
    ftc__free(ids);
    return rc;
}

int ftc__lhj_quorum(const json_t *obj, size_t max_members, ftc__quorum *q)
{
    ftc__quorum_init(q);
    if (!json_is_object(obj)) {
        return ftc__seterr(FTC_EINVAL, "quorum: expected an object");
    }
    int64_t id = 0, created = 0;
    int rc = ftc__lhj_get_int(obj, "quorum_id", true, 0, INT64_MAX, &id);
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "created_wall_ms", false, INT64_MIN,
                              INT64_MAX, &created);
    }
    const json_t *ms = json_object_get(obj, "members");
    if (rc == 0 && !json_is_array(ms)) {
        rc = ftc__seterr(FTC_EINVAL, "quorum.members: expected an array");
    }
    if (rc == 0 && json_array_size(ms) > max_members) {
        rc = ftc__seterr(FTC_EMSGSIZE, "quorum: %zu members > max %zu",
                         json_array_size(ms), max_members);
    }
    if (rc != 0) {
        return rc;
    }
    size_t n = json_array_size(ms);
    if (n > 0) {
        q->members = ftc__calloc(n, sizeof(*q->members));
        if (q->members == NULL) {
            return ftc__seterr(FTC_ENOMEM, "quorum of %zu members", n);
        }
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = ftc__lhj_member(json_array_get(ms, i), FTC__QUORUM_MAX_DATA_CEIL,
                             &q->members[i]);
        q->n = i + (rc == 0);
    }
    if (rc == 0) {
        rc = check_unique(q);
    }
    if (rc != 0) {
        ftc__quorum_fini(q);
        return rc;
    }
    q->quorum_id = id;
    q->created_wall_ms = created;
    return 0;
}

int ftc__lhj_replica_request(const char *body, size_t len,
                             char id[FTC__QUORUM_STR_MAX],
                             ftc_lighthouse_replica_stats *stats,
                             bool *has_stats, ftc__lhj_leaving *leaving)
{
    json_t *j;
    int rc = ftc__lhj_parse_object(body, len, &j);
    if (rc != 0) {
        return rc;
    }
    char tmp[FTC__QUORUM_STR_MAX];
    rc = ftc__lhj_get_string(j, "replica_id", true, tmp, sizeof(tmp));
    if (rc == 0 && tmp[0] == '\0') {
        rc = ftc__seterr(FTC_EINVAL, "replica_id: must not be empty");
    }
    ftc_lighthouse_replica_stats st;
    memset(&st, 0, sizeof(st));
    const json_t *sj = json_object_get(j, "stats");
    if (rc == 0 && sj != NULL && stats != NULL) {
        rc = ftc__lhj_replica_stats(sj, &st);
    }
    ftc__lhj_leaving left = {-1, false};
    if (rc == 0) {
        rc = ftc__lhj_get_int(j, "step", false, 0, INT64_MAX, &left.step);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_bool(j, "finished", &left.finished);
    }
    if (rc == 0) {
        memcpy(id, tmp, sizeof(tmp));
        if (stats != NULL) {
            *stats = st;
            *has_stats = sj != NULL;
        }
        if (leaving != NULL) {
            *leaving = left;
        }
    }
    json_decref(j);
    return rc;
}

int ftc__lhj_commit_request(const char *body, size_t len,
                            char id[FTC__QUORUM_STR_MAX], int64_t *quorum_id,
                            int64_t *step)
{
    json_t *j;
    int rc = ftc__lhj_parse_object(body, len, &j);
    if (rc != 0) {
        return rc;
    }
    char tmp[FTC__QUORUM_STR_MAX];
    int64_t q = 0, s = 0;
    rc = ftc__lhj_get_string(j, "replica_id", true, tmp, sizeof(tmp));
    if (rc == 0 && tmp[0] == '\0') {
        rc = ftc__seterr(FTC_EINVAL, "replica_id: must not be empty");
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(j, "quorum_id", true, 0, INT64_MAX, &q);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(j, "step", true, 1, INT64_MAX, &s);
    }
    if (rc == 0) {
        memcpy(id, tmp, sizeof(tmp));
        *quorum_id = q;
        *step = s;
    }
    json_decref(j);
    return rc;
}

int ftc__lhj_join_request(const char *body, size_t len, uint32_t max_data_bytes,
                          ftc__quorum_member *m, int64_t *timeout_ms,
                          int64_t *roster)
{
    memset(m, 0, sizeof(*m));
    json_t *j;
    int rc = ftc__lhj_parse_object(body, len, &j);
    if (rc != 0) {
        return rc;
    }
    int64_t t = -1, v = -1;
    rc = ftc__lhj_get_int(j, "timeout_ms", false, 0, INT64_MAX, &t);
    if (rc == 0) {
        rc = ftc__lhj_get_int(j, "roster", false, 0, INT64_MAX, &v);
    }
    if (rc == 0) {
        rc = ftc__lhj_member(json_object_get(j, "member"), max_data_bytes, m);
    }
    if (rc == 0) {
        *timeout_ms = t;
        *roster = v;
    }
    json_decref(j);
    return rc;
}

int ftc__lhj_job_options(const json_t *obj, ftc__quorum_opts *o)
{
    if (!json_is_object(obj)) {
        return ftc__seterr(FTC_EINVAL, "options: expected an object");
    }
    ftc__quorum_opts t = *o;
    int64_t min =
        (int64_t)(t.min_replicas > INT64_MAX ? INT64_MAX : t.min_replicas);
    int64_t reps = t.max_replicas, data = t.max_data_bytes;
    int rc = ftc__lhj_get_int(obj, "min_replicas", false, 0,
                              FTC__QUORUM_MAX_REPLICAS_CEIL, &min);
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "join_timeout_ms", false, 0, INT64_MAX,
                              &t.join_timeout_ms);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "heartbeat_timeout_ms", false, 1, INT64_MAX,
                              &t.heartbeat_timeout_ms);
    }
    if (rc == 0) {
        rc =
            ftc__lhj_get_bool(obj, "strict_shrink_only", &t.strict_shrink_only);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "max_replicas", false, 1,
                              FTC__QUORUM_MAX_REPLICAS_CEIL, &reps);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "max_data_bytes", false, 0,
                              FTC__QUORUM_MAX_DATA_CEIL, &data);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "rollback_after_ms", false, 0, INT64_MAX,
                              &t.rollback_after_ms);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(obj, "exclude_ms", false, 0, INT64_MAX,
                              &t.exclude_ms);
    }
    if (rc != 0) {
        return rc;
    }
    t.min_replicas = (uint64_t)min;
    t.max_replicas = (uint32_t)reps;
    t.max_data_bytes = (uint32_t)data;
    rc = ftc__quorum_opts_check(&t);
    if (rc == 0) {
        *o = t;
    }
    return rc;
}

json_t *ftc__lhj_job_options_json(const ftc__quorum_opts *o)
{
    json_t *j = json_pack(
        "{s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:I}", "min_replicas",
        (json_int_t)(o->min_replicas > INT64_MAX ? INT64_MAX : o->min_replicas),
        "join_timeout_ms", (json_int_t)o->join_timeout_ms,
        "heartbeat_timeout_ms", (json_int_t)o->heartbeat_timeout_ms,
        "strict_shrink_only", (int)o->strict_shrink_only, "max_replicas",
        (json_int_t)o->max_replicas, "max_data_bytes",
        (json_int_t)o->max_data_bytes, "rollback_after_ms",
        (json_int_t)o->rollback_after_ms, "exclude_ms",
        (json_int_t)o->exclude_ms);
    if (j == NULL) {
        ftc__seterr(FTC_ENOMEM, "JSON of job options");
    }
    return j;
}

/* One "key=value" of a spec: an integer or true/false. */
static int spec_pair(json_t *obj, const char *pair, size_t n)
{
    char buf[128];
    if (n >= sizeof(buf)) {
        return ftc__seterr(FTC_EINVAL, "job option '%.*s...' too long", 32,
                           pair);
    }
    memcpy(buf, pair, n);
    buf[n] = '\0';
    char *eq = strchr(buf, '=');
    if (eq == NULL || eq == buf || eq[1] == '\0') {
        return ftc__seterr(FTC_EINVAL, "job option '%s': expected key=value",
                           buf);
    }
    *eq = '\0';
    const char *value = eq + 1;
    json_t *v;
    if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0) {
        v = json_boolean(value[0] == 't');
    } else {
        char *end;
        errno = 0;
        long long x = strtoll(value, &end, 10);
        if (errno != 0 || *end != '\0') {
            return ftc__seterr(FTC_EINVAL,
                               "job option %s: '%s' is not an integer or "
                               "true/false",
                               buf, value);
        }
        v = json_integer(x);
    }
    if (json_object_get(obj, buf) != NULL) {
        json_decref(v);
        return ftc__seterr(FTC_EINVAL, "job option %s given twice", buf);
    }
    if (json_object_set_new(obj, buf, v) != 0) {
        return ftc__seterr(FTC_ENOMEM, "job option %s", buf);
    }
    return 0;
}

int ftc__lhj_spec_options(const char *spec, json_t **out)
{
    json_t *obj = json_object();
    if (obj == NULL) {
        return ftc__seterr(FTC_ENOMEM, "job options");
    }
    int rc = 0;
    const char *p = spec;
    while (rc == 0 && *p != '\0') {
        size_t n = strcspn(p, ",");
        rc = spec_pair(obj, p, n);
        p += n + (p[n] == ',');
    }
    if (rc != 0) {
        json_decref(obj);
        return rc;
    }
    *out = obj;
    return 0;
}
