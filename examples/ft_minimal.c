/* The README's example: the smallest fault-tolerant trainer. Each replica
 * group fits w to (1, 2, 3, 4) by averaged gradient steps through the
 * manager; run it with `ftc run --replicas 3 --kill-at-steps 50,100,150 --
 * ./ft_minimal`. */
#include <stdio.h>
#include <threads.h>

#include "ftc/ftc.h"

int main(void)
{
    ftc_manager_opts o;
    ftc_manager_opts_init(&o);
    ftc_manager *m = NULL;
    float w[4] = {0}, grad[4];
    int64_t shape[1] = {4};
    if (ftc_manager_opts_from_env(&o) != 0 || /* set by `ftc run` */
        ftc_manager_create(&o, &m) != 0 ||
        ftc_manager_register(m, "w", FTC_DTYPE_F32, shape, 1, w) != 0) {
        fprintf(stderr, "ft_minimal: %s\n", ftc_last_error());
        return 1;
    }
    while (ftc_manager_current_step(m) < 200) {
        /* Join this step's quorum; a replica that is behind heals here. */
        if (ftc_manager_start_quorum(m, NULL) != 0 ||
            ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT) != 0) {
            continue;
        }
        /* 10 ms stand in for the forward and backward passes. */
        thrd_sleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
        for (int i = 0; i < 4; i++) {
            grad[i] = w[i] - (float)(i + 1); /* gradient of |w - t|^2 / 2 */
        }
        ftc_tensor t = ftc_tensor_cpu(grad, 4, FTC_DTYPE_F32);
        ftc_manager_work *work = NULL;
        if (ftc_manager_allreduce(m, &t, FTC_OP_AVG, &work,
                                  FTC_TIMEOUT_DEFAULT) == 0) {
            ftc_manager_work_wait(work, FTC_TIMEOUT_DEFAULT); /* errors latch */
            ftc_manager_work_release(work);
        }
        int commit = 0; /* every rank of every replica agreed */
        ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT);
        for (int i = 0; commit && i < 4; i++) {
            w[i] -= 0.1f * grad[i];
        }
    }
    printf("w = %.3f %.3f %.3f %.3f after %lld steps\n", w[0], w[1], w[2], w[3],
           (long long)ftc_manager_current_step(m));
    ftc_manager_destroy(m);
    return 0;
}
