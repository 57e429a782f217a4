/* Holding a tcp group's engine still (engine_hold.h). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "engine_hold.h"

void engine_hold(ftc__tcp *g)
{
    pthread_mutex_lock(&g->mu);
    atomic_fetch_add(&g->want, 1);
    while (g->driver != FTC__DRIVER_NONE) {
        ftc__event_signal(&g->doorbell);
        pthread_mutex_unlock(&g->mu);
        sched_yield();
        pthread_mutex_lock(&g->mu);
    }
    pthread_mutex_unlock(&g->mu);
}

void engine_release(ftc__tcp *g, ftc__chan *const *readable, int n)
{
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < n; i++) {
        readable[i]->readable = true;
    }
    atomic_fetch_sub(&g->want, 1);
    pthread_mutex_unlock(&g->mu);
}
