/* The lighthouse's JSON codec: members, quorums, requests and options to
 * and from jansson values. Pure (no I/O, no clock) and fuzzed. */
#ifndef FTC_FT_LIGHTHOUSE_JSON_H
#define FTC_FT_LIGHTHOUSE_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ft/quorum/quorum.h"
#include "ftc/ft.h"

/* Parses text as one JSON object: UTF-8, duplicate keys rejected, nesting
 * at most jansson's 2048 levels. FTC_EINVAL with the position and reason;
 * *out is a new reference on success. */
int ftc__lhj_parse_object(const char *text, size_t len, json_t **out);

/* Reads obj[key] into out (cap bytes, NUL included). Absent: "" if
 * !required, else FTC_EINVAL. FTC_EINVAL if not a string, FTC_EMSGSIZE if
 * it does not fit; out is unchanged on error. */
int ftc__lhj_get_string(const json_t *obj, const char *key, bool required,
                        char *out, size_t cap);
/* Reads an integer in [min, max]; absent: *out unchanged unless required
 * (then FTC_EINVAL). Reals, strings and out-of-range values: FTC_EINVAL. */
int ftc__lhj_get_int(const json_t *obj, const char *key, bool required,
                     int64_t min, int64_t max, int64_t *out);
/* Reads a boolean; absent: *out unchanged. */
int ftc__lhj_get_bool(const json_t *obj, const char *key, bool *out);

/* A member object (torchft QuorumMember; docs/protocol.md) into m. Only
 * replica_id is required. data (any JSON value but null) is kept as its
 * compact text, at most max_data_bytes (FTC_EMSGSIZE). On success m owns
 * its data (ftc__quorum_member_fini); on error m holds nothing. */
int ftc__lhj_member(const json_t *obj, uint32_t max_data_bytes,
                    ftc__quorum_member *m);
/* "suspects" of obj, if present: an array of at most
 * FTC__QUORUM_SUSPECTS_MAX replica ids (a manager's report of the groups
 * it could not reach), given to m (which owns none) as its suspects.
 * FTC_EINVAL or FTC_EMSGSIZE naming the bad element; m unchanged. */
int ftc__lhj_suspects(const json_t *obj, ftc__quorum_member *m);
/* A member as JSON; NULL on FTC_ENOMEM (message set). */
json_t *ftc__lhj_member_json(const ftc__quorum_member *m);
/* A quorum as JSON: quorum_id, its epoch and counter (each exact in
 * JavaScript), created_wall_ms and the members in order. */
json_t *ftc__lhj_quorum_json(const ftc__quorum *q);
/* The reverse (client side). At most max_members members, each once;
 * they are kept in the order sent. On error q is left empty. */
int ftc__lhj_quorum(const json_t *obj, size_t max_members, ftc__quorum *q);

/* What a goodbye says besides the replica_id: the steps it committed (-1:
 * not said) and whether its run reached its end. */
typedef struct ftc__lhj_leaving {
    int64_t step;
    bool finished;
} ftc__lhj_leaving;

/* {"replica_id": "...", "stats": {...}, "step": N, "finished": b}
 * (heartbeat, goodbye). stats is optional; when stats is not NULL,
 * *has_stats says whether it came and *stats holds it (zeros otherwise).
 * step (>= 0) and finished are optional; when leaving is not NULL it holds
 * them ({-1, false} when absent). */
int ftc__lhj_replica_request(const char *body, size_t len,
                             char id[FTC__QUORUM_STR_MAX],
                             ftc_lighthouse_replica_stats *stats,
                             bool *has_stats, ftc__lhj_leaving *leaving);

/* {"replica_id": "...", "quorum_id": Q, "step": N} (commit): all three
 * required, the replica_id non-empty, quorum_id >= 0 and step >= 1. */
int ftc__lhj_commit_request(const char *body, size_t len,
                            char id[FTC__QUORUM_STR_MAX], int64_t *quorum_id,
                            int64_t *step);

/* A replica's stats (lighthouse_json_replica.c): every count >= 0,
 * heal_seconds finite and >= 0, healing_from terminated; FTC_EINVAL. */
int ftc__lhj_replica_stats_check(const ftc_lighthouse_replica_stats *st);
/* As JSON; NULL on FTC_ENOMEM. */
json_t *ftc__lhj_replica_stats_json(const ftc_lighthouse_replica_stats *st);
/* The reverse, checked; absent fields are 0. On error *out is unchanged. */
int ftc__lhj_replica_stats(const json_t *obj,
                           ftc_lighthouse_replica_stats *out);
/* {"member": {...}, "timeout_ms": N, "roster": R}; *timeout_ms is -1 when
 * absent, *roster (the roster version the client holds, 0 for none) -1
 * when absent: a client that never sends it gets full answers only. m as
 * for ftc__lhj_member. */
int ftc__lhj_join_request(const char *body, size_t len, uint32_t max_data_bytes,
                          ftc__quorum_member *m, int64_t *timeout_ms,
                          int64_t *roster);

/* A compact answer (lighthouse_json_compact.c): q's ids and what differs
 * from member to member each round, for a client holding q's roster under
 * version roster: {"quorum_id", "created_wall_ms", "roster", "n", "step"
 * (the largest), "others": [{"rank", "step", "commit_failures",
 * "shrink_only"}, ...] (the members not at step with no failure and no
 * shrink_only, ascending)}. NULL on FTC_ENOMEM. */
json_t *ftc__lhj_compact_json(const ftc__quorum *q, int64_t roster);
/* The reverse: q holds the roster of version roster (members in rank
 * order, as last received in full); on success its ids, steps,
 * commit_failures and shrink_only are the answer's. FTC_ESTALE (the answer
 * is for another roster), FTC_EINVAL (malformed, another member count, a
 * rank out of range or order), FTC_ENOMEM; q is unchanged on any error. */
int ftc__lhj_compact_apply(const json_t *obj, int64_t roster, ftc__quorum *q);

/* A delta answer (lighthouse_json_delta.c), for a client holding the
 * roster base under version base_roster while q's is roster: the compact
 * answer of q plus {"base": base_roster, "removed": [ranks in base of the
 * members gone, ascending], "added": [{"rank": rank in q, "member": {...}},
 * ascending]}; a member whose entry changed is removed and added. NULL on
 * FTC_ENOMEM. */
json_t *ftc__lhj_delta_json(const ftc__quorum *base, int64_t base_roster,
                            const ftc__quorum *q, int64_t roster);
/* The reverse: the new roster built from base (held under base_roster)
 * into out, with the answer's ids and steps as ftc__lhj_compact_apply
 * sets them. FTC_ESTALE (a delta from another roster), FTC_EINVAL
 * (malformed: sizes that do not add up, ranks out of range or order,
 * members out of replica_id order or repeated, a bad member), FTC_ENOMEM;
 * out is empty on any error. */
int ftc__lhj_delta_apply(const json_t *obj, const ftc__quorum *base,
                         int64_t base_roster, ftc__quorum *out);

/* Applies the options present in obj (min_replicas, join_timeout_ms,
 * heartbeat_timeout_ms, strict_shrink_only, max_replicas, max_data_bytes;
 * others ignored) to *o, checked as a whole: on any error *o is
 * unchanged. */
int ftc__lhj_job_options(const json_t *obj, ftc__quorum_opts *o);
/* The same options as JSON. */
json_t *ftc__lhj_job_options_json(const ftc__quorum_opts *o);
/* "key=value,key=value" (the CLI's --job NAME:...) as a JSON object of
 * integers and booleans. FTC_EINVAL names the bad pair. */
int ftc__lhj_spec_options(const char *spec, json_t **out);

/* Compact JSON text of j in a buffer from ftc__malloc (NUL-terminated;
 * *len excludes the NUL). FTC_ENOMEM. */
int ftc__lhj_dump(const json_t *j, char **out, size_t *len);

#endif
