/* The embedded store the control tests talk to. */
#include "control_kit.h"

#include <stdio.h>

#include "ftc/ftc.h"
#include "testkit.h"

static ftc_store_server *server;
static char addr[64];

int control_kit_setup(void **state)
{
    (void)state;
    TK_OK(ftc_store_server_create(NULL, &server));
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ftc_store_server_port(server));
    return 0;
}

int control_kit_teardown(void **state)
{
    (void)state;
    ftc_store_server_destroy(server);
    server = NULL;
    return 0;
}

const char *control_kit_addr(void)
{
    return addr;
}
