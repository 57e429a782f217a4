/* Parses one FTC_EVENT line with jansson. Anything malformed becomes
 * RUN_EVENT_BAD with a reason, so a trainer's garbage never stops the
 * launcher; unknown kinds and extra fields are ignored (forward
 * compatibility). */
#include "run/run_event.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 2, 3))) static run_event_kind
fail(run_event *ev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev->why, sizeof(ev->why), fmt, ap);
    va_end(ap);
    ev->kind = RUN_EVENT_BAD;
    return RUN_EVENT_BAD;
}

/* Each getter returns 0, or -1 after fail(): absent and not required
 * leaves *out alone. */
static int get_int(json_t *o, const char *key, int required, int64_t *out,
                   run_event *ev)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL) {
        return required ? (fail(ev, "no \"%s\"", key), -1) : 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        fail(ev, "\"%s\" is not an integer >= 0", key);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static int get_number(json_t *o, const char *key, double *out, run_event *ev)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL) {
        return 0;
    }
    if (!json_is_number(v)) {
        fail(ev, "\"%s\" is not a number", key);
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

/* A string field: control characters become '?'; a longer one is cut,
 * unless exact (a checksum: two cut checksums could look equal). */
static int get_text(json_t *o, const char *key, int required, int exact,
                    run_event *ev)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL) {
        return required ? (fail(ev, "no \"%s\"", key), -1) : 0;
    }
    if (!json_is_string(v)) {
        fail(ev, "\"%s\" is not a string", key);
        return -1;
    }
    size_t n = json_string_length(v);
    if (n >= sizeof(ev->text)) {
        if (exact) {
            fail(ev, "\"%s\" is longer than 128 bytes", key);
            return -1;
        }
        n = sizeof(ev->text) - 1;
    }
    memcpy(ev->text, json_string_value(v), n);
    ev->text[n] = '\0';
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)ev->text[i] < 0x20 || ev->text[i] == 0x7f) {
            ev->text[i] = '?';
        }
    }
    return 0;
}

static run_event_kind parse_step(json_t *o, run_event *ev)
{
    json_t *c = json_object_get(o, "committed");
    if (get_int(o, "step", 1, &ev->step, ev) != 0 ||
        get_number(o, "loss", &ev->loss, ev) != 0 ||
        get_int(o, "participants", 0, &ev->participants, ev) != 0 ||
        get_int(o, "quorum_id", 0, &ev->quorum_id, ev) != 0) {
        return RUN_EVENT_BAD;
    }
    if (!json_is_boolean(c)) {
        return fail(ev, "\"%s\" is not true or false", "committed");
    }
    ev->committed = json_is_true(c);
    return RUN_EVENT_STEP;
}

static run_event_kind parse_kind(json_t *o, const char *kind, run_event *ev)
{
    if (strcmp(kind, "step") == 0) {
        return parse_step(o, ev);
    }
    if (strcmp(kind, "heal") == 0) {
        return get_int(o, "step", 0, &ev->step, ev) != 0 ||
                       get_number(o, "ms", &ev->ms, ev) != 0 ||
                       get_text(o, "from", 0, 0, ev) != 0
                   ? RUN_EVENT_BAD
                   : RUN_EVENT_HEAL;
    }
    if (strcmp(kind, "error") == 0) {
        return get_int(o, "step", 0, &ev->step, ev) != 0 ||
                       get_text(o, "message", 1, 0, ev) != 0
                   ? RUN_EVENT_BAD
                   : RUN_EVENT_ERROR;
    }
    if (strcmp(kind, "ended") == 0) {
        return get_text(o, "message", 1, 0, ev) != 0 ? RUN_EVENT_BAD
                                                     : RUN_EVENT_ENDED;
    }
    if (strcmp(kind, "result") == 0) {
        return get_text(o, "checksum", 1, 1, ev) != 0 ||
                       get_number(o, "final_loss", &ev->loss, ev) != 0 ||
                       get_int(o, "steps", 0, &ev->step, ev) != 0
                   ? RUN_EVENT_BAD
                   : RUN_EVENT_RESULT;
    }
    return RUN_EVENT_UNKNOWN;
}

run_event_kind run_event_parse(const char *line, size_t len, run_event *ev)
{
    memset(ev, 0, sizeof(*ev));
    ev->step = -1;
    ev->participants = -1;
    ev->quorum_id = -1;
    ev->loss = NAN;
    ev->ms = NAN;
    size_t tag = strlen(RUN_EVENT_TAG);
    if (len < tag || memcmp(line, RUN_EVENT_TAG, tag) != 0) {
        ev->kind = RUN_EVENT_NONE;
        return RUN_EVENT_NONE;
    }
    json_error_t err;
    json_t *o = json_loadb(line + tag, len - tag, JSON_REJECT_DUPLICATES, &err);
    if (o == NULL) {
        return fail(ev, "not JSON: %s", err.text);
    }
    json_t *kind = json_object_get(o, "kind");
    if (!json_is_object(o) || !json_is_string(kind)) {
        json_decref(o);
        return fail(ev, "not an object with a string \"%s\"", "kind");
    }
    ev->kind = parse_kind(o, json_string_value(kind), ev);
    json_decref(o);
    return ev->kind;
}
