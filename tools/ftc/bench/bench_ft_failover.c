/* ftc bench ft, failover: how long training waits when its lighthouse
 * fails, side by side with a lone lighthouse.
 *
 * Two jobs train at once, each two replica groups of one rank (worker
 * processes, "ftc bench ft --worker", stores in this process):
 *   ha    three `ftc lighthouse --etcd` over one etcd (heartbeat 50 ms,
 *         election 500 ms, lease --lease-ms), the groups given all three
 *         addresses;
 *   lone  one `ftc lighthouse`, restarted on its port the moment it dies
 *         (a supervisor with no restart delay: the best a lone
 *         lighthouse can do, and only while its host lives).
 * Faults, interleaved trial by trial: kill -9 of the ha leader (then
 * restarted as a standby), kill -9 and restart of the lone lighthouse,
 * SIGSTOP of the ha leader (SIGCONT once training went on), SIGTERM of the
 * ha leader. Each is timed from the signal to the job's first step
 * committed in a quorum of the new lighthouse (a new epoch) and to 10
 * more steps. etcd must be installed (scripts/deps.sh). */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"
#include "ft/lighthouse/etcd.h"
#include "ft/quorum/quorum.h"

#define WAIT_MS 60000
#define STEADY_COMMITS 10 /* steps with both groups before a fault */
#define MORE_STEPS 10     /* "training resumed": this many more */
#define LEADER_KEY "ftc/lighthouse/leader"

enum { HA, LONE, JOBS };
enum { KILL9, LONE_RESTART, SIGSTOP_LEADER, SIGTERM_LEADER, FAULTS };

static const char *const fault_names[FAULTS] = {
    "ha: kill -9 of the leader", "lone: kill -9, restarted at once",
    "ha: SIGSTOP of the leader", "ha: SIGTERM of the leader"};
static const char *const fault_keys[FAULTS] = {"kill9", "lone_kill9_restart",
                                               "sigstop", "sigterm"};

/* One job: its two groups and what their lines said since the fault. */
typedef struct job {
    bench_ft_proc w[2];
    int64_t full[2]; /* steps committed with both groups since reset */
    int64_t step;    /* the highest step committed */
    uint32_t epoch;  /* of the last commit's quorum */
    /* Set by the fault: its time, the epoch and step then, and when the
     * first step of a new epoch and MORE_STEPS more came. */
    int64_t fault_ns, fault_step, first_ns, resumed_ns;
    uint32_t fault_epoch;
} job;

typedef struct scene {
    const bench_ft_opts *o;
    char dir[64];
    pid_t etcd;
    char etcd_url[64];
    pid_t lh[3];
    char lh_addr[3][32], ha_list[128];
    pid_t lone;
    char lone_addr[32];
    ftc_store_server *stores[4];
    char store_addr[4][32];
    job jobs[JOBS];
} scene;

/* ------------------------------------------------------------ processes */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
        port = ntohs(a.sin_port);
    }
    if (fd >= 0) {
        close(fd);
    }
    return port;
}

static int start_ha_lighthouse(scene *s, int i)
{
    char lease[16], log[16];
    snprintf(lease, sizeof(lease), "%d", s->o->lease_ms);
    snprintf(log, sizeof(log), "lh%d.log", i);
    char *argv[] = {"/proc/self/exe", "lighthouse", "--bind",     s->lh_addr[i],
                    "--etcd",         s->etcd_url,  "--lease-ms", lease,
                    "--min-replicas", "2",          NULL};
    return bench_ft_spawn_logged(s->dir, argv, log, &s->lh[i]);
}

static int start_lone_lighthouse(scene *s)
{
    char *argv[] = {"/proc/self/exe", "lighthouse", "--bind", s->lone_addr,
                    "--min-replicas", "2",          NULL};
    return bench_ft_spawn_logged(s->dir, argv, "lone.log", &s->lone);
}

static int start_etcd(scene *s)
{
    int client = free_port(), peer = free_port();
    char data[96], peer_url[64], cluster[96];
    snprintf(s->etcd_url, sizeof(s->etcd_url), "http://127.0.0.1:%d", client);
    snprintf(peer_url, sizeof(peer_url), "http://127.0.0.1:%d", peer);
    snprintf(cluster, sizeof(cluster), "b=%s", peer_url);
    snprintf(data, sizeof(data), "%s/etcd", s->dir);
    char *argv[] = {"etcd",      "--name",
                    "b",         "--data-dir",
                    data,        "--listen-client-urls",
                    s->etcd_url, "--advertise-client-urls",
                    s->etcd_url, "--listen-peer-urls",
                    peer_url,    "--initial-advertise-peer-urls",
                    peer_url,    "--initial-cluster",
                    cluster,     "--heartbeat-interval",
                    "50",        "--election-timeout",
                    "500",       NULL};
    return bench_ft_spawn_logged(s->dir, argv, "etcd.log", &s->etcd);
}

/* The ha leader's index (its etcd key holds its name: its bind address),
 * or -1 when etcd names none of them by the deadline. */
static int leader(const scene *s, int64_t ms)
{
    ftc__etcd *e;
    if (ftc__etcd_create(s->etcd_url, 1000, &e) != 0) {
        return -1;
    }
    int found = -1;
    ftc__deadline dl = ftc__deadline_in_ms(ms);
    while (found < 0 && !ftc__deadline_expired(dl)) {
        ftc__etcd_kv kv;
        if (ftc__etcd_get(e, LEADER_KEY, dl, &kv) == 0 && kv.found) {
            for (int i = 0; i < 3; i++) {
                found = strcmp(kv.value, s->lh_addr[i]) == 0 ? i : found;
            }
        }
        if (found < 0) {
            ftc__sleep_until(ftc__deadline_in_ms(20), NULL);
        }
    }
    ftc__etcd_destroy(e);
    return found;
}

/* --------------------------------------------------------------- lines */

typedef struct reading {
    job *j;
    int g;
} reading;

/* "c <t_ns> <step> <participants> <quorum_id>" of group g. */
static void parse(void *arg, const char *line)
{
    reading *rd = arg;
    job *j = rd->j;
    long long t, step, parts, qid;
    if (sscanf(line, "c %lld %lld %lld %lld", &t, &step, &parts, &qid) != 4) {
        return;
    }
    j->full[rd->g] += parts == 2;
    j->step = step > j->step ? step : j->step;
    j->epoch = ftc__quorum_id_epoch(qid);
    if (j->fault_ns == 0 || t <= j->fault_ns || j->epoch == j->fault_epoch) {
        return;
    }
    if (j->first_ns == 0) {
        j->first_ns = t;
    }
    if (j->resumed_ns == 0 && step >= j->fault_step + MORE_STEPS) {
        j->resumed_ns = t;
    }
}

/* Reads every worker's lines until done(j) or the deadline. */
static bool pump(scene *s, job *j, bool (*done)(const job *j), int64_t ms)
{
    ftc__deadline dl = ftc__deadline_in_ms(ms);
    while (!done(j)) {
        struct pollfd pf[2 * JOBS];
        for (int k = 0; k < 2 * JOBS; k++) {
            pf[k] = (struct pollfd){.fd = s->jobs[k / 2].w[k % 2].fd,
                                    .events = POLLIN};
        }
        if (ftc__deadline_expired(dl) ||
            (poll(pf, 2 * JOBS, ftc__deadline_poll_ms(dl)) < 0 &&
             errno != EINTR)) {
            return false;
        }
        for (int k = 0; k < 2 * JOBS; k++) {
            if (pf[k].fd >= 0 && pf[k].revents != 0) {
                reading rd = {&s->jobs[k / 2], k % 2};
                bench_ft_drain(&s->jobs[k / 2].w[k % 2], parse, &rd);
            }
        }
    }
    return true;
}

static bool steady(const job *j)
{
    return j->full[0] >= STEADY_COMMITS && j->full[1] >= STEADY_COMMITS;
}

static bool resumed(const job *j)
{
    return j->first_ns > 0 && j->resumed_ns > 0;
}

/* ---------------------------------------------------------------- faults */

/* One fault on its job: waits until both groups train together, signals,
 * times the new epoch's first step and MORE_STEPS more, then restores
 * the lighthouse it hit. ms[0], ms[1]: the two times. */
static int fault(scene *s, int kind, double ms[2])
{
    job *j = &s->jobs[kind == LONE_RESTART ? LONE : HA];
    j->full[0] = j->full[1] = 0;
    j->fault_ns = j->first_ns = j->resumed_ns = 0;
    if (!pump(s, j, steady, WAIT_MS)) {
        fprintf(stderr,
                "bench ft failover: %s: the groups never trained "
                "together\n",
                fault_keys[kind]);
        return 1;
    }
    int l = kind == LONE_RESTART ? -1 : leader(s, WAIT_MS);
    if (kind != LONE_RESTART && l < 0) {
        fprintf(stderr, "bench ft failover: no ha leader in etcd\n");
        return 1;
    }
    j->fault_epoch = j->epoch;
    j->fault_step = j->step;
    j->fault_ns = bench_ft_now_ns();
    switch (kind) {
    case KILL9:
        kill(s->lh[l], SIGKILL);
        break;
    case LONE_RESTART:
        bench_ft_end(&s->lone);
        if (start_lone_lighthouse(s) != 0) {
            return 1;
        }
        break;
    case SIGSTOP_LEADER:
        kill(s->lh[l], SIGSTOP);
        break;
    default:
        kill(s->lh[l], SIGTERM);
        break;
    }
    bool ok = pump(s, j, resumed, WAIT_MS);
    ms[0] = (double)(j->first_ns - j->fault_ns) / 1e6;
    ms[1] = (double)(j->resumed_ns - j->fault_ns) / 1e6;
    if (kind == SIGSTOP_LEADER) {
        kill(s->lh[l], SIGCONT);
    } else if (kind != LONE_RESTART) {
        waitpid(s->lh[l], NULL, 0);
        s->lh[l] = 0;
        ok = start_ha_lighthouse(s, l) == 0 && ok;
    }
    if (!ok) {
        fprintf(stderr, "bench ft failover: %s: training did not go on\n",
                fault_keys[kind]);
    }
    return !ok;
}

static void report(const bench_ft_opts *o, double (*v)[FAULTS][2], int trials)
{
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    if (!o->json) {
        printf("failover, %d trials, lease %d ms, load %.1f %.1f %.1f; ms "
               "from the fault, median (min-max)\n%-34s %22s %22s\n",
               trials, o->lease_ms, load[0], load[1], load[2], "fault",
               "first step", "10 more steps");
    }
    for (int k = 0; k < FAULTS; k++) {
        double col[2][64];
        bench_ft_summary sm[2];
        for (int c = 0; c < 2; c++) {
            for (int t = 0; t < trials; t++) {
                col[c][t] = v[t][k][c];
            }
            sm[c] = bench_ft_summarize(col[c], (size_t)trials);
        }
        if (o->json) {
            printf("{\"bench\":\"ft\",\"what\":\"failover\",\"fault\":\"%s\","
                   "\"trials\":%d,\"lease_ms\":%d,\"first_p50_ms\":%.0f,"
                   "\"first_min_ms\":%.0f,\"first_max_ms\":%.0f,"
                   "\"resumed_p50_ms\":%.0f,\"resumed_min_ms\":%.0f,"
                   "\"resumed_max_ms\":%.0f}\n",
                   fault_keys[k], trials, o->lease_ms, sm[0].p50, sm[0].min,
                   sm[0].max, sm[1].p50, sm[1].min, sm[1].max);
            continue;
        }
        char cell[2][48];
        for (int c = 0; c < 2; c++) {
            snprintf(cell[c], sizeof(cell[c]), "%.0f (%.0f-%.0f)", sm[c].p50,
                     sm[c].min, sm[c].max);
        }
        printf("%-34s %22s %22s\n", fault_names[k], cell[0], cell[1]);
    }
    fflush(stdout);
}

/* ----------------------------------------------------------------- scene */

/* Ends every process; the logs are kept when the run failed. */
static void stop(scene *s, bool failed)
{
    for (int k = 0; k < 2 * JOBS; k++) {
        bench_ft_reap(&s->jobs[k / 2].w[k % 2]);
    }
    for (int i = 0; i < 3; i++) {
        bench_ft_end(&s->lh[i]);
    }
    bench_ft_end(&s->lone);
    bench_ft_end(&s->etcd);
    for (int g = 0; g < 4; g++) {
        ftc_store_server_destroy(s->stores[g]);
    }
    bench_ft_logdir_close(s->dir, failed, "failover");
}

static int start(scene *s)
{
    if (bench_ft_logdir_make(s->dir, sizeof(s->dir), "failover") != 0) {
        return -1;
    }
    if (start_etcd(s) != 0) {
        return -1;
    }
    size_t len = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(s->lh_addr[i], sizeof(s->lh_addr[i]), "127.0.0.1:%d",
                 free_port());
        len += (size_t)snprintf(s->ha_list + len, sizeof(s->ha_list) - len,
                                "%s%s", i > 0 ? "," : "", s->lh_addr[i]);
        if (start_ha_lighthouse(s, i) != 0) {
            return -1;
        }
    }
    snprintf(s->lone_addr, sizeof(s->lone_addr), "127.0.0.1:%d", free_port());
    if (start_lone_lighthouse(s) != 0) {
        return -1;
    }
    for (int g = 0; g < 4; g++) {
        ftc_store_server_opts so;
        ftc_store_server_opts_init(&so);
        so.bind_host = "127.0.0.1";
        if (ftc_store_server_create(&so, &s->stores[g]) != 0) {
            fprintf(stderr, "bench ft failover: %s\n", ftc_last_error());
            return -1;
        }
        snprintf(s->store_addr[g], sizeof(s->store_addr[g]), "127.0.0.1:%d",
                 ftc_store_server_port(s->stores[g]));
    }
    for (int k = 0; k < 2 * JOBS; k++) {
        const char *lh = k / 2 == HA ? s->ha_list : s->lone_addr;
        if (bench_ft_spawn_worker(&s->jobs[k / 2].w[k % 2], lh,
                                  s->store_addr[k], k, s->o->floats,
                                  "tcp") != 0) {
            return -1;
        }
    }
    return 0;
}

/* Whether name is an executable in PATH. */
static bool in_path(const char *name)
{
    const char *path = getenv("PATH");
    char dir[1024], file[1100];
    while (path != NULL && *path != '\0') {
        size_t n = strcspn(path, ":");
        snprintf(dir, sizeof(dir), "%.*s", (int)n, path);
        snprintf(file, sizeof(file), "%s/%s", dir[0] ? dir : ".", name);
        if (access(file, X_OK) == 0) {
            return true;
        }
        path += n + (path[n] == ':');
    }
    return false;
}

int bench_ft_failover(const bench_ft_opts *o)
{
    if (!in_path("etcd")) {
        fprintf(stderr, "bench ft failover: etcd is not installed "
                        "(scripts/deps.sh installs Debian's etcd-server)\n");
        return 1;
    }
    int trials = o->trials < 64 ? o->trials : 64;
    double(*v)[FAULTS][2] = ftc__calloc((size_t)trials, sizeof(*v));
    scene s;
    memset(&s, 0, sizeof(s));
    s.o = o;
    for (int k = 0; k < 2 * JOBS; k++) {
        s.jobs[k / 2].w[k % 2].fd = -1;
    }
    int failed = v == NULL || start(&s) != 0;
    for (int t = 0; !failed && t < trials; t++) {
        for (int k = 0; !failed && k < FAULTS; k++) {
            failed = fault(&s, k, v[t][k]);
        }
    }
    stop(&s, failed);
    if (!failed) {
        report(o, v, trials);
    }
    ftc__free(v);
    return failed;
}
