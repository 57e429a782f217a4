/* The JSON of a replica's stats (ftc_lighthouse_replica_stats), carried by
 * a heartbeat: {"heals", "heal_bytes", "heal_seconds", "served_bytes",
 * "healing": null | {"from", "bytes", "total_bytes", "started_wall_ms"}}.
 * Shared by the client (encode) and the lighthouse (decode), checked the
 * same way on both sides. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/lighthouse/lighthouse_json.h"

int ftc__lhj_replica_stats_check(const ftc_lighthouse_replica_stats *st)
{
    if (st->heals < 0 || st->heal_bytes < 0 || st->served_bytes < 0 ||
        st->healing_bytes < 0 || st->healing_total_bytes < 0 ||
        st->healing_started_wall_ms < 0) {
        return ftc__seterr(FTC_EINVAL, "replica stats: a count is negative");
    }
    if (!isfinite(st->heal_seconds) || st->heal_seconds < 0) {
        return ftc__seterr(FTC_EINVAL,
                           "replica stats: heal_seconds %g is not a finite "
                           "number >= 0",
                           st->heal_seconds);
    }
    if (memchr(st->healing_from, '\0', sizeof(st->healing_from)) == NULL) {
        return ftc__seterr(FTC_EINVAL,
                           "replica stats: healing_from is not terminated");
    }
    return 0;
}

json_t *ftc__lhj_replica_stats_json(const ftc_lighthouse_replica_stats *st)
{
    json_t *healing =
        st->healing_from[0] == '\0'
            ? json_null()
            : json_pack("{s:s, s:I, s:I, s:I}", "from", st->healing_from,
                        "bytes", (json_int_t)st->healing_bytes, "total_bytes",
                        (json_int_t)st->healing_total_bytes, "started_wall_ms",
                        (json_int_t)st->healing_started_wall_ms);
    if (healing == NULL) {
        return NULL;
    }
    return json_pack("{s:I, s:I, s:f, s:I, s:o}", "heals",
                     (json_int_t)st->heals, "heal_bytes",
                     (json_int_t)st->heal_bytes, "heal_seconds",
                     st->heal_seconds, "served_bytes",
                     (json_int_t)st->served_bytes, "healing", healing);
}

static int get_seconds(const json_t *obj, double *out)
{
    const json_t *v = json_object_get(obj, "heal_seconds");
    if (v == NULL) {
        return 0;
    }
    if (!json_is_number(v)) {
        return ftc__seterr(FTC_EINVAL, "heal_seconds: expected a number");
    }
    *out = json_number_value(v);
    return 0;
}

static int get_healing(const json_t *obj, ftc_lighthouse_replica_stats *st)
{
    const json_t *h = json_object_get(obj, "healing");
    if (h == NULL || json_is_null(h)) {
        return 0;
    }
    if (!json_is_object(h)) {
        return ftc__seterr(FTC_EINVAL, "healing: expected an object or null");
    }
    int rc = ftc__lhj_get_string(h, "from", true, st->healing_from,
                                 sizeof(st->healing_from));
    if (rc == 0 && st->healing_from[0] == '\0') {
        rc = ftc__seterr(FTC_EINVAL, "healing.from: must not be empty");
    }
    rc = rc != 0 ? rc
                 : ftc__lhj_get_int(h, "bytes", false, 0, INT64_MAX,
                                    &st->healing_bytes);
    rc = rc != 0 ? rc
                 : ftc__lhj_get_int(h, "total_bytes", false, 0, INT64_MAX,
                                    &st->healing_total_bytes);
    return rc != 0 ? rc
                   : ftc__lhj_get_int(h, "started_wall_ms", false, 0, INT64_MAX,
                                      &st->healing_started_wall_ms);
}

int ftc__lhj_replica_stats(const json_t *obj, ftc_lighthouse_replica_stats *out)
{
    if (!json_is_object(obj)) {
        return ftc__seterr(FTC_EINVAL, "stats: expected an object");
    }
    ftc_lighthouse_replica_stats st;
    memset(&st, 0, sizeof(st));
    int rc = ftc__lhj_get_int(obj, "heals", false, 0, INT64_MAX, &st.heals);
    rc = rc != 0 ? rc
                 : ftc__lhj_get_int(obj, "heal_bytes", false, 0, INT64_MAX,
                                    &st.heal_bytes);
    rc = rc != 0 ? rc : get_seconds(obj, &st.heal_seconds);
    rc = rc != 0 ? rc
                 : ftc__lhj_get_int(obj, "served_bytes", false, 0, INT64_MAX,
                                    &st.served_bytes);
    rc = rc != 0 ? rc : get_healing(obj, &st);
    rc = rc != 0 ? rc : ftc__lhj_replica_stats_check(&st);
    if (rc == 0) {
        *out = st;
    }
    return rc;
}
