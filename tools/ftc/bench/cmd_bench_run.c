/* Runs the K clients of one `ftc bench store` cell: as threads of this
 * process, or as worker processes (this binary with --worker) that report
 * on a pipe. Every client lines up at a start gate before it is timed. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base_int.h"
#include "bench/cmd_bench.h"
#include "ftc/ftc.h"

extern char **environ;

/* Clients get this long to connect and prepare, and to finish. */
#define PREPARE_MS 120000
#define FINISH_MS 600000

/* ---------------------------------------------------------------- threads */

struct thread_client {
    const bench_cell *cell;
    int id;
    bench_result *r;
    pthread_barrier_t *gate;
};

static void thread_start(void *arg)
{
    pthread_barrier_wait(arg);
}

static void *thread_main(void *arg)
{
    struct thread_client *t = arg;
    bench_client_run(t->cell, t->id, t->r, thread_start, t->gate);
    return NULL;
}

int bench_run_threads(const bench_cell *cell, bench_result *results)
{
    int k = cell->clients;
    pthread_t *th = ftc__calloc((size_t)k, sizeof(*th));
    struct thread_client *tc = ftc__calloc((size_t)k, sizeof(*tc));
    pthread_barrier_t gate;
    pthread_attr_t attr;
    if (th == NULL || tc == NULL) {
        ftc__free(th);
        ftc__free(tc);
        fprintf(stderr, "ftc bench: out of memory\n");
        return -1;
    }
    pthread_barrier_init(&gate, NULL, (unsigned)k);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    int started = 0;
    for (; started < k; started++) {
        tc[started] =
            (struct thread_client){cell, started, &results[started], &gate};
        if (pthread_create(&th[started], &attr, thread_main, &tc[started]) !=
            0) {
            break;
        }
    }
    if (started < k) {
        /* The gate would never open: this is fatal for the whole run. */
        fprintf(stderr, "ftc bench: could not start thread %d of %d\n", started,
                k);
        exit(1);
    }
    for (int i = 0; i < k; i++) {
        pthread_join(th[i], NULL);
    }
    pthread_attr_destroy(&attr);
    pthread_barrier_destroy(&gate);
    ftc__free(th);
    ftc__free(tc);
    return 0;
}

/* -------------------------------------------------------------- processes */

/* Worker output: "ready", then "ok OPS T0 T1" or "err RC MESSAGE", then
 * "h IDX:COUNT ..." (latencies) and "x NS ..." (barrier exits). */
static void worker_start(void *arg)
{
    (void)arg;
    char go;
    printf("ready\n");
    fflush(stdout);
    /* The parent writes one byte once every worker is ready; EOF means it
     * gave up, and then the run ends anyway. */
    while (read(0, &go, 1) < 0 && errno == EINTR) {
    }
}

static void worker_report(const bench_result *r)
{
    if (r->rc != 0) {
        printf("err %d %s\n", r->rc, r->err);
    } else {
        printf("ok %" PRIu64 " %" PRId64 " %" PRId64 "\n", r->ops, r->t0_ns,
               r->t1_ns);
    }
    printf("h");
    for (int i = 0; i < BENCH_HIST_BUCKETS; i++) {
        if (r->hist.count[i] != 0) {
            printf(" %d:%" PRIu64, i, r->hist.count[i]);
        }
    }
    printf("\nx");
    for (int i = 0; i < r->nexits; i++) {
        printf(" %" PRId64, r->exits[i]);
    }
    printf("\n");
}

/* argv: --worker OP CLIENTS VALUE_BYTES DURATION_MS ROUNDS DIALECT ADDR
 * PREFIX ID */
int bench_worker_main(int argc, char **argv)
{
    if (argc != 11) {
        fprintf(stderr, "ftc bench store --worker: %d arguments\n", argc);
        return 2;
    }
    bench_cell cell;
    memset(&cell, 0, sizeof(cell));
    cell.op = (bench_op)bench_op_parse(argv[2]);
    cell.clients = (int)strtol(argv[3], NULL, 10);
    cell.value_bytes = (size_t)strtoull(argv[4], NULL, 10);
    cell.duration_ms = strtoll(argv[5], NULL, 10);
    cell.rounds = (int)strtol(argv[6], NULL, 10);
    cell.dialect = (int)strtol(argv[7], NULL, 10);
    snprintf(cell.addr, sizeof(cell.addr), "%s", argv[8]);
    snprintf(cell.prefix, sizeof(cell.prefix), "%s", argv[9]);
    int id = (int)strtol(argv[10], NULL, 10);
    if ((int)cell.op < 0) {
        return 2;
    }
    /* A worker never outlives the bench that started it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    static bench_result r;
    bench_client_run(&cell, id, &r, worker_start, NULL);
    worker_report(&r);
    bench_result_free(&r);
    return fflush(stdout) == 0 ? 0 : 1;
}

typedef struct worker {
    pid_t pid;
    int to;   /* its stdin */
    int from; /* its stdout */
    ftc__buf out;
    int ready;
    int eof;
} worker;

static int spawn_worker(worker *w, const bench_cell *cell, int id)
{
    char clients[16], bytes[32], dur[32], rounds[16], dialect[8], sid[16];
    snprintf(clients, sizeof(clients), "%d", cell->clients);
    snprintf(bytes, sizeof(bytes), "%zu", cell->value_bytes);
    snprintf(dur, sizeof(dur), "%lld", (long long)cell->duration_ms);
    snprintf(rounds, sizeof(rounds), "%d", cell->rounds);
    snprintf(dialect, sizeof(dialect), "%d", cell->dialect);
    snprintf(sid, sizeof(sid), "%d", id);
    char *argv[] = {"ftc",
                    "bench",
                    "store",
                    "--worker",
                    (char *)bench_op_name(cell->op),
                    clients,
                    bytes,
                    dur,
                    rounds,
                    dialect,
                    (char *)cell->addr,
                    (char *)cell->prefix,
                    sid,
                    NULL};
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) {
        return -1;
    }
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    int rc = posix_spawn(&w->pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    w->to = in[1];
    w->from = out[0];
    ftc__buf_init(&w->out, 16 << 20);
    return rc == 0 ? 0 : -1;
}

/* Reads what the workers wrote until want(w) holds for all (or EOF). */
static int pump(worker *ws, int k, int (*want)(const worker *w),
                int64_t timeout_ms)
{
    struct pollfd *p = ftc__calloc((size_t)k, sizeof(*p));
    ftc__deadline dl = ftc__deadline_in_ms(timeout_ms);
    int rc = -1;
    while (p != NULL) {
        int n = 0, left = 0;
        for (int i = 0; i < k; i++) {
            p[i] = (struct pollfd){.fd = -1};
            if (!ws[i].eof && !want(&ws[i])) {
                p[i] = (struct pollfd){.fd = ws[i].from, .events = POLLIN};
                left++;
            }
            n++;
        }
        if (left == 0) {
            rc = 0;
            break;
        }
        if (ftc__deadline_expired(dl)) {
            break;
        }
        if (poll(p, (nfds_t)n, ftc__deadline_poll_ms(dl)) < 0 &&
            errno != EINTR) {
            break;
        }
        for (int i = 0; i < k; i++) {
            if (p[i].fd < 0 || p[i].revents == 0) {
                continue;
            }
            if (ftc__buf_reserve(&ws[i].out, 65536) != 0) {
                ws[i].eof = 1;
                continue;
            }
            ssize_t r = read(ws[i].from, ws[i].out.data + ws[i].out.len, 65536);
            if (r > 0) {
                ws[i].out.len += (size_t)r;
            } else if (r == 0 || errno != EINTR) {
                ws[i].eof = 1;
            }
        }
    }
    ftc__free(p);
    return rc;
}

static int is_ready(const worker *w)
{
    return ftc__buf_size(&w->out) > 0 &&
           memmem(ftc__buf_begin(&w->out), ftc__buf_size(&w->out), "ready\n",
                  6) != NULL;
}

static int is_done(const worker *w)
{
    (void)w;
    return 0; /* read to EOF */
}

/* Parses one worker's report into r. */
static void parse_report(worker *w, bench_result *r, int rounds)
{
    memset(r, 0, sizeof(*r));
    ftc__buf_append_u8(&w->out, '\0');
    char *text = (char *)ftc__buf_begin(&w->out);
    char *line = strstr(text, "ready\n");
    line = line != NULL ? line + 6 : text;
    if (sscanf(line, "ok %" SCNu64 " %" SCNd64 " %" SCNd64, &r->ops, &r->t0_ns,
               &r->t1_ns) != 3) {
        r->rc = FTC_EPEER;
        if (sscanf(line, "err %d", &r->rc) == 1) {
            char *msg = strchr(line + 4, ' ');
            char *nl = strchr(line, '\n');
            snprintf(r->err, sizeof(r->err), "%.*s",
                     msg && nl ? (int)(nl - msg - 1) : 0, msg ? msg + 1 : "");
        } else {
            snprintf(r->err, sizeof(r->err), "worker %d reported nothing",
                     (int)w->pid);
        }
    }
    char *h = strstr(line, "\nh");
    for (char *q = h ? h + 2 : NULL; q != NULL && *q == ' ';) {
        int idx;
        uint64_t cnt;
        int used = 0;
        if (sscanf(q, " %d:%" SCNu64 "%n", &idx, &cnt, &used) != 2 || idx < 0 ||
            idx >= BENCH_HIST_BUCKETS) {
            break;
        }
        r->hist.count[idx] += cnt;
        r->hist.total += cnt;
        q += used;
    }
    char *x = strstr(line, "\nx");
    r->exits = ftc__calloc((size_t)rounds + 1, sizeof(*r->exits));
    for (char *q = x ? x + 2 : NULL;
         q != NULL && r->exits != NULL && *q == ' ' && r->nexits < rounds;) {
        int used = 0;
        if (sscanf(q, " %" SCNd64 "%n", &r->exits[r->nexits], &used) != 1) {
            break;
        }
        r->nexits++;
        q += used;
    }
}

int bench_run_procs(const bench_cell *cell, bench_result *results)
{
    int k = cell->clients;
    worker *ws = ftc__calloc((size_t)k, sizeof(*ws));
    if (ws == NULL) {
        fprintf(stderr, "ftc bench: out of memory\n");
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < k && rc == 0; i++) {
        rc = spawn_worker(&ws[i], cell, i);
    }
    if (rc == 0 && pump(ws, k, is_ready, PREPARE_MS) != 0) {
        fprintf(stderr, "ftc bench: workers did not get ready in time\n");
        rc = -1;
    }
    for (int i = 0; i < k; i++) {
        if (rc == 0 && ws[i].pid > 0) {
            ssize_t n = write(ws[i].to, "g", 1);
            (void)n; /* a dead worker reports nothing; parse says so */
        }
        if (ws[i].to > 0) {
            close(ws[i].to);
        }
    }
    if (rc == 0 && pump(ws, k, is_done, FINISH_MS) != 0) {
        fprintf(stderr, "ftc bench: workers did not finish in time\n");
        rc = -1;
    }
    for (int i = 0; i < k; i++) {
        if (ws[i].pid > 0) {
            if (rc != 0) {
                kill(ws[i].pid, SIGKILL);
            }
            waitpid(ws[i].pid, NULL, 0);
        }
        if (rc == 0) {
            parse_report(&ws[i], &results[i], cell->rounds);
        }
        if (ws[i].from > 0) {
            close(ws[i].from);
        }
        ftc__buf_free(&ws[i].out);
    }
    ftc__free(ws);
    return rc;
}
