/* The one option parser of every ftc subcommand: a subcommand describes
 * its options in a table, argv is parsed from it into the subcommand's
 * options struct, and --help is printed from the same table. */
#ifndef FTC_TOOLS_CLI_ARGS_H
#define FTC_TOOLS_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum ftc__cli_kind {
    FTC__CLI_FLAG,      /* no value: stores .flag_value, or 1 when it is 0 */
    FTC__CLI_STRING,    /* const char *, borrowed from argv */
    FTC__CLI_REPEAT,    /* each use appends a const char * (an array) */
    FTC__CLI_INT,       /* an integer in [min, max], decimal or 0x hex */
    FTC__CLI_SIZE,      /* bytes with a K, M or G suffix, in [min, max] */
    FTC__CLI_SECONDS,   /* seconds, fractions allowed, stored in ms;
                         * min and max are in ms */
    FTC__CLI_DOUBLE,    /* a number in [real_min, real_max] */
    FTC__CLI_ENUM,      /* one of .names, stored as its index */
    FTC__CLI_INT_LIST,  /* "1,4,16": integers in [min, max] (an array) */
    FTC__CLI_SIZE_LIST, /* "4K,1M": sizes in [min, max] (an array) */
    FTC__CLI_ENUM_SET,  /* "a,b": bit i set for each .names[i] given */
} ftc__cli_kind;

/* One option. Integers are stored in a field of 1, 4 or 8 bytes (bool,
 * int, uint32_t, int64_t, size_t, ...); arrays hold .max_count elements
 * and an int field counts those given. */
typedef struct ftc__cli_option {
    const char *name; /* without the leading "--" */
    ftc__cli_kind kind;
    size_t offset;             /* the field (the array) in the options struct */
    size_t size;               /* its size (one element's for arrays) */
    size_t count_offset;       /* REPEAT and lists: the int that counts */
    int max_count;             /* REPEAT and lists: the array's capacity */
    int64_t min, max;          /* INT, SIZE, SECONDS, the lists' elements */
    double real_min, real_max; /* DOUBLE */
    int64_t flag_value;        /* FLAG */
    const char *const *names;  /* ENUM, ENUM_SET: NULL-terminated */
    /* STRING, REPEAT: NULL when value is good, else why it is not. */
    const char *(*check)(const char *value);
    const char *env;          /* a variable that supplies the default */
    const char *metavar;      /* the value in --help, e.g. "N" */
    const char *help;         /* one line; NULL: internal, not listed */
    const char *default_text; /* in --help instead of the field's value */
} ftc__cli_option;

/* .offset and .size of a field; of an array and its counter. */
#define FTC__CLI_FIELD(type, member)                                           \
    .offset = offsetof(type, member), .size = sizeof(((type *)0)->member)
#define FTC__CLI_ARRAY(type, member, counter)                                  \
    .offset = offsetof(type, member), .size = sizeof(((type *)0)->member[0]),  \
    .count_offset = offsetof(type, counter),                                   \
    .max_count =                                                               \
        (int)(sizeof(((type *)0)->member) / sizeof(((type *)0)->member[0]))

/* .options and .n_options of a command from a table. */
#define FTC__CLI_OPTIONS(table)                                                \
    .options = table, .n_options = sizeof(table) / sizeof(table[0])

typedef struct ftc__cli_command {
    const char *name;  /* "bench store": messages start "ftc bench store: " */
    const char *usage; /* after "usage: ftc NAME "; NULL: "[options]" */
    const char *about; /* what it does: lines ending in \n */
    const char *notes; /* after the options (exit codes...); may be NULL */
    const ftc__cli_option *options;
    size_t n_options;
} ftc__cli_command;

/* What ftc__cli_parse did: anything but FTC__CLI_PARSED is the exit code
 * (0 after --help, 2 the usage error). */
enum { FTC__CLI_PARSED = -1, FTC__CLI_HELP = 0, FTC__CLI_USAGE = 2 };

/* Parses argv[1..argc) (argv[0] is the subcommand) into opts, which holds
 * the defaults. "--name value" and "--name=value"; a variable named by
 * .env is read first, so the command line wins. "--" ends the options.
 * With rest NULL every argument must be an option; otherwise the first
 * one that is not (or the one after "--") ends the options and *rest is
 * its index (argc when there is none). Returns FTC__CLI_PARSED,
 * FTC__CLI_HELP after printing --help on stdout (-h or --help among the
 * options; nothing is stored), or FTC__CLI_USAGE after one line on stderr
 * naming the subcommand, the option and what is wrong with it. */
int ftc__cli_parse(const ftc__cli_command *cmd, void *opts, int argc,
                   char **argv, int *rest);

/* Prints --help: the usage line, about, one line per option with its
 * metavar and its default (from defaults, the struct before parsing) and
 * the notes. */
void ftc__cli_help(const ftc__cli_command *cmd, const void *defaults,
                   FILE *out);

/* "ftc NAME: " + the message on stderr, then where the options are
 * listed: for errors found after parsing (options that conflict).
 * Returns FTC__CLI_USAGE. */
int ftc__cli_usage_error(const ftc__cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
