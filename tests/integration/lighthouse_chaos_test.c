/* The lighthouse with real processes dying, stopping and restarting:
 * kill -9 of a member pushes member_lost/disconnect to every watcher,
 * SIGSTOP pushes member_lost/heartbeat at the timeout and SIGCONT brings
 * the member back, and a lighthouse killed and restarted on its port is
 * rejoined under a new epoch without the members seeing an error. */
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lighthouse_kit.h"
#include "testkit.h"

/* ------------------------------------------------------ the member role */

static int log_fd = -1;

#define say(...) tk_write_line(log_fd, __VA_ARGS__)

typedef struct beat {
    ftc_lighthouse_client *c;
    const char *id;
} beat;

static void *heartbeat_main(void *arg)
{
    beat *b = arg;
    for (;;) {
        ftc_lighthouse_client_heartbeat(b->c, b->id, 2000, NULL);
        tk_pause_ms(100); /* the manager's heartbeat period */
    }
    return NULL;
}

/* A replica group's manager, reduced to its lighthouse calls: heartbeat
 * every 100 ms; each step join, then watch for step_ms, logging every
 * quorum and member_lost. Runs until killed.
 * argv: addr job replica_id log step_ms */
static int member_role(int argc, char **argv)
{
    if (argc != 6) {
        return 2;
    }
    const char *addr = argv[1], *id = argv[3];
    int64_t step_ms = strtoll(argv[5], NULL, 10);
    log_fd = open(argv[4], O_WRONLY | O_CREAT | O_APPEND, 0644);
    ftc_lighthouse_client_opts o;
    ftc_lighthouse_client_opts_init(&o);
    o.job = argv[2];
    ftc_lighthouse_client *c;
    if (log_fd < 0 || ftc_lighthouse_client_create(addr, &o, &c) != 0) {
        return 3;
    }
    beat b = {c, id};
    pthread_t t;
    pthread_create(&t, NULL, heartbeat_main, &b);
    uint32_t epoch = 0;
    uint64_t since = 0;
    for (int64_t step = 0;; step++) {
        ftc_lighthouse_member m = lt_member(id, step);
        ftc_lighthouse_join_result r;
        int rc = ftc_lighthouse_client_quorum(c, &m, 30000, &r);
        if (rc != 0) {
            say("error %s %s", ftc_err_name(rc), ftc_last_error());
            ftc_lighthouse_join_result_fini(&r);
            continue;
        }
        char ids[1024] = "";
        for (size_t i = 0; i < r.quorum.n_members; i++) {
            strncat(ids, " ", sizeof(ids) - strlen(ids) - 1);
            strncat(ids, r.quorum.members[i].replica_id,
                    sizeof(ids) - strlen(ids) - 1);
        }
        say("quorum %lld%s", (long long)r.quorum.quorum_id, ids);
        ftc_lighthouse_join_result_fini(&r);
        ftc_lighthouse_watch_result w;
        if (ftc_lighthouse_client_watch(c, id, epoch, since, step_ms, &w) !=
            0) {
            continue;
        }
        for (size_t i = 0; i < w.n_events; i++) {
            const ftc_lighthouse_event *e = &w.events[i];
            if (e->kind == FTC_LIGHTHOUSE_EVENT_MEMBER_LOST) {
                say("lost %s %d %d", e->replica_id, (int)e->cause,
                    (int)e->in_quorum);
            }
        }
        epoch = w.epoch;
        since = w.event_seq;
        ftc_lighthouse_watch_result_fini(&w);
    }
}

/* ------------------------------------------------------------- parent */

static bool file_has(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return false;
    }
    char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

typedef struct group {
    tk_child kids[3];
    char logs[3][512];
    char step[32];
} group;

static void spawn_members(group *g, const char *addr, int64_t step_ms)
{
    snprintf(g->step, sizeof(g->step), "%lld", (long long)tk_ms(step_ms));
    for (int i = 0; i < 3; i++) {
        char id[8];
        snprintf(id, sizeof(id), "m%d", i);
        snprintf(g->logs[i], sizeof(g->logs[i]), "%s/%s.log", tk_tmpdir(), id);
        char *args[] = {(char *)addr, "default", id, g->logs[i], g->step, NULL};
        tk_spawn(&g->kids[i], "member", args, NULL);
    }
}

static void stop_members(group *g)
{
    for (int i = 0; i < 3; i++) {
        tk_signal(&g->kids[i], SIGCONT);
        tk_signal(&g->kids[i], SIGKILL);
    }
    tk_reap(g->kids, 3, 10000);
}

/* The members of the job's current quorum, as " m0 m1" (sorted). */
static void quorum_ids(const char *addr, char *out, size_t cap)
{
    out[0] = '\0';
    char *text = NULL;
    if (lt_http(addr, "GET", "/v1/jobs/default/status", NULL, NULL, &text) !=
        200) {
        free(text); /* no job yet */
        return;
    }
    json_t *st = json_loads(text, 0, NULL);
    free(text);
    size_t i;
    json_t *m;
    json_array_foreach(
        json_object_get(json_object_get(st, "quorum"), "members"), i, m)
    {
        strncat(out, " ", cap - strlen(out) - 1);
        strncat(out, json_string_value(json_object_get(m, "replica_id")),
                cap - strlen(out) - 1);
    }
    json_decref(st);
}

static bool quorum_is(const char *addr, const char *ids)
{
    char got[256];
    quorum_ids(addr, got, sizeof(got));
    return strcmp(got, ids) == 0;
}

static bool is_watching(const char *addr, const char *id)
{
    json_t *st = lt_get_json(addr, "/v1/jobs/default/status");
    bool yes = false;
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(st, "heartbeats"), i, h)
    {
        if (strcmp(json_string_value(json_object_get(h, "replica_id")), id) ==
            0) {
            yes = json_is_true(json_object_get(h, "watching"));
        }
    }
    json_decref(st);
    return yes;
}

/* The parent's own watcher: collects events until one matches. */
typedef struct observer {
    ftc_lighthouse_client *c;
    const char *victim;
    ftc_lighthouse_event_kind kind;
    uint32_t epoch;
    uint64_t since;
    int rc;
    ftc_lighthouse_lost_cause cause;
    bool in_quorum;
    int64_t seen_ms;
    pthread_t t;
} observer;

static void *observe_main(void *arg)
{
    observer *o = arg;
    int64_t end = tk_now_ms() + tk_ms(30000);
    while (tk_now_ms() < end) {
        ftc_lighthouse_watch_result w;
        o->rc = ftc_lighthouse_client_watch(o->c, NULL, o->epoch, o->since,
                                            tk_ms(30000), &w);
        if (o->rc != 0) {
            return NULL;
        }
        for (size_t i = 0; i < w.n_events; i++) {
            const ftc_lighthouse_event *e = &w.events[i];
            if (e->kind == o->kind && strcmp(e->replica_id, o->victim) == 0) {
                o->seen_ms = tk_now_ms();
                o->cause = e->cause;
                o->in_quorum = e->in_quorum;
                ftc_lighthouse_watch_result_fini(&w);
                return NULL;
            }
        }
        o->since = w.event_seq;
        ftc_lighthouse_watch_result_fini(&w);
    }
    o->rc = FTC_ETIMEDOUT;
    return NULL;
}

static void observe(observer *o, ftc_lighthouse_client *c, const char *victim)
{
    memset(o, 0, sizeof(*o));
    o->c = c;
    o->victim = victim;
    o->kind = FTC_LIGHTHOUSE_EVENT_MEMBER_LOST;
    /* A watch with no epoch answers at once with the current position. */
    ftc_lighthouse_watch_result w;
    TK_OK(ftc_lighthouse_client_watch(c, NULL, 0, 0, tk_ms(5000), &w));
    o->epoch = w.epoch;
    o->since = w.event_seq;
    ftc_lighthouse_watch_result_fini(&w);
    assert_int_equal(pthread_create(&o->t, NULL, observe_main, o), 0);
}

/* An embedded lighthouse (default timings), a client of it, and three
 * members m0..m2 in one quorum. */
typedef struct scene {
    ftc_lighthouse *lh;
    char addr[64];
    ftc_lighthouse_client *c;
    group g;
} scene;

static void scene_start(scene *sc, int64_t step_ms)
{
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    /* The first quorum waits for all three, however late one starts;
     * then any survivor may go on alone. */
    o.min_replicas = 3;
    TK_OK(ftc_lighthouse_create(&o, &sc->lh));
    TK_OK(ftc_lighthouse_address(sc->lh, sc->addr, sizeof(sc->addr)));
    TK_OK(ftc_lighthouse_client_create(sc->addr, NULL, &sc->c));
    spawn_members(&sc->g, sc->addr, step_ms);
    TK_WAIT_UNTIL(quorum_is(sc->addr, " m0 m1 m2"), 20000);
    assert_int_equal(lt_http(sc->addr, "PUT", "/v1/jobs/default",
                             "{\"min_replicas\": 1}", NULL, NULL),
                     200);
}

static void scene_stop(scene *sc)
{
    stop_members(&sc->g);
    ftc_lighthouse_client_destroy(sc->c);
    ftc_lighthouse_destroy(sc->lh);
}

static void kill9_pushes_disconnect(void **state)
{
    (void)state;
    scene sc;
    /* Long watches: the victim is surely in one when killed. */
    scene_start(&sc, 30000);
    TK_WAIT_UNTIL(is_watching(sc.addr, "m2"), 20000);
    observer o;
    observe(&o, sc.c, "m2");
    TK_WAIT_UNTIL(lt_status_int(sc.addr, "default", "watches_waiting") == 4,
                  10000);
    int64_t t0 = tk_now_ms();
    tk_signal(&sc.g.kids[2], SIGKILL);
    pthread_join(o.t, NULL);
    TK_OK(o.rc);
    printf("kill -9 -> member_lost/disconnect at the observer in %lld ms\n",
           (long long)(o.seen_ms - t0));
    assert_int_equal(o.cause, FTC_LIGHTHOUSE_LOST_DISCONNECT);
    assert_true(o.in_quorum);
    /* A generous bound: far below the 500 ms heartbeat timeout is the
     * point, but this machine is shared. */
    assert_true(o.seen_ms - t0 < tk_ms(5000));
    /* Every surviving member's watch heard it too, and they went on
     * without m2. */
    TK_WAIT_UNTIL(file_has(sc.g.logs[0], "lost m2 1 1"), 10000);
    TK_WAIT_UNTIL(file_has(sc.g.logs[1], "lost m2 1 1"), 10000);
    TK_WAIT_UNTIL(quorum_is(sc.addr, " m0 m1"), 10000);
    scene_stop(&sc);
}

static void sigstop_pushes_heartbeat_then_rejoins(void **state)
{
    (void)state;
    scene sc;
    /* 1 s watches: the lighthouse answers each 100 ms before the
     * member's deadline (10%), a margin a loaded machine keeps; with
     * 100 ms ones it was 50 ms, and a member whose answer came later
     * dropped its connection, a spurious loss. */
    scene_start(&sc, 1000);
    observer o;
    observe(&o, sc.c, "m1");
    int64_t t0 = tk_now_ms();
    tk_signal(&sc.g.kids[1], SIGSTOP);
    pthread_join(o.t, NULL);
    TK_OK(o.rc);
    printf("SIGSTOP -> member_lost/heartbeat in %lld ms (timeout 500 ms)\n",
           (long long)(o.seen_ms - t0));
    assert_int_equal(o.cause, FTC_LIGHTHOUSE_LOST_HEARTBEAT);
    assert_true(o.in_quorum);
    /* Its last heartbeat was at most ~100 ms before the stop. */
    assert_true(o.seen_ms - t0 >= 350);
    TK_WAIT_UNTIL(quorum_is(sc.addr, " m0 m2"), 10000);
    TK_WAIT_UNTIL(file_has(sc.g.logs[0], "lost m1 2 1"), 10000);
    tk_signal(&sc.g.kids[1], SIGCONT);
    t0 = tk_now_ms();
    TK_WAIT_UNTIL(quorum_is(sc.addr, " m0 m1 m2"), 20000);
    printf("SIGCONT -> back in the quorum in %lld ms\n",
           (long long)(tk_now_ms() - t0));
    scene_stop(&sc);
}

/* --------------------------------------------- restart of the lighthouse */

typedef struct stepper {
    ftc_lighthouse_client *c;
    const char *id;
    atomic_bool stop;
    int errors;
    char last_error[512];
    /* (epoch, quorum_id) of every quorum seen */
    uint32_t epochs[4096];
    int64_t ids[4096];
    atomic_int n;
    pthread_t t;
} stepper;

static void *stepper_main(void *arg)
{
    stepper *s = arg;
    for (int64_t step = 0; !atomic_load(&s->stop); step++) {
        ftc_lighthouse_member m = lt_member(s->id, step);
        ftc_lighthouse_join_result r;
        int rc = ftc_lighthouse_client_quorum(s->c, &m, tk_ms(30000), &r);
        if (rc == FTC_ECANCELED) {
            break;
        }
        int n = atomic_load(&s->n);
        if (rc != 0) {
            s->errors++;
            snprintf(s->last_error, sizeof(s->last_error), "%s",
                     ftc_last_error());
        } else if (n < 4096) {
            s->epochs[n] = r.epoch;
            s->ids[n] = r.quorum.quorum_id;
            atomic_store(&s->n, n + 1);
        }
        ftc_lighthouse_join_result_fini(&r);
    }
    return NULL;
}

static int count_epoch(stepper *s, uint32_t epoch)
{
    int k = 0;
    for (int i = 0; i < atomic_load(&s->n); i++) {
        k += s->epochs[i] == epoch;
    }
    return k;
}

/* Starts `ftc lighthouse --bind bind` with its output in out; returns its
 * address once it serves. */
static void run_cli(tk_child *kid, const char *bind, const char *out,
                    char *addr, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "exec '%s' lighthouse --bind %s --min-replicas 2 > '%s' 2>&1",
             FTC_CLI_PATH, bind, out);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    tk_spawn_cmd(kid, argv, NULL);
    TK_WAIT_UNTIL(file_has(out, "dashboard: "), 20000);
    FILE *f = fopen(out, "r");
    char line[512] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    const char *p = strstr(line, "serving on ");
    assert_non_null(p);
    snprintf(addr, cap, "%s", p + strlen("serving on "));
    addr[strcspn(addr, " \n")] = '\0';
}

static void restart_on_the_same_port(void **state)
{
    (void)state;
    char out1[512], out2[512], addr[128], addr2[128];
    snprintf(out1, sizeof(out1), "%s/lh1.out", tk_tmpdir());
    snprintf(out2, sizeof(out2), "%s/lh2.out", tk_tmpdir());
    tk_child lh1, lh2;
    run_cli(&lh1, "127.0.0.1:0", out1, addr, sizeof(addr));
    static stepper s[2];
    const char *names[2] = {"s0", "s1"};
    for (int i = 0; i < 2; i++) {
        memset(&s[i], 0, sizeof(s[i]));
        TK_OK(ftc_lighthouse_client_create(addr, NULL, &s[i].c));
        s[i].id = names[i];
        assert_int_equal(pthread_create(&s[i].t, NULL, stepper_main, &s[i]), 0);
    }
    TK_WAIT_UNTIL(atomic_load(&s[0].n) >= 3 && atomic_load(&s[1].n) >= 3,
                  20000);
    uint32_t e1 = s[0].epochs[0];
    tk_signal(&lh1, SIGKILL);
    tk_reap(&lh1, 1, 10000);
    assert_int_equal(tk_exit_code(&lh1), 128 + SIGKILL);
    int64_t t0 = tk_now_ms();
    run_cli(&lh2, addr, out2, addr2, sizeof(addr2));
    assert_string_equal(addr, addr2);
    /* Both steppers carry on, on the new epoch, without an error. */
    TK_WAIT_UNTIL(
        count_epoch(&s[0], s[0].epochs[atomic_load(&s[0].n) - 1]) >= 3 &&
            s[0].epochs[atomic_load(&s[0].n) - 1] != e1 &&
            count_epoch(&s[1], s[0].epochs[atomic_load(&s[0].n) - 1]) >= 3,
        30000);
    printf("lighthouse restarted: quorums again %lld ms after the new "
           "process started\n",
           (long long)(tk_now_ms() - t0));
    for (int i = 0; i < 2; i++) {
        atomic_store(&s[i].stop, true);
        ftc_lighthouse_client_abort(s[i].c);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(s[i].t, NULL);
        if (s[i].errors != 0) {
            fail_msg("%s saw %d errors, the last: %s", s[i].id, s[i].errors,
                     s[i].last_error);
        }
    }
    /* Quorum ids of the new lifetime never repeat one of the old. */
    uint32_t e2 = s[0].epochs[atomic_load(&s[0].n) - 1];
    assert_true(e2 != e1);
    for (int a = 0; a < atomic_load(&s[0].n); a++) {
        for (int b = 0; b < atomic_load(&s[1].n); b++) {
            if (s[0].epochs[a] != s[1].epochs[b]) {
                assert_true(s[0].ids[a] != s[1].ids[b]);
            }
        }
    }
    /* SIGTERM stops the CLI cleanly. */
    tk_signal(&lh2, SIGTERM);
    tk_reap(&lh2, 1, 10000);
    assert_int_equal(tk_exit_code(&lh2), 0);
    assert_true(file_has(out2, "SIGTERM, stopping"));
    for (int i = 0; i < 2; i++) {
        ftc_lighthouse_client_destroy(s[i].c);
    }
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"member", member_role}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kill9_pushes_disconnect),
        cmocka_unit_test(sigstop_pushes_heartbeat_then_rejoins),
        cmocka_unit_test(restart_on_the_same_port),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
