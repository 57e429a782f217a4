/* The fault injection plan: a seeded splitmix64 draws each victim (and,
 * in mixed mode, its action) when an injection falls due. */
#include "run/run_inject.h"

#include "base/base_int.h"

void run_inject_init(run_inject *in, const run_opts *o, int64_t now_ms)
{
    in->rng = o->seed;
    in->every_ms = o->kill_every_ms;
    in->next_at_ms =
        o->kill_every_ms > 0 ? now_ms + o->kill_every_ms : INT64_MAX;
    in->steps = o->kill_steps;
    in->n_steps = o->n_kill_steps;
    in->step_i = 0;
    in->mode = o->kill_mode;
    in->min_healthy = o->min_replicas;
    in->victim = -1;
    in->stop = 0;
}

static int due(const run_inject *in, int64_t now_ms, int64_t committed_step)
{
    if (in->every_ms > 0) {
        return now_ms >= in->next_at_ms;
    }
    return in->step_i < in->n_steps && committed_step >= in->steps[in->step_i];
}

/* Draws victims until one can still come back (not finished or failed). */
static void draw(run_inject *in, const run_health *health, int n)
{
    int candidates = 0;
    for (int i = 0; i < n; i++) {
        candidates += health[i] != RUN_HEALTH_GONE;
    }
    while (candidates > 0 && in->victim < 0) {
        int v = (int)(ftc__splitmix64(&in->rng) % (uint64_t)n);
        /* Drawn every time, so the victims of one seed do not depend on
         * the mode. */
        int coin = (int)(ftc__splitmix64(&in->rng) >> 63);
        if (health[v] != RUN_HEALTH_GONE) {
            in->victim = v;
            in->stop = in->mode == RUN_KILL_SIGSTOP ||
                       (in->mode == RUN_KILL_MIXED && coin);
        }
    }
}

int run_inject_poll(run_inject *in, int64_t now_ms, int64_t committed_step,
                    const run_health *health, int n, int *stop)
{
    if (in->victim < 0 && !due(in, now_ms, committed_step)) {
        return -1;
    }
    if (in->victim >= 0 && health[in->victim] == RUN_HEALTH_GONE) {
        in->victim = -1; /* it finished while we waited: draw again */
    }
    draw(in, health, n);
    if (in->victim < 0 || health[in->victim] != RUN_HEALTH_UP) {
        return -1;
    }
    int up = 0;
    for (int i = 0; i < n; i++) {
        up += health[i] == RUN_HEALTH_UP;
    }
    if (up - 1 < in->min_healthy) {
        return -1;
    }
    *stop = in->stop;
    return in->victim;
}

void run_inject_fired(run_inject *in, int64_t now_ms)
{
    in->victim = -1;
    if (in->every_ms > 0) {
        in->next_at_ms = now_ms + in->every_ms;
    } else {
        in->step_i++;
    }
}

int64_t run_inject_wake_ms(const run_inject *in)
{
    return in->victim < 0 ? in->next_at_ms : INT64_MAX;
}
