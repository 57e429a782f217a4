/* The pg layer's environment variables, read in this one place. */
#include <stdlib.h>

#include "pg/pg_int.h"

void ftc__pg_env_read(ftc__pg_env *out)
{
    out->host = getenv("FTC_PG_HOST");
    out->tcp_congestion = getenv("FTC_PG_TCP_CONGESTION");
    out->token = getenv("FTC_TOKEN");
}
