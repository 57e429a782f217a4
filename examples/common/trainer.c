/* Shared trainer plumbing: configuration, the in-group process group, the
 * sharded update, and the FTC_EVENT lines `ftc run` reads. */
#include "trainer.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TIMEOUT_MS 60000

static void usage(FILE *out, const char *name)
{
    fprintf(out,
            "usage: %s [options]   (started by `ftc run`, which sets the "
            "FTC_* environment)\n"
            "  --steps N          committed steps to train (300)\n"
            "  --batch B          examples per rank per step (32)\n"
            "  --inputs D --hidden H --classes K   model shape (32 64 8)\n"
            "  --lr X --momentum M  SGD (0.05 0.9)\n"
            "  --noise S --seed S   the synthetic task (2.0 1)\n"
            "  --step-sleep-ms T  extra time per step, for demos (0)\n"
            "  --backend NAME     process-group backend of the in-group and\n"
            "                     cross-replica groups: tcp, nccl, xccl, ...\n"
            "                     (FTC_PG_BACKEND, else tcp)\n"
            "  DiLoCo: --sync-every H (20) --fragments F (2) --delay D (1)\n"
            "          --alpha A (0) --outer-lr X (0.7) --outer-momentum M "
            "(0.9)\n",
            name);
}

static int parse_args(trainer_cfg *c, int argc, char **argv, const char *name)
{
    static const struct option opts[] = {
        {"steps", required_argument, NULL, 's'},
        {"batch", required_argument, NULL, 'b'},
        {"inputs", required_argument, NULL, 'i'},
        {"hidden", required_argument, NULL, 'H'},
        {"classes", required_argument, NULL, 'k'},
        {"lr", required_argument, NULL, 'l'},
        {"momentum", required_argument, NULL, 'm'},
        {"noise", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 'S'},
        {"step-sleep-ms", required_argument, NULL, 'z'},
        {"sync-every", required_argument, NULL, 'e'},
        {"fragments", required_argument, NULL, 'f'},
        {"delay", required_argument, NULL, 'd'},
        {"alpha", required_argument, NULL, 'a'},
        {"outer-lr", required_argument, NULL, 'L'},
        {"outer-momentum", required_argument, NULL, 'M'},
        {"backend", required_argument, NULL, 'B'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *c = (trainer_cfg){.steps = 300,
                       .batch = 32,
                       .shape = {.inputs = 32, .hidden = 64, .classes = 8},
                       .lr = 0.05f,
                       .momentum = 0.9f,
                       .noise = 2.0f,
                       .seed = 1,
                       .sync_every = 20,
                       .fragments = 2,
                       .delay = 1,
                       .alpha = 0.0f,
                       .outer_lr = 0.7f,
                       .outer_momentum = 0.9f};
    const char *env = getenv("FTC_PG_BACKEND");
    c->backend = env != NULL && env[0] != '\0' ? env : "tcp";
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 's':
            c->steps = strtoll(optarg, NULL, 10);
            break;
        case 'b':
            c->batch = (int)strtol(optarg, NULL, 10);
            break;
        case 'i':
            c->shape.inputs = (int)strtol(optarg, NULL, 10);
            break;
        case 'H':
            c->shape.hidden = (int)strtol(optarg, NULL, 10);
            break;
        case 'k':
            c->shape.classes = (int)strtol(optarg, NULL, 10);
            break;
        case 'l':
            c->lr = strtof(optarg, NULL);
            break;
        case 'm':
            c->momentum = strtof(optarg, NULL);
            break;
        case 'n':
            c->noise = strtof(optarg, NULL);
            break;
        case 'S':
            c->seed = strtoull(optarg, NULL, 10);
            break;
        case 'z':
            c->step_sleep_ms = (int)strtol(optarg, NULL, 10);
            break;
        case 'e':
            c->sync_every = (int)strtol(optarg, NULL, 10);
            break;
        case 'f':
            c->fragments = (int)strtol(optarg, NULL, 10);
            break;
        case 'd':
            c->delay = (int)strtol(optarg, NULL, 10);
            break;
        case 'a':
            c->alpha = strtof(optarg, NULL);
            break;
        case 'L':
            c->outer_lr = strtof(optarg, NULL);
            break;
        case 'M':
            c->outer_momentum = strtof(optarg, NULL);
            break;
        case 'B':
            c->backend = optarg;
            break;
        case 'h':
            usage(stdout, name);
            exit(0);
        default:
            usage(stderr, name);
            return -1;
        }
    }
    if (c->steps < 1 || c->batch < 1 || c->shape.inputs < 1 ||
        c->shape.hidden < 1 || c->shape.classes < 2) {
        fprintf(stderr,
                "%s: steps, batch and the model shape must be "
                "positive (and at least 2 classes)\n",
                name);
        return -1;
    }
    return 0;
}

static int fail(const char *what)
{
    fprintf(stderr, "trainer: %s: %s\n", what, ftc_last_error());
    return 1;
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v != NULL ? (int)strtol(v, NULL, 10) : dflt;
}

/* The in-group process group on the group's store, under this
 * incarnation's prefix, so a restarted group never meets its dead
 * predecessor's addresses. */
static int connect_group(trainer *t, const ftc_manager_opts *mo)
{
    if (t->group_size == 1) {
        return 0;
    }
    char prefix[512];
    snprintf(prefix, sizeof(prefix), "%s/trainer",
             mo->store_prefix != NULL ? mo->store_prefix : mo->replica_id);
    ftc_store_client_opts so;
    ftc_store_client_opts_init(&so);
    so.connect_timeout_ms = TIMEOUT_MS;
    /* The group store takes the job's token, as the manager's does. */
    const char *token = mo->token != NULL ? mo->token : getenv("FTC_TOKEN");
    so.token = token != NULL && token[0] != '\0' ? token : NULL;
    if (ftc_store_client_connect(mo->store_addr, &so, &t->store) != 0) {
        return fail("connecting to the group store");
    }
    ftc_pg_opts po;
    ftc_pg_opts_init(&po);
    po.timeout_ms = TIMEOUT_MS;
    po.backend = t->cfg.backend;
    if (ftc_pg_create(t->store, prefix, t->group_rank, t->group_size, &po,
                      &t->intra) != 0) {
        return fail("creating the in-group process group");
    }
    return 0;
}

static int alloc_model(trainer *t)
{
    t->n = mlp_param_count(t->cfg.shape);
    t->shard = (t->n + (size_t)t->group_size - 1) / (size_t)t->group_size;
    size_t padded = t->shard * (size_t)t->group_size;
    t->params = calloc(padded, sizeof(float));
    t->grads = calloc(padded, sizeof(float));
    t->mine = calloc(t->shard, sizeof(float));
    t->mom = calloc(t->shard, sizeof(float));
    t->scratch =
        calloc(mlp_scratch_count(t->cfg.shape,
                                 t->cfg.batch > 512 ? t->cfg.batch : 512),
               sizeof(float));
    int rows = t->cfg.batch > 512 ? t->cfg.batch : 512;
    t->x = calloc((size_t)rows * (size_t)t->cfg.shape.inputs, sizeof(float));
    t->y = calloc((size_t)rows, sizeof(int));
    if (t->params == NULL || t->grads == NULL || t->mine == NULL ||
        t->mom == NULL || t->scratch == NULL || t->x == NULL || t->y == NULL) {
        fprintf(stderr, "trainer: out of memory\n");
        return 1;
    }
    if (task_init(&t->data, t->cfg.shape.inputs, t->cfg.shape.classes,
                  t->cfg.noise, t->cfg.seed) != 0) {
        fprintf(stderr, "trainer: out of memory\n");
        return 1;
    }
    /* Every replica starts from the same weights; the manager's init_sync
     * would make them identical anyway. */
    mlp_init(t->cfg.shape, t->params, t->cfg.seed * 7919 + 1);
    return 0;
}

int trainer_init(trainer *t, int argc, char **argv, const char *name)
{
    memset(t, 0, sizeof(*t));
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse_args(&t->cfg, argc, argv, name) != 0) {
        return 2;
    }
    ftc_manager_opts mo;
    ftc_manager_opts_init(&mo);
    if (ftc_manager_opts_from_env(&mo) != 0) {
        fprintf(stderr, "%s: %s (start it with `ftc run`)\n", name,
                ftc_last_error());
        return 2;
    }
    t->group_rank = mo.group_rank;
    t->group_size = mo.group_size > 0 ? mo.group_size : 1;
    t->replica_index = env_int("FTC_REPLICA_INDEX", 0);
    if (alloc_model(t) != 0 || connect_group(t, &mo) != 0) {
        return 1;
    }
    /* The cross-replica group on the same backend (the manager rebuilds
     * it on that backend after every quorum change). */
    ftc_pg_opts mpo;
    ftc_pg_opts_init(&mpo);
    if (mo.pg_opts != NULL) {
        mpo = *mo.pg_opts;
    }
    mpo.backend = t->cfg.backend;
    mo.pg_opts = &mpo;
    if (ftc_manager_create(&mo, &t->manager) != 0) {
        return fail("creating the manager");
    }
    int64_t shape[1] = {(int64_t)t->shard};
    if (ftc_manager_register(t->manager, "params.shard", FTC_DTYPE_F32, shape,
                             1, trainer_own_params(t)) != 0 ||
        ftc_manager_register(t->manager, "momentum.shard", FTC_DTYPE_F32, shape,
                             1, t->mom) != 0) {
        return fail("registering the state");
    }
    return 0;
}

void trainer_fini(trainer *t)
{
    ftc_manager_destroy(t->manager);
    ftc_pg_destroy(t->intra);
    ftc_store_client_close(t->store);
    task_free(&t->data);
    free(t->params);
    free(t->grads);
    free(t->mine);
    free(t->mom);
    free(t->scratch);
    free(t->x);
    free(t->y);
}

float *trainer_own_params(const trainer *t)
{
    return t->params + t->shard * (size_t)t->group_rank;
}

/* Waits for the work a collective call just started (rc is the call's
 * result; *w is read only after the call returned it). */
static int run(int rc, ftc_work **w, const char *what)
{
    if (rc == 0) {
        rc = ftc_work_wait(*w, TIMEOUT_MS);
    }
    ftc_work_release(*w);
    *w = NULL;
    if (rc != 0) {
        fprintf(stderr, "trainer: %s: %s\n", what, ftc_last_error());
    }
    return rc;
}

int trainer_gather_params(trainer *t)
{
    if (t->intra == NULL) {
        return 0;
    }
    memcpy(t->mine, trainer_own_params(t), t->shard * sizeof(float));
    ftc_tensor in = ftc_tensor_cpu(t->mine, t->shard, FTC_DTYPE_F32);
    ftc_tensor out = ftc_tensor_cpu(t->params, t->shard * (size_t)t->group_size,
                                    FTC_DTYPE_F32);
    ftc_work *w = NULL;
    int rc = ftc_pg_allgather(t->intra, &in, &out, NULL, &w);
    return run(rc, &w, "in-group allgather");
}

int trainer_local_gradient(trainer *t, int64_t step)
{
    int data_shard = t->replica_index * t->group_size + t->group_rank;
    task_batch(&t->data, data_shard, step, t->cfg.batch, t->x, t->y);
    float loss = mlp_loss_grad(t->cfg.shape, t->params, t->x, t->y,
                               t->cfg.batch, t->grads, t->scratch, NULL);
    if (t->intra == NULL) {
        memcpy(t->mine, t->grads, t->shard * sizeof(float));
        t->last_loss = loss;
        return 0;
    }
    ftc_tensor in = ftc_tensor_cpu(t->grads, t->shard * (size_t)t->group_size,
                                   FTC_DTYPE_F32);
    ftc_tensor out = ftc_tensor_cpu(t->mine, t->shard, FTC_DTYPE_F32);
    ftc_work *w = NULL;
    int rc = ftc_pg_reduce_scatter(t->intra, &in, &out, FTC_OP_AVG, NULL, &w);
    rc = run(rc, &w, "in-group reduce_scatter");
    if (rc != 0) {
        return rc;
    }
    ftc_tensor l = ftc_tensor_cpu(&loss, 1, FTC_DTYPE_F32);
    rc = ftc_pg_allreduce(t->intra, &l, &l, FTC_OP_AVG, NULL, &w);
    rc = run(rc, &w, "in-group loss average");
    t->last_loss = loss;
    return rc;
}

void trainer_sgd_update(trainer *t, float *shard, const float *grad)
{
    float mu = t->cfg.momentum, lr = t->cfg.lr;
    for (size_t i = 0; i < t->shard; i++) {
        t->mom[i] = mu * t->mom[i] + grad[i];
        shard[i] -= lr * t->mom[i];
    }
}

void trainer_event_step(trainer *t, int committed)
{
    if (t->group_rank != 0) {
        return;
    }
    printf("FTC_EVENT {\"kind\":\"step\",\"step\":%" PRId64
           ",\"committed\":%s,\"loss\":%.6f,\"participants\":%" PRId64
           ",\"quorum_id\":%" PRId64 "}\n",
           ftc_manager_current_step(t->manager), committed ? "true" : "false",
           (double)t->last_loss, ftc_manager_num_participants(t->manager),
           ftc_manager_quorum_id(t->manager));
}

/* text, cut to cap, with what could break a JSON string (quotes,
 * backslashes, control characters) replaced. */
static void json_safe(char *msg, size_t cap, const char *text)
{
    snprintf(msg, cap, "%s", text);
    for (char *p = msg; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) {
            *p = '\'';
        }
    }
}

void trainer_event_error(trainer *t, const char *what)
{
    char text[256], msg[256];
    snprintf(text, sizeof(text), "%s: %s", what, ftc_last_error());
    json_safe(msg, sizeof(msg), text);
    printf("FTC_EVENT {\"kind\":\"error\",\"step\":%" PRId64
           ",\"message\":\"%s\"}\n",
           ftc_manager_current_step(t->manager), msg);
}

int trainer_end_if_job_finished(trainer *t, int rc, const char *what)
{
    if (rc != FTC_EFINISHED) {
        return 0;
    }
    /* The lighthouse's reason, without the layers that carried it. */
    const char *err = ftc_last_error();
    const char *why = strstr(err, "the job finished");
    char msg[128];
    json_safe(msg, sizeof(msg), why != NULL ? why : err);
    printf("FTC_EVENT {\"kind\":\"ended\",\"message\":\"%s\"}\n", msg);
    printf("ended at step %" PRId64 " (%s): %s\n",
           ftc_manager_current_step(t->manager), what, err);
    return 1;
}

/* FNV-1a over the model's bytes: equal parameters, equal checksum. */
static uint64_t checksum(const float *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n * sizeof(float); i++) {
        h = (h ^ b[i]) * 0x100000001b3ULL;
    }
    return h;
}

int trainer_finish(trainer *t, const float *state_shard)
{
    enum { EVAL = 512 };
    /* The run reached its end: the manager's goodbye says the job finished
     * here, so a group that missed the end is refused, not trained alone. */
    ftc_manager_finish(t->manager);
    if (state_shard != trainer_own_params(t)) {
        memcpy(trainer_own_params(t), state_shard, t->shard * sizeof(float));
    }
    int rc = trainer_gather_params(t);
    if (rc != 0) {
        return rc;
    }
    /* Held-out data: a shard no rank trains on. */
    task_batch(&t->data, 1 << 20, 0, EVAL, t->x, t->y);
    int correct = 0;
    float loss = mlp_loss_grad(t->cfg.shape, t->params, t->x, t->y, EVAL, NULL,
                               t->scratch, &correct);
    uint64_t sum = checksum(t->params, t->n);
    printf("FTC_EVENT {\"kind\":\"result\",\"checksum\":\"%016" PRIx64
           "\",\"final_loss\":%.6f,\"accuracy\":%.4f,\"steps\":%" PRId64 "}\n",
           sum, (double)loss, (double)correct / EVAL,
           ftc_manager_current_step(t->manager));
    printf("done: %" PRId64 " steps, held-out loss %.4f, accuracy %.1f%%, "
           "parameters %016" PRIx64 "\n",
           ftc_manager_current_step(t->manager), (double)loss,
           100.0 * correct / EVAL, sum);
    return 0;
}

void trainer_pace(const trainer *t)
{
    if (t->cfg.step_sleep_ms > 0) {
        struct timespec ts = {t->cfg.step_sleep_ms / 1000,
                              (long)(t->cfg.step_sleep_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
}
