/* Fault injection plan: when to strike and which replica group, from a
 * seeded generator. Pure: the caller says what time and step it is and
 * which groups are healthy; this says whom to hit.
 *
 * A victim is drawn when an injection falls due, then waited for: it is
 * hit once it is healthy and hitting it leaves at least min_replicas
 * healthy groups. So one seed replays the same victims in the same order
 * whatever the timing, and the job never loses every group at once. */
#ifndef FTC_TOOLS_RUN_INJECT_H
#define FTC_TOOLS_RUN_INJECT_H

#include <stdint.h>

#include "run/run_opts.h"

typedef enum run_health {
    RUN_HEALTH_DOWN = 0, /* starting, restarting, stopped, not yet back */
    RUN_HEALTH_UP = 1,   /* running and committing steps */
    RUN_HEALTH_GONE = 2, /* finished or failed: never a victim again */
} run_health;

typedef struct run_inject {
    uint64_t rng; /* splitmix64 state */
    int64_t every_ms;
    int64_t next_at_ms; /* --kill-every: when the next falls due */
    const int64_t *steps;
    int n_steps;
    int step_i; /* next entry of steps */
    run_kill_mode mode;
    int min_healthy;
    int victim; /* drawn and waited for; -1: none */
    int stop;   /* the victim's action: 1 SIGSTOP, 0 SIGKILL */
} run_inject;

/* Plans from o (borrowed: o->kill_steps must outlive in). */
void run_inject_init(run_inject *in, const run_opts *o, int64_t now_ms);

/* Returns the group to hit now (and *stop), or -1. health has n entries;
 * committed_step is the job's highest committed step. After a victim is
 * returned the caller hits it and calls run_inject_fired. */
int run_inject_poll(run_inject *in, int64_t now_ms, int64_t committed_step,
                    const run_health *health, int n, int *stop);
void run_inject_fired(run_inject *in, int64_t now_ms);

/* When run_inject_poll may next answer on time alone; INT64_MAX when only
 * a change of step or health can make it answer. */
int64_t run_inject_wake_ms(const run_inject *in);

#endif
