/* Formats the status line shown live on a terminal and as periodic
 * progress lines otherwise. */
#include "run/run_status.h"

#include <math.h>
#include <stdio.h>

#include "run/run_job.h"

void run_status_format(const run_job *job, int64_t now_ms, char *buf,
                       size_t cap)
{
    const run_stats *s = &job->stats;
    int up = 0;
    for (int g = 0; g < job->n; g++) {
        up += job->groups[g].state == RUN_GROUP_RUNNING &&
              job->groups[g].live == job->groups[g].nranks;
    }
    char loss[32] = "-", quorum[32] = "-";
    if (!isnan(s->loss)) {
        snprintf(loss, sizeof(loss), "%.4g", s->loss);
    }
    if (s->participants >= 0) {
        snprintf(quorum, sizeof(quorum), "%lld", (long long)s->participants);
    }
    run_recovery_summary rec;
    run_stats_recovery(s, &rec);
    char recovery[96] = "";
    if (rec.survivors_n > 0 || rec.victim_n > 0) {
        snprintf(recovery, sizeof(recovery),
                 " | recovery: survivors %.2f s, back %.2f s (mean)",
                 (double)rec.survivors_mean_ms / 1000.0,
                 (double)rec.victim_mean_ms / 1000.0);
    }
    snprintf(buf, cap,
             "%.1f s | step %lld | loss %s | quorum %s | up %d/%d | "
             "failures %lld (injected %lld)%s",
             (double)now_ms / 1000.0, (long long)s->max_step, loss, quorum, up,
             job->n, (long long)s->failed, (long long)s->injected, recovery);
}
