/* The process's shared heap (heap.h) and its public allocator,
 * ftc_pg_mem_alloc / ftc_pg_mem_free. Every allocation and every Baby
 * group holds a reference; a heap whose references are gone is unmapped,
 * and the next reference makes a new one. Freed pages go back to the
 * system (a hole punched in the memfd), and free memory is zero. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/base_int.h"
#include "ftc/pg.h"
#include "pg/baby/heap.h"
#include "pg/baby/regions.h"

struct ftc__baby_heap {
    int fd;
    uint8_t *base;
    int refs;                  /* under mu */
    ftc__baby_regions regions; /* under mu */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static ftc__baby_heap *current; /* under mu */

/* mu held. */
static int ref_locked(ftc__baby_heap **out)
{
    if (current == NULL) {
        ftc__baby_heap *h = ftc__calloc(1, sizeof(*h));
        if (h == NULL) {
            return ftc__seterr(FTC_ENOMEM, "shared heap: out of memory");
        }
        h->fd = memfd_create("ftc-baby-heap", MFD_CLOEXEC);
        void *p = MAP_FAILED;
        if (h->fd >= 0 && ftruncate(h->fd, (off_t)FTC__BABY_HEAP_BYTES) == 0) {
            p = mmap(NULL, FTC__BABY_HEAP_BYTES, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_NORESERVE, h->fd, 0);
        }
        if (p == MAP_FAILED) {
            int e = errno;
            if (h->fd >= 0) {
                close(h->fd);
            }
            ftc__free(h);
            return ftc__seterr_errno(e, "shared heap: memfd or mmap");
        }
        h->base = p;
        current = h;
    }
    current->refs++;
    *out = current;
    return 0;
}

/* mu held. */
static void unref_locked(ftc__baby_heap *h)
{
    if (--h->refs > 0) {
        return;
    }
    munmap(h->base, FTC__BABY_HEAP_BYTES);
    close(h->fd);
    ftc__free(h->regions.v);
    if (current == h) {
        current = NULL;
    }
    ftc__free(h);
}

int ftc__baby_heap_ref(ftc__baby_heap **out)
{
    pthread_mutex_lock(&mu);
    int rc = ref_locked(out);
    pthread_mutex_unlock(&mu);
    return rc;
}

void ftc__baby_heap_unref(ftc__baby_heap *h)
{
    if (h == NULL) {
        return;
    }
    pthread_mutex_lock(&mu);
    unref_locked(h);
    pthread_mutex_unlock(&mu);
}

int ftc__baby_heap_fd(const ftc__baby_heap *h)
{
    return h->fd;
}

bool ftc__baby_heap_find(const ftc__baby_heap *h, const void *p, uint64_t bytes,
                         uint64_t *off)
{
    uintptr_t a = (uintptr_t)p, base = (uintptr_t)h->base;
    if (a < base || a - base > FTC__BABY_HEAP_BYTES ||
        bytes > FTC__BABY_HEAP_BYTES - (a - base)) {
        return false;
    }
    *off = a - base;
    return true;
}

int ftc_pg_mem_alloc(size_t bytes, void **out)
{
    if (out == NULL) {
        return ftc__seterr(FTC_EINVAL, "ftc_pg_mem_alloc: out is NULL");
    }
    *out = NULL;
    pthread_mutex_lock(&mu);
    ftc__baby_heap *h = NULL;
    uint64_t off = 0;
    int rc = ref_locked(&h);
    if (rc == 0) {
        rc = ftc__baby_regions_alloc(&h->regions, bytes, FTC__BABY_HEAP_BYTES,
                                     &off);
        if (rc != 0) {
            unref_locked(h);
            rc = ftc__seterr(rc,
                             "ftc_pg_mem_alloc: %zu bytes do not fit in the "
                             "shared heap (%llu bytes of address space)",
                             bytes, (unsigned long long)FTC__BABY_HEAP_BYTES);
        }
    }
    pthread_mutex_unlock(&mu);
    if (rc == 0) {
        *out = h->base + off;
    }
    return rc;
}

/* Gives the whole pages of a freed region back to the system and zeroes
 * the rest, so that free memory is always zero (ftc_pg_mem_alloc's
 * promise) without touching a page at allocation. */
static void release(ftc__baby_heap *h, uint64_t off, uint64_t len)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t from = (off + page - 1) / page * page;
    uint64_t to = (off + len) / page * page;
    if (to <= from) {
        memset(h->base + off, 0, len);
        return;
    }
    memset(h->base + off, 0, from - off);
    memset(h->base + to, 0, off + len - to);
    (void)fallocate(h->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    (off_t)from, (off_t)(to - from));
}

void ftc_pg_mem_free(void *p)
{
    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&mu);
    uint64_t off = 0, len = 0;
    if (current != NULL && ftc__baby_heap_find(current, p, 0, &off)) {
        ftc__baby_regions_free(&current->regions, off, &len);
    }
    if (len > 0) {
        release(current, off, len);
        unref_locked(current);
    } else {
        FTC_LOG_ERROR("pg.mem",
                      "ftc_pg_mem_free(%p): not an allocation of "
                      "ftc_pg_mem_alloc (ignored)",
                      p);
    }
    pthread_mutex_unlock(&mu);
}
