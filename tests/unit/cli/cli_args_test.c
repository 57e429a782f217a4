/* The ftc CLI's option parser: every kind of option in both forms, "--"
 * and positional arguments, each error's message and exit code, the
 * environment default, and --help generated from the table. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_args.h"
#include "testkit.h"

typedef struct test_opts {
    int flag;
    int mode;
    const char *name;
    const char *tags[2];
    int n_tags;
    int count;
    uint32_t small;
    int64_t big;
    size_t bytes;
    int64_t wait_ms;
    double ratio;
    bool color; /* index in colors: a 1-byte field */
    int64_t steps[3];
    int n_steps;
    long sizes[2];
    int n_sizes;
    int shapes;
    const char *secret;
} test_opts;

static const char *const colors[] = {"red", "blue", NULL};
static const char *const shapes[] = {"box", "ball", "cone", NULL};

static const char *no_spaces(const char *v)
{
    return strchr(v, ' ') != NULL ? "no spaces" : NULL;
}

static const ftc__cli_option options[] = {
    {"flag", FTC__CLI_FLAG, FTC__CLI_FIELD(test_opts, flag), .help = "a flag"},
    {"fast", FTC__CLI_FLAG, FTC__CLI_FIELD(test_opts, mode), .flag_value = 7,
     .help = "mode 7"},
    {"name", FTC__CLI_STRING, FTC__CLI_FIELD(test_opts, name),
     .check = no_spaces, .env = "FTC_CLI_TEST_NAME", .metavar = "NAME",
     .help = "a name"},
    {"tag", FTC__CLI_REPEAT, FTC__CLI_ARRAY(test_opts, tags, n_tags),
     .metavar = "TAG", .help = "a tag (repeat)"},
    {"count", FTC__CLI_INT, FTC__CLI_FIELD(test_opts, count), .min = -5,
     .max = 10, .metavar = "N", .help = "how many"},
    {"small", FTC__CLI_INT, FTC__CLI_FIELD(test_opts, small), .min = 0,
     .max = UINT32_MAX, .metavar = "N", .help = "32 bits"},
    {"big", FTC__CLI_INT, FTC__CLI_FIELD(test_opts, big), .min = 0,
     .max = INT64_MAX, .metavar = "N", .help = "64 bits",
     .default_text = "random"},
    {"bytes", FTC__CLI_SIZE, FTC__CLI_FIELD(test_opts, bytes), .min = 1,
     .max = (int64_t)1 << 32, .metavar = "B", .help = "a size"},
    {"wait", FTC__CLI_SECONDS, FTC__CLI_FIELD(test_opts, wait_ms), .min = 1,
     .max = 60000, .metavar = "SECONDS", .help = "a wait"},
    {"ratio", FTC__CLI_DOUBLE, FTC__CLI_FIELD(test_opts, ratio),
     .real_min = 0.5, .real_max = 2, .metavar = "F", .help = "a ratio"},
    {"color", FTC__CLI_ENUM, FTC__CLI_FIELD(test_opts, color), .names = colors,
     .metavar = "red|blue", .help = "a color"},
    {"steps", FTC__CLI_INT_LIST, FTC__CLI_ARRAY(test_opts, steps, n_steps),
     .min = 0, .max = 100, .metavar = "S,...", .help = "steps"},
    {"sizes", FTC__CLI_SIZE_LIST, FTC__CLI_ARRAY(test_opts, sizes, n_sizes),
     .min = 1, .max = INT64_MAX, .metavar = "B,...", .help = "sizes"},
    {"shapes", FTC__CLI_ENUM_SET, FTC__CLI_FIELD(test_opts, shapes),
     .names = shapes, .metavar = "LIST", .help = "shapes"},
    {"secret", FTC__CLI_STRING, FTC__CLI_FIELD(test_opts, secret),
     .metavar = "S"},
};

static const ftc__cli_command command = {
    .name = "test",
    .usage = "[options] [FILE...]",
    .about = "Tests the parser.\n",
    .notes = "Notes at the end.\n",
    FTC__CLI_OPTIONS(options),
};

static test_opts defaults(void)
{
    return (test_opts){.count = 3,
                       .bytes = 64 << 10,
                       .wait_ms = 2500,
                       .ratio = 1,
                       .steps = {1, 2},
                       .n_steps = 2,
                       .sizes = {4096, 1 << 20},
                       .n_sizes = 2,
                       .shapes = 5};
}

/* What the parse wrote on stderr. */
static char err_text[4096];

/* Parses the NULL-terminated args (after argv[0]) into *o (defaults
 * first); rest as ftc__cli_parse's. Returns its result. */
static int parse(test_opts *o, const char *const *args, int *rest)
{
    char *argv[32] = {"test"};
    int argc = 1;
    for (; args[argc - 1] != NULL; argc++) {
        argv[argc] = (char *)args[argc - 1];
    }
    *o = defaults();
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    int rc = ftc__cli_parse(&command, o, argc, argv, rest);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(err_text, 1, sizeof(err_text) - 1, tmp);
    err_text[n] = '\0';
    fclose(tmp);
    return rc;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void every_kind(void **state)
{
    (void)state;
    test_opts o;
    assert_int_equal(
        parse(&o,
              ARGS("--flag", "--fast", "--name", "alpha", "--tag=a", "--tag",
                   "b", "--count=-5", "--small", "4294967295", "--big", "0x10",
                   "--bytes", "2M", "--wait", "0.25", "--ratio=0.5", "--color",
                   "blue", "--steps", "7,100,0", "--sizes=1G,3", "--shapes",
                   "cone,box", "--secret", "s"),
              NULL),
        FTC__CLI_PARSED);
    assert_string_equal(err_text, "");
    assert_int_equal(o.flag, 1);
    assert_int_equal(o.mode, 7);
    assert_string_equal(o.name, "alpha");
    assert_int_equal(o.n_tags, 2);
    assert_string_equal(o.tags[0], "a");
    assert_string_equal(o.tags[1], "b");
    assert_int_equal(o.count, -5);
    assert_int_equal(o.small, UINT32_MAX);
    assert_int_equal(o.big, 16);
    assert_int_equal(o.bytes, 2 << 20);
    assert_int_equal(o.wait_ms, 250);
    assert_true(o.ratio == 0.5);
    assert_true(o.color);
    assert_int_equal(o.n_steps, 3);
    assert_int_equal(o.steps[0], 7);
    assert_int_equal(o.steps[1], 100);
    assert_int_equal(o.steps[2], 0);
    assert_int_equal(o.n_sizes, 2);
    assert_int_equal(o.sizes[0], 1 << 30);
    assert_int_equal(o.sizes[1], 3);
    assert_int_equal(o.shapes, 1 | 4);
    assert_string_equal(o.secret, "s");
}

static void untouched_keep_defaults(void **state)
{
    (void)state;
    test_opts o;
    assert_int_equal(parse(&o, ARGS("--count", "4"), NULL), FTC__CLI_PARSED);
    test_opts want = defaults();
    want.count = 4;
    assert_memory_equal(&o, &want, sizeof(o));
}

static void dashes_and_positionals(void **state)
{
    (void)state;
    test_opts o;
    int rest = -1;
    /* the first argument that is not an option ends them */
    assert_int_equal(
        parse(&o, ARGS("--count", "2", "x", "--count", "9"), &rest),
        FTC__CLI_PARSED);
    assert_int_equal(rest, 3);
    assert_int_equal(o.count, 2);
    /* "--" too, and what follows is not parsed, not even --help */
    assert_int_equal(
        parse(&o, ARGS("--flag", "--", "--help", "--bogus"), &rest),
        FTC__CLI_PARSED);
    assert_int_equal(rest, 3);
    assert_int_equal(o.flag, 1);
    /* nothing after the options */
    assert_int_equal(parse(&o, ARGS("--flag"), &rest), FTC__CLI_PARSED);
    assert_int_equal(rest, 2);
    /* a value may start with "-" */
    assert_int_equal(parse(&o, ARGS("--name", "-x-"), &rest), FTC__CLI_PARSED);
    assert_string_equal(o.name, "-x-");
    /* without rest, positional arguments are an error */
    assert_int_equal(parse(&o, ARGS("--flag", "x"), NULL), FTC__CLI_USAGE);
    assert_non_null(strstr(err_text, "ftc test: unexpected argument 'x'"));
    assert_int_equal(parse(&o, ARGS("--", "x"), NULL), FTC__CLI_USAGE);
    assert_non_null(strstr(err_text, "unexpected argument 'x'"));
}

/* Each bad command line: the result is FTC__CLI_USAGE with this message. */
static void errors(void **state)
{
    (void)state;
    static const struct {
        const char *args[7];
        const char *says;
    } cases[] = {
        {{"--bogus"}, "ftc test: unknown option '--bogus'\n"},
        {{"--bogus=1"}, "unknown option '--bogus'"},
        {{"-x"}, "unknown option '-x'"},
        {{"--count"}, "ftc test: --count needs a value\n"},
        {{"--flag=1"}, "--flag takes no value"},
        {{"--count", "x"},
         "ftc test: bad value for --count: 'x' (an integer from -5 to 10)\n"},
        {{"--count", "11"}, "bad value for --count: '11'"},
        {{"--count", "-6"}, "bad value for --count: '-6'"},
        {{"--count", "3x"}, "bad value for --count: '3x'"},
        {{"--count", ""}, "bad value for --count: ''"},
        {{"--count", " 3"}, "bad value for --count: ' 3'"},
        {{"--small", "4294967296"}, "an integer from 0 to 4294967295"},
        {{"--big", "-1"}, "bad value for --big: '-1'"},
        {{"--big", "9223372036854775808"}, "bad value for --big"},
        {{"--bytes", "lots"},
         "bad value for --bytes: 'lots' (a size from 1 to 4G)"},
        {{"--bytes", "0"}, "bad value for --bytes: '0'"},
        {{"--bytes", "5G"}, "bad value for --bytes: '5G'"},
        {{"--bytes", "1T"}, "bad value for --bytes: '1T'"},
        {{"--bytes", "-1"}, "bad value for --bytes: '-1'"},
        {{"--wait", "61"}, "(seconds from 0.001 to 60)"},
        {{"--wait", "0.0001"}, "bad value for --wait"},
        {{"--wait", "nan"}, "bad value for --wait"},
        {{"--ratio", "3"}, "(a number from 0.5 to 2)"},
        {{"--ratio", "1e"}, "bad value for --ratio"},
        {{"--color", "green"}, "ftc test: --color is red or blue, not green\n"},
        {{"--steps", "1,"}, "bad value for --steps: '1,' (trailing comma)"},
        {{"--steps", "1,,2"}, "(an empty item)"},
        {{"--steps", ""}, "(no items)"},
        {{"--steps", "1,2,3,4"}, "(more than 3 items)"},
        {{"--steps", "1,101"}, "(an integer from 0 to 100, not 101)"},
        {{"--sizes", "1K,x"}, "(a size from 1 to"},
        {{"--shapes", "box,cube"},
         "ftc test: --shapes takes box, ball or cone, not 'cube'\n"},
        {{"--name", "a b"}, "bad value for --name: 'a b' (no spaces)"},
        {{"--tag", "1", "--tag", "2", "--tag", "3"}, "(more than 2 --tag)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        test_opts o;
        int rc = parse(&o, cases[i].args, NULL);
        if (rc != FTC__CLI_USAGE || strstr(err_text, cases[i].says) == NULL) {
            fail_msg("case %zu (%s): %d, expected '%s' in:\n%s", i,
                     cases[i].args[0], rc, cases[i].says, err_text);
        }
        /* one line, then where the options are */
        assert_non_null(strstr(err_text, "\n(ftc test --help lists the "
                                         "options)\n"));
    }
}

static void environment_default(void **state)
{
    (void)state;
    test_opts o;
    setenv("FTC_CLI_TEST_NAME", "from-env", 1);
    assert_int_equal(parse(&o, ARGS("--flag"), NULL), FTC__CLI_PARSED);
    assert_string_equal(o.name, "from-env");
    assert_int_equal(parse(&o, ARGS("--name", "cli"), NULL), FTC__CLI_PARSED);
    assert_string_equal(o.name, "cli");
    setenv("FTC_CLI_TEST_NAME", "with space", 1);
    assert_int_equal(parse(&o, ARGS("--flag"), NULL), FTC__CLI_USAGE);
    assert_non_null(strstr(err_text, "bad value for $FTC_CLI_TEST_NAME: "
                                     "'with space' (no spaces)"));
    setenv("FTC_CLI_TEST_NAME", "", 1);
    assert_int_equal(parse(&o, ARGS("--flag"), NULL), FTC__CLI_PARSED);
    assert_null(o.name);
    unsetenv("FTC_CLI_TEST_NAME");
}

/* --help from the table: every listed option with its metavar, its help
 * and its default; hidden ones not. */
static void help_text(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    test_opts d = defaults();
    ftc__cli_help(&command, &d, f);
    fclose(f);
    static const char *const wanted[] = {
        "usage: ftc test [options] [FILE...]\n\nTests the parser.\n",
        "\n  --flag ",
        "a flag\n",
        "  --name NAME ",
        "a name (default $FTC_CLI_TEST_NAME)\n",
        "  --tag TAG ",
        "  --count N ",
        "how many (default 3)\n",
        "  --small N ",
        "  --big N ",
        "64 bits (default random)\n",
        "  --bytes B ",
        "a size (default 64K)\n",
        "  --wait SECONDS ",
        "a wait (default 2.5)\n",
        "  --ratio F ",
        "a ratio (default 1)\n",
        "  --color red|blue ",
        "a color (default red)\n",
        "  --steps S,... ",
        "steps (default 1,2)\n",
        "  --sizes B,... ",
        "sizes (default 4K,1M)\n",
        "  --shapes LIST ",
        "shapes (default box,cone)\n",
        "  -h, --help ",
        "\nNotes at the end.\n",
    };
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
        if (strstr(text, wanted[i]) == NULL) {
            fail_msg("'%s' not in:\n%s", wanted[i], text);
        }
    }
    assert_null(strstr(text, "--secret"));
    assert_null(strstr(text, "--fast (default")); /* flags have none */
    /* every option listed has its own line */
    for (size_t i = 0; i < command.n_options; i++) {
        char line[64];
        snprintf(line, sizeof(line), "\n  --%s", options[i].name);
        assert_true((strstr(text, line) != NULL) == (options[i].help != NULL));
    }
    /* no line passes 79 columns */
    for (char *p = text; *p != '\0';) {
        size_t n = strcspn(p, "\n");
        assert_true(n <= 79);
        p += n + (p[n] == '\n');
    }
    free(text);
}

/* -h or --help anywhere among the options: help, nothing stored, no
 * error even with bad options around it. */
static void help_option(void **state)
{
    (void)state;
    test_opts o;
    fflush(stdout);
    int saved = dup(1);
    FILE *tmp = tmpfile();
    dup2(fileno(tmp), 1);
    int rc1 = parse(&o, ARGS("--count", "4", "--help"), NULL);
    test_opts after = o;
    int rc2 = parse(&o, ARGS("--bogus", "-h"), NULL);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    rewind(tmp);
    char out[8192];
    size_t n = fread(out, 1, sizeof(out) - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
    assert_int_equal(rc1, FTC__CLI_HELP);
    assert_int_equal(rc2, FTC__CLI_HELP);
    assert_string_equal(err_text, "");
    test_opts d = defaults();
    assert_memory_equal(&after, &d, sizeof(d));
    /* the defaults shown are the defaults, not what came before --help */
    assert_non_null(strstr(out, "how many (default 3)"));
    assert_null(strstr(out, "(default 4)"));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kind),
        cmocka_unit_test(untouched_keep_defaults),
        cmocka_unit_test(dashes_and_positionals),
        cmocka_unit_test(errors),
        cmocka_unit_test(environment_default),
        cmocka_unit_test(help_text),
        cmocka_unit_test(help_option),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
