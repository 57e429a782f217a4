# libFuzzer target for the lighthouse's JSON codec (only with FTC_FUZZ,
# clang). The short run in `make check` starts from the seeds here and
# writes what it finds into the build tree, never into the sources.
ftc_add_fuzz(fuzz_lighthouse_json
             SOURCE ${CMAKE_CURRENT_LIST_DIR}/lighthouse_json_fuzz.c
             SEEDS ${CMAKE_CURRENT_LIST_DIR}/lighthouse_json_seeds SECONDS 30
             TIMEOUT 120 ARGS -max_len=8192)
