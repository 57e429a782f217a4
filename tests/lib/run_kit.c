/* Test kit of the `ftc run` tests: the launcher as a bounded child process
 * whose output goes to a file (so it never blocks on a full pipe while the
 * test polls for something else), and readers for what it leaves. */
#include "run_kit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testkit.h"

static const char *ftc__bin;
static const char *trainer_bin;

int rk_init(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--tk-role") != 0) {
        ftc__bin = argv[1];
        trainer_bin = argv[2];
        return 1;
    }
    fprintf(stderr, "usage: %s FTC_BINARY FAKE_TRAINER\n", argv[0]);
    return -1;
}

const char *rk_ftc(void)
{
    return ftc__bin;
}

const char *rk_trainer(void)
{
    return trainer_bin;
}

void rk_start(rk_run *p, char *const args[], char *const env[])
{
    rk_start_cli(p, "run", args, env);
}

void rk_start_cli(rk_run *p, const char *command, char *const args[],
                  char *const env[])
{
    static int serial;
    memset(p, 0, sizeof(*p));
    snprintf(p->out_path, sizeof(p->out_path), "%s/launcher-%d.out",
             tk_tmpdir(), serial++);
    char *argv[128];
    int n = 0;
    argv[n++] = (char *)ftc__bin;
    argv[n++] = (char *)command;
    for (int i = 0; args[i] != NULL && n < 127; i++) {
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    tk_child c;
    /* Output into a file: the launcher's stdout is not a terminal, and it
     * never waits for the test to read. */
    int fd = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    assert_true(fd >= 0);
    int saved_out = dup(1), saved_err = dup(2);
    fflush(NULL);
    dup2(fd, 1);
    dup2(fd, 2);
    tk_spawn_cmd(&c, argv, env);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    close(fd);
    p->pid = c.pid;
}

void rk_start_job(rk_run *p, const char *dir, char *const launcher[],
                  char *const trainer[], char *const env[])
{
    char summary[4200];
    snprintf(summary, sizeof(summary), "%s/summary.json", dir);
    char *args[128];
    int n = 0;
    for (int i = 0; launcher[i] != NULL && n < 100; i++) {
        args[n++] = launcher[i];
    }
    char *const fixed[] = {"--lighthouse", "127.0.0.1:1",      "--run-dir",
                           (char *)dir,    "--summary-json",   summary,
                           "--",           (char *)trainer_bin};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        args[n++] = fixed[i];
    }
    for (int i = 0; trainer[i] != NULL && n < 127; i++) {
        args[n++] = trainer[i];
    }
    args[n] = NULL;
    rk_start(p, args, env);
}

const char *rk_output(rk_run *p)
{
    FILE *f = fopen(p->out_path, "r");
    assert_non_null(f);
    free(p->text);
    p->text = NULL;
    p->len = 0;
    size_t cap = 0;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (p->len + n + 1 > cap) {
            cap = (p->len + n + 1) * 2;
            p->text = realloc(p->text, cap);
            assert_non_null(p->text);
        }
        memcpy(p->text + p->len, chunk, n);
        p->len += n;
    }
    fclose(f);
    if (p->text == NULL) {
        p->text = calloc(1, 1);
    }
    p->text[p->len] = '\0';
    return p->text;
}

int rk_wait(rk_run *p, int64_t timeout_ms)
{
    tk_child c = {.pid = p->pid};
    int killed = tk_reap(&c, 1, timeout_ms);
    p->status = c.status;
    p->done = 1;
    rk_output(p);
    if (killed) {
        fail_msg("ftc run did not exit in time; its output:\n%s", p->text);
    }
    return tk_exit_code(&c);
}

void rk_wait_output(rk_run *p, const char *want, int64_t timeout_ms)
{
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    while (strstr(rk_output(p), want) == NULL) {
        if (tk_now_ms() > end) {
            fail_msg("no '%s' in the output:\n%s", want, p->text);
        }
        tk_pause_ms(5);
    }
}

void rk_free(rk_run *p)
{
    if (!p->done && p->pid > 0) {
        kill(p->pid, SIGKILL);
        tk_waitpid(p->pid, NULL, 0);
    }
    free(p->text);
    p->text = NULL;
}

int rk_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *at = strstr(text, needle); at != NULL;
         at = strstr(at + 1, needle)) {
        n++;
    }
    return n;
}

const char *rk_dir(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", tk_tmpdir(), name);
    assert_int_equal(mkdir(buf, 0777), 0);
    return buf;
}

int rk_seen(const char *dir, int replica, int rank, int incarnation,
            const char *key, char *out, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/seen-%d-%d-%d", dir, replica, rank,
             incarnation);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    char line[4096];
    size_t klen = strlen(key);
    int rc = -1;
    while (rc != 0 && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, klen) == 0 && line[klen] == '=') {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, cap, "%s", line + klen + 1);
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

long rk_seen_long(const char *dir, int replica, int rank, int incarnation,
                  const char *key)
{
    char v[256];
    if (rk_seen(dir, replica, rank, incarnation, key, v, sizeof(v)) != 0) {
        fail_msg("no %s in seen-%d-%d-%d", key, replica, rank, incarnation);
    }
    return strtol(v, NULL, 10);
}

int rk_seen_count(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        n += strncmp(e->d_name, "seen-", 5) == 0 &&
             (len < 4 || strcmp(e->d_name + len - 4, ".tmp") != 0);
    }
    closedir(d);
    return n;
}

int rk_gone(pid_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 1;
    }
    size_t n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    /* "pid (comm) S ...": the state follows the last ')'. */
    const char *close_paren = strrchr(stat, ')');
    return close_paren != NULL && close_paren[1] == ' ' &&
           close_paren[2] == 'Z';
}

json_t *rk_summary(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (j == NULL) {
        fail_msg("summary %s: %s", path, err.text);
    }
    return j;
}

json_t *rk_job_summary(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    return rk_summary(path);
}

json_int_t rk_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) {
        fail_msg("summary: \"%s\" is not an integer", key);
    }
    return json_integer_value(v);
}

const char *rk_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) {
        fail_msg("summary: \"%s\" is not a string", key);
    }
    return json_string_value(v);
}

json_t *rk_group(json_t *summary, int index)
{
    json_t *g = json_array_get(json_object_get(summary, "replica_groups"),
                               (size_t)index);
    if (g == NULL) {
        fail_msg("summary: no replica_groups[%d]", index);
    }
    return g;
}

json_t *rk_failure(json_t *summary, int index)
{
    json_t *f =
        json_array_get(json_object_get(summary, "failures"), (size_t)index);
    if (f == NULL) {
        fail_msg("summary: no failures[%d]", index);
    }
    return f;
}
