/* train_ddp: fault-tolerant data-parallel training of the example MLP.
 *
 * Run by `ftc run` as N replica groups x M ranks. Each step: the quorum
 * (healing this replica if it fell behind), forward and backward on this
 * rank's batch, a reduce-scatter of the gradients inside the group, FT-DDP
 * averaging of this rank's gradient shard across the replica groups of the
 * quorum, and, if every rank of every participating group committed, an
 * SGD step on the shard. Killed or hung replica groups drop out of the
 * quorum; restarted ones heal from the others and rejoin. Under `ftc run
 * --trace DIR` its phases (gradient, sync_grads, optimizer) are marked in
 * each rank's trace next to the library's collectives and votes.
 * Uses the public libftc API only. */
#include <stdio.h>

#include "trainer.h"

#define TIMEOUT_MS 60000
/* Failed quorum rounds in a row before this rank gives up (the launcher
 * then restarts its group). */
#define MAX_FAILED_ROUNDS 20

int main(int argc, char **argv)
{
    trainer t;
    int rc = trainer_init(&t, argc, argv, "train_ddp");
    ftc_algo_comm comm;
    ftc_ddp *ddp = NULL;
    if (rc == 0 && (ftc_manager_algo_comm(t.manager, &comm) != 0 ||
                    ftc_ddp_create(&comm, NULL, &ddp) != 0)) {
        fprintf(stderr, "train_ddp: %s\n", ftc_last_error());
        rc = 1;
    }
    int failed_rounds = 0, ended = 0;
    while (rc == 0 && ftc_manager_current_step(t.manager) < t.cfg.steps) {
        int qrc = ftc_ddp_begin_step(ddp, TIMEOUT_MS);
        if ((ended = trainer_end_if_job_finished(&t, qrc, "quorum")) != 0) {
            break;
        }
        if (qrc != 0) {
            trainer_event_error(&t, "quorum");
            rc = ++failed_rounds > MAX_FAILED_ROUNDS;
            continue;
        }
        failed_rounds = 0;
        /* The step's data follow the committed step, so a healed or
         * retried step draws the batch it would have drawn. */
        int64_t step = ftc_manager_current_step(t.manager);
        ftc_trace_set_step(step);
        ftc_trace_begin("gradient");
        if (trainer_gather_params(&t) != 0 ||
            trainer_local_gradient(&t, step) != 0) {
            rc = 1; /* the group is broken: let the launcher restart it */
            break;
        }
        ftc_trace_end("gradient");
        ftc_trace_begin("sync_grads");
        ftc_ddp_sync_grads(ddp, t.mine, t.shard, TIMEOUT_MS);
        ftc_trace_end("sync_grads");
        int commit = 0;
        if (ftc_ddp_commit(ddp, &commit, TIMEOUT_MS) != 0) {
            trainer_event_error(&t, "commit");
        }
        if (commit) {
            ftc_trace_begin("optimizer");
            trainer_sgd_update(&t, trainer_own_params(&t), t.mine);
            ftc_trace_end("optimizer");
        }
        trainer_event_step(&t, commit);
        trainer_pace(&t);
    }
    if (rc == 0 && !ended) {
        rc = trainer_finish(&t, trainer_own_params(&t));
    }
    ftc_ddp_destroy(ddp);
    trainer_fini(&t);
    return rc;
}
