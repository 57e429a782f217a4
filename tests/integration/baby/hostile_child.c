/* A hostile stand-in for ftc-baby (FTC_PG_BABY_HELPER points here): it
 * speaks the set-up protocol like the real child, answers hello for a
 * group it never builds, and then misbehaves on the requests as
 * FTC_TEST_BABY_MODE says:
 *   phantom  completes a request id the parent never sent;
 *   garbage  writes an impossible head into the completion ring;
 *   unrun    claims the first request done without running it (after
 *            filling its own arena region with 0xab), and answers the
 *            second with an unknown result code;
 *   order    completes the second collective before the first;
 *   exit     exits with status 7 on the first request.
 * baby_test.c checks the parent fails the group cleanly each time. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pg/baby/baby.h"
#include "pg/baby/baby_shm.h"

static ftc__baby_shm *shm;
static uint8_t *arena;
static ftc__baby_end req_end, done_end;

static void next_request(ftc__baby_req *r)
{
    for (;;) {
        if (ftc__baby_pop(&req_end, r) == 1) {
            return;
        }
        struct pollfd p = {.fd = req_end.efd, .events = POLLIN};
        ftc__baby_sleep_begin(&req_end);
        poll(&p, 1, 50);
        ftc__baby_awake(&req_end);
    }
}

static void answer(uint64_t id, int rc)
{
    ftc__baby_done d = {.id = id, .rc = rc, .source = 0};
    ftc__baby_push(&done_end, &d);
}

int main(void)
{
    static ftc__baby_config c;
    int fds[FTC__BABY_NFDS];
    if (ftc__baby_recv(FTC__BABY_CHILD_FD, &c, sizeof(c), fds, FTC__BABY_NFDS,
                       ftc__deadline_in_ms(30000), -1) != 0) {
        return 2;
    }
    shm =
        mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    arena = mmap(NULL, FTC__BABY_ARENA_BYTES, PROT_READ | PROT_WRITE,
                 MAP_SHARED, fds[1], 0);
    if (shm == MAP_FAILED || arena == MAP_FAILED) {
        return 2;
    }
    req_end = (ftc__baby_end){.ring = &shm->req_ring,
                              .slots = shm->req,
                              .record = sizeof(ftc__baby_req),
                              .efd = fds[2]};
    done_end = (ftc__baby_end){.ring = &shm->done_ring,
                               .slots = shm->done,
                               .record = sizeof(ftc__baby_done),
                               .efd = fds[3]};
    ftc__baby_hello h = {.magic = FTC__BABY_MAGIC, .pid = getpid()};
    if (ftc__baby_send(FTC__BABY_CHILD_FD, &h, sizeof(h), NULL, 0,
                       ftc__deadline_in_ms(30000)) != 0) {
        return 2;
    }
    const char *mode = getenv("FTC_TEST_BABY_MODE");
    mode = mode != NULL ? mode : "";
    ftc__baby_req r, r2;
    next_request(&r);
    if (strcmp(mode, "phantom") == 0) {
        answer(r.id + 1000, 0);
    } else if (strcmp(mode, "garbage") == 0) {
        atomic_store(&shm->done_ring.head, 5000);
        uint64_t one = 1;
        (void)!write(fds[3], &one, sizeof(one));
    } else if (strcmp(mode, "unrun") == 0) {
        memset(arena + r.recv_off, 0xab,
               r.recv_count * ftc__baby_elem(r.dtype));
        answer(r.id, 0);
        next_request(&r2);
        answer(r2.id, 12345);
    } else if (strcmp(mode, "order") == 0) {
        next_request(&r2);
        answer(r2.id, 0);
    } else if (strcmp(mode, "exit") == 0) {
        _exit(7);
    }
    /* Wait for the parent's SIGKILL (or its hang-up). */
    struct pollfd p = {.fd = FTC__BABY_CHILD_FD, .events = POLLIN};
    poll(&p, 1, 60000);
    return 0;
}
