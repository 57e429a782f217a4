/* ftc bench ft: what fault tolerance costs and how fast it recovers:
 * quorum rounds and manager steps per number of replica groups (with the
 * same membership and right after a change), recovery from kill -9 and
 * SIGSTOP with real processes, and healing throughput next to a loopback
 * TCP baseline measured in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"
#include "bench/bench_stats.h"
#include "cli_args.h"
#include "cmd.h"

int64_t bench_ft_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------------ job */

int bench_ft_job_start(bench_ft_job *j, int stores, uint64_t min_replicas,
                       int64_t heartbeat_timeout_ms)
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
    if (heartbeat_timeout_ms > 0) {
        lo.heartbeat_timeout_ms = heartbeat_timeout_ms;
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

enum {
    W_QUORUM = 1,
    W_STEP = 2,
    W_FAULT = 4,
    W_HEAL = 8,
    W_FAILOVER = 16,
    W_PARTITION = 32
};

static const char *const what_names[] = {
    "quorum", "step", "fault", "heal", "failover", "partition", NULL};

#define LIST(name, member, counter, text)                                      \
    {                                                                          \
        name, FTC__CLI_INT_LIST,                                               \
            FTC__CLI_ARRAY(bench_ft_opts, member, counter),                    \
            .min = 1, .max = 1000000, .metavar = "N[,N...]", .help = text      \
    }
#define NUMBER(name, member, lo, text)                                         \
    {                                                                          \
        name, FTC__CLI_INT, FTC__CLI_FIELD(bench_ft_opts, member),             \
            .min = lo, .max = 1000000, .metavar = "N", .help = text            \
    }

static const ftc__cli_option options[] = {
    {"what", FTC__CLI_ENUM_SET, FTC__CLI_FIELD(bench_ft_opts, what),
     .names = what_names, .metavar = "LIST", .help = "which benchmarks"},
    LIST("quorum-groups", quorum_groups, n_quorum_groups,
         "replica groups of the quorum rounds"),
    LIST("step-groups", step_groups, n_step_groups,
         "replica groups of the manager steps"),
    NUMBER("steps", steps, 1, "fast rounds or steps measured per count"),
    NUMBER("changes", changes, 1, "leave-and-rejoin cycles per count"),
    NUMBER("floats", floats, 1, "floats in each step's allreduce"),
    NUMBER("fault-groups", fault_groups, 2,
           "replica groups (processes) of the fault runs"),
    NUMBER("trials", trials, 1,
           "kills and stops each; partition: passes over the faults"),
    LIST("heal-mib", heal_mib, n_heal_mib, "MiB a replica heals"),
    LIST("sources", heal_sources, n_heal_sources,
         "up-to-date replicas it heals from"),
    NUMBER("reps", reps, 1, "heal and baseline pairs per cell"),
    NUMBER("lease-ms", lease_ms, 100,
           "failover: the etcd lease of the ha lighthouses"),
    {"backend", FTC__CLI_STRING, FTC__CLI_FIELD(bench_ft_opts, backends),
     .metavar = "LIST",
     .help = "process-group backends of the fault runs (tcp, baby-xccl, "
             "...), comma-separated: each runs every trial in turn",
     .default_text = "tcp"},
    NUMBER("hold-ms", hold_ms, 1, "partition: how long each split lasts"),
    {"hosts-script", FTC__CLI_STRING,
     FTC__CLI_FIELD(bench_ft_opts, hosts_script), .metavar = "PATH",
     .help = "partition: the test-host harness (network namespaces)"},
    {"trainer", FTC__CLI_STRING, FTC__CLI_FIELD(bench_ft_opts, trainer),
     .metavar = "PATH", .help = "partition: the trainer each group runs"},
    {"json", FTC__CLI_FLAG, FTC__CLI_FIELD(bench_ft_opts, json),
     .help = "one JSON object per line instead of a table"},
};
#undef LIST
#undef NUMBER

static const ftc__cli_command command = {
    .name = "bench ft",
    .about =
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
        "        --trials times each, on each --backend in turn.\n"
        "heal    a replica pulls --heal-mib MiB from each number of\n"
        "        --sources up-to-date ones (in place, one process), and a\n"
        "        plain TCP stream between two threads moves as many bytes\n"
        "        just before (the baseline); --reps pairs, medians and\n"
        "        the median of the per-pair ratios.\n"
        "failover (not in the default set; needs etcd) two jobs of two\n"
        "        groups: one on three `ftc lighthouse --etcd` (lease\n"
        "        --lease-ms), one on a lone lighthouse restarted at once\n"
        "        when killed. --trials times each: kill -9, SIGSTOP and\n"
        "        SIGTERM of the ha leader, kill -9 of the lone one; ms to\n"
        "        the first step of the new lighthouse and to 10 more.\n"
        "partition (not in the default set; needs root) four test hosts\n"
        "        (network namespaces of --hosts-script): a lighthouse,\n"
        "        three `ftc run` of one group of --trainer each. Split,\n"
        "        --hold-ms, join, --trials passes over: a group cut from\n"
        "        the lighthouse, one cut from the other two, two cut from\n"
        "        each other; ms from the split to the cut group's last\n"
        "        commit and to the others' 10 more steps, from the join\n"
        "        to every group in a step again.\n",
    FTC__CLI_OPTIONS(options),
};

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
    bench_ft_opts o = {
        .what = W_QUORUM | W_STEP | W_FAULT | W_HEAL,
        .quorum_groups = {1, 4, 16, 64, 256},
        .n_quorum_groups = 5,
        .step_groups = {1, 4, 16, 64},
        .n_step_groups = 4,
        .steps = 30,
        .changes = 3,
        .floats = 1000,
        .fault_groups = 3,
        .trials = 3,
        .heal_mib = {256},
        .n_heal_mib = 1,
        .heal_sources = {1, 2},
        .n_heal_sources = 2,
        .reps = 7,
        .lease_ms = 1000,
        .backends = "tcp",
        .hosts_script = "scripts/testhosts.sh",
        .trainer = "build/examples/train_ddp",
        .hold_ms = 3000,
    };
    int rc = ftc__cli_parse(&command, &o, argc, argv, NULL);
    if (rc != FTC__CLI_PARSED) {
        return rc;
    }
    int failed = 0;
    for (int i = 0; (o.what & W_QUORUM) && i < o.n_quorum_groups; i++) {
        failed += bench_ft_quorum(&o, (int)o.quorum_groups[i]);
    }
    for (int i = 0; (o.what & W_STEP) && i < o.n_step_groups; i++) {
        failed += bench_ft_step(&o, (int)o.step_groups[i]);
    }
    if (o.what & W_FAULT) {
        failed += bench_ft_fault(&o);
    }
    if (o.what & W_FAILOVER) {
        failed += bench_ft_failover(&o);
    }
    if (o.what & W_PARTITION) {
        failed += bench_ft_partition(&o);
    }
    for (int i = 0; (o.what & W_HEAL) && i < o.n_heal_mib; i++) {
        for (int k = 0; k < o.n_heal_sources; k++) {
            failed += bench_ft_heal(&o, (size_t)o.heal_mib[i],
                                    (int)o.heal_sources[k]);
        }
    }
    return failed != 0;
}
