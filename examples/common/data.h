/* A synthetic classification task generated from a seed: each class is a
 * Gaussian blob around its own random centre, so any replica can rebuild
 * any shard and batch exactly, and a model can learn it. */
#ifndef FTC_EXAMPLES_DATA_H
#define FTC_EXAMPLES_DATA_H

#include <stdint.h>

typedef struct task {
    int inputs;
    int classes;
    float noise;    /* standard deviation around each centre */
    float *centres; /* classes x inputs */
    uint64_t seed;
} task;

/* Builds the task's class centres; 0 or -1 when out of memory. */
int task_init(task *t, int inputs, int classes, float noise, uint64_t seed);
void task_free(task *t);

/* Fills batch examples (x: batch x inputs, y: labels) for one data shard at
 * one step. Pure function of (seed, shard, step): a replica that restarts
 * or heals draws exactly the batch it would have drawn. */
void task_batch(const task *t, int shard, int64_t step, int batch, float *x,
                int *y);

#endif
