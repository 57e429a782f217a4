/* Job bookkeeping: progress per replica group, failures, and recovery
 * times measured from the committed steps the trainers report. */
#include "run/run_stats.h"

#include <math.h>
#include <string.h>

#include "base/base_int.h"

static void reset_results(run_stats *s, int g)
{
    for (int src = 0; src < RUN_SOURCES; src++) {
        for (int r = 0; r < s->m; r++) {
            run_rank_result *res = &s->replicas[g].results[src][r];
            memset(res, 0, sizeof(*res));
            res->final_loss = NAN;
            res->steps = -1;
        }
    }
}

int run_stats_init(run_stats *s, int n, int m)
{
    memset(s, 0, sizeof(*s));
    s->n = n;
    s->m = m;
    s->max_step = 0;
    s->participants = -1;
    s->loss = NAN;
    s->replicas = ftc__calloc((size_t)n, sizeof(*s->replicas));
    if (s->replicas == NULL) {
        return FTC_ENOMEM;
    }
    for (int g = 0; g < n; g++) {
        run_replica_stats *rs = &s->replicas[g];
        rs->last_step = 0;
        rs->last_loss = NAN;
        for (int src = 0; src < RUN_SOURCES; src++) {
            rs->results[src] = ftc__calloc((size_t)m, sizeof(*rs->results[0]));
            if (rs->results[src] == NULL) {
                run_stats_free(s);
                return FTC_ENOMEM;
            }
        }
        reset_results(s, g);
    }
    return 0;
}

void run_stats_free(run_stats *s)
{
    for (int g = 0; s->replicas != NULL && g < s->n; g++) {
        for (int src = 0; src < RUN_SOURCES; src++) {
            ftc__free(s->replicas[g].results[src]);
        }
    }
    ftc__free(s->replicas);
    ftc__free(s->failures);
    memset(s, 0, sizeof(*s));
}

run_failure *run_stats_failure(run_stats *s, int injected, int stop, int victim,
                               int incarnation, int64_t now_ms)
{
    s->failed++;
    s->injected += injected;
    if (s->n_failures == RUN_MAX_FAILURES) {
        return NULL;
    }
    /* Grows one record at a time: failures are seconds apart. */
    run_failure *grown = ftc__realloc(s->failures, (size_t)(s->n_failures + 1) *
                                                       sizeof(*s->failures));
    if (grown == NULL) {
        return NULL;
    }
    s->failures = grown;
    run_failure *f = &s->failures[s->n_failures++];
    memset(f, 0, sizeof(*f));
    f->injected = injected;
    f->stop = stop;
    f->victim = victim;
    f->incarnation = incarnation;
    f->at_ms = now_ms;
    f->step = s->max_step;
    f->resumed_ms = -1;
    f->survivors_ms = -1;
    f->victim_ms = -1;
    return f;
}

void run_stats_resumed(run_stats *s, int victim, int64_t now_ms)
{
    for (int i = 0; i < s->n_failures; i++) {
        run_failure *f = &s->failures[i];
        if (f->victim == victim && f->stop && f->resumed_ms < 0) {
            f->resumed_ms = now_ms;
        }
    }
}

void run_stats_restarted(run_stats *s, int g)
{
    reset_results(s, g);
}

/* Committed step `step` of group g (incarnation inc) ends the survivors'
 * wait of every failure of another group, if it is a step past the one
 * the job had reached at the failure (a report of that step that was
 * still on its way when the failure hit is no recovery); and the victim's
 * own wait once it is back: a new incarnation, or continued after
 * SIGSTOP. */
static void measure(run_stats *s, int g, int inc, int64_t step, int64_t now_ms)
{
    for (int i = 0; i < s->n_failures; i++) {
        run_failure *f = &s->failures[i];
        if (f->victim != g) {
            if (f->survivors_ms < 0 && step > f->step) {
                f->survivors_ms = now_ms - f->at_ms;
            }
        } else if (f->victim_ms < 0 &&
                   (inc > f->incarnation || (f->stop && f->resumed_ms >= 0 &&
                                             now_ms >= f->resumed_ms))) {
            f->victim_ms = now_ms - f->at_ms;
        }
    }
}

static void on_step(run_stats *s, int g, int inc, run_tally *t,
                    const run_event *ev, int64_t now_ms)
{
    run_replica_stats *rs = &s->replicas[g];
    if (!isnan(ev->loss)) {
        rs->last_loss = ev->loss;
        s->loss = ev->loss;
    }
    if (!ev->committed) {
        t->uncommitted++;
        return;
    }
    t->committed++;
    if (ev->step > rs->last_step) {
        rs->last_step = ev->step;
    }
    if (ev->step > s->max_step) {
        s->max_step = ev->step;
    }
    if (ev->participants >= 0) {
        s->participants = ev->participants;
    }
    measure(s, g, inc, ev->step, now_ms);
}

void run_stats_event(run_stats *s, int g, int r, int inc, run_source src,
                     const run_event *ev, int64_t now_ms)
{
    run_replica_stats *rs = &s->replicas[g];
    run_tally *t = &rs->tally[src];
    switch (ev->kind) {
    case RUN_EVENT_STEP:
        if (r == 0) {
            on_step(s, g, inc, t, ev, now_ms);
        }
        break;
    case RUN_EVENT_HEAL:
        t->heals++;
        break;
    case RUN_EVENT_ERROR:
        rs->errors++;
        break;
    case RUN_EVENT_BAD:
        rs->bad_events++;
        break;
    case RUN_EVENT_RESULT: {
        run_rank_result *res = &rs->results[src][r];
        res->have = 1;
        memcpy(res->checksum, ev->text, sizeof(res->checksum));
        res->final_loss = ev->loss;
        res->steps = ev->step;
        break;
    }
    default:
        break;
    }
}

const run_tally *run_stats_tally(const run_stats *s, int g)
{
    const run_tally *mgr = &s->replicas[g].tally[RUN_SOURCE_MANAGER];
    int reported = mgr->committed + mgr->uncommitted + mgr->heals > 0;
    return reported ? mgr : &s->replicas[g].tally[RUN_SOURCE_TRAINER];
}

void run_stats_recovery(const run_stats *s, run_recovery_summary *out)
{
    memset(out, 0, sizeof(*out));
    int64_t survivors_sum = 0, victim_sum = 0;
    for (int i = 0; i < s->n_failures; i++) {
        const run_failure *f = &s->failures[i];
        if (f->survivors_ms >= 0) {
            out->survivors_n++;
            survivors_sum += f->survivors_ms;
            if (f->survivors_ms > out->survivors_max_ms) {
                out->survivors_max_ms = f->survivors_ms;
            }
        }
        if (f->victim_ms >= 0) {
            out->victim_n++;
            victim_sum += f->victim_ms;
            if (f->victim_ms > out->victim_max_ms) {
                out->victim_max_ms = f->victim_ms;
            }
        }
    }
    if (out->survivors_n > 0) {
        out->survivors_mean_ms = survivors_sum / out->survivors_n;
    }
    if (out->victim_n > 0) {
        out->victim_mean_ms = victim_sum / out->victim_n;
    }
}

/* Whether every rank of every counted group has a result from src. */
static int all_reported(const run_stats *s, const int *counted, int src)
{
    for (int g = 0; g < s->n; g++) {
        for (int r = 0; counted[g] && r < s->m; r++) {
            if (!s->replicas[g].results[src][r].have) {
                return 0;
            }
        }
    }
    return 1;
}

int run_stats_result_source(const run_stats *s, const int *counted)
{
    int any = 0;
    for (int g = 0; g < s->n; g++) {
        any |= counted[g];
    }
    for (int src = 0; any && src < RUN_SOURCES; src++) {
        if (all_reported(s, counted, src)) {
            return src;
        }
    }
    return -1;
}

int run_stats_checksums_identical(const run_stats *s, const int *counted)
{
    int src = run_stats_result_source(s, counted);
    if (src < 0) {
        return 0;
    }
    int first = 0;
    while (!counted[first]) {
        first++;
    }
    for (int r = 0; r < s->m; r++) {
        const char *a = s->replicas[first].results[src][r].checksum;
        for (int g = first; g < s->n; g++) {
            if (counted[g] &&
                strcmp(a, s->replicas[g].results[src][r].checksum) != 0) {
                return 0;
            }
        }
    }
    return 1;
}
