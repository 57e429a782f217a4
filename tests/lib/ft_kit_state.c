/* The test trainer's state registration: borrowed memory, save/load
 * callbacks, or both mixed (FTK_STATE), with callback failures injected
 * at a chosen step and every call logged with the thread it ran on. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ft_kit.h"

typedef struct cb_buf {
    const char *name;
    float *p;
} cb_buf;

static cb_buf bufs[2];
static int log_fd = -1;
static long main_tid;
static _Atomic int64_t round_step = -1;
static int64_t save_fail_at = -1, load_fail_at = -1;
static atomic_bool save_failed, load_failed;

static long tid(void)
{
    return (long)syscall(SYS_gettid);
}

static int64_t env_step(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? strtoll(v, NULL, 10) : -1;
}

/* Whether this call is the injected failure (the first at the step). */
static bool inject(int64_t at, atomic_bool *done, const char *what)
{
    int64_t s = atomic_load(&round_step);
    if (at < 0 || s != at || atomic_exchange(done, true)) {
        return false;
    }
    tk_write_line(log_fd, "%s %" PRId64, what, s);
    return true;
}

static int save(void *user, void *dst, size_t bytes)
{
    const cb_buf *b = user;
    tk_write_line(log_fd, "save %s %d %ld", b->name, tid() == main_tid, tid());
    if (inject(save_fail_at, &save_failed, "savefail")) {
        return -5;
    }
    memcpy(dst, b->p, bytes);
    return 0;
}

static int load(void *user, const void *src, size_t bytes)
{
    const cb_buf *b = user;
    tk_write_line(log_fd, "load %s %d %ld", b->name, tid() == main_tid, tid());
    if (inject(load_fail_at, &load_failed, "loadfail")) {
        return -6;
    }
    memcpy(b->p, src, bytes);
    return 0;
}

static int reg(ftc_manager *m, int k, const char *name, float *p, int n,
               bool cb)
{
    int64_t shape[1] = {n};
    if (!cb) {
        return ftc_manager_register(m, name, FTC_DTYPE_F32, shape, 1, p);
    }
    bufs[k] = (cb_buf){name, p};
    ftc_manager_state_cb c = {save, load, &bufs[k]};
    return ftc_manager_register_cb(m, name, FTC_DTYPE_F32, shape, 1, &c);
}

int ftk_register_state(ftc_manager *m, float *x, float *v, int n, int fd)
{
    const char *how = getenv("FTK_STATE");
    bool cb = how != NULL && strcmp(how, "cb") == 0;
    bool mixed = how != NULL && strcmp(how, "mixed") == 0;
    log_fd = fd;
    main_tid = tid();
    save_fail_at = env_step("FTK_SAVE_FAIL_AT");
    load_fail_at = env_step("FTK_LOAD_FAIL_AT");
    int rc = reg(m, 0, "x", x, n, cb);
    return rc != 0 ? rc : reg(m, 1, "momentum", v, n, cb || mixed);
}

void ftk_state_round(int64_t step)
{
    atomic_store(&round_step, step);
}
