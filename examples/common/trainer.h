/* What the example trainers share: one rank of a replica group training the
 * example MLP with libftc. The model is sharded across the group's ranks as
 * FSDP's HYBRID_SHARD does: every rank holds the full parameters for the
 * forward pass, owns 1/M of them (and of the optimizer state), gradients
 * are reduce-scattered inside the group, each rank's shard is averaged
 * across replica groups by the fault-tolerance manager, and the updated
 * shards are all-gathered back inside the group. Configuration comes from
 * the `ftc run` environment and the command line. */
#ifndef FTC_EXAMPLES_TRAINER_H
#define FTC_EXAMPLES_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "ftc/ftc.h"
#include "mlp.h"

typedef struct trainer_cfg {
    int64_t steps; /* committed steps to train */
    int batch;     /* examples per rank per step */
    mlp_shape shape;
    float lr;          /* SGD learning rate */
    float momentum;    /* SGD momentum */
    float noise;       /* the task's class spread */
    uint64_t seed;     /* task and initial weights */
    int step_sleep_ms; /* pacing for demos: pretend compute takes longer */
    /* The pg backend of the in-group and the cross-replica groups:
     * --backend, else FTC_PG_BACKEND, else "tcp". */
    const char *backend;
    /* DiLoCo only */
    int sync_every;
    int fragments;
    int delay;
    float alpha;
    float outer_lr;
    float outer_momentum;
} trainer_cfg;

typedef struct trainer {
    trainer_cfg cfg;
    int group_rank, group_size, replica_index;
    ftc_manager *manager;
    ftc_store_client *store, *view;
    ftc_pg *intra; /* the ranks of this replica group */
    task data;
    size_t n;      /* model parameters */
    size_t shard;  /* parameters per rank (n rounded up to M shards) */
    float *params; /* shard * M: the full model, padded */
    float *grads;  /* shard * M */
    float *mine;   /* shard: this rank's averaged gradient / staging */
    float *mom;    /* shard: optimizer momentum of this rank's shard */
    float *scratch;
    float *x; /* a batch */
    int *y;
    float last_loss; /* group-average training loss of the last step */
} trainer;

/* Parses argv (see usage in trainer.c) and the environment, creates the
 * manager, the in-group process group and the model. On failure prints why
 * and returns non-zero. */
int trainer_init(trainer *t, int argc, char **argv, const char *name);
void trainer_fini(trainer *t);

/* This rank's parameter shard: the part of params it owns. */
float *trainer_own_params(const trainer *t);

/* Rebuilds the full parameters from every rank's shard (in-group
 * allgather); needed after healing and after every update. */
int trainer_gather_params(trainer *t);

/* Forward and backward on this rank's batch for the given step, then a
 * reduce-scatter inside the group: t->mine holds the group-average
 * gradient of this rank's shard, t->last_loss the group-average loss. */
int trainer_local_gradient(trainer *t, int64_t step);

/* shard -= lr * (mom = momentum * mom + grad), on this rank's shard. */
void trainer_sgd_update(trainer *t, float *shard, const float *grad);

/* FTC_EVENT lines for the launcher (docs/operations.md). */
void trainer_event_step(trainer *t, int committed);
void trainer_event_error(trainer *t, const char *what);
/* rc of a quorum round: FTC_EFINISHED means the job finished without this
 * group (the lighthouse refuses a latecomer below the step it finished
 * at). Then prints the `ended` event and returns 1: stop and exit 0,
 * with no result to compare. Else 0. */
int trainer_end_if_job_finished(trainer *t, int rc, const char *what);
/* Gathers the final model from every rank's shard of state (this rank's
 * shard: the parameters, or DiLoCo's global copy), evaluates it on
 * held-out data, prints the result event (with the model's checksum) and a
 * summary line. */
int trainer_finish(trainer *t, const float *state_shard);

/* Pauses step_sleep_ms (demo pacing). */
void trainer_pace(const trainer *t);

#endif
