/* PyTorch ranks (torch's own _StoreCollectives, Python) and ftc ranks (C)
 * take part in the same control collectives on one ftc store: proof that
 * the key layout is c10d's. Ranks 0 and 1 are PyTorch, 2 and 3 are ftc. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc/ftc.h"
#include "testkit.h"

#define WORLD 4
#define TIMEOUT_MS 20000

static int check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "ftc rank: wrong %s\n", what);
    }
    return ok ? 0 : 1;
}

/* The same script as tests/interop/control_peer.py, from an ftc rank. */
static int rank_on_ftc(int argc, char **argv)
{
    if (argc < 3) {
        return 2;
    }
    const char *addr = argv[1];
    int rank = (int)strtol(argv[2], NULL, 10);
    int64_t t = tk_ms(TIMEOUT_MS);
    ftc_store_client *store = NULL;
    ftc_control *g = NULL;
    ftc_control_opts o;
    ftc_control_opts_init(&o);
    o.generation = 0; /* PyTorch ranks take no part in generation agreement */
    int bad = 0;
    if (ftc_store_client_connect(addr, NULL, &store) != 0 ||
        ftc_control_create(store, rank, WORLD, &o, &g, t) != 0 ||
        ftc_control_barrier(g, "mixed/barrier", t) != 0) {
        fprintf(stderr, "ftc rank %d: %s\n", rank, ftc_last_error());
        return 1;
    }
    char mine[16];
    int n = snprintf(mine, sizeof(mine), "r%d", rank);
    ftc_store_value all[WORLD];
    if (ftc_control_all_gather(g, "mixed/all_gather", mine, (size_t)n, all,
                               t) != 0) {
        fprintf(stderr, "all_gather: %s\n", ftc_last_error());
        return 1;
    }
    for (int i = 0; i < WORLD; i++) {
        char want[16];
        int wn = snprintf(want, sizeof(want), "r%d", i);
        bad |= check(all[i].len == (size_t)wn &&
                         memcmp(all[i].data, want, (size_t)wn) == 0,
                     "all_gather");
    }
    ftc_store_values_free(all, WORLD);
    int64_t sum = 0;
    if (ftc_control_all_sum(g, "mixed/all_sum", rank + 1, &sum, t) != 0) {
        fprintf(stderr, "all_sum: %s\n", ftc_last_error());
        return 1;
    }
    bad |= check(sum == 1 + 2 + 3 + 4, "all_sum");
    void *v = NULL;
    size_t len = 0;
    if (ftc_control_broadcast_recv(g, "mixed/broadcast", &v, &len, t) != 0) {
        fprintf(stderr, "broadcast: %s\n", ftc_last_error());
        return 1;
    }
    bad |= check(len == 10 && memcmp(v, "from-torch", 10) == 0, "broadcast");
    ftc_free(v);
    n = snprintf(mine, sizeof(mine), "g%d", rank);
    if (rank == WORLD - 1) {
        if (ftc_control_gather_recv(g, "mixed/gather", mine, (size_t)n, all,
                                    t) != 0) {
            fprintf(stderr, "gather: %s\n", ftc_last_error());
            return 1;
        }
        for (int i = 0; i < WORLD; i++) {
            char want[16];
            int wn = snprintf(want, sizeof(want), "g%d", i);
            bad |= check(all[i].len == (size_t)wn &&
                             memcmp(all[i].data, want, (size_t)wn) == 0,
                         "gather");
        }
        ftc_store_values_free(all, WORLD);
    } else if (ftc_control_gather_send(g, "mixed/gather", mine, (size_t)n, t) !=
               0) {
        fprintf(stderr, "gather: %s\n", ftc_last_error());
        return 1;
    }
    if (ftc_control_scatter_recv(g, "mixed/scatter", &v, &len, t) != 0) {
        fprintf(stderr, "scatter: %s\n", ftc_last_error());
        return 1;
    }
    n = snprintf(mine, sizeof(mine), "s%d", rank);
    bad |= check(len == (size_t)n && memcmp(v, mine, len) == 0, "scatter");
    ftc_free(v);
    if (ftc_control_barrier(g, "mixed/done", t) != 0) {
        fprintf(stderr, "done barrier: %s\n", ftc_last_error());
        return 1;
    }
    ftc_control_destroy(g);
    ftc_store_client_close(store);
    return bad;
}

static bool python_ranks_connected(ftc_store_server *server)
{
    ftc_store_server_stats s;
    return ftc_store_server_stats_get(server, &s) == 0 && s.connections >= 2;
}

static void torch_and_ftc_ranks_share_collectives(void **state)
{
    (void)state;
    const char *python = getenv("FTC_TORCH2_PYTHON");
    const char *script = getenv("FTC_CONTROL_PEER_PY");
    assert_non_null(python);
    assert_non_null(script);
    ftc_store_server *server = NULL;
    TK_OK(ftc_store_server_create(NULL, &server));
    char addr[64], timeout_s[16];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ftc_store_server_port(server));
    snprintf(timeout_s, sizeof(timeout_s), "%lld",
             (long long)(tk_ms(TIMEOUT_MS) / 1000));
    tk_child kids[WORLD];
    for (int r = 0; r < WORLD; r++) {
        char rank[8];
        snprintf(rank, sizeof(rank), "%d", r);
        if (r == 2) {
            /* The ftc ranks start once both PyTorch ranks are connected:
             * importing torch alone takes over 20 s on a loaded host, and
             * the collectives' timeouts are for the collectives. */
            TK_WAIT_UNTIL(python_ranks_connected(server), 60000);
        }
        if (r < 2) {
            char *argv[] = {(char *)python,
                            (char *)script,
                            addr,
                            rank,
                            "4",
                            timeout_s,
                            NULL};
            tk_spawn_cmd(&kids[r], argv, NULL);
        } else {
            char *args[] = {addr, rank, NULL};
            tk_spawn(&kids[r], "ftc_rank", args, NULL);
        }
    }
    int killed = tk_reap(kids, WORLD, TIMEOUT_MS + 10000);
    ftc_store_server_destroy(server);
    assert_int_equal(killed, 0);
    for (int r = 0; r < WORLD; r++) {
        if (tk_exit_code(&kids[r]) != 0) {
            fail_msg("rank %d (%s) exited with %d", r, kids[r].name,
                     tk_exit_code(&kids[r]));
        }
    }
}

int main(int argc, char **argv)
{
    const tk_role roles[] = {{"ftc_rank", rank_on_ftc}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(torch_and_ftc_ranks_share_collectives),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
