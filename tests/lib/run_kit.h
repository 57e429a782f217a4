/* Shared by the `ftc run` tests: start the launcher as a real process with
 * its output in a file, wait for it with a bound, read what the fake
 * trainer (run_fake_trainer.c) recorded, load the summary JSON. */
#ifndef FTC_TESTS_RUN_KIT_H
#define FTC_TESTS_RUN_KIT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The ftc and fake trainer binaries, from argv[1] and argv[2]; returns
 * the argc left for tk_main, or -1 (usage printed) if they are missing. */
int rk_init(int argc, char **argv);
const char *rk_trainer(void);
const char *rk_ftc(void);

typedef struct rk_run {
    pid_t pid;
    int status;
    int done;
    char out_path[4096]; /* stdout and stderr of the launcher */
    char *text;          /* its content, after rk_output */
    size_t len;
} rk_run;

/* Starts "ftc run ARGS..." (args NULL-terminated) with extra environment
 * "K=V" entries (NULL-terminated, may be NULL). It dies with the test. */
void rk_start(rk_run *p, char *const args[], char *const env[]);
/* The same for "ftc COMMAND ARGS...". */
void rk_start_cli(rk_run *p, const char *command, char *const args[],
                  char *const env[]);
/* Starts "ftc run LAUNCHER... --lighthouse 127.0.0.1:1 --run-dir DIR
 * --summary-json DIR/summary.json -- FAKE_TRAINER TRAINER..." (both lists
 * NULL-terminated; the fake trainer never calls the lighthouse). */
void rk_start_job(rk_run *p, const char *dir, char *const launcher[],
                  char *const trainer[], char *const env[]);
/* Waits up to tk_ms(timeout_ms) for it to exit (else kills it and fails);
 * loads its output; returns its exit code (128 + signal if killed). */
int rk_wait(rk_run *p, int64_t timeout_ms);
/* Reloads its output so far into p->text. */
const char *rk_output(rk_run *p);
/* Polls its output until it contains want (fails after the timeout). */
void rk_wait_output(rk_run *p, const char *want, int64_t timeout_ms);
void rk_free(rk_run *p);
/* How often needle occurs in text. */
int rk_count(const char *text, const char *needle);

/* A fresh, empty folder for one test's FTC_RUN_DIR. */
const char *rk_dir(const char *name, char *buf, size_t cap);

/* From the fake trainer's record of (replica, rank, incarnation): the
 * value of key into out. Returns 0, or -1 if the record or key is
 * missing. */
int rk_seen(const char *dir, int replica, int rank, int incarnation,
            const char *key, char *out, size_t cap);
/* The value as a number (fails the test if missing). */
long rk_seen_long(const char *dir, int replica, int rank, int incarnation,
                  const char *key);
/* How many records there are. */
int rk_seen_count(const char *dir);

/* True once pid is gone (no such process, or a zombie nobody waits for). */
int rk_gone(pid_t pid);

/* The summary JSON at path (fails the test if unreadable); json_decref it. */
json_t *rk_summary(const char *path);
/* The summary rk_start_job asked for in dir. */
json_t *rk_job_summary(const char *dir);
/* Shortcuts into the summary. */
json_int_t rk_int(json_t *o, const char *key);
const char *rk_str(json_t *o, const char *key);
json_t *rk_group(json_t *summary, int index);
json_t *rk_failure(json_t *summary, int index);

#endif
