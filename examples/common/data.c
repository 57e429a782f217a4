/* The synthetic task: class centres and deterministic batches. */
#include "data.h"

#include <stdlib.h>

#include "rng.h"

int task_init(task *t, int inputs, int classes, float noise, uint64_t seed)
{
    t->inputs = inputs;
    t->classes = classes;
    t->noise = noise;
    t->seed = seed;
    t->centres = malloc(sizeof(float) * (size_t)inputs * (size_t)classes);
    if (t->centres == NULL) {
        return -1;
    }
    uint64_t st = seed ^ 0xC0FFEEULL;
    for (int i = 0; i < inputs * classes; i++) {
        t->centres[i] = (float)rng_normal(&st);
    }
    return 0;
}

void task_free(task *t)
{
    free(t->centres);
    t->centres = NULL;
}

void task_batch(const task *t, int shard, int64_t step, int batch, float *x,
                int *y)
{
    uint64_t st =
        t->seed * 0x100000001B3ULL ^ ((uint64_t)shard << 40) ^ (uint64_t)step;
    rng_next(&st);
    for (int n = 0; n < batch; n++) {
        int c = (int)(rng_next(&st) % (uint64_t)t->classes);
        y[n] = c;
        const float *centre = t->centres + (size_t)c * t->inputs;
        for (int i = 0; i < t->inputs; i++) {
            x[(size_t)n * t->inputs + i] =
                centre[i] + t->noise * (float)rng_normal(&st);
        }
    }
}
