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

#include "base/base_int.h"
#include "cli_args.h"
#include "cli_token.h"
#include "cmd.h"
#include "ftc/ftc.h"

#define MAX_JOBS_ARGS 256

typedef struct lh_args {
    ftc_lighthouse_opts o;
    ftc_lighthouse_ha_opts ha;
    const char *jobs[MAX_JOBS_ARGS];
    int n_jobs;
    const char *token_file;
    int insecure;
} lh_args;

static const char *const on_off[] = {"on", "off", NULL};

#define NUMBER(name, member, lo, hi, meta, text)                               \
    {                                                                          \
        name, FTC__CLI_INT, FTC__CLI_FIELD(lh_args, o.member),                 \
            .min = lo, .max = hi, .metavar = meta, .help = text                \
    }

static const ftc__cli_option options[] = {
    {"bind", FTC__CLI_STRING, FTC__CLI_FIELD(lh_args, o.bind),
     .metavar = "HOST:PORT", .help = "listen address",
     .default_text = "[::]:29510"},
    NUMBER("min-replicas", min_replicas, 1, 65536, "N", "per job"),
    NUMBER("join-timeout-ms", join_timeout_ms, 1, INT64_MAX, "MS",
           "wait for stragglers"),
    NUMBER("heartbeat-timeout-ms", heartbeat_timeout_ms, 1, INT64_MAX, "MS",
           "a replica is dead after"),
    NUMBER("rollback-after-ms", rollback_after_ms, 0, INT64_MAX, "MS",
           "let laggards go on below the job's committed step after none "
           "that has it was heard for (0: at once)"),
    NUMBER("exclude-ms", exclude_ms, 0, INT64_MAX, "MS",
           "leave a group the others cannot reach out of quorums for "
           "(longer after a failed return; 0: ignore reports)"),
    {"strict-shrink-only", FTC__CLI_FLAG,
     FTC__CLI_FIELD(lh_args, o.strict_shrink_only),
     .help = "shrink_only counts only kept members"},
    NUMBER("max-jobs", max_jobs, 1, 4096, "N", "jobs, at most 4096"),
    NUMBER("max-replicas", max_replicas, 1, 65536, "N", "per job"),
    NUMBER("max-data-bytes", max_data_bytes, 1, 1 << 20, "N", "member data"),
    NUMBER("max-body-bytes", max_body_bytes, 1, 2 << 20, "N", "request body"),
    NUMBER("max-connections", max_connections, 1, 1 << 24, "N",
           "open connections"),
    NUMBER("max-connections-per-ip", max_connections_per_ip, 1, 1 << 24, "N",
           "open connections from one address"),
    NUMBER("idle-connection-timeout-ms", idle_connection_timeout_ms, 1,
           INT64_MAX, "MS", "close an idle connection after"),
    NUMBER("max-join-wait-ms", max_join_wait_ms, 1, INT64_MAX, "MS",
           "cap on a join's wait"),
    NUMBER("event-ring", event_ring, 1, 65536, "N", "events kept per job"),
    NUMBER("job-idle-ms", job_idle_ms, 1, INT64_MAX, "MS",
           "delete unused jobs after"),
    {"job", FTC__CLI_REPEAT, FTC__CLI_ARRAY(lh_args, jobs, n_jobs),
     .metavar = "NAME[:key=value,...]",
     .help = "declare a job (repeatable), e.g. "
             "train:min_replicas=2,join_timeout_ms=60000"},
    {"token-file", FTC__CLI_STRING, FTC__CLI_FIELD(lh_args, token_file),
     .metavar = "PATH",
     .help = "shared secret (else $FTC_TOKEN): required for every request, "
             "enables kill"},
    {"tls-cert", FTC__CLI_STRING, FTC__CLI_FIELD(lh_args, o.tls_cert),
     .env = "FTC_TLS_CERT", .metavar = "PEM",
     .help = "serve https with this certificate (chain)"},
    {"tls-key", FTC__CLI_STRING, FTC__CLI_FIELD(lh_args, o.tls_key),
     .env = "FTC_TLS_KEY", .metavar = "PEM", .help = "its private key"},
    {"insecure", FTC__CLI_FLAG, FTC__CLI_FIELD(lh_args, insecure),
     .help = "serve a non-loopback address without a token (anyone who "
             "reaches it can join a job's quorum as a member)"},
    {"public-reads", FTC__CLI_FLAG, FTC__CLI_FIELD(lh_args, o.public_reads),
     .help = "with a token: status, metrics and the page stay open to "
             "anyone (they hand out store and heal addresses)"},
    {"drop-is-death", FTC__CLI_ENUM, FTC__CLI_FIELD(lh_args, o.keep_dropped),
     .names = on_off, .metavar = "on|off",
     .help = "a dropped long-poll is a death"},
    {"etcd", FTC__CLI_STRING, FTC__CLI_FIELD(lh_args, ha.etcd),
     .env = "FTC_ETCD", .metavar = "URL[,URL...]",
     .help = "highly available: serve only while elected leader in this "
             "etcd; clients list every lighthouse's address"},
    {"etcd-prefix", FTC__CLI_STRING, FTC__CLI_FIELD(lh_args, ha.prefix),
     .metavar = "PREFIX",
     .help = "etcd keys of this set of lighthouses (ftc/lighthouse)"},
    {"lease-ms", FTC__CLI_INT, FTC__CLI_FIELD(lh_args, ha.lease_ms),
     .min = 1000, .max = 3600000, .metavar = "MS",
     .help = "the leader's lease in etcd, whole seconds (2000)"},
    {"name", FTC__CLI_STRING, FTC__CLI_FIELD(lh_args, ha.name),
     .metavar = "ADDR", .help = "what etcd shows while it leads (--bind)"},
};
#undef NUMBER

static const ftc__cli_command command = {
    .name = "lighthouse",
    .about = "Decides which replica groups train each step together and "
             "pushes\nmembership changes to their managers. Serves the "
             "HTTP API, a dashboard\n(/) and Prometheus metrics (/metrics). "
             "Stops cleanly on SIGINT/SIGTERM.\nWith --etcd, several "
             "lighthouses stand for election and the leader\nserves "
             "(docs/operations.md, \"A lighthouse that survives its "
             "host\").\n",
    FTC__CLI_OPTIONS(options),
};

/* "http://HOST:PORT/" for people: the machine's name when bound to every
 * interface. */
static void dashboard_url(const char *addr, int port, bool tls, char *out,
                          size_t cap)
{
    char host[256] = "localhost";
    if (strncmp(addr, "[::]", 4) != 0 && strncmp(addr, "0.0.0.0", 7) != 0) {
        snprintf(host, sizeof(host), "%.*s", (int)(strrchr(addr, ':') - addr),
                 addr);
    } else if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "localhost");
    }
    snprintf(out, cap, "%s://%s:%d/", tls ? "https" : "http", host, port);
}

static int declare_jobs(ftc_lighthouse *lh, const lh_args *a)
{
    for (int i = 0; i < a->n_jobs; i++) {
        if (ftc_lighthouse_configure_job(lh, a->jobs[i]) != 0) {
            fprintf(stderr, "ftc lighthouse: --job %s: %s\n", a->jobs[i],
                    ftc_last_error());
            return 2;
        }
    }
    return 0;
}

static void print_serving(ftc_lighthouse *lh, const lh_args *a, const char *how)
{
    char addr[300], url[300];
    ftc_lighthouse_address(lh, addr, sizeof(addr));
    dashboard_url(addr, ftc_lighthouse_port(lh), a->o.tls_cert != NULL, url,
                  sizeof(url));
    printf("ftc lighthouse: %sserving on %s%s\n", how, addr,
           a->o.token == NULL  ? ""
           : a->o.public_reads ? " (token required for writes)"
                               : " (token required; a browser asks for it as "
                                 "the password)");
    printf("dashboard: %s\n", url);
    fflush(stdout);
}

/* An elected lighthouse starts serving (the election thread). */
static void on_lead(ftc_lighthouse *lh, void *arg)
{
    declare_jobs(lh, arg);
    print_serving(lh, arg, "elected, ");
}

/* --etcd: stands for election until a signal in stop. */
static int serve_elected(lh_args *a, sigset_t *stop)
{
    a->ha.on_lead = on_lead;
    a->ha.on_lead_arg = a;
    ftc_lighthouse_ha *h;
    int rc = ftc_lighthouse_ha_create(&a->o, &a->ha, &h);
    if (rc != 0) {
        fprintf(stderr, "ftc lighthouse: %s: %s\n", ftc_strerror(rc),
                ftc_last_error());
        return rc == FTC_EINVAL ? 2 : 1;
    }
    printf("ftc lighthouse: standing for election in %s\n", a->ha.etcd);
    fflush(stdout);
    int sig = 0;
    sigwait(stop, &sig);
    printf("ftc lighthouse: %s, stopping\n",
           sig == SIGINT ? "SIGINT" : "SIGTERM");
    fflush(stdout);
    ftc_lighthouse_ha_destroy(h);
    return 0;
}

int ftc__cmd_lighthouse(int argc, char **argv)
{
    lh_args a;
    memset(&a, 0, sizeof(a));
    ftc_lighthouse_opts_init(&a.o);
    ftc_lighthouse_ha_opts_init(&a.ha);
    int r = ftc__cli_parse(&command, &a, argc, argv, NULL);
    if (r != FTC__CLI_PARSED) {
        return r;
    }
    static char token[FTC__CLI_TOKEN_MAX];
    if (ftc__cli_token("lighthouse", a.token_file, token, sizeof(token),
                       &a.o.token) != 0) {
        return 2;
    }
    char host[FTC_HOST_MAX];
    int port;
    const char *bind = a.o.bind != NULL ? a.o.bind : "[::]:29510";
    if (ftc__addr_split(bind, 29510, host, sizeof(host), &port) != 0) {
        fprintf(stderr, "ftc lighthouse: --bind %s: %s\n", bind,
                ftc_last_error());
        return 2;
    }
    if (ftc__cli_open_bind("lighthouse", strcmp(host, "::") == 0 ? "" : host,
                           a.o.token, a.insecure) != 0) {
        return 2;
    }
    /* Blocked before any thread starts, so every thread inherits the mask
     * and sigwait below receives them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    if (a.ha.etcd != NULL) {
        return serve_elected(&a, &stop);
    }
    ftc_lighthouse *lh;
    int rc = ftc_lighthouse_create(&a.o, &lh);
    if (rc != 0) {
        fprintf(stderr, "ftc lighthouse: %s: %s\n", ftc_strerror(rc),
                ftc_last_error());
        return 1;
    }
    rc = declare_jobs(lh, &a);
    if (rc != 0) {
        ftc_lighthouse_destroy(lh);
        return rc;
    }
    print_serving(lh, &a, "");
    int sig = 0;
    sigwait(&stop, &sig);
    printf("ftc lighthouse: %s, stopping\n",
           sig == SIGINT ? "SIGINT" : "SIGTERM");
    fflush(stdout);
    ftc_lighthouse_destroy(lh);
    return 0;
}
