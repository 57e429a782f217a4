/* `ftc bench ft` internals shared by its files: the options, an embedded
 * job (lighthouse and one store per replica group), sample summaries and
 * their output (a table row or a JSON line), the processes the benches
 * spawn (bench_ft_proc.c), and the benchmarks: quorum rounds
 * (bench_ft_quorum.c), manager steps (bench_ft_step.c), recovery from
 * kill -9 and SIGSTOP (bench_ft_fault.c), healing throughput against a
 * loopback TCP baseline (bench_ft_heal.c), lighthouse failover
 * (bench_ft_failover.c) and network partitions over test hosts
 * (bench_ft_partition.c). */
#ifndef FTC_TOOLS_BENCH_FT_H
#define FTC_TOOLS_BENCH_FT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ftc/ftc.h"

#define BENCH_FT_LIST_MAX 16

typedef struct bench_ft_opts {
    int what; /* which benchmarks: bit i is --what's name i */
    long quorum_groups[BENCH_FT_LIST_MAX]; /* lighthouse rounds */
    int n_quorum_groups;
    long step_groups[BENCH_FT_LIST_MAX]; /* manager steps */
    int n_step_groups;
    int steps;   /* fast steps (rounds) measured per group count */
    int changes; /* leave-and-rejoin cycles per group count */
    size_t floats;
    int fault_groups; /* replica groups (processes) of the fault runs */
    int trials;       /* kills and stops each */
    long heal_mib[BENCH_FT_LIST_MAX];
    int n_heal_mib;
    long heal_sources[BENCH_FT_LIST_MAX];
    int n_heal_sources;
    int reps;                 /* heal and baseline pairs per cell */
    int lease_ms;             /* failover: the lighthouses' etcd lease */
    const char *backends;     /* the fault runs' cross-replica groups: a list */
    const char *hosts_script; /* partition: scripts/testhosts.sh */
    const char *trainer;      /* partition: the trainer each group runs */
    int hold_ms;              /* partition: how long a split lasts */
    bool json;
} bench_ft_opts;

/* A job: the lighthouse (default options but the bind address, those
 * given and no cap of connections per address: every group comes from
 * 127.0.0.1) and one store per replica group, all in this process. */
typedef struct bench_ft_job {
    ftc_lighthouse *lh;
    char lh_addr[64];
    int n_stores;
    ftc_store_server **stores;
    char (*store_addr)[64];
} bench_ft_job;

/* min_replicas and heartbeat_timeout_ms 0: the lighthouse's defaults. 0
 * or 1 (message on stderr). */
int bench_ft_job_start(bench_ft_job *j, int stores, uint64_t min_replicas,
                       int64_t heartbeat_timeout_ms);
void bench_ft_job_stop(bench_ft_job *j);

/* Summary of n samples (sorted in place). */
typedef struct bench_ft_summary {
    size_t n;
    double p50, p99, min, max;
} bench_ft_summary;

bench_ft_summary bench_ft_summarize(double *v, size_t n);

/* A growable list of samples. */
typedef struct bench_ft_samples {
    double *v;
    size_t n, cap;
} bench_ft_samples;

int bench_ft_add(bench_ft_samples *s, double x);
void bench_ft_samples_free(bench_ft_samples *s);

int64_t bench_ft_now_ns(void);

/* The script of the quorum and step benchmarks (bench_ft_cycle.c): one
 * thread per replica group; the last group waits until every group took
 * part in 3 rounds in a row, sets measuring, runs --steps rounds, then
 * --changes times leaves, waits until group 0 ran 3 rounds without it,
 * rejoins and runs 3 rounds; then sets stop. The others run rounds until
 * stop. A callback returning non-zero stops everyone. Initialise mu and
 * cv with PTHREAD_MUTEX_INITIALIZER and PTHREAD_COND_INITIALIZER. */
typedef struct bench_ft_cycle {
    const bench_ft_opts *o;
    int groups;
    int (*open)(void *group);
    int (*round)(void *group);
    bool (*everyone)(void *group); /* every group took part in its round */
    int (*leave)(void *group);
    int (*rejoin)(void *group);
    void (*close)(void *group);
    atomic_bool measuring, stop;
    pthread_mutex_t mu; /* what follows, and the samples (record) */
    pthread_cond_t cv;
    int64_t others_rounds; /* group 0's */
    int failed;
} bench_ft_cycle;

/* Runs the script over groups[0..c->groups), each `size` bytes; 0 or 1. */
int bench_ft_cycle_run(bench_ft_cycle *c, void *groups, size_t size);
/* Adds a sample under c->mu. */
void bench_ft_cycle_record(bench_ft_cycle *c, bench_ft_samples *s, double x);

int bench_ft_quorum(const bench_ft_opts *o, int groups);
int bench_ft_step(const bench_ft_opts *o, int groups);
int bench_ft_fault(const bench_ft_opts *o);
int bench_ft_heal(const bench_ft_opts *o, size_t mib, int sources);

int bench_ft_failover(const bench_ft_opts *o);
int bench_ft_partition(const bench_ft_opts *o);

/* A replica group process of the fault and failover runs: "ftc bench ft
 * --worker LIGHTHOUSE STORE GROUP FLOATS BACKEND" (LIGHTHOUSE may list
 * several addresses); one line per commit on stdout: "c <t_ns> <step>
 * <participants> <quorum_id>". */
int bench_ft_worker(int argc, char **argv);

/* A process as seen by the bench (bench_ft_proc.c): its pid and the pipe
 * its stdout goes to. */
typedef struct bench_ft_proc {
    pid_t pid;
    int fd; /* -1 once closed */
    char line[256];
    size_t len;
} bench_ft_proc;

/* Spawns path (looked up in PATH without a '/') with argv, its stdout (and
 * its stderr, with stderr_too) on p's pipe; 0, or -1 with a message on
 * stderr (p then has no process). */
int bench_ft_spawn_piped(bench_ft_proc *p, const char *path, char *const argv[],
                         bool stderr_too);
/* Spawns a worker the same way. */
int bench_ft_spawn_worker(bench_ft_proc *p, const char *lighthouse,
                          const char *store, int group, size_t floats,
                          const char *backend);
/* Kills (SIGKILL) and reaps it, closes its pipe. */
void bench_ft_reap(bench_ft_proc *p);
/* Waits for it to exit (its pipe at its end: it is exiting), closes the
 * pipe; its exit status, or -1 when a signal ended it. */
int bench_ft_exit_status(bench_ft_proc *p);
/* Reads what is there, calls on_line for each whole line; closes the pipe
 * at its end. */
void bench_ft_drain(bench_ft_proc *p, void (*on_line)(void *, const char *),
                    void *user);

/* Spawns argv (argv[0] looked up in PATH, or a path) with its stdout and
 * stderr appended to dir/log; 0 or -1 (message on stderr). */
int bench_ft_spawn_logged(const char *dir, char *const argv[], const char *log,
                          pid_t *pid);
/* Kills (SIGKILL, and SIGCONT should it be stopped) and reaps *pid when
 * it is > 0; sets it to 0. */
void bench_ft_end(pid_t *pid);

/* A scratch folder for the logs of a run: /tmp/ftc-WHAT-XXXXXX into dir;
 * 0, or -1 (message on stderr, dir ""). */
int bench_ft_logdir_make(char *dir, size_t cap, const char *what);
/* Keeps it, saying where (a failed run), or removes it with its files. */
void bench_ft_logdir_close(const char *dir, bool keep, const char *what);

#endif
