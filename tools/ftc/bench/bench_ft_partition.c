/* ftc bench ft, partition: what a network partition costs a job over test
 * hosts, and how fast it mends. Needs root: the hosts are network
 * namespaces made by --hosts-script (scripts/testhosts.sh).
 *
 * Four test hosts: `ftc lighthouse` on host 0, one `ftc run` per training
 * host with one replica group of one rank of --trainer each (group I on
 * host I+1), as tests/integration/run_hosts_test.sh runs them. Faults,
 * interleaved trial by trial, each after 5 s of training together, held
 * --hold-ms and then healed:
 *   lighthouse  host 2 split from host 0: group 1 cut off from the
 *               lighthouse but not from the other groups;
 *   majority    host 1 split from hosts 2 and 3: group 0 cut off from the
 *               other groups, all still reaching the lighthouse (the
 *               others' reports leave it out);
 *   pair        hosts 1 and 2 split from each other: groups 0 and 1 cannot
 *               reach each other, group 2 reaches both (one of the pair is
 *               left out).
 * Timed from the split (ms): the last step the cut group committed (its
 * stop: the group left out; of a pair, the one that stopped first) and
 * group 2, never cut, 10 steps further. Timed from the heal: every group
 * in the quorum again (a committed step with 3 participants). Steps are
 * read from each launcher's FTC_EVENT lines, timestamped as they arrive.
 * The processes' output goes to a scratch folder, kept when a run fails;
 * the hosts are taken down at the end whatever happened. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"
#include "run/run_event.h"

#define WAIT_MS 60000
#define HOSTS 4
#define GROUPS 3       /* one per training host: group I on host I+1 */
#define OTHER 2        /* the group no partition cuts */
#define MORE_STEPS 10  /* "the others went on": this many more steps */
#define RECENT_MS 1000 /* "training together": a full step this recent */
/* Training before each fault, longer than the lighthouse remembers a
 * left-out group's return (4 x its time out, 1 s by default): a group
 * left out again soon after it came back is held out longer (flap
 * damping), which would time the previous fault's echo, not this one. */
#define SETTLE_MS 5000
#define LH_PORT 29650
#define STEP_SLEEP_MS "5"
#define MAX_TRIALS 64
#define STOP_GRACE_MS 10000 /* `ftc run` stops its trainers (5 s grace) */

enum { LIGHTHOUSE, MAJORITY, PAIR, KINDS };
enum { LAST_COMMIT, OTHER_STEPS, WHOLE_AGAIN, MEASURES };

/* One kind of fault: the host pairs split, and the groups cut off. */
typedef struct partition {
    int n_links;
    int link[2][2];
    int n_cut;
    int cut[2];
} partition;

static const partition partitions[KINDS] = {
    [LIGHTHOUSE] = {1, {{2, 0}}, 1, {1}},
    [MAJORITY] = {2, {{1, 2}, {1, 3}}, 1, {0}},
    [PAIR] = {1, {{1, 2}}, 2, {0, 1}},
};
static const char *const kind_names[KINDS] = {"lighthouse", "majority", "pair"};
static const char *const measure_keys[MEASURES] = {
    "last_commit_after_split_ms", "other_10_steps_ms", "whole_again_ms"};
static const char *const measure_titles[MEASURES] = {
    "cut group's last commit", "others 10 steps on", "whole after heal"};

/* One launcher's group and what its committed steps said. */
typedef struct group {
    bench_ft_proc p;
    FILE *log;
    int64_t last_step;      /* of the latest commit */
    int64_t last_commit_ns; /* when the latest commit arrived */
    int64_t last_full_ns;   /* the latest commit with every group */
    /* Set by a fault: from when on (the split, the heal) the two below
     * count, and the step that makes reached_ns (0: none). */
    int64_t since_ns, target_step;
    int64_t reached_ns;    /* target_step committed */
    int64_t first_full_ns; /* the first commit with every group */
} group;

typedef struct scene {
    const bench_ft_opts *o;
    char dir[64];
    char name[8]; /* the test hosts' NAME */
    char hosts[PATH_MAX], ftc[PATH_MAX], trainer[PATH_MAX];
    char addr[HOSTS][32], lh_addr[48];
    bool hosts_up; /* `up` ran: `down` must */
    bool training; /* the launchers run: one ending is a failure */
    bool ending;   /* tearing down: signals no longer stop a wait */
    pid_t lh;
    group g[GROUPS];
    bench_ft_proc cmd;  /* a harness command, while it runs */
    FILE *hosts_log;    /* the harness commands' output */
    char cmd_last[128]; /* the last line the command printed */
} scene;

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

/* --------------------------------------------------------------- lines */

static void record_commit(group *g, int64_t t, int64_t step,
                          int64_t participants)
{
    g->last_step = step;
    g->last_commit_ns = t;
    bool counts = g->since_ns > 0 && t >= g->since_ns;
    if (participants == GROUPS) {
        g->last_full_ns = t;
        if (counts && g->first_full_ns == 0) {
            g->first_full_ns = t;
        }
    }
    if (counts && g->target_step > 0 && g->reached_ns == 0 &&
        step >= g->target_step) {
        g->reached_ns = t;
    }
}

/* A launcher's line: logged; a committed step ("[rI.0] FTC_EVENT
 * {"kind":"step","committed":true,...}") recorded. */
static void on_group_line(void *arg, const char *line)
{
    group *g = arg;
    int64_t t = bench_ft_now_ns();
    fprintf(g->log, "%s\n", line);
    const char *tag = strstr(line, RUN_EVENT_TAG);
    run_event ev;
    if (tag != NULL &&
        run_event_parse(tag, strlen(tag), &ev) == RUN_EVENT_STEP &&
        ev.committed) {
        record_commit(g, t, ev.step, ev.participants);
    }
}

static void on_command_line(void *arg, const char *line)
{
    scene *s = arg;
    fprintf(s->hosts_log, "%s\n", line);
    snprintf(s->cmd_last, sizeof(s->cmd_last), "%s", line);
}

/* ----------------------------------------------------------------- waits */

typedef bool (*condition)(const scene *s);
enum { PUMP_DONE, PUMP_DEADLINE, PUMP_FAILED };

/* The group whose launcher ended (its pipe closed), or -1. */
static int ended_launcher(const scene *s)
{
    for (int i = 0; i < GROUPS; i++) {
        if (s->g[i].p.fd < 0) {
            return i;
        }
    }
    return -1;
}

/* Reads the launchers' lines and the harness command's until done(s),
 * ms passed, or a failure said on stderr (a launcher ended, a signal). */
static int pump(scene *s, condition done, int64_t ms)
{
    ftc__deadline dl = ftc__deadline_in_ms(ms);
    while (!done(s)) {
        if (stop_signal != 0 && !s->ending) {
            fprintf(stderr, "bench ft partition: stopped by signal %d\n",
                    (int)stop_signal);
            return PUMP_FAILED;
        }
        int ended = s->training ? ended_launcher(s) : -1;
        if (ended >= 0) {
            fprintf(stderr,
                    "bench ft partition: the launcher of group %d (host "
                    "%d) ended\n",
                    ended, ended + 1);
            return PUMP_FAILED;
        }
        if (ftc__deadline_expired(dl)) {
            return PUMP_DEADLINE;
        }
        struct pollfd pf[GROUPS + 1];
        for (int i = 0; i < GROUPS; i++) {
            pf[i] = (struct pollfd){.fd = s->g[i].p.fd, .events = POLLIN};
        }
        pf[GROUPS] = (struct pollfd){.fd = s->cmd.fd, .events = POLLIN};
        if (poll(pf, GROUPS + 1, ftc__deadline_poll_ms(dl)) < 0 &&
            errno != EINTR) {
            fprintf(stderr, "bench ft partition: poll: %s\n", strerror(errno));
            return PUMP_FAILED;
        }
        for (int i = 0; i < GROUPS; i++) {
            if (pf[i].fd >= 0 && pf[i].revents != 0) {
                bench_ft_drain(&s->g[i].p, on_group_line, &s->g[i]);
            }
        }
        if (pf[GROUPS].fd >= 0 && pf[GROUPS].revents != 0) {
            bench_ft_drain(&s->cmd, on_command_line, s);
        }
    }
    return PUMP_DONE;
}

/* pump() up to WAIT_MS; 0, or 1 after saying what did not happen. */
static int wait_until(scene *s, condition done, int kind, const char *what)
{
    int r = pump(s, done, WAIT_MS);
    if (r == PUMP_DEADLINE) {
        fprintf(stderr, "bench ft partition: %s: %s within %d s\n",
                kind_names[kind], what, WAIT_MS / 1000);
    }
    return r != PUMP_DONE;
}

static bool never(const scene *s)
{
    (void)s;
    return false;
}

static bool command_ended(const scene *s)
{
    return s->cmd.fd < 0;
}

static bool launchers_ended(const scene *s)
{
    for (int i = 0; i < GROUPS; i++) {
        if (s->g[i].p.fd >= 0) {
            return false;
        }
    }
    return true;
}

static bool trained_together_lately(const scene *s)
{
    int64_t lately = bench_ft_now_ns() - (int64_t)RECENT_MS * 1000000;
    for (int i = 0; i < GROUPS; i++) {
        if (s->g[i].last_full_ns < lately) {
            return false;
        }
    }
    return true;
}

static bool other_went_on(const scene *s)
{
    return s->g[OTHER].reached_ns > 0;
}

static bool whole_again(const scene *s)
{
    for (int i = 0; i < GROUPS; i++) {
        if (s->g[i].first_full_ns == 0) {
            return false;
        }
    }
    return true;
}

/* -------------------------------------------------------------- harness */

/* Runs "HOSTS VERB NAME [A [B]]" (a or b -1: left out), its output in
 * hosts.log and its last line in s->cmd_last, reading the launchers'
 * lines meanwhile; 0, or -1 with a message on stderr. */
static int harness(scene *s, const char *verb, int a, int b)
{
    char sa[16], sb[16];
    snprintf(sa, sizeof(sa), "%d", a);
    snprintf(sb, sizeof(sb), "%d", b);
    char *argv[] = {s->hosts,           (char *)verb,       s->name,
                    a >= 0 ? sa : NULL, b >= 0 ? sb : NULL, NULL};
    fprintf(s->hosts_log, "$ testhosts.sh %s %s %s %s\n", verb, s->name,
            a >= 0 ? sa : "", b >= 0 ? sb : "");
    fflush(s->hosts_log);
    s->cmd_last[0] = '\0';
    if (bench_ft_spawn_piped(&s->cmd, s->hosts, argv, true) != 0) {
        return -1;
    }
    int r = pump(s, command_ended, WAIT_MS);
    if (r != PUMP_DONE) {
        bench_ft_reap(&s->cmd);
        if (r == PUMP_DEADLINE) {
            fprintf(stderr,
                    "bench ft partition: %s %s did not end within %d s\n",
                    s->hosts, verb, WAIT_MS / 1000);
        }
        return -1;
    }
    int status = bench_ft_exit_status(&s->cmd);
    if (status != 0) {
        fprintf(stderr, "bench ft partition: %s %s failed (exit %d): %s\n",
                s->hosts, verb, status, s->cmd_last);
        return -1;
    }
    return 0;
}

static int harness_links(scene *s, const char *verb, const partition *pt)
{
    for (int l = 0; l < pt->n_links; l++) {
        if (harness(s, verb, pt->link[l][0], pt->link[l][1]) != 0) {
            return -1;
        }
    }
    return 0;
}

/* ----------------------------------------------------------------- faults */

static void count_from(scene *s, int64_t t)
{
    for (int i = 0; i < GROUPS; i++) {
        s->g[i].since_ns = t;
        s->g[i].target_step = 0;
        s->g[i].reached_ns = 0;
        s->g[i].first_full_ns = 0;
    }
}

/* Of the cut groups, the earliest last commit since the split (ms after
 * it; 0 when none committed after it). */
static double cut_side_stop_ms(const scene *s, const partition *pt,
                               int64_t split)
{
    int64_t first_stop = INT64_MAX;
    for (int c = 0; c < pt->n_cut; c++) {
        int64_t t = s->g[pt->cut[c]].last_commit_ns;
        t = t > split ? t : split;
        first_stop = t < first_stop ? t : first_stop;
    }
    return (double)(first_stop - split) / 1e6;
}

static double last_first_full_ms(const scene *s, int64_t heal)
{
    int64_t last = heal;
    for (int i = 0; i < GROUPS; i++) {
        last = s->g[i].first_full_ns > last ? s->g[i].first_full_ns : last;
    }
    return (double)(last - heal) / 1e6;
}

/* One fault: waits until every group trains together, splits, times the
 * others' MORE_STEPS, holds, notes the cut side's last commit, joins and
 * times the whole job's return. 0, or 1 (message on stderr). */
static int fault(scene *s, int kind, double ms[MEASURES])
{
    const partition *pt = &partitions[kind];
    group *other = &s->g[OTHER];
    if (pump(s, never, SETTLE_MS) != PUMP_DEADLINE ||
        wait_until(s, trained_together_lately, kind,
                   "the groups did not train together (a step committed "
                   "by all three)") != 0) {
        return 1;
    }
    int64_t split = bench_ft_now_ns();
    count_from(s, split);
    other->target_step = other->last_step + MORE_STEPS;
    if (harness_links(s, "split", pt) != 0 ||
        wait_until(s, other_went_on, kind,
                   "group 2 did not commit 10 more steps after the "
                   "split") != 0) {
        return 1;
    }
    ms[OTHER_STEPS] = (double)(other->reached_ns - split) / 1e6;
    /* The partition's length, not a wait for a state. */
    if (pump(s, never, s->o->hold_ms) != PUMP_DEADLINE) {
        return 1;
    }
    int64_t heal = bench_ft_now_ns();
    ms[LAST_COMMIT] = cut_side_stop_ms(s, pt, split);
    count_from(s, heal);
    if (harness_links(s, "join", pt) != 0 ||
        wait_until(s, whole_again, kind,
                   "the groups did not train together again after the "
                   "heal") != 0) {
        return 1;
    }
    ms[WHOLE_AGAIN] = last_first_full_ms(s, heal);
    return 0;
}

/* ----------------------------------------------------------------- output */

static void print_fault(const bench_ft_opts *o, int trial, int kind,
                        const double ms[MEASURES])
{
    if (o->json) {
        printf("{\"bench\":\"ft\",\"what\":\"partition\",\"fault\":\"%s\","
               "\"trial\":%d",
               kind_names[kind], trial + 1);
        for (int m = 0; m < MEASURES; m++) {
            printf(",\"%s\":%.0f", measure_keys[m], ms[m]);
        }
        printf("}\n");
    } else {
        printf("partition %-10s trial %d: cut group's last commit %.0f ms, "
               "others 10 steps on %.0f ms (from the split), whole %.0f ms "
               "after the heal\n",
               kind_names[kind], trial + 1, ms[LAST_COMMIT], ms[OTHER_STEPS],
               ms[WHOLE_AGAIN]);
    }
    fflush(stdout);
}

static void report(const bench_ft_opts *o, double (*v)[KINDS][MEASURES],
                   int trials)
{
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    if (!o->json) {
        printf("partition, %d trials, hold %d ms, load %.1f %.1f %.1f; ms, "
               "median (min-max)\n%-12s",
               trials, o->hold_ms, load[0], load[1], load[2], "fault");
        for (int m = 0; m < MEASURES; m++) {
            printf(" %24s", measure_titles[m]);
        }
        printf("\n");
    }
    for (int k = 0; k < KINDS; k++) {
        bench_ft_summary sm[MEASURES];
        for (int m = 0; m < MEASURES; m++) {
            double col[MAX_TRIALS];
            for (int t = 0; t < trials; t++) {
                col[t] = v[t][k][m];
            }
            sm[m] = bench_ft_summarize(col, (size_t)trials);
        }
        if (o->json) {
            printf("{\"bench\":\"ft\",\"what\":\"partition\",\"fault\":\"%s\","
                   "\"trials\":%d,\"hold_ms\":%d",
                   kind_names[k], trials, o->hold_ms);
            for (int m = 0; m < MEASURES; m++) {
                int stem = (int)strlen(measure_keys[m]) - 3; /* "_ms" */
                printf(",\"%.*s_p50_ms\":%.0f,\"%.*s_min_ms\":%.0f,"
                       "\"%.*s_max_ms\":%.0f",
                       stem, measure_keys[m], sm[m].p50, stem, measure_keys[m],
                       sm[m].min, stem, measure_keys[m], sm[m].max);
            }
            printf(",\"load1\":%.2f}\n", load[0]);
            continue;
        }
        printf("%-12s", kind_names[k]);
        for (int m = 0; m < MEASURES; m++) {
            char cell[48];
            snprintf(cell, sizeof(cell), "%.0f (%.0f-%.0f)", sm[m].p50,
                     sm[m].min, sm[m].max);
            printf(" %24s", cell);
        }
        printf("\n");
    }
    fflush(stdout);
}

/* ------------------------------------------------------------------ scene */

static int start_lighthouse(scene *s)
{
    char *argv[] = {s->hosts,     "exec",       s->name,  "0",        s->ftc,
                    "lighthouse", "--insecure", "--bind", s->lh_addr, NULL};
    return bench_ft_spawn_logged(s->dir, argv, "lighthouse.log", &s->lh);
}

/* Group i's `ftc run` on host i+1, its output (line-buffered by stdbuf) on
 * a pipe and in group<i>.log. */
static int start_launcher(scene *s, int i)
{
    char host[16], first[16], log[PATH_MAX];
    snprintf(host, sizeof(host), "%d", i + 1);
    snprintf(first, sizeof(first), "%d", i);
    snprintf(log, sizeof(log), "%s/group%d.log", s->dir, i);
    s->g[i].log = fopen(log, "w");
    if (s->g[i].log == NULL) {
        fprintf(stderr, "bench ft partition: %s: %s\n", log, strerror(errno));
        return -1;
    }
    char *argv[] = {s->hosts,
                    "exec",
                    s->name,
                    host,
                    "stdbuf",
                    "-oL",
                    s->ftc,
                    "run",
                    "--insecure",
                    "--show-events",
                    "--host",
                    s->addr[i + 1],
                    "--lighthouse",
                    s->lh_addr,
                    "--job",
                    "part",
                    "--replicas",
                    "1",
                    "--first-replica",
                    first,
                    "--total-replicas",
                    "3",
                    "--env",
                    "FTC_TIMEOUT_MS=2000",
                    "--",
                    s->trainer,
                    "--steps",
                    "100000000",
                    "--step-sleep-ms",
                    STEP_SLEEP_MS,
                    NULL};
    return bench_ft_spawn_piped(&s->g[i].p, s->hosts, argv, true);
}

static int start(scene *s)
{
    if (bench_ft_logdir_make(s->dir, sizeof(s->dir), "partition") != 0) {
        return -1;
    }
    char log[PATH_MAX];
    snprintf(log, sizeof(log), "%s/hosts.log", s->dir);
    s->hosts_log = fopen(log, "w");
    if (s->hosts_log == NULL) {
        fprintf(stderr, "bench ft partition: %s: %s\n", log, strerror(errno));
        return -1;
    }
    snprintf(s->name, sizeof(s->name), "pb%d", (int)(getpid() % 10000));
    s->hosts_up = true; /* `down` also undoes half an `up` */
    if (harness(s, "up", HOSTS, -1) != 0) {
        return -1;
    }
    for (int i = 0; i < HOSTS; i++) {
        if (harness(s, "addr", i, -1) != 0) {
            return -1;
        }
        snprintf(s->addr[i], sizeof(s->addr[i]), "%s", s->cmd_last);
    }
    snprintf(s->lh_addr, sizeof(s->lh_addr), "%s:%d", s->addr[0], LH_PORT);
    if (start_lighthouse(s) != 0) {
        return -1;
    }
    for (int i = 0; i < GROUPS; i++) {
        if (start_launcher(s, i) != 0) {
            return -1;
        }
    }
    s->training = true;
    return 0;
}

/* Ends every process and takes the hosts down; 0, or -1 when something
 * may be left behind (said on stderr). The logs stay when failed. The
 * launchers get SIGTERM first: they stop their trainers and remove their
 * run folders; SIGKILL after STOP_GRACE_MS. */
static int stop(scene *s, bool failed)
{
    s->training = false;
    s->ending = true;
    for (int i = 0; i < GROUPS; i++) {
        if (s->g[i].p.pid > 0) {
            kill(s->g[i].p.pid, SIGTERM);
        }
    }
    pump(s, launchers_ended, STOP_GRACE_MS);
    for (int i = 0; i < GROUPS; i++) {
        bench_ft_reap(&s->g[i].p);
        if (s->g[i].log != NULL) {
            fclose(s->g[i].log);
        }
    }
    bench_ft_end(&s->lh);
    bench_ft_reap(&s->cmd);
    int rc = 0;
    if (s->hosts_up) {
        rc = harness(s, "down", -1, -1);
        if (rc == 0 && harness(s, "left", -1, -1) == 0 &&
            s->cmd_last[0] != '\0') {
            fprintf(stderr, "bench ft partition: left behind: %s\n",
                    s->cmd_last);
            rc = -1;
        }
        if (rc != 0) {
            fprintf(stderr,
                    "bench ft partition: check `ip netns list`; %s down %s "
                    "removes the hosts\n",
                    s->hosts, s->name);
        }
    }
    if (s->hosts_log != NULL) {
        fclose(s->hosts_log);
    }
    bench_ft_logdir_close(s->dir, failed || rc != 0, "partition");
    return rc;
}

/* An executable file's absolute path into out; 0, or -1 after saying
 * what is wrong with it, what it is for and its option. */
static int executable(const char *path, const char *what, const char *option,
                      char *out)
{
    const char *wrong = realpath(path, out) == NULL ? strerror(errno)
                        : access(out, X_OK) != 0    ? "not executable"
                                                    : NULL;
    if (wrong != NULL) {
        fprintf(stderr, "bench ft partition: %s %s (%s): %s\n", what, path,
                option, wrong);
        return -1;
    }
    return 0;
}

/* What the bench needs before it touches anything: the harness, the
 * trainer, this ftc binary, root. 0, or -1 (message on stderr). */
static int check_needs(scene *s)
{
    if (executable(s->o->hosts_script, "the test-host harness",
                   "--hosts-script", s->hosts) != 0 ||
        executable(s->o->trainer, "the trainer", "--trainer", s->trainer) !=
            0) {
        return -1;
    }
    ssize_t n = readlink("/proc/self/exe", s->ftc, sizeof(s->ftc) - 1);
    if (n < 0) {
        fprintf(stderr, "bench ft partition: /proc/self/exe: %s\n",
                strerror(errno));
        return -1;
    }
    s->ftc[n] = '\0';
    if (geteuid() != 0) {
        fprintf(stderr, "bench ft partition: needs root (the test hosts "
                        "are network namespaces)\n");
        return -1;
    }
    return 0;
}

static void catch_stop_signals(struct sigaction old[2])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal; /* no SA_RESTART: poll() returns */
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &old[0]);
    sigaction(SIGTERM, &sa, &old[1]);
}

static void restore_stop_signals(const struct sigaction old[2])
{
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
}

int bench_ft_partition(const bench_ft_opts *o)
{
    scene *s = ftc__calloc(1, sizeof(*s));
    int trials = o->trials < MAX_TRIALS ? o->trials : MAX_TRIALS;
    double(*v)[KINDS][MEASURES] = ftc__calloc((size_t)trials, sizeof(*v));
    if (s == NULL || v == NULL) {
        fprintf(stderr, "bench ft partition: out of memory\n");
        ftc__free(s);
        ftc__free(v);
        return 1;
    }
    s->o = o;
    s->cmd.fd = -1;
    for (int i = 0; i < GROUPS; i++) {
        s->g[i].p.fd = -1;
    }
    int failed = check_needs(s) != 0;
    if (!failed) {
        struct sigaction old[2];
        catch_stop_signals(old);
        failed = start(s) != 0;
        for (int t = 0; !failed && t < trials; t++) {
            for (int k = 0; !failed && k < KINDS; k++) {
                failed = fault(s, k, v[t][k]);
                if (!failed) {
                    print_fault(o, t, k, v[t][k]);
                }
            }
        }
        failed = stop(s, failed) != 0 || failed;
        restore_stop_signals(old);
    }
    if (!failed) {
        report(o, v, trials);
    }
    ftc__free(v);
    ftc__free(s);
    return failed;
}
