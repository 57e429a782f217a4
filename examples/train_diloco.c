/* train_diloco: fault-tolerant streaming DiLoCo training of the example
 * MLP.
 *
 * Run by `ftc run` as N replica groups x M ranks. Every inner step is
 * local to the replica group (forward, backward, reduce-scatter inside the
 * group, an SGD step on this rank's shard); every sync_every / fragments
 * inner steps one fragment of this rank's shard is synchronised across the
 * replica groups: its pseudo-gradient is averaged (overlapping `delay`
 * inner steps) and an outer Nesterov SGD step updates the global copy.
 * Replica groups that die drop out; restarted ones heal (parameters,
 * inner momentum, DiLoCo's global copy and outer momentum) and rejoin.
 * Uses the public libftc API only. */
#include <stdio.h>
#include <string.h>

#include "trainer.h"

#define TIMEOUT_MS 60000
#define MAX_FAILED_SYNCS 20

/* Registers DiLoCo's own state (global copy, outer momentum) for healing. */
static int register_diloco(trainer *t, ftc_diloco *dl)
{
    const ftc_algo_buffer *bufs = NULL;
    size_t count = 0;
    ftc_diloco_buffers(dl, &bufs, &count);
    for (size_t i = 0; i < count; i++) {
        int64_t shape[1] = {(int64_t)bufs[i].count};
        if (ftc_manager_register(t->manager, bufs[i].name, FTC_DTYPE_F32, shape,
                                 1, bufs[i].data) != 0) {
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    trainer t;
    int rc = trainer_init(&t, argc, argv, "train_diloco");
    ftc_algo_comm comm;
    ftc_diloco *dl = NULL;
    if (rc == 0) {
        ftc_diloco_opts o;
        ftc_diloco_opts_init(&o);
        o.sync_every = t.cfg.sync_every;
        o.n_fragments = (size_t)t.cfg.fragments;
        o.fragment_sync_delay = t.cfg.delay;
        o.fragment_update_alpha = t.cfg.alpha;
        o.outer_lr = t.cfg.outer_lr;
        o.outer_momentum = t.cfg.outer_momentum;
        if (ftc_manager_algo_comm(t.manager, &comm) != 0 ||
            ftc_diloco_create(&comm, trainer_own_params(&t), t.shard, &o,
                              &dl) != 0 ||
            register_diloco(&t, dl) != 0) {
            fprintf(stderr, "train_diloco: %s\n", ftc_last_error());
            rc = 1;
        }
    }
    /* The batch follows the position in the run: the committed syncs (the
     * manager's step) times the inner steps between syncs, plus those
     * since the last sync. A healed replica thus draws the batches the
     * others draw, not the ones at the start of the run again. */
    int64_t period =
        t.cfg.sync_every / (t.cfg.fragments > 0 ? t.cfg.fragments : 1);
    int64_t since_sync = 0;
    int failed_syncs = 0, ended = 0;
    while (rc == 0 && ftc_manager_current_step(t.manager) < t.cfg.steps) {
        int64_t position =
            ftc_manager_current_step(t.manager) * period + since_sync;
        if (trainer_gather_params(&t) != 0 ||
            trainer_local_gradient(&t, position) != 0) {
            rc = 1;
            break;
        }
        trainer_sgd_update(&t, trainer_own_params(&t), t.mine);
        since_sync++;
        int outcome = 0;
        int src = ftc_diloco_step(dl, &outcome, TIMEOUT_MS);
        if ((ended = trainer_end_if_job_finished(&t, src, "diloco sync")) !=
            0) {
            break;
        }
        if (src != 0) {
            trainer_event_error(&t, "diloco sync");
            rc = ++failed_syncs > MAX_FAILED_SYNCS;
            continue;
        }
        if (outcome != FTC_ALGO_LOCAL) {
            since_sync = 0;
            failed_syncs = 0;
            trainer_event_step(&t, outcome == FTC_ALGO_COMMITTED);
        }
        trainer_pace(&t);
    }
    if (rc == 0 && !ended) {
        /* The model every replica agrees on is DiLoCo's global copy; the
         * parameters hold local progress since the last syncs. */
        const ftc_algo_buffer *bufs = NULL;
        size_t count = 0;
        ftc_diloco_buffers(dl, &bufs, &count);
        const float *global = NULL;
        for (size_t i = 0; i < count; i++) {
            if (strcmp(bufs[i].name, "diloco.global") == 0) {
                global = bufs[i].data;
            }
        }
        rc = global != NULL ? trainer_finish(&t, global) : 1;
    }
    ftc_diloco_destroy(dl);
    trainer_fini(&t);
    return rc;
}
