/* `ftc run`: the launcher. Sets up what a job needs (the command, its run
 * folder, a lighthouse, one store per replica group), runs the event loop
 * (run_loop.c, policy in run_job.c) and prints the summary. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/auth.h"
#include "base/base_int.h"
#include "cmd.h"
#include "run/run_lighthouse.h"
#include "run/run_loop.h"
#include "run/run_spawn.h"
#include "run/run_summary.h"
#include "run/run_token.h"
#include "cli_token.h"

extern char **environ;

/* The user's folder given with option flag, created if missing and kept,
 * as an absolute path (ranks may chdir) into dir. */
static int user_dir(const char *flag, const char *path, char *dir, size_t cap)
{
    char real[PATH_MAX];
    if ((mkdir(path, 0777) != 0 && errno != EEXIST) ||
        realpath(path, real) == NULL) {
        fprintf(stderr, "ftc run: %s %s: %s\n", flag, path, strerror(errno));
        return -1;
    }
    snprintf(dir, cap, "%s", real);
    return 0;
}

/* FTC_RUN_DIR: the user's folder (created if missing, kept), or a fresh
 * temporary one (removed at exit). Absolute, so ranks may chdir. */
static int make_run_dir(const run_opts *o, char *dir, size_t cap,
                        int *temporary)
{
    *temporary = o->run_dir == NULL;
    if (o->run_dir != NULL) {
        return user_dir("--run-dir", o->run_dir, dir, cap);
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/ftc-run-%s-XXXXXX",
             tmp != NULL && tmp[0] == '/' ? tmp : "/tmp", o->job);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "ftc run: cannot create a run folder %s: %s\n", dir,
                strerror(errno));
        return -1;
    }
    return 0;
}

static void print_plan(run_job *job, int embedded, const char *run_dir)
{
    const run_opts *o = job->opts;
    run_out_note(&job->out, "job %s: %d replica groups x %d ranks of %s",
                 o->job, o->replicas, o->ranks, job->launch.path);
    if (embedded) {
        const char *at = job->launch.lighthouse;
        run_out_note(&job->out, "lighthouse %s (dashboard %s%s/)", at,
                     strstr(at, "://") != NULL ? "" : "http://", at);
    } else {
        run_out_note(&job->out, "lighthouse %s", job->launch.lighthouse);
    }
    run_out_note(&job->out, "run folder %s, seed %llu", run_dir,
                 (unsigned long long)o->seed);
    if (job->launch.trace_dir != NULL) {
        run_out_note(&job->out, "traces in %s (one file per rank)",
                     job->launch.trace_dir);
    }
    static const char *const modes[] = {"SIGKILL", "SIGSTOP",
                                        "SIGKILL or SIGSTOP"};
    if (o->kill_every_ms > 0) {
        run_out_note(&job->out,
                     "fault injection: %s a replica group every %.2f s, "
                     "keeping %d healthy",
                     modes[o->kill_mode], (double)o->kill_every_ms / 1000.0,
                     o->min_replicas);
    } else if (o->n_kill_steps > 0) {
        run_out_note(&job->out,
                     "fault injection: %s a replica group at %d committed "
                     "steps (first %lld), keeping %d healthy",
                     modes[o->kill_mode], o->n_kill_steps,
                     (long long)o->kill_steps[0], o->min_replicas);
    }
}

static void print_token(run_job *job, run_token_source source,
                        const char *run_dir)
{
    static const char *const says[] = {
        [RUN_TOKEN_NONE] = "no token: the job is open to anyone who reaches "
                           "its ports (--token-file or FTC_TOKEN closes it)",
        [RUN_TOKEN_GIVEN] = "token from --token-file or FTC_TOKEN",
        [RUN_TOKEN_GENERATED] = "a random token made for this job guards "
                                "its stores, lighthouse, heals and process "
                                "groups (FTC_TOKEN in every rank)",
    };
    run_out_note(&job->out, "%s", says[source]);
    if (source == RUN_TOKEN_GENERATED) {
        run_out_note(&job->out,
                     "the token is in %s/token (ftc status --token-file; "
                     "the dashboard's password)",
                     run_dir);
    }
}

/* Everything after the options are known. Returns the exit code. */
static int run(const run_opts *o, const char *path)
{
    char run_dir[PATH_MAX], lighthouse[300], trace_dir[PATH_MAX];
    int temporary = 0;
    if (o->trace_dir != NULL &&
        user_dir("--trace", o->trace_dir, trace_dir, sizeof(trace_dir)) != 0) {
        return 1;
    }
    if (make_run_dir(o, run_dir, sizeof(run_dir), &temporary) != 0) {
        return 1;
    }
    /* Before the first thread: it sets the environment. */
    char token_buf[FTC__CLI_TOKEN_MAX];
    const char *token = NULL;
    run_token_source source;
    if (run_token_resolve(o, token_buf, sizeof(token_buf), &token, &source) !=
            0 ||
        (source == RUN_TOKEN_GENERATED &&
         run_token_save(run_dir, token) != 0)) {
        if (temporary) {
            ftc__cmd_remove_tree(run_dir);
        }
        return 1;
    }
    sigset_t old_mask;
    run_loop_block_signals(&old_mask); /* before the first thread */
    run_lighthouse *lh = NULL;
    run_job *job = ftc__calloc(1, sizeof(*job));
    int code = 1;
    if (job != NULL && run_lighthouse_start(&lh, o->lighthouse, o->host, o->job,
                                            o->min_replicas, token, lighthouse,
                                            sizeof(lighthouse)) == 0) {
        run_launch l = {
            .path = path,
            .argv = o->command,
            .environ = environ,
            .job = o->job,
            .lighthouse = lighthouse,
            .run_dir = run_dir,
            .trace_dir = o->trace_dir != NULL ? trace_dir : NULL,
            .user_env = o->env,
            .n_user_env = o->n_env,
            .token = token,
        };
        if (run_job_init(job, o, &l) == 0) {
            print_plan(job, lh != NULL, run_dir);
            print_token(job, source, run_dir);
            if (run_loop(job) == 0) {
                code = run_job_exit_code(job);
                run_summary_print(job);
                if (o->summary_json != NULL &&
                    run_summary_write_json(job, o->summary_json) != 0) {
                    code = code == 0 ? 1 : code;
                }
            }
        }
        run_job_free(job);
    }
    ftc__free(job);
    run_lighthouse_stop(lh);
    ftc__auth_wipe(token_buf, sizeof(token_buf));
    if (temporary) {
        ftc__cmd_remove_tree(run_dir);
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    return code;
}

int ftc__cmd_run(int argc, char **argv)
{
    run_opts o;
    int rc = run_opts_parse(&o, argc, argv);
    if (o.help || rc != 0) {
        return rc;
    }
    char path[PATH_MAX];
    int err = run_spawn_resolve(o.command[0], path, sizeof(path));
    if (err != 0) {
        fprintf(stderr, "ftc run: cannot run '%s': %s\n", o.command[0],
                strerror(err));
        return 127;
    }
    return run(&o, path);
}
