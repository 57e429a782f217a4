/* FTC_EVENT lines, the reports a trainer prints for the launcher
 * (docs/operations.md, "Launcher contract"), parsed from one output line.
 * Pure: no I/O, no state. */
#ifndef FTC_TOOLS_RUN_EVENT_H
#define FTC_TOOLS_RUN_EVENT_H

#include <stddef.h>
#include <stdint.h>

/* A line is an event when it starts with this tag, then one JSON object. */
#define RUN_EVENT_TAG "FTC_EVENT "
/* Bytes of a checksum or a text field, NUL included. */
#define RUN_EVENT_TEXT_MAX 129

typedef enum run_event_kind {
    RUN_EVENT_NONE = 0, /* not an event: user output */
    RUN_EVENT_BAD,      /* has the tag but is malformed (see why) */
    RUN_EVENT_UNKNOWN,  /* well-formed, a kind this launcher ignores */
    RUN_EVENT_STEP,
    RUN_EVENT_HEAL,
    RUN_EVENT_ERROR,
    RUN_EVENT_RESULT,
    RUN_EVENT_ENDED, /* the job finished without this group */
} run_event_kind;

/* Absent optional fields: -1 for counts and steps, NAN for numbers, ""
 * for strings. */
typedef struct run_event {
    run_event_kind kind;
    int64_t step;         /* step (required), heal, error; result: "steps" */
    int committed;        /* step (required) */
    double loss;          /* step: "loss"; result: "final_loss" */
    int64_t participants; /* step */
    int64_t quorum_id;    /* step */
    double ms;            /* heal: how long it took */
    char text[RUN_EVENT_TEXT_MAX]; /* result: "checksum" (required);
                                      heal: "from"; error and ended:
                                      "message" (required) */
    char why[96];                  /* RUN_EVENT_BAD: what is wrong */
} run_event;

/* Parses line[0..len). Never fails on garbage: that is RUN_EVENT_BAD. */
run_event_kind run_event_parse(const char *line, size_t len, run_event *ev);

#endif
