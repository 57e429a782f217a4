# The process-group data plane's reader (collective and side channels).
ftc_add_fuzz(pg_chan_fuzz
             SOURCE ${CMAKE_CURRENT_LIST_DIR}/pg_chan_fuzz.c
             SEEDS ${CMAKE_CURRENT_LIST_DIR}/corpus/pg_chan SECONDS 20)
