/* A replica group's processes: its store, starting its ranks with their
 * contract environment, signalling their process groups, and the
 * bookkeeping when one is reaped. */
#include "run/run_group.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base_int.h"
#include "run/run_spawn.h"
#include "run/run_token.h"

int run_group_init(run_group *g, int index, int replica_index, int nranks,
                   const char *host, const char *token)
{
    static const char *const open[] = RUN_TOKEN_OPEN_PREFIXES;
    memset(g, 0, sizeof(*g));
    g->index = index;
    g->nranks = nranks;
    g->state = RUN_GROUP_WAITING;
    run_env_replica_id(replica_index, g->id, sizeof(g->id));
    g->ranks = ftc__calloc((size_t)nranks, sizeof(*g->ranks));
    if (g->ranks == NULL) {
        fprintf(stderr, "ftc run: out of memory\n");
        return -1;
    }
    for (int r = 0; r < nranks; r++) {
        for (int s = 0; s < RUN_STREAMS; s++) {
            g->ranks[r].fd[s] = -1;
        }
    }
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.bind_host = host;
    o.token = token;
    o.open_prefixes = token != NULL ? open : NULL;
    o.n_open_prefixes = token != NULL ? RUN_TOKEN_N_OPEN_PREFIXES : 0;
    if (ftc_store_server_create(&o, &g->store) != 0) {
        fprintf(stderr, "ftc run: cannot start the store of %s on %s: %s\n",
                g->id, host, ftc_last_error());
        return -1;
    }
    ftc__addr_join(host, ftc_store_server_port(g->store), g->store_addr,
                   sizeof(g->store_addr));
    return 0;
}

void run_group_free(run_group *g)
{
    ftc_store_server_destroy(g->store);
    ftc__free(g->ranks);
    memset(g, 0, sizeof(*g));
}

static void close_fds(run_rank *rk)
{
    for (int s = 0; s < RUN_STREAMS; s++) {
        if (rk->fd[s] >= 0) {
            close(rk->fd[s]);
            rk->fd[s] = -1;
        }
    }
}

int run_group_spawn(run_group *g, const run_launch *l)
{
    g->live = 0;
    g->exited_ok = 0;
    g->hit = 0;
    g->healthy = 0;
    g->stepped = 0;
    g->job_over = 0;
    g->death[0] = '\0';
    for (int r = 0; r < g->nranks; r++) {
        run_env_rank er = {
            .job = l->job,
            .lighthouse = l->lighthouse,
            .store_addr = g->store_addr,
            .run_dir = l->run_dir,
            .replica_index = l->first_replica + g->index,
            .host = l->host,
            .num_replicas = l->num_replicas,
            .group_rank = r,
            .group_size = g->nranks,
            .incarnation = g->incarnation,
            .trace_dir = l->trace_dir,
        };
        char **env = run_env_build(l->environ, &er, l->user_env, l->n_user_env);
        run_child c;
        int rc = env == NULL ? ENOMEM : run_spawn(l->path, l->argv, env, &c);
        run_env_free(env);
        if (rc != 0) {
            run_group_signal(g, SIGKILL);
            for (int k = 0; k < r; k++) {
                int status;
                waitpid(g->ranks[k].pid, &status, 0);
                run_group_reaped(g, k, status);
            }
            return rc;
        }
        run_rank *rk = &g->ranks[r];
        rk->pid = c.pid;
        rk->status = 0;
        rk->fd[RUN_STDOUT] = c.out_fd;
        rk->fd[RUN_STDERR] = c.err_fd;
        rk->fd[RUN_EVENTS] = c.event_fd;
        for (int s = 0; s < RUN_STREAMS; s++) {
            run_lines_init(&rk->lines[s]);
        }
        g->live++;
    }
    return 0;
}

void run_group_signal(const run_group *g, int sig)
{
    for (int r = 0; r < g->nranks; r++) {
        if (g->ranks[r].pid > 0) {
            kill(-g->ranks[r].pid, sig);
        }
    }
}

int run_group_rank_of(const run_group *g, pid_t pid)
{
    for (int r = 0; r < g->nranks; r++) {
        if (g->ranks[r].pid == pid) {
            return r;
        }
    }
    return -1;
}

void run_group_reaped(run_group *g, int r, int status)
{
    run_rank *rk = &g->ranks[r];
    /* Whatever the rank started in its process group goes with it. */
    kill(-rk->pid, SIGKILL);
    rk->pid = 0;
    rk->status = status;
    close_fds(rk);
    g->live--;
}

void run_group_describe_status(int status, char *buf, size_t cap)
{
    if (WIFEXITED(status)) {
        snprintf(buf, cap, "exited with code %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        const char *name = sigabbrev_np(WTERMSIG(status));
        snprintf(buf, cap, "killed by SIG%s", name != NULL ? name : "?");
    } else {
        snprintf(buf, cap, "ended with status 0x%x", (unsigned)status);
    }
}
