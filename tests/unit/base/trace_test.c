/* The tracer (FTC_TRACE): off by default and then free; the file it
 * writes is valid JSON in the trace-event format with the names escaped;
 * spans nest and misuse is refused; the cap drops and counts events; a
 * path that cannot be written is one logged error and no trace; threads
 * record while another flushes; FTC_TRACE with "%p" in a child, whose
 * own forked child writes nothing. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/trace.h"
#include "testkit.h"

static char seen_tag[64];
static int seen_level;

static void capture(void *arg, int level, const char *tag, const char *msg)
{
    (void)arg;
    (void)msg;
    if (level >= FTC_LOG_ERROR) {
        seen_level = level;
        snprintf(seen_tag, sizeof(seen_tag), "%s", tag);
    }
}

static void path_in_tmp(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", tk_tmpdir(), name);
}

/* The file parsed; fails the test unless it is a trace-event object. */
static json_t *load(const char *path)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (root == NULL) {
        fail_msg("%s: %s (line %d)", path, err.text, err.line);
    }
    assert_true(json_is_array(json_object_get(root, "traceEvents")));
    assert_string_equal(
        json_string_value(json_object_get(root, "displayTimeUnit")), "ms");
    return root;
}

/* The first event of phase ph named name, or NULL. */
static json_t *find(json_t *root, const char *ph, const char *name)
{
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
    {
        const char *p = json_string_value(json_object_get(ev, "ph"));
        const char *n = json_string_value(json_object_get(ev, "name"));
        if (p != NULL && n != NULL && strcmp(p, ph) == 0 &&
            strcmp(n, name) == 0) {
            return ev;
        }
    }
    return NULL;
}

static size_t count(json_t *root, const char *ph)
{
    size_t i, n = 0;
    json_t *ev;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
    {
        const char *p = json_string_value(json_object_get(ev, "ph"));
        n += p != NULL && strcmp(p, ph) == 0;
    }
    return n;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* First: FTC_TRACE unset, so every call is a no-op that succeeds. */
static void off_without_ftc_trace(void **state)
{
    (void)state;
    unsetenv("FTC_TRACE");
    assert_int_equal(ftc_trace_enabled(), 0);
    TK_OK(ftc_trace_begin("forward"));
    TK_OK(ftc_trace_end("not even open"));
    TK_OK(ftc_trace_flush());
    assert_int_equal(ftc__trace_clock(), 0);
    ftc__trace_span("collective", "x", 1, 2, NULL, 0); /* dropped quietly */
    assert_int_equal(ftc__trace_dropped(), 0);
}

static void writes_valid_escaped_json(void **state)
{
    (void)state;
    char path[512], tmp[520];
    path_in_tmp(path, sizeof(path), "valid.json");
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    TK_OK(ftc__trace_open(path, 0));
    assert_int_equal(ftc_trace_enabled(), 1);
    const char *odd = "we\"ird\\ \n\t name \xc3\xbc \x01";
    ftc_trace_set_step(7);
    TK_OK(ftc_trace_begin("forward"));
    TK_OK(ftc_trace_begin(odd));
    TK_OK(ftc_trace_end(odd));
    TK_OK(ftc_trace_end("forward"));
    ftc_trace_set_step(-1);
    int64_t t0 = ftc__trace_clock();
    assert_true(t0 > 0);
    const ftc__trace_arg targs[] = {
        FTC__TRACE_ARG_UINT("bytes", 64),
        FTC__TRACE_ARG_STR("backend", "tcp"),
        FTC__TRACE_ARG_INT("rc", -10),
        FTC__TRACE_ARG_UINT("epoch", (uint64_t)1 << 40),
        FTC__TRACE_ARG_BOOL("heal", true),
        FTC__TRACE_ARG_STR("from", odd),
    };
    ftc__trace_async("collective", "allreduce", t0, t0 + 5000, 3, targs, 6);
    assert_false(exists(path));
    TK_OK(ftc_trace_flush());
    assert_false(exists(tmp)); /* renamed into place */

    json_t *root = load(path);
    json_t *fwd = find(root, "X", "forward");
    json_t *inner = find(root, "X", odd);
    assert_non_null(fwd);
    assert_non_null(inner); /* the escaped name reads back the same */
    assert_string_equal(json_string_value(json_object_get(fwd, "cat")),
                        "compute");
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(fwd, "args"), "step")),
                     7);
    double fts = json_number_value(json_object_get(fwd, "ts"));
    double fdur = json_number_value(json_object_get(fwd, "dur"));
    double its = json_number_value(json_object_get(inner, "ts"));
    double idur = json_number_value(json_object_get(inner, "dur"));
    assert_true(fts <= its && its + idur <= fts + fdur); /* nested */
    assert_int_equal(json_integer_value(json_object_get(fwd, "pid")), getpid());
    json_t *b = find(root, "b", "allreduce");
    json_t *e = find(root, "e", "allreduce");
    assert_non_null(b);
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(b, "id")),
                        json_string_value(json_object_get(e, "id")));
    json_t *args = json_object_get(b, "args");
    assert_int_equal(json_integer_value(json_object_get(args, "bytes")), 64);
    assert_int_equal(json_integer_value(json_object_get(args, "step")), 3);
    assert_string_equal(json_string_value(json_object_get(args, "backend")),
                        "tcp");
    assert_int_equal(json_integer_value(json_object_get(args, "rc")), -10);
    assert_true(json_is_true(json_object_get(args, "heal")));
    assert_string_equal(json_string_value(json_object_get(args, "from")), odd);
    assert_int_equal(json_integer_value(json_object_get(args, "epoch")),
                     (json_int_t)1 << 40);
    double span = json_number_value(json_object_get(e, "ts")) -
                  json_number_value(json_object_get(b, "ts"));
    assert_true(span > 4.99 && span < 5.01); /* 5000 ns in microseconds */
    assert_non_null(find(root, "M", "process_name"));
    assert_non_null(find(root, "M", "thread_name"));
    json_decref(root);
    TK_OK(ftc__trace_close());
    assert_int_equal(ftc_trace_enabled(), 0);
}

static void misuse_is_refused(void **state)
{
    (void)state;
    char path[512];
    path_in_tmp(path, sizeof(path), "misuse.json");
    TK_OK(ftc__trace_open(path, 0));
    TK_EXPECT(ftc__trace_open(path, 0), FTC_EMISUSE);
    TK_EXPECT(ftc_trace_end("never opened"), FTC_EINVAL);
    TK_EXPECT(ftc_trace_begin(NULL), FTC_EINVAL);
    TK_EXPECT(ftc_trace_end(NULL), FTC_EINVAL);
    int i = 0;
    while (ftc_trace_begin("deep") == 0) {
        i++;
        assert_true(i <= 32);
    }
    assert_int_equal(i, 32); /* the 33rd was FTC_EINVAL */
    TK_OK(ftc__trace_close());
    /* Ending an outer span ends the ones inside it too. */
    TK_OK(ftc__trace_open(path, 0));
    TK_OK(ftc_trace_begin("outer"));
    TK_OK(ftc_trace_begin("inner"));
    TK_OK(ftc_trace_end("outer"));
    TK_EXPECT(ftc_trace_end("inner"), FTC_EINVAL); /* closed with outer */
    TK_OK(ftc_trace_flush());
    json_t *root = load(path);
    assert_non_null(find(root, "X", "outer"));
    assert_non_null(find(root, "X", "inner"));
    json_decref(root);
    TK_OK(ftc__trace_close());
}

static void cap_drops_and_counts(void **state)
{
    (void)state;
    char path[512];
    path_in_tmp(path, sizeof(path), "cap.json");
    TK_OK(ftc__trace_open(path, 4096)); /* the smallest cap */
    enum { N = 200 };
    for (int i = 0; i < N; i++) {
        TK_OK(ftc_trace_begin("phase"));
        TK_OK(ftc_trace_end("phase"));
    }
    uint64_t dropped = ftc__trace_dropped();
    assert_true(dropped > 0 && dropped < N);
    TK_OK(ftc_trace_flush());
    json_t *root = load(path);
    json_t *other = json_object_get(root, "otherData");
    assert_int_equal(
        json_integer_value(json_object_get(other, "dropped_events")),
        (json_int_t)dropped);
    assert_int_equal(count(root, "X") + dropped, N);
    json_decref(root);
    TK_OK(ftc__trace_close());
}

static void unwritable_path_is_one_error(void **state)
{
    (void)state;
    ftc_log_set_handler(capture, NULL);
    seen_tag[0] = '\0';
    TK_EXPECT(ftc__trace_open("/nonexistent-ftc-dir/t.json", 0), FTC_ESYS);
    assert_string_equal(seen_tag, "trace.open");
    assert_int_equal(seen_level, FTC_LOG_ERROR);
    assert_int_equal(ftc_trace_enabled(), 0);
    TK_OK(ftc_trace_begin("ignored"));

    /* Writable at open, gone at the flush: an error, and tracing stops. */
    char dir[512], path[600];
    path_in_tmp(dir, sizeof(dir), "vanishing");
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, sizeof(path), "%s/t.json", dir);
    TK_OK(ftc__trace_open(path, 0));
    TK_OK(ftc_trace_begin("lost"));
    TK_OK(ftc_trace_end("lost"));
    assert_int_equal(rmdir(dir), 0);
    seen_tag[0] = '\0';
    TK_EXPECT(ftc_trace_flush(), FTC_ESYS);
    assert_string_equal(seen_tag, "trace.write");
    assert_int_equal(ftc_trace_enabled(), 0);
    TK_OK(ftc_trace_flush()); /* off now: nothing to do */
    TK_OK(ftc__trace_close());
    ftc_log_set_handler(NULL, NULL);
}

enum { THREADS = 4, PER_THREAD = 500 };

static void *record(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        int64_t t0 = ftc__trace_clock();
        ftc__trace_async("collective", "allreduce", t0, ftc__now_ns(), i, NULL,
                         0);
    }
    return NULL;
}

static void threads_record_while_flushing(void **state)
{
    (void)state;
    char path[512];
    path_in_tmp(path, sizeof(path), "threads.json");
    TK_OK(ftc__trace_open(path, 0));
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, record, NULL), 0);
    }
    for (int i = 0; i < 5; i++) {
        TK_OK(ftc_trace_flush());
        json_decref(load(path)); /* valid at every moment */
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    TK_OK(ftc_trace_flush());
    json_t *root = load(path);
    assert_int_equal(count(root, "b"), THREADS * PER_THREAD);
    assert_int_equal(count(root, "e"), THREADS * PER_THREAD);
    assert_int_equal(count(root, "M"), 1 + THREADS); /* process, threads */
    json_decref(root);
    TK_OK(ftc__trace_close());
}

/* Child (argv[1]: the trace folder): traces through FTC_TRACE alone, via
 * the public calls; the file is written at exit, and not by a process it
 * forks, which exits first. */
static int role_env(int argc, char **argv)
{
    if (argc < 2 || !ftc_trace_enabled() ||
        ftc_trace_begin("child phase") != 0 ||
        ftc_trace_end("child phase") != 0) {
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        exit(0); /* runs the exit handlers: the tracer's must not write */
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0) {
        return 2;
    }
    char path[600];
    snprintf(path, sizeof(path), "%s/child-%d.json", argv[1], (int)getpid());
    return exists(path) ? 3 : 0;
}

/* Child: FTC_TRACE names a file that cannot be created. */
static int role_bad_env(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    ftc_log_set_handler(capture, NULL);
    if (ftc_trace_enabled() || strcmp(seen_tag, "trace.open") != 0) {
        return 1;
    }
    return ftc_trace_begin("x") == 0 && ftc_trace_flush() == 0 ? 0 : 2;
}

static void trace_from_the_environment(void **state)
{
    (void)state;
    char env[600];
    snprintf(env, sizeof(env), "FTC_TRACE=%s/child-%%p.json", tk_tmpdir());
    char *envs[] = {env, NULL};
    tk_child c[2];
    char *args[] = {(char *)tk_tmpdir(), NULL};
    tk_spawn(&c[0], "env", args, envs);
    char *bad[] = {"FTC_TRACE=/nonexistent-ftc-dir/%p.json", NULL};
    tk_spawn(&c[1], "bad_env", NULL, bad);
    assert_int_equal(tk_reap(c, 2, 30000), 0);
    assert_int_equal(tk_exit_code(&c[0]), 0);
    assert_int_equal(tk_exit_code(&c[1]), 0);
    char path[600];
    snprintf(path, sizeof(path), "%s/child-%d.json", tk_tmpdir(),
             (int)c[0].pid);
    json_t *root = load(path);
    assert_non_null(find(root, "X", "child phase"));
    json_decref(root);
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"env", role_env},
                                    {"bad_env", role_bad_env}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(off_without_ftc_trace),
        cmocka_unit_test(writes_valid_escaped_json),
        cmocka_unit_test(misuse_is_refused),
        cmocka_unit_test(cap_drops_and_counts),
        cmocka_unit_test(unwritable_path_is_one_error),
        cmocka_unit_test(threads_record_while_flushing),
        cmocka_unit_test(trace_from_the_environment),
    };
    return tk_main(argc, argv, roles, 2, tests);
}
