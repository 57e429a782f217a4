/* Built by install_test.sh against an installed libftc only (pkg-config,
 * no source tree): starts a store server, round-trips a key through it. */
#include <stdio.h>
#include <string.h>

#include "ftc/ftc.h"

int main(void)
{
    ftc_store_server *server = NULL;
    ftc_store_client *client = NULL;
    void *value = NULL;
    size_t len = 0;
    char addr[64];
    int rc = ftc_store_server_create(NULL, &server);
    if (rc == 0) {
        snprintf(addr, sizeof addr, "127.0.0.1:%d",
                 ftc_store_server_port(server));
        rc = ftc_store_client_connect(addr, NULL, &client);
    }
    if (rc == 0) {
        rc = ftc_store_client_set(client, "probe", "installed", 9, 5000);
    }
    if (rc == 0) {
        rc = ftc_store_client_get(client, "probe", &value, &len, 5000);
    }
    int same = rc == 0 && len == 9 && memcmp(value, "installed", 9) == 0;
    if (rc != 0) {
        fprintf(stderr, "install_probe: %s\n", ftc_last_error());
    }
    ftc_free(value);
    ftc_store_client_close(client);
    ftc_store_server_destroy(server);
    printf("install_probe: ftc %s, %s\n", ftc_version(),
           same ? "round trip ok" : "round trip FAILED");
    return same ? 0 : 1;
}
