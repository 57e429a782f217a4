/* ftc bench ft, fault: --fault-groups replica groups of one rank, each a
 * worker process ("ftc bench ft --worker") training as fast as it can
 * with default settings (embedded lighthouse and stores here), report
 * every commit on a pipe. One group is killed with SIGKILL (then
 * restarted) or frozen with SIGSTOP (then continued): the recovery time
 * is from the signal to the first step a survivor commits without it.
 * Each trial waits until every group takes part again. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"

#define WAIT_MS 120000
#define STEADY_COMMITS 10 /* commits with every group before a fault */

typedef struct proc {
    bench_ft_proc io;
    int64_t full_commits; /* with every group, since the last reset */
} proc;

typedef struct run {
    const bench_ft_opts *o;
    const char *backend;
    bench_ft_job j;
    int n;
    proc *p;
    /* Set by the line parser: the first commit without every group. */
    int64_t after_ns, resumed_ns;
} run;

/* ------------------------------------------------------------- worker */

int bench_ft_worker(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "ftc bench ft --worker: %d arguments\n", argc);
        return 2;
    }
    /* A worker never outlives the bench that started it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    size_t floats = (size_t)strtoull(argv[4], NULL, 10);
    float *w = ftc__calloc(floats > 0 ? floats : 1, sizeof(float));
    char id[32], prefix[48];
    snprintf(id, sizeof(id), "group_%s", argv[3]);
    snprintf(prefix, sizeof(prefix), "group_%s_%d", argv[3], (int)getpid());
    ftc_manager_opts mo;
    ftc_manager_opts_init(&mo);
    mo.lighthouse = argv[1];
    mo.store_addr = argv[2];
    mo.replica_id = id;
    mo.store_prefix = prefix;
    ftc_pg_opts po;
    ftc_pg_opts_init(&po);
    po.backend = argv[5];
    mo.pg_opts = &po;
    ftc_manager *m = NULL;
    int64_t shape[1] = {(int64_t)floats};
    int rc = w != NULL ? ftc_manager_create(&mo, &m) : FTC_ENOMEM;
    rc =
        rc != 0 ? rc : ftc_manager_register(m, "w", FTC_DTYPE_F32, shape, 1, w);
    if (rc != 0) {
        fprintf(stderr, "bench ft worker %s: %s\n", id, ftc_last_error());
        return 1;
    }
    for (;;) {
        /* A failed round or step is the fault being measured: go on. */
        ftc_tensor t = ftc_tensor_cpu(w, floats, FTC_DTYPE_F32);
        ftc_manager_work *wk = NULL;
        int commit = 0;
        if (ftc_manager_start_quorum(m, NULL) != 0 ||
            ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT) != 0 ||
            ftc_manager_allreduce(m, &t, FTC_OP_AVG, &wk,
                                  FTC_TIMEOUT_DEFAULT) != 0) {
            continue;
        }
        ftc_manager_work_wait(wk, FTC_TIMEOUT_DEFAULT);
        ftc_manager_work_release(wk);
        ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT);
        if (commit) {
            printf("c %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
                   bench_ft_now_ns(), ftc_manager_current_step(m),
                   ftc_manager_num_participants(m), ftc_manager_quorum_id(m));
        }
    }
}

/* ------------------------------------------------------------- parent */

static int spawn(run *r, int g)
{
    r->p[g].full_commits = 0;
    return bench_ft_spawn_worker(&r->p[g].io, r->j.lh_addr, r->j.store_addr[g],
                                 g, r->o->floats, r->backend);
}

/* The group whose lines are being read, for parse. */
typedef struct reading {
    run *r;
    int g;
} reading;

/* One line of a group: "c <t_ns> <step> <participants> <quorum_id>". */
static void parse(void *arg, const char *line)
{
    reading *rd = arg;
    run *r = rd->r;
    long long t, step, parts;
    if (sscanf(line, "c %lld %lld %lld", &t, &step, &parts) != 3) {
        return;
    }
    if (parts == r->n) {
        r->p[rd->g].full_commits++;
    } else if (r->after_ns > 0 && r->resumed_ns == 0 && t > r->after_ns) {
        r->resumed_ns = t;
    }
}

/* Reads the workers' lines until done(r) or the deadline. */
static bool pump(run *r, bool (*done)(const run *r), int64_t ms)
{
    struct pollfd pf[64];
    ftc__deadline dl = ftc__deadline_in_ms(ms);
    while (!done(r)) {
        if (ftc__deadline_expired(dl)) {
            return false;
        }
        int n = 0;
        for (int g = 0; g < r->n; g++) {
            pf[g] = (struct pollfd){.fd = r->p[g].io.fd, .events = POLLIN};
            n++;
        }
        if (poll(pf, (nfds_t)n, ftc__deadline_poll_ms(dl)) < 0 &&
            errno != EINTR) {
            return false;
        }
        for (int g = 0; g < n; g++) {
            if (pf[g].fd >= 0 && pf[g].revents != 0) {
                reading rd = {r, g};
                bench_ft_drain(&r->p[g].io, parse, &rd);
            }
        }
    }
    return true;
}

static bool steady(const run *r)
{
    for (int g = 0; g < r->n; g++) {
        if (r->p[g].full_commits < STEADY_COMMITS) {
            return false;
        }
    }
    return true;
}

static bool resumed(const run *r)
{
    return r->resumed_ns > 0;
}

static void reset(run *r)
{
    for (int g = 0; g < r->n; g++) {
        r->p[g].full_commits = 0;
    }
    r->after_ns = r->resumed_ns = 0;
}

/* One fault: waits for every group, signals the victim, times the
 * survivors' first commit without it, and brings the victim back. */
static int trial(run *r, int sig, int victim, double *ms)
{
    reset(r);
    if (!pump(r, steady, WAIT_MS)) {
        fprintf(stderr, "bench ft fault: the groups never all took part\n");
        return 1;
    }
    r->after_ns = bench_ft_now_ns();
    kill(r->p[victim].io.pid, sig);
    bool ok = pump(r, resumed, WAIT_MS);
    *ms = (double)(r->resumed_ns - r->after_ns) / 1e6;
    if (sig == SIGKILL) {
        bench_ft_reap(&r->p[victim].io);
        ok = ok && spawn(r, victim) == 0;
    } else {
        kill(r->p[victim].io.pid, SIGCONT);
    }
    if (!ok) {
        fprintf(stderr, "bench ft fault: no step without group %d\n", victim);
    }
    return !ok;
}

static void report(const run *r, const char *kind, double *v, int n)
{
    static bool header;
    bench_ft_summary s = bench_ft_summarize(v, (size_t)n);
    if (r->o->json) {
        printf("{\"bench\":\"ft\",\"what\":\"fault\",\"backend\":\"%s\","
               "\"fault\":\"%s\",\"groups\":%d,\"trials\":%d,"
               "\"p50_ms\":%.1f,\"min_ms\":%.1f,\"max_ms\":%.1f}\n",
               r->backend, kind, r->n, n, s.p50, s.min, s.max);
    } else {
        if (!header) {
            printf("%-7s %-12s %-8s %6s %6s %10s %10s %10s\n", "fault",
                   "backend", "signal", "groups", "trials", "p50_ms", "min_ms",
                   "max_ms");
            header = true;
        }
        printf("%-7s %-12s %-8s %6d %6d %10.1f %10.1f %10.1f\n", "fault",
               r->backend, kind, r->n, n, s.p50, s.min, s.max);
    }
    fflush(stdout);
}

/* The whole fault sequence with every group's cross-replica group on
 * backend. */
static int fault_on(const bench_ft_opts *o, const char *backend)
{
    run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.backend = backend;
    r.n = o->fault_groups < 64 ? o->fault_groups : 64;
    if (bench_ft_job_start(&r.j, r.n, 0, 0) != 0) {
        return 1;
    }
    r.p = ftc__calloc((size_t)r.n, sizeof(*r.p));
    double *times = ftc__calloc((size_t)o->trials, sizeof(double));
    int failed = r.p == NULL || times == NULL;
    for (int g = 0; r.p != NULL && g < r.n; g++) {
        r.p[g].io.fd = -1;
    }
    for (int g = 0; !failed && g < r.n; g++) {
        failed = spawn(&r, g) != 0;
    }
    static const int sigs[] = {SIGKILL, SIGSTOP};
    static const char *const names[] = {"kill-9", "sigstop"};
    for (int k = 0; !failed && k < 2; k++) {
        for (int t = 0; !failed && t < o->trials; t++) {
            failed = trial(&r, sigs[k], 1 + t % (r.n - 1), &times[t]);
        }
        if (!failed) {
            report(&r, names[k], times, o->trials);
        }
    }
    for (int g = 0; r.p != NULL && g < r.n; g++) {
        bench_ft_reap(&r.p[g].io);
    }
    ftc__free(r.p);
    ftc__free(times);
    bench_ft_job_stop(&r.j);
    return failed;
}

int bench_ft_fault(const bench_ft_opts *o)
{
    char list[256];
    snprintf(list, sizeof(list), "%s", o->backends);
    int failed = 0;
    char *save = NULL;
    for (char *b = strtok_r(list, ",", &save); b != NULL;
         b = strtok_r(NULL, ",", &save)) {
        failed += fault_on(o, b);
    }
    return failed;
}
