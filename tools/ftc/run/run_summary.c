/* The summary of a finished job: what ran, how it ended, each failure
 * and its recovery, and each replica group's final loss and checksum;
 * printed as a table and written as JSON with jansson. */
#include "run/run_summary.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"

static const char *group_status(run_group_state s)
{
    static const char *const names[] = {"waiting", "running",  "stopped",
                                        "dying",   "finished", "failed",
                                        "ended"};
    return names[s];
}

static const char *failure_kind(const run_failure *f)
{
    return !f->injected ? "exit" : f->stop ? "stop" : "kill";
}

/* The group's final loss: its rank 0 result, else its last step. */
static double final_loss(const run_replica_stats *rs)
{
    double reported = rs->results[RUN_SOURCE_TRAINER][0].final_loss;
    return !isnan(reported) ? reported : rs->last_loss;
}

/* How the groups that finished (every rank exited 0) compare; groups
 * stopped or failed have none to compare. */
typedef struct verdict {
    int finished; /* groups that finished */
    int source;   /* whose checksums are compared (run_source), or -1 */
    int identical;
} verdict;

static verdict judge(const run_job *job)
{
    verdict v = {0, -1, 0};
    int *counted = ftc__calloc((size_t)job->n, sizeof(int));
    for (int g = 0; counted != NULL && g < job->n; g++) {
        counted[g] = job->groups[g].state == RUN_GROUP_FINISHED;
        v.finished += counted[g];
    }
    if (counted != NULL) {
        v.source = run_stats_result_source(&job->stats, counted);
        v.identical = run_stats_checksums_identical(&job->stats, counted);
    }
    ftc__free(counted);
    return v;
}

/* The result shown for rank r of a group: from the compared source, else
 * the trainer's, else the manager's; NULL when neither reported. */
static const char *shown_checksum(const run_replica_stats *rs, int source,
                                  int r)
{
    if (source >= 0) {
        const run_rank_result *res = &rs->results[source][r];
        return res->have ? res->checksum : NULL;
    }
    for (int src = 0; src < RUN_SOURCES; src++) {
        if (rs->results[src][r].have) {
            return rs->results[src][r].checksum;
        }
    }
    return NULL;
}

static const char *source_name(int source)
{
    return source == RUN_SOURCE_TRAINER   ? "trainer"
           : source == RUN_SOURCE_MANAGER ? "manager"
                                          : NULL;
}

static double secs(int64_t ms)
{
    return (double)ms / 1000.0;
}

static void print_ms(const char *label, int64_t ms)
{
    if (ms < 0) {
        printf("  %-10s", label);
    } else {
        printf("  %8.2f s", secs(ms));
    }
}

void run_summary_print(const run_job *job)
{
    const run_stats *s = &job->stats;
    const run_opts *o = job->opts;
    printf("\nftc run summary: job %s, %d x %d ranks, %.1f s, %s (exit %d)\n",
           o->job, o->replicas, o->ranks, secs(job->stopped_at_ms),
           run_job_outcome_name(job->outcome), run_job_exit_code(job));
    printf("  steps committed   %lld\n", (long long)s->max_step);
    printf("  failures          %lld injected, %lld on their own (seed "
           "%llu)\n",
           (long long)s->injected, (long long)(s->failed - s->injected),
           (unsigned long long)o->seed);
    run_recovery_summary rec;
    run_stats_recovery(s, &rec);
    if (rec.survivors_n > 0 || rec.victim_n > 0) {
        printf("  recovery          survivors mean %.2f s, max %.2f s; victim "
               "back mean %.2f s, max %.2f s\n",
               secs(rec.survivors_mean_ms), secs(rec.survivors_max_ms),
               secs(rec.victim_mean_ms), secs(rec.victim_max_ms));
    }
    if (s->n_failures > 0) {
        printf("\n  %-4s %9s  %-5s %-12s %6s  %10s  %10s  %s\n", "#", "at",
               "kind", "victim", "step", "survivors", "back", "detail");
    }
    for (int i = 0; i < s->n_failures; i++) {
        const run_failure *f = &s->failures[i];
        printf("  %-4d %7.2f s  %-5s %-12s %6lld", i + 1, secs(f->at_ms),
               failure_kind(f), job->groups[f->victim].id, (long long)f->step);
        print_ms("-", f->survivors_ms);
        print_ms("-", f->victim_ms);
        printf("  %s\n", f->detail);
    }
    verdict v = judge(job);
    printf("\n  %-12s %-9s %8s %7s %12s  %s\n", "replica", "status", "restarts",
           "steps", "final loss", "checksum (rank 0)");
    for (int g = 0; g < job->n; g++) {
        const run_group *grp = &job->groups[g];
        const run_replica_stats *rs = &s->replicas[g];
        char loss[32] = "-";
        if (!isnan(final_loss(rs))) {
            snprintf(loss, sizeof(loss), "%.6g", final_loss(rs));
        }
        const char *sum = shown_checksum(rs, v.source, 0);
        printf("  %-12s %-9s %8d %7lld %12s  %s\n", grp->id,
               group_status(grp->state), grp->restarts,
               (long long)rs->last_step, loss, sum != NULL ? sum : "-");
    }
    if (v.identical) {
        printf("  checksums: identical across the %d replica groups that "
               "finished (reported by the %ss)\n",
               v.finished, source_name(v.source));
    } else if (v.source >= 0) {
        printf("  checksums: NOT identical across the %d replica groups that "
               "finished (reported by the %ss)\n",
               v.finished, source_name(v.source));
    } else {
        printf("  checksums: not compared: %s\n",
               v.finished == 0 ? "no replica group finished"
                               : "not every rank of the groups that finished "
                                 "reported one");
    }
    fflush(stdout);
}

/* ---------------------------------------------------------------- JSON */

static json_t *ms_or_null(int64_t ms)
{
    return ms < 0 ? json_null() : json_integer(ms);
}

static json_t *real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *failures_json(const run_job *job)
{
    json_t *a = json_array();
    for (int i = 0; i < job->stats.n_failures; i++) {
        const run_failure *f = &job->stats.failures[i];
        json_array_append_new(
            a,
            json_pack("{s:b, s:s, s:s, s:i, s:i, s:I, s:I, s:s, s:o, s:o}",
                      "injected", f->injected, "kind", failure_kind(f),
                      "replica_id", job->groups[f->victim].id, "replica_index",
                      job->launch.first_replica + f->victim, "incarnation",
                      f->incarnation, "at_ms", (json_int_t)f->at_ms, "step",
                      (json_int_t)f->step, "detail", f->detail,
                      "survivors_recovery_ms", ms_or_null(f->survivors_ms),
                      "victim_recovery_ms", ms_or_null(f->victim_ms)));
    }
    return a;
}

static json_t *group_json(const run_job *job, int source, int g)
{
    const run_group *grp = &job->groups[g];
    const run_replica_stats *rs = &job->stats.replicas[g];
    const run_tally *t = run_stats_tally(&job->stats, g);
    json_t *sums = json_array();
    for (int r = 0; r < grp->nranks; r++) {
        const char *sum = shown_checksum(rs, source, r);
        json_array_append_new(sums,
                              sum != NULL ? json_string(sum) : json_null());
    }
    const char *sum0 = shown_checksum(rs, source, 0);
    return json_pack(
        "{s:s, s:i, s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:o, s:o, s:o, s:I, "
        "s:I, s:I}",
        "replica_id", grp->id, "replica_index", job->launch.first_replica + g,
        "status", group_status(grp->state), "incarnation", grp->incarnation,
        "restarts", grp->restarts, "crashes", grp->crashes, "last_step",
        (json_int_t)rs->last_step, "committed_steps", (json_int_t)t->committed,
        "uncommitted_steps", (json_int_t)t->uncommitted, "final_loss",
        real_or_null(final_loss(rs)), "checksum",
        sum0 != NULL ? json_string(sum0) : json_null(), "rank_checksums", sums,
        "heals", (json_int_t)t->heals, "errors", (json_int_t)rs->errors,
        "bad_events", (json_int_t)rs->bad_events);
}

static json_t *summary_json(const run_job *job)
{
    verdict v = judge(job);
    const run_opts *o = job->opts;
    run_recovery_summary rec;
    run_stats_recovery(&job->stats, &rec);
    json_t *command = json_array();
    for (char **a = o->command; *a != NULL; a++) {
        json_array_append_new(command, json_string(*a));
    }
    json_t *groups = json_array();
    for (int g = 0; g < job->n; g++) {
        json_array_append_new(groups, group_json(job, v.source, g));
    }
    json_t *recovery = json_pack(
        "{s:i, s:I, s:I, s:i, s:I, s:I}", "survivors_measured", rec.survivors_n,
        "survivors_mean_ms", (json_int_t)rec.survivors_mean_ms,
        "survivors_max_ms", (json_int_t)rec.survivors_max_ms, "victim_measured",
        rec.victim_n, "victim_mean_ms", (json_int_t)rec.victim_mean_ms,
        "victim_max_ms", (json_int_t)rec.victim_max_ms);
    const char *from = source_name(v.source);
    return json_pack(
        "{s:s, s:o, s:i, s:i, s:s, s:I, s:s, s:i, s:I, s:I, s:I, s:I, s:o, "
        "s:o, s:o, s:b, s:o, s:i}",
        "job", o->job, "command", command, "replicas", o->replicas, "ranks",
        o->ranks, "lighthouse", job->launch.lighthouse, "seed",
        (json_int_t)o->seed, "outcome", run_job_outcome_name(job->outcome),
        "exit_code", run_job_exit_code(job), "duration_ms",
        (json_int_t)job->stopped_at_ms, "steps_committed",
        (json_int_t)job->stats.max_step, "failures_injected",
        (json_int_t)job->stats.injected, "failures_total",
        (json_int_t)job->stats.failed, "failures", failures_json(job),
        "recovery", recovery, "replica_groups", groups, "checksums_identical",
        v.identical, "checksums_from",
        from != NULL ? json_string(from) : json_null(), "groups_finished",
        v.finished);
}

int run_summary_write_json(const run_job *job, const char *path)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
        fprintf(stderr, "ftc run: --summary-json path too long\n");
        return -1;
    }
    json_t *root = summary_json(job);
    int rc = root == NULL ? -1 : json_dump_file(root, tmp, JSON_INDENT(2));
    json_decref(root);
    if (rc != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "ftc run: cannot write %s: %s\n", path,
                rc != 0 ? "JSON encoding or write failed" : strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}
