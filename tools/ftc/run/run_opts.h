/* Options of `ftc run`: the command line parsed and checked into one
 * struct (--help is printed from the same option table). */
#ifndef FTC_TOOLS_RUN_OPTS_H
#define FTC_TOOLS_RUN_OPTS_H

#include <stdint.h>
#include <stdio.h>

/* Bounds on what one launcher runs (and the fds it holds: two per rank). */
#define RUN_MAX_REPLICAS 256
#define RUN_MAX_RANKS 256
#define RUN_MAX_PROCS 1024
#define RUN_MAX_KILL_STEPS 1024
#define RUN_MAX_ENV 256

typedef enum run_kill_mode {
    RUN_KILL_SIGKILL = 0, /* kill -9 the whole replica group */
    RUN_KILL_SIGSTOP = 1, /* SIGSTOP it, SIGCONT after --stop-duration */
    RUN_KILL_MIXED = 2,   /* either, drawn from the seeded generator */
} run_kill_mode;

typedef struct run_opts {
    int replicas;           /* N replica groups; default 2 */
    int ranks;              /* M ranks per group; default 1 */
    const char *job;        /* job name; default "ftc" */
    const char *lighthouse; /* "host:port"; NULL: start one in-process */
    const char *token_file; /* --token-file; NULL: $FTC_TOKEN or made */
    const char *host;       /* what stores, lighthouse and ranks bind and
                               advertise; default "127.0.0.1" */
    int first_replica;      /* replica index of the first group; default 0 */
    int total_replicas;     /* NUM_REPLICA_GROUPS; default first + replicas */
    int min_replicas;       /* fewest healthy groups an injection leaves */
    int max_restarts;       /* unplanned restarts per group; default 10 */
    int64_t kill_every_ms;  /* 0: no periodic injection */
    int64_t kill_steps[RUN_MAX_KILL_STEPS]; /* ascending committed steps */
    int n_kill_steps;
    run_kill_mode kill_mode;
    int64_t stop_ms; /* how long a SIGSTOPped group stays stopped */
    uint64_t seed;
    int64_t duration_ms; /* 0: until the trainers finish */
    int64_t grace_ms;    /* SIGTERM to SIGKILL when stopping; default 5000 */
    int64_t progress_ms; /* plain progress line period (no TTY) */
    const char *summary_json;     /* NULL: none */
    const char *run_dir;          /* NULL: a temporary one, removed at exit */
    const char *trace_dir;        /* --trace: FTC_TRACE per rank; NULL: none */
    const char *env[RUN_MAX_ENV]; /* "K=V", borrowed from argv */
    int n_env;
    int quiet;
    int insecure; /* --insecure: serve a non-loopback --host without token */
    int show_events;
    int help;       /* --help or -h came before the command (printed) */
    char **command; /* borrowed from argv, NULL-terminated */
} run_opts;

/* Fills o from argv (argv[0] is "run"); the strings stay in argv. Returns
 * 0, or 2 (the usage exit code) after printing why to stderr. A missing
 * --seed is drawn at random here, so the summary can print it. With
 * o->help set the help was printed on stdout and the rest is unchecked. */
int run_opts_parse(run_opts *o, int argc, char **argv);

#endif
