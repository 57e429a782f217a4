/* ftc bench ft, heal: a replica joins --sources up-to-date ones (managers
 * on threads of this process, default healing options, heal in place) and
 * pulls --heal-mib MiB striped over them; its time runs from its first
 * request to the last byte in place, the sources' checksum pass included.
 * Right before and right after each heal, with the sources paused between
 * two steps, the baseline: one TCP stream between two threads of this
 * process moves as many bytes over loopback (send from and receive into 1
 * MiB buffers, as iperf3 does); the ratio uses their mean. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"

#define BLOCK ((size_t)1 << 20)
#define TIMEOUT_MS 120000

/* ------------------------------------------------------ other work */

/* CPU seconds the whole machine and this process spent busy so far. */
static void cpu_busy(double *machine, double *self)
{
    *machine = *self = 0;
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (f != NULL &&
        fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
               &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
        /* user nice system [idle iowait] irq softirq steal */
        double ticks = (double)sysconf(_SC_CLK_TCK);
        *machine = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / ticks;
    }
    if (f != NULL) {
        fclose(f);
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        *self = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    }
}

/* ------------------------------------------------------------ baseline */

typedef struct sender {
    int port;
    size_t bytes;
    int rc;
} sender;

static void *send_main(void *arg)
{
    sender *s = arg;
    uint8_t *buf = ftc__malloc(BLOCK);
    int fd = -1;
    s->rc = buf == NULL
                ? FTC_ENOMEM
                : ftc__sock_connect("127.0.0.1", s->port,
                                    ftc__deadline_in_ms(TIMEOUT_MS), NULL, &fd);
    if (s->rc == 0) {
        memset(buf, 0x5a, BLOCK);
        ftc__sock_set_nonblock(fd, 0);
    }
    for (size_t sent = 0; s->rc == 0 && sent < s->bytes;) {
        size_t n = s->bytes - sent < BLOCK ? s->bytes - sent : BLOCK;
        ssize_t k = send(fd, buf, n, MSG_NOSIGNAL);
        s->rc = k > 0 ? 0 : FTC_ESYS;
        sent += k > 0 ? (size_t)k : 0;
    }
    if (fd >= 0) {
        close(fd);
    }
    ftc__free(buf);
    return NULL;
}

/* GB/s of one loopback stream of `bytes` bytes; 0 on failure. */
static double baseline(size_t bytes)
{
    int lfd, port, fd = -1;
    if (ftc__sock_listen("127.0.0.1", 0, 1, &lfd, &port) != 0) {
        return 0;
    }
    sender s = {port, bytes, 0};
    pthread_t t;
    uint8_t *buf = ftc__malloc(BLOCK);
    bool started = buf != NULL &&
                   ftc__thread_start(&t, "bench-sender", send_main, &s) == 0;
    struct pollfd p = {lfd, POLLIN, 0};
    if (started && poll(&p, 1, TIMEOUT_MS) == 1) {
        fd = accept(lfd, NULL, NULL);
    }
    double gbs = 0;
    if (fd >= 0) {
        memset(buf, 0, BLOCK);
        size_t got = 0;
        int64_t t0 = bench_ft_now_ns();
        ssize_t k = 1;
        while (got < bytes && k > 0) {
            k = recv(fd, buf, BLOCK, 0);
            got += k > 0 ? (size_t)k : 0;
        }
        int64_t ns = bench_ft_now_ns() - t0;
        gbs = got == bytes && ns > 0 ? (double)bytes / (double)ns : 0;
        close(fd);
    }
    if (started) {
        pthread_join(t, NULL);
    }
    close(lfd);
    ftc__free(buf);
    return s.rc == 0 ? gbs : 0;
}

/* ---------------------------------------------------------------- heal */

/* The sources pause between two steps while the baseline runs (their
 * rounds would take cores from it), and say when one failed. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool failed;
    int64_t hold_at; /* sources at this step or later wait */
    int64_t started; /* the highest step a source started a round to */
    int paused;      /* sources waiting */
    bool stop;
} gate;

typedef struct replica {
    const bench_ft_job *j;
    gate *gate;
    int g, sources;
    size_t floats;
    float *state;
    ftc_manager *m;
    int rc;
    char why[256];  /* the failure's message */
    double lend_ms; /* a source's last lending */
} replica;

static int make(replica *r)
{
    char id[32];
    snprintf(id, sizeof(id), "replica_%d", r->g);
    ftc_manager_opts mo;
    ftc_manager_opts_init(&mo);
    mo.lighthouse = r->j->lh_addr;
    mo.replica_id = id;
    mo.store_addr = r->j->store_addr[r->g];
    mo.heal_sources = r->sources;
    int64_t shape[1] = {(int64_t)r->floats};
    int rc = ftc_manager_create(&mo, &r->m);
    return rc != 0 ? rc
                   : ftc_manager_register(r->m, "state", FTC_DTYPE_F32, shape,
                                          1, r->state);
}

/* Quorum (healing in place) and vote. */
static int step(replica *r)
{
    ftc_manager_quorum_opts qo;
    ftc_manager_quorum_opts_init(&qo);
    qo.heal_in_place = true;
    int commit = 0;
    int rc = ftc_manager_start_quorum(r->m, &qo);
    rc = rc != 0 ? rc : ftc_manager_wait_quorum(r->m, FTC_TIMEOUT_DEFAULT);
    rc = rc != 0
             ? rc
             : ftc_manager_should_commit(r->m, &commit, FTC_TIMEOUT_DEFAULT);
    return rc;
}

static void *source_main(void *arg)
{
    replica *r = arg;
    gate *g = r->gate;
    for (;;) {
        pthread_mutex_lock(&g->mu);
        while (!g->stop && ftc_manager_current_step(r->m) >= g->hold_at) {
            g->paused++;
            pthread_cond_broadcast(&g->cv);
            pthread_cond_wait(&g->cv, &g->mu);
            g->paused--;
        }
        bool stop = g->stop;
        int64_t to = ftc_manager_current_step(r->m) + 1;
        g->started = to > g->started ? to : g->started;
        pthread_mutex_unlock(&g->mu);
        if (stop) {
            break;
        }
        r->rc = step(r);
        if (r->rc != 0) {
            snprintf(r->why, sizeof(r->why), "source %d: %s", r->g,
                     ftc_last_error());
        }
        pthread_mutex_lock(&g->mu);
        g->failed = g->failed || r->rc != 0;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        if (r->rc != 0) {
            break;
        }
    }
    /* Leaving at once (goodbye): the others must not wait for it. */
    ftc_manager_stats st;
    ftc_manager_stats_get(r->m, &st);
    r->lend_ms = st.last_lend_ms;
    ftc_manager_destroy(r->m);
    r->m = NULL;
    return NULL;
}

/* Pauses the n sources between two steps, at step at_least or later, and
 * waits until all wait; false if one failed. They stop at the step of the
 * latest round one started:
 * none has gone further (that check and this are under the lock), and a
 * source that stopped earlier would leave the others waiting for it in
 * their round. */
static bool pause_sources(gate *g, int n, int64_t at_least)
{
    pthread_mutex_lock(&g->mu);
    g->hold_at = g->started > at_least ? g->started : at_least;
    while (g->paused < n && !g->failed) {
        pthread_cond_wait(&g->cv, &g->mu);
    }
    bool ok = !g->failed;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static void resume_sources(gate *g, bool stop)
{
    pthread_mutex_lock(&g->mu);
    g->hold_at = INT64_MAX;
    g->stop = stop;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* The baseline with the sources paused at step at_least or later: 0 if it
 * failed. */
static double quiet_baseline(gate *g, int n, int64_t at_least, size_t bytes)
{
    double gbs = pause_sources(g, n, at_least) ? baseline(bytes) : 0;
    resume_sources(g, false);
    return gbs;
}

typedef struct heal_result {
    double ms, lend_ms;
    int64_t bytes;
    double base_gbs; /* the mean of a baseline before and one after */
} heal_result;

/* One heal from `sources` fresh replicas; 0 or 1 (message on stderr). */
static int heal_once(size_t mib, int sources, heal_result *out)
{
    bench_ft_job j;
    if (bench_ft_job_start(&j, sources + 1, (uint64_t)sources, 0) != 0) {
        return 1;
    }
    size_t floats = (mib << 20) / sizeof(float);
    replica rs[BENCH_FT_LIST_MAX + 1];
    pthread_t th[BENCH_FT_LIST_MAX];
    memset(rs, 0, sizeof(rs));
    gate gt = {.hold_at = INT64_MAX};
    pthread_mutex_init(&gt.mu, NULL);
    pthread_cond_init(&gt.cv, NULL);
    int rc = 0, made = 0, started = 0;
    for (; rc == 0 && made <= sources; made++) {
        replica *r = &rs[made];
        *r = (replica){.j = &j, .gate = &gt, .g = made, .sources = sources};
        r->floats = floats;
        r->state = ftc__malloc(floats * sizeof(float));
        /* Touched, as a trainer's state is; the healer's differs. */
        for (size_t i = 0; r->state != NULL && i < floats; i++) {
            r->state[i] = (float)(i % 1000) + (made == sources ? 0.5f : 0);
        }
        rc = r->state == NULL ? FTC_ENOMEM : make(r);
    }
    for (; rc == 0 && started < sources; started++) {
        rc = ftc__thread_start(&th[started], "bench-source", source_main,
                               &rs[started]);
    }
    /* The sources commit a step (the healer is then behind all of them)
     * and pause: the baseline runs, then the heal, then the baseline
     * again once the healer left. */
    replica *h = &rs[sources];
    double before = rc == 0 ? quiet_baseline(&gt, started, 1, mib << 20) : 0;
    rc = rc != 0 ? rc : step(h);
    ftc_manager_stats hs;
    memset(&hs, 0, sizeof(hs));
    char no_heal[256] = "no heal happened";
    if (rc == 0) {
        ftc_manager_stats_get(h->m, &hs);
        char latched[200];
        if (ftc_manager_errored(h->m, latched, sizeof(latched)) != 0) {
            snprintf(no_heal, sizeof(no_heal), "no heal: %s", latched);
        }
    }
    /* The healer leaves first (goodbye), then the sources one by one. */
    ftc_manager_destroy(h->m);
    h->m = NULL;
    double after = rc == 0 ? quiet_baseline(&gt, started, 0, mib << 20) : 0;
    ftc_lighthouse_configure_job(j.lh, "default:min_replicas=1");
    resume_sources(&gt, true);
    const char *why = rc != 0 ? ftc_last_error() : "";
    for (int g = 0; g < started; g++) {
        pthread_join(th[g], NULL);
        if (rc == 0 && rs[g].rc != 0) {
            rc = rs[g].rc;
            why = rs[g].why;
        }
    }
    for (int g = 0; g < made; g++) {
        ftc_manager_destroy(rs[g].m);
        ftc__free(rs[g].state);
    }
    bench_ft_job_stop(&j);
    pthread_cond_destroy(&gt.cv);
    pthread_mutex_destroy(&gt.mu);
    if (rc != 0 || hs.heals != 1) {
        fprintf(stderr, "bench ft heal: %d sources: %s\n", sources,
                rc != 0 ? why : no_heal);
        return 1;
    }
    if (before <= 0 || after <= 0) {
        fprintf(stderr, "bench ft heal: the baseline stream failed\n");
        return 1;
    }
    *out = (heal_result){hs.last_heal_ms, rs[0].lend_ms, hs.heal_bytes,
                         (before + after) / 2};
    return 0;
}

static void report(const bench_ft_opts *o, size_t mib, int sources,
                   bench_ft_samples *v)
{
    static bool header;
    bench_ft_summary b = bench_ft_summarize(v[0].v, v[0].n);
    bench_ft_summary h = bench_ft_summarize(v[1].v, v[1].n);
    bench_ft_summary q = bench_ft_summarize(v[2].v, v[2].n);
    bench_ft_summary ms = bench_ft_summarize(v[3].v, v[3].n);
    bench_ft_summary lend = bench_ft_summarize(v[4].v, v[4].n);
    bench_ft_summary others = bench_ft_summarize(v[5].v, v[5].n);
    if (o->json) {
        printf("{\"bench\":\"ft\",\"what\":\"heal\",\"mib\":%zu,"
               "\"sources\":%d,\"reps\":%zu,\"baseline_gb_per_s\":%.3f,"
               "\"heal_gb_per_s\":%.3f,\"heal_min_gb_per_s\":%.3f,"
               "\"heal_max_gb_per_s\":%.3f,\"ratio\":%.3f,\"heal_ms\":%.1f,"
               "\"source_lend_ms\":%.1f,\"other_cores\":%.2f}\n",
               mib, sources, h.n, b.p50, h.p50, h.min, h.max, q.p50, ms.p50,
               lend.p50, others.p50);
    } else {
        if (!header) {
            printf("%-7s %6s %7s %4s %12s %10s %15s %6s %8s %8s %6s\n", "heal",
                   "MiB", "sources", "reps", "baseline_GBs", "heal_GBs",
                   "heal_min..max", "ratio", "heal_ms", "lend_ms", "others");
            header = true;
        }
        printf("%-7s %6zu %7d %4zu %12.2f %10.2f %7.2f..%-6.2f %5.0f%% %8.1f "
               "%8.1f %6.1f\n",
               "heal", mib, sources, h.n, b.p50, h.p50, h.min, h.max,
               100 * q.p50, ms.p50, lend.p50, others.p50);
    }
    fflush(stdout);
}

int bench_ft_heal(const bench_ft_opts *o, size_t mib, int sources)
{
    if (sources > BENCH_FT_LIST_MAX || mib == 0) {
        fprintf(stderr, "bench ft heal: at most %d sources\n",
                BENCH_FT_LIST_MAX);
        return 1;
    }
    /* baseline GB/s, heal GB/s, their ratio, heal ms, source's lend ms,
     * and the cores other processes kept busy meanwhile: other work takes
     * cores from the heal (which uses both) more than from the stream
     * (one and a bit), so the row says how busy the machine was. */
    bench_ft_samples v[6];
    memset(v, 0, sizeof(v));
    int failed = 0;
    for (int k = 0; !failed && k < o->reps; k++) {
        double m0, s0, m1, s1;
        int64_t t0 = bench_ft_now_ns();
        cpu_busy(&m0, &s0);
        heal_result hr;
        failed = heal_once(mib, sources, &hr) != 0;
        double base = hr.base_gbs;
        cpu_busy(&m1, &s1);
        double wall = (double)(bench_ft_now_ns() - t0) / 1e9;
        if (!failed) {
            double gbs = (double)hr.bytes / (hr.ms * 1e6);
            bench_ft_add(&v[0], base);
            bench_ft_add(&v[1], gbs);
            bench_ft_add(&v[2], gbs / base);
            bench_ft_add(&v[3], hr.ms);
            bench_ft_add(&v[4], hr.lend_ms);
            bench_ft_add(&v[5], ((m1 - m0) - (s1 - s0)) / wall);
        }
    }
    if (!failed) {
        report(o, mib, sources, v);
    }
    for (int k = 0; k < 6; k++) {
        bench_ft_samples_free(&v[k]);
    }
    return failed;
}
