/* Baby process groups (src/pg/baby/) on the backend FTC_PG_BACKEND names
 * (baby-tcp or baby-xccl, set by CMake): what only a group whose inner
 * backend lives in a child process can do, with the resources of this
 * process counted before and after each case (descriptors, shared-memory
 * mappings, children and zombies):
 * - abort while the inner library is stuck in a collective a peer never
 *   joins: ftc_pg_abort returns and the work has failed with
 *   FTC_ECANCELED by then; the peer's group fails with FTC_EPEER naming
 *   the aborted member (told through the store: oneCCL never notices);
 * - destroy of a healthy group, a child killed under a live group, a
 *   child stopped (SIGSTOP) until its heartbeat times out;
 * - kill -9 of the parent: the child dies too;
 * - buffers from ftc_pg_mem_alloc cross without a copy, and the heap
 *   goes with its last allocation;
 * - hostile children (hostile_child.c): each fails the group with
 *   FTC_EPROTO or FTC_EPEER and a message saying why, and writes nothing
 *   of the caller's but the failing call's own output. */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pg/baby/baby.h"
#include "pg_kit.h"

/* ------------------------------------------------------------ resources */

typedef struct usage {
    int fds, maps, kids;
} usage;

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = -1; /* the directory's own descriptor */
    while (d != NULL && readdir(d) != NULL) {
        n++;
    }
    if (d != NULL) {
        closedir(d);
    }
    return n - 2; /* "." and ".." */
}

static int count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        n += strstr(line, "ftc-baby") != NULL;
    }
    if (f != NULL) {
        fclose(f);
    }
    return n;
}

/* Children of this process, zombies included. */
static int count_kids(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') {
            continue;
        }
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        size_t got = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f != NULL) {
            fclose(f);
        }
        buf[got] = '\0';
        char *close_paren = strrchr(buf, ')');
        int ppid = 0;
        if (close_paren != NULL &&
            sscanf(close_paren + 1, " %*c %d", &ppid) == 1 &&
            ppid == getpid()) {
            n++;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

static usage now_usage(void)
{
    pgt_store(); /* its descriptors belong to the baseline */
    return (usage){count_fds(), count_maps(), count_kids()};
}

/* Whether the counts are back at before; says which are not (the last
 * look is what a failure reports). */
static bool same(usage before, char *diff, size_t cap)
{
    usage a = now_usage();
    snprintf(diff, cap,
             "descriptors %d (before %d), shared maps %d (%d), children %d "
             "(%d)",
             a.fds, before.fds, a.maps, before.maps, a.kids, before.kids);
    return a.fds == before.fds && a.maps == before.maps &&
           a.kids == before.kids;
}

/* The store server's side of the children's connections closes when it
 * notices, so the counts are polled back to the baseline. */
#define ASSERT_CLEAN(before)                                                   \
    do {                                                                       \
        char diff_[160];                                                       \
        int64_t end_ = tk_now_ms() + tk_ms(10000);                             \
        while (!same(before, diff_, sizeof(diff_))) {                          \
            if (tk_now_ms() > end_) {                                          \
                fail_msg("not clean after %lld ms: %s",                        \
                         (long long)tk_ms(10000), diff_);                      \
            }                                                                  \
            tk_pause_ms(10);                                                   \
        }                                                                      \
        assert_int_equal(count_maps(), 0);                                     \
    } while (0)

/* -------------------------------------------------------------- members */

typedef struct shared shared;
typedef int (*member_fn)(ftc_pg *pg, int rank, shared *s, char *err);

/* Meeting points of a case's members; a member whose case returns (failed)
 * releases the others with an error instead of leaving them waiting. */
struct shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int met;  /* arrivals at meetings, all counted */
    int left; /* members whose case returned */
    member_fn fn;
    const char *name;
    int n;
};

typedef struct member {
    shared *s;
    int rank;
    int rc;
    char err[512];
} member;

static void *member_main(void *p)
{
    member *m = p;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.host = "127.0.0.1";
    o.timeout_ms = tk_ms(60000);
    ftc_pg *pg = NULL;
    m->rc = pgt_create(pgt_store(), m->s->name, m->rank, m->s->n, &o, &pg);
    if (m->rc != 0) {
        snprintf(m->err, sizeof(m->err), "create: %s", ftc_last_error());
        return NULL;
    }
    m->rc = m->s->fn(pg, m->rank, m->s, m->err);
    pthread_mutex_lock(&m->s->mu);
    m->s->left++;
    pthread_cond_broadcast(&m->s->cv);
    pthread_mutex_unlock(&m->s->mu);
    ftc_pg_destroy(pg);
    return NULL;
}

/* Waits for every member at the k-th meeting (from 1) of the case: 0;
 * FTC_EPEER when one returned first, FTC_ETIMEDOUT after tk_ms(60 s). */
static int meet(shared *s, int k)
{
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += tk_ms(60000) / 1000;
    pthread_mutex_lock(&s->mu);
    s->met++;
    pthread_cond_broadcast(&s->cv);
    int rc = 0;
    while (s->met < k * s->n && s->left == 0 && rc == 0) {
        rc = pthread_cond_timedwait(&s->cv, &s->mu, &end);
    }
    rc = s->met >= k * s->n ? 0 : s->left > 0 ? FTC_EPEER : FTC_ETIMEDOUT;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Runs fn on n threads, one member each, of a fresh group. */
static void run(int n, member_fn fn)
{
    static int groups;
    char name[64];
    snprintf(name, sizeof(name), "baby%d", ++groups);
    shared s = {.fn = fn, .name = name, .n = n};
    pthread_mutex_init(&s.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.cv, &ca);
    pthread_condattr_destroy(&ca);
    member ms[4];
    pthread_t t[4];
    for (int i = 0; i < n; i++) {
        ms[i] = (member){.s = &s, .rank = i};
        assert_int_equal(pthread_create(&t[i], NULL, member_main, &ms[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
    }
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        if (ms[i].rc != 0) {
            print_error("rank %d: %s (%s)\n", i, ftc_err_name(ms[i].rc),
                        ms[i].err);
            failed++;
        }
    }
    if (failed > 0) {
        fail_msg("%d of %d members failed", failed, n);
    }
}

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            int n_ = snprintf(err, 512, __VA_ARGS__);                          \
            snprintf(err + n_, (size_t)(512 - n_), " [%s]", ftc_last_error()); \
            return FTC_EPROTO;                                                 \
        }                                                                      \
    } while (0)

static int allreduce(ftc_pg *pg, float *x, size_t n, int64_t timeout_ms,
                     ftc_work **w)
{
    ftc_tensor t = ftc_tensor_cpu(x, n, FTC_DTYPE_F32);
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.timeout_ms = timeout_ms;
    return ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, &o, w);
}

/* ---------------------------------------------------------------- cases */

/* Rank 0 enters a second allreduce rank 1 never joins: the inner library
 * waits in the child; abort kills it and the work has failed when abort
 * returns. */
static int stuck_then_abort(ftc_pg *pg, int rank, shared *s, char *err)
{
    float x[4] = {1, 2, 3, 4};
    ftc_work *w = NULL;
    CHECK(allreduce(pg, x, 4, FTC_TIMEOUT_DEFAULT, &w) == 0, "allreduce");
    CHECK(pgt_wait(w) == 0 && x[3] == 8, "first allreduce: %g", x[3]);
    /* rank 1 may not have seen its result yet: aborted now, it would fail */
    CHECK(meet(s, 1) == 0, "members meet after the first allreduce");
    if (rank == 0) {
        CHECK(allreduce(pg, x, 4, FTC_TIMEOUT_DEFAULT, &w) == 0, "second");
        ftc_pg_abort(pg);
        int done = 0, rc = ftc_work_test(w, &done);
        ftc_work_release(w);
        CHECK(done && rc == FTC_ECANCELED, "after abort: done %d, %s", done,
              ftc_err_name(rc));
        CHECK(ftc_pg_status(pg) == FTC_ECANCELED, "status after abort");
        /* killed, and not reaped while its pid is known (a reaped pid
         * may be reused) */
        pid_t pid = ftc__baby_child_pid(pg);
        CHECK(pid == -1 || kill(pid, 0) == 0, "child pid %d", (int)pid);
    }
    CHECK(meet(s, 2) == 0, "members meet after the abort");
    if (rank == 1) {
        /* Told through the store, whatever the inner library noticed. */
        int64_t end = tk_now_ms() + tk_ms(10000);
        while (ftc_pg_status(pg) == 0 && tk_now_ms() < end) {
            tk_pause_ms(5);
        }
        CHECK(ftc_pg_status(pg) == FTC_EPEER &&
                  strstr(ftc_last_error(), "rank 0 failed") != NULL,
              "the peer of an aborted member: %s",
              ftc_err_name(ftc_pg_status(pg)));
    }
    return 0;
}

static void abort_while_stuck(void **state)
{
    (void)state;
    usage before = now_usage();
    run(2, stuck_then_abort);
    ASSERT_CLEAN(before);
}

static int healthy(ftc_pg *pg, int rank, shared *s, char *err)
{
    (void)rank;
    (void)s;
    float x[1000];
    for (int i = 0; i < 1000; i++) {
        x[i] = (float)i;
    }
    ftc_work *w = NULL;
    CHECK(allreduce(pg, x, 1000, FTC_TIMEOUT_DEFAULT, &w) == 0, "allreduce");
    CHECK(pgt_wait(w) == 0 && x[999] == 1998, "allreduce: %g", x[999]);
    CHECK(ftc__baby_child_pid(pg) > 0, "no child");
    return 0;
}

static void destroy_leaves_nothing(void **state)
{
    (void)state;
    usage before = now_usage();
    run(2, healthy);
    ASSERT_CLEAN(before);
}

/* Buffers from ftc_pg_mem_alloc cross without a copy: collectives, a
 * count-array collective and send/recv on them give the right values and
 * the group copies no byte; a stack buffer is staged (the counter counts). */
static int on_shared_heap(ftc_pg *pg, int rank, shared *s, char *err)
{
    (void)s;
    enum { N = 1000 };
    float *x = NULL, *all = NULL;
    CHECK(ftc_pg_mem_alloc(N * sizeof(float), (void **)&x) == 0 &&
              ftc_pg_mem_alloc(2 * N * sizeof(float), (void **)&all) == 0,
          "ftc_pg_mem_alloc");
    for (int i = 0; i < N; i++) {
        CHECK(x[i] == 0, "not zero-filled at %d", i);
        x[i] = (float)(i + rank);
    }
    ftc_work *w = NULL;
    CHECK(allreduce(pg, x, N, FTC_TIMEOUT_DEFAULT, &w) == 0, "allreduce");
    CHECK(pgt_wait(w) == 0 && x[999] == 1999 && x[0] == 1, "allreduce: %g",
          x[999]);
    ftc_tensor in = ftc_tensor_cpu(x, N, FTC_DTYPE_F32);
    ftc_tensor out = ftc_tensor_cpu(all, 2 * N, FTC_DTYPE_F32);
    x[0] = (float)(100 + rank);
    CHECK(ftc_pg_allgather(pg, &in, &out, NULL, &w) == 0, "allgather");
    CHECK(pgt_wait(w) == 0 && all[0] == 100 && all[N] == 101 &&
              all[2 * N - 1] == 1999,
          "allgather: %g %g", all[0], all[N]);
    /* alltoallv: rank r sends r + 1 elements to each peer. */
    size_t sc[2] = {(size_t)rank + 1, (size_t)rank + 1}, rc[2] = {1, 2};
    for (int i = 0; i < 4; i++) {
        x[i] = (float)(10 * rank + i);
    }
    ftc_tensor vin = ftc_tensor_cpu(x, 2 * ((size_t)rank + 1), FTC_DTYPE_F32);
    ftc_tensor vout = ftc_tensor_cpu(all, 3, FTC_DTYPE_F32);
    CHECK(ftc_pg_alltoallv(pg, &vin, sc, &vout, rc, NULL, &w) == 0,
          "alltoallv");
    float want0 = rank == 0 ? 0 : 1, want1 = rank == 0 ? 10 : 12;
    CHECK(pgt_wait(w) == 0 && all[0] == want0 && all[1] == want1,
          "alltoallv: %g %g (want %g %g)", all[0], all[1], want0, want1);
    ftc_tensor one = ftc_tensor_cpu(x, N, FTC_DTYPE_F32);
    if (rank == 0) {
        x[N - 1] = 42;
        CHECK(ftc_pg_send(pg, &one, 1, 7, NULL, &w) == 0, "send");
        CHECK(pgt_wait(w) == 0, "send");
    } else {
        CHECK(ftc_pg_recv(pg, &one, 0, 7, NULL, &w) == 0, "recv");
        CHECK(pgt_wait(w) == 0 && x[N - 1] == 42, "recv: %g", x[N - 1]);
    }
    CHECK(ftc__baby_copied_bytes(pg) == 0, "%llu bytes copied",
          (unsigned long long)ftc__baby_copied_bytes(pg));
    float stack[4] = {1, 2, 3, 4};
    CHECK(allreduce(pg, stack, 4, FTC_TIMEOUT_DEFAULT, &w) == 0, "staged");
    CHECK(pgt_wait(w) == 0 && stack[3] == 8, "staged allreduce");
    CHECK(ftc__baby_copied_bytes(pg) == 2 * sizeof(stack),
          "staged: %llu bytes copied",
          (unsigned long long)ftc__baby_copied_bytes(pg));
    ftc_pg_mem_free(x);
    ftc_pg_mem_free(all);
    return 0;
}

static void shared_heap(void **state)
{
    (void)state;
    usage before = now_usage();
    run(2, on_shared_heap);
    ASSERT_CLEAN(before);
}

/* The allocator alone: freed memory comes back zero, misuse is refused
 * or ignored, and the last free unmaps the heap. */
static void shared_heap_alloc(void **state)
{
    (void)state;
    usage before = now_usage();
    assert_int_equal(ftc_pg_mem_alloc(8, NULL), FTC_EINVAL);
    unsigned char *a = NULL, *b = NULL, *big = NULL;
    assert_int_equal(ftc_pg_mem_alloc(100, (void **)&a), 0);
    assert_int_equal(ftc_pg_mem_alloc(3 << 20, (void **)&big), 0);
    assert_true((uintptr_t)a % 64 == 0 && (uintptr_t)big % 64 == 0);
    memset(a, 0xff, 100);
    memset(big, 0xff, 3 << 20);
    ftc_pg_mem_free(a);
    ftc_pg_mem_free(big);
    assert_int_equal(ftc_pg_mem_alloc(200, (void **)&b), 0);
    assert_ptr_equal(a, b); /* first fit: the same place, zeroed */
    for (int i = 0; i < 200; i++) {
        assert_int_equal(b[i], 0);
    }
    assert_true(count_maps() == 1);
    ftc_pg_mem_free(b + 64); /* not an allocation: ignored */
    ftc_pg_mem_free(NULL);
    assert_int_equal(ftc_pg_mem_alloc(UINT64_MAX / 2, (void **)&a),
                     FTC_EMSGSIZE);
    assert_null(a);
    ftc_pg_mem_free(b);
    ASSERT_CLEAN(before);
}

/* Rank 0 kills its own child: its group fails naming the signal; rank
 * 1's next allreduce fails (its peer is gone). */
static int child_killed(ftc_pg *pg, int rank, shared *s, char *err)
{
    float x[4] = {1, 2, 3, 4};
    ftc_work *w = NULL;
    CHECK(allreduce(pg, x, 4, FTC_TIMEOUT_DEFAULT, &w) == 0, "allreduce");
    CHECK(pgt_wait(w) == 0, "first allreduce");
    CHECK(meet(s, 1) == 0, "members meet after the first allreduce");
    if (rank == 0) {
        CHECK(kill(ftc__baby_child_pid(pg), SIGKILL) == 0, "kill");
        int64_t end = tk_now_ms() + tk_ms(10000);
        while (ftc_pg_status(pg) == 0 && tk_now_ms() < end) {
            tk_pause_ms(5);
        }
        CHECK(ftc_pg_status(pg) == FTC_EPEER &&
                  strstr(ftc_last_error(), "killed by signal 9") != NULL,
              "status after the child's death: %s",
              ftc_err_name(ftc_pg_status(pg)));
        int rc = allreduce(pg, x, 4, FTC_TIMEOUT_DEFAULT, &w);
        CHECK(rc == FTC_EPEER && w == NULL, "a call on the failed group: %s",
              ftc_err_name(rc));
    } else {
        int rc = allreduce(pg, x, 4, tk_ms(2000), &w);
        rc = rc != 0 ? rc : pgt_wait(w);
        CHECK(rc != 0, "allreduce with a dead peer succeeded");
    }
    return 0;
}

static void child_death(void **state)
{
    (void)state;
    usage before = now_usage();
    run(2, child_killed);
    ASSERT_CLEAN(before);
}

static int child_stopped(ftc_pg *pg, int rank, shared *s, char *err)
{
    (void)rank;
    (void)s;
    pid_t pid = ftc__baby_child_pid(pg);
    CHECK(pid > 0 && kill(pid, SIGSTOP) == 0, "stop");
    int64_t end = tk_now_ms() + tk_ms(10000);
    while (ftc_pg_status(pg) == 0 && tk_now_ms() < end) {
        tk_pause_ms(5);
    }
    CHECK(ftc_pg_status(pg) == FTC_ETIMEDOUT &&
              strstr(ftc_last_error(), "heartbeat") != NULL,
          "status of a stopped child");
    return 0;
}

static void child_hang(void **state)
{
    (void)state;
    usage before = now_usage();
    setenv("FTC_PG_BABY_HANG_MS", "300", 1);
    run(1, child_stopped);
    unsetenv("FTC_PG_BABY_HANG_MS");
    ASSERT_CLEAN(before);
}

/* Role: a parent killed with -9 while its group lives. argv: store. */
static int victim(int argc, char **argv)
{
    if (argc < 2) {
        return 2;
    }
    ftc_pg *pg = NULL;
    TK_OK(pgt_create(argv[1], "victim", 0, 1, NULL, &pg));
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(argv[1], NULL, &c));
    char pid[16];
    int n = snprintf(pid, sizeof(pid), "%d", (int)ftc__baby_child_pid(pg));
    TK_OK(ftc_store_client_set(c, "victim/pid", pid, (size_t)n, 10000));
    poll(NULL, 0, (int)tk_ms(60000)); /* until killed */
    return 1;
}

static void parent_kill(void **state)
{
    (void)state;
    usage before = now_usage();
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(pgt_store(), NULL, &c));
    tk_child kid;
    char *args[] = {(char *)pgt_store(), NULL};
    tk_spawn(&kid, "victim", args, NULL);
    void *v = NULL;
    size_t len = 0;
    TK_OK(ftc_store_client_get(c, "victim/pid", &v, &len, tk_ms(60000)));
    char text[16] = {0};
    memcpy(text, v, len < 15 ? len : 15);
    ftc_free(v);
    ftc_store_client_close(c);
    pid_t child = (pid_t)strtol(text, NULL, 10);
    int fd = (int)syscall(SYS_pidfd_open, child, 0);
    assert_true(fd >= 0);
    /* Only the parent is killed: its child is still in its process group,
     * which tk_reap would kill too, so the check comes first. */
    tk_signal(&kid, SIGKILL);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, (int)tk_ms(10000)), 1);
    close(fd);
    tk_reap(&kid, 1, 10000);
    assert_int_equal(tk_exit_code(&kid), 128 + SIGKILL);
    /* the store server closes the victims' connections when it notices */
    ASSERT_CLEAN(before);
}

/* ------------------------------------------------------------- hostile */

/* A size-1 group served by hostile_child.c in mode; calls is how many
 * allreduces to start on a [guard | 8 floats | guard] buffer. Returns the
 * works' results in rc[] with the last message in msg. */
static void hostile(const char *mode, int calls, int rc[2], char *msg,
                    float out[2][10])
{
    usage before = now_usage();
    setenv("FTC_PG_BABY_HELPER", getenv("FTC_TEST_BABY_HOSTILE"), 1);
    setenv("FTC_TEST_BABY_MODE", mode, 1);
    ftc_pg *pg = NULL;
    TK_OK(pgt_create(pgt_store(), mode, 0, 1, NULL, &pg));
    unsetenv("FTC_PG_BABY_HELPER");
    ftc_work *w[2] = {NULL, NULL};
    for (int i = 0; i < calls; i++) {
        for (int j = 0; j < 10; j++) {
            out[i][j] = (float)(j + 100 * i);
        }
        TK_OK(allreduce(pg, &out[i][1], 8, tk_ms(20000), &w[i]));
    }
    for (int i = 0; i < calls; i++) {
        rc[i] = ftc_work_wait(w[i], tk_ms(30000));
        snprintf(msg, 512, "%s", ftc_last_error());
        ftc_work_release(w[i]);
    }
    ftc_pg_destroy(pg);
    ASSERT_CLEAN(before);
    for (int i = 0; i < calls; i++) {
        assert_true(out[i][0] == (float)(100 * i) &&
                    out[i][9] == (float)(9 + 100 * i)); /* the guards */
    }
}

static void untouched(const float *x, int i)
{
    for (int j = 1; j < 9; j++) {
        assert_true(x[j] == (float)(j + 100 * i));
    }
}

static void hostile_phantom(void **state)
{
    (void)state;
    int rc[2];
    char msg[512];
    float x[2][10];
    hostile("phantom", 1, rc, msg, x);
    assert_int_equal(rc[0], FTC_EPROTO);
    assert_non_null(strstr(msg, "not in flight"));
    untouched(x[0], 0);
}

static void hostile_garbage(void **state)
{
    (void)state;
    int rc[2];
    char msg[512];
    float x[2][10];
    hostile("garbage", 1, rc, msg, x);
    assert_int_equal(rc[0], FTC_EPROTO);
    assert_non_null(strstr(msg, "impossible completion ring index"));
    untouched(x[0], 0);
}

static void hostile_unrun(void **state)
{
    (void)state;
    int rc[2];
    char msg[512];
    float x[2][10];
    hostile("unrun", 2, rc, msg, x);
    assert_int_equal(rc[0], 0); /* indistinguishable from a real answer */
    unsigned char ab[4] = {0xab, 0xab, 0xab, 0xab};
    for (int j = 1; j < 9; j++) {
        assert_memory_equal(&x[0][j], ab, 4); /* its own output only */
    }
    assert_int_equal(rc[1], FTC_EPROTO);
    assert_non_null(strstr(msg, "unknown result code"));
    untouched(x[1], 1);
}

static void hostile_order(void **state)
{
    (void)state;
    int rc[2];
    char msg[512];
    float x[2][10];
    hostile("order", 2, rc, msg, x);
    assert_int_equal(rc[0], FTC_EPROTO);
    assert_int_equal(rc[1], FTC_EPROTO);
    assert_non_null(strstr(msg, "completed before an earlier one"));
    untouched(x[0], 0);
    untouched(x[1], 1);
}

static void hostile_exit(void **state)
{
    (void)state;
    int rc[2];
    char msg[512];
    float x[2][10];
    hostile("exit", 1, rc, msg, x);
    assert_int_equal(rc[0], FTC_EPEER);
    assert_non_null(strstr(msg, "exited with status 7"));
    untouched(x[0], 0);
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"victim", victim}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(abort_while_stuck),
        cmocka_unit_test(destroy_leaves_nothing),
        cmocka_unit_test(shared_heap),
        cmocka_unit_test(shared_heap_alloc),
        cmocka_unit_test(child_death),
        cmocka_unit_test(child_hang),
        cmocka_unit_test(parent_kill),
        cmocka_unit_test(hostile_phantom),
        cmocka_unit_test(hostile_garbage),
        cmocka_unit_test(hostile_unrun),
        cmocka_unit_test(hostile_order),
        cmocka_unit_test(hostile_exit),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
