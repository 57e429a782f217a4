/* ftc: the command-line tool. Dispatches to one handler per subcommand. */
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "cmd.h"
#include "ftc/ftc.h"

static const ftc__cmd commands[] = {
    {"version", ftc__cmd_version, "print the ftc version"},
    {"store", ftc__cmd_store, "run a TCPStore-compatible key-value server"},
    {"run", ftc__cmd_run,
     "launch N replica groups x M ranks, with restarts "
     "and fault injection"},
    {"lighthouse", ftc__cmd_lighthouse, "run a lighthouse (quorum server)"},
    {"status", ftc__cmd_status, "show a lighthouse's jobs and quorums"},
    {"bench", ftc__cmd_bench, "benchmarks (ftc bench store|control|pg|ft)"},
    {"demo", ftc__cmd_demo,
     "train an example model while replica groups are killed"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: ftc <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++) {
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].help);
    }
    fprintf(out, "\n'ftc <command> --help' describes a command.\n");
}

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

void ftc__cmd_remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int ftc__cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("ftc %s\n", ftc_version());
    return 0;
}

/* Every command serves or launches many connections (a store or
 * lighthouse client per rank, two descriptors per rank under `ftc run`),
 * so the soft descriptor limit, often 1024, is lifted to the hard one, as
 * Redis and nginx do: a full table must not lock legitimate clients out.
 * Children (`ftc run`'s ranks) inherit it. The library leaves an embedding
 * process's limit alone: raising it could break that process's select(). */
static void lift_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    lift_fd_limit();
    if (argc < 2 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            return commands[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "ftc: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
