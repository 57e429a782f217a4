/* `ftc run` options: the table the parser (cli_args.c) reads them by,
 * the checks of values and between options, and the --help text. */
#include "run/run_opts.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "cli_args.h"
#include "ftc/ftc.h"
#include "run/run_env.h"

static const char *check_job(const char *s)
{
    size_t n = strlen(s);
    bool ok = n > 0 && n <= 64 &&
              strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789._-") == n;
    return ok ? NULL : "[A-Za-z0-9._-]{1,64}";
}

static const char *check_env(const char *kv)
{
    const char *eq = strchr(kv, '=');
    size_t n = eq != NULL ? (size_t)(eq - kv) : 0;
    if (n == 0 ||
        strspn(kv, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                   "TUVWXYZ0123456789_") != n ||
        (kv[0] >= '0' && kv[0] <= '9')) {
        return "NAME=VALUE with NAME a shell variable name";
    }
    return run_env_is_contract(kv, n) ? "the launcher sets that variable"
                                      : NULL;
}

/* "[http[s]://]host:port" with the port spelled out (the trainers and the
 * other hosts must agree on it), or several, comma-separated (a highly
 * available set), as a lighthouse client takes them. */
static const char *check_lighthouse(const char *v)
{
    static const char *const usage = "[http[s]://]host:port[,...]";
    ftc_lighthouse_client *c = NULL;
    int rc = ftc_lighthouse_client_create(v, NULL, &c);
    ftc_lighthouse_client_destroy(c);
    for (const char *p = v; rc == 0 && *p != '\0';) {
        size_t n = strcspn(p, ",");
        char one[FTC_HOST_MAX + 16], host[FTC_HOST_MAX];
        int port = 0;
        const char *at = strstr(p, "://");
        at = at != NULL && at < p + n ? at + 3 : p;
        if ((size_t)(p + n - at) >= sizeof(one)) {
            return usage;
        }
        memcpy(one, at, (size_t)(p + n - at));
        one[p + n - at] = '\0';
        if (ftc__addr_split(one, -1, host, sizeof(host), &port) != 0 ||
            port == 0) {
            return usage;
        }
        p += n + (p[n] == ',');
    }
    return rc != 0 ? usage : NULL;
}

static const char *check_host(const char *v)
{
    return v[0] == '\0' || strlen(v) >= FTC_HOST_MAX ? "a host address" : NULL;
}

static const char *const kill_modes[] = {"kill", "stop", "mixed", NULL};

/* Seconds from 0.001 to 10000000, in ms. */
#define SECONDS(name, member, text)                                            \
    {                                                                          \
        name, FTC__CLI_SECONDS, FTC__CLI_FIELD(run_opts, member),              \
            .min = 1, .max = 10000000000, .metavar = "SECONDS", .help = text   \
    }

static const ftc__cli_option options[] = {
    {"replicas", FTC__CLI_INT, FTC__CLI_FIELD(run_opts, replicas), .min = 1,
     .max = RUN_MAX_REPLICAS, .metavar = "N", .help = "replica groups"},
    {"ranks", FTC__CLI_INT, FTC__CLI_FIELD(run_opts, ranks), .min = 1,
     .max = RUN_MAX_RANKS, .metavar = "M", .help = "ranks per replica group"},
    {"job", FTC__CLI_STRING, FTC__CLI_FIELD(run_opts, job), .check = check_job,
     .metavar = "NAME", .help = "job name"},
    {"lighthouse", FTC__CLI_STRING, FTC__CLI_FIELD(run_opts, lighthouse),
     .check = check_lighthouse, .metavar = "ADDR",
     .help = "use this lighthouse ([https://]host:port; a highly available "
             "set's: each, comma-separated) instead of starting one in this "
             "process"},
    {"token-file", FTC__CLI_STRING, FTC__CLI_FIELD(run_opts, token_file),
     .metavar = "PATH",
     .help = "the job's shared secret (else $FTC_TOKEN); without either, a "
             "job with its own lighthouse makes a random one",
     .default_text = "$FTC_TOKEN, or a random one"},
    {"insecure", FTC__CLI_FLAG, FTC__CLI_FIELD(run_opts, insecure),
     .help = "with --lighthouse and no token: serve the groups' stores on a "
             "non-loopback --host anyway (the job is open to its network)"},
    {"host", FTC__CLI_STRING, FTC__CLI_FIELD(run_opts, host),
     .check = check_host, .metavar = "ADDR",
     .help = "the address of this machine that the groups' stores, the "
             "embedded lighthouse and the ranks (process groups, heal "
             "servers) bind and advertise: another host's address for a "
             "job over several hosts",
     .default_text = "127.0.0.1"},
    {"first-replica", FTC__CLI_INT, FTC__CLI_FIELD(run_opts, first_replica),
     .min = 0, .max = 1000000, .metavar = "K",
     .help = "replica index of the first group (replica_K, REPLICA_GROUP_ID): "
             "one ftc run per host takes its own range"},
    {"total-replicas", FTC__CLI_INT, FTC__CLI_FIELD(run_opts, total_replicas),
     .min = 1, .max = 1000000, .metavar = "T",
     .help = "replica groups of the whole job (NUM_REPLICA_GROUPS) when "
             "several ftc runs share a lighthouse",
     .default_text = "--first-replica + --replicas"},
    {"min-replicas", FTC__CLI_INT, FTC__CLI_FIELD(run_opts, min_replicas),
     .min = 1, .max = RUN_MAX_REPLICAS, .metavar = "K",
     .help = "an injection never leaves fewer than K healthy groups; also "
             "the embedded lighthouse's min_replicas"},
    {"max-restarts", FTC__CLI_INT, FTC__CLI_FIELD(run_opts, max_restarts),
     .min = 0, .max = 1000000, .metavar = "R",
     .help = "restarts of a group after it died on its own before the job "
             "fails (injected kills do not count)"},
    SECONDS("kill-every", kill_every_ms, "inject a failure every SECONDS"),
    {"kill-at-steps", FTC__CLI_INT_LIST,
     FTC__CLI_ARRAY(run_opts, kill_steps, n_kill_steps), .min = 0,
     .max = INT64_MAX, .metavar = "S1,S2,...",
     .help = "inject one when the job's committed step reaches each of "
             "these"},
    {"kill-mode", FTC__CLI_ENUM, FTC__CLI_FIELD(run_opts, kill_mode),
     .names = kill_modes, .metavar = "kill|stop|mixed",
     .help = "kill -9 the victim group, or SIGSTOP it for --stop-duration "
             "then SIGCONT, or either at random"},
    SECONDS("stop-duration", stop_ms, "how long a stopped group stays so"),
    {"seed", FTC__CLI_INT, FTC__CLI_FIELD(run_opts, seed), .min = 0,
     .max = INT64_MAX, .metavar = "S",
     .help = "seed of the victim choice (the same seed replays the same "
             "victims in the same order)",
     .default_text = "random, printed"},
    SECONDS("duration", duration_ms, "stop the job after this long"),
    SECONDS("grace", grace_ms, "SIGTERM to SIGKILL when stopping"),
    SECONDS("progress", progress_ms, "progress line period without a terminal"),
    {"summary-json", FTC__CLI_STRING, FTC__CLI_FIELD(run_opts, summary_json),
     .metavar = "FILE", .help = "write the summary as JSON"},
    {"run-dir", FTC__CLI_STRING, FTC__CLI_FIELD(run_opts, run_dir),
     .metavar = "DIR", .help = "FTC_RUN_DIR",
     .default_text = "a temporary folder removed at exit"},
    {"trace", FTC__CLI_STRING, FTC__CLI_FIELD(run_opts, trace_dir),
     .metavar = "DIR",
     .help = "record a trace of every rank into DIR (created if missing): "
             "FTC_TRACE=DIR/trace-replica_<i>-rank<r>-inc<n>.json, one file "
             "per rank and incarnation, written when the rank exits; open "
             "it in ui.perfetto.dev or chrome://tracing"},
    {"env", FTC__CLI_REPEAT, FTC__CLI_ARRAY(run_opts, env, n_env),
     .check = check_env, .metavar = "K=V",
     .help = "add to every rank's environment (repeat)"},
    {"show-events", FTC__CLI_FLAG, FTC__CLI_FIELD(run_opts, show_events),
     .help = "also print the FTC_EVENT lines (with --quiet too)"},
    {"quiet", FTC__CLI_FLAG, FTC__CLI_FIELD(run_opts, quiet),
     .help = "no rank output and no progress; notes, errors and the summary "
             "only"},
};
#undef SECONDS

static const ftc__cli_command command = {
    .name = "run",
    .usage = "[options] -- COMMAND [ARGS...]",
    .about =
        "Runs N replica groups of M ranks of COMMAND on this machine, each\n"
        "rank with the launcher contract in its environment (FTC_JOB,\n"
        "FTC_REPLICA_ID, FTC_STORE_ADDR, ...: docs/operations.md), restarts\n"
        "a replica group that dies, optionally injects failures, shows\n"
        "progress from the ranks' FTC_EVENT lines and prints a summary.\n",
    .notes =
        "Exit codes: 0 every replica group finished (or --duration ended a\n"
        "healthy job), 1 the job failed, 2 usage, 127 COMMAND not found,\n"
        "130 SIGINT, 143 SIGTERM or SIGHUP.\n",
    FTC__CLI_OPTIONS(options),
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Checks that hold between options. */
static int check(run_opts *o)
{
    if (o->command == NULL) {
        return ftc__cli_usage_error(&command, "no COMMAND (put it after --)");
    }
    if (o->replicas * o->ranks > RUN_MAX_PROCS) {
        return ftc__cli_usage_error(&command, "%d x %d ranks is more than %d",
                                    o->replicas, o->ranks, RUN_MAX_PROCS);
    }
    if (o->min_replicas > o->replicas) {
        return ftc__cli_usage_error(&command,
                                    "--min-replicas %d > --replicas %d",
                                    o->min_replicas, o->replicas);
    }
    if (o->total_replicas == 0) {
        o->total_replicas = o->first_replica + o->replicas;
    }
    if (o->first_replica + o->replicas > o->total_replicas) {
        return ftc__cli_usage_error(
            &command,
            "--first-replica %d + --replicas %d > --total-replicas %d",
            o->first_replica, o->replicas, o->total_replicas);
    }
    for (int i = 0; o->trace_dir != NULL && i < o->n_env; i++) {
        if (strncmp(o->env[i], "FTC_TRACE=", 10) == 0) {
            return ftc__cli_usage_error(
                &command, "--trace sets FTC_TRACE: no --env FTC_TRACE=");
        }
    }
    int injecting = o->kill_every_ms > 0 || o->n_kill_steps > 0;
    if (o->kill_every_ms > 0 && o->n_kill_steps > 0) {
        return ftc__cli_usage_error(
            &command, "give --kill-every or --kill-at-steps, not both");
    }
    if (injecting && o->replicas <= o->min_replicas) {
        return ftc__cli_usage_error(
            &command,
            "fault injection needs --replicas (%d) > --min-replicas (%d): it "
            "never kills every group",
            o->replicas, o->min_replicas);
    }
    return 0;
}

int run_opts_parse(run_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->replicas = 2;
    o->ranks = 1;
    o->job = "ftc";
    o->host = "127.0.0.1";
    o->min_replicas = 1;
    o->max_restarts = 10;
    o->stop_ms = 3000;
    o->seed = UINT64_MAX; /* out of --seed's range: not given */
    o->grace_ms = 5000;
    o->progress_ms = 5000;
    int rest = argc;
    int rc = ftc__cli_parse(&command, o, argc, argv, &rest);
    if (rc != FTC__CLI_PARSED) {
        o->help = rc == FTC__CLI_HELP;
        return rc;
    }
    o->command = rest < argc ? argv + rest : NULL;
    qsort(o->kill_steps, (size_t)o->n_kill_steps, sizeof(o->kill_steps[0]),
          cmp_i64);
    if (o->seed == UINT64_MAX) {
        o->seed = ftc__rand_u64() >> 33; /* short enough to retype */
    }
    return check(o);
}
