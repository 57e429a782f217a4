/* The manager's reports to the launcher (FTC_EVENT_FD): two replica groups
 * of one process, each with its own socket pair as `ftc run` gives a rank.
 * Group 0 registers its state as borrowed buffers, group 1 through
 * callbacks; group 1 heals from group 0 in the first round. Each reports a
 * step event per vote, group 1 its heal, and both the same result
 * checksum: the XXH3 of the state's bytes at the last committed vote
 * (before that step's update). A descriptor that is not a stream socket is
 * ignored, and training goes on. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/xxh.h"
#include "ft/manager/manager.h"
#include "manager_kit.h"
#include "testkit.h"

#define N 4096
#define STEPS 3

typedef struct group {
    ftc_manager *m;
    float w[N];
    int fds[2]; /* [0] the launcher's end, [1] the manager's */
    int rc;
    char why[256];
} group;

static int save(void *user, void *dst, size_t bytes)
{
    memcpy(dst, user, bytes);
    return 0;
}

static int load(void *user, const void *src, size_t bytes)
{
    memcpy(user, src, bytes);
    return 0;
}

/* Creates g's manager with FTC_EVENT_FD set to fd_text. */
static void create(mf_env *job, group *g, const char *id, const char *fd_text,
                   bool callbacks)
{
    setenv("FTC_EVENT_FD", fd_text, 1);
    ftc_manager_opts o = mf_opts(job, id);
    TK_OK(ftc_manager_create(&o, &g->m));
    unsetenv("FTC_EVENT_FD");
    int64_t shape[] = {N};
    ftc_manager_state_cb cb = {save, load, g->w};
    TK_OK(callbacks
              ? ftc_manager_register_cb(g->m, "w", FTC_DTYPE_F32, shape, 1, &cb)
              : ftc_manager_register(g->m, "w", FTC_DTYPE_F32, shape, 1, g->w));
}

static void *train(void *arg)
{
    group *g = arg;
    for (int s = 0; g->rc == 0 && s < STEPS; s++) {
        int commit = 0;
        g->rc = ftc_manager_start_quorum(g->m, NULL);
        g->rc = g->rc != 0 ? g->rc
                           : ftc_manager_wait_quorum(g->m, FTC_TIMEOUT_DEFAULT);
        g->rc = g->rc != 0 ? g->rc
                           : ftc_manager_should_commit(g->m, &commit,
                                                       FTC_TIMEOUT_DEFAULT);
        g->rc = g->rc != 0 ? g->rc : (commit ? 0 : FTC_EPEER);
        for (int i = 0; commit && i < N; i++) {
            g->w[i] += 1.0f; /* the "optimizer step" */
        }
    }
    if (g->rc != 0) {
        snprintf(g->why, sizeof(g->why), "%s", ftc_last_error());
    }
    return NULL;
}

/* Every event the launcher's end holds (the manager is destroyed, so
 * nothing more comes), as a JSON array. */
static json_t *read_events(int fd)
{
    static char text[1 << 16];
    size_t len = 0;
    ssize_t n;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    while ((n = read(fd, text + len, sizeof(text) - 1 - len)) > 0) {
        len += (size_t)n;
    }
    text[len] = '\0';
    json_t *all = json_array();
    for (char *line = text, *nl; (nl = strchr(line, '\n')) != NULL;
         line = nl + 1) {
        *nl = '\0';
        assert_memory_equal(line, "FTC_EVENT {", 11);
        json_error_t err;
        json_t *ev = json_loads(line + strlen("FTC_EVENT "), 0, &err);
        if (ev == NULL) {
            fail_msg("not JSON: %s (%s)", line, err.text);
        }
        json_array_append_new(all, ev);
    }
    return all;
}

static const char *kind_of(json_t *ev)
{
    return json_string_value(json_object_get(ev, "kind"));
}

static json_int_t int_of(json_t *ev, const char *key)
{
    return json_integer_value(json_object_get(ev, key));
}

/* Checks group k's events; returns its result checksum (static). */
static const char *check_events(json_t *evs, int k)
{
    static char sums[2][32];
    int steps = 0, heals = 0, results = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev)
    {
        const char *kind = kind_of(ev);
        assert_non_null(kind);
        if (strcmp(kind, "step") == 0) {
            steps++;
            assert_int_equal(int_of(ev, "step"), steps);
            assert_true(json_is_true(json_object_get(ev, "committed")));
            assert_int_equal(int_of(ev, "participants"), 2);
            assert_true(int_of(ev, "quorum_id") > 0);
        } else if (strcmp(kind, "heal") == 0) {
            heals++;
            assert_int_equal(int_of(ev, "step"), 0);
            const char *from = json_string_value(json_object_get(ev, "from"));
            assert_non_null(from);
            assert_memory_equal(from, "replica_0:", 10);
            assert_true(json_number_value(json_object_get(ev, "ms")) >= 0);
        } else {
            assert_string_equal(kind, "result");
            results++;
            assert_int_equal(int_of(ev, "steps"), STEPS);
            snprintf(sums[k], sizeof(sums[k]), "%s",
                     json_string_value(json_object_get(ev, "checksum")));
        }
    }
    assert_int_equal(steps, STEPS);
    assert_int_equal(heals, k == 1 ? 1 : 0); /* init_sync: 1 heals from 0 */
    assert_int_equal(results, 1);
    return sums[k];
}

static void reports_steps_heals_and_results(void **state)
{
    (void)state;
    mf_env *job = mf_env_new();
    TK_OK(ftc_lighthouse_configure_job(job->lh, "default:min_replicas=2"));
    group *g = calloc(2, sizeof(*g));
    for (int k = 0; k < 2; k++) {
        TK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g[k].fds));
        for (int i = 0; i < N; i++) {
            g[k].w[i] = k == 0 ? (float)i : -1.0f; /* 1 heals to 0's */
        }
        char id[16], fd_text[16];
        snprintf(id, sizeof(id), "replica_%d", k);
        snprintf(fd_text, sizeof(fd_text), "%d", g[k].fds[1]);
        create(job, &g[k], id, fd_text, k == 1);
    }
    pthread_t t[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(pthread_create(&t[k], NULL, train, &g[k]), 0);
    }
    for (int k = 0; k < 2; k++) {
        pthread_join(t[k], NULL);
        if (g[k].rc != 0) {
            fail_msg("group %d: %s", k, g[k].why);
        }
    }
    const char *sums[2];
    for (int k = 0; k < 2; k++) {
        ftc_manager_destroy(g[k].m);
        close(g[k].fds[1]);
        json_t *evs = read_events(g[k].fds[0]);
        sums[k] = check_events(evs, k);
        json_decref(evs);
        close(g[k].fds[0]);
    }
    assert_memory_equal(g[0].w, g[1].w, sizeof(g[0].w));
    float voted[N]; /* the state at the last vote: before its update */
    for (int i = 0; i < N; i++) {
        voted[i] = g[0].w[i] - 1.0f;
    }
    char want[32];
    snprintf(want, sizeof(want), "%016llx",
             (unsigned long long)XXH3_64bits(voted, sizeof(voted)));
    assert_string_equal(sums[0], want);
    assert_string_equal(sums[1], want);
    free(g);
    mf_env_free(job);
}

/* Garbage, a pipe, a closed descriptor: each only warns; the manager
 * trains and writes nothing there. */
static void a_bad_descriptor_is_ignored(void **state)
{
    (void)state;
    mf_env *job = mf_env_new();
    int p[2];
    TK_OK(pipe2(p, O_CLOEXEC | O_NONBLOCK));
    char pipe_fd[16];
    snprintf(pipe_fd, sizeof(pipe_fd), "%d", p[1]);
    const char *bad[] = {"three", "-1", "4000", pipe_fd, "7x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        group *g = calloc(1, sizeof(*g));
        char id[16];
        snprintf(id, sizeof(id), "bad_%zu", i); /* own store keys */
        create(job, g, id, bad[i], false);
        assert_int_equal(g->m->report_fd, -1);
        train(g);
        if (g->rc != 0) {
            fail_msg("with FTC_EVENT_FD=%s: %s", bad[i], g->why);
        }
        ftc_manager_destroy(g->m);
        free(g);
    }
    char c;
    assert_int_equal(read(p[0], &c, 1), -1); /* nothing was written */
    assert_int_equal(errno, EAGAIN);
    close(p[0]);
    close(p[1]);
    mf_env_free(job);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reports_steps_heals_and_results),
        cmocka_unit_test(a_bad_descriptor_is_ignored),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
