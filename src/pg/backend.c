/* Backends as the pg layer sees them: the registry (tcp and xccl built in,
 * "baby-<inner>" made from the inner one's table, other names loaded from a
 * plugin library on first use), building a group on
 * a backend, and the calls ftc/plugin/backend.h offers a backend:
 * completing a request, the unique-id exchange, setting an error. */
#include <dlfcn.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include "base/plugin.h"
#include "pg/baby/baby.h"
#include "pg/pg_int.h"

/* The end of the 1.0 table: a plugin's table is never smaller. */
#define FIRST_SIZE                                                             \
    (offsetof(ftc_pg_backend, destroy) + sizeof(((ftc_pg_backend *)0)->destroy))

#define MAX_BACKENDS 16

/* Process-wide: loaded backends stay for the process's life (a group may
 * outlive anything else). Guarded by lock; an entry is complete before
 * count covers it and never changes afterwards. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char name[FTC__PG_BACKEND_NAME_MAX];
    ftc_pg_backend table;
} backends[MAX_BACKENDS];
static int count;

const char *ftc_pg_coll_name(int coll)
{
    return ftc__coll_name(coll);
}

int ftc_pg_backend_seterr(int code, const char *fmt, ...)
{
    char msg[FTC__PG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ftc__seterr(code, "%s", msg);
}

/* Checks t (the table of backend name) and copies its known prefix into
 * out. -1 with why filled when it cannot be used. */
static int adopt(const ftc_pg_backend *t, ftc_pg_backend *out, char *why,
                 size_t why_size)
{
    if (ftc__plugin_check_abi(t->abi_version, t->struct_size,
                              FTC_PG_BACKEND_ABI_VERSION, FIRST_SIZE, why,
                              why_size) != 0) {
        return -1;
    }
    memset(out, 0, sizeof(*out));
    memcpy(out, t,
           t->struct_size < sizeof(*out) ? t->struct_size : sizeof(*out));
    if (out->name == NULL || out->create == NULL || out->submit == NULL ||
        out->abort == NULL || out->status == NULL || out->destroy == NULL) {
        snprintf(why, why_size,
                 "lacks a required slot (name, create, submit, abort, "
                 "status and destroy are required)");
        return -1;
    }
    return 0;
}

static int valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= FTC__PG_BACKEND_NAME_MAX) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
            return 0;
        }
    }
    return 1;
}

/* Loads backend name with lock held into backends[count]. */
static int load(const char *name)
{
    const char *symbol = FTC_PG_BACKEND_ENTRY_SYMBOL;
    char lib[96], why[768];
    const char *path = ftc__pg_backend_path_env(name);
    if (path == NULL || path[0] == '\0') {
        snprintf(lib, sizeof(lib), "libftc_pg_%s.so", name);
        path = lib;
    }
    if (count == MAX_BACKENDS) {
        return ftc__seterr(FTC_ENOTSUP,
                           "pg backend '%s': %d backends are loaded already",
                           name, MAX_BACKENDS);
    }
    void *h;
    void (*fn)(void);
    int bad = ftc__plugin_open(path, symbol, &h, &fn, why, sizeof(why));
    if (bad == 0) {
        typedef const ftc_pg_backend *(*entry_fn)(void);
        const ftc_pg_backend *t = ((entry_fn)fn)();
        if (t == NULL) {
            /* The optional ftc_pg_backend_error() says why (as the device
             * plugins' ftc_device_plugin_error()). */
            typedef const char *(*error_fn)(void);
            error_fn err = NULL;
            *(void **)&err = dlsym(h, FTC_PG_BACKEND_ERROR_SYMBOL);
            const char *text = err != NULL ? err() : NULL;
            snprintf(why, sizeof(why), "returned no table: %s",
                     text != NULL && text[0] != '\0'
                         ? text
                         : "its library is unusable in this process");
            bad = -1;
        } else {
            bad = adopt(t, &backends[count].table, why, sizeof(why));
        }
        if (bad != 0) {
            ftc__plugin_close(h);
        }
    }
    if (bad != 0) {
        return ftc__seterr(FTC_ENOTSUP,
                           "pg backend '%s' is not available: library %s, "
                           "symbol %s: %s",
                           name, path, symbol, why);
    }
    snprintf(backends[count].name, sizeof(backends[count].name), "%s", name);
    count++;
    return 0;
}

static int find(const char *name)
{
    int i = 0;
    while (i < count && strcmp(backends[i].name, name) != 0) {
        i++;
    }
    return i;
}

/* The built-in tables, once (lock held). */
static int builtins(void)
{
    if (count > 0) {
        return 0;
    }
    char why[320];
    /* The built-in table passes the same checks as a plugin's. */
    if (adopt(&ftc__tcp_backend, &backends[0].table, why, sizeof(why)) != 0) {
        return ftc__seterr(FTC_ENOTSUP, "pg backend 'tcp': it %s", why);
    }
    if (adopt(&ftc__xccl_backend, &backends[1].table, why, sizeof(why)) != 0) {
        return ftc__seterr(FTC_ENOTSUP, "pg backend 'xccl': it %s", why);
    }
    /* xccl loads oneCCL itself, at its first create. */
    snprintf(backends[0].name, sizeof(backends[0].name), "tcp");
    snprintf(backends[1].name, sizeof(backends[1].name), "xccl");
    count = 2;
    return 0;
}

/* "baby-<inner>": the Baby table over the inner backend's capabilities
 * (lock held). The inner one is loaded here, in the parent, so a missing
 * plugin fails the create before a child is started. */
static int add_baby(const char *name)
{
    const char *inner = name + strlen(FTC__BABY_PREFIX);
    if (strncmp(inner, FTC__BABY_PREFIX, strlen(FTC__BABY_PREFIX)) == 0 ||
        !valid_name(inner)) {
        return ftc__seterr(FTC_EINVAL,
                           "pg backend '%s': a Baby backend names one inner "
                           "backend ('baby-tcp', 'baby-xccl')",
                           name);
    }
    int i = find(inner);
    int rc = i < count ? 0 : load(inner);
    if (rc != 0) {
        return ftc__adderr(rc, "pg backend '%s'", name);
    }
    if (count == MAX_BACKENDS) {
        return ftc__seterr(FTC_ENOTSUP,
                           "pg backend '%s': %d backends are loaded already",
                           name, MAX_BACKENDS);
    }
    snprintf(backends[count].name, sizeof(backends[count].name), "%s", name);
    ftc__baby_table(backends[count].name, &backends[i].table,
                    &backends[count].table);
    count++;
    return 0;
}

int ftc__pg_backend_get(const char *name, const ftc_pg_backend **out)
{
    *out = NULL;
    bool baby = name != NULL &&
                strncmp(name, FTC__BABY_PREFIX, strlen(FTC__BABY_PREFIX)) == 0;
    if (name == NULL || (!baby && !valid_name(name)) ||
        strlen(name) >= FTC__PG_BACKEND_NAME_MAX) {
        return ftc__seterr(FTC_EINVAL,
                           "pg backend name '%.40s': use 1 to %d of a-z, "
                           "0-9, _ (or baby- and such a name)",
                           name != NULL ? name : "(null)",
                           FTC__PG_BACKEND_NAME_MAX - 1);
    }
    pthread_mutex_lock(&lock);
    int rc = builtins();
    int i = rc == 0 ? find(name) : 0;
    if (rc == 0 && i == count) {
        rc = baby ? add_baby(name) : load(name);
    }
    if (rc == 0) {
        *out = &backends[i].table;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

const char *ftc__pg_backend_choose(const ftc_pg_opts *opts,
                                   const char *fallback)
{
    if (opts != NULL && opts->backend != NULL) {
        return opts->backend;
    }
    ftc__pg_env env;
    ftc__pg_env_read(&env);
    if (env.backend != NULL && env.backend[0] != '\0') {
        return env.backend;
    }
    return fallback;
}

/* ------------------------------------------------------------- building */

int ftc__pg_build(const ftc_pg_backend *be, ftc_pg_backend_rendezvous *rv,
                  int rank, int size, const int *parent_ranks,
                  uint64_t group_id, const ftc_pg_opts *opts,
                  int64_t deadline_ns, ftc_pg **out)
{
    *out = NULL;
    ftc_pg *pg = ftc__calloc(1, sizeof(*pg));
    if (pg == NULL) {
        return ftc__seterr(FTC_ENOMEM, "process group: out of memory");
    }
    int rc = ftc__pg_init(pg, rank, size, parent_ranks, opts);
    if (rc == 0) {
        snprintf(pg->backend, sizeof(pg->backend), "%s", be->name);
        pg->opts.backend = pg->backend;
        pg->prefix = ftc__strdup(rv->prefix != NULL ? rv->prefix : "");
        rc = pg->prefix != NULL
                 ? 0
                 : ftc__seterr(FTC_ENOMEM, "process group: out of memory");
    }
    if (rc == 0) {
        ftc_pg_backend_create_args a = {
            .struct_size = sizeof(a),
            .group = pg,
            .rank = rank,
            .size = size,
            .parent_ranks = pg->parent_ranks,
            .group_id = group_id,
            .epoch = pg->opts.epoch,
            .store = rv->store,
            .prefix = pg->prefix,
            .rendezvous = rv,
            .opts = &pg->opts,
            .deadline_ns = deadline_ns,
        };
        pg->ops = be;
        rc = be->create(&a, &pg->impl);
        if (rc != 0) {
            ftc__adderr(rc, "pg backend '%s'", be->name);
        }
    }
    if (rc != 0) {
        pg->impl = NULL;
        ftc__pg_free(pg);
        return rc;
    }
    *out = pg;
    return 0;
}

/* ----------------------------------------------------------- completion */

void ftc_pg_backend_complete(ftc_pg_backend_request *request, int rc,
                             const char *message)
{
    ftc__op *op = request;
    ftc_work *w = op->work;
    ftc_pg *pg = w->pg;
    if (rc > 0) {
        rc = FTC_EPROTO; /* a backend's bug: never report success */
    }
    if (op->coll == FTC__RECV && rc == 0) {
        w->source = op->root;
    }
    /* Under done_mu: a waiter that saw the work running is then sure to be
     * woken. The group is not touched once the lock is released. */
    pthread_mutex_lock(&pg->done_mu);
    ftc__work_finish(w, rc, message != NULL ? message : ftc_strerror(rc));
    pthread_cond_broadcast(&pg->done_cv);
    pthread_mutex_unlock(&pg->done_mu);
    ftc__op_free(op);
    if (w->cb != NULL) {
        bool was = ftc__in_callback();
        ftc__set_in_callback(true);
        w->cb(w->cb_arg, w, w->rc);
        ftc__set_in_callback(was);
    }
    ftc__work_unref(w); /* the backend's reference */
}

int64_t ftc__pg_spin_ns(const ftc_pg_opts *opts, int local_ranks)
{
    if (opts->spin_us != FTC_PG_SPIN_AUTO) {
        return opts->spin_us <= 0 ? 0 : (int64_t)opts->spin_us * 1000;
    }
    cpu_set_t set;
    int cpus =
        sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    return local_ranks <= cpus ? FTC__SPIN_DEFAULT_US * 1000 : 0;
}

int ftc__pg_wait_completion(ftc_pg *pg, ftc_work *w, int64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = deadline_ns / 1000000000,
                          .tv_nsec = deadline_ns % 1000000000};
    int rc = 0;
    pthread_mutex_lock(&pg->done_mu);
    while (rc == 0 &&
           atomic_load_explicit(&w->done, memory_order_acquire) == 0) {
        if (deadline_ns == INT64_MAX) {
            pthread_cond_wait(&pg->done_cv, &pg->done_mu);
        } else if (pthread_cond_timedwait(&pg->done_cv, &pg->done_mu, &ts) !=
                       0 &&
                   atomic_load_explicit(&w->done, memory_order_acquire) == 0) {
            rc = ftc__seterr(FTC_ETIMEDOUT,
                             "%s on the '%s' backend: wait timed out",
                             ftc__coll_name(w->coll), pg->backend);
        }
    }
    pthread_mutex_unlock(&pg->done_mu);
    return rc;
}

/* ------------------------------------------------------------- exchange */

#define KEY_MAX 512

static int exchange_store(ftc_pg_backend_rendezvous *rv, const char *name,
                          void *id, size_t len, int64_t deadline_ns)
{
    char key[KEY_MAX];
    snprintf(key, sizeof(key), "%s/backend/%s", rv->prefix, name);
    int64_t left = ftc__deadline_left_ms((ftc__deadline){deadline_ns});
    if (rv->rank == 0) {
        return ftc_store_client_set(rv->store, key, id, len, left);
    }
    void *value = NULL;
    size_t got = 0;
    int rc = ftc_store_client_get(rv->store, key, &value, &got, left);
    if (rc == 0 && got != len) {
        rc = ftc__seterr(FTC_EPROTO,
                         "member 0 published %zu bytes under '%s', "
                         "expected %zu",
                         got, key, len);
    }
    if (rc == 0) {
        memcpy(id, value, len);
    } else if (rc == FTC_ETIMEDOUT || rc == FTC_EPROTO) {
        /* Member 0 never published, or published something else. */
        const int first = 0;
        ftc_pg_backend_blame(rv, &first, 1);
    }
    ftc_free(value);
    return rc;
}

/* Over the parent: member 0 sends the bytes to every other member on a
 * tag reserved for rendezvous (0xfffff000 upwards, in pg.h). */
#define TAG_BASE 0xfffff000u

static int exchange_parent(ftc_pg_backend_rendezvous *rv, void *id, size_t len,
                           int64_t deadline_ns)
{
    uint32_t tag = TAG_BASE + (rv->tag++ & 0xfffu);
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.timeout_ms = ftc__deadline_left_ms((ftc__deadline){deadline_ns});
    o.timeout_ms = o.timeout_ms < 0 ? 0 : o.timeout_ms;
    ftc_tensor t = ftc_tensor_cpu(id, len, FTC_DTYPE_U8);
    int rc = 0;
    for (int i = 1; rc == 0 && i < (rv->rank == 0 ? rv->size : 2); i++) {
        ftc_work *w = NULL;
        if (rv->rank == 0) {
            rc = ftc_pg_send(rv->parent, &t, rv->members[i], tag, &o, &w);
        } else {
            rc = ftc_pg_recv(rv->parent, &t, rv->members[0], tag, &o, &w);
        }
        if (rc == 0) {
            rc = ftc_work_wait(w, FTC_TIMEOUT_INFINITE);
            ftc_work_release(w);
        }
    }
    return rc;
}

int ftc_pg_backend_exchange(ftc_pg_backend_rendezvous *rv, const char *name,
                            void *id, size_t len, int64_t deadline_ns)
{
    ftc__clearerr();
    if (rv == NULL || name == NULL || name[0] == '\0' || strlen(name) > 64 ||
        (id == NULL && len > 0)) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_pg_backend_exchange: needs a rendezvous, a "
                           "name of 1 to 64 bytes and the id");
    }
    int rc = rv->store != NULL ? exchange_store(rv, name, id, len, deadline_ns)
                               : exchange_parent(rv, id, len, deadline_ns);
    if (rc != 0) {
        ftc__adderr(rc, "backend exchange '%s' (member %d of %d)", name,
                    rv->rank, rv->size);
    }
    return rc;
}
