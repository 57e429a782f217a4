/* The manager's test job: the "ftk-rank" trainer (FT-DDP style, or DiLoCo
 * through the algo comm) that logs every commit, heal and failure, and the
 * parent's side: lighthouse, stores, incarnations, faults and the final
 * checks over the logs. */
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "ft_kit.h"

int64_t ftk_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ftk_log_path(const ftk_job *j, int g, int i, int r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/g%d_i%d_r%d.log", j->dir, g, i, r);
}

/* ------------------------------------------------------------ the rank */

static int log_fd = -1;

#define say(...) tk_write_line(log_fd, __VA_ARGS__)

static int64_t env_int(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? strtoll(v, NULL, 10) : dflt;
}

/* What replica `rep`, rank `rank` pulls its data towards at step s. */
static float target(int rep, int rank, int64_t s, int i)
{
    return sinf(0.01f * (float)i + 0.3f * (float)rep + 0.1f * (float)rank) *
           (1.0f + 0.01f * (float)(s % 50));
}

typedef struct trainer {
    ftc_manager *m;
    int rep, rank, n;
    int64_t steps;
    float *x, *v, *g;
    int errors;      /* failed rounds in a row */
    int64_t heals;   /* as counted by the manager's stats */
    bool injected;   /* the test's error was reported (once) */
    int64_t stop_at; /* SIGSTOP itself in this step's allreduce */
    bool stopped;
    int64_t gate_at; /* wait for the parent's gate before this step */
    bool said_id;
    bool drained; /* healed to the end in a round the others drained */
} trainer;

/* An FTC_EVENT line for `ftc run` (docs/operations.md, "Launcher
 * contract"): from group rank 0, or from every rank when all is set. */
static void event(const trainer *t, bool all, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void event(const trainer *t, bool all, const char *fmt, ...)
{
    if ((t->rank != 0 && !all) || getenv("FTC_RUN_DIR") == NULL) {
        return; /* only under `ftc run` */
    }
    va_list ap;
    va_start(ap, fmt);
    printf("FTC_EVENT ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

/* Logs a heal that happened since the last call; returns its step or
 * -1. */
static int64_t note_heal(trainer *t)
{
    ftc_manager_stats st;
    ftc_manager_stats_get(t->m, &st);
    if (st.heals == t->heals) {
        return -1;
    }
    t->heals = st.heals;
    say("heal %" PRId64 " %s %.2f", st.last_heal_step, st.last_heal_source,
        st.last_heal_ms);
    event(t, false,
          "{\"kind\":\"heal\",\"step\":%" PRId64 ",\"from\":\"%s\","
          "\"ms\":%.2f}",
          st.last_heal_step, st.last_heal_source, st.last_heal_ms);
    return st.last_heal_step;
}

/* At the gate's step, waits (bounded) for the parent to open it. */
static void gate(trainer *t)
{
    if (ftc_manager_current_step(t->m) != t->gate_at) {
        return;
    }
    t->gate_at = -1;
    const char *path = getenv("FTK_GATE");
    int64_t end = tk_now_ms() + tk_ms(120000);
    while (access(path, F_OK) != 0 && tk_now_ms() < end) {
        tk_pause_ms(5);
    }
    say("gate %s", access(path, F_OK) == 0 ? "open" : "timed out");
}

/* Votes no on the round in progress, so that it commits nothing. */
static int finish_round(trainer *t)
{
    ftc_manager_report_error(t->m, FTC_EPEER, "done training");
    int commit;
    return ftc_manager_should_commit(t->m, &commit, FTC_TIMEOUT_DEFAULT);
}

/* After the last step: one more round that commits nothing, so that a
 * replica that failed the last step (a loss pushed just then) heals from
 * those that committed it before they leave. */
static void drain(trainer *t)
{
    ftk_state_round(ftc_manager_current_step(t->m));
    int rc = ftc_manager_start_quorum(t->m, NULL);
    rc = rc != 0 ? rc : ftc_manager_wait_quorum(t->m, FTC_TIMEOUT_DEFAULT);
    if (rc == 0) {
        note_heal(t);
        finish_round(t);
    }
}

/* One FT-DDP step: quorum, average of the local gradient, vote, SGD with
 * momentum on commit. */
static int ddp_step(trainer *t, int64_t fail_at, int64_t fail_after,
                    int64_t shrink_until)
{
    ftc_manager_quorum_opts qo;
    ftc_manager_quorum_opts_init(&qo);
    qo.shrink_only = ftc_manager_current_step(t->m) < shrink_until;
    ftk_state_round(ftc_manager_current_step(t->m));
    int rc = ftc_manager_start_quorum(t->m, &qo);
    rc = rc != 0 ? rc : ftc_manager_wait_quorum(t->m, FTC_TIMEOUT_DEFAULT);
    if (rc != 0) {
        say("qerr %s %s", ftc_err_name(rc), ftc_last_error());
        return rc;
    }
    if (ftc_manager_current_step(t->m) >= t->steps) {
        /* Healed to the end (it failed the last step the others
         * committed): nothing left to train. */
        note_heal(t);
        t->drained = true;
        return finish_round(t);
    }
    if (!t->said_id) {
        char id[256];
        ftc_manager_replica_id(t->m, id, sizeof(id));
        say("id %s", id);
        ftc_manager_heal_address(t->m, id, sizeof(id));
        say("healing %s", id);
        t->said_id = true;
    }
    note_heal(t);
    int64_t s = ftc_manager_current_step(t->m);
    /* Before any collective of the quorum: a quorum this rank is in can
     * only commit once it logged this line. */
    say("round %" PRId64 " %" PRId64, s, ftc_manager_quorum_id(t->m));
    for (int i = 0; i < t->n; i++) {
        t->g[i] = t->x[i] - target(t->rep, t->rank, s, i);
    }
    if (s == fail_at && !t->injected) {
        t->injected = true;
        ftc_manager_report_error(t->m, FTC_EPEER, "injected before");
    }
    ftc_tensor ten = ftc_tensor_cpu(t->g, (size_t)t->n, FTC_DTYPE_F32);
    ftc_manager_work *w;
    if (s == t->stop_at && !t->stopped) {
        /* Frozen as a hung host, while the others wait in this step's
         * allreduce for its data. */
        t->stopped = true;
        say("stop %" PRId64 " %" PRId64, s, ftk_now_ns());
        raise(SIGSTOP);
        say("cont %" PRId64, ftk_now_ns());
    }
    rc = ftc_manager_allreduce(t->m, &ten, FTC_OP_AVG, &w, FTC_TIMEOUT_DEFAULT);
    if (rc == 0) {
        ftc_manager_work_wait(w, FTC_TIMEOUT_DEFAULT);
        ftc_manager_work_release(w);
    }
    if (s == fail_after && !t->injected) {
        t->injected = true;
        ftc_manager_report_error(t->m, FTC_EPEER, "injected after");
    }
    int commit = 0;
    rc = ftc_manager_should_commit(t->m, &commit, FTC_TIMEOUT_DEFAULT);
    if (commit) {
        for (int i = 0; i < t->n; i++) {
            t->v[i] = 0.9f * t->v[i] + t->g[i];
            t->x[i] -= 0.1f * t->v[i];
        }
        say("commit %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64, s,
            ftc_manager_quorum_id(t->m), ftc_manager_num_participants(t->m),
            ftk_now_ns());
        event(t, false,
              "{\"kind\":\"step\",\"step\":%" PRId64
              ",\"committed\":true,\"participants\":%" PRId64 "}",
              s + 1, ftc_manager_num_participants(t->m));
    } else {
        char why[256];
        ftc_manager_errored(t->m, why, sizeof(why));
        say("fail %" PRId64 " %" PRId64 " %s %s", s,
            ftc_manager_current_step(t->m), ftc_err_name(rc), why);
    }
    return rc;
}

/* DiLoCo through ftc_manager_algo_comm: an inner SGD step towards the
 * replica's target, then the algorithm's schedule. */
static int diloco_run(trainer *t)
{
    ftc_algo_comm comm;
    ftc_manager_algo_comm(t->m, &comm);
    ftc_diloco_opts o;
    ftc_diloco_opts_init(&o);
    o.sync_every = 4;
    ftc_diloco *dl;
    int rc = ftc_diloco_create(&comm, t->x, (size_t)t->n, &o, &dl);
    const ftc_algo_buffer *bufs;
    size_t nb = 0;
    rc = rc != 0 ? rc : ftc_diloco_buffers(dl, &bufs, &nb);
    for (size_t i = 0; rc == 0 && i < nb; i++) {
        int64_t shape[1] = {(int64_t)bufs[i].count};
        rc = ftc_manager_register(t->m, bufs[i].name, FTC_DTYPE_F32, shape, 1,
                                  bufs[i].data);
    }
    if (rc != 0) {
        say("error diloco %s", ftc_last_error());
        return rc;
    }
    int64_t inner = 0;
    while (ftc_manager_current_step(t->m) < t->steps && t->errors < 20) {
        for (int i = 0; i < t->n; i++) {
            t->x[i] -= 0.1f * (t->x[i] - target(t->rep, t->rank, inner, i));
        }
        inner++;
        int64_t before = ftc_manager_current_step(t->m);
        int outcome = FTC_ALGO_LOCAL;
        rc = ftc_diloco_step(dl, &outcome, FTC_TIMEOUT_DEFAULT);
        int64_t healed = note_heal(t);
        before = healed >= 0 ? healed : before;
        t->drained = t->drained || healed >= t->steps;
        if (outcome == FTC_ALGO_COMMITTED) {
            say("commit %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64,
                ftc_manager_current_step(t->m) - 1, ftc_manager_quorum_id(t->m),
                ftc_manager_num_participants(t->m), ftk_now_ns());
            gate(t);
        } else if (outcome == FTC_ALGO_DISCARDED) {
            say("fail %" PRId64 " %" PRId64 " %s %s", before,
                ftc_manager_current_step(t->m), ftc_err_name(rc),
                rc != 0 ? ftc_last_error() : "");
        }
        t->errors = rc != 0 ? t->errors + 1 : 0;
    }
    /* The global copy is what the replicas agree on. */
    memcpy(t->v, bufs[0].data, (size_t)t->n * sizeof(float));
    ftc_diloco_destroy(dl);
    return 0;
}

static int make_manager(trainer *t)
{
    ftc_manager_opts o;
    ftc_manager_opts_init(&o);
    int rc = ftc_manager_opts_from_env(&o);
    if (rc != 0) {
        say("error opts %s", ftc_last_error());
        return 3;
    }
    o.quorum_timeout_ms = env_int("FTK_QUORUM_TIMEOUT_MS", tk_ms(30000));
    o.timeout_ms = tk_ms(env_int("FTK_TIMEOUT_MS", 20000));
    o.connect_timeout_ms = tk_ms(20000);
    o.heal_chunk_bytes = 1024; /* several chunks even for a small state */
    if (env_int("FTK_SPARES", 0) != 0) {
        o.world_size_mode = FTC_WORLD_FIXED_WITH_SPARES;
    }
    rc = ftc_manager_create(&o, &t->m);
    if (rc != 0) {
        say("error create %s %s", ftc_err_name(rc), ftc_last_error());
        return 3;
    }
    t->rank = o.group_rank;
    return 0;
}

int ftk_rank_role(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    /* Under `ftc run` (no FTK_LOG) the log goes to the run folder. */
    char path[512];
    const char *log = getenv("FTK_LOG");
    if (log == NULL) {
        snprintf(path, sizeof(path), "%s/ftk_%s_%s_%s.log",
                 getenv("FTC_RUN_DIR") != NULL ? getenv("FTC_RUN_DIR") : "/tmp",
                 getenv("FTC_REPLICA_ID"), getenv("FTC_INCARNATION"),
                 getenv("FTC_GROUP_RANK"));
        log = path;
    }
    log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    trainer t;
    memset(&t, 0, sizeof(t));
    if (log_fd < 0 || make_manager(&t) != 0) {
        return 3;
    }
    t.rep = (int)env_int("FTK_REPLICA_INDEX", 0);
    t.n = (int)env_int("FTK_FLOATS", 1000);
    t.steps = env_int("FTK_STEPS", 20);
    t.gate_at = env_int("FTK_GATE_AT", -1);
    t.stop_at = env_int("FTK_STOP_AT", -1);
    t.x = calloc((size_t)t.n, sizeof(float));
    t.v = calloc((size_t)t.n, sizeof(float));
    t.g = calloc((size_t)t.n, sizeof(float));
    /* Every replica starts differently: init_sync makes them equal. */
    for (int i = 0; i < t.n; i++) {
        t.x[i] = 0.5f * (float)t.rep + 0.001f * (float)i + (float)t.rank;
    }
    const char *algo = getenv("FTK_ALGO");
    bool diloco = algo != NULL && strcmp(algo, "diloco") == 0;
    int64_t shape[1] = {t.n};
    int rc = diloco ? ftc_manager_register(t.m, "params", FTC_DTYPE_F32, shape,
                                           1, t.x)
                    : ftk_register_state(t.m, t.x, t.v, t.n, log_fd);
    bool expect_timeout = env_int("FTK_EXPECT_QUORUM_TIMEOUT", 0) != 0;
    int64_t fail_at = env_int("FTK_FAIL_AT", -1);
    int64_t fail_after = env_int("FTK_FAIL_AFTER", -1);
    int64_t shrink_until = env_int("FTK_SHRINK_UNTIL", -1);
    if (rc == 0 && diloco) {
        rc = diloco_run(&t);
    }
    while (rc == 0 && !diloco && ftc_manager_current_step(t.m) < t.steps &&
           t.errors < 20) {
        gate(&t);
        int64_t t0 = ftk_now_ns();
        int src = ddp_step(&t, fail_at, fail_after, shrink_until);
        if (src == FTC_ECANCELED) {
            say("killed %s", ftc_last_error());
            break;
        }
        if (expect_timeout) {
            say("expected %s %.0f", ftc_err_name(src),
                (ftk_now_ns() - t0) / 1e6);
            break;
        }
        t.errors = src != 0 ? t.errors + 1 : 0;
    }
    if (rc == 0 && t.errors < 20 && !expect_timeout && !t.drained &&
        ftc_manager_current_step(t.m) >= t.steps) {
        drain(&t);
    }
    if (t.errors >= 20) {
        rc = 4;
    }
    uint64_t h = XXH3_64bits(t.x, (size_t)t.n * sizeof(float)) ^
                 XXH3_64bits(t.v, (size_t)t.n * sizeof(float));
    say("final %016llx %" PRId64, (unsigned long long)h,
        ftc_manager_current_step(t.m));
    if (rc == 0) {
        event(&t, true,
              "{\"kind\":\"result\",\"checksum\":\"%016llx\","
              "\"steps\":%" PRId64 "}",
              (unsigned long long)h, ftc_manager_current_step(t.m));
    }
    ftc_manager_destroy(t.m);
    free(t.x);
    free(t.v);
    free(t.g);
    return rc;
}

/* ------------------------------------------------------------ the job */

/* (Re)starts every group's store, empty, with the job's token. */
static void start_stores(ftk_job *j)
{
    for (int g = 0; g < j->groups; g++) {
        ftc_store_server_destroy(j->store[g]);
        ftc_store_server_opts so;
        ftc_store_server_opts_init(&so);
        so.bind_host = "127.0.0.1";
        so.token = j->token;
        TK_OK(ftc_store_server_create(&so, &j->store[g]));
    }
}

void ftk_start(ftk_job *j, int groups, int ranks, int steps,
               int64_t min_replicas)
{
    memset(j, 0, sizeof(*j));
    j->groups = groups;
    j->ranks = ranks;
    j->steps = steps;
    j->floats = 1000;
    j->min_replicas = min_replicas;
    j->lh_port = 0;
    static int jobs;
    snprintf(j->dir, sizeof(j->dir), "%s/job%d", tk_tmpdir(), jobs++);
    assert_int_equal(mkdir(j->dir, 0755), 0);
    ftk_restart_lighthouse(j);
    for (int g = 0; g < groups; g++) {
        j->inc[g] = -1;
    }
    start_stores(j);
}

void ftk_set_token(ftk_job *j, const char *token)
{
    j->token = token;
    ftk_restart_lighthouse(j);
    start_stores(j);
}

void ftk_restart_lighthouse(ftk_job *j)
{
    ftc_lighthouse_destroy(j->lh);
    ftc_lighthouse_opts lo;
    ftc_lighthouse_opts_init(&lo);
    char bind[64];
    snprintf(bind, sizeof(bind), "127.0.0.1:%d", j->lh_port);
    lo.bind = bind;
    lo.min_replicas = (uint64_t)j->min_replicas;
    lo.heartbeat_timeout_ms = 500;
    lo.join_timeout_ms = tk_ms(10000);
    lo.token = j->token;
    TK_OK(ftc_lighthouse_create(&lo, &j->lh));
    j->lh_port = ftc_lighthouse_port(j->lh);
    snprintf(j->lh_addr, sizeof(j->lh_addr), "127.0.0.1:%d", j->lh_port);
}

void ftk_stop_lighthouse(ftk_job *j)
{
    ftc_lighthouse_destroy(j->lh);
    j->lh = NULL;
}

void ftk_spawn(ftk_job *j, int g, char *const extra_env[])
{
    int i = ++j->inc[g];
    assert_true(i < FTK_MAX_INC);
    j->spawned[g][i] = true;
    for (int r = 0; r < j->ranks; r++) {
        char e[16][300];
        int n = 0;
        char log[256];
        ftk_log_path(j, g, i, r, log, sizeof(log));
        snprintf(e[n++], 300, "FTC_LIGHTHOUSE=%s", j->lh_addr);
        snprintf(e[n++], 300, "FTC_JOB=ftk");
        snprintf(e[n++], 300, "FTC_REPLICA_ID=replica_%d", g);
        snprintf(e[n++], 300, "FTC_GROUP_RANK=%d", r);
        snprintf(e[n++], 300, "FTC_GROUP_SIZE=%d", j->ranks);
        snprintf(e[n++], 300, "FTC_STORE_ADDR=127.0.0.1:%d",
                 ftc_store_server_port(j->store[g]));
        snprintf(e[n++], 300, "FTC_STORE_PREFIX=replica_%d/%d", g, i);
        snprintf(e[n++], 300, "FTC_INCARNATION=%d", i);
        snprintf(e[n++], 300, "FTK_LOG=%s", log);
        snprintf(e[n++], 300, "FTK_REPLICA_INDEX=%d", g);
        snprintf(e[n++], 300, "FTK_STEPS=%d", j->steps);
        snprintf(e[n++], 300, "FTK_FLOATS=%d", j->floats);
        snprintf(e[n++], 300, "FTK_ALGO=%s", j->algo != NULL ? j->algo : "ddp");
        snprintf(e[n++], 300, "FTK_GATE=%s/gate", j->dir);
        /* Extra entries first: the first of a name wins. */
        char *env[48];
        int k = 0;
        for (int x = 0; extra_env != NULL && extra_env[x] != NULL; x++) {
            env[k++] = extra_env[x];
        }
        for (int x = 0; x < n; x++) {
            size_t name = strcspn(e[x], "=");
            bool overridden = false;
            for (int y = 0; extra_env != NULL && extra_env[y] != NULL; y++) {
                overridden =
                    overridden || (strncmp(extra_env[y], e[x], name + 1) == 0);
            }
            if (!overridden) {
                env[k++] = e[x];
            }
        }
        env[k] = NULL;
        tk_spawn(&j->child[g][i][r], "ftk-rank", NULL, env);
    }
}

void ftk_signal(ftk_job *j, int g, int sig)
{
    for (int r = 0; r < j->ranks; r++) {
        tk_signal(&j->child[g][j->inc[g]][r], sig);
    }
}

void ftk_kill(ftk_job *j, int g)
{
    ftk_signal(j, g, SIGKILL);
    tk_reap(j->child[g][j->inc[g]], j->ranks, 10000);
    j->dead[g][j->inc[g]] = true;
}

static void wait_for(ftk_job *j, int g, int64_t arg,
                     bool (*cond)(ftk_job *, int, int64_t), const char *what,
                     int64_t timeout_ms);
static void dump(const ftk_job *j);

/* Whether one of the ids in arr (objects with "replica_id") starts with
 * prefix. */
static bool has_id(const json_t *arr, const char *prefix)
{
    for (size_t k = 0; k < json_array_size(arr); k++) {
        const char *id = json_string_value(
            json_object_get(json_array_get(arr, k), "replica_id"));
        if (id != NULL && strncmp(id, prefix, strlen(prefix)) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether the lighthouse lists "replica_<g>:..." as a participant (it
 * waits for the next quorum) or a member of the current quorum. */
static bool is_participant(ftk_job *j, int g)
{
    ftc_lighthouse_client_opts o;
    ftc_lighthouse_client_opts_init(&o);
    o.job = "ftk";
    o.token = j->token; /* with a token, the status needs it */
    ftc_lighthouse_client *c;
    TK_OK(ftc_lighthouse_client_create(j->lh_addr, &o, &c));
    char *text = NULL;
    bool found = false;
    if (ftc_lighthouse_client_status(c, "ftk", 5000, &text) == 0) {
        json_error_t e;
        json_t *st = json_loads(text, 0, &e);
        char want[32];
        snprintf(want, sizeof(want), "replica_%d:", g);
        found =
            has_id(json_object_get(st, "participants"), want) ||
            has_id(json_object_get(json_object_get(st, "quorum"), "members"),
                   want);
        json_decref(st);
    }
    ftc_free(text);
    ftc_lighthouse_client_destroy(c);
    return found;
}

static bool participates(ftk_job *j, int g, int64_t unused)
{
    (void)unused;
    return is_participant(j, g);
}

void ftk_wait_participant(ftk_job *j, int g, int64_t timeout_ms)
{
    wait_for(j, g, 0, participates, "join", timeout_ms);
}

void ftk_open_gate(ftk_job *j)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/gate", j->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

void ftk_reap_dead(ftk_job *j, int g, int64_t timeout_ms)
{
    int i = j->inc[g];
    assert_int_equal(tk_reap(j->child[g][i], j->ranks, timeout_ms), 0);
    j->dead[g][i] = true;
}

/* ------------------------------------------------------------- logs */

/* Reads a whole log (NUL-terminated, malloc'd; "" if absent). */
static char *slurp(const ftk_job *j, int g, int i, int r)
{
    char path[256];
    ftk_log_path(j, g, i, r, path, sizeof(path));
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1);
    size_t len = 0;
    if (f == NULL) {
        return buf;
    }
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        buf = realloc(buf, len + n + 1);
        memcpy(buf + len, chunk, n);
        len += n;
        buf[len] = '\0';
    }
    fclose(f);
    return buf;
}

int ftk_count(const ftk_job *j, int g, int i, int r, const char *prefix)
{
    char *text = slurp(j, g, i, r);
    int n = 0;
    size_t pl = strlen(prefix);
    for (char *line = text; *line != '\0';) {
        char *end = strchr(line, '\n');
        if (end == NULL) {
            break;
        }
        n += strncmp(line, prefix, pl) == 0;
        line = end + 1;
    }
    free(text);
    return n;
}

/* Whether rank r of (g, i) logged "commit <step>". */
/* The highest step rank r of (g, i) logged as committed, or -1. */
static int64_t last_commit(const ftk_job *j, int g, int i, int r)
{
    char *text = slurp(j, g, i, r);
    int64_t last = -1;
    for (char *line = text; *line != '\0';) {
        char *end = strchr(line, '\n');
        if (end == NULL) {
            break;
        }
        long long step;
        if (sscanf(line, "commit %lld ", &step) == 1 && step > last) {
            last = step;
        }
        line = end + 1;
    }
    free(text);
    return last;
}

/* The id logged by rank 0 of (g, i), or "" if not yet. */
static void logged_id(const ftk_job *j, int g, int i, char *buf, size_t cap)
{
    char *text = slurp(j, g, i, 0);
    char *p = strncmp(text, "id ", 3) == 0 ? text : strstr(text, "\nid ");
    buf[0] = '\0';
    if (p != NULL) {
        p += p == text ? 3 : 4;
        size_t n = strcspn(p, "\n");
        snprintf(buf, cap, "%.*s", (int)n, p);
    }
    free(text);
}

void ftk_replica_id(ftk_job *j, int g, char *buf, size_t cap,
                    int64_t timeout_ms)
{
    logged_id(j, g, j->inc[g], buf, cap);
    TK_WAIT_UNTIL((logged_id(j, g, j->inc[g], buf, cap), buf[0] != '\0'),
                  timeout_ms);
}

/* Prints every log of the job (a failing test's evidence). */
static void dump(const ftk_job *j)
{
    for (int g = 0; g < j->groups; g++) {
        for (int i = 0; i <= j->inc[g]; i++) {
            for (int r = 0; r < j->ranks; r++) {
                char path[256];
                ftk_log_path(j, g, i, r, path, sizeof(path));
                char *text = slurp(j, g, i, r);
                fprintf(stderr, "--- %s\n%s", path, text);
                free(text);
            }
        }
    }
}

/* Polls cond(j, g, arg) until it holds or timeout_ms (scaled) passed;
 * then dumps the logs and fails naming what. */
static void wait_for(ftk_job *j, int g, int64_t arg,
                     bool (*cond)(ftk_job *, int, int64_t), const char *what,
                     int64_t timeout_ms)
{
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    while (!cond(j, g, arg)) {
        if (tk_now_ms() > end) {
            dump(j);
            fail_msg("group %d: %s %lld not seen within %lld ms", g, what,
                     (long long)arg, (long long)tk_ms(timeout_ms));
        }
        tk_pause_ms(5);
    }
}

static bool has_committed(ftk_job *j, int g, int64_t step)
{
    return last_commit(j, g, j->inc[g], 0) >= step;
}

int64_t ftk_wait_commit(ftk_job *j, int g, int64_t step, int64_t timeout_ms)
{
    wait_for(j, g, step, has_committed, "commit of step", timeout_ms);
    return last_commit(j, g, j->inc[g], 0);
}

/* Calls fn(arg, line) on each line (without its newline) of every rank's
 * log of group g's incarnation i. */
static void each_line(const ftk_job *j, int g, int i,
                      void (*fn)(void *, const char *), void *arg)
{
    for (int r = 0; r < j->ranks; r++) {
        char *text = slurp(j, g, i, r);
        for (char *line = text; *line != '\0';) {
            char *end = strchr(line, '\n');
            if (end == NULL) {
                break;
            }
            *end = '\0';
            fn(arg, line);
            line = end + 1;
        }
        free(text);
    }
}

/* The search of ftk_first_commit_after / _without: the earliest commit
 * after t_ns of a step >= min_step in a quorum not in skip[0..n_skip). */
typedef struct first_commit {
    int64_t min_step, t_ns;
    const int64_t *skip;
    size_t n_skip;
    int64_t best, step, quorum_id;
} first_commit;

static void find_first(void *arg, const char *line)
{
    first_commit *f = arg;
    long long s, q, p, t;
    if (sscanf(line, "commit %lld %lld %lld %lld", &s, &q, &p, &t) != 4 ||
        s < f->min_step || t <= f->t_ns || (f->best >= 0 && t >= f->best)) {
        return;
    }
    for (size_t x = 0; x < f->n_skip; x++) {
        if (f->skip[x] == q) {
            return;
        }
    }
    f->best = t;
    f->step = s;
    f->quorum_id = q;
}

int64_t ftk_first_commit_after(ftk_job *j, int g, int64_t min_step,
                               int64_t t_ns)
{
    first_commit f = {min_step, t_ns, NULL, 0, -1, -1, -1};
    for (int i = 0; i <= j->inc[g]; i++) {
        each_line(j, g, i, find_first, &f);
    }
    return f.best;
}

/* Quorum ids that a log line shows its rank in (a round or a commit). */
typedef struct quorum_ids {
    int64_t ids[4096];
    size_t n;
} quorum_ids;

static void add_quorum(void *arg, const char *line)
{
    quorum_ids *qs = arg;
    long long s, q;
    if (sscanf(line, "round %lld %lld", &s, &q) == 2 ||
        sscanf(line, "commit %lld %lld", &s, &q) == 2) {
        assert_true(qs->n < sizeof(qs->ids) / sizeof(qs->ids[0]));
        qs->ids[qs->n++] = q;
    }
}

int64_t ftk_first_commit_without(ftk_job *j, int g, int i, int64_t t_ns,
                                 int64_t *step, int64_t *quorum_id)
{
    static quorum_ids qs;
    qs.n = 0;
    each_line(j, g, i, add_quorum, &qs);
    first_commit f = {0, t_ns, qs.ids, qs.n, -1, -1, -1};
    for (int o = 0; o < j->groups; o++) {
        for (int k = 0; o != g && k <= j->inc[o]; k++) {
            each_line(j, o, k, find_first, &f);
        }
    }
    *step = f.step;
    *quorum_id = f.quorum_id;
    return f.best;
}

/* Checks one incarnation's log: commits consecutive from 0 or from a
 * heal; returns its last committed step + 1 and its final hash. */
static int64_t check_log(const ftk_job *j, int g, int i, int r, bool *covered,
                         int steps, char *hash, size_t cap)
{
    char *text = slurp(j, g, i, r);
    int64_t cur = 0;
    hash[0] = '\0';
    for (char *line = text; *line != '\0';) {
        char *end = strchr(line, '\n');
        if (end == NULL) {
            break;
        }
        *end = '\0';
        long long s, now;
        char h[64];
        if (sscanf(line, "heal %lld", &s) == 1) {
            cur = s;
        } else if (sscanf(line, "commit %lld", &s) == 1) {
            if (s != cur) {
                dump(j);
                fail_msg("group %d inc %d rank %d: committed step %lld, "
                         "expected %lld (a step lost or applied twice)",
                         g, i, r, s, (long long)cur);
            }
            if (s < steps) {
                covered[s] = true;
            }
            cur = s + 1;
        } else if (sscanf(line, "fail %lld %lld", &s, &now) == 2) {
            assert_int_equal(s, cur);
            cur = now;
        } else if (sscanf(line, "final %63s", h) == 1) {
            snprintf(hash, cap, "%s", h);
        }
        line = end + 1;
    }
    free(text);
    return cur;
}

void ftk_check(ftk_job *j)
{
    bool covered[4096] = {false};
    assert_true(j->steps <= 4096);
    char first[FTK_MAX_RANKS][64] = {""};
    for (int g = 0; g < j->groups; g++) {
        for (int i = 0; i <= j->inc[g]; i++) {
            for (int r = 0; r < j->ranks; r++) {
                char hash[64];
                int64_t end = check_log(j, g, i, r, covered, j->steps, hash,
                                        sizeof(hash));
                if (i < j->inc[g] || j->dead[g][i]) {
                    continue; /* a killed incarnation ends anywhere */
                }
                if (end != j->steps || hash[0] == '\0') {
                    dump(j);
                    fail_msg("group %d rank %d ended at step %lld (want "
                             "%d), hash '%s'",
                             g, r, (long long)end, j->steps, hash);
                }
                if (first[r][0] == '\0') {
                    snprintf(first[r], sizeof(first[r]), "%s", hash);
                } else if (strcmp(first[r], hash) != 0) {
                    dump(j);
                    fail_msg("rank %d of group %d ends with state %s, an "
                             "earlier group with %s: not bit-identical",
                             r, g, hash, first[r]);
                }
            }
        }
    }
    for (int s = 0; s < j->steps; s++) {
        if (!covered[s]) {
            fail_msg("no replica committed step %d", s);
        }
    }
}

void ftk_finish(ftk_job *j, int64_t timeout_ms)
{
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    for (int g = 0; g < j->groups; g++) {
        int i = j->inc[g];
        if (i < 0 || j->dead[g][i]) {
            continue;
        }
        int64_t left = end - tk_now_ms();
        /* tk_reap scales its timeout: pass the unscaled rest. */
        int killed =
            tk_reap(j->child[g][i], j->ranks, left > 0 ? left / tk_ms(1) : 0);
        for (int r = 0; r < j->ranks; r++) {
            if (tk_exit_code(&j->child[g][i][r]) != 0) {
                char path[256];
                ftk_log_path(j, g, i, r, path, sizeof(path));
                char *text = slurp(j, g, i, r);
                fprintf(stderr, "--- %s\n%s", path, text);
                free(text);
                fail_msg("group %d rank %d exited %d (%d killed at the "
                         "deadline)",
                         g, r, tk_exit_code(&j->child[g][i][r]), killed);
            }
        }
    }
    ftk_check(j);
}

void ftk_stop(ftk_job *j)
{
    ftc_lighthouse_destroy(j->lh);
    j->lh = NULL;
    for (int g = 0; g < j->groups; g++) {
        ftc_store_server_destroy(j->store[g]);
        j->store[g] = NULL;
    }
}
