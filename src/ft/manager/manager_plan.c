/* The manager's decisions that need no I/O: participation and spares,
 * healing sources striped over the up-to-date replicas, who snapshots,
 * the group's vote and which pushed events abort a process group. */
#include <inttypes.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/manager/manager_plan.h"

void ftc__manager_up_to_date(const ftc__quorum *q, const ftc__quorum_result *r,
                             int64_t group_rank, bool init_sync, bool *up)
{
    size_t primary = 0, seen = 0;
    size_t want =
        r->max_world_size > 0 ? (size_t)(group_rank % r->max_world_size) : 0;
    for (size_t i = 0; i < q->n; i++) {
        if (q->members[i].step == r->max_step && seen++ == want) {
            primary = i;
        }
    }
    bool force = init_sync && r->max_step == 0;
    for (size_t i = 0; i < q->n; i++) {
        up[i] = q->members[i].step == r->max_step && (!force || i == primary);
    }
}

void ftc__manager_plan_build(const ftc__quorum *q, const ftc__quorum_result *r,
                             int64_t group_rank, bool init_sync,
                             bool allow_heal, int world_size_mode,
                             int64_t min_replica_size, int max_sources,
                             ftc__manager_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->heal = r->heal && allow_heal;
    /* torchft's asynchronous quorum: the replicas at max_step participate;
     * one that was behind ran this step's forward pass on its old state,
     * so it contributes zeros. */
    out->participating = r->max_replica_rank >= 0;
    out->num_participants = r->max_world_size;
    if (world_size_mode == FTC_WORLD_FIXED_WITH_SPARES) {
        if (out->participating && r->max_replica_rank >= min_replica_size) {
            out->participating = false;
            out->spare = true;
        }
        if (out->num_participants > min_replica_size) {
            out->num_participants = min_replica_size;
        }
    }
    bool *ups = ftc__calloc(q->n > 0 ? q->n : 1, sizeof(*ups));
    if (ups == NULL || q->n == 0 || r->max_world_size <= 0) {
        ftc__free(ups);
        return;
    }
    ftc__manager_up_to_date(q, r, group_rank, init_sync, ups);
    bool anyone_heals = false;
    for (size_t i = 0; i < q->n; i++) {
        anyone_heals = anyone_heals || !ups[i];
    }
    size_t self = (size_t)r->replica_rank;
    out->serve =
        ups[self] && anyone_heals && (r->n_recover_dst > 0 || max_sources > 1);
    if (out->heal && r->recover_src_replica_rank >= 0) {
        size_t cap = sizeof(out->sources) / sizeof(out->sources[0]);
        size_t want = max_sources < 1 ? 1 : (size_t)max_sources;
        want = want < cap ? want : cap;
        size_t first = (size_t)r->recover_src_replica_rank;
        for (size_t k = 0; k < q->n && out->n_sources < want; k++) {
            size_t i = (first + k) % q->n;
            if (ups[i]) {
                out->sources[out->n_sources++] = i;
            }
        }
    }
    ftc__free(ups);
}

bool ftc__manager_event_aborts(const char *lost_id, int64_t event_quorum_id,
                               int64_t pg_quorum_id,
                               const char (*members)[FTC__QUORUM_STR_MAX],
                               size_t n)
{
    bool member = false;
    for (size_t i = 0; i < n && !member; i++) {
        member = strcmp(members[i], lost_id) == 0;
    }
    if (!member) {
        return false;
    }
    if (event_quorum_id == pg_quorum_id) {
        return true;
    }
    /* Ids of one epoch grow; across epochs (a restarted lighthouse) they
     * cannot be ordered, and an event of another epoch is not about this
     * process group's quorum: its collectives fail on their own. */
    return ftc__quorum_id_epoch(event_quorum_id) ==
               ftc__quorum_id_epoch(pg_quorum_id) &&
           ftc__quorum_id_counter(event_quorum_id) >
               ftc__quorum_id_counter(pg_quorum_id);
}

int ftc__manager_decide(const ftc__manager_vote *votes, size_t n, bool *commit,
                        int64_t *at_min)
{
    *commit = n > 0;
    *at_min = n > 0 ? votes[0].at : 0;
    for (size_t i = 0; i < n; i++) {
        if (votes[i].step != votes[0].step) {
            *commit = false;
            return ftc__seterr(FTC_EPROTO,
                               "group ranks voted on different steps: rank "
                               "0 on %" PRId64 ", rank %zu on %" PRId64,
                               votes[0].step, i, votes[i].step);
        }
        *commit = *commit && votes[i].ok;
        if (votes[i].at < *at_min) {
            *at_min = votes[i].at;
        }
    }
    return 0;
}
