/* ftc bench ft, step: N replica groups of one rank, each a manager on its
 * own thread (embedded lighthouse with default options, one store per
 * group), step after step: the quorum (start_quorum to wait_quorum), an
 * allreduce of --floats floats and the vote. The last group leaves
 * (destroy: goodbye) and comes back as a new incarnation (it heals)
 * --changes times: steps whose quorum id changed are the "change" samples
 * (a new process group, and the newcomer's heal), the others "fast". */
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"

typedef struct group {
    bench_ft_cycle *c;
    const bench_ft_job *j;
    bench_ft_samples *quorum, *step; /* [0] fast, [1] change */
    int g;
    int incarnation;
    ftc_manager *m;
    float *buf;
    int64_t last_qid;
    bool everyone; /* in its last step */
} group;

static int create(void *arg)
{
    group *gr = arg;
    char id[32], prefix[48];
    snprintf(id, sizeof(id), "group_%03d", gr->g);
    snprintf(prefix, sizeof(prefix), "group_%03d_%d", gr->g, gr->incarnation);
    ftc_manager_opts mo;
    ftc_manager_opts_init(&mo);
    mo.lighthouse = gr->j->lh_addr;
    mo.replica_id = id;
    mo.store_addr = gr->j->store_addr[gr->g];
    mo.store_prefix = prefix;
    int64_t shape[1] = {(int64_t)gr->c->o->floats};
    int rc = ftc_manager_create(&mo, &gr->m);
    rc = rc != 0 ? rc
                 : ftc_manager_register(gr->m, "w", FTC_DTYPE_F32, shape, 1,
                                        gr->buf);
    gr->last_qid = -1;
    if (rc != 0) {
        fprintf(stderr, "bench ft step: group %d: %s\n", gr->g,
                ftc_last_error());
    }
    return rc;
}

/* One step; its times go to the samples while measuring (a newcomer's
 * first step is not a step of the job's). */
static int step(void *arg)
{
    group *gr = arg;
    bench_ft_cycle *c = gr->c;
    int64_t t0 = bench_ft_now_ns();
    int rc = ftc_manager_start_quorum(gr->m, NULL);
    rc = rc != 0 ? rc : ftc_manager_wait_quorum(gr->m, FTC_TIMEOUT_DEFAULT);
    int64_t t1 = bench_ft_now_ns();
    ftc_manager_work *w = NULL;
    ftc_tensor t = ftc_tensor_cpu(gr->buf, c->o->floats, FTC_DTYPE_F32);
    rc = rc != 0 ? rc
                 : ftc_manager_allreduce(gr->m, &t, FTC_OP_AVG, &w,
                                         FTC_TIMEOUT_DEFAULT);
    int commit = 0;
    if (rc == 0) {
        ftc_manager_work_wait(w, FTC_TIMEOUT_DEFAULT);
        ftc_manager_work_release(w);
        rc = ftc_manager_should_commit(gr->m, &commit, FTC_TIMEOUT_DEFAULT);
    }
    int64_t t2 = bench_ft_now_ns();
    if (rc != 0) {
        fprintf(stderr, "bench ft step: group %d: %s\n", gr->g,
                ftc_last_error());
        return rc;
    }
    int64_t qid = ftc_manager_quorum_id(gr->m);
    gr->everyone = ftc_manager_num_participants(gr->m) == c->groups;
    if (commit && gr->last_qid >= 0 && atomic_load(&c->measuring)) {
        int k = qid != gr->last_qid;
        bench_ft_cycle_record(c, &gr->quorum[k], (double)(t1 - t0) / 1e6);
        bench_ft_cycle_record(c, &gr->step[k], (double)(t2 - t0) / 1e6);
    }
    gr->last_qid = qid;
    return 0;
}

static bool everyone(void *arg)
{
    return ((group *)arg)->everyone;
}

static int leave(void *arg)
{
    group *gr = arg;
    ftc_manager_destroy(gr->m);
    gr->m = NULL;
    return 0;
}

static int rejoin(void *arg)
{
    group *gr = arg;
    gr->incarnation++;
    return create(gr);
}

static void destroy(void *arg)
{
    leave(arg);
}

static void report(const bench_ft_opts *o, int groups, int k,
                   bench_ft_samples *quorum, bench_ft_samples *step_ms)
{
    static bool header;
    static const char *const kinds[] = {"fast", "change"};
    bench_ft_summary sq = bench_ft_summarize(quorum[k].v, quorum[k].n);
    bench_ft_summary ss = bench_ft_summarize(step_ms[k].v, step_ms[k].n);
    if (o->json) {
        printf("{\"bench\":\"ft\",\"what\":\"step\",\"groups\":%d,"
               "\"kind\":\"%s\",\"floats\":%zu,\"samples\":%zu,"
               "\"quorum_p50_ms\":%.3f,\"quorum_p99_ms\":%.3f,"
               "\"step_p50_ms\":%.3f,\"step_p99_ms\":%.3f}\n",
               groups, kinds[k], o->floats, ss.n, sq.p50, sq.p99, ss.p50,
               ss.p99);
    } else {
        if (!header) {
            printf("%-7s %6s %-7s %7s %10s %10s %10s %10s\n", "step", "groups",
                   "kind", "samples", "quorum_p50", "quorum_p99", "step_p50",
                   "step_p99");
            header = true;
        }
        printf("%-7s %6d %-7s %7zu %10.3f %10.3f %10.3f %10.3f\n", "step",
               groups, kinds[k], ss.n, sq.p50, sq.p99, ss.p50, ss.p99);
    }
    fflush(stdout);
}

int bench_ft_step(const bench_ft_opts *o, int groups)
{
    bench_ft_job j;
    if (bench_ft_job_start(&j, groups, 0, 0) != 0) {
        return 1;
    }
    bench_ft_samples quorum[2], step_ms[2];
    memset(quorum, 0, sizeof(quorum));
    memset(step_ms, 0, sizeof(step_ms));
    bench_ft_cycle c = {.o = o,
                        .groups = groups,
                        .open = create,
                        .round = step,
                        .everyone = everyone,
                        .leave = leave,
                        .rejoin = rejoin,
                        .close = destroy,
                        .mu = PTHREAD_MUTEX_INITIALIZER,
                        .cv = PTHREAD_COND_INITIALIZER};
    group *gs = ftc__calloc((size_t)groups, sizeof(*gs));
    int failed = gs == NULL;
    for (int g = 0; !failed && g < groups; g++) {
        gs[g] = (group){
            .c = &c, .j = &j, .quorum = quorum, .step = step_ms, .g = g};
        gs[g].buf = ftc__calloc(o->floats, sizeof(float));
        failed = gs[g].buf == NULL;
    }
    failed = failed || bench_ft_cycle_run(&c, gs, sizeof(*gs)) != 0;
    if (failed) {
        fprintf(stderr, "bench ft step: %d groups failed\n", groups);
    } else {
        report(o, groups, 0, quorum, step_ms);
        if (groups > 1) {
            report(o, groups, 1, quorum, step_ms);
        }
    }
    for (int k = 0; k < 2; k++) {
        bench_ft_samples_free(&quorum[k]);
        bench_ft_samples_free(&step_ms[k]);
    }
    for (int g = 0; gs != NULL && g < groups; g++) {
        ftc__free(gs[g].buf);
    }
    ftc__free(gs);
    bench_ft_job_stop(&j);
    return failed;
}
