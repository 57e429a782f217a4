/* store_client_torch_agent.py driver: a child process with pipes, line-based
 * JSON, and deadlines on every read so a stuck interpreter fails the test. */
#include "torch_kit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testkit.h"

/* Reads one line (without its newline) into a->line; 0, or -1 on EOF or
 * when the deadline passes. */
static int read_line(torch_agent *a, int64_t timeout_ms, char *out, size_t cap)
{
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    for (;;) {
        char *nl = memchr(a->line, '\n', a->have);
        if (nl != NULL) {
            size_t n = (size_t)(nl - a->line);
            size_t copy = n < cap - 1 ? n : cap - 1;
            memcpy(out, a->line, copy);
            out[copy] = '\0';
            memmove(a->line, nl + 1, a->have - n - 1);
            a->have -= n + 1;
            return 0;
        }
        int64_t left = end - tk_now_ms();
        if (left <= 0 || a->have == sizeof(a->line)) {
            return -1;
        }
        struct pollfd p = {.fd = a->from_fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) {
            continue;
        }
        ssize_t r =
            read(a->from_fd, a->line + a->have, sizeof(a->line) - a->have);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) {
                continue;
            }
            return -1;
        }
        a->have += (size_t)r;
    }
}

int torch_agent_start(torch_agent *a, const char *python, const char *script,
                      const char *const *args, int64_t timeout_ms, char *why,
                      size_t why_cap)
{
    memset(a, 0, sizeof(*a));
    a->pid = -1;
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
        snprintf(why, why_cap, "pipe: %s", strerror(errno));
        return -1;
    }
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)python;
    argv[n++] = (char *)script;
    for (int i = 0; args != NULL && args[i] != NULL && n < 15; i++) {
        argv[n++] = (char *)args[i];
    }
    argv[n] = NULL;
    pid_t pid = tk_fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execv(python, argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    a->pid = pid;
    a->to_fd = in[1];
    a->from_fd = out[0];
    char line[256];
    if (read_line(a, timeout_ms, line, sizeof(line)) != 0 ||
        sscanf(line, "PORT %d %63s", &a->port, a->version) != 2) {
        snprintf(why, why_cap,
                 "%s %s did not report its port within %lld ms (missing "
                 "interpreter or torch? its stderr is above)",
                 python, script, (long long)tk_ms(timeout_ms));
        torch_agent_stop(a);
        return -1;
    }
    snprintf(a->addr, sizeof(a->addr), "127.0.0.1:%d", a->port);
    return 0;
}

void torch_agent_send(torch_agent *a, json_t *cmd)
{
    char *text = json_dumps(cmd, JSON_COMPACT);
    assert_non_null(text);
    size_t n = strlen(text);
    text[n] = '\n'; /* replaces the NUL; written with its length */
    size_t off = 0;
    while (off < n + 1) {
        ssize_t w = write(a->to_fd, text + off, n + 1 - off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        assert_true(w > 0);
        off += (size_t)w;
    }
    free(text);
}

json_t *torch_agent_recv(torch_agent *a, int64_t timeout_ms)
{
    static char line[1 << 16];
    if (read_line(a, timeout_ms, line, sizeof(line)) != 0) {
        fail_msg("the torch agent did not answer within %lld ms",
                 (long long)tk_ms(timeout_ms));
    }
    json_error_t err;
    json_t *reply = json_loads(line, 0, &err);
    if (reply == NULL) {
        fail_msg("torch agent answered '%s': %s", line, err.text);
    }
    return reply;
}

json_t *torch_agent_ok(torch_agent *a, json_t *cmd)
{
    torch_agent_send(a, cmd);
    json_t *reply = torch_agent_recv(a, 30000);
    if (!json_is_true(json_object_get(reply, "ok"))) {
        char *c = json_dumps(cmd, JSON_COMPACT);
        fail_msg("torch agent failed %s: %s", c,
                 json_string_value(json_object_get(reply, "error")));
    }
    json_t *result = json_incref(json_object_get(reply, "result"));
    json_decref(reply);
    json_decref(cmd);
    return result != NULL ? result : json_null();
}

void torch_agent_stop(torch_agent *a)
{
    if (a->pid <= 0) {
        return;
    }
    close(a->to_fd); /* EOF: the agent exits and its server with it */
    close(a->from_fd);
    int status;
    int64_t end = tk_now_ms() + tk_ms(10000);
    while (tk_waitpid(a->pid, &status, WNOHANG) == 0) {
        if (tk_now_ms() > end) {
            fprintf(stderr, "torch agent %d did not exit; killing it\n",
                    (int)a->pid);
            kill(a->pid, SIGKILL);
            tk_waitpid(a->pid, &status, 0);
            break;
        }
        tk_pause_ms(10);
    }
    a->pid = -1;
}

void torch_agent_hex(const void *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

size_t torch_agent_unhex(const char *hex, void *out, size_t cap)
{
    size_t n = strlen(hex) / 2;
    assert_true(n <= cap);
    unsigned char *b = out;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        b[i] = (unsigned char)v;
    }
    return n;
}
