/* A stand-in trainer for the `ftc run` tests: reads the launcher contract,
 * writes what it saw under FTC_RUN_DIR, prints FTC_EVENT lines at a steady
 * pace, and crashes, hangs or exits with a code when told to.
 *
 * It writes $FTC_RUN_DIR/seen-<replica index>-<group rank>-<incarnation>
 * ("K=V" lines: every FTC_* and RUNTEST_* variable, pid, pgid, child (the
 * pid of the helper it started, 0 if none), store (how its group's store
 * answered a tokenless ftc PING and write: probe_store), lighthouse
 * ("http" if FTC_LIGHTHOUSE answered HTTP), lighthouse_write (the status
 * of a tokenless heartbeat)) before its first step. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct plan {
    long steps;        /* 0: until killed */
    long interval_ms;  /* pause before each step */
    long fail_replica; /* -1: nobody fails */
    long fail_rank;
    long fail_at;           /* fail instead of taking this step */
    long fail_incarnations; /* fail while FTC_INCARNATION < this; -1 always */
    const char *fail_how;   /* "crash", "hang" or "exit:CODE" */
    int ignore_sigterm;
    int child;
    int distinct_checksum;
    int chatter;
    int finish_alone;    /* exit after the last step without waiting */
    int stall_restarted; /* fail_replica's later incarnations never step */
} plan;

static long env_long(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL) {
        fprintf(stderr, "fake trainer: %s is not set\n", name);
        exit(90);
    }
    return strtol(v, NULL, 10);
}

static int parse(plan *p, int argc, char **argv)
{
    *p = (plan){.steps = 20,
                .interval_ms = 10,
                .fail_replica = -1,
                .fail_at = 1,
                .fail_incarnations = 1,
                .fail_how = "crash"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--ignore-sigterm") == 0) {
            p->ignore_sigterm = 1;
            continue;
        } else if (strcmp(a, "--child") == 0) {
            p->child = 1;
            continue;
        } else if (strcmp(a, "--distinct-checksum") == 0) {
            p->distinct_checksum = 1;
            continue;
        } else if (strcmp(a, "--chatter") == 0) {
            p->chatter = 1;
            continue;
        } else if (strcmp(a, "--finish-alone") == 0) {
            p->finish_alone = 1;
            continue;
        } else if (strcmp(a, "--stall-restarted") == 0) {
            p->stall_restarted = 1;
            continue;
        }
        if (i + 1 >= argc) {
            return -1;
        }
        const char *v = argv[++i];
        long n = strtol(v, NULL, 10);
        if (strcmp(a, "--steps") == 0) {
            p->steps = n;
        } else if (strcmp(a, "--interval-ms") == 0) {
            p->interval_ms = n;
        } else if (strcmp(a, "--fail-replica") == 0) {
            p->fail_replica = n;
        } else if (strcmp(a, "--fail-rank") == 0) {
            p->fail_rank = n;
        } else if (strcmp(a, "--fail-at") == 0) {
            p->fail_at = n;
        } else if (strcmp(a, "--fail-incarnations") == 0) {
            p->fail_incarnations = n;
        } else if (strcmp(a, "--fail-how") == 0) {
            p->fail_how = v;
        } else {
            return -1;
        }
    }
    return 0;
}

/* A TCP connection to the "127.0.0.1:port" in the variable name, with a
 * receive timeout; -1 if it cannot be made. */
static int connect_to(const char *name)
{
    const char *addr = getenv(name);
    const char *colon = addr != NULL ? strrchr(addr, ':') : NULL;
    if (colon == NULL) {
        return -1;
    }
    char host[64];
    snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port =
                                 htons((uint16_t)strtol(colon + 1, NULL, 10))};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads a 4-byte little-endian PING answer; 0 if the connection closed. */
static int read_pong(int fd, uint32_t *pong)
{
    uint8_t rep[4] = {0};
    if (recv(fd, rep, 4, MSG_WAITALL) != 4) {
        return 0;
    }
    *pong = (uint32_t)rep[0] | (uint32_t)rep[1] << 8 | (uint32_t)rep[2] << 16 |
            (uint32_t)rep[3] << 24;
    return 1;
}

/* Asks the group's store, without a token, for an ftc PING (2.x VALIDATE,
 * then PING with a 0xF7Cxxxxx nonce, answered with its complement: "ftc",
 * or with the low bit flipped back when the store wants a token:
 * "ftc-locked"), then writes a key and pings again: "/accepted" if the
 * store took it, "/refused" if it closed the connection. */
static void probe_store(char *out, size_t cap)
{
    int fd = connect_to("FTC_STORE_ADDR");
    static const uint8_t hello[10] = {0,  0xCE, 0xF7, 0x85, 0x3C,
                                      13, 0xEE, 0xFF, 0xC0, 0xF7};
    static const uint8_t set_ping[] = {
        1, 6, 0, 0, 0, 0, 0, 0, 0,   '/', 'p',  'r',  'o',  'b', 'e',
        1, 0, 0, 0, 0, 0, 0, 0, '1', 13,  0xEE, 0xFF, 0xC0, 0xF7};
    uint32_t pong = 0;
    int ok = fd >= 0 && write(fd, hello, sizeof(hello)) == sizeof(hello) &&
             read_pong(fd, &pong);
    const char *kind = !ok                           ? "no-answer"
                       : pong == ~0xF7C0FFEEu        ? "ftc"
                       : pong == (~0xF7C0FFEEu ^ 1u) ? "ftc-locked"
                                                     : "no-answer";
    const char *write_ok = "";
    if (ok && write(fd, set_ping, sizeof(set_ping)) == sizeof(set_ping)) {
        write_ok = read_pong(fd, &pong) ? "/accepted" : "/refused";
    }
    if (fd >= 0) {
        close(fd);
    }
    snprintf(out, cap, "%s%s", kind, write_ok);
}

/* "http" if FTC_LIGHTHOUSE answers an HTTP request, else "down". */
static const char *probe_lighthouse(void)
{
    int fd = connect_to("FTC_LIGHTHOUSE");
    static const char req[] = "GET / HTTP/1.0\r\n\r\n";
    char rep[5] = {0};
    int ok = fd >= 0 &&
             write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1) &&
             recv(fd, rep, 5, MSG_WAITALL) == 5;
    if (fd >= 0) {
        close(fd);
    }
    return ok && memcmp(rep, "HTTP/", 5) == 0 ? "http" : "down";
}

/* The status a tokenless heartbeat (a would-be member joining the job)
 * gets from FTC_LIGHTHOUSE: "401" when the lighthouse wants a token,
 * "down" when nothing answers. */
static void probe_lighthouse_write(char *out, size_t cap)
{
    int fd = connect_to("FTC_LIGHTHOUSE");
    char req[512];
    int n = snprintf(req, sizeof(req),
                     "POST /v1/jobs/%s/heartbeat HTTP/1.0\r\n"
                     "Content-Type: application/json\r\n"
                     "Content-Length: 21\r\n\r\n"
                     "{\"replica_id\":\"fake\"}",
                     getenv("FTC_JOB") != NULL ? getenv("FTC_JOB") : "ftc");
    char rep[13] = {0};
    int ok = fd >= 0 && write(fd, req, (size_t)n) == (ssize_t)n &&
             recv(fd, rep, 12, MSG_WAITALL) == 12;
    if (fd >= 0) {
        close(fd);
    }
    snprintf(out, cap, "%s", ok ? rep + 9 : "down"); /* "HTTP/1.x NNN" */
}

static void record(long replica, long rank, long incarnation, pid_t child)
{
    const char *dir = getenv("FTC_RUN_DIR");
    char path[4096], tmp[4200];
    snprintf(path, sizeof(path), "%s/seen-%ld-%ld-%ld", dir, replica, rank,
             incarnation);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "fake trainer: %s: %s\n", tmp, strerror(errno));
        exit(91);
    }
    for (char **e = environ; *e != NULL; e++) {
        if (strncmp(*e, "FTC_", 4) == 0 || strncmp(*e, "RUNTEST_", 8) == 0) {
            fprintf(f, "%s\n", *e);
        }
    }
    char store[64], lh_write[16];
    probe_store(store, sizeof(store));
    probe_lighthouse_write(lh_write, sizeof(lh_write));
    fprintf(f,
            "pid=%d\npgid=%d\nchild=%d\nstore=%s\nlighthouse=%s\n"
            "lighthouse_write=%s\n",
            (int)getpid(), (int)getpgrp(), (int)child, store,
            probe_lighthouse(), lh_write);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        exit(92);
    }
}

/* Waits (bounded) until every file "<run dir>/<kind>-<replica>-<rank>
 * <suffix>" exists for the given replicas and every group rank. */
static void await_records(const char *kind, long first, long last,
                          const char *suffix, const char *what)
{
    const char *dir = getenv("FTC_RUN_DIR");
    long size = env_long("FTC_GROUP_SIZE");
    for (int tries = 0; tries < 15000; tries++) {
        long seen = 0;
        for (long g = first; g <= last; g++) {
            for (long r = 0; r < size; r++) {
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s-%ld-%ld%s", dir, kind, g, r,
                         suffix);
                seen += access(path, F_OK) == 0;
            }
        }
        if (seen == size * (last - first + 1)) {
            return;
        }
        struct timespec ts = {.tv_nsec = 2000000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "fake trainer: %s never came\n", what);
    exit(93);
}

/* Every rank of this group's incarnation has recorded itself, as a
 * trainer's rendezvous would: so a rank that fails on purpose never takes
 * a peer down before the peer's record exists. */
static void await_group(long replica, long incarnation)
{
    char suffix[32];
    snprintf(suffix, sizeof(suffix), "-%ld", incarnation);
    await_records("seen", replica, replica, suffix, "the group's other ranks");
}

/* Replicas of a real job finish together (their last step is committed by
 * one quorum): each rank marks its last step done and waits for every
 * replica group's ranks to have done theirs. */
static void finish_together(long replica, long rank, long replicas)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/trained-%ld-%ld", getenv("FTC_RUN_DIR"),
             replica, rank);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "fake trainer: %s: %s\n", path, strerror(errno));
        exit(94);
    }
    fclose(f);
    await_records("trained", 0, replicas - 1, "", "the other replica groups");
}

static void pause_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void fail_now(const char *how)
{
    fflush(stdout);
    if (strncmp(how, "exit:", 5) == 0) {
        _exit((int)strtol(how + 5, NULL, 10));
    }
    if (strcmp(how, "hang") == 0) {
        for (;;) {
            pause();
        }
    }
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    _exit(99);
}

/* User output and malformed events the launcher must cope with. */
static void chatter(long replica, long rank)
{
    printf("hello from replica %ld rank %ld\n", replica, rank);
    fprintf(stderr, "warning from replica %ld rank %ld\n", replica, rank);
    printf("FTC_EVENT {not json\n");
    printf("FTC_EVENT {\"kind\":\"step\",\"step\":-4,\"committed\":true}\n");
    printf("FTC_EVENT {\"kind\":\"from-the-future\",\"x\":1}\n");
    printf("FTC_EVENT {\"kind\":\"heal\",\"step\":0,\"from\":\"replica_9\"}\n");
    printf("FTC_EVENT {\"kind\":\"error\",\"message\":\"chatty\"}\n");
    printf("FTC_EVENTS are not events\n");
    for (int i = 0; i < 20000; i++) {
        putchar('x');
    }
    printf("\nlong line done\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    plan p;
    if (parse(&p, argc, argv) != 0) {
        fprintf(stderr, "fake trainer: bad arguments\n");
        return 2;
    }
    long replica = env_long("FTC_REPLICA_INDEX");
    long rank = env_long("FTC_GROUP_RANK");
    long incarnation = env_long("FTC_INCARNATION");
    long replicas = env_long("FTC_NUM_REPLICAS");
    if (p.ignore_sigterm) {
        signal(SIGTERM, SIG_IGN);
    }
    pid_t child = 0;
    if (p.child) {
        child = fork();
        if (child == 0) {
            for (;;) {
                pause(); /* lives until its process group is killed */
            }
        }
    }
    record(replica, rank, incarnation, child);
    await_group(replica, incarnation);
    if (p.chatter) {
        chatter(replica, rank);
    }
    if (p.stall_restarted && p.fail_replica == replica && incarnation > 0) {
        fail_now("hang"); /* a restart that never catches up */
    }
    int fails = p.fail_replica == replica && p.fail_rank == rank &&
                (p.fail_incarnations < 0 || incarnation < p.fail_incarnations);
    long step = 0;
    double loss = 1.0;
    while (p.steps == 0 || step < p.steps) {
        pause_ms(p.interval_ms);
        if (fails && step + 1 == p.fail_at) {
            fail_now(p.fail_how);
        }
        step++;
        loss = 1.0 / (double)(step + 1);
        printf("FTC_EVENT {\"kind\":\"step\",\"step\":%ld,\"loss\":%.6f,"
               "\"participants\":%ld,\"committed\":true}\n",
               step, loss, replicas);
        fflush(stdout);
    }
    if (!p.finish_alone) {
        finish_together(replica, rank, replicas);
    }
    /* Same steps, same checksum: what replicas that stay in sync report. */
    uint64_t h = 1469598103934665603ull;
    uint64_t parts[2] = {(uint64_t)step,
                         p.distinct_checksum ? (uint64_t)replica : 0};
    for (int i = 0; i < 2; i++) {
        h = (h ^ parts[i]) * 1099511628211ull;
    }
    printf("FTC_EVENT {\"kind\":\"result\",\"checksum\":\"%016llx\","
           "\"final_loss\":%.6f,\"steps\":%ld}\n",
           (unsigned long long)h, loss, step);
    printf("unterminated last line");
    return 0;
}
