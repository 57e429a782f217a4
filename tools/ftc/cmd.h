/* The ftc CLI: one handler per subcommand, listed in one table (main.c). */
#ifndef FTC_TOOLS_CMD_H
#define FTC_TOOLS_CMD_H

#include <stddef.h>

typedef struct ftc__cmd {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
    const char *help;                  /* one line */
} ftc__cmd;

/* Subcommand handlers. Each prints its own usage for --help and returns the
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

/* "64K" -> 65536 (K, M or G suffix, powers of 1024). Returns 0 or -1 for
 * malformed text or a size that does not fit. */
int ftc__cmd_parse_size(const char *text, size_t *out);

/* Removes a folder and everything in it (best effort: temporary run
 * folders). */
void ftc__cmd_remove_tree(const char *dir);

/* True if argv has -h or --help. */
int ftc__cmd_wants_help(int argc, char **argv);

#endif
