/* The ftc subcommands' option parser (cli_args.h): argv into an options
 * struct by a table, each bad value said in one line, --help printed from
 * the same table. */
#include "cli_args.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HELP_WIDTH 79
/* An "--name METAVAR" longer than this gets a line of its own. */
#define HELP_COLUMN_MAX 32

int ftc__cli_usage_error(const ftc__cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ftc %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(ftc %s --help lists the options)\n", cmd->name);
    va_end(ap);
    return FTC__CLI_USAGE;
}

/* ------------------------------------------------------------ fields */

static void *field(void *opts, size_t offset)
{
    return (char *)opts + offset;
}

static void store_int(void *to, size_t size, int64_t v)
{
    if (size == 1) {
        uint8_t u = (uint8_t)v;
        memcpy(to, &u, 1);
    } else if (size == 4) {
        int32_t w = (int32_t)v;
        memcpy(to, &w, 4);
    } else {
        memcpy(to, &v, 8);
    }
}

static int64_t load_int(const void *from, size_t size)
{
    if (size == 1) {
        uint8_t u;
        memcpy(&u, from, 1);
        return u;
    }
    if (size == 4) {
        int32_t w;
        memcpy(&w, from, 4);
        return w;
    }
    int64_t v;
    memcpy(&v, from, 8);
    return v;
}

static int *counter(void *opts, const ftc__cli_option *o)
{
    return (int *)field(opts, o->count_offset);
}

/* ----------------------------------------------------------- numbers */

/* A whole integer, decimal or 0x hex; false if malformed. */
static bool parse_integer(const char *text, int64_t *out)
{
    const char *digits = text[0] == '-' || text[0] == '+' ? text + 1 : text;
    int base =
        digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') ? 16 : 10;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, base);
    if (!isdigit((unsigned char)digits[0]) || errno != 0 || *end != '\0') {
        return false;
    }
    *out = v;
    return true;
}

/* "64K" -> 65536 (K, M or G, powers of 1024); false if malformed or too
 * big for an int64_t. */
static bool parse_size(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!isdigit((unsigned char)text[0]) || errno != 0) {
        return false;
    }
    static const char suffixes[] = "KMG";
    const char *s = *end != '\0' ? strchr(suffixes, toupper(*end)) : NULL;
    unsigned shift = s != NULL ? 10 * (unsigned)(s - suffixes + 1) : 0;
    end += shift != 0;
    if (*end != '\0' || v > ((uint64_t)INT64_MAX >> shift)) {
        return false;
    }
    *out = (int64_t)(v << shift);
    return true;
}

static bool parse_real(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (isspace((unsigned char)text[0]) || end == text || *end != '\0' ||
        errno != 0 || !isfinite(v)) {
        return false;
    }
    *out = v;
    return true;
}

/* "64K" for 65536: the largest suffix that divides it. */
static void format_size(int64_t v, char *out, size_t cap)
{
    static const char suffixes[] = "GMK";
    for (int i = 0; i < 3; i++) {
        int64_t unit = (int64_t)1 << (10 * (3 - i));
        if (v != 0 && v % unit == 0) {
            snprintf(out, cap, "%" PRId64 "%c", v / unit, suffixes[i]);
            return;
        }
    }
    snprintf(out, cap, "%" PRId64, v);
}

/* "a, b or c" into out. */
static void join_names(const char *const *names, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; names[i] != NULL && used < cap; i++) {
        const char *sep = i == 0 ? "" : names[i + 1] == NULL ? " or " : ", ";
        int n = snprintf(out + used, cap - used, "%s%s", sep, names[i]);
        used += n > 0 ? (size_t)n : 0;
    }
}

/* ------------------------------------------------------------ values */

/* Why text is not a good element of o (a number in range), or NULL when
 * it is, with the value in *out. */
static const char *number(const ftc__cli_option *o, const char *text,
                          int64_t *out, char *why, size_t cap)
{
    bool sizes = o->kind == FTC__CLI_SIZE || o->kind == FTC__CLI_SIZE_LIST;
    bool ok = sizes ? parse_size(text, out) : parse_integer(text, out);
    if (ok && *out >= o->min && *out <= o->max) {
        return NULL;
    }
    char lo[32], hi[32];
    if (sizes) {
        format_size(o->min, lo, sizeof(lo));
        format_size(o->max, hi, sizeof(hi));
    } else {
        snprintf(lo, sizeof(lo), "%" PRId64, o->min);
        snprintf(hi, sizeof(hi), "%" PRId64, o->max);
    }
    snprintf(why, cap, "%s from %s to %s", sizes ? "a size" : "an integer", lo,
             hi);
    return why;
}

/* "1,4,16" into the array. Why it is bad, or NULL. */
static const char *list(const ftc__cli_option *o, void *opts, const char *text,
                        char *why, size_t cap)
{
    int n = 0;
    const char *p = text;
    char item[64];
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof(item)) {
            return len == 0 ? "an empty item" : "an item too long";
        }
        if (n == o->max_count) {
            snprintf(why, cap, "more than %d items", o->max_count);
            return why;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        int64_t v;
        if (number(o, item, &v, why, cap) != NULL) {
            size_t used = strlen(why);
            snprintf(why + used, cap - used, ", not %s", item);
            return why;
        }
        store_int(field(opts, o->offset + (size_t)n * o->size), o->size, v);
        n++;
        p += len;
        if (*p == ',' && *++p == '\0') {
            return "trailing comma";
        }
    }
    if (n == 0) {
        return "no items";
    }
    *counter(opts, o) = n;
    return NULL;
}

static int bad_value(const ftc__cli_command *cmd, const char *option,
                     const char *value, const char *why)
{
    return ftc__cli_usage_error(cmd, "bad value for %s: '%s' (%s)", option,
                                value, why);
}

/* Index of text in names, or -1. */
static int name_index(const char *const *names, const char *text, size_t len)
{
    for (int i = 0; names[i] != NULL; i++) {
        if (strlen(names[i]) == len && strncmp(names[i], text, len) == 0) {
            return i;
        }
    }
    return -1;
}

/* "a,b" into a bit set. */
static int enum_set(const ftc__cli_command *cmd, const ftc__cli_option *o,
                    const char *option, void *opts, const char *text)
{
    int64_t bits = 0;
    const char *p = text;
    do {
        size_t len = strcspn(p, ",");
        int i = name_index(o->names, p, len);
        if (i < 0) {
            char names[256];
            join_names(o->names, names, sizeof(names));
            return ftc__cli_usage_error(cmd, "%s takes %s, not '%.*s'", option,
                                        names, (int)len, p);
        }
        bits |= (int64_t)1 << i;
        p += len;
    } while (*p++ == ',');
    store_int(field(opts, o->offset), o->size, bits);
    return 0;
}

/* Stores value for o; option is how the message names it ("--job", or
 * "$FTC_LIGHTHOUSE"). 0, or FTC__CLI_USAGE after saying why. */
static int set_value(const ftc__cli_command *cmd, const ftc__cli_option *o,
                     const char *option, void *opts, const char *value)
{
    char why[160];
    const char *bad = NULL;
    void *to = field(opts, o->offset);
    int64_t v = 0;
    double real;
    switch (o->kind) {
    case FTC__CLI_FLAG:
        break;
    case FTC__CLI_STRING:
    case FTC__CLI_REPEAT:
        bad = o->check != NULL ? o->check(value) : NULL;
        if (bad == NULL && o->kind == FTC__CLI_REPEAT) {
            int *n = counter(opts, o);
            if (*n == o->max_count) {
                snprintf(why, sizeof(why), "more than %d %s", o->max_count,
                         option);
                bad = why;
            } else {
                to = field(opts, o->offset + (size_t)(*n)++ * o->size);
            }
        }
        if (bad == NULL) {
            memcpy(to, &value, sizeof(value));
        }
        break;
    case FTC__CLI_INT:
    case FTC__CLI_SIZE:
        bad = number(o, value, &v, why, sizeof(why));
        if (bad == NULL) {
            store_int(to, o->size, v);
        }
        break;
    case FTC__CLI_SECONDS:
        if (!parse_real(value, &real) ||
            (v = llround(real * 1000.0)) < o->min || v > o->max) {
            snprintf(why, sizeof(why), "seconds from %g to %g",
                     (double)o->min / 1000.0, (double)o->max / 1000.0);
            bad = why;
        } else {
            store_int(to, o->size, v);
        }
        break;
    case FTC__CLI_DOUBLE:
        if (!parse_real(value, &real) || real < o->real_min ||
            real > o->real_max) {
            snprintf(why, sizeof(why), "a number from %g to %g", o->real_min,
                     o->real_max);
            bad = why;
        } else {
            memcpy(to, &real, sizeof(real));
        }
        break;
    case FTC__CLI_ENUM:
        v = name_index(o->names, value, strlen(value));
        if (v < 0) {
            char names[256];
            join_names(o->names, names, sizeof(names));
            return ftc__cli_usage_error(cmd, "%s is %s, not %s", option, names,
                                        value);
        }
        store_int(to, o->size, v);
        break;
    case FTC__CLI_INT_LIST:
    case FTC__CLI_SIZE_LIST:
        bad = list(o, opts, value, why, sizeof(why));
        break;
    case FTC__CLI_ENUM_SET:
        return enum_set(cmd, o, option, opts, value);
    }
    return bad != NULL ? bad_value(cmd, option, value, bad) : 0;
}

/* ---------------------------------------------------------- the walk */

static const ftc__cli_option *find(const ftc__cli_command *cmd,
                                   const char *name, size_t len)
{
    for (size_t i = 0; i < cmd->n_options; i++) {
        const char *n = cmd->options[i].name;
        if (strlen(n) == len && strncmp(n, name, len) == 0) {
            return &cmd->options[i];
        }
    }
    return NULL;
}

/* Goes through the options. With opts NULL it only looks for -h/--help
 * and checks nothing; otherwise it stores each value. Returns
 * FTC__CLI_PARSED, FTC__CLI_HELP or FTC__CLI_USAGE. */
static int walk(const ftc__cli_command *cmd, void *opts, int argc, char **argv,
                int *rest)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return FTC__CLI_HELP;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (rest != NULL) {
                break;
            }
            if (opts == NULL) {
                continue;
            }
            return ftc__cli_usage_error(cmd, "unexpected argument '%s'", a);
        }
        const char *eq = strchr(a, '=');
        size_t len = eq != NULL ? (size_t)(eq - a) : strlen(a);
        /* -h is the only short option */
        const ftc__cli_option *o =
            a[1] == '-' ? find(cmd, a + 2, len - 2) : NULL;
        const char *value = eq != NULL ? eq + 1 : NULL;
        bool takes = o != NULL && o->kind != FTC__CLI_FLAG;
        if (takes && value == NULL && i + 1 < argc) {
            value = argv[++i];
        }
        if (opts == NULL) {
            continue;
        }
        if (o == NULL) {
            return ftc__cli_usage_error(cmd, "unknown option '%.*s'", (int)len,
                                        a);
        }
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)len, a);
        if (takes && value == NULL) {
            return ftc__cli_usage_error(cmd, "%s needs a value", name);
        }
        if (!takes && value != NULL) {
            return ftc__cli_usage_error(cmd, "%s takes no value", name);
        }
        if (!takes) {
            store_int(field(opts, o->offset), o->size,
                      o->flag_value != 0 ? o->flag_value : 1);
        } else if (set_value(cmd, o, name, opts, value) != 0) {
            return FTC__CLI_USAGE;
        }
    }
    if (rest != NULL) {
        *rest = i;
    } else if (i < argc && opts != NULL) {
        return ftc__cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
    return FTC__CLI_PARSED;
}

int ftc__cli_parse(const ftc__cli_command *cmd, void *opts, int argc,
                   char **argv, int *rest)
{
    if (walk(cmd, NULL, argc, argv, rest) == FTC__CLI_HELP) {
        ftc__cli_help(cmd, opts, stdout);
        return FTC__CLI_HELP;
    }
    for (size_t i = 0; i < cmd->n_options; i++) {
        const ftc__cli_option *o = &cmd->options[i];
        const char *v = o->env != NULL ? getenv(o->env) : NULL;
        if (v != NULL && v[0] != '\0') {
            char name[64];
            snprintf(name, sizeof(name), "$%s", o->env);
            if (set_value(cmd, o, name, opts, v) != 0) {
                return FTC__CLI_USAGE;
            }
        }
    }
    return walk(cmd, opts, argc, argv, rest);
}

/* -------------------------------------------------------------- help */

/* The default of o as text ("" when there is none to show). */
static void default_of(const ftc__cli_option *o, const void *defaults,
                       char *out, size_t cap)
{
    out[0] = '\0';
    const void *from = (const char *)defaults + o->offset;
    int64_t v = load_int(from, o->size);
    size_t used = 0;
    if (o->default_text != NULL) {
        snprintf(out, cap, "%s", o->default_text);
    } else if (o->kind == FTC__CLI_STRING && v != 0) {
        const char *s;
        memcpy(&s, from, sizeof(s));
        snprintf(out, cap, "%s", s);
    } else if (o->kind == FTC__CLI_ENUM) {
        snprintf(out, cap, "%s", o->names[v]);
    } else if (o->kind == FTC__CLI_INT && v != 0) {
        snprintf(out, cap, "%" PRId64, v);
    } else if (o->kind == FTC__CLI_SIZE && v != 0) {
        format_size(v, out, cap);
    } else if (o->kind == FTC__CLI_SECONDS && v != 0) {
        snprintf(out, cap, "%g", (double)v / 1000.0);
    } else if (o->kind == FTC__CLI_DOUBLE) {
        double d;
        memcpy(&d, from, sizeof(d));
        if (d != 0) {
            snprintf(out, cap, "%g", d);
        }
    } else if (o->kind == FTC__CLI_ENUM_SET) {
        for (int i = 0; o->names[i] != NULL && used < cap; i++) {
            if (v & ((int64_t)1 << i)) {
                used += (size_t)snprintf(out + used, cap - used, "%s%s",
                                         used > 0 ? "," : "", o->names[i]);
            }
        }
    } else if (o->kind == FTC__CLI_INT_LIST || o->kind == FTC__CLI_SIZE_LIST) {
        int n = *(const int *)((const char *)defaults + o->count_offset);
        for (int i = 0; i < n && used + 24 < cap; i++) {
            const void *at = (const char *)from + (size_t)i * o->size;
            char item[24];
            if (o->kind == FTC__CLI_SIZE_LIST) {
                format_size(load_int(at, o->size), item, sizeof(item));
            } else {
                snprintf(item, sizeof(item), "%" PRId64, load_int(at, o->size));
            }
            used += (size_t)snprintf(out + used, cap - used, "%s%s",
                                     i > 0 ? "," : "", item);
        }
    }
}

/* Prints text's words from column *at on, a new line indented to col
 * before a word that would pass HELP_WIDTH. */
static void wrap(FILE *out, const char *text, int col, int *at)
{
    for (const char *p = text; *p != '\0';) {
        int len = (int)strcspn(p, " ");
        if (*at > col && *at + 1 + len > HELP_WIDTH) {
            *at = fprintf(out, "\n%*s", col, "") - 1;
        } else if (*at > col) {
            *at += fprintf(out, " ");
        }
        *at += fprintf(out, "%.*s", len, p);
        p += len;
        p += strspn(p, " ");
    }
}

/* "  --name METAVAR" */
static int left_of(const ftc__cli_option *o, char *out, size_t cap)
{
    bool takes = o->kind != FTC__CLI_FLAG;
    return snprintf(out, cap, "  --%s%s%s", o->name, takes ? " " : "",
                    takes ? o->metavar : "");
}

static void print_option(FILE *out, const ftc__cli_option *o,
                         const void *defaults, int col)
{
    char left[96], def[256], text[320] = "";
    int at = left_of(o, left, sizeof(left));
    fprintf(out, "%s", left);
    if (at + 2 > col) {
        at = fprintf(out, "\n") - 1;
    }
    at += fprintf(out, "%*s", col - at, "");
    wrap(out, o->help, col, &at);
    default_of(o, defaults, def, sizeof(def));
    if (o->env != NULL) {
        snprintf(text, sizeof(text), "(default $%s%s%s)", o->env,
                 def[0] != '\0' ? ", else " : "", def);
    } else if (def[0] != '\0') {
        snprintf(text, sizeof(text), "(default %s)", def);
    }
    wrap(out, text, col, &at);
    fprintf(out, "\n");
}

void ftc__cli_help(const ftc__cli_command *cmd, const void *defaults, FILE *out)
{
    fprintf(out, "usage: ftc %s %s\n\n%s\noptions:\n", cmd->name,
            cmd->usage != NULL ? cmd->usage : "[options]", cmd->about);
    int col = 14; /* "  -h, --help" */
    for (size_t i = 0; i < cmd->n_options; i++) {
        char left[96];
        int n = left_of(&cmd->options[i], left, sizeof(left)) + 2;
        if (cmd->options[i].help != NULL && n > col &&
            n <= HELP_COLUMN_MAX + 2) {
            col = n;
        }
    }
    for (size_t i = 0; i < cmd->n_options; i++) {
        if (cmd->options[i].help != NULL) {
            print_option(out, &cmd->options[i], defaults, col);
        }
    }
    fprintf(out, "  -h, --help%*sprint this help\n", col - 12, "");
    if (cmd->notes != NULL) {
        fprintf(out, "\n%s", cmd->notes);
    }
}
