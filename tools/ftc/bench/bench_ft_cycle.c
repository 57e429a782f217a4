/* The script of the quorum and step benchmarks: every replica group on its
 * own thread runs round after round; the last one waits until all are in,
 * runs the fast rounds, then leaves and comes back --changes times while
 * the others go on; then everyone stops. */
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"

/* Rounds the mover waits with every group in, and the others run
 * without it. */
#define WARM_ROUNDS 3
#define ALONE_ROUNDS 3

typedef struct member {
    bench_ft_cycle *c;
    int g;
    void *group;
} member;

static void fail(bench_ft_cycle *c)
{
    atomic_store(&c->stop, true);
    pthread_mutex_lock(&c->mu);
    c->failed++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* The mover's away time: until the others ran ALONE_ROUNDS rounds. */
static int away(bench_ft_cycle *c)
{
    pthread_mutex_lock(&c->mu);
    int64_t until = c->others_rounds + ALONE_ROUNDS;
    while (c->failed == 0 && c->others_rounds < until) {
        pthread_cond_wait(&c->cv, &c->mu);
    }
    int rc = c->failed != 0 ? FTC_EPEER : 0;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int move(member *m)
{
    bench_ft_cycle *c = m->c;
    int rc = 0;
    for (int full = 0; rc == 0 && full < WARM_ROUNDS;) {
        rc = c->round(m->group);
        full = c->everyone(m->group) ? full + 1 : 0;
    }
    atomic_store(&c->measuring, true);
    for (int s = 0; rc == 0 && s < c->o->steps; s++) {
        rc = c->round(m->group);
    }
    for (int k = 0; rc == 0 && c->groups > 1 && k < c->o->changes; k++) {
        rc = c->leave(m->group);
        rc = rc != 0 ? rc : away(c);
        rc = rc != 0 ? rc : c->rejoin(m->group);
        for (int s = 0; rc == 0 && s < ALONE_ROUNDS; s++) {
            rc = c->round(m->group);
        }
    }
    atomic_store(&c->stop, true);
    return rc;
}

static void *member_main(void *arg)
{
    member *m = arg;
    bench_ft_cycle *c = m->c;
    bool mover = m->g == c->groups - 1;
    int rc = c->open(m->group);
    rc = rc != 0 || !mover ? rc : move(m);
    while (rc == 0 && !mover && !atomic_load(&c->stop)) {
        rc = c->round(m->group);
        if (rc == 0 && m->g == 0) {
            pthread_mutex_lock(&c->mu);
            c->others_rounds++;
            pthread_cond_broadcast(&c->cv);
            pthread_mutex_unlock(&c->mu);
        }
    }
    if (rc != 0) {
        fail(c);
    }
    c->close(m->group);
    return NULL;
}

int bench_ft_cycle_run(bench_ft_cycle *c, void *groups, size_t size)
{
    member *ms = ftc__calloc((size_t)c->groups, sizeof(*ms));
    pthread_t *th = ftc__calloc((size_t)c->groups, sizeof(*th));
    int started = 0;
    for (; ms != NULL && th != NULL && started < c->groups; started++) {
        ms[started] = (member){c, started, (char *)groups + started * size};
        if (ftc__thread_start(&th[started], "bench-group", member_main,
                              &ms[started]) != 0) {
            break;
        }
    }
    if (started < c->groups) {
        fail(c);
    }
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
    }
    ftc__free(ms);
    ftc__free(th);
    return c->failed != 0;
}

void bench_ft_cycle_record(bench_ft_cycle *c, bench_ft_samples *s, double x)
{
    pthread_mutex_lock(&c->mu);
    bench_ft_add(s, x);
    pthread_mutex_unlock(&c->mu);
}
