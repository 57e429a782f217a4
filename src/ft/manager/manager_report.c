/* Reports to the launcher: under `ftc run`, FTC_EVENT_FD names a socket
 * the launcher reads, and the manager writes the launcher contract's
 * FTC_EVENT lines there itself (docs/operations.md, "Launcher contract"):
 * group rank 0 one step event per vote, a rank that healed a heal event,
 * every rank a result event when it is destroyed, with the checksum of
 * its registered state as of its last committed vote. So any trainer
 * built on the manager (one that prints no event, a Python script) gets
 * true progress, recovery times and a bit-identity check in the
 * launcher's summary.
 *
 * The checksum is taken at each committed vote, while the registered
 * memory is certain to be valid, not in destroy: trainers commonly free
 * what they registered (an algorithm handle's buffers) before they
 * destroy the manager. It costs one XXH3 pass over the state per
 * committed step, only where the launcher asks (docs/decisions.md,
 * "Launcher: two reporters").
 *
 * Reporting never holds up or fails training: each line is one
 * non-blocking send (a full socket drops it), and a descriptor that is
 * not a socket is ignored with a warning. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/xxh.h"
#include "ft/manager/manager.h"

void ftc__manager_report_open(ftc_manager *m, const char *fd_text)
{
    m->report_fd = -1;
    m->report_steps = -1;
    if (fd_text == NULL || fd_text[0] == '\0') {
        return;
    }
    char *end = NULL;
    errno = 0;
    long fd = strtol(fd_text, &end, 10);
    int type = 0;
    socklen_t len = sizeof(type);
    if (errno != 0 || *end != '\0' || fd < 0 || fd > INT32_MAX ||
        getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_STREAM) {
        FTC_LOG_WARN("manager.report",
                     "FTC_EVENT_FD=%s is not an open stream socket: no "
                     "reports to the launcher",
                     fd_text);
        return;
    }
    m->report_fd = (int)fd;
}

/* Sends "FTC_EVENT <ev>\n" and releases ev. */
static void send_event(ftc_manager *m, json_t *ev)
{
    static const char tag[] = "FTC_EVENT ";
    char line[1024];
    size_t room = sizeof(line) - sizeof(tag); /* the tag and '\n' */
    size_t len =
        ev != NULL ? json_dumpb(ev, line + sizeof(tag) - 1, room, JSON_COMPACT)
                   : 0;
    json_decref(ev);
    if (len == 0 || len > room) {
        return; /* out of memory, or longer than any event here */
    }
    memcpy(line, tag, sizeof(tag) - 1);
    size_t n = sizeof(tag) - 1 + len;
    line[n++] = '\n';
    ssize_t sent = send(m->report_fd, line, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent != (ssize_t)n) {
        FTC_LOG_DEBUG("manager.report", "event not sent: %s",
                      sent < 0 ? strerror(errno) : "short send");
    }
}

void ftc__manager_report_heal(ftc_manager *m, int64_t step, const char *from,
                              double ms)
{
    if (m->report_fd < 0) {
        return;
    }
    send_event(m, json_pack("{s:s, s:I, s:s, s:f}", "kind", "heal", "step",
                            (json_int_t)step, "from", from, "ms", ms));
}

/* XXH3 of the registered buffers' bytes in registration order (those
 * behind callbacks through their save); 0 and *ok false if a save failed
 * or memory ran out. */
static uint64_t state_checksum(ftc_manager *m, bool *ok)
{
    XXH3_state_t *h = XXH3_createState();
    *ok = h != NULL && XXH3_64bits_reset(h) == XXH_OK;
    for (size_t i = 0; *ok && i < m->state.n; i++) {
        size_t len = (size_t)m->state.bufs[i].nbytes;
        if (!ftc__heal_state_is_cb(&m->state, i)) {
            XXH3_64bits_update(h, m->state.data[i], len);
            continue;
        }
        void *copy = len > 0 ? ftc__malloc(len) : NULL;
        *ok = len == 0 ||
              (copy != NULL &&
               m->state.cb[i].save(m->state.cb[i].user, copy, len) == 0);
        if (*ok && len > 0) {
            XXH3_64bits_update(h, copy, len);
        }
        ftc__free(copy);
    }
    uint64_t sum = *ok ? XXH3_64bits_digest(h) : 0;
    XXH3_freeState(h);
    return sum;
}

void ftc__manager_report_step(ftc_manager *m, bool committed)
{
    if (m->report_fd < 0) {
        return;
    }
    if (committed) {
        bool ok = ftc__manager_prepare(m, "a checksum") == 0;
        m->report_sum = ok ? state_checksum(m, &ok) : 0;
        m->report_steps = ok ? atomic_load(&m->step) : -1;
        if (!ok) {
            FTC_LOG_WARN("manager.report",
                         "%s rank %d: the state's checksum failed (the "
                         "prepare function, a save callback, or memory): no "
                         "result for step %" PRId64,
                         m->base_id, m->o.group_rank, atomic_load(&m->step));
        }
    }
    if (m->o.group_rank != 0) {
        return; /* rank 0 reports the group's steps */
    }
    send_event(m,
               json_pack("{s:s, s:I, s:b, s:I, s:I}", "kind", "step", "step",
                         (json_int_t)atomic_load(&m->step), "committed",
                         committed, "participants",
                         (json_int_t)atomic_load(&m->num_participants),
                         "quorum_id", (json_int_t)atomic_load(&m->quorum_id)));
}

void ftc__manager_report_result(ftc_manager *m)
{
    if (m->report_fd < 0 || m->report_steps < 0) {
        return; /* nothing committed (or checksummed): nothing to compare */
    }
    char hex[17];
    snprintf(hex, sizeof(hex), "%016" PRIx64, m->report_sum);
    send_event(m, json_pack("{s:s, s:s, s:I}", "kind", "result", "checksum",
                            hex, "steps", (json_int_t)m->report_steps));
}
