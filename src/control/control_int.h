/* The control layer's shared internals: the group struct, key naming and
 * the missing-rank report used by every collective. */
#ifndef FTC_CONTROL_INT_H
#define FTC_CONTROL_INT_H

#include <stdint.h>

#include "base/base_int.h"
#include "ftc/control.h"

/* Timeouts of FTC_TIMEOUT_DEFAULT mean this (c10d's 5 minutes). */
#define FTC__CONTROL_DEFAULT_TIMEOUT_MS 300000
/* After a timeout, the bookkeeping (marking the collective abandoned,
 * finding missing ranks) gets this much more time. */
#define FTC__CONTROL_GRACE_MS 2000
/* The longest key a collective builds ("<key>/num_members" ...). */
#define FTC__CONTROL_KEY_MAX 1024

struct ftc_control {
    ftc_store_client *store; /* borrowed */
    int rank;
    int world;
    char *auto_prefix;
    int64_t generation;
    uint64_t next_auto; /* sequence number of the next automatic key */
    ftc__strset used;   /* explicit keys used so far */
};

/* Resolves key (NULL = next automatic key) into out and marks it (and the
 * extra suffix, e.g. "/barrier", when not NULL) used. FTC_EEXIST when the
 * key was used before, FTC_EINVAL when too long. */
int ftc__control_claim_key(ftc_control *g, const char *op, const char *key,
                           const char *also_suffix, char *out, size_t cap);

/* "<key>/<suffix>" into out (cap FTC__CONTROL_KEY_MAX). */
void ftc__control_subkey(char *out, const char *key, const char *suffix);
/* "<key>/<rank>" into out. */
void ftc__control_rank_key(char *out, const char *key, int rank);

/* Timeout in ms left before dl, for a store call (never DEFAULT). */
int64_t ftc__control_left_ms(ftc__deadline dl);

/* Sets an FTC_ETIMEDOUT error "<op> '<key>' timed out after <ms> ms:
 * missing ranks a, b, c" after finding, with a bounded number of store
 * CHECKs, which ranks never wrote "<key>/<rank>" (exclude: a rank not to
 * ask about, or -1). Returns FTC_ETIMEDOUT. */
int ftc__control_timeout_error(ftc_control *g, const char *op, const char *key,
                               int exclude, int64_t elapsed_ms);

#endif
