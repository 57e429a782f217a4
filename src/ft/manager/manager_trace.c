/* The manager's events in the trace (FTC_TRACE, src/base/trace.h): each
 * quorum round, heal and commit vote as a span with what it decided.
 * Called at the boundaries of those steps, so the code that runs them
 * carries one line each. */
#include "ft/manager/manager.h"

#define N_ARGS(a) (sizeof(a) / sizeof((a)[0]))

void ftc__manager_trace_round(const ftc_manager *m, int64_t round,
                              const ftc__manager_outcome *out, int64_t t0_ns)
{
    if (!ftc__trace_on()) {
        return;
    }
    const ftc__trace_arg args[] = {
        FTC__TRACE_ARG_STR("replica", m->base_id),
        FTC__TRACE_ARG_INT("group_rank", m->o.group_rank),
        FTC__TRACE_ARG_INT("round", round),
        FTC__TRACE_ARG_INT("rc", out->rc),
        FTC__TRACE_ARG_INT("quorum_id", out->quorum_id),
        FTC__TRACE_ARG_INT("replica_rank", out->replica_rank),
        FTC__TRACE_ARG_INT("replica_world_size", out->replica_world_size),
        FTC__TRACE_ARG_INT("max_step", out->max_step),
        FTC__TRACE_ARG_BOOL("heal", out->plan.heal),
    };
    ftc__trace_span("quorum", "quorum", t0_ns, ftc__now_ns(), args,
                    N_ARGS(args));
}

void ftc__manager_trace_heal(const ftc_manager *m, int64_t t0_ns, int rc,
                             int64_t step, const char *from, uint64_t bytes)
{
    if (!ftc__trace_on()) {
        return;
    }
    const ftc__trace_arg args[] = {
        FTC__TRACE_ARG_STR("replica", m->base_id),
        FTC__TRACE_ARG_INT("group_rank", m->o.group_rank),
        FTC__TRACE_ARG_INT("rc", rc),
        FTC__TRACE_ARG_INT("heal_step", step),
        FTC__TRACE_ARG_STR("from", from),
        FTC__TRACE_ARG_UINT("bytes", bytes),
    };
    ftc__trace_span("heal", "heal", t0_ns, ftc__now_ns(), args, N_ARGS(args));
}

void ftc__manager_trace_vote(const ftc_manager *m, int64_t t0_ns, int rc,
                             bool commit)
{
    if (t0_ns == 0) {
        return; /* not tracing (ftc__trace_clock) */
    }
    const ftc__trace_arg args[] = {
        FTC__TRACE_ARG_STR("replica", m->base_id),
        FTC__TRACE_ARG_INT("group_rank", m->o.group_rank),
        FTC__TRACE_ARG_INT("rc", rc),
        FTC__TRACE_ARG_INT("vote_step", m->step0),
        FTC__TRACE_ARG_BOOL("commit", rc == 0 && commit),
        FTC__TRACE_ARG_INT("participants", atomic_load(&m->num_participants)),
    };
    ftc__trace_span("commit", "commit_vote", t0_ns, ftc__now_ns(), args,
                    N_ARGS(args));
}
