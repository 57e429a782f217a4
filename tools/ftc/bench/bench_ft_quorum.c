/* ftc bench ft, quorum: N replica groups' leaders, simulated by one thread
 * with an event loop (libcurl multi), join quorum after quorum on an
 * embedded lighthouse with default options but a 30 s heartbeat timeout
 * (HEARTBEAT_TIMEOUT_MS). Each keeps the roster version
 * it was last sent, as the C client does, so it gets compact answers; it
 * parses every answer and checks it against what it holds. Every group
 * heartbeats every 100 ms as a manager's leader does (a pool of
 * connections sized to that rate sends them, spread over the interval;
 * the interval reached is reported). One thread rather
 * than a thread per group, so that 1,024 or 4,096 groups measure the
 * lighthouse and not the scheduler.
 *
 * A round's time is the time between two answers one member gets. The
 * last group leaves (goodbye) and comes back (a new incarnation, holding
 * no roster) --changes times: rounds whose quorum id changed are the
 * "change" samples, the others "fast". The lighthouse's CPU per round is
 * the process's CPU less this thread's, over the fast rounds. */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <time.h>

#include "base/base_int.h"
#include "bench/bench_ft.h"
#include "ft/lighthouse/lighthouse_json.h"

#define HEARTBEAT_MS 100
#define TICK_MS 10
#define WARM_ROUNDS 3  /* rounds with everyone in before measuring */
#define ALONE_ROUNDS 3 /* rounds the others run while the mover is away */
#define STALL_MS 60000 /* no answer for this long: the run failed */
/* The job's heartbeat timeout. The lighthouse's default (500 ms) mistakes
 * the one thread's backlog while it reads a round of full answers (n
 * answers of n members: at 4,096 groups 2.5 GB) for thousands of deaths;
 * on real hosts each leader reads its own answer. */
#define HEARTBEAT_TIMEOUT_MS 30000

typedef struct sim sim;

/* One easy handle and what it carries. */
typedef struct call {
    sim *s;
    int group; /* -1: a heartbeat or the goodbye */
    int beats; /* a heartbeat: the group it is for */
    CURL *easy;
    char body[512];
    ftc__buf answer;
    bool busy;
} call;

typedef struct group {
    call join;
    int incarnation;
    bool away;
    int64_t step;
    int64_t roster; /* the version held; 0: none */
    size_t roster_n;
    int64_t rounds;
    int64_t last_ns, last_qid;
    size_t last_n;
} group;

struct sim {
    const bench_ft_opts *o;
    int n;
    CURLM *multi;
    struct curl_slist *headers;
    char base[96];
    group *gs;
    call *hb; /* the heartbeat pool */
    int n_hb;
    int64_t beats_sent, window_ns; /* over the fast rounds */
    int hb_next;                   /* the next group to beat */
    call bye;
    bool bye_due; /* the mover left; its goodbye waits for its heartbeat */
    int epfd;
    int64_t curl_due_ns; /* libcurl's timer; -1: none */
    int beats_done;      /* heartbeats answered */
    bench_ft_samples fast, change;
    /* The script, driven by the last group (the mover). */
    bool measuring, done;
    int warm, fast_left, changes_left, back_rounds;
    int64_t away_until; /* group 0's rounds */
    double lh_cpu_s, sim_cpu_s;
    int64_t cpu_rounds;
    struct timespec cpu_proc0, cpu_self0;
    int failed;
};

static void id_of(const sim *s, int g, char *buf, size_t cap)
{
    snprintf(buf, cap, "group_%04d:%d", g, s->gs[g].incarnation);
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    call *c = arg;
    return ftc__buf_append(&c->answer, p, size * n) == 0 ? size * n : 0;
}

static int post(sim *s, call *c, const char *path)
{
    char url[160];
    snprintf(url, sizeof(url), "%s/v1/jobs/default/%s", s->base, path);
    if (c->easy == NULL) {
        c->easy = curl_easy_init();
        if (c->easy == NULL) {
            return FTC_ENOMEM;
        }
        curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c);
        curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, s->headers);
        curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, (long)STALL_MS);
        curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
    }
    curl_easy_setopt(c->easy, CURLOPT_URL, url);
    curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, c->body);
    ftc__buf_reset(&c->answer);
    c->busy = true;
    return curl_multi_add_handle(s->multi, c->easy) == CURLM_OK ? 0
                                                                : FTC_ENOMEM;
}

static int join(sim *s, int g)
{
    group *gr = &s->gs[g];
    char id[64];
    id_of(s, g, id, sizeof(id));
    snprintf(gr->join.body, sizeof(gr->join.body),
             "{\"member\": {\"replica_id\": \"%s\", \"address\": "
             "\"http://127.0.0.1:1\", \"store_address\": \"127.0.0.1:1\", "
             "\"step\": %" PRId64 ", \"world_size\": 1}, \"timeout_ms\": "
             "%d, \"roster\": %" PRId64 "}",
             id, gr->step, STALL_MS, gr->roster);
    return post(s, &gr->join, "quorum");
}

/* ------------------------------------------------------------- answers */

/* The integer after the first "key": at or after from; -1 if none. */
static int64_t scan_int(const char *p, const char *end, const char *key,
                        const char **at)
{
    size_t k = strlen(key);
    const char *f = memmem(p, (size_t)(end - p), key, k);
    if (f == NULL) {
        return -1;
    }
    *at = f + k;
    return strtoll(f + k, NULL, 10);
}

/* A full answer as the simulated leaders other than group 0 read it: the
 * ids, the member count and the largest step, found in the text without
 * building the member list. On real hosts every leader parses its own
 * answer at the same time; one thread parsing n answers of n members
 * would charge the round with n times one leader's work. */
static int scan_full(group *gr, const ftc__buf *b, int64_t *qid, size_t *n,
                     int64_t *max_step)
{
    const char *p = (const char *)ftc__buf_begin(b);
    const char *end = p + ftc__buf_size(b);
    const char *at = p;
    *qid = scan_int(p, end, "\"quorum_id\":", &at);
    gr->roster = scan_int(p, end, "\"roster\":", &at);
    size_t count = 0;
    for (const char *q = p; q < end;) {
        int64_t step = scan_int(q, end, "\"step\":", &at);
        if (step < 0) {
            break;
        }
        count++;
        *max_step = step > *max_step ? step : *max_step;
        q = at;
    }
    gr->roster_n = count;
    *n = count;
    return *qid > 0 && gr->roster > 0
               ? 0
               : ftc__seterr(FTC_EPROTO, "a full answer without quorum_id "
                                         "or roster");
}

/* What a leader checks of an answer: a full quorum is parsed whole and
 * its roster version kept; a compact one must be for the roster held, a
 * delta one start from it (its new version is kept; the simulated leaders
 * keep no member lists, so only the counts are checked). *max_step is the
 * quorum's: a member behind it heals to it. */
static int read_answer(group *gr, const ftc__buf *b, int64_t *qid, size_t *n,
                       int64_t *max_step)
{
    json_t *j;
    int rc = ftc__lhj_parse_object((const char *)ftc__buf_begin(b),
                                   ftc__buf_size(b), &j);
    if (rc != 0) {
        return rc;
    }
    const json_t *delta = json_object_get(j, "delta");
    const json_t *compact =
        delta != NULL ? delta : json_object_get(j, "compact");
    if (compact != NULL) {
        int64_t v = 0, members = 0, base = gr->roster;
        rc = ftc__lhj_get_int(compact, "roster", true, 1, INT64_MAX, &v);
        if (rc == 0 && delta != NULL) {
            rc = ftc__lhj_get_int(delta, "base", true, 1, INT64_MAX, &base);
        }
        if (rc == 0 && delta != NULL && base != gr->roster) {
            rc = ftc__seterr(FTC_EPROTO,
                             "delta answer from roster %" PRId64
                             ", held %" PRId64,
                             base, gr->roster);
        }
        if (rc == 0 && delta != NULL) {
            size_t gone = json_array_size(json_object_get(delta, "removed"));
            size_t came = json_array_size(json_object_get(delta, "added"));
            gr->roster = v;
            gr->roster_n = gr->roster_n - gone + came;
        }
        rc = rc != 0
                 ? rc
                 : ftc__lhj_get_int(compact, "n", true, 0, INT64_MAX, &members);
        rc = rc != 0 ? rc
                     : ftc__lhj_get_int(compact, "quorum_id", true, 0,
                                        INT64_MAX, qid);
        rc = rc != 0 ? rc
                     : ftc__lhj_get_int(compact, "step", true, 0, INT64_MAX,
                                        max_step);
        if (rc == 0 && (v != gr->roster || (size_t)members != gr->roster_n)) {
            rc = ftc__seterr(FTC_EPROTO,
                             "compact answer for roster %" PRId64 " of %" PRId64
                             " members",
                             v, members);
        }
        *n = gr->roster_n;
    } else {
        ftc__quorum q;
        rc = ftc__lhj_quorum(json_object_get(j, "quorum"),
                             FTC__QUORUM_MAX_REPLICAS_CEIL, &q);
        rc = rc != 0 ? rc
                     : ftc__lhj_get_int(j, "roster", true, 1, INT64_MAX,
                                        &gr->roster);
        gr->roster_n = q.n;
        *qid = q.quorum_id;
        *n = q.n;
        for (size_t i = 0; i < q.n; i++) {
            if (q.members[i].step > *max_step) {
                *max_step = q.members[i].step;
            }
        }
        ftc__quorum_fini(&q);
    }
    json_decref(j);
    return rc;
}

static double seconds(struct timespec t)
{
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void cpu_now(struct timespec *proc, struct timespec *self)
{
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, proc);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, self);
}

/* The mover's goodbye, once no heartbeat of it is in flight: one that
 * arrived after the goodbye would make the lighthouse wait for it. */
static int say_goodbye(sim *s)
{
    for (int k = 0; k < s->n_hb; k++) {
        if (s->hb[k].busy && s->hb[k].beats == s->n - 1) {
            return 0;
        }
    }
    if (!s->bye_due) {
        return 0;
    }
    s->bye_due = false;
    return post(s, &s->bye, "goodbye");
}

/* The mover's script after each of its rounds. */
static int script(sim *s, group *mover)
{
    if (!s->measuring) {
        s->warm = mover->last_n == (size_t)s->n ? s->warm + 1 : 0;
        if (s->warm >= WARM_ROUNDS) {
            s->measuring = true;
            s->fast_left = s->o->steps;
            cpu_now(&s->cpu_proc0, &s->cpu_self0);
            s->beats_sent = 0;
            s->window_ns = bench_ft_now_ns();
        }
        return 0;
    }
    if (s->fast_left > 0 && --s->fast_left == 0) {
        struct timespec p, t;
        cpu_now(&p, &t);
        s->sim_cpu_s = seconds(t) - seconds(s->cpu_self0);
        s->lh_cpu_s = seconds(p) - seconds(s->cpu_proc0) - s->sim_cpu_s;
        s->cpu_rounds = s->o->steps;
        s->window_ns = bench_ft_now_ns() - s->window_ns;
    }
    if (s->fast_left > 0 || s->back_rounds-- > 1) {
        return 0;
    }
    if (s->changes_left == 0 || s->n == 1) {
        s->done = true;
        return 0;
    }
    s->changes_left--;
    mover->away = true;
    s->away_until = s->gs[0].rounds + ALONE_ROUNDS;
    /* Named now: the goodbye may wait, and must not name the next
     * incarnation. */
    char id[64];
    id_of(s, s->n - 1, id, sizeof(id));
    snprintf(s->bye.body, sizeof(s->bye.body), "{\"replica_id\": \"%s\"}", id);
    s->bye_due = true;
    return say_goodbye(s);
}

static int on_join(sim *s, int g, long status)
{
    group *gr = &s->gs[g];
    int64_t now = bench_ft_now_ns();
    if (status != 200) {
        return ftc__seterr(FTC_EPROTO, "group %d: join answered %ld: %.*s", g,
                           status, (int)ftc__buf_size(&gr->join.answer),
                           (const char *)ftc__buf_begin(&gr->join.answer));
    }
    int64_t qid = 0, max_step = 0;
    size_t n = 0;
    const void *text = ftc__buf_begin(&gr->join.answer);
    size_t len = ftc__buf_size(&gr->join.answer);
    bool full = memmem(text, len, "\"compact\":", 10) == NULL &&
                memmem(text, len, "\"delta\":", 8) == NULL;
    int rc = g != 0 && full
                 ? scan_full(gr, &gr->join.answer, &qid, &n, &max_step)
                 : read_answer(gr, &gr->join.answer, &qid, &n, &max_step);
    if (rc != 0) {
        return ftc__adderr(rc, "group %d", g);
    }
    if (gr->last_ns > 0 && s->measuring) {
        rc = bench_ft_add(qid == gr->last_qid ? &s->fast : &s->change,
                          (double)(now - gr->last_ns) / 1e6);
    }
    gr->last_ns = now;
    gr->last_qid = qid;
    gr->last_n = n;
    gr->step = max_step + 1; /* healed if behind, then one step */
    gr->rounds++;
    if (rc == 0 && g == s->n - 1) {
        rc = script(s, gr);
    }
    if (rc == 0 && g == 0 && s->gs[s->n - 1].away && !s->bye_due &&
        !s->bye.busy && gr->rounds >= s->away_until) {
        /* The mover comes back as a new incarnation holding nothing. */
        group *m = &s->gs[s->n - 1];
        m->away = false;
        m->incarnation++;
        m->roster = 0;
        m->last_ns = 0;
        s->back_rounds = ALONE_ROUNDS;
        rc = join(s, s->n - 1);
    }
    return rc != 0 || s->done || gr->away ? rc : join(s, g);
}

/* ---------------------------------------------------------- heartbeats */

/* Beats the next due groups, as far as the pool's free connections
 * allow. */
static int beat(sim *s, int due)
{
    for (int k = 0; k < s->n_hb && due > 0; k++) {
        call *c = &s->hb[k];
        if (c->busy) {
            continue;
        }
        int g = s->hb_next;
        s->hb_next = (s->hb_next + 1) % s->n;
        due--;
        if (s->gs[g].away) {
            continue;
        }
        char id[64];
        id_of(s, g, id, sizeof(id));
        snprintf(c->body, sizeof(c->body), "{\"replica_id\": \"%s\"}", id);
        c->beats = g;
        s->beats_sent++;
        int rc = post(s, c, "heartbeat");
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- loop */

static int finished(sim *s, CURLMsg *msg)
{
    /* msg is not valid once its handle is removed. */
    CURL *easy = msg->easy_handle;
    CURLcode result = msg->data.result;
    call *c = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&c);
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(s->multi, easy);
    c->busy = false;
    if (result != CURLE_OK) {
        return ftc__seterr(FTC_EPEER, "%s: %s",
                           c->group >= 0 ? "join" : "heartbeat",
                           curl_easy_strerror(result));
    }
    if (c->group >= 0) {
        return on_join(s, c->group, status);
    }
    if (status != 200) {
        return ftc__seterr(FTC_EPROTO, "%s answered %ld",
                           c == &s->bye ? "goodbye" : "heartbeat", status);
    }
    s->beats_done++;
    return say_goodbye(s);
}

/* libcurl's socket interface on epoll: each event costs the sockets it
 * names, where curl_multi_perform walks every transfer (O(n) per wake, so
 * O(n^2) per round for the simulator itself). */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *arg,
                     void *socketp)
{
    (void)easy;
    (void)socketp;
    sim *s = arg;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    struct epoll_event ev = {.data.fd = fd};
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) |
                (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev) != 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *arg)
{
    (void)multi;
    sim *s = arg;
    s->curl_due_ns =
        timeout_ms < 0 ? -1 : bench_ft_now_ns() + timeout_ms * 1000000LL;
    return 0;
}

static int drain(sim *s, int64_t *last_answer)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(s->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE) {
            continue;
        }
        *last_answer = bench_ft_now_ns();
        int rc = finished(s, msg);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* Every group heartbeats once before any joins, so that the first
 * quorum waits for all of them instead of forming with the first few
 * (which would make every early round a change). Then the joins, in a
 * shuffled order (fixed seed): replica ids arriving in sorted order would
 * hide the cost of inserting into the lighthouse's sorted participant
 * table, and each later round keeps the first's order. */
static int greet_then_join(sim *s, bool *joined)
{
    if (s->beats_done < s->n) {
        return beat(s, s->n);
    }
    *joined = true;
    int *order = ftc__malloc((size_t)s->n * sizeof(*order));
    if (order == NULL) {
        return ftc__seterr(FTC_ENOMEM, "join order");
    }
    uint64_t seed = 19;
    for (int k = 0; k < s->n; k++) {
        int j = (int)(ftc__splitmix64(&seed) % (uint64_t)(k + 1));
        order[k] = order[j];
        order[j] = k;
    }
    int rc = 0;
    for (int k = 0; rc == 0 && k < s->n; k++) {
        rc = join(s, order[k]);
    }
    ftc__free(order);
    return rc;
}

static int run(sim *s)
{
    bool joined = false;
    int64_t next_tick = bench_ft_now_ns();
    int64_t last_answer = next_tick;
    int running;
    struct epoll_event evs[256];
    int per_tick = (s->n * TICK_MS + HEARTBEAT_MS - 1) / HEARTBEAT_MS;
    while (!s->done) {
        int64_t now = bench_ft_now_ns();
        if (!joined) {
            int rc = greet_then_join(s, &joined);
            if (rc != 0) {
                return rc;
            }
        } else if (now >= next_tick) {
            int rc = beat(s, per_tick);
            if (rc != 0) {
                return rc;
            }
            next_tick = now + TICK_MS * 1000000LL;
        }
        if (s->curl_due_ns >= 0 && bench_ft_now_ns() >= s->curl_due_ns) {
            s->curl_due_ns = -1;
            curl_multi_socket_action(s->multi, CURL_SOCKET_TIMEOUT, 0,
                                     &running);
        }
        int rc = drain(s, &last_answer);
        if (rc != 0) {
            return rc;
        }
        if (bench_ft_now_ns() - last_answer > STALL_MS * 1000000LL) {
            return ftc__seterr(FTC_ETIMEDOUT, "no answer in %d ms", STALL_MS);
        }
        int64_t until = s->curl_due_ns >= 0 && s->curl_due_ns < next_tick
                            ? s->curl_due_ns
                            : next_tick;
        int64_t wait = (until - bench_ft_now_ns()) / 1000000;
        int k = epoll_wait(s->epfd, evs, 256, wait > 0 ? (int)wait : 0);
        for (int i = 0; i < k; i++) {
            int flags =
                (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(s->multi, evs[i].data.fd, flags, &running);
        }
    }
    return 0;
}

static void free_call(sim *s, call *c)
{
    if (c->easy != NULL) {
        if (c->busy) {
            curl_multi_remove_handle(s->multi, c->easy);
        }
        curl_easy_cleanup(c->easy);
    }
    ftc__buf_free(&c->answer);
}

/* -------------------------------------------------------------- report */

static void report(const bench_ft_opts *o, const sim *s, const char *kind,
                   bench_ft_samples *v)
{
    static bool header;
    bench_ft_summary sm = bench_ft_summarize(v->v, v->n);
    bool fast = strcmp(kind, "fast") == 0;
    double lh = fast ? s->lh_cpu_s * 1e3 / (double)s->cpu_rounds : 0;
    double cl = fast ? s->sim_cpu_s * 1e3 / (double)s->cpu_rounds : 0;
    /* Each group's mean heartbeat interval over the fast rounds. */
    double hb = s->beats_sent > 0 ? (double)s->window_ns / 1e6 * (double)s->n /
                                        (double)s->beats_sent
                                  : 0;
    if (o->json) {
        printf("{\"bench\":\"ft\",\"what\":\"quorum\",\"groups\":%d,"
               "\"kind\":\"%s\",\"samples\":%zu,\"p50_ms\":%.3f,"
               "\"p99_ms\":%.3f",
               s->n, kind, sm.n, sm.p50, sm.p99);
        if (fast) {
            printf(",\"lighthouse_cpu_ms_per_round\":%.3f,"
                   "\"clients_cpu_ms_per_round\":%.3f,"
                   "\"heartbeat_interval_ms\":%.1f",
                   lh, cl, hb);
        }
        printf("}\n");
    } else {
        if (!header) {
            printf("%-7s %6s %-7s %7s %9s %9s %9s %9s %7s\n", "quorum",
                   "groups", "kind", "samples", "p50_ms", "p99_ms", "lh_cpu",
                   "cl_cpu", "hb_ms");
            header = true;
        }
        printf("%-7s %6d %-7s %7zu %9.3f %9.3f", "quorum", s->n, kind, sm.n,
               sm.p50, sm.p99);
        if (fast) {
            printf(" %9.3f %9.3f %7.1f", lh, cl, hb);
        }
        printf("\n");
    }
    fflush(stdout);
}

int bench_ft_quorum(const bench_ft_opts *o, int groups)
{
    bench_ft_job j;
    if (bench_ft_job_start(&j, 0, 0, HEARTBEAT_TIMEOUT_MS) != 0) {
        return 1;
    }
    sim s = {.o = o, .n = groups, .changes_left = o->changes, .epfd = -1};
    snprintf(s.base, sizeof(s.base), "http://%s", j.lh_addr);
    s.multi = curl_multi_init();
    s.headers = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *h =
        s.headers != NULL ? curl_slist_append(s.headers, "Expect:") : NULL;
    s.gs = ftc__calloc((size_t)groups, sizeof(*s.gs));
    int rc = s.multi == NULL || h == NULL || s.gs == NULL ? FTC_ENOMEM : 0;
    for (int g = 0; rc == 0 && g < groups; g++) {
        s.gs[g].join = (call){.s = &s, .group = g};
        ftc__buf_init(&s.gs[g].join.answer, 64u << 20);
    }
    /* Twice the beats due per tick: a connection whose answer has not
     * come back by the next tick cannot send then. */
    s.n_hb = 2 * ((groups * TICK_MS + HEARTBEAT_MS - 1) / HEARTBEAT_MS);
    s.hb = ftc__calloc((size_t)s.n_hb, sizeof(*s.hb));
    rc = rc == 0 && s.hb == NULL ? FTC_ENOMEM : rc;
    for (int k = 0; s.hb != NULL && k < s.n_hb; k++) {
        s.hb[k] = (call){.s = &s, .group = -1, .beats = -1};
        ftc__buf_init(&s.hb[k].answer, 1u << 20);
    }
    s.bye = (call){.s = &s, .group = -1, .beats = -1};
    ftc__buf_init(&s.bye.answer, 1u << 20);
    s.curl_due_ns = -1;
    s.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (rc == 0 && s.epfd < 0) {
        rc = ftc__seterr(FTC_ESYS, "epoll_create1");
    }
    if (rc == 0) {
        curl_multi_setopt(s.multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(s.multi, CURLMOPT_SOCKETDATA, &s);
        curl_multi_setopt(s.multi, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(s.multi, CURLMOPT_TIMERDATA, &s);
        rc = run(&s);
    }
    if (rc != 0) {
        fprintf(stderr, "bench ft quorum: %d groups failed: %s\n", groups,
                ftc_last_error());
    } else {
        report(o, &s, "fast", &s.fast);
        if (groups > 1) {
            report(o, &s, "change", &s.change);
        }
    }
    for (int g = 0; s.gs != NULL && g < groups; g++) {
        free_call(&s, &s.gs[g].join);
    }
    for (int k = 0; s.hb != NULL && k < s.n_hb; k++) {
        free_call(&s, &s.hb[k]);
    }
    ftc__free(s.hb);
    free_call(&s, &s.bye);
    ftc__free(s.gs);
    curl_slist_free_all(s.headers);
    curl_multi_cleanup(s.multi);
    if (s.epfd >= 0) {
        close(s.epfd);
    }
    bench_ft_samples_free(&s.fast);
    bench_ft_samples_free(&s.change);
    bench_ft_job_stop(&j);
    return rc != 0;
}
