/* The manager tests' job: an embedded lighthouse and store. */
#include <stdio.h>
#include <stdlib.h>

#include "manager_kit.h"
#include "testkit.h"

mf_env *mf_env_new(void)
{
    mf_env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    ftc_lighthouse_opts lo;
    ftc_lighthouse_opts_init(&lo);
    lo.bind = "127.0.0.1:0";
    TK_OK(ftc_lighthouse_create(&lo, &e->lh));
    TK_OK(ftc_lighthouse_address(e->lh, e->lh_addr, sizeof(e->lh_addr)));
    ftc_store_server_opts so;
    ftc_store_server_opts_init(&so);
    so.bind_host = "127.0.0.1";
    TK_OK(ftc_store_server_create(&so, &e->store));
    snprintf(e->store_addr, sizeof(e->store_addr), "127.0.0.1:%d",
             ftc_store_server_port(e->store));
    return e;
}

void mf_env_free(mf_env *e)
{
    ftc_lighthouse_destroy(e->lh);
    ftc_store_server_destroy(e->store);
    free(e);
}

ftc_manager *mf_pair_leader(const mf_env *e, ftc_store_client **conn,
                            ftc_store_client **view)
{
    ftc_manager_opts o = mf_opts(e, "pair");
    o.group_size = 2;
    o.store_prefix = "pair/0";
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    TK_OK(ftc_store_client_connect(e->store_addr, NULL, conn));
    TK_OK(ftc_store_client_prefix(*conn, "pair/0", view));
    return m;
}

ftc_manager_opts mf_opts(const mf_env *e, const char *id)
{
    ftc_manager_opts o;
    ftc_manager_opts_init(&o);
    o.lighthouse = e->lh_addr;
    o.replica_id = id;
    o.store_addr = e->store_addr;
    o.quorum_timeout_ms = tk_ms(10000);
    o.timeout_ms = tk_ms(10000);
    return o;
}
