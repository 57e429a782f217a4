/* ftc status: reads a lighthouse's status API and prints the jobs, or one
 * job's headline, quorum, members and recent changes, as a table or as
 * JSON; with --watch, again and again (redrawn in place on a terminal). */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_args.h"
#include "cli_token.h"
#include "cmd.h"
#include "ftc/ftc.h"

typedef struct status_args {
    const char *addr;
    const char *job;
    const char *token_file;
    const char *tls_ca;
    int insecure;
    int json;
    int64_t timeout_ms;
    int watch;
    int64_t interval_ms;
    int64_t count;
} status_args;

static const ftc__cli_option options[] = {
    {"addr", FTC__CLI_STRING, FTC__CLI_FIELD(status_args, addr),
     .env = "FTC_LIGHTHOUSE", .metavar = "HOST:PORT", .help = "the lighthouse"},
    {"job", FTC__CLI_STRING, FTC__CLI_FIELD(status_args, job),
     .metavar = "NAME", .help = "one job in detail"},
    {"token-file", FTC__CLI_STRING, FTC__CLI_FIELD(status_args, token_file),
     .metavar = "PATH", .help = "the lighthouse's token (else $FTC_TOKEN)"},
    {"tls-ca", FTC__CLI_STRING, FTC__CLI_FIELD(status_args, tls_ca),
     .env = "FTC_TLS_CA", .metavar = "PEM",
     .help = "with an https:// address: the CA (or the lighthouse's own "
             "certificate) to trust"},
    {"insecure", FTC__CLI_FLAG, FTC__CLI_FIELD(status_args, insecure),
     .help = "send the token in clear text (http://) to another host"},
    {"json", FTC__CLI_FLAG, FTC__CLI_FIELD(status_args, json),
     .help = "the status API's JSON as is"},
    {"timeout-ms", FTC__CLI_INT, FTC__CLI_FIELD(status_args, timeout_ms),
     .min = 0, .max = INT64_MAX, .metavar = "MS", .help = "give up after"},
    {"watch", FTC__CLI_FLAG, FTC__CLI_FIELD(status_args, watch),
     .help = "show it again every --interval (in place on a terminal)"},
    {"interval", FTC__CLI_SECONDS, FTC__CLI_FIELD(status_args, interval_ms),
     .min = 50, .max = 3600000, .metavar = "S",
     .help = "seconds between views with --watch"},
    {"count", FTC__CLI_INT, FTC__CLI_FIELD(status_args, count), .min = 0,
     .max = INT64_MAX, .metavar = "N",
     .help = "with --watch: stop after N views (0: until interrupted)"},
};

static const ftc__cli_command command = {
    .name = "status",
    .about = "Prints the jobs of a lighthouse, or with --job one job's "
             "quorum,\nmembers, waiting replicas and recent quorum "
             "changes.\n",
    .notes = "A lighthouse with a token answers only a client that sends "
             "it (unless it\nruns with --public-reads).\nWith --watch a failed "
             "read is shown and "
             "retried at the next view; the exit\ncode is that of the "
             "last view.\n",
    FTC__CLI_OPTIONS(options),
};

static long long num(const json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "";
}

static void print_jobs(const json_t *j)
{
    const json_t *jobs = json_object_get(j, "jobs");
    if (json_array_size(jobs) == 0) {
        printf("no jobs\n");
        return;
    }
    printf("%-24s %-11s %-22s %7s %7s %7s  %s\n", "JOB", "EPOCH", "QUORUM",
           "MEMBERS", "HEALTHY", "WAITING", "NEXT");
    size_t i;
    const json_t *row;
    json_array_foreach(jobs, i, row)
    {
        char q[48];
        snprintf(q, sizeof(q), "%lld.%lld", num(row, "epoch"),
                 num(row, "counter"));
        printf("%-24s %-11lld %-22s %7lld %7lld %7lld  %s\n", str(row, "name"),
               num(row, "epoch"), num(row, "counter") > 0 ? q : "-",
               num(row, "members"), num(row, "healthy_replicas"),
               num(row, "participants"), str(row, "verdict"));
    }
    printf("\n");
    json_array_foreach(jobs, i, row)
    {
        printf("%s: %s\n", str(row, "name"), str(row, "headline"));
    }
}

/* heartbeat age of replica_id as text, "gone" when it has none. */
static void heartbeat_of(const json_t *s, const char *id, char *out, size_t cap)
{
    size_t i;
    const json_t *h;
    json_array_foreach(json_object_get(s, "heartbeats"), i, h)
    {
        if (strcmp(str(h, "replica_id"), id) == 0) {
            snprintf(out, cap, "%.2fs%s", (double)num(h, "age_ms") / 1000.0,
                     json_is_true(json_object_get(h, "healthy")) ? ""
                                                                 : " DEAD");
            return;
        }
    }
    snprintf(out, cap, "gone");
}

static const char *heals_from(const json_t *q, const char *id)
{
    size_t i;
    const json_t *h;
    json_array_foreach(json_object_get(q, "healing"), i, h)
    {
        if (strcmp(str(h, "replica_id"), id) == 0) {
            return str(h, "from");
        }
    }
    return "";
}

static void print_members(const json_t *s, const json_t *q)
{
    printf("%-28s %10s %-28s %-22s %-11s %s\n", "REPLICA", "STEP", "MANAGER",
           "STORE", "HEARTBEAT", "HEALS FROM");
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(q, "members"), i, m)
    {
        char hb[48];
        heartbeat_of(s, str(m, "replica_id"), hb, sizeof(hb));
        printf("%-28s %10lld%s %-28s %-22s %-11s %s\n", str(m, "replica_id"),
               num(m, "step"), num(m, "step") < num(q, "max_step") ? "*" : " ",
               str(m, "address"), str(m, "store_address"), hb,
               heals_from(q, str(m, "replica_id")));
    }
}

static void print_job(const json_t *s)
{
    const json_t *q = json_object_get(s, "quorum");
    const json_t *d = json_object_get(s, "decision");
    printf("%s\n", str(json_object_get(s, "summary"), "headline"));
    printf("job %s  epoch %lld  ", str(s, "job"), num(s, "epoch"));
    if (json_is_object(q)) {
        printf("quorum %lld.%lld (id %lld), %zu members, formed %.1fs ago, "
               "max step %lld\n",
               num(q, "epoch"), num(q, "counter"), num(q, "quorum_id"),
               json_array_size(json_object_get(q, "members")),
               (double)num(q, "age_ms") / 1000.0, num(q, "max_step"));
    } else {
        printf("no quorum yet\n");
    }
    printf("next: %s: %s\n\n", str(d, "verdict"), str(d, "reason"));
    if (json_is_object(q)) {
        print_members(s, q);
        printf("(* behind max step)\n");
    }
    size_t i;
    const json_t *p;
    const json_t *parts = json_object_get(s, "participants");
    if (json_array_size(parts) > 0) {
        printf("\nwaiting for the next quorum:\n");
    }
    json_array_foreach(parts, i, p)
    {
        printf("  %-28s step %lld, %.1fs%s\n", str(p, "replica_id"),
               num(p, "step"), (double)num(p, "waiting_ms") / 1000.0,
               json_is_true(json_object_get(p, "shrink_only")) ? ", shrink_only"
                                                               : "");
    }
    const json_t *changes = json_object_get(s, "changes");
    if (json_array_size(changes) > 0) {
        printf("\nrecent quorum changes:\n");
    }
    json_array_foreach(changes, i, p)
    {
        printf("  %lld.%lld  %-16s %lld members\n", num(p, "epoch"),
               num(p, "counter"), str(p, "cause"), num(p, "members"));
    }
}

/* One view: reads the status and prints it. 0, or 1 after printing why. */
static int show(ftc_lighthouse_client *c, const status_args *a)
{
    char *text = NULL;
    int rc = ftc_lighthouse_client_status(c, a->job, a->timeout_ms, &text);
    if (rc != 0) {
        fprintf(stderr, "ftc status: %s: %s\n", ftc_strerror(rc),
                ftc_last_error());
        return 1;
    }
    json_t *j = json_loads(text, 0, NULL);
    if (a->json || j == NULL) {
        printf("%s\n", text);
    } else if (a->job != NULL) {
        print_job(j);
    } else {
        print_jobs(j);
    }
    json_decref(j);
    ftc_free(text);
    return 0;
}

/* --watch: a view every interval. On a terminal each view replaces the
 * last (cursor home, clear screen); otherwise views follow each other,
 * each after a line with the time, so a log or a pipe reads them. */
static int watch(ftc_lighthouse_client *c, const status_args *a)
{
    int tty = isatty(STDOUT_FILENO);
    int rc = 0;
    for (int64_t n = 0; a->count == 0 || n < a->count; n++) {
        if (n > 0) {
            struct timespec ts = {a->interval_ms / 1000,
                                  (a->interval_ms % 1000) * 1000000};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            }
        }
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[16];
        strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
        if (tty) {
            printf("\033[H\033[2J");
        } else if (n > 0) {
            printf("\n");
        }
        printf("ftc status at %s (every %.1f s)\n", stamp,
               (double)a->interval_ms / 1000.0);
        fflush(stdout);
        rc = show(c, a);
        fflush(stdout);
    }
    return rc;
}

int ftc__cmd_status(int argc, char **argv)
{
    status_args a = {
        .addr = "127.0.0.1:29510", .timeout_ms = 10000, .interval_ms = 1000};
    int rc = ftc__cli_parse(&command, &a, argc, argv, NULL);
    if (rc != FTC__CLI_PARSED) {
        return rc;
    }
    ftc_lighthouse_client_opts o;
    ftc_lighthouse_client_opts_init(&o);
    static char token[FTC__CLI_TOKEN_MAX];
    if (ftc__cli_token("status", a.token_file, token, sizeof(token),
                       &o.token) != 0) {
        return 2;
    }
    o.tls_ca = a.tls_ca;
    o.insecure = a.insecure != 0;
    ftc_lighthouse_client *c = NULL;
    rc = ftc_lighthouse_client_create(a.addr, &o, &c);
    if (rc != 0) {
        fprintf(stderr, "ftc status: %s: %s\n", ftc_strerror(rc),
                ftc_last_error());
        return 1;
    }
    rc = a.watch ? watch(c, &a) : show(c, &a);
    ftc_lighthouse_client_destroy(c);
    return rc;
}
