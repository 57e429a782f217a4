/* store_floor: what this machine's loopback allows any store server, for
 * the request patterns of `ftc bench store`. K clients (processes up to 64,
 * threads above, like ftc bench store) do closed-loop request/reply round
 * trips of a get- or add-sized message, or one-way set-sized sends ended
 * by one round trip, or barrier rounds (each client sends one request; the
 * server answers all K once the K-th has arrived), against a single-threaded
 * epoll server that does no protocol work at all: it only counts
 * fixed-size messages and sends fixed-size zero replies. The client side
 * is the minimum too: one send and one blocking recv per round trip.
 *
 * Message sizes are those of ftc's client and server for the same cell
 * (get: a WAIT and a GET pipelined, 68 B, answered with STOP_WAITING and
 * the 16 B value, 25 B; add: 38 B / 8 B; set: 54 B; barrier: one
 * CONTROL_BARRIER, 47 B / 30 B); on loopback they hardly matter.
 *
 * Output: the same rows (or --json lines) as ftc bench store. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "bench/cmd_bench.h" /* bench_hist (tools/ftc/bench/cmd_bench_hist.c) */

#define PROCS_MAX 64
#define MSG_MAX 128

/* The first byte of every request says whether it wants a reply. */
enum { NO_REPLY = 0, WANTS_REPLY = 1 };

typedef struct cell {
    bench_op op;
    int clients;
    int64_t duration_ms;
    int rounds;
    size_t req;   /* request bytes */
    size_t reply; /* reply bytes */
    int port;
} cell;

/* What one client measured; lives in memory shared with the parent. */
typedef struct result {
    int failed;
    uint64_t ops;
    int64_t t0_ns;
    int64_t t1_ns;
    bench_hist hist;
} result;

typedef struct shared {
    pthread_barrier_t start;
    result *results; /* [clients] */
    int64_t *exits;  /* [clients][rounds] for barriers */
} shared;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* All n bytes: sent (out = 1) or received; -1 on error or end of stream. */
static int io_all(int fd, uint8_t *p, size_t n, int out)
{
    while (n > 0) {
        ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int round_trip(int fd, const cell *c, uint8_t *msg, uint8_t first)
{
    uint8_t in[MSG_MAX];
    msg[0] = first;
    if (io_all(fd, msg, c->req, 1) != 0) {
        return -1;
    }
    return first == NO_REPLY ? 0 : io_all(fd, in, c->reply, 0);
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    if (fd < 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
        connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}

/* One client: connect, line up with the others, run the cell's loop. */
static void run_client(const cell *c, shared *sh, int id)
{
    result *r = &sh->results[id];
    uint8_t msg[MSG_MAX];
    memset(msg, 'k', sizeof(msg));
    int fd = dial(c->port);
    pthread_barrier_wait(&sh->start);
    if (fd < 0) {
        r->failed = 1;
        return;
    }
    r->t0_ns = now_ns();
    if (c->op == BENCH_BARRIER) {
        for (int i = 0; i < c->rounds && !r->failed; i++) {
            r->failed = round_trip(fd, c, msg, WANTS_REPLY) != 0;
            sh->exits[(size_t)id * (size_t)c->rounds + (size_t)i] = now_ns();
        }
        r->ops = (uint64_t)c->rounds;
    } else {
        /* Batches of 50 between clock checks, as ftc bench store. */
        int64_t end = r->t0_ns + c->duration_ms * 1000000;
        int64_t t = r->t0_ns;
        uint8_t first = c->op == BENCH_SET ? NO_REPLY : WANTS_REPLY;
        while (t < end && !r->failed) {
            for (int b = 0; b < 50 && !r->failed; b++) {
                r->failed = round_trip(fd, c, msg, first) != 0;
                int64_t after = now_ns();
                bench_hist_add(&r->hist, (uint64_t)(after - t));
                t = after;
                r->ops++;
            }
        }
        /* set: one round trip so the time covers the server reading all. */
        if (c->op == BENCH_SET && !r->failed) {
            r->failed = round_trip(fd, c, msg, WANTS_REPLY) != 0;
        }
    }
    r->t1_ns = now_ns();
    close(fd);
}

/* ------------------------------------------------------------ the server */

typedef struct conn {
    int fd;
    size_t at; /* bytes of the current request received so far */
} conn;

typedef struct server {
    const cell *c;
    int ep;
    int lfd;
    conn *conns; /* [clients] */
    int nconns;
    int open;
    int arrived; /* barrier requests of this round */
    uint8_t zeros[MSG_MAX];
} server;

static int serve_accept(server *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK);
        if (fd < 0) {
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (s->nconns == s->c->clients) {
            close(fd);
            continue;
        }
        conn *k = &s->conns[s->nconns];
        k->fd = fd;
        k->at = 0;
        struct epoll_event ev = {.events = EPOLLIN,
                                 .data.u32 = (uint32_t)s->nconns};
        if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            return -1;
        }
        s->nconns++;
        s->open++;
    }
}

/* Counts the complete requests in what arrived and answers: each one that
 * wants a reply at once, or, for barriers, every client at the K-th. */
static int serve_read(server *s, conn *k)
{
    static uint8_t buf[65536];
    ssize_t n = recv(k->fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return 0;
    }
    if (n <= 0) {
        epoll_ctl(s->ep, EPOLL_CTL_DEL, k->fd, NULL);
        close(k->fd);
        k->fd = -1;
        s->open--;
        return 0;
    }
    size_t replies = 0;
    for (size_t i = 0; i < (size_t)n; i++) {
        if (k->at == 0 && buf[i] == WANTS_REPLY) {
            replies++;
        }
        k->at = (k->at + 1) % s->c->req;
    }
    if (s->c->op != BENCH_BARRIER) {
        for (size_t i = 0; i < replies; i++) {
            if (io_all(k->fd, s->zeros, s->c->reply, 1) != 0) {
                return -1;
            }
        }
        return 0;
    }
    s->arrived += (int)replies;
    if (s->arrived < s->c->clients) {
        return 0;
    }
    s->arrived = 0;
    for (int i = 0; i < s->nconns; i++) {
        if (s->conns[i].fd >= 0 &&
            io_all(s->conns[i].fd, s->zeros, s->c->reply, 1) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Until every client has connected and hung up. */
static int serve(server *s)
{
    struct epoll_event evs[256];
    while (s->nconns < s->c->clients || s->open > 0) {
        int n = epoll_wait(s->ep, evs, 256, -1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return -1;
        }
        for (int i = 0; i < n; i++) {
            uint32_t id = evs[i].data.u32;
            int rc = id == UINT32_MAX ? serve_accept(s)
                                      : serve_read(s, &s->conns[id]);
            if (rc != 0) {
                return -1;
            }
        }
    }
    return 0;
}

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(fd, 4096) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* ------------------------------------------------------------- a cell */

typedef struct thread_arg {
    const cell *c;
    shared *sh;
    int id;
} thread_arg;

static void *client_thread(void *p)
{
    thread_arg *t = p;
    run_client(t->c, t->sh, t->id);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Barrier latency as ftc bench store and the PyTorch anchor measure it:
 * the time between the last exits of consecutive rounds. */
static void barrier_stats(const cell *c, const shared *sh, double *ops,
                          double *p50, double *p99)
{
    int rounds = c->rounds;
    int64_t *last = calloc((size_t)rounds, sizeof(*last));
    int64_t *per = calloc((size_t)rounds, sizeof(*per));
    for (int r = 0; last != NULL && per != NULL && r < rounds; r++) {
        for (int i = 0; i < c->clients; i++) {
            int64_t e = sh->exits[(size_t)i * (size_t)rounds + (size_t)r];
            last[r] = e > last[r] ? e : last[r];
        }
        if (r > 0) {
            per[r - 1] = last[r] - last[r - 1];
        }
    }
    if (last != NULL && per != NULL) {
        qsort(per, (size_t)rounds - 1, sizeof(*per), cmp_i64);
        *p50 = (double)per[(rounds - 1) / 2] / 1000.0;
        *p99 = (double)per[((rounds - 1) * 99) / 100] / 1000.0;
        *ops =
            (double)(rounds - 1) / ((double)(last[rounds - 1] - last[0]) / 1e9);
    }
    free(last);
    free(per);
}

static void report(const cell *c, const shared *sh, int json)
{
    static const char *names[] = {"set", "get", "add", "barrier"};
    static bench_hist all;
    double ops = 0, p50 = 0, p99 = 0;
    if (c->op == BENCH_BARRIER) {
        barrier_stats(c, sh, &ops, &p50, &p99);
    } else {
        memset(&all, 0, sizeof(all));
        uint64_t n = 0;
        int64_t t0 = INT64_MAX, t1 = 0;
        for (int i = 0; i < c->clients; i++) {
            const result *r = &sh->results[i];
            bench_hist_merge(&all, &r->hist);
            n += r->ops;
            t0 = r->t0_ns < t0 ? r->t0_ns : t0;
            t1 = r->t1_ns > t1 ? r->t1_ns : t1;
        }
        ops = t1 > t0 ? (double)n / ((double)(t1 - t0) / 1e9) : 0;
        p50 = bench_hist_quantile_us(&all, 0.50);
        p99 = bench_hist_quantile_us(&all, 0.99);
    }
    size_t vb = c->op == BENCH_SET || c->op == BENCH_GET ? 16 : 0;
    const char *mode = c->clients <= PROCS_MAX ? "procs" : "threads";
    if (json) {
        printf("{\"op\":\"%s\",\"clients\":%d,\"value_bytes\":%zu,"
               "\"ops_per_s\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
               "\"mode\":\"%s\"}\n",
               names[c->op], c->clients, vb, ops, p50, p99, mode);
    } else {
        printf("%-8s %7d %11zu %13.1f %10.1f %10.1f  %s\n", names[c->op],
               c->clients, vb, ops, p50, p99, mode);
    }
    fflush(stdout);
}

/* Starts the clients (forked processes or threads), serves them until they
 * are done and reports; 0, or -1 after a message on stderr. */
static int run_cell(cell *c, int json)
{
    size_t bytes = sizeof(shared) + (size_t)c->clients * sizeof(result) +
                   (size_t)c->clients * (size_t)c->rounds * sizeof(int64_t);
    shared *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("store_floor: mmap");
        return -1;
    }
    sh->results = (result *)(sh + 1);
    sh->exits = (int64_t *)(sh->results + c->clients);
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->start, &ba, (unsigned)c->clients);

    server s = {.c = c, .ep = epoll_create1(0)};
    s.lfd = listen_any(&c->port);
    s.conns = calloc((size_t)c->clients, sizeof(conn));
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    int rc = s.ep >= 0 && s.lfd >= 0 && s.conns != NULL &&
                     epoll_ctl(s.ep, EPOLL_CTL_ADD, s.lfd, &ev) == 0
                 ? 0
                 : -1;
    int procs = c->clients <= PROCS_MAX;
    pid_t *pids = calloc((size_t)c->clients, sizeof(pid_t));
    pthread_t *ths = calloc((size_t)c->clients, sizeof(pthread_t));
    thread_arg *args = calloc((size_t)c->clients, sizeof(thread_arg));
    int started = 0;
    for (; rc == 0 && pids && ths && args && started < c->clients; started++) {
        if (procs) {
            pids[started] = fork();
            if (pids[started] == 0) {
                close(s.lfd);
                close(s.ep);
                run_client(c, sh, started);
                _exit(0);
            }
            rc = pids[started] < 0 ? -1 : 0;
        } else {
            args[started] = (thread_arg){c, sh, started};
            rc = pthread_create(&ths[started], NULL, client_thread,
                                &args[started]) == 0
                     ? 0
                     : -1;
        }
        if (rc != 0) {
            break;
        }
    }
    if (rc == 0 && started == c->clients) {
        rc = serve(&s);
    } else {
        /* The started clients wait at the start line for ones that never
         * came; nothing can release them but exiting. */
        fprintf(stderr, "store_floor: could not start %d clients\n",
                c->clients);
        exit(1);
    }
    for (int i = 0; i < started; i++) {
        if (procs) {
            waitpid(pids[i], NULL, 0);
        } else {
            pthread_join(ths[i], NULL);
        }
    }
    for (int i = 0; i < c->clients; i++) {
        rc |= sh->results[i].failed ? -1 : 0;
    }
    if (rc == 0) {
        report(c, sh, json);
    } else {
        fprintf(stderr, "store_floor: %s with %d clients failed\n",
                c->op == BENCH_BARRIER ? "barrier" : "a round trip",
                c->clients);
    }
    close(s.lfd);
    close(s.ep);
    free(s.conns);
    free(pids);
    free(ths);
    free(args);
    pthread_barrier_destroy(&sh->start);
    munmap(sh, bytes);
    return rc;
}

/* ------------------------------------------------------------- main */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: store_floor [--clients K] [--ops set,get,add,barrier]\n"
            "                   [--duration S] [--rounds R] [--json]\n"
            "\n"
            "The loopback floor for ftc bench store's cells: the same\n"
            "clients and request patterns against an epoll server that does\n"
            "no protocol work. Defaults: K = 1, 4, 16, 64 for set/get/add\n"
            "(16 B) and 4, 16, 64, 256, 1024 for barrier; 2 s per cell;\n"
            "barrier rounds 400 to 20 by K, as ftc bench store.\n");
}

static int default_rounds(int k)
{
    return k <= 4 ? 400 : k <= 16 ? 200 : k <= 64 ? 100 : k <= 256 ? 40 : 20;
}

int main(int argc, char **argv)
{
    static const int tp_ks[] = {1, 4, 16, 64};
    static const int bar_ks[] = {4, 16, 64, 256, 1024};
    /* Request and reply bytes of ftc's messages, per op (see above). */
    static const size_t req[] = {54, 68, 38, 47};
    static const size_t reply[] = {8, 25, 8, 30};
    int ops[BENCH_NOPS] = {1, 1, 1, 1};
    int clients = 0, rounds = 0, json = 0;
    double duration = 2.0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(o, "--json") == 0) {
            json = 1;
        } else if (strcmp(o, "--clients") == 0) {
            clients = (int)strtol(v, NULL, 10), i++;
        } else if (strcmp(o, "--rounds") == 0) {
            rounds = (int)strtol(v, NULL, 10), i++;
        } else if (strcmp(o, "--duration") == 0) {
            duration = strtod(v, NULL), i++;
        } else if (strcmp(o, "--ops") == 0) {
            memset(ops, 0, sizeof(ops));
            ops[BENCH_SET] = strstr(v, "set") != NULL;
            ops[BENCH_GET] = strstr(v, "get") != NULL;
            ops[BENCH_ADD] = strstr(v, "add") != NULL;
            ops[BENCH_BARRIER] = strstr(v, "barrier") != NULL;
            i++;
        } else {
            usage(strcmp(o, "--help") == 0 ? stdout : stderr);
            return strcmp(o, "--help") == 0 ? 0 : 2;
        }
    }
    if (clients < 0 || clients > 100000 || duration <= 0 ||
        (rounds != 0 && rounds < 2)) {
        usage(stderr);
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (!json) {
        printf("%-8s %7s %11s %13s %10s %10s  %s\n", "op", "clients",
               "value_bytes", "ops_per_s", "p50_us", "p99_us", "mode");
    }
    int failed = 0;
    for (int op = 0; op < BENCH_NOPS; op++) {
        const int *ks = op == BENCH_BARRIER ? bar_ks : tp_ks;
        int nks = op == BENCH_BARRIER ? 5 : 4;
        for (int i = 0; ops[op] && i < (clients ? 1 : nks); i++) {
            cell c = {.op = (bench_op)op,
                      .clients = clients ? clients : ks[i],
                      .duration_ms = (int64_t)(duration * 1000),
                      .req = req[op],
                      .reply = reply[op]};
            c.rounds = op != BENCH_BARRIER ? 1
                       : rounds            ? rounds
                                           : default_rounds(c.clients);
            failed |= run_cell(&c, json) != 0;
        }
    }
    return failed;
}
