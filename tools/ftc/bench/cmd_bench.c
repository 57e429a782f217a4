/* `ftc bench`: benchmarks, one subcommand each ,
 * printing a table or, with --json, one JSON object per line. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "bench/cmd_bench.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} benches[] = {
    {"store", bench_store_main,
     "key-value store ops/s and barrier latency (ftc client + server)"},
    {"control", ftc__cmd_bench_control,
     "barrier/all_gather/all_sum latency over the store"},
    {"pg", bench_pg_main,
     "process-group collectives between local ranks (nccl-tests style)"},
    {"ft", ftc__cmd_bench_ft,
     "manager step latency per replica groups, healing throughput"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: ftc bench <what> [options]\n\nbenchmarks:\n");
    for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++) {
        fprintf(out, "  %-8s %s\n", benches[i].name, benches[i].help);
    }
    fprintf(out, "\n'ftc bench <what> --help' describes one.\n");
}

int ftc__cmd_bench(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++) {
        if (strcmp(argv[1], benches[i].name) == 0) {
            return benches[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "ftc bench: unknown benchmark '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
