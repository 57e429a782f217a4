/* The manager's events in the trace (FTC_TRACE, src/base/trace.h): each
 * quorum round, heal and commit vote as a span with what it decided.
 * Called at the boundaries of those steps, so the code that runs them
 * carries one line each. */
#include <inttypes.h>
#include <stdio.h>

#include "base/json_quote.h"
#include "ft/manager/manager.h"

/* The replica's id and group rank, as the first members of args. */
static int who(const ftc_manager *m, char *out, size_t cap)
{
    char id[FTC__MGR_BASE_ID_MAX * 2];
    ftc__json_quote(id, sizeof(id), m->base_id);
    return snprintf(out, cap, "\"replica\":%s,\"group_rank\":%d", id,
                    m->o.group_rank);
}

void ftc__manager_trace_round(const ftc_manager *m, int64_t round,
                              const ftc__manager_outcome *out, int64_t t0_ns)
{
    if (!ftc__trace_on()) {
        return;
    }
    char args[1024];
    int n = who(m, args, sizeof(args));
    snprintf(args + n, sizeof(args) - (size_t)n,
             ",\"round\":%" PRId64 ",\"rc\":%d,\"quorum_id\":%" PRId64
             ",\"replica_rank\":%" PRId64 ",\"replica_world_size\":%" PRId64
             ",\"max_step\":%" PRId64 ",\"heal\":%s",
             round, out->rc, out->quorum_id, out->replica_rank,
             out->replica_world_size, out->max_step,
             out->plan.heal ? "true" : "false");
    ftc__trace_span("quorum", "quorum", t0_ns, ftc__now_ns(), args);
}

void ftc__manager_trace_heal(const ftc_manager *m, int64_t t0_ns, int rc,
                             int64_t step, const char *from, uint64_t bytes)
{
    if (!ftc__trace_on()) {
        return;
    }
    char args[1024], source[FTC_LIGHTHOUSE_STR_MAX * 2];
    int n = who(m, args, sizeof(args));
    ftc__json_quote(source, sizeof(source), from);
    snprintf(args + n, sizeof(args) - (size_t)n,
             ",\"rc\":%d,\"heal_step\":%" PRId64
             ",\"from\":%s,\"bytes\":%" PRIu64,
             rc, step, source, bytes);
    ftc__trace_span("heal", "heal", t0_ns, ftc__now_ns(), args);
}

void ftc__manager_trace_vote(const ftc_manager *m, int64_t t0_ns, int rc,
                             bool commit)
{
    if (t0_ns == 0) {
        return; /* not tracing (ftc__trace_clock) */
    }
    char args[1024];
    int n = who(m, args, sizeof(args));
    snprintf(args + n, sizeof(args) - (size_t)n,
             ",\"rc\":%d,\"vote_step\":%" PRId64 ",\"commit\":%s"
             ",\"participants\":%" PRId64,
             rc, m->step0, rc == 0 && commit ? "true" : "false",
             (int64_t)atomic_load(&m->num_participants));
    ftc__trace_span("commit", "commit_vote", t0_ns, ftc__now_ns(), args);
}
