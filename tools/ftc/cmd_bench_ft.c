/* ftc bench ft: the manager's cost per step (quorum, allreduce, vote) for
 * 1..N replica groups, and healing throughput, all in this process
 * (an embedded lighthouse, one store per group, a thread per group). */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "cmd.h"
#include "ftc/ftc.h"

#define MAX_GROUPS 64

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A job: the lighthouse and one store per replica group. */
typedef struct job {
    ftc_lighthouse *lh;
    char lh_addr[64];
    ftc_store_server *store[MAX_GROUPS];
    char store_addr[MAX_GROUPS][64];
} job;

static void job_stop(job *j, int groups)
{
    for (int g = 0; g < groups; g++) {
        ftc_store_server_stop(j->store[g]);
    }
    ftc_lighthouse_destroy(j->lh);
}

static int job_start(job *j, int groups, int min_replicas)
{
    memset(j, 0, sizeof(*j));
    ftc_lighthouse_opts lo;
    ftc_lighthouse_opts_init(&lo);
    lo.bind = "127.0.0.1:0";
    lo.min_replicas = (uint64_t)min_replicas;
    int rc = ftc_lighthouse_create(&j->lh, &lo);
    rc = rc != 0
             ? rc
             : ftc_lighthouse_address(j->lh, j->lh_addr, sizeof(j->lh_addr));
    for (int g = 0; rc == 0 && g < groups; g++) {
        ftc_store_server_opts so;
        ftc_store_server_opts_init(&so);
        so.bind_host = "127.0.0.1";
        rc = ftc_store_server_start(&j->store[g], &so);
        if (rc == 0) {
            snprintf(j->store_addr[g], sizeof(j->store_addr[g]), "127.0.0.1:%d",
                     ftc_store_server_port(j->store[g]));
        }
    }
    if (rc != 0) {
        fprintf(stderr, "bench ft: %s\n", ftc_last_error());
        job_stop(j, groups);
    }
    return rc;
}

/* One replica group of one rank. */
typedef struct replica {
    job *j;
    int g;
    size_t floats;
    int steps;       /* steps to time (after one warm-up) */
    double *step_ms; /* steps entries */
    atomic_int stop; /* sources: run until the healer healed */
    /* Source 0 signals its first commit (the healer is then behind). */
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    ftc_manager *m;
    float *state; /* registered for healing */
    size_t state_floats;
    float grad[1024]; /* what the heal bench's steps average */
    int rc;
} replica;

static int make_manager(replica *r, int heal_sources)
{
    ftc_manager_opts o;
    ftc_manager_opts_init(&o);
    char id[32];
    snprintf(id, sizeof(id), "replica_%d", r->g);
    o.lighthouse = r->j->lh_addr;
    o.replica_id = id;
    o.store_addr = r->j->store_addr[r->g];
    o.heal_sources = heal_sources;
    o.heal_streams = 8;
    int rc = ftc_manager_create(&r->m, &o);
    int64_t shape[1] = {(int64_t)r->state_floats};
    rc = rc != 0 ? rc
                 : ftc_manager_register(r->m, "state", FTC_DTYPE_F32, shape, 1,
                                        r->state);
    if (rc != 0) {
        fprintf(stderr, "bench ft: replica %d: %s\n", r->g, ftc_last_error());
    }
    return rc;
}

/* One step: quorum, an average of floats floats (the state in the step
 * bench, a small gradient in the heal bench), the vote. */
static int step(replica *r)
{
    ftc_manager_quorum_opts qo;
    ftc_manager_quorum_opts_init(&qo);
    /* Nothing reads the state during the round: no staging copy (whose
     * fresh pages would be timed too). */
    qo.heal_in_place = true;
    int rc = ftc_manager_start_quorum(r->m, &qo);
    rc = rc != 0 ? rc : ftc_manager_wait_quorum(r->m, FTC_TIMEOUT_DEFAULT);
    ftc_manager_work *w = NULL;
    float *data = r->state_floats == r->floats ? r->state : r->grad;
    ftc_tensor t = ftc_tensor_cpu(data, r->floats, FTC_DTYPE_F32);
    rc = rc != 0 ? rc
                 : ftc_manager_allreduce(r->m, &t, FTC_OP_AVG,
                                         FTC_TIMEOUT_DEFAULT, &w);
    if (rc == 0) {
        ftc_manager_work_wait(w, FTC_TIMEOUT_DEFAULT);
        ftc_manager_work_release(w);
        int commit;
        rc = ftc_manager_should_commit(r->m, &commit, FTC_TIMEOUT_DEFAULT);
    }
    return rc;
}

static void *timed_main(void *arg)
{
    replica *r = arg;
    r->rc = make_manager(r, 1);
    for (int s = 0; r->rc == 0 && s <= r->steps; s++) {
        int64_t t0 = now_ns();
        r->rc = step(r);
        if (s > 0) {
            r->step_ms[s - 1] = (double)(now_ns() - t0) / 1e6;
        }
    }
    ftc_manager_destroy(r->m);
    return NULL;
}

static void *source_main(void *arg)
{
    replica *r = arg;
    while (r->rc == 0 && !atomic_load(&r->stop)) {
        r->rc = step(r);
        if (r->cv != NULL) {
            pthread_mutex_lock(r->mu);
            pthread_cond_broadcast(r->cv);
            pthread_mutex_unlock(r->mu);
        }
    }
    if (r->cv != NULL) {
        pthread_mutex_lock(r->mu);
        pthread_cond_broadcast(r->cv);
        pthread_mutex_unlock(r->mu);
    }
    ftc_manager_destroy(r->m); /* its goodbye lets the others go on */
    r->m = NULL;
    return NULL;
}

/* Step latency with `groups` replica groups. */
static int bench_steps(int groups, int steps, size_t floats, int json)
{
    job j;
    if (job_start(&j, groups, groups) != 0) {
        return 1;
    }
    replica *rs = calloc((size_t)groups, sizeof(*rs));
    pthread_t th[MAX_GROUPS];
    for (int g = 0; g < groups; g++) {
        memset(&rs[g], 0, sizeof(rs[g]));
        rs[g].j = &j;
        rs[g].g = g;
        rs[g].floats = floats;
        rs[g].steps = steps;
        rs[g].state_floats = floats;
        rs[g].step_ms = calloc((size_t)steps, sizeof(double));
        rs[g].state = calloc(floats, sizeof(float));
        pthread_create(&th[g], NULL, timed_main, &rs[g]);
    }
    int failed = 0;
    double *all = calloc((size_t)(groups * steps), sizeof(double));
    for (int g = 0; g < groups; g++) {
        pthread_join(th[g], NULL);
        failed += rs[g].rc != 0;
        memcpy(all + (size_t)g * (size_t)steps, rs[g].step_ms,
               (size_t)steps * sizeof(double));
        free(rs[g].step_ms);
        free(rs[g].state);
    }
    size_t n = (size_t)(groups * steps);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += all[i];
    }
    double p50 = bench_percentile(all, n, 50),
           p99 = bench_percentile(all, n, 99);
    if (failed != 0) {
        fprintf(stderr, "bench ft: %d of %d groups failed\n", failed, groups);
    } else if (json) {
        printf("{\"bench\":\"step\",\"groups\":%d,\"floats\":%zu,"
               "\"mean_ms\":%.3f,\"p50_ms\":%.3f,\"p99_ms\":%.3f}\n",
               groups, floats, sum / (double)n, p50, p99);
    } else {
        printf("step  %6d groups %9zu floats  mean %7.2f ms  p50 %7.2f ms  "
               "p99 %7.2f ms\n",
               groups, floats, sum / (double)n, p50, p99);
    }
    free(all);
    free(rs);
    job_stop(&j, groups);
    return failed != 0;
}

/* Healing throughput: `sources` up-to-date groups step on, a new one
 * joins and pulls `mib` MiB striped over them. */
static int bench_heal(int sources, size_t mib, int json)
{
    int groups = sources + 1;
    job j;
    if (job_start(&j, groups, sources) != 0) {
        return 1;
    }
    size_t floats = (mib << 20) / sizeof(float);
    replica rs[MAX_GROUPS];
    pthread_t th[MAX_GROUPS];
    int rc = 0;
    for (int g = 0; g < groups; g++) {
        memset(&rs[g], 0, sizeof(rs[g]));
        rs[g].j = &j;
        rs[g].g = g;
        rs[g].floats = sizeof(rs[g].grad) / sizeof(rs[g].grad[0]);
        rs[g].state_floats = floats;
        rs[g].state = calloc(floats, sizeof(float));
        for (size_t i = 0; rs[g].state != NULL && i < floats; i++) {
            rs[g].state[i] = (float)(i % 1000);
        }
        rc = rs[g].state == NULL ? FTC_ENOMEM : make_manager(&rs[g], sources);
        if (rc != 0) {
            groups = g + (rs[g].m != NULL);
            break;
        }
    }
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    rs[0].mu = &mu;
    rs[0].cv = &cv;
    for (int g = 0; rc == 0 && g < sources; g++) {
        pthread_create(&th[g], NULL, source_main, &rs[g]);
    }
    replica *h = &rs[sources];
    /* The healer starts once the sources committed a step: it is behind
     * all of them, so it pulls from every one. */
    pthread_mutex_lock(&mu);
    while (rc == 0 && ftc_manager_current_step(rs[0].m) < 1 && rs[0].rc == 0) {
        pthread_cond_wait(&cv, &mu);
    }
    pthread_mutex_unlock(&mu);
    rc = rc != 0 ? rc : step(h);
    ftc_manager_stats st;
    memset(&st, 0, sizeof(st));
    if (rc == 0) {
        ftc_manager_get_stats(h->m, &st);
    }
    /* The healer leaves first (goodbye), so that the sources' next
     * quorum forms without waiting for it. */
    ftc_manager_destroy(h->m);
    h->m = NULL;
    /* Sources stop one by one: the others must not wait for them. */
    ftc_lighthouse_configure_job(j.lh, "default:min_replicas=1");
    for (int g = 0; g < sources; g++) {
        atomic_store(&rs[g].stop, 1);
    }
    for (int g = 0; rc == 0 && g < sources; g++) {
        pthread_join(th[g], NULL);
    }
    if (rc != 0 || st.heals != 1) {
        fprintf(stderr, "bench ft: heal %d sources: %s\n", sources,
                rc != 0 ? ftc_last_error() : "no heal happened");
    } else {
        double gbs = (double)st.heal_bytes / (st.last_heal_ms / 1e3) / 1e9;
        if (json) {
            printf("{\"bench\":\"heal\",\"sources\":%d,\"bytes\":%lld,"
                   "\"ms\":%.1f,\"gb_per_s\":%.3f}\n",
                   sources, (long long)st.heal_bytes, st.last_heal_ms, gbs);
        } else {
            printf("heal  %6d sources %8zu MiB  %8.1f ms  %6.2f GB/s\n",
                   sources, mib, st.last_heal_ms, gbs);
        }
    }
    for (int g = 0; g < groups; g++) {
        ftc_manager_destroy(rs[g].m);
        free(rs[g].state);
    }
    job_stop(&j, sources + 1);
    return rc != 0 || st.heals != 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ftc bench ft [--groups 1,2,4,8] [--steps N] "
            "[--floats N]\n"
            "                    [--heal-mib 64,256] [--sources 1,2,3] "
            "[--json]\n\n"
            "Times a manager step (quorum, an allreduce of --floats floats,\n"
            "the vote; default 1000) with each number of replica groups\n"
            "(one rank each, threads of this process, --steps steps after a\n"
            "warm-up; default 50), then healing: a new replica pulls\n"
            "--heal-mib MiB from each number of --sources up-to-date ones\n"
            "over loopback HTTP. Everything runs in this process.\n");
}

/* Splits a "1,2,4" list into at most max positive integers. */
static int parse_list(const char *text, long *out, int max)
{
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", text);
    for (char *p = buf; *p != '\0' && n < max;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || (*end != ',' && *end != '\0')) {
            return -1;
        }
        out[n++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

int ftc_cmd_bench_ft(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"groups", required_argument, NULL, 'g'},
        {"steps", required_argument, NULL, 's'},
        {"floats", required_argument, NULL, 'f'},
        {"heal-mib", required_argument, NULL, 'm'},
        {"sources", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *groups = "1,2,4,8", *mibs = "64,256", *sources = "1,2,3";
    long steps = 50, floats = 1000;
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'g':
            groups = optarg;
            break;
        case 's':
            steps = strtol(optarg, NULL, 10);
            break;
        case 'f':
            floats = strtol(optarg, NULL, 10);
            break;
        case 'm':
            mibs = optarg;
            break;
        case 'o':
            sources = optarg;
            break;
        case 'j':
            json = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    long gl[16], ml[16], sl[16];
    int ng = parse_list(groups, gl, 16), nm = parse_list(mibs, ml, 16),
        ns = parse_list(sources, sl, 16);
    if (ng < 0 || nm < 0 || ns < 0 || steps <= 0 || floats <= 0) {
        usage(stderr);
        return 2;
    }
    int failed = 0;
    for (int i = 0; i < ng; i++) {
        if (gl[i] > MAX_GROUPS) {
            fprintf(stderr, "bench ft: at most %d groups\n", MAX_GROUPS);
            return 2;
        }
        failed += bench_steps((int)gl[i], (int)steps, (size_t)floats, json);
    }
    for (int i = 0; i < nm; i++) {
        for (int k = 0; k < ns && sl[k] < MAX_GROUPS; k++) {
            failed += bench_heal((int)sl[k], (size_t)ml[i], json);
        }
    }
    return failed != 0;
}
