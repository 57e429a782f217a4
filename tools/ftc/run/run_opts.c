/* `ftc run` options: parsing, range checks with a clear message for each
 * bad value, and the --help text. */
#include "run/run_opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "run/run_env.h"

void run_usage(FILE *out)
{
    fprintf(
        out,
        "usage: ftc run [options] -- COMMAND [ARGS...]\n"
        "\n"
        "Runs N replica groups of M ranks of COMMAND on this machine, each\n"
        "rank with the launcher contract in its environment (FTC_JOB,\n"
        "FTC_REPLICA_ID, FTC_STORE_ADDR, ...: docs/operations.md), restarts\n"
        "a replica group that dies, optionally injects failures, shows\n"
        "progress from the ranks' FTC_EVENT lines and prints a summary.\n"
        "\n"
        "  --replicas N          replica groups (default 2)\n"
        "  --ranks M             ranks per replica group (default 1)\n"
        "  --job NAME            job name (default ftc)\n"
        "  --lighthouse ADDR     use this lighthouse (host:port) instead of\n"
        "                        starting one in this process\n"
        "  --min-replicas K      an injection never leaves fewer than K\n"
        "                        healthy groups (default 1); also the\n"
        "                        embedded lighthouse's min_replicas\n"
        "  --max-restarts R      restarts of a group after it died on its\n"
        "                        own before the job fails (default 10;\n"
        "                        injected kills do not count)\n"
        "  --kill-every SECONDS  inject a failure every SECONDS\n"
        "  --kill-at-steps S1,S2,...\n"
        "                        inject one when the job's committed step\n"
        "                        reaches each of these\n"
        "  --kill-mode kill|stop|mixed\n"
        "                        kill -9 the victim group, or SIGSTOP it\n"
        "                        for --stop-duration then SIGCONT, or\n"
        "                        either at random (default kill)\n"
        "  --stop-duration SECONDS  (default 3)\n"
        "  --seed S              seed of the victim choice (default random,\n"
        "                        printed; the same seed replays the same\n"
        "                        victims in the same order)\n"
        "  --duration SECONDS    stop the job after this long\n"
        "  --grace SECONDS       SIGTERM to SIGKILL when stopping (default "
        "5)\n"
        "  --progress SECONDS    progress line period without a terminal\n"
        "                        (default 5)\n"
        "  --summary-json FILE   write the summary as JSON\n"
        "  --run-dir DIR         FTC_RUN_DIR (default: a temporary folder\n"
        "                        removed at exit)\n"
        "  --env K=V             add to every rank's environment (repeat)\n"
        "  --show-events         also print the FTC_EVENT lines\n"
        "  --quiet               no rank output and no progress; notes,\n"
        "                        errors and the summary only\n"
        "\n"
        "Exit codes: 0 every replica group finished (or --duration ended a\n"
        "healthy job), 1 the job failed, 2 usage, 127 COMMAND not found,\n"
        "130 SIGINT, 143 SIGTERM or SIGHUP.\n");
}

static int bad(const char *name, const char *value, const char *why)
{
    fprintf(stderr, "ftc run: bad value for %s: '%s' (%s)\n", name, value, why);
    return 2;
}

static int parse_int(const char *name, const char *text, int min, int max,
                     int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        char why[64];
        snprintf(why, sizeof(why), "an integer from %d to %d", min, max);
        return bad(name, text, why);
    }
    *out = (int)v;
    return 0;
}

/* Seconds, fractions allowed ("0.25"), into milliseconds >= 1. */
static int parse_seconds(const char *name, const char *text, int64_t *ms)
{
    char *end;
    errno = 0;
    double s = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(s) ||
        s < 0.001 || s > 1e7) {
        return bad(name, text, "seconds from 0.001 to 10000000");
    }
    *ms = (int64_t)llround(s * 1000.0);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* "5,10,20" into ascending steps. */
static int parse_steps(run_opts *o, const char *text)
{
    const char *p = text;
    o->n_kill_steps = 0;
    while (*p != '\0') {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno != 0 || end == p || v < 0 || (*end != ',' && *end != '\0')) {
            return bad("--kill-at-steps", text, "comma-separated steps >= 0");
        }
        if (o->n_kill_steps == RUN_MAX_KILL_STEPS) {
            return bad("--kill-at-steps", text, "more than 1024 steps");
        }
        o->kill_steps[o->n_kill_steps++] = v;
        p = *end == ',' ? end + 1 : end;
        if (*end == ',' && *p == '\0') {
            return bad("--kill-at-steps", text, "trailing comma");
        }
    }
    if (o->n_kill_steps == 0) {
        return bad("--kill-at-steps", text, "no steps");
    }
    qsort(o->kill_steps, (size_t)o->n_kill_steps, sizeof(o->kill_steps[0]),
          cmp_i64);
    return 0;
}

static int valid_job(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64) {
        return 0;
    }
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789._-") == n;
}

static int parse_env(run_opts *o, const char *kv)
{
    const char *eq = strchr(kv, '=');
    size_t n = eq != NULL ? (size_t)(eq - kv) : 0;
    if (n == 0 ||
        strspn(kv, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                   "TUVWXYZ0123456789_") != n ||
        (kv[0] >= '0' && kv[0] <= '9')) {
        return bad("--env", kv, "NAME=VALUE with NAME a shell variable name");
    }
    if (run_env_is_contract(kv, n)) {
        return bad("--env", kv, "the launcher sets that variable");
    }
    if (o->n_env == RUN_MAX_ENV) {
        return bad("--env", kv, "more than 256 --env");
    }
    o->env[o->n_env++] = kv;
    return 0;
}

static int parse_mode(run_opts *o, const char *v)
{
    static const char *const names[] = {"kill", "stop", "mixed"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(v, names[i]) == 0) {
            o->kill_mode = (run_kill_mode)i;
            return 0;
        }
    }
    return bad("--kill-mode", v, "kill, stop or mixed");
}

static int parse_u64(const char *name, const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' ||
        v > INT64_MAX) {
        return bad(name, text, "an integer from 0 to 2^63-1");
    }
    *out = v;
    return 0;
}

static int parse_lighthouse(run_opts *o, const char *v)
{
    char host[FTC_HOST_MAX];
    int port;
    if (ftc__addr_split(v, -1, host, sizeof(host), &port) != 0 || port == 0) {
        return bad("--lighthouse", v, "host:port");
    }
    o->lighthouse = v;
    return 0;
}

/* One option that takes a value. Returns 0, 2 (bad value) or -1 (not an
 * option of this command). */
static int set_option(run_opts *o, const char *name, const char *v)
{
    if (strcmp(name, "--replicas") == 0) {
        return parse_int(name, v, 1, RUN_MAX_REPLICAS, &o->replicas);
    } else if (strcmp(name, "--ranks") == 0) {
        return parse_int(name, v, 1, RUN_MAX_RANKS, &o->ranks);
    } else if (strcmp(name, "--job") == 0) {
        o->job = v;
        return valid_job(v) ? 0 : bad(name, v, "[A-Za-z0-9._-]{1,64}");
    } else if (strcmp(name, "--lighthouse") == 0) {
        return parse_lighthouse(o, v);
    } else if (strcmp(name, "--min-replicas") == 0) {
        return parse_int(name, v, 1, RUN_MAX_REPLICAS, &o->min_replicas);
    } else if (strcmp(name, "--max-restarts") == 0) {
        return parse_int(name, v, 0, 1000000, &o->max_restarts);
    } else if (strcmp(name, "--kill-every") == 0) {
        return parse_seconds(name, v, &o->kill_every_ms);
    } else if (strcmp(name, "--kill-at-steps") == 0) {
        return parse_steps(o, v);
    } else if (strcmp(name, "--kill-mode") == 0) {
        return parse_mode(o, v);
    } else if (strcmp(name, "--stop-duration") == 0) {
        return parse_seconds(name, v, &o->stop_ms);
    } else if (strcmp(name, "--seed") == 0) {
        o->seed_given = 1;
        return parse_u64(name, v, &o->seed);
    } else if (strcmp(name, "--duration") == 0) {
        return parse_seconds(name, v, &o->duration_ms);
    } else if (strcmp(name, "--grace") == 0) {
        return parse_seconds(name, v, &o->grace_ms);
    } else if (strcmp(name, "--progress") == 0) {
        return parse_seconds(name, v, &o->progress_ms);
    } else if (strcmp(name, "--summary-json") == 0) {
        o->summary_json = v;
        return 0;
    } else if (strcmp(name, "--run-dir") == 0) {
        o->run_dir = v;
        return 0;
    } else if (strcmp(name, "--env") == 0) {
        return parse_env(o, v);
    }
    return -1;
}

/* Checks that hold between options. */
static int check(run_opts *o)
{
    if (o->command == NULL || o->command[0] == NULL) {
        fprintf(stderr, "ftc run: no COMMAND (put it after --)\n");
        return 2;
    }
    if (o->replicas * o->ranks > RUN_MAX_PROCS) {
        fprintf(stderr, "ftc run: %d x %d ranks is more than %d\n", o->replicas,
                o->ranks, RUN_MAX_PROCS);
        return 2;
    }
    if (o->min_replicas > o->replicas) {
        fprintf(stderr, "ftc run: --min-replicas %d > --replicas %d\n",
                o->min_replicas, o->replicas);
        return 2;
    }
    int injecting = o->kill_every_ms > 0 || o->n_kill_steps > 0;
    if (o->kill_every_ms > 0 && o->n_kill_steps > 0) {
        fprintf(stderr, "ftc run: give --kill-every or --kill-at-steps, "
                        "not both\n");
        return 2;
    }
    if (injecting && o->replicas <= o->min_replicas) {
        fprintf(stderr,
                "ftc run: fault injection needs --replicas (%d) > "
                "--min-replicas (%d): it never kills every group\n",
                o->replicas, o->min_replicas);
        return 2;
    }
    return 0;
}

int run_opts_parse(run_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->replicas = 2;
    o->ranks = 1;
    o->job = "ftc";
    o->min_replicas = 1;
    o->max_restarts = 10;
    o->stop_ms = 3000;
    o->grace_ms = 5000;
    o->progress_ms = 5000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0 || strncmp(a, "-", 1) != 0) {
            o->command = argv + i + (a[0] == '-');
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            o->help = 1;
            return 0;
        }
        if (strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
            continue;
        }
        if (strcmp(a, "--show-events") == 0) {
            o->show_events = 1;
            continue;
        }
        /* --name=value or --name value */
        char name[32];
        const char *v;
        const char *eq = strchr(a, '=');
        if (eq != NULL && (size_t)(eq - a) < sizeof(name)) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            v = eq + 1;
        } else if (i + 1 < argc) {
            snprintf(name, sizeof(name), "%s", a);
            v = argv[++i];
        } else {
            fprintf(stderr, "ftc run: unknown or incomplete option '%s'\n", a);
            return 2;
        }
        int rc = set_option(o, name, v);
        if (rc < 0) {
            fprintf(stderr, "ftc run: unknown option '%s'\n", name);
            return 2;
        }
        if (rc != 0) {
            return rc;
        }
    }
    if (!o->seed_given) {
        o->seed = ftc__rand_u64() >> 33; /* short enough to retype */
    }
    return check(o);
}
