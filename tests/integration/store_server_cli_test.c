/* `ftc store` as a standalone process: it prints the port it listens on,
 * serves both dialects, stops cleanly on SIGINT and SIGTERM, reports a
 * port in use, and its --self-check passes. argv[1] is the ftc binary. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base_int.h"
#include "store_kit.h"
#include "testkit.h"

static const char *ftc__bin;

typedef struct proc {
    pid_t pid;
    int out; /* read end of its stdout+stderr */
    char text[8192];
    size_t len;
} proc;

static void start(proc *p, char *const args[])
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    memset(p, 0, sizeof(*p));
    p->pid = tk_fork();
    if (p->pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        execv(ftc__bin, args);
        _exit(127);
    }
    close(fds[1]);
    p->out = fds[0];
}

/* Reads output until it contains want or the process closes it. */
static int read_until(proc *p, const char *want, int64_t timeout_ms)
{
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    while (strstr(p->text, want) == NULL) {
        int64_t left = end - tk_now_ms();
        struct pollfd pfd = {.fd = p->out, .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
            return 0;
        }
        ssize_t n =
            read(p->out, p->text + p->len, sizeof(p->text) - 1 - p->len);
        if (n <= 0) {
            return strstr(p->text, want) != NULL;
        }
        p->len += (size_t)n;
        p->text[p->len] = '\0';
    }
    return 1;
}

/* Waits for the process to exit; returns its exit code (128+sig if
 * killed), killing it if it outlives the timeout. */
static int finish(proc *p, int64_t timeout_ms)
{
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    int status = 0;
    while (tk_waitpid(p->pid, &status, WNOHANG) == 0) {
        if (tk_now_ms() > end) {
            kill(p->pid, SIGKILL);
            tk_waitpid(p->pid, &status, 0);
            break;
        }
        read_until(p, "\x01never", 10);
    }
    read_until(p, "\x01never", 10);
    close(p->out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int listening_port(proc *p)
{
    if (!read_until(p, " port ", 10000) || !read_until(p, "\n", 10000)) {
        fail_msg("no 'listening' line: %s", p->text);
    }
    const char *at = strstr(p->text, " port ");
    return (int)strtol(at + 6, NULL, 10);
}

/* Connects a 2.x (v2) and a 1.13 (v1) client: a key set by one is read
 * by the other. */
static void serves_both_dialects(int port, sr_conn *v1, sr_conn *v2,
                                 ftc__buf *b)
{
    sr_connect(v2, port, SR_V2);
    sr_connect(v1, port, SR_V1);
    sr_set(b, SR_V2, "/cli", "served");
    sr_flush(v2, b);
    sr_key(b, SR_V1, FTC__OP_GET, "/cli");
    sr_flush(v1, b);
    sr_expect_str(v1, "served");
}

static void serves_and_stops_on(int sig, const char *name)
{
    proc p;
    char *args[] = {(char *)ftc__bin, "store",     "--port", "0",
                    "--bind",         "127.0.0.1", NULL};
    start(&p, args);
    int port = listening_port(&p);
    assert_true(port > 0);
    sr_conn v1, v2;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    serves_both_dialects(port, &v1, &v2, &b);
    /* a parked client does not keep the server from stopping */
    const char *k[] = {"/never"};
    sr_keys(&b, SR_V2, FTC__OP_WAIT, k, 1);
    sr_flush(&v2, &b);
    kill(p.pid, sig);
    assert_int_equal(finish(&p, 10000), 0);
    assert_non_null(strstr(p.text, name));
    assert_non_null(strstr(p.text, "stopped"));
    sr_expect_closed(&v2, 5000);
    sr_expect_closed(&v1, 5000);
    sr_close(&v1);
    sr_close(&v2);
    ftc__buf_free(&b);
}

static void stops_on_sigint(void **state)
{
    (void)state;
    serves_and_stops_on(SIGINT, "SIGINT");
}

static void stops_on_sigterm(void **state)
{
    (void)state;
    serves_and_stops_on(SIGTERM, "SIGTERM");
}

static void port_in_use(void **state)
{
    (void)state;
    int fd, port;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 4, &fd, &port));
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    proc p;
    char *args[] = {(char *)ftc__bin, "store",     "--port", port_s,
                    "--bind",         "127.0.0.1", NULL};
    start(&p, args);
    assert_int_equal(finish(&p, 10000), 1);
    assert_non_null(strstr(p.text, "in use"));
    close(fd);
}

static void usage_and_bad_options(void **state)
{
    (void)state;
    proc p;
    char *help[] = {(char *)ftc__bin, "store", "--help", NULL};
    start(&p, help);
    assert_int_equal(finish(&p, 10000), 0);
    assert_non_null(strstr(p.text, "--max-value-bytes"));
    char *bad[] = {(char *)ftc__bin, "store", "--max-total-bytes", "lots",
                   NULL};
    start(&p, bad);
    assert_int_equal(finish(&p, 10000), 2);
    assert_non_null(strstr(p.text, "bad value for --max-total-bytes"));
    char *small[] = {(char *)ftc__bin,
                     "store",
                     "--max-value-bytes",
                     "1M",
                     "--max-request-bytes",
                     "1K",
                     NULL};
    start(&p, small);
    assert_int_equal(finish(&p, 10000), 1);
    assert_non_null(strstr(p.text, "max_request_bytes"));
}

/* The soft limit of /proc/<pid>/limits' "Max open files" line. */
static long soft_fd_limit(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long soft = -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "Max open files", 14) == 0) {
            soft = strtol(line + 14, NULL, 10);
        }
    }
    fclose(f);
    return soft;
}

/* Started under the usual soft limit of 1024 descriptors, the store lifts
 * it to the hard limit, so 1,100 idle connections do not lock out a
 * legitimate client (they did: the 1,021st and later were closed). */
static void idle_connections_do_not_lock_clients_out(void **state)
{
    (void)state;
    enum { IDLE = 1100 };
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < IDLE + 200) {
        fail_msg("RLIMIT_NOFILE hard limit %llu < %d: raise it (ulimit -Hn)",
                 (unsigned long long)rl.rlim_max, IDLE + 200);
    }
    rlim_t soft = rl.rlim_cur;
    rl.rlim_cur = 1024;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    proc p;
    char *args[] = {(char *)ftc__bin, "store",     "--port", "0",
                    "--bind",         "127.0.0.1", NULL};
    start(&p, args); /* inherits the soft limit of 1024 */
    rl.rlim_cur = rl.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    int port = listening_port(&p);
    long lifted = soft_fd_limit(p.pid);
    assert_true(rl.rlim_max == RLIM_INFINITY || lifted == (long)rl.rlim_max);
    int *idle = calloc(IDLE, sizeof(int));
    assert_non_null(idle);
    for (int i = 0; i < IDLE; i++) {
        TK_OK(ftc__sock_connect("127.0.0.1", port, ftc__deadline_in_ms(5000),
                                NULL, &idle[i]));
    }
    sr_conn v2, v1;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    serves_both_dialects(port, &v1, &v2, &b);
    sr_close(&v1);
    sr_close(&v2);
    ftc__buf_free(&b);
    for (int i = 0; i < IDLE; i++) {
        close(idle[i]);
    }
    free(idle);
    kill(p.pid, SIGTERM);
    assert_int_equal(finish(&p, 10000), 0);
    rl.rlim_cur = soft;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static void self_check_passes(void **state)
{
    (void)state;
    proc p;
    char *args[] = {(char *)ftc__bin, "store", "--self-check", NULL};
    start(&p, args);
    assert_int_equal(finish(&p, 20000), 0);
    assert_non_null(strstr(p.text, "self-check passed"));
    assert_null(strstr(p.text, "FAILED"));
}

/* Closed by default: a store or lighthouse asked to serve an address
 * other hosts reach, without a token, refuses to start unless told
 * --insecure. */
static void open_address_needs_a_token(void **state)
{
    (void)state;
    unsetenv("FTC_TOKEN");
    proc p;
    char *store[] = {(char *)ftc__bin, "store",   "--port", "0",
                     "--bind",         "0.0.0.0", NULL};
    start(&p, store);
    assert_int_equal(finish(&p, 10000), 2);
    assert_non_null(strstr(p.text, "refusing to serve on '0.0.0.0' without "
                                   "a token"));
    char *lighthouse[] = {(char *)ftc__bin, "lighthouse", "--bind", "0.0.0.0:0",
                          NULL};
    start(&p, lighthouse);
    assert_int_equal(finish(&p, 10000), 2);
    assert_non_null(strstr(p.text, "refusing to serve on '0.0.0.0'"));
    char *insecure[] = {(char *)ftc__bin, "store",   "--port",     "0",
                        "--bind",         "0.0.0.0", "--insecure", NULL};
    start(&p, insecure);
    assert_true(listening_port(&p) > 0);
    kill(p.pid, SIGTERM);
    assert_int_equal(finish(&p, 10000), 0);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--tk-role") != 0) {
        ftc__bin = argv[1];
        argc = 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stops_on_sigint),
        cmocka_unit_test(stops_on_sigterm),
        cmocka_unit_test(port_in_use),
        cmocka_unit_test(usage_and_bad_options),
        cmocka_unit_test(self_check_passes),
        cmocka_unit_test(open_address_needs_a_token),
        cmocka_unit_test(idle_connections_do_not_lock_clients_out),
    };
    if (ftc__bin == NULL) {
        fprintf(stderr, "usage: %s FTC_BINARY\n", argv[0]);
        return 2;
    }
    return tk_main(argc, argv, NULL, 0, tests);
}
