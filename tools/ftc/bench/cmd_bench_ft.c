/* ftc bench ft: what fault tolerance costs and how fast it recovers:
 * quorum rounds and manager steps per number of replica groups (with the
 * same membership and right after a change), recovery from kill -9 and
 * SIGSTOP with real processes, and healing throughput next to a loopback
 * TCP baseline measured in the same run. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"
#include "bench/bench_stats.h"
#include "cmd.h"

int64_t bench_ft_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------------ job */

int bench_ft_job_start(bench_ft_job *j, int stores, uint64_t min_replicas)
{
    memset(j, 0, sizeof(*j));
    ftc_lighthouse_opts lo;
    ftc_lighthouse_opts_init(&lo);
    lo.bind = "127.0.0.1:0";
    /* Every replica group comes from 127.0.0.1 here, not from a host of
     * its own: the per-address cap (256) would refuse hundreds. */
    lo.max_connections_per_ip = 8192;
    if (min_replicas > 0) {
        lo.min_replicas = min_replicas;
    }
    j->stores = ftc__calloc((size_t)stores, sizeof(*j->stores));
    j->store_addr = ftc__calloc((size_t)stores, sizeof(*j->store_addr));
    int rc = j->stores == NULL || j->store_addr == NULL ? FTC_ENOMEM : 0;
    rc = rc != 0 ? rc : ftc_lighthouse_create(&lo, &j->lh);
    rc = rc != 0
             ? rc
             : ftc_lighthouse_address(j->lh, j->lh_addr, sizeof(j->lh_addr));
    for (; rc == 0 && j->n_stores < stores; j->n_stores++) {
        ftc_store_server_opts so;
        ftc_store_server_opts_init(&so);
        so.bind_host = "127.0.0.1";
        rc = ftc_store_server_create(&so, &j->stores[j->n_stores]);
        if (rc == 0) {
            snprintf(j->store_addr[j->n_stores], sizeof(j->store_addr[0]),
                     "127.0.0.1:%d",
                     ftc_store_server_port(j->stores[j->n_stores]));
        }
    }
    if (rc != 0) {
        fprintf(stderr, "bench ft: %s\n", ftc_last_error());
        bench_ft_job_stop(j);
        return 1;
    }
    return 0;
}

void bench_ft_job_stop(bench_ft_job *j)
{
    for (int g = 0; g < j->n_stores; g++) {
        ftc_store_server_destroy(j->stores[g]);
    }
    ftc_lighthouse_destroy(j->lh);
    ftc__free(j->stores);
    ftc__free(j->store_addr);
    memset(j, 0, sizeof(*j));
}

/* -------------------------------------------------------------- samples */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest rank, as bench_percentile does. */
static double at_rank(const double *v, size_t n, double p)
{
    size_t rank = (size_t)(p / 100.0 * (double)n + 0.5);
    rank = rank < 1 ? 1 : rank > n ? n : rank;
    return v[rank - 1];
}

bench_ft_summary bench_ft_summarize(double *v, size_t n)
{
    bench_ft_summary s = {n, 0, 0, 0, 0};
    if (n > 0) {
        qsort(v, n, sizeof(*v), cmp_double);
        s.p50 = at_rank(v, n, 50);
        s.p99 = at_rank(v, n, 99);
        s.min = v[0];
        s.max = v[n - 1];
    }
    return s;
}

int bench_ft_add(bench_ft_samples *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap > 0 ? 2 * s->cap : 64;
        double *v = ftc__realloc(s->v, cap * sizeof(*v));
        if (v == NULL) {
            return FTC_ENOMEM;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

void bench_ft_samples_free(bench_ft_samples *s)
{
    ftc__free(s->v);
    memset(s, 0, sizeof(*s));
}

/* -------------------------------------------------------------- options */

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: ftc bench ft [--what quorum,step,fault,heal] [--json]\n"
        "         [--quorum-groups 1,4,16,64,256] [--step-groups 1,4,16,64]\n"
        "         [--steps N] [--changes N] [--floats N]\n"
        "         [--fault-groups N] [--trials N]\n"
        "         [--heal-mib 256] [--sources 1,2] [--reps N]\n\n"
        "quorum  lighthouse rounds of --quorum-groups replica groups\n"
        "        (threads, one lighthouse client each): p50/p99 of the\n"
        "        time between two quorums, with the same membership\n"
        "        (fast quorum) and right after one group left or came\n"
        "        back (--changes times).\n"
        "step    the same with a manager per group (threads): quorum,\n"
        "        an allreduce of --floats floats, the vote; the quorum\n"
        "        part and the whole step, fast and after a change.\n"
        "fault   --fault-groups replica groups as processes, default\n"
        "        settings: time from kill -9 (then SIGSTOP) of one group\n"
        "        to the survivors' first step committed without it,\n"
        "        --trials times each.\n"
        "heal    a replica pulls --heal-mib MiB from each number of\n"
        "        --sources up-to-date ones (in place, one process), and a\n"
        "        plain TCP stream between two threads moves as many bytes\n"
        "        just before (the baseline); --reps pairs, medians and\n"
        "        the median of the per-pair ratios.\n"
        "Defaults: --steps 30 --changes 3 --floats 1000 --fault-groups 3\n"
        "--trials 3 --reps 7.\n");
}

/* Splits a "1,2,4" list into at most BENCH_FT_LIST_MAX positive numbers;
 * -1 if malformed. */
static int parse_list(const char *text, long *out)
{
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", text);
    for (char *p = buf; *p != '\0';) {
        char *end;
        long v = strtol(p, &end, 10);
        if (n == BENCH_FT_LIST_MAX || end == p || v <= 0 ||
            (*end != ',' && *end != '\0')) {
            return -1;
        }
        out[n++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static bool positive(const char *text, long *out)
{
    char *end;
    *out = strtol(text, &end, 10);
    return end != text && *end == '\0' && *out > 0;
}

enum { W_QUORUM = 1, W_STEP = 2, W_FAULT = 4, W_HEAL = 8 };

static int parse_what(const char *text)
{
    static const char *const names[] = {"quorum", "step", "fault", "heal"};
    int what = 0;
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", text);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w != NULL;
         w = strtok_r(NULL, ",", &save)) {
        int bit = 0;
        for (int i = 0; i < 4; i++) {
            bit = strcmp(w, names[i]) == 0 ? 1 << i : bit;
        }
        if (bit == 0) {
            return -1;
        }
        what |= bit;
    }
    return what;
}

/* Parses argv into o and *what; 0, or 2 after a usage message. */
static int parse_args(int argc, char **argv, bench_ft_opts *o, int *what)
{
    static const struct option longopts[] = {
        {"what", required_argument, NULL, 'w'},
        {"quorum-groups", required_argument, NULL, 'q'},
        {"step-groups", required_argument, NULL, 'g'},
        {"steps", required_argument, NULL, 's'},
        {"changes", required_argument, NULL, 'c'},
        {"floats", required_argument, NULL, 'f'},
        {"fault-groups", required_argument, NULL, 'F'},
        {"trials", required_argument, NULL, 't'},
        {"heal-mib", required_argument, NULL, 'm'},
        {"sources", required_argument, NULL, 'o'},
        {"reps", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *lists[4] = {"1,4,16,64,256", "1,4,16,64", "256", "1,2"};
    long *outs[4] = {o->quorum_groups, o->step_groups, o->heal_mib,
                     o->heal_sources};
    int *counts[4] = {&o->n_quorum_groups, &o->n_step_groups, &o->n_heal_mib,
                      &o->n_heal_sources};
    long steps = 30, changes = 3, floats = 1000, fgroups = 3, trials = 3,
         reps = 7;
    bool ok = true;
    *what = W_QUORUM | W_STEP | W_FAULT | W_HEAL;
    int c;
    optind = 1;
    while (ok && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'w':
            *what = parse_what(optarg);
            ok = *what > 0;
            break;
        case 'q':
        case 'g':
        case 'm':
        case 'o':
            lists[c == 'q' ? 0 : c == 'g' ? 1 : c == 'm' ? 2 : 3] = optarg;
            break;
        case 's':
            ok = positive(optarg, &steps);
            break;
        case 'c':
            ok = positive(optarg, &changes);
            break;
        case 'f':
            ok = positive(optarg, &floats);
            break;
        case 'F':
            ok = positive(optarg, &fgroups) && fgroups >= 2;
            break;
        case 't':
            ok = positive(optarg, &trials);
            break;
        case 'r':
            ok = positive(optarg, &reps);
            break;
        case 'j':
            o->json = true;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            ok = false;
        }
    }
    for (int i = 0; ok && i < 4; i++) {
        *counts[i] = parse_list(lists[i], outs[i]);
        ok = *counts[i] > 0;
    }
    if (!ok || optind != argc) {
        usage(stderr);
        return 2;
    }
    o->steps = (int)steps;
    o->changes = (int)changes;
    o->floats = (size_t)floats;
    o->fault_groups = (int)fgroups;
    o->trials = (int)trials;
    o->reps = (int)reps;
    return 0;
}

int ftc__cmd_bench_ft(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0) {
        return bench_ft_worker(argc - 1, argv + 1);
    }
    /* The faults and leaves are deliberate: their warnings (and the
     * workers', who inherit this) would drown the tables. */
    if (getenv("FTC_LOG") == NULL) {
        setenv("FTC_LOG", "error", 0);
    }
    bench_ft_opts o;
    memset(&o, 0, sizeof(o));
    int what;
    int rc = parse_args(argc, argv, &o, &what);
    if (rc != 0) {
        return rc == 1 ? 0 : rc;
    }
    /* Hundreds of replica groups in this process hold thousands of
     * sockets. */
    bench_fd_room(0);
    int failed = 0;
    for (int i = 0; (what & W_QUORUM) && i < o.n_quorum_groups; i++) {
        failed += bench_ft_quorum(&o, (int)o.quorum_groups[i]);
    }
    for (int i = 0; (what & W_STEP) && i < o.n_step_groups; i++) {
        failed += bench_ft_step(&o, (int)o.step_groups[i]);
    }
    if (what & W_FAULT) {
        failed += bench_ft_fault(&o);
    }
    for (int i = 0; (what & W_HEAL) && i < o.n_heal_mib; i++) {
        for (int k = 0; k < o.n_heal_sources; k++) {
            failed += bench_ft_heal(&o, (size_t)o.heal_mib[i],
                                    (int)o.heal_sources[k]);
        }
    }
    return failed != 0;
}
