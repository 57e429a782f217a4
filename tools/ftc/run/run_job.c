/* The launcher's decisions: start and restart replica groups (bounded by
 * --max-restarts for deaths it did not cause), inject failures when the
 * plan says so, track recoveries, and stop in order (SIGTERM, grace,
 * SIGKILL). Every transition of a group happens here. */
#include "run/run_job.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "base/base_int.h"
#include "run/run_status.h"

/* First delay before restarting a group that died on its own; it doubles
 * with each such death, up to RUN_RESTART_MAX_MS. A group killed by an
 * injection restarts after the first delay. */
#define RUN_RESTART_FIRST_MS 100
#define RUN_RESTART_MAX_MS 5000
/* Once a group finished training, the others have this long to finish
 * too (they are normally in the same quorum and finish with it); then
 * they are stopped. */
#define RUN_WIND_DOWN_MS 10000
/* A live terminal status line is refreshed this often (its clock). */
#define RUN_STATUS_TICK_MS 250
/* Malformed FTC_EVENT lines noted per group; later ones are counted. */
#define RUN_BAD_EVENT_NOTES 3

/* Bits of run_failure.noted. */
#define NOTED_SURVIVORS 1
#define NOTED_VICTIM 2

int64_t run_job_now(const run_job *job)
{
    return ftc__now_ms() - job->t0_ms;
}

int run_job_init(run_job *job, const run_opts *opts, const run_launch *l)
{
    memset(job, 0, sizeof(*job));
    job->opts = opts;
    job->launch = *l;
    job->launch.host = opts->host;
    job->launch.first_replica = opts->first_replica;
    job->launch.num_replicas = opts->total_replicas;
    job->n = opts->replicas;
    job->t0_ms = ftc__now_ms();
    job->end_at_ms = opts->duration_ms > 0 ? opts->duration_ms : INT64_MAX;
    job->kill_at_ms = INT64_MAX;
    job->wind_down_at_ms = INT64_MAX;
    job->progress_at_ms = opts->progress_ms;
    run_out_init(&job->out, opts->quiet);
    run_inject_init(&job->inject, opts, 0);
    job->groups = ftc__calloc((size_t)job->n, sizeof(*job->groups));
    job->health = ftc__calloc((size_t)job->n, sizeof(*job->health));
    if (job->groups == NULL || job->health == NULL ||
        run_stats_init(&job->stats, job->n, opts->ranks) != 0) {
        fprintf(stderr, "ftc run: out of memory\n");
        return -1;
    }
    for (int g = 0; g < job->n; g++) {
        if (run_group_init(&job->groups[g], g, opts->first_replica + g,
                           opts->ranks, opts->host, l->token) != 0) {
            return -1;
        }
    }
    return 0;
}

void run_job_free(run_job *job)
{
    for (int g = 0; job->groups != NULL && g < job->n; g++) {
        run_group_free(&job->groups[g]);
    }
    ftc__free(job->groups);
    ftc__free(job->health);
    run_stats_free(&job->stats);
    memset(job, 0, sizeof(*job));
}

static double secs(int64_t ms)
{
    return (double)ms / 1000.0;
}

/* ------------------------------------------------------------ stopping */

static void stop(run_job *job, run_outcome outcome, const char *why)
{
    if (job->phase != RUN_PHASE_RUNNING) {
        return;
    }
    int64_t now = run_job_now(job);
    job->phase = RUN_PHASE_STOPPING;
    job->outcome = outcome;
    job->stopped_at_ms = now;
    job->kill_at_ms = now + job->opts->grace_ms;
    int live = 0;
    for (int g = 0; g < job->n; g++) {
        run_group *grp = &job->groups[g];
        live += grp->live;
        /* SIGCONT after SIGTERM, so a stopped rank sees it at once. */
        run_group_signal(grp, SIGTERM);
        run_group_signal(grp, SIGCONT);
    }
    if (live > 0) {
        run_out_note(&job->out,
                     "%s: stopping %d ranks (SIGTERM, SIGKILL after %.1f s)",
                     why, live, secs(job->opts->grace_ms));
    } else {
        run_out_note(&job->out, "%s", why);
    }
}

/* A group with no live rank left once the job is stopping. */
static void settle(run_group *grp)
{
    if (grp->state == RUN_GROUP_FINISHED || grp->state == RUN_GROUP_FAILED) {
        return;
    }
    int whole =
        grp->state != RUN_GROUP_WAITING && grp->exited_ok == grp->nranks;
    grp->state = whole ? RUN_GROUP_FINISHED : RUN_GROUP_ENDED;
}

void run_job_signal(run_job *job, int sig)
{
    const char *name = sig == SIGINT   ? "SIGINT"
                       : sig == SIGHUP ? "SIGHUP"
                                       : "SIGTERM";
    if (job->phase == RUN_PHASE_RUNNING) {
        char why[64];
        snprintf(why, sizeof(why), "%s (again to kill at once)", name);
        stop(job,
             sig == SIGINT ? RUN_OUTCOME_INTERRUPTED : RUN_OUTCOME_TERMINATED,
             why);
    } else if (job->phase == RUN_PHASE_STOPPING) {
        run_out_note(&job->out, "%s again: SIGKILL to every rank", name);
        job->kill_at_ms = 0;
    }
}

/* ------------------------------------------------- deaths and restarts */

static void after_death(run_job *job, run_group *grp)
{
    if (job->wind_down_at_ms != INT64_MAX) { /* see wind_down */
        grp->state = RUN_GROUP_ENDED;
        run_out_note(&job->out, "%s is not restarted: training finished",
                     grp->id);
        return;
    }
    int64_t now = run_job_now(job);
    int64_t delay = RUN_RESTART_FIRST_MS;
    if (!grp->hit) {
        grp->crashes++;
        if (grp->crashes > job->opts->max_restarts) {
            grp->state = RUN_GROUP_FAILED;
            char why[160];
            snprintf(why, sizeof(why),
                     "%s died %d times (--max-restarts %d): the job failed",
                     grp->id, grp->crashes, job->opts->max_restarts);
            stop(job, RUN_OUTCOME_FAILED, why);
            return;
        }
        for (int i = 1; i < grp->crashes && delay < RUN_RESTART_MAX_MS; i++) {
            delay *= 2;
        }
        delay = delay < RUN_RESTART_MAX_MS ? delay : RUN_RESTART_MAX_MS;
    }
    grp->state = RUN_GROUP_WAITING;
    grp->restart_at_ms = now + delay;
    run_out_note(&job->out, "%s incarnation %d is down; restarting in %.1f s",
                 grp->id, grp->incarnation, secs(delay));
}

/* The first rank of a running group died: the group goes down. */
static void group_died(run_job *job, run_group *grp, int r, int status)
{
    char how[64];
    run_group_describe_status(status, how, sizeof(how));
    snprintf(grp->death, sizeof(grp->death), "rank %d %s", r, how);
    if (!grp->hit) {
        run_failure *f = run_stats_failure(&job->stats, 0, 0, grp->index,
                                           grp->incarnation, run_job_now(job));
        if (f != NULL) {
            snprintf(f->detail, sizeof(f->detail), "%s", grp->death);
        }
        run_out_note(&job->out, "%s died: %s", grp->id, grp->death);
    }
    grp->state = RUN_GROUP_DYING;
    run_group_signal(grp, SIGKILL);
}

void run_job_exited(run_job *job, int g, int r, int status)
{
    run_group *grp = &job->groups[g];
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    run_group_reaped(grp, r, status);
    grp->exited_ok += ok;
    if (job->phase != RUN_PHASE_RUNNING) {
        return;
    }
    if (!ok &&
        (grp->state == RUN_GROUP_RUNNING || grp->state == RUN_GROUP_STOPPED)) {
        group_died(job, grp, r, status);
    }
    if (grp->live > 0) {
        return;
    }
    if (grp->state == RUN_GROUP_DYING) {
        after_death(job, grp);
    } else if (grp->state == RUN_GROUP_RUNNING && grp->job_over) {
        grp->state = RUN_GROUP_ENDED;
        run_out_note(&job->out, "%s ended: the job finished without it",
                     grp->id);
    } else if (grp->state == RUN_GROUP_RUNNING) {
        grp->state = RUN_GROUP_FINISHED;
        run_out_note(&job->out, "%s finished", grp->id);
    }
}

static void start_group(run_job *job, run_group *grp)
{
    if (grp->started) {
        grp->incarnation++;
        grp->restarts++;
        run_stats_restarted(&job->stats, grp->index);
    }
    grp->started = 1;
    int rc = run_group_spawn(grp, &job->launch);
    if (rc != 0) {
        /* Counted as a death on its own: a command that cannot start
         * keeps failing and runs out of restarts. */
        grp->hit = 0;
        grp->state = RUN_GROUP_RUNNING;
        run_out_note(&job->out, "%s: cannot start the command: %s", grp->id,
                     strerror(rc));
        group_died(job, grp, 0, 127 << 8);
        after_death(job, grp);
        return;
    }
    grp->state = RUN_GROUP_RUNNING;
    if (grp->incarnation > 0) {
        char prefix[48];
        run_env_store_prefix(grp->index, grp->incarnation, prefix,
                             sizeof(prefix));
        run_out_note(&job->out, "%s restarted as incarnation %d (prefix %s)",
                     grp->id, grp->incarnation, prefix);
    }
}

/* ------------------------------------------------------------- events */

/* Prints each recovery the first time it is measured. */
static void note_recoveries(run_job *job)
{
    for (int i = 0; i < job->stats.n_failures; i++) {
        run_failure *f = &job->stats.failures[i];
        const char *victim = job->groups[f->victim].id;
        if (f->survivors_ms >= 0 && !(f->noted & NOTED_SURVIVORS)) {
            f->noted |= NOTED_SURVIVORS;
            run_out_note(&job->out,
                         "failure %d (%s): survivors committed a step "
                         "%.2f s after it",
                         i + 1, victim, secs(f->survivors_ms));
        }
        if (f->victim_ms >= 0 && !(f->noted & NOTED_VICTIM)) {
            f->noted |= NOTED_VICTIM;
            run_out_note(&job->out,
                         "failure %d (%s): %s committed again %.2f s after "
                         "it",
                         i + 1, victim, victim, secs(f->victim_ms));
        }
    }
}

static void on_event(run_job *job, run_group *grp, int r, run_source src,
                     run_event *ev)
{
    switch (ev->kind) {
    case RUN_EVENT_STEP:
        if (r == 0 && ev->committed && grp->state == RUN_GROUP_RUNNING) {
            grp->healthy = 1;
            grp->stepped = 1;
            note_recoveries(job);
        }
        break;
    case RUN_EVENT_HEAL:
        if (src == RUN_SOURCE_TRAINER &&
            run_stats_tally(&job->stats, grp->index) !=
                &job->stats.replicas[grp->index].tally[RUN_SOURCE_TRAINER]) {
            break; /* its manager reported this heal already */
        }
        run_out_note(&job->out, "%s rank %d healed at step %lld from %s",
                     grp->id, r, (long long)ev->step,
                     ev->text[0] != '\0' ? ev->text : "a peer");
        break;
    case RUN_EVENT_ERROR:
        run_out_note(&job->out, "%s rank %d reports an error: %s", grp->id, r,
                     ev->text);
        break;
    case RUN_EVENT_ENDED:
        if (!grp->job_over) {
            run_out_note(&job->out, "%s has nothing left to train: %s", grp->id,
                         ev->text);
        }
        grp->job_over = 1;
        break;
    case RUN_EVENT_BAD: {
        int64_t seen = job->stats.replicas[grp->index].bad_events;
        if (seen <= RUN_BAD_EVENT_NOTES) {
            run_out_note(
                &job->out,
                "[r%d.%d] ignored a malformed FTC_EVENT line%s: %s%s",
                grp->index, r,
                src == RUN_SOURCE_MANAGER ? " on the event socket" : "",
                ev->why,
                seen == RUN_BAD_EVENT_NOTES ? " (further ones are only counted)"
                                            : "");
        }
        break;
    }
    default:
        break;
    }
}

void run_job_line(run_job *job, int g, int r, int stream, char *line,
                  size_t len)
{
    run_group *grp = &job->groups[g];
    run_source src =
        stream == RUN_EVENTS ? RUN_SOURCE_MANAGER : RUN_SOURCE_TRAINER;
    run_event ev;
    run_event_kind kind =
        stream == RUN_STDERR ? RUN_EVENT_NONE : run_event_parse(line, len, &ev);
    if (stream == RUN_EVENTS && kind == RUN_EVENT_NONE) {
        /* Only events belong on the event socket. */
        kind = ev.kind = RUN_EVENT_BAD;
        snprintf(ev.why, sizeof(ev.why), "no FTC_EVENT tag");
    }
    /* Malformed events are printed too: the trainer's author needs them. */
    bool event_shown = kind != RUN_EVENT_NONE && job->opts->show_events;
    if (kind == RUN_EVENT_NONE || kind == RUN_EVENT_BAD || event_shown) {
        run_out_line(&job->out, g, r, stream == RUN_STDERR, line, len,
                     event_shown);
    }
    if (kind == RUN_EVENT_NONE) {
        return;
    }
    run_stats_event(&job->stats, g, r, grp->incarnation, src, &ev,
                    run_job_now(job));
    on_event(job, grp, r, src, &ev);
}

/* ---------------------------------------------------------- injection */

static void fill_health(run_job *job)
{
    for (int g = 0; g < job->n; g++) {
        const run_group *grp = &job->groups[g];
        if (grp->state == RUN_GROUP_FINISHED ||
            grp->state == RUN_GROUP_FAILED) {
            job->health[g] = RUN_HEALTH_GONE;
        } else if (grp->state == RUN_GROUP_RUNNING && grp->healthy &&
                   grp->live == grp->nranks) {
            job->health[g] = RUN_HEALTH_UP;
        } else {
            job->health[g] = RUN_HEALTH_DOWN;
        }
    }
}

static void inject(run_job *job, int64_t now)
{
    for (;;) {
        fill_health(job);
        int stop_it = 0;
        int v = run_inject_poll(&job->inject, now, job->stats.max_step,
                                job->health, job->n, &stop_it);
        if (v < 0) {
            return;
        }
        run_inject_fired(&job->inject, now);
        run_group *grp = &job->groups[v];
        run_failure *f = run_stats_failure(&job->stats, 1, stop_it, v,
                                           grp->incarnation, now);
        char what[64];
        if (stop_it) {
            snprintf(what, sizeof(what), "SIGSTOP for %.2f s",
                     secs(job->opts->stop_ms));
            run_group_signal(grp, SIGSTOP);
            grp->state = RUN_GROUP_STOPPED;
            grp->resume_at_ms = now + job->opts->stop_ms;
            grp->healthy = 0;
        } else {
            snprintf(what, sizeof(what), "SIGKILL");
            grp->hit = 1;
            grp->state = RUN_GROUP_DYING;
            snprintf(grp->death, sizeof(grp->death), "killed by injection");
            run_group_signal(grp, SIGKILL);
        }
        if (f != NULL) {
            snprintf(f->detail, sizeof(f->detail), "%s", what);
        }
        run_out_note(&job->out,
                     "injected failure %lld: %s to %s (incarnation %d) at "
                     "%.2f s, step %lld",
                     (long long)job->stats.injected, what, grp->id,
                     grp->incarnation, secs(now),
                     (long long)job->stats.max_step);
    }
}

/* --------------------------------------------------------------- tick */

/* A group that has not committed a step in its incarnation when another
 * finished (restarted, or slow to start) can never catch up: the groups
 * it would heal from are leaving. Left alone it would train from step 0
 * by itself and end with other parameters, so it is stopped and ends.
 * So is a group frozen (SIGSTOP) when another finished: the last quorums
 * went on without it, and woken it would commit their steps again alone
 * (docs/decisions.md, "a group frozen past the end of training"). */
static void end_stragglers(run_job *job)
{
    if (job->stats.max_step <= 0) {
        return; /* a trainer that reports no steps: nothing to judge by */
    }
    for (int g = 0; g < job->n; g++) {
        run_group *grp = &job->groups[g];
        bool frozen = grp->state == RUN_GROUP_STOPPED;
        if ((grp->state == RUN_GROUP_RUNNING && !grp->stepped) || frozen) {
            run_out_note(&job->out,
                         frozen ? "%s is stopped: it was frozen when training "
                                  "finished (the last steps went on without "
                                  "it)"
                                : "%s is stopped: it had not caught up when "
                                  "training finished (no group is left to "
                                  "heal from)",
                         grp->id);
            snprintf(grp->death, sizeof(grp->death), "%s",
                     frozen ? "stopped: frozen when training finished"
                            : "stopped: not caught up when training finished");
            grp->state = RUN_GROUP_DYING;
            run_group_signal(grp, SIGTERM);
            run_group_signal(grp, SIGCONT);
        }
    }
}

/* Once a group finished, or ended because the job finished elsewhere,
 * the training is over: no more failures are injected, a group that is
 * down is not restarted (it would train alone from a stale state), one
 * that has not caught up is stopped (end_stragglers), and the others get
 * RUN_WIND_DOWN_MS to finish. */
static int wind_down(run_job *job, int64_t now)
{
    int finished = 0, ended = 0, over = 0;
    for (int g = 0; g < job->n; g++) {
        const run_group *grp = &job->groups[g];
        finished += grp->state == RUN_GROUP_FINISHED;
        over += grp->state == RUN_GROUP_ENDED && grp->job_over;
    }
    if (finished + over == 0) {
        return 0;
    }
    if (job->wind_down_at_ms == INT64_MAX) {
        job->wind_down_at_ms = now + RUN_WIND_DOWN_MS;
        if (finished + over < job->n) {
            run_out_note(&job->out,
                         "training finished: no more failures or restarts; "
                         "the other groups have %.0f s to finish",
                         secs(RUN_WIND_DOWN_MS));
        }
        end_stragglers(job);
    }
    for (int g = 0; g < job->n; g++) {
        run_group *grp = &job->groups[g];
        if (grp->state == RUN_GROUP_WAITING) {
            grp->state = RUN_GROUP_ENDED;
            run_out_note(&job->out, "%s is not restarted: training finished",
                         grp->id);
        }
        ended += grp->state == RUN_GROUP_ENDED;
    }
    if (finished + ended == job->n) {
        job->phase = RUN_PHASE_DONE;
        job->outcome = RUN_OUTCOME_FINISHED;
        job->stopped_at_ms = now;
    } else if (now >= job->wind_down_at_ms) {
        stop(job, RUN_OUTCOME_FINISHED,
             "training finished but some groups did not");
    }
    return 1;
}

/* Continues every SIGSTOPped group whose stop is over, in every phase of
 * a running job: a group stopped when another finished must still resume
 * and finish within the wind-down. */
static void resume_groups(run_job *job, int64_t now)
{
    for (int g = 0; g < job->n; g++) {
        run_group *grp = &job->groups[g];
        if (grp->state == RUN_GROUP_STOPPED && grp->resume_at_ms <= now) {
            run_group_signal(grp, SIGCONT);
            grp->state = RUN_GROUP_RUNNING;
            run_stats_resumed(&job->stats, g, now);
            run_out_note(&job->out, "%s continued (SIGCONT)", grp->id);
        }
    }
}

static void run_groups(run_job *job, int64_t now)
{
    resume_groups(job, now);
    if (wind_down(job, now)) {
        return;
    }
    for (int g = 0; g < job->n; g++) {
        run_group *grp = &job->groups[g];
        if (grp->state == RUN_GROUP_WAITING && grp->restart_at_ms <= now) {
            start_group(job, grp);
        }
        if (job->phase != RUN_PHASE_RUNNING) {
            return; /* a group that cannot start failed the job */
        }
    }
    inject(job, now);
}

static void finish_stopping(run_job *job, int64_t now)
{
    int live = 0;
    for (int g = 0; g < job->n; g++) {
        live += job->groups[g].live;
    }
    if (now >= job->kill_at_ms && live > 0) {
        run_out_note(&job->out, "SIGKILL to the %d ranks still running", live);
        for (int g = 0; g < job->n; g++) {
            run_group_signal(&job->groups[g], SIGKILL);
        }
        job->kill_at_ms = INT64_MAX;
    }
    if (live == 0) {
        for (int g = 0; g < job->n; g++) {
            settle(&job->groups[g]);
        }
        job->phase = RUN_PHASE_DONE;
    }
}

static int64_t next_wake(const run_job *job, int64_t now)
{
    int64_t wake = INT64_MAX;
    if (job->phase == RUN_PHASE_RUNNING) {
        for (int g = 0; g < job->n; g++) {
            const run_group *grp = &job->groups[g];
            if (grp->state == RUN_GROUP_WAITING && grp->restart_at_ms < wake) {
                wake = grp->restart_at_ms;
            }
            if (grp->state == RUN_GROUP_STOPPED && grp->resume_at_ms < wake) {
                wake = grp->resume_at_ms;
            }
        }
        int64_t inject_at = run_inject_wake_ms(&job->inject);
        wake = inject_at < wake ? inject_at : wake;
        wake = job->end_at_ms < wake ? job->end_at_ms : wake;
        wake = job->wind_down_at_ms < wake ? job->wind_down_at_ms : wake;
    } else if (job->phase == RUN_PHASE_STOPPING) {
        wake = job->kill_at_ms;
    }
    if (!job->out.quiet) {
        int64_t status_at =
            job->out.tty ? now + RUN_STATUS_TICK_MS : job->progress_at_ms;
        wake = status_at < wake ? status_at : wake;
    }
    return wake;
}

static void show_status(run_job *job, int64_t now)
{
    char text[256];
    run_status_format(job, now, text, sizeof(text));
    run_out_status(&job->out, text, now);
    if (!job->out.tty && now >= job->progress_at_ms) {
        run_out_progress(&job->out, text);
        job->progress_at_ms = now + job->opts->progress_ms;
    }
}

int64_t run_job_tick(run_job *job)
{
    int64_t now = run_job_now(job);
    if (job->phase == RUN_PHASE_RUNNING && now >= job->end_at_ms) {
        stop(job, RUN_OUTCOME_DURATION, "--duration reached");
    }
    if (job->phase == RUN_PHASE_RUNNING) {
        run_groups(job, now);
    }
    if (job->phase == RUN_PHASE_STOPPING) {
        finish_stopping(job, now);
    }
    if (job->phase == RUN_PHASE_DONE) {
        run_out_end(&job->out);
        return now;
    }
    show_status(job, now);
    return next_wake(job, now);
}

int run_job_exit_code(const run_job *job)
{
    switch (job->outcome) {
    case RUN_OUTCOME_FINISHED:
    case RUN_OUTCOME_DURATION:
        return 0;
    case RUN_OUTCOME_FAILED:
        return 1;
    case RUN_OUTCOME_INTERRUPTED:
        return 128 + SIGINT;
    case RUN_OUTCOME_TERMINATED:
        return 128 + SIGTERM;
    }
    return 1;
}

const char *run_job_outcome_name(run_outcome outcome)
{
    static const char *const names[] = {"finished", "duration", "failed",
                                        "interrupted", "terminated"};
    return names[outcome];
}
