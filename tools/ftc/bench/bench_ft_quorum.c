/* ftc bench ft, quorum: N replica groups (threads, a lighthouse client
 * each, as a group's leader would) join quorum after quorum on an
 * embedded lighthouse with default options, and heartbeat every 100 ms as
 * leaders do (one thread sends them all). A round's time is the time
 * between two answers one member gets. The last group leaves (goodbye)
 * and comes back (a new incarnation) --changes times: rounds whose quorum
 * id changed are the "change" samples, the others "fast". */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"

typedef struct member {
    bench_ft_cycle *c;
    const bench_ft_job *j;
    bench_ft_samples *fast, *change;
    int g;
    int incarnation; /* under c->mu, with away */
    bool away;
    ftc_lighthouse_client *cli;
    int64_t round;
    int64_t last_ns, last_qid;
    size_t last_n;
} member;

static void id_of(const member *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "group_%03d:%d", m->g, m->incarnation);
}

static int open_member(void *arg)
{
    member *m = arg;
    return ftc_lighthouse_client_create(m->j->lh_addr, NULL, &m->cli);
}

/* One round: join and wait for the quorum; records its sample. */
static int join(void *arg)
{
    member *m = arg;
    ftc_lighthouse_member mem;
    memset(&mem, 0, sizeof(mem));
    id_of(m, mem.replica_id, sizeof(mem.replica_id));
    snprintf(mem.address, sizeof(mem.address), "http://127.0.0.1:1");
    snprintf(mem.store_address, sizeof(mem.store_address), "127.0.0.1:1");
    mem.step = m->round;
    mem.world_size = 1;
    ftc_lighthouse_join_result jr;
    int rc = ftc_lighthouse_client_quorum(m->cli, &mem, 60000, &jr);
    int64_t now = bench_ft_now_ns();
    if (rc != 0) {
        fprintf(stderr, "bench ft quorum: group %d: %s\n", m->g,
                ftc_last_error());
        ftc_lighthouse_join_result_fini(&jr);
        return rc;
    }
    int64_t qid = jr.quorum.quorum_id;
    m->last_n = jr.quorum.n_members;
    ftc_lighthouse_join_result_fini(&jr);
    if (m->last_ns > 0 && atomic_load(&m->c->measuring)) {
        bench_ft_cycle_record(m->c, qid == m->last_qid ? m->fast : m->change,
                              (double)(now - m->last_ns) / 1e6);
    }
    m->last_ns = now;
    m->last_qid = qid;
    m->round++;
    return 0;
}

static bool everyone(void *arg)
{
    member *m = arg;
    return m->last_n == (size_t)m->c->groups;
}

static int leave(void *arg)
{
    member *m = arg;
    char id[64];
    pthread_mutex_lock(&m->c->mu);
    m->away = true;
    id_of(m, id, sizeof(id));
    pthread_mutex_unlock(&m->c->mu);
    return ftc_lighthouse_client_goodbye(m->cli, id, 60000, NULL);
}

/* Back as a new incarnation: its first round is not a step of the job. */
static int rejoin(void *arg)
{
    member *m = arg;
    pthread_mutex_lock(&m->c->mu);
    m->incarnation++;
    m->away = false;
    pthread_mutex_unlock(&m->c->mu);
    m->last_ns = 0;
    return 0;
}

/* ------------------------------------------------------------ heartbeats */

#define HEARTBEAT_MS 100

typedef struct beater {
    bench_ft_cycle *c;
    member *ms;
    const char *lh_addr;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* done */
    bool done;
} beater;

static void *beat_main(void *arg)
{
    beater *b = arg;
    ftc_lighthouse_client *cli = NULL;
    ftc_lighthouse_client_create(b->lh_addr, NULL, &cli);
    pthread_mutex_lock(&b->mu);
    while (cli != NULL && !b->done) {
        pthread_mutex_unlock(&b->mu);
        ftc__deadline next = ftc__deadline_in_ms(HEARTBEAT_MS);
        for (int g = 0; g < b->c->groups; g++) {
            char id[64];
            pthread_mutex_lock(&b->c->mu);
            bool away = b->ms[g].away;
            id_of(&b->ms[g], id, sizeof(id));
            pthread_mutex_unlock(&b->c->mu);
            if (!away) {
                ftc_lighthouse_client_heartbeat(cli, id, 1000, NULL);
            }
        }
        struct timespec ts = {next.ns / 1000000000, next.ns % 1000000000};
        pthread_mutex_lock(&b->mu);
        while (!b->done && !ftc__deadline_expired(next)) {
            pthread_cond_timedwait(&b->cv, &b->mu, &ts);
        }
    }
    pthread_mutex_unlock(&b->mu);
    ftc_lighthouse_client_destroy(cli);
    return NULL;
}

static void close_member(void *arg)
{
    member *m = arg;
    if (m->cli != NULL) {
        leave(m);
        ftc_lighthouse_client_destroy(m->cli);
    }
}

static void report(const bench_ft_opts *o, int groups, const char *kind,
                   bench_ft_samples *s)
{
    static bool header;
    bench_ft_summary sm = bench_ft_summarize(s->v, s->n);
    if (o->json) {
        printf("{\"bench\":\"ft\",\"what\":\"quorum\",\"groups\":%d,"
               "\"kind\":\"%s\",\"samples\":%zu,\"p50_ms\":%.3f,"
               "\"p99_ms\":%.3f}\n",
               groups, kind, sm.n, sm.p50, sm.p99);
    } else {
        if (!header) {
            printf("%-7s %6s %-7s %7s %9s %9s\n", "quorum", "groups", "kind",
                   "samples", "p50_ms", "p99_ms");
            header = true;
        }
        printf("%-7s %6d %-7s %7zu %9.3f %9.3f\n", "quorum", groups, kind, sm.n,
               sm.p50, sm.p99);
    }
    fflush(stdout);
}

int bench_ft_quorum(const bench_ft_opts *o, int groups)
{
    bench_ft_job j;
    if (bench_ft_job_start(&j, 0, 0) != 0) {
        return 1;
    }
    bench_ft_samples fast = {0}, change = {0};
    bench_ft_cycle c = {.o = o,
                        .groups = groups,
                        .open = open_member,
                        .round = join,
                        .everyone = everyone,
                        .leave = leave,
                        .rejoin = rejoin,
                        .close = close_member,
                        .mu = PTHREAD_MUTEX_INITIALIZER,
                        .cv = PTHREAD_COND_INITIALIZER};
    member *ms = ftc__calloc((size_t)groups, sizeof(*ms));
    for (int g = 0; ms != NULL && g < groups; g++) {
        ms[g] = (member){
            .c = &c, .j = &j, .fast = &fast, .change = &change, .g = g};
    }
    beater b = {.c = &c, .ms = ms, .lh_addr = j.lh_addr};
    pthread_mutex_init(&b.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_t bt;
    bool beating =
        ms != NULL && ftc__thread_start(&bt, "bench-beat", beat_main, &b) == 0;
    int failed = !beating || bench_ft_cycle_run(&c, ms, sizeof(*ms)) != 0;
    pthread_mutex_lock(&b.mu);
    b.done = true;
    pthread_cond_broadcast(&b.cv);
    pthread_mutex_unlock(&b.mu);
    if (beating) {
        pthread_join(bt, NULL);
    }
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
    if (failed) {
        fprintf(stderr, "bench ft quorum: %d groups failed\n", groups);
    } else {
        report(o, groups, "fast", &fast);
        if (groups > 1) {
            report(o, groups, "change", &change);
        }
    }
    bench_ft_samples_free(&fast);
    bench_ft_samples_free(&change);
    ftc__free(ms);
    bench_ft_job_stop(&j);
    return failed;
}
