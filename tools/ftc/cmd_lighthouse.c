/* ftc lighthouse: runs a lighthouse until SIGINT or SIGTERM, printing its
 * address and dashboard URL (docs/operations.md, "Running a lighthouse"). */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "ftc/ftc.h"

#define MAX_JOBS_ARGS 256
#define TOKEN_MAX 4096

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ftc lighthouse [options]\n"
            "\n"
            "Decides which replica groups train each step together and "
            "pushes\nmembership changes to their managers. Serves the HTTP "
            "API, a dashboard\n(/) and Prometheus metrics (/metrics). Stops "
            "cleanly on SIGINT/SIGTERM.\n"
            "\n"
            "options (defaults in brackets):\n"
            "  --bind HOST:PORT               listen address [[::]:29510]\n"
            "  --min-replicas N               per job [1]\n"
            "  --join-timeout-ms MS           wait for stragglers [10000]\n"
            "  --heartbeat-timeout-ms MS      a replica is dead after "
            "[500]\n"
            "  --strict-shrink-only           shrink_only counts only kept "
            "members\n"
            "  --max-jobs N                   [64], at most 4096\n"
            "  --max-replicas N               per job [4096]\n"
            "  --max-data-bytes N             member data [65536]\n"
            "  --max-body-bytes N             request body [131072]\n"
            "  --max-connections N            [8192]\n"
            "  --max-connections-per-ip N     [256]\n"
            "  --idle-connection-timeout-ms MS  [30000]\n"
            "  --max-join-wait-ms MS          cap on a join's wait "
            "[3600000]\n"
            "  --event-ring N                 events kept per job [256]\n"
            "  --job-idle-ms MS               delete unused jobs after "
            "[600000]\n"
            "  --job NAME[:key=value,...]     declare a job (repeatable), "
            "e.g.\n"
            "                                 train:min_replicas=2,"
            "join_timeout_ms=60000\n"
            "  --token-file PATH              shared secret (else "
            "$FTC_TOKEN):\n"
            "                                 required for writes, enables "
            "kill\n"
            "  --auth-reads                   status, metrics and page need "
            "it too\n"
            "  --drop-is-death on|off         a dropped long-poll is a death "
            "[on]\n");
}

/* A whole-string integer in [min, max]. */
static int parse_int(const char *flag, const char *v, long long min,
                     long long max, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (v[0] == '\0' || *end != '\0' || errno != 0 || x < min || x > max) {
        fprintf(stderr,
                "ftc lighthouse: %s: '%s' is not an integer in "
                "[%lld, %lld]\n",
                flag, v, min, max);
        return -1;
    }
    *out = x;
    return 0;
}

/* Reads a token, without its trailing newline, into out. */
static int read_token(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "ftc lighthouse: --token-file %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    size_t n = fread(out, 1, cap - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' ||
                     out[n - 1] == ' ' || out[n - 1] == '\t')) {
        out[--n] = '\0';
    }
    if (n == 0 || more) {
        fprintf(stderr, "ftc lighthouse: --token-file %s: %s\n", path,
                n == 0 ? "empty" : "longer than 4 KiB");
        return -1;
    }
    return 0;
}

typedef struct lh_args {
    ftc_lighthouse_opts o;
    const char *jobs[MAX_JOBS_ARGS];
    int n_jobs;
    const char *token_file;
} lh_args;

/* The numeric flags: each sets one field of ftc_lighthouse_opts. */
#define FIELD(f)                                                               \
    offsetof(ftc_lighthouse_opts, f), sizeof(((ftc_lighthouse_opts *)0)->f)
static const struct {
    const char *flag;
    long long min, max;
    size_t offset, size;
} numeric_flags[] = {
    {"--min-replicas", 1, 65536, FIELD(min_replicas)},
    {"--join-timeout-ms", 1, INT64_MAX, FIELD(join_timeout_ms)},
    {"--heartbeat-timeout-ms", 1, INT64_MAX, FIELD(heartbeat_timeout_ms)},
    {"--max-jobs", 1, 4096, FIELD(max_jobs)},
    {"--max-replicas", 1, 65536, FIELD(max_replicas)},
    {"--max-data-bytes", 1, 1 << 20, FIELD(max_data_bytes)},
    {"--max-body-bytes", 1, 2 << 20, FIELD(max_body_bytes)},
    {"--max-connections", 1, 1 << 24, FIELD(max_connections)},
    {"--max-connections-per-ip", 1, 1 << 24, FIELD(max_connections_per_ip)},
    {"--idle-connection-timeout-ms", 1, INT64_MAX,
     FIELD(idle_connection_timeout_ms)},
    {"--max-join-wait-ms", 1, INT64_MAX, FIELD(max_join_wait_ms)},
    {"--event-ring", 1, 65536, FIELD(event_ring)},
    {"--job-idle-ms", 1, INT64_MAX, FIELD(job_idle_ms)},
};
#undef FIELD

/* 1 if flag is numeric and v was stored, 0 if flag is not numeric, -1 if v
 * is bad (said why). Fields are 64-bit or uint32_t, values non-negative. */
static int numeric(lh_args *a, const char *flag, const char *v)
{
    for (size_t i = 0; i < sizeof(numeric_flags) / sizeof(numeric_flags[0]);
         i++) {
        if (strcmp(flag, numeric_flags[i].flag) != 0) {
            continue;
        }
        long long x;
        if (parse_int(flag, v, numeric_flags[i].min, numeric_flags[i].max,
                      &x) != 0) {
            return -1;
        }
        char *field = (char *)&a->o + numeric_flags[i].offset;
        if (numeric_flags[i].size == sizeof(uint32_t)) {
            uint32_t u = (uint32_t)x;
            memcpy(field, &u, sizeof(u));
        } else {
            int64_t w = x;
            memcpy(field, &w, sizeof(w));
        }
        return 1;
    }
    return 0;
}

/* Parses argv into a; 0, -1 (bad usage, said why) or 1 (--help). */
static int parse_args(int argc, char **argv, lh_args *a)
{
    for (int i = 1; i < argc; i++) {
        char flag[64];
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        size_t n = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
        snprintf(flag, sizeof(flag), "%.*s", (int)n, arg);
        if (strcmp(flag, "-h") == 0 || strcmp(flag, "--help") == 0) {
            return 1;
        }
        if (strcmp(flag, "--strict-shrink-only") == 0) {
            a->o.strict_shrink_only = true;
            continue;
        }
        if (strcmp(flag, "--auth-reads") == 0) {
            a->o.auth_reads = true;
            continue;
        }
        const char *v = eq != NULL ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (v == NULL) {
            fprintf(stderr, "ftc lighthouse: %s needs a value\n", flag);
            return -1;
        }
        int r = numeric(a, flag, v);
        if (r < 0) {
            return -1;
        }
        if (r > 0) {
            continue;
        }
        if (strcmp(flag, "--bind") == 0) {
            a->o.bind = v;
        } else if (strcmp(flag, "--token-file") == 0) {
            a->token_file = v;
        } else if (strcmp(flag, "--job") == 0 && a->n_jobs < MAX_JOBS_ARGS) {
            a->jobs[a->n_jobs++] = v;
        } else if (strcmp(flag, "--drop-is-death") == 0 &&
                   (strcmp(v, "on") == 0 || strcmp(v, "off") == 0)) {
            a->o.keep_dropped = strcmp(v, "off") == 0;
        } else {
            fprintf(stderr, "ftc lighthouse: unknown or bad option %s %s\n",
                    flag, v);
            return -1;
        }
    }
    return 0;
}

/* "http://HOST:PORT/" for people: the machine's name when bound to every
 * interface. */
static void dashboard_url(const char *addr, int port, char *out, size_t cap)
{
    char host[256] = "localhost";
    if (strncmp(addr, "[::]", 4) != 0 && strncmp(addr, "0.0.0.0", 7) != 0) {
        snprintf(host, sizeof(host), "%.*s", (int)(strrchr(addr, ':') - addr),
                 addr);
    } else if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "localhost");
    }
    snprintf(out, cap, "http://%s:%d/", host, port);
}

int ftc__cmd_lighthouse(int argc, char **argv)
{
    lh_args a;
    memset(&a, 0, sizeof(a));
    ftc_lighthouse_opts_init(&a.o);
    int r = parse_args(argc, argv, &a);
    if (r != 0) {
        usage(r > 0 ? stdout : stderr);
        return r > 0 ? 0 : 2;
    }
    static char token[TOKEN_MAX + 1];
    if (a.token_file != NULL) {
        if (read_token(a.token_file, token, sizeof(token)) != 0) {
            return 2;
        }
        a.o.token = token;
    } else if (getenv("FTC_TOKEN") != NULL && getenv("FTC_TOKEN")[0] != '\0') {
        a.o.token = getenv("FTC_TOKEN");
    }
    /* Blocked before any thread starts, so every thread inherits the mask
     * and sigwait below receives them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    ftc_lighthouse *lh;
    int rc = ftc_lighthouse_create(&a.o, &lh);
    if (rc != 0) {
        fprintf(stderr, "ftc lighthouse: %s: %s\n", ftc_strerror(rc),
                ftc_last_error());
        return 1;
    }
    for (int i = 0; i < a.n_jobs; i++) {
        rc = ftc_lighthouse_configure_job(lh, a.jobs[i]);
        if (rc != 0) {
            fprintf(stderr, "ftc lighthouse: --job %s: %s\n", a.jobs[i],
                    ftc_last_error());
            ftc_lighthouse_destroy(lh);
            return 2;
        }
    }
    char addr[300], url[300];
    ftc_lighthouse_address(lh, addr, sizeof(addr));
    dashboard_url(addr, ftc_lighthouse_port(lh), url, sizeof(url));
    printf("ftc lighthouse: serving on %s%s\n", addr,
           a.o.token != NULL ? " (token required for writes)" : "");
    printf("dashboard: %s\n", url);
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    printf("ftc lighthouse: %s, stopping\n",
           sig == SIGINT ? "SIGINT" : "SIGTERM");
    fflush(stdout);
    ftc_lighthouse_destroy(lh);
    return 0;
}
