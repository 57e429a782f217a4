/* The simulated comm: replicas meet in rounds under one mutex; averages
 * are summed in rank order so every replica gets bit-identical results. */
#include "algo_kit.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "testkit.h"

#define SIM_MAX_REPLICAS 16
#define SIM_MAX_BUFFERS 8
#define SIM_MAX_FAULTS 16
#define SIM_MAX_ISSUED 4096
#define SIM_DEFAULT_TIMEOUT_MS 10000

enum fault_kind { FAULT_FAIL, FAULT_NONPARTICIPANT, FAULT_HEAL };

typedef struct fault {
    enum fault_kind kind;
    int rank;
    int64_t step;
    int used;
} fault;

typedef struct named_buffer {
    char name[64];
    float *data;
    size_t count;
} named_buffer;

typedef struct replica {
    sim *s;
    int rank;
    int64_t step;      /* committed steps */
    size_t seq;        /* averages issued in the current round */
    int participating; /* in the current round */
    int quorum_error;  /* returned by the next start_quorum */
    int commit_error;  /* returned by the next should_commit */
    named_buffer bufs[SIM_MAX_BUFFERS];
    size_t nbufs;
    size_t issued[SIM_MAX_ISSUED];
} replica;

/* The k-th average of a round: everyone's input, then the result. */
typedef struct slot {
    size_t n;
    int issued;
    int mismatch;
    int computed;
    float *inputs; /* replicas x n */
    float *result; /* n */
} slot;

struct ftc_algo_work {
    int rank;
    size_t seq;
    float *buf;
    size_t n;
};

struct sim {
    int n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    replica reps[SIM_MAX_REPLICAS];
    /* quorum rounds */
    int arrived;
    int64_t round;
    int round_fail;
    slot *slots;
    size_t nslots;
    /* commit votes */
    int voted;
    int votes_ok;
    int64_t vote_gen;
    int decision;
    fault faults[SIM_MAX_FAULTS];
    size_t nfaults;
    char error[256];
};

sim *sim_create(int replicas)
{
    if (replicas < 1 || replicas > SIM_MAX_REPLICAS) {
        return NULL;
    }
    sim *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->n = replicas;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &attr);
    pthread_condattr_destroy(&attr);
    s->votes_ok = 1;
    for (int r = 0; r < replicas; r++) {
        s->reps[r].s = s;
        s->reps[r].rank = r;
        s->reps[r].participating = 1;
    }
    return s;
}

static void clear_slots(sim *s)
{
    for (size_t i = 0; i < s->nslots; i++) {
        free(s->slots[i].inputs);
        free(s->slots[i].result);
    }
    free(s->slots);
    s->slots = NULL;
    s->nslots = 0;
}

void sim_destroy(sim *s)
{
    if (s == NULL) {
        return;
    }
    clear_slots(s);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void set_error(sim *s, const char *msg)
{
    if (s->error[0] == '\0') {
        snprintf(s->error, sizeof(s->error), "%s", msg);
    }
}

const char *sim_error(sim *s)
{
    pthread_mutex_lock(&s->mu);
    const char *e = s->error[0] != '\0' ? s->error : NULL;
    pthread_mutex_unlock(&s->mu);
    return e;
}

static void add_fault(sim *s, enum fault_kind kind, int rank, int64_t step)
{
    if (s->nfaults < SIM_MAX_FAULTS) {
        s->faults[s->nfaults++] = (fault){kind, rank, step, 0};
    }
}

void sim_fail_allreduce_at(sim *s, int64_t step)
{
    add_fault(s, FAULT_FAIL, -1, step);
}

void sim_nonparticipant_at(sim *s, int rank, int64_t step)
{
    add_fault(s, FAULT_NONPARTICIPANT, rank, step);
}

void sim_heal_at(sim *s, int rank, int64_t step)
{
    add_fault(s, FAULT_HEAL, rank, step);
}

void sim_fail_next_quorum(sim *s, int rank, int code)
{
    pthread_mutex_lock(&s->mu);
    s->reps[rank].quorum_error = code;
    pthread_mutex_unlock(&s->mu);
}

void sim_fail_next_commit(sim *s, int rank, int code)
{
    pthread_mutex_lock(&s->mu);
    s->reps[rank].commit_error = code;
    pthread_mutex_unlock(&s->mu);
}

void sim_restart(sim *s, int rank)
{
    pthread_mutex_lock(&s->mu);
    s->reps[rank].step = 0;
    pthread_mutex_unlock(&s->mu);
}

/* Takes a replica's one-shot injected error (0 if none). */
static int take_error(int *pending)
{
    int code = *pending;
    *pending = 0;
    return code;
}

void sim_register(sim *s, int rank, const char *name, float *data, size_t count)
{
    pthread_mutex_lock(&s->mu);
    replica *r = &s->reps[rank];
    size_t i = 0;
    while (i < r->nbufs && strcmp(r->bufs[i].name, name) != 0) {
        i++;
    }
    if (i == SIM_MAX_BUFFERS) {
        set_error(s, "too many registered buffers");
    } else {
        snprintf(r->bufs[i].name, sizeof(r->bufs[i].name), "%s", name);
        r->bufs[i].data = data;
        r->bufs[i].count = count;
        r->nbufs = i == r->nbufs ? i + 1 : r->nbufs;
    }
    pthread_mutex_unlock(&s->mu);
}

/* Copies replica 0's registered buffers into dst's, by name. */
static void heal(sim *s, replica *dst)
{
    const replica *src = &s->reps[0];
    for (size_t i = 0; i < src->nbufs; i++) {
        size_t j = 0;
        while (j < dst->nbufs &&
               strcmp(dst->bufs[j].name, src->bufs[i].name) != 0) {
            j++;
        }
        if (j == dst->nbufs || dst->bufs[j].count != src->bufs[i].count) {
            set_error(s, "healing buffers do not match");
            continue;
        }
        memcpy(dst->bufs[j].data, src->bufs[i].data,
               src->bufs[i].count * sizeof(float));
    }
    dst->step = src->step;
}

/* The last replica to arrive forms the round: applies this step's faults
 * and forgets the previous round's averages. Called with the lock held. */
static void form_round(sim *s)
{
    int64_t step = s->reps[0].step;
    s->round_fail = 0;
    for (int r = 0; r < s->n; r++) {
        s->reps[r].participating = 1;
    }
    for (size_t i = 0; i < s->nfaults; i++) {
        fault *f = &s->faults[i];
        if (f->used || f->step != step) {
            continue;
        }
        f->used = 1;
        if (f->kind == FAULT_FAIL) {
            s->round_fail = 1;
        } else if (f->kind == FAULT_NONPARTICIPANT) {
            s->reps[f->rank].participating = 0;
        } else {
            heal(s, &s->reps[f->rank]);
        }
    }
    clear_slots(s);
    s->arrived = 0;
    s->round++;
}

/* The absolute CLOCK_MONOTONIC deadline of a comm timeout in *ts; 0 when
 * there is none. */
static int deadline_of(int64_t timeout_ms, struct timespec *ts)
{
    if (timeout_ms == FTC_TIMEOUT_INFINITE) {
        return 0;
    }
    if (timeout_ms == FTC_TIMEOUT_DEFAULT) {
        timeout_ms = tk_ms(SIM_DEFAULT_TIMEOUT_MS);
    }
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += timeout_ms / 1000;
    ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
    return 1;
}

/* One wait on the condition variable; FTC_ETIMEDOUT past the deadline. */
static int wait_cv(sim *s, int has_deadline, const struct timespec *ts)
{
    if (!has_deadline) {
        pthread_cond_wait(&s->cv, &s->mu);
        return 0;
    }
    if (pthread_cond_timedwait(&s->cv, &s->mu, ts) == ETIMEDOUT) {
        return ftc__seterr(FTC_ETIMEDOUT, "sim: replicas did not meet");
    }
    return 0;
}

static int sim_start_quorum(void *ctx, int64_t timeout_ms)
{
    replica *me = ctx;
    sim *s = me->s;
    struct timespec ts;
    int has_deadline = deadline_of(timeout_ms, &ts);
    pthread_mutex_lock(&s->mu);
    int injected = take_error(&me->quorum_error);
    if (injected != 0) {
        pthread_mutex_unlock(&s->mu);
        return ftc__seterr(injected, "injected quorum failure");
    }
    me->seq = 0;
    int64_t round = s->round;
    if (++s->arrived == s->n) {
        form_round(s);
        pthread_cond_broadcast(&s->cv);
    }
    int rc = 0;
    while (s->round == round && rc == 0) {
        rc = wait_cv(s, has_deadline, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static slot *slot_at(sim *s, size_t seq)
{
    if (seq >= s->nslots) {
        size_t n = seq + 1;
        slot *grown = realloc(s->slots, n * sizeof(*grown));
        if (grown == NULL) {
            return NULL;
        }
        memset(grown + s->nslots, 0, (n - s->nslots) * sizeof(*grown));
        s->slots = grown;
        s->nslots = n;
    }
    return &s->slots[seq];
}

static int sim_allreduce_avg(void *ctx, float *buf, size_t n,
                             ftc_algo_work **out)
{
    replica *me = ctx;
    sim *s = me->s;
    *out = NULL;
    ftc_algo_work *w = malloc(sizeof(*w));
    if (w == NULL) {
        return FTC_ENOMEM;
    }
    pthread_mutex_lock(&s->mu);
    size_t seq = me->seq++;
    if (seq < SIM_MAX_ISSUED) {
        me->issued[seq] = n;
    }
    slot *sl = slot_at(s, seq);
    if (sl != NULL && sl->issued == 0) {
        sl->n = n;
        sl->inputs = calloc((size_t)s->n * n, sizeof(float));
        sl->result = calloc(n, sizeof(float));
    }
    if (sl == NULL || sl->inputs == NULL || sl->result == NULL) {
        pthread_mutex_unlock(&s->mu);
        free(w);
        return FTC_ENOMEM;
    }
    if (sl->n != n) {
        sl->mismatch = 1;
        set_error(s, "replicas averaged buffers of different lengths");
    } else {
        memcpy(sl->inputs + (size_t)me->rank * n, buf, n * sizeof(float));
    }
    sl->issued++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    *w = (ftc_algo_work){me->rank, seq, buf, n};
    *out = w;
    return 0;
}

/* Sum over participants in rank order (non-participants add 0.0f), then
 * divided by the number of participants, as the manager's SUM + divide. */
static void compute(sim *s, slot *sl)
{
    int participants = 0;
    for (int r = 0; r < s->n; r++) {
        participants += s->reps[r].participating;
    }
    for (size_t i = 0; i < sl->n; i++) {
        float acc = 0.0f;
        for (int r = 0; r < s->n; r++) {
            float x = sl->inputs[(size_t)r * sl->n + i];
            acc += s->reps[r].participating ? x : 0.0f;
        }
        sl->result[i] = acc / (float)participants;
    }
    sl->computed = 1;
}

static int sim_wait(void *ctx, ftc_algo_work *w, int64_t timeout_ms)
{
    replica *me = ctx;
    sim *s = me->s;
    struct timespec ts;
    int has_deadline = deadline_of(timeout_ms, &ts);
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    if (w->seq >= s->nslots) {
        set_error(s, "wait for an average of an earlier round");
        pthread_mutex_unlock(&s->mu);
        free(w);
        return FTC_ESTALE;
    }
    while (s->slots[w->seq].issued < s->n && rc == 0) {
        rc = wait_cv(s, has_deadline, &ts);
    }
    slot *sl = &s->slots[w->seq];
    if (rc == 0 && s->round_fail) {
        rc = ftc__seterr(FTC_EPEER, "sim: injected failure of this round");
    } else if (rc == 0 && sl->mismatch) {
        rc = ftc__seterr(FTC_EINVAL, "sim: lengths differ across replicas");
    } else if (rc == 0) {
        if (!sl->computed) {
            compute(s, sl);
        }
        memcpy(w->buf, sl->result, sl->n * sizeof(float));
    }
    pthread_mutex_unlock(&s->mu);
    free(w);
    return rc;
}

static int sim_should_commit(void *ctx, int local_ok, int *commit,
                             int64_t timeout_ms)
{
    replica *me = ctx;
    sim *s = me->s;
    struct timespec ts;
    int has_deadline = deadline_of(timeout_ms, &ts);
    pthread_mutex_lock(&s->mu);
    int injected = take_error(&me->commit_error);
    if (injected != 0) {
        pthread_mutex_unlock(&s->mu);
        *commit = 0;
        return ftc__seterr(injected, "injected commit failure");
    }
    int64_t gen = s->vote_gen;
    s->votes_ok = s->votes_ok && local_ok;
    if (++s->voted == s->n) {
        s->decision = s->votes_ok && !s->round_fail;
        s->voted = 0;
        s->votes_ok = 1;
        s->vote_gen++;
        pthread_cond_broadcast(&s->cv);
    }
    int rc = 0;
    while (s->vote_gen == gen && rc == 0) {
        rc = wait_cv(s, has_deadline, &ts);
    }
    *commit = rc == 0 && s->decision;
    if (*commit) {
        me->step++;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int64_t sim_current_step(void *ctx)
{
    replica *me = ctx;
    return me->step;
}

ftc_algo_comm sim_comm(sim *s, int rank)
{
    return (ftc_algo_comm){
        .ctx = &s->reps[rank],
        .start_quorum = sim_start_quorum,
        .allreduce_avg = sim_allreduce_avg,
        .wait = sim_wait,
        .should_commit = sim_should_commit,
        .current_step = sim_current_step,
    };
}

size_t sim_issued(sim *s, int rank, size_t *sizes, size_t max)
{
    pthread_mutex_lock(&s->mu);
    const replica *r = &s->reps[rank];
    size_t n = r->seq;
    for (size_t i = 0; i < n && i < max && i < SIM_MAX_ISSUED; i++) {
        sizes[i] = r->issued[i];
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

typedef struct run_arg {
    sim *s;
    int rank;
    void (*fn)(int rank, void *arg);
    void *arg;
} run_arg;

static void *run_replica(void *p)
{
    run_arg *a = p;
    a->fn(a->rank, a->arg);
    return NULL;
}

void sim_run(sim *s, void (*fn)(int rank, void *arg), void *arg)
{
    pthread_t threads[SIM_MAX_REPLICAS];
    run_arg args[SIM_MAX_REPLICAS];
    for (int r = 0; r < s->n; r++) {
        args[r] = (run_arg){s, r, fn, arg};
        if (pthread_create(&threads[r], NULL, run_replica, &args[r]) != 0) {
            fail_msg("pthread_create for replica %d", r);
        }
    }
    for (int r = 0; r < s->n; r++) {
        pthread_join(threads[r], NULL);
    }
}
