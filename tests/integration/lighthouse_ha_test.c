/* A client given several lighthouses finds the one that serves and leaves
 * one that stopped answering. The highly available lighthouse against a
 * real etcd: three `ftc
 * lighthouse --etcd` processes, one serving; two replica groups (threads
 * with the manager's heartbeat and join pattern) given all three
 * addresses. A kill -9 of the leader, a frozen leader (SIGSTOP, then
 * SIGCONT), etcd frozen and back, and a clean stop: in each, another
 * lighthouse serves, both groups go on without an error, no quorum of an
 * old leader forms once a newer one has, and quorum ids only grow. The
 * job's committed step and its end survive a kill of the leader. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ft/lighthouse/lighthouse.h"
#include "lighthouse_kit.h"
#include "testkit.h"

#define N_LH 3

/* A port nobody listens on now (bound, read back, closed). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Whether something accepts connections on 127.0.0.1:port (a standby
 * does not listen). */
static bool listening(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

static bool file_has(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return false;
    }
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

/* ------------------------------------------------------------ the scene */

typedef struct scene {
    tk_child etcd;
    char etcd_addr[64], etcd_url[80];
    tk_child lh[N_LH];
    int port[N_LH];
    char out[N_LH][512];
    int starts[N_LH];
    char addrs[256]; /* every lighthouse, as the clients get them */
} scene;

static void start_etcd(scene *sc)
{
    int cport = free_port(), pport = free_port();
    snprintf(sc->etcd_addr, sizeof(sc->etcd_addr), "127.0.0.1:%d", cport);
    snprintf(sc->etcd_url, sizeof(sc->etcd_url), "http://%s", sc->etcd_addr);
    char cmd[2048];
    /* Heartbeat and election as docs/operations.md tunes them: etcd's
     * shortest lease is then 1 s. */
    snprintf(cmd, sizeof(cmd),
             "exec etcd --name t --data-dir '%s/etcd' "
             "--listen-client-urls %s --advertise-client-urls %s "
             "--listen-peer-urls http://127.0.0.1:%d "
             "--initial-advertise-peer-urls http://127.0.0.1:%d "
             "--initial-cluster t=http://127.0.0.1:%d "
             "--heartbeat-interval 50 --election-timeout 500 "
             "> '%s/etcd.out' 2>&1",
             tk_tmpdir(), sc->etcd_url, sc->etcd_url, pport, pport, pport,
             tk_tmpdir());
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    tk_spawn_cmd(&sc->etcd, argv, NULL);
    TK_WAIT_UNTIL(lt_http(sc->etcd_addr, "POST", "/v3/kv/range",
                          "{\"key\":\"AA==\"}", NULL, NULL) == 200,
                  20000);
}

static void start_lighthouse(scene *sc, int i, const char *prefix)
{
    snprintf(sc->out[i], sizeof(sc->out[i]), "%s/%s-lh%d-%d.out", tk_tmpdir(),
             prefix, i, sc->starts[i]++);
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "exec '%s' lighthouse --bind 127.0.0.1:%d --etcd %s "
             "--etcd-prefix test/%s --lease-ms 1000 --min-replicas 2 "
             "--heartbeat-timeout-ms 2000 > '%s' 2>&1",
             FTC_CLI_PATH, sc->port[i], sc->etcd_url, prefix, sc->out[i]);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    tk_spawn_cmd(&sc->lh[i], argv, NULL);
    TK_WAIT_UNTIL(file_has(sc->out[i], "standing for election"), 20000);
}

static int n_listening(const scene *sc)
{
    int n = 0;
    for (int i = 0; i < N_LH; i++) {
        n += listening(sc->port[i]);
    }
    return n;
}

/* The one that serves, once exactly one does. */
static int leader(const scene *sc)
{
    TK_WAIT_UNTIL(n_listening(sc) == 1, 20000);
    for (int i = 0; i < N_LH; i++) {
        if (listening(sc->port[i])) {
            return i;
        }
    }
    return -1;
}

static void scene_start(scene *sc, const char *prefix)
{
    memset(sc, 0, sizeof(*sc));
    start_etcd(sc);
    size_t at = 0;
    for (int i = 0; i < N_LH; i++) {
        sc->port[i] = free_port();
        at += (size_t)snprintf(sc->addrs + at, sizeof(sc->addrs) - at,
                               "%s127.0.0.1:%d", i > 0 ? "," : "", sc->port[i]);
    }
    for (int i = 0; i < N_LH; i++) {
        start_lighthouse(sc, i, prefix);
    }
}

/* ------------------------------------------- replica groups, as threads */

/* Quorums recorded per group: a minute of joins in a tight loop on a
 * quiet machine (4,096 filled up before a test's faults were over). */
#define MAX_SEEN 65536

typedef struct group {
    ftc_lighthouse_client *c;
    char id[16];
    atomic_bool stop;
    int errors;
    char last_error[512];
    /* epoch and quorum id of every quorum joined, and when (ms) */
    uint32_t epochs[MAX_SEEN];
    int64_t ids[MAX_SEEN], at_ms[MAX_SEEN];
    atomic_int n;
    pthread_t join_thr, beat_thr;
} group;

/* The manager's heartbeat: every 100 ms, each call bounded by 1 s. */
static void *beat_main(void *arg)
{
    group *g = arg;
    while (!atomic_load(&g->stop)) {
        ftc_lighthouse_client_heartbeat(g->c, g->id, 1000, NULL);
        tk_pause_ms(100);
    }
    return NULL;
}

static void *join_main(void *arg)
{
    group *g = arg;
    for (int64_t step = 0; !atomic_load(&g->stop); step++) {
        ftc_lighthouse_member m = lt_member(g->id, step);
        ftc_lighthouse_join_result r;
        int rc = ftc_lighthouse_client_quorum(g->c, &m, tk_ms(30000), &r);
        int n = atomic_load(&g->n);
        if (rc == FTC_ECANCELED) {
            ftc_lighthouse_join_result_fini(&r);
            break;
        }
        if (rc != 0) {
            g->errors++;
            snprintf(g->last_error, sizeof(g->last_error), "%s",
                     ftc_last_error());
        } else if (n == MAX_SEEN) {
            g->errors++;
            snprintf(g->last_error, sizeof(g->last_error),
                     "more than %d quorums: the test records no more",
                     MAX_SEEN);
        } else {
            g->epochs[n] = r.epoch;
            g->ids[n] = r.quorum.quorum_id;
            g->at_ms[n] = tk_now_ms();
            atomic_store(&g->n, n + 1);
        }
        ftc_lighthouse_join_result_fini(&r);
    }
    return NULL;
}

static void groups_start(group *gs, int n, const char *addrs)
{
    for (int i = 0; i < n; i++) {
        memset(&gs[i], 0, sizeof(gs[i]));
        snprintf(gs[i].id, sizeof(gs[i].id), "g%d", i);
        TK_OK(ftc_lighthouse_client_create(addrs, NULL, &gs[i].c));
        assert_int_equal(
            pthread_create(&gs[i].beat_thr, NULL, beat_main, &gs[i]), 0);
        assert_int_equal(
            pthread_create(&gs[i].join_thr, NULL, join_main, &gs[i]), 0);
    }
}

/* Stops the groups and checks what each saw: no error, and quorum ids
 * that never went back (so no old leader's quorum after a newer one's). */
static void groups_stop(group *gs, int n)
{
    for (int i = 0; i < n; i++) {
        atomic_store(&gs[i].stop, true);
        ftc_lighthouse_client_abort(gs[i].c);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(gs[i].join_thr, NULL);
        pthread_join(gs[i].beat_thr, NULL);
        if (gs[i].errors != 0) {
            fail_msg("%s saw %d errors, the last: %s", gs[i].id, gs[i].errors,
                     gs[i].last_error);
        }
        for (int k = 1; k < atomic_load(&gs[i].n); k++) {
            if (gs[i].ids[k] < gs[i].ids[k - 1]) {
                fail_msg("%s: quorum %d has id %llx after %llx", gs[i].id, k,
                         (unsigned long long)gs[i].ids[k],
                         (unsigned long long)gs[i].ids[k - 1]);
            }
        }
        ftc_lighthouse_client_destroy(gs[i].c);
    }
}

static uint32_t last_epoch(group *g)
{
    int n = atomic_load(&g->n);
    return n > 0 ? g->epochs[n - 1] : 0;
}

/* Both groups have joined k quorums of an epoch above `above`; returns
 * when the first of them formed (ms). */
static bool have_new_epoch(group *gs, uint32_t above, int k)
{
    return last_epoch(&gs[0]) > above && last_epoch(&gs[1]) > above &&
           atomic_load(&gs[0].n) >= k && atomic_load(&gs[1].n) >= k;
}

static int64_t wait_new_epoch(group *gs, uint32_t above, int k)
{
    int64_t end = tk_now_ms() + tk_ms(30000);
    while (!have_new_epoch(gs, above, k)) {
        if (tk_now_ms() > end) {
            for (int i = 0; i < 2; i++) {
                printf("%s: %d quorums, last epoch %u, %d errors: %s\n",
                       gs[i].id, atomic_load(&gs[i].n), last_epoch(&gs[i]),
                       gs[i].errors, gs[i].last_error);
            }
            fail_msg("no quorum of an epoch above %u within 30 s", above);
        }
        tk_pause_ms(20);
    }
    int n = atomic_load(&gs[0].n), i = n - 1;
    while (i > 0 && gs[0].epochs[i - 1] > above) {
        i--;
    }
    /* And k more of it, so the new leader is seen to go on. */
    TK_WAIT_UNTIL(atomic_load(&gs[0].n) >= n + k, 30000);
    return gs[0].at_ms[i];
}

/* etcd, three lighthouses and two groups that joined 3 quorums; returns
 * the leader. */
static int scene_up(scene *sc, group *gs, const char *prefix)
{
    scene_start(sc, prefix);
    int l = leader(sc);
    groups_start(gs, 2, sc->addrs);
    wait_new_epoch(gs, 0, 3);
    return l;
}

/* ----------------------------------------------------------------- tests */

static void kill9_of_the_leader_moves_service(void **state)
{
    (void)state;
    static scene sc;
    static group gs[2];
    int l = scene_up(&sc, gs, "kill");
    for (int round = 0; round < 2; round++) {
        uint32_t before = last_epoch(&gs[0]);
        int64_t t0 = tk_now_ms();
        tk_signal(&sc.lh[l], SIGKILL);
        tk_reap(&sc.lh[l], 1, 10000);
        int64_t t1 = wait_new_epoch(gs, before, 3);
        printf("kill -9 of the leader: quorums again %lld ms later\n",
               (long long)(t1 - t0));
        int next = leader(&sc);
        assert_int_not_equal(next, l);
        /* The killed one comes back as a standby. */
        start_lighthouse(&sc, l, "kill");
        assert_int_equal(leader(&sc), next);
        l = next;
    }
    groups_stop(gs, 2);
}

static void frozen_leader_is_fenced(void **state)
{
    (void)state;
    static scene sc;
    static group gs[2];
    int l = scene_up(&sc, gs, "frozen");
    uint32_t before = last_epoch(&gs[0]);
    int64_t t0 = tk_now_ms();
    tk_signal(&sc.lh[l], SIGSTOP);
    int64_t t1 = wait_new_epoch(gs, before, 3);
    printf("frozen leader: quorums again %lld ms after SIGSTOP\n",
           (long long)(t1 - t0));
    /* Woken, it finds its lease gone and stops serving; the groups stay
     * with the new leader (groups_stop checks that no quorum of the old
     * epoch came after one of the new). */
    tk_signal(&sc.lh[l], SIGCONT);
    TK_WAIT_UNTIL(!listening(sc.port[l]), 10000);
    uint32_t now = last_epoch(&gs[0]);
    int n = atomic_load(&gs[0].n);
    TK_WAIT_UNTIL(atomic_load(&gs[0].n) >= n + 3, 30000);
    assert_true(last_epoch(&gs[0]) == now);
    groups_stop(gs, 2);
}

static void etcd_frozen_pauses_then_resumes(void **state)
{
    (void)state;
    static scene sc;
    static group gs[2];
    int l = scene_up(&sc, gs, "etcd");
    uint32_t before = last_epoch(&gs[0]);
    /* Without etcd no lease is renewed: the leader stops serving within
     * its lease and nobody takes over. */
    tk_signal(&sc.etcd, SIGSTOP);
    TK_WAIT_UNTIL(!listening(sc.port[l]), 10000);
    int paused = atomic_load(&gs[0].n);
    assert_int_equal(n_listening(&sc), 0);
    int64_t t0 = tk_now_ms();
    tk_signal(&sc.etcd, SIGCONT);
    int64_t t1 = wait_new_epoch(gs, before, 3);
    printf("etcd back: quorums again %lld ms later\n", (long long)(t1 - t0));
    /* Nothing formed while nobody led. */
    for (int k = paused; k < atomic_load(&gs[0].n); k++) {
        assert_true(gs[0].epochs[k] > before || gs[0].at_ms[k] <= t0);
    }
    leader(&sc);
    groups_stop(gs, 2);
}

static void clean_stop_hands_over(void **state)
{
    (void)state;
    static scene sc;
    static group gs[2];
    int l = scene_up(&sc, gs, "stop");
    uint32_t before = last_epoch(&gs[0]);
    int64_t t0 = tk_now_ms();
    tk_signal(&sc.lh[l], SIGTERM);
    tk_reap(&sc.lh[l], 1, 10000);
    assert_int_equal(tk_exit_code(&sc.lh[l]), 0);
    int64_t t1 = wait_new_epoch(gs, before, 3);
    printf("SIGTERM of the leader: quorums again %lld ms later\n",
           (long long)(t1 - t0));
    assert_int_not_equal(leader(&sc), l);
    groups_stop(gs, 2);
}

/* ------------------------------------- a client of several lighthouses */

/* A socket that accepts connections (the kernel's backlog) and never
 * answers: a frozen lighthouse. */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static ftc_lighthouse *lone_lighthouse(char *addr, size_t cap)
{
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    o.join_timeout_ms = 100;
    ftc_lighthouse *lh;
    TK_OK(ftc_lighthouse_create(&o, &lh));
    TK_OK(ftc_lighthouse_address(lh, addr, cap));
    return lh;
}

static void address_lists_are_checked(void **state)
{
    (void)state;
    const char *bad[] = {
        "a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9",
        "127.0.0.1:1,,127.0.0.1:2",
        "127.0.0.1:1,",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ftc_lighthouse_client *c = (ftc_lighthouse_client *)1;
        TK_EXPECT(ftc_lighthouse_client_create(bad[i], NULL, &c), FTC_EINVAL);
        assert_null(c);
    }
    /* The token may not go in clear text to any of them. */
    ftc_lighthouse_client_opts o;
    ftc_lighthouse_client_opts_init(&o);
    o.token = "secret";
    ftc_lighthouse_client *c;
    TK_EXPECT(
        ftc_lighthouse_client_create("127.0.0.1:1,10.1.2.3:29510", &o, &c),
        FTC_EINVAL);
    TK_OK(ftc_lighthouse_client_create("127.0.0.1:1,https://10.1.2.3:29510", &o,
                                       &c));
    ftc_lighthouse_client_destroy(c);
}

static void a_call_finds_the_one_that_serves(void **state)
{
    (void)state;
    char live[64], list[160];
    ftc_lighthouse *lh = lone_lighthouse(live, sizeof(live));
    snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d,%s", free_port(),
             free_port(), live);
    ftc_lighthouse_client *c;
    TK_OK(ftc_lighthouse_client_create(list, NULL, &c));
    for (int i = 0; i < 3; i++) {
        TK_OK(ftc_lighthouse_client_heartbeat(c, "r0", tk_ms(2000), NULL));
    }
    ftc_lighthouse_client_destroy(c);
    ftc_lighthouse_destroy(lh);
}

static void a_silent_one_is_left(void **state)
{
    (void)state;
    char live[64], list[160];
    ftc_lighthouse *lh = lone_lighthouse(live, sizeof(live));
    int silent_port;
    int silent = silent_listener(&silent_port);
    snprintf(list, sizeof(list), "127.0.0.1:%d,%s", silent_port, live);
    ftc_lighthouse_client *c;
    TK_OK(ftc_lighthouse_client_create(list, NULL, &c));
    /* A join goes to the first, which never answers... */
    static lt_join j;
    ftc_lighthouse_member m = lt_member("r0", 0);
    lt_join_start(&j, c, &m, tk_ms(20000));
    /* ...as does a heartbeat, which leaves it after a third of its time
     * for the next, is answered there, and the join follows it to the
     * lighthouse that serves. */
    int64_t t0 = tk_now_ms();
    TK_OK(ftc_lighthouse_client_heartbeat(c, "r0", 600, NULL));
    assert_true(tk_now_ms() - t0 >= 190);
    TK_WAIT_UNTIL(atomic_load(&j.done), 10000);
    TK_OK(lt_join_wait(&j));
    assert_int_equal(lt_find(&j.result.quorum, "r0"), 0);
    ftc_lighthouse_join_result_fini(&j.result);
    ftc_lighthouse_client_destroy(c);
    close(silent);
    ftc_lighthouse_destroy(lh);
}

/* The fence in one process: an elected lighthouse creates no job before
 * its epochs arrive, takes them in order, and once its lease has ended
 * forms no quorum (not even one its clock would form) and answers
 * nothing. */
static void a_leader_past_its_lease_decides_nothing(void **state)
{
    (void)state;
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    o.join_timeout_ms = 300;
    o.heartbeat_timeout_ms = 5000;
    ftc_lighthouse *lh;
    TK_OK(ftc__lighthouse_create_fenced(&o, ftc__lighthouse_now_ms() + 60000,
                                        &lh));
    char addr[64];
    TK_OK(ftc_lighthouse_address(lh, addr, sizeof(addr)));
    ftc_lighthouse_client *c;
    TK_OK(ftc_lighthouse_client_create(addr, NULL, &c));
    /* No epochs yet: no job, so nothing to join. */
    ftc_lighthouse_member m0 = lt_member("r0", 0);
    ftc_lighthouse_join_result r;
    TK_EXPECT(ftc_lighthouse_client_quorum(c, &m0, 300, &r), FTC_ETIMEDOUT);
    ftc_lighthouse_join_result_fini(&r);
    ftc__lighthouse_give_epochs(lh, 100, 4);
    /* r2 is alive, so once r0 and r1 joined the lighthouse waits for it
     * as a straggler until join_timeout_ms, then its clock forms a
     * quorum without it. */
    TK_OK(ftc_lighthouse_client_heartbeat(c, "r2", tk_ms(2000), NULL));
    assert_int_equal(ftc__lighthouse_epochs_left(lh), 3);
    static lt_join j[2];
    ftc_lighthouse_member m1 = lt_member("r1", 0);
    lt_join_start(&j[0], c, &m0, tk_ms(20000));
    lt_join_start(&j[1], c, &m1, tk_ms(20000));
    TK_WAIT_UNTIL(lt_is_participant(addr, "default", "r0") &&
                      lt_is_participant(addr, "default", "r1"),
                  10000);
    ftc__lighthouse_set_lease(lh, ftc__lighthouse_now_ms() - 1);
    /* Three times join_timeout_ms later they still wait... */
    tk_pause_ms(900);
    assert_false(atomic_load(&j[0].done) || atomic_load(&j[1].done));
    /* ...and every request is refused. */
    assert_int_equal(lt_http(addr, "GET", "/v1/jobs", NULL, NULL, NULL), 503);
    /* A lease again: the clock forms it. */
    ftc__lighthouse_set_lease(lh, ftc__lighthouse_now_ms() + 60000);
    for (int k = 0; k < 2; k++) {
        TK_OK(lt_join_wait(&j[k]));
        assert_int_equal(j[k].result.epoch, 100);
        assert_int_equal(j[k].result.quorum.n_members, 2);
        ftc_lighthouse_join_result_fini(&j[k].result);
    }
    ftc_lighthouse_client_destroy(c);
    ftc_lighthouse_destroy(lh);
}

/* Whether etcd holds exactly value under key. */
static bool etcd_holds(const scene *sc, const char *key, const char *value)
{
    char b64[256], body[320];
    sodium_bin2base64(b64, sizeof(b64), (const unsigned char *)key, strlen(key),
                      sodium_base64_VARIANT_ORIGINAL);
    snprintf(body, sizeof(body), "{\"key\":\"%s\"}", b64);
    char *out = NULL;
    if (lt_http(sc->etcd_addr, "POST", "/v3/kv/range", body, NULL, &out) !=
        200) {
        free(out);
        return false;
    }
    json_t *j = json_loads(out, 0, NULL);
    free(out);
    const char *v = json_string_value(
        json_object_get(json_array_get(json_object_get(j, "kvs"), 0), "value"));
    char text[256];
    size_t n = 0;
    bool same = v != NULL &&
                sodium_base642bin((unsigned char *)text, sizeof(text) - 1, v,
                                  strlen(v), NULL, &n, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) == 0 &&
                (text[n] = '\0', strcmp(text, value) == 0);
    json_decref(j);
    return same;
}

/* Kills the leader l; returns the next one and its address in addr. */
static int kill_leader(scene *sc, int l, char *addr, size_t cap)
{
    tk_signal(&sc->lh[l], SIGKILL);
    tk_reap(&sc->lh[l], 1, 10000);
    int next = leader(sc);
    assert_int_not_equal(next, l);
    snprintf(addr, cap, "127.0.0.1:%d", sc->port[next]);
    return next;
}

/* Members ids[0] and ids[1] at steps[0] and steps[1] join together and
 * form a quorum of the two. */
static void join_two(ftc_lighthouse_client *c, const char *const ids[2],
                     const int64_t steps[2])
{
    static lt_join j[2];
    for (int i = 0; i < 2; i++) {
        ftc_lighthouse_member m = lt_member(ids[i], steps[i]);
        lt_join_start(&j[i], c, &m, tk_ms(20000));
    }
    for (int i = 0; i < 2; i++) {
        if (lt_join_wait(&j[i]) != 0) {
            fail_msg("%s: %s", ids[i], j[i].error);
        }
        assert_int_equal(j[i].result.quorum.n_members, 2);
        ftc_lighthouse_join_result_fini(&j[i].result);
    }
}

/* Whether the job's decision at addr is `verdict`; heartbeats ids first
 * (waiting joins count as alive only as long as a heartbeat). */
static bool decided(ftc_lighthouse_client *c, const char *const ids[2],
                    const char *addr, const char *verdict)
{
    for (int i = 0; i < 2; i++) {
        ftc_lighthouse_client_heartbeat(c, ids[i], tk_ms(1000), NULL);
    }
    if (lt_http(addr, "GET", "/v1/jobs/default/status", NULL, NULL, NULL) !=
        200) {
        return false;
    }
    json_t *j = lt_get_json(addr, "/v1/jobs/default/status");
    const char *v = json_string_value(
        json_object_get(json_object_get(j, "decision"), "verdict"));
    bool same = v != NULL && strcmp(v, verdict) == 0;
    json_decref(j);
    return same;
}

/* The leader keeps each job's committed step and end in etcd: after a
 * kill -9 of the leader the next one holds two groups it never saw at
 * step 3 as laggards (instead of letting them commit steps 4 to 10
 * again), lets them go on once a group with the step is back, and after
 * the job finished (and another kill) refuses a new group below its end. */
static void the_committed_step_survives_the_leader(void **state)
{
    (void)state;
    static scene sc;
    scene_start(&sc, "mark");
    int l = leader(&sc);
    ftc_lighthouse_client *c;
    TK_OK(ftc_lighthouse_client_create(sc.addrs, NULL, &c));
    /* a and b at step 9; a leaves having committed step 10. */
    join_two(c, (const char *const[]){"a", "b"}, (const int64_t[]){9, 9});
    TK_OK(ftc_lighthouse_client_goodbye(c, "a", 10, false, tk_ms(5000), NULL));
    TK_WAIT_UNTIL(etcd_holds(&sc, "test/mark/jobs/default",
                             "{\"step\":10,\"finished\":false}"),
                  10000);
    char addr[64];
    l = kill_leader(&sc, l, addr, sizeof(addr));

    /* Two groups it never saw, at step 3, are held as laggards. */
    ftc_lighthouse_client *lc;
    TK_OK(ftc_lighthouse_client_create(sc.addrs, NULL, &lc));
    const char *const laggards[2] = {"x", "y"};
    static lt_join lj[2];
    for (int i = 0; i < 2; i++) {
        ftc_lighthouse_member m = lt_member(laggards[i], 3);
        lt_join_start(&lj[i], lc, &m, tk_ms(20000));
    }
    TK_WAIT_UNTIL(decided(lc, laggards, addr, "behind"), 10000);
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 10);
    ftc_lighthouse_client_abort(lc);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(lt_join_wait(&lj[i]), FTC_ECANCELED);
        ftc_lighthouse_join_result_fini(&lj[i].result);
    }
    ftc_lighthouse_client_destroy(lc);
    /* A group with the step comes back: a laggard forms with it (and
     * would heal from it); then that group finishes the job at step 12. */
    join_two(c, (const char *const[]){"h", "x"}, (const int64_t[]){10, 3});
    TK_OK(ftc_lighthouse_client_goodbye(c, "h", 12, true, tk_ms(5000), NULL));
    TK_WAIT_UNTIL(etcd_holds(&sc, "test/mark/jobs/default",
                             "{\"step\":12,\"finished\":true}"),
                  10000);
    kill_leader(&sc, l, addr, sizeof(addr));
    ftc_lighthouse_member late = lt_member("late", 0);
    ftc_lighthouse_join_result r;
    TK_EXPECT(ftc_lighthouse_client_quorum(c, &late, tk_ms(5000), &r),
              FTC_EFINISHED);
    ftc_lighthouse_join_result_fini(&r);
    ftc_lighthouse_client_destroy(c);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_leader_past_its_lease_decides_nothing),
        cmocka_unit_test(address_lists_are_checked),
        cmocka_unit_test(a_call_finds_the_one_that_serves),
        cmocka_unit_test(a_silent_one_is_left),
        cmocka_unit_test(kill9_of_the_leader_moves_service),
        cmocka_unit_test(frozen_leader_is_fenced),
        cmocka_unit_test(etcd_frozen_pauses_then_resumes),
        cmocka_unit_test(clean_stop_hands_over),
        cmocka_unit_test(the_committed_step_survives_the_leader),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
