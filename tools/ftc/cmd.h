/* The ftc CLI: one handler per subcommand, listed in one table (main.c). */
#ifndef FTC_TOOLS_CMD_H
#define FTC_TOOLS_CMD_H

#include <stddef.h>

typedef struct ftc__cmd {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
    const char *help;                  /* one line */
} ftc__cmd;

/* Subcommand handlers. Each parses its options with ftc__cli_parse
 * (cli_args.h), which prints --help from the same table, and returns the
 * process exit code. */
int ftc__cmd_version(int argc, char **argv);
int ftc__cmd_store(int argc, char **argv);
int ftc__cmd_run(int argc, char **argv);
int ftc__cmd_lighthouse(int argc, char **argv);
int ftc__cmd_status(int argc, char **argv);
int ftc__cmd_bench(int argc, char **argv);
int ftc__cmd_bench_control(int argc, char **argv);
int ftc__cmd_bench_ft(int argc, char **argv);
int ftc__cmd_demo(int argc, char **argv);

/* Removes a folder and everything in it (best effort: temporary run
 * folders). */
void ftc__cmd_remove_tree(const char *dir);

#endif
