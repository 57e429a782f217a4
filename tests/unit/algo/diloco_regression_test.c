/* Streaming DiLoCo against PyTorch: replays every scenario recorded by
 * gen_fixtures.py and requires every float of every replica to match. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo_kit.h"
#include "testkit.h"

#define MAX_REPLICAS 4
#define MAX_N 8
#define MAX_STEPS 32
#define MAX_FRAGS 4
#define FIXTURE_COUNT 32 /* fragments {1,2} x delay {0,1} x ... */
#define TIMEOUT_MS 10000

/* One fixture's configuration, as gen_fixtures.py wrote it. */
typedef struct scenario {
    int replicas;
    size_t n;
    size_t nfrag;
    ftc_algo_range frags[MAX_FRAGS];
    int sync_every;
    int delay;
    double alpha;
    double outer_lr;
    double outer_momentum;
    double inner_lr;
    float init[MAX_N];
    float target[MAX_N];
    float restart[MAX_N];
    int steps;
    char kind[32];
    int64_t fault_step;
    int fault_rank;
    int restart_after;
} scenario;

/* What every replica did; filled by the replica threads. */
typedef struct history {
    float params[MAX_REPLICAS][MAX_STEPS][MAX_N];
    float global[MAX_REPLICAS][MAX_STEPS][MAX_N];
    int outcome[MAX_REPLICAS][MAX_STEPS];
    int64_t step[MAX_REPLICAS][MAX_STEPS];
    float momentum[MAX_REPLICAS][MAX_N];
    int rc[MAX_REPLICAS];
} history;

typedef struct run {
    const scenario *sc;
    sim *s;
    history h;
} run;

/* ---- reading fixtures ---------------------------------------------- */

static json_t *load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", FTC_ALGO_FIXTURES, name);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (j == NULL) {
        fail_msg("%s:%d: %s", path, err.line, err.text);
    }
    return j;
}

static json_t *member(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        fail_msg("fixture lacks \"%s\"", key);
    }
    return v;
}

static double number(json_t *obj, const char *key)
{
    return json_number_value(member(obj, key));
}

/* Reads a list of exactly n numbers as float (exact: the fixture holds
 * the shortest decimal of each float32). */
static void floats(json_t *arr, float *out, size_t n)
{
    assert_true(json_is_array(arr));
    assert_int_equal(json_array_size(arr), n);
    for (size_t i = 0; i < n; i++) {
        out[i] = (float)json_number_value(json_array_get(arr, i));
    }
}

static void read_scenario(json_t *cfg, scenario *sc)
{
    memset(sc, 0, sizeof(*sc));
    sc->replicas = (int)number(cfg, "replicas");
    sc->n = (size_t)number(cfg, "n_params");
    sc->steps = (int)number(cfg, "steps");
    json_t *frags = member(cfg, "fragments");
    sc->nfrag = json_array_size(frags);
    assert_true(sc->replicas >= 1 && sc->replicas <= MAX_REPLICAS);
    assert_true(sc->n >= 1 && sc->n <= MAX_N);
    assert_true(sc->steps >= 1 && sc->steps <= MAX_STEPS);
    assert_true(sc->nfrag >= 1 && sc->nfrag <= MAX_FRAGS);
    for (size_t f = 0; f < sc->nfrag; f++) {
        json_t *r = json_array_get(frags, f);
        sc->frags[f].offset = (size_t)json_number_value(json_array_get(r, 0));
        sc->frags[f].count = (size_t)json_number_value(json_array_get(r, 1));
    }
    sc->sync_every = (int)number(cfg, "sync_every");
    sc->delay = (int)number(cfg, "fragment_sync_delay");
    sc->alpha = number(cfg, "fragment_update_alpha");
    sc->outer_lr = number(cfg, "outer_lr");
    sc->outer_momentum = number(cfg, "outer_momentum");
    sc->inner_lr = number(cfg, "inner_lr");
    floats(member(cfg, "init"), sc->init, sc->n);
    floats(member(cfg, "target"), sc->target, sc->n);
    floats(member(cfg, "restart"), sc->restart, sc->n);
    snprintf(sc->kind, sizeof(sc->kind), "%s",
             json_string_value(member(cfg, "scenario")));
    sc->fault_step = (int64_t)number(cfg, "fault_step");
    sc->fault_rank = (int)number(cfg, "fault_rank");
    sc->restart_after = (int)number(cfg, "restart_after");
}

/* ---- replaying a scenario ------------------------------------------ */

/* A fresh DiLoCo handle over p, its state registered for healing. */
static ftc_diloco *make_diloco(run *rn, int rank, const ftc_algo_comm *comm,
                               float *p)
{
    const scenario *sc = rn->sc;
    ftc_diloco_opts o;
    ftc_diloco_opts_init(&o);
    o.sync_every = sc->sync_every;
    o.n_fragments = sc->nfrag;
    o.fragments = sc->frags;
    o.fragment_sync_delay = sc->delay;
    o.fragment_update_alpha = sc->alpha;
    o.outer_lr = sc->outer_lr;
    o.outer_momentum = sc->outer_momentum;
    ftc_diloco *dl = NULL;
    if (ftc_diloco_create(comm, p, sc->n, &o, &dl) != 0) {
        return NULL;
    }
    const ftc_algo_buffer *bufs = NULL;
    size_t count = 0;
    ftc_diloco_buffers(dl, &bufs, &count);
    sim_register(rn->s, rank, "params", p, sc->n);
    for (size_t b = 0; b < count; b++) {
        sim_register(rn->s, rank, bufs[b].name, bufs[b].data, bufs[b].count);
    }
    return dl;
}

/* The mock inner optimizer: p -= lr (rank + 1) (p - target), rounded
 * after each operation as the reference's torch ops are. */
static void inner_step(const scenario *sc, int rank, float *p)
{
    float c = (float)(sc->inner_lr * (rank + 1));
    for (size_t i = 0; i < sc->n; i++) {
        float d = p[i] - sc->target[i];
        d = d * c;
        p[i] = p[i] - d;
    }
}

static void replica_main(int rank, void *arg)
{
    run *rn = arg;
    const scenario *sc = rn->sc;
    history *h = &rn->h;
    ftc_algo_comm comm = sim_comm(rn->s, rank);
    float p[MAX_N];
    memcpy(p, sc->init, sizeof(p));
    ftc_diloco *dl = make_diloco(rn, rank, &comm, p);
    int rc = dl == NULL ? FTC_EINVAL : 0;
    const ftc_algo_buffer *bufs = NULL;
    size_t count = 0;
    for (int t = 0; t < sc->steps && rc == 0; t++) {
        inner_step(sc, rank, p);
        rc = ftc_diloco_step(dl, &h->outcome[rank][t], tk_ms(TIMEOUT_MS));
        ftc_diloco_buffers(dl, &bufs, &count);
        memcpy(h->params[rank][t], p, sc->n * sizeof(float));
        memcpy(h->global[rank][t], bufs[0].data, sc->n * sizeof(float));
        h->step[rank][t] = comm.current_step(comm.ctx);
        if (strcmp(sc->kind, "heal") == 0 && rank == sc->fault_rank &&
            t == sc->restart_after) {
            /* The replica dies and comes back with fresh state. */
            ftc_diloco_destroy(dl);
            memcpy(p, sc->restart, sizeof(p));
            sim_restart(rn->s, rank);
            dl = make_diloco(rn, rank, &comm, p);
            rc = dl == NULL ? FTC_EINVAL : rc;
        }
    }
    if (dl != NULL) {
        ftc_diloco_buffers(dl, &bufs, &count);
        memcpy(h->momentum[rank], bufs[1].data, sc->n * sizeof(float));
    }
    h->rc[rank] = rc;
    ftc_diloco_destroy(dl);
}

static void inject(const scenario *sc, sim *s)
{
    if (strcmp(sc->kind, "fail") == 0) {
        sim_fail_allreduce_at(s, sc->fault_step);
    } else if (strcmp(sc->kind, "nonparticipant") == 0) {
        sim_nonparticipant_at(s, sc->fault_rank, sc->fault_step);
    } else if (strcmp(sc->kind, "heal") == 0) {
        sim_heal_at(s, sc->fault_rank, sc->fault_step);
    } else if (strcmp(sc->kind, "none") != 0) {
        fail_msg("unknown scenario '%s'", sc->kind);
    }
}

/* ---- comparing ------------------------------------------------------ */

static void expect_floats(const char *fixture, const char *what, int rank,
                          int t, const float *got, json_t *want_arr, size_t n)
{
    float want[MAX_N];
    floats(want_arr, want, n);
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            fail_msg("%s: replica %d step %d %s[%zu] = %.9g, PyTorch "
                     "reference %.9g",
                     fixture, rank, t, what, i, (double)got[i],
                     (double)want[i]);
        }
    }
}

static void compare(const char *fixture, const scenario *sc, const history *h,
                    json_t *reps)
{
    assert_int_equal(json_array_size(reps), sc->replicas);
    for (int r = 0; r < sc->replicas; r++) {
        json_t *rep = json_array_get(reps, r);
        json_t *params = member(rep, "params");
        json_t *global = member(rep, "global");
        json_t *outcome = member(rep, "outcome");
        json_t *step = member(rep, "step");
        for (int t = 0; t < sc->steps; t++) {
            expect_floats(fixture, "params", r, t, h->params[r][t],
                          json_array_get(params, t), sc->n);
            expect_floats(fixture, "global", r, t, h->global[r][t],
                          json_array_get(global, t), sc->n);
            int want_outcome =
                (int)json_number_value(json_array_get(outcome, t));
            int64_t want_step =
                (int64_t)json_number_value(json_array_get(step, t));
            if (h->outcome[r][t] != want_outcome ||
                h->step[r][t] != want_step) {
                fail_msg("%s: replica %d step %d: outcome %d step %lld, "
                         "reference outcome %d step %lld",
                         fixture, r, t, h->outcome[r][t],
                         (long long)h->step[r][t], want_outcome,
                         (long long)want_step);
            }
        }
        expect_floats(fixture, "momentum", r, sc->steps - 1, h->momentum[r],
                      member(rep, "momentum"), sc->n);
    }
}

/* Whatever each replica did locally, the replicated state (global copy,
 * outer momentum, committed step) ends bit-identical everywhere, and so
 * do the parameters when the last step synchronised the whole vector
 * without mixing in local progress. */
static void expect_replicas_identical(const char *fixture, const scenario *sc,
                                      const history *h)
{
    int last = sc->steps - 1;
    for (int r = 1; r < sc->replicas; r++) {
        size_t bytes = sc->n * sizeof(float);
        int same = memcmp(h->global[r][last], h->global[0][last], bytes) == 0 &&
                   memcmp(h->momentum[r], h->momentum[0], bytes) == 0 &&
                   h->step[r][last] == h->step[0][last];
        if (sc->nfrag == 1 && sc->alpha == 0.0) {
            same = same &&
                   memcmp(h->params[r][last], h->params[0][last], bytes) == 0;
        }
        if (!same) {
            fail_msg("%s: replica %d ended different from replica 0", fixture,
                     r);
        }
    }
}

static void replay(const char *fixture)
{
    json_t *root = load(fixture);
    run *rn = calloc(1, sizeof(*rn));
    assert_non_null(rn);
    scenario sc;
    read_scenario(member(root, "config"), &sc);
    rn->sc = &sc;
    rn->s = sim_create(sc.replicas);
    inject(&sc, rn->s);
    sim_run(rn->s, replica_main, rn);
    if (sim_error(rn->s) != NULL) {
        fail_msg("%s: simulation: %s", fixture, sim_error(rn->s));
    }
    for (int r = 0; r < sc.replicas; r++) {
        if (rn->h.rc[r] != 0) {
            fail_msg("%s: replica %d failed with %s", fixture, r,
                     ftc_err_name(rn->h.rc[r]));
        }
    }
    compare(fixture, &sc, &rn->h, member(root, "replicas"));
    expect_replicas_identical(fixture, &sc, &rn->h);
    sim_destroy(rn->s);
    free(rn);
    json_decref(root);
}

/* ---- tests ---------------------------------------------------------- */

static void every_fixture_matches_pytorch(void **state)
{
    (void)state;
    json_t *index = load("index.json");
    json_t *list = member(index, "fixtures");
    assert_int_equal(json_array_size(list), FIXTURE_COUNT);
    for (size_t i = 0; i < json_array_size(list); i++) {
        replay(json_string_value(json_array_get(list, i)));
    }
    json_decref(index);
}

/* The matrix the fixtures must cover, checked by name so a generator
 * change cannot silently drop a case. */
static void fixtures_cover_the_matrix(void **state)
{
    (void)state;
    json_t *index = load("index.json");
    json_t *list = member(index, "fixtures");
    static const int alphas[] = {0, 50, 100};
    static const char *const kinds[] = {"none", "fail"};
    for (int f = 1; f <= 2; f++) {
        for (int d = 0; d <= 1; d++) {
            for (int a = 0; a < 3; a++) {
                for (int k = 0; k < 2; k++) {
                    char name[64];
                    snprintf(name, sizeof(name), "diloco_f%d_d%d_a%03d_%s.json",
                             f, d, alphas[a], kinds[k]);
                    int found = 0;
                    for (size_t i = 0; i < json_array_size(list); i++) {
                        const char *s =
                            json_string_value(json_array_get(list, i));
                        found |= strcmp(s, name) == 0;
                    }
                    if (!found) {
                        fail_msg("fixture %s missing", name);
                    }
                }
            }
        }
    }
    json_decref(index);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixtures_cover_the_matrix),
        cmocka_unit_test(every_fixture_matches_pytorch),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
