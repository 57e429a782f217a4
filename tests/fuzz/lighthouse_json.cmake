# libFuzzer target for the lighthouse's JSON codec (only with FTC_FUZZ,
# clang). The short run in `make check` starts from the seeds here and
# writes what it finds into the build tree, never into the sources.
if(FTC_FUZZ)
  add_executable(fuzz_lighthouse_json
                 ${CMAKE_CURRENT_LIST_DIR}/lighthouse_json_fuzz.c)
  target_compile_options(fuzz_lighthouse_json PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_lighthouse_json PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_lighthouse_json PRIVATE ftc_static)
  target_include_directories(fuzz_lighthouse_json PRIVATE
                             ${PROJECT_SOURCE_DIR}/src)
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz_lighthouse_json_corpus)
  file(MAKE_DIRECTORY ${corpus})
  add_test(NAME fuzz_lighthouse_json
           COMMAND fuzz_lighthouse_json -max_total_time=30 -max_len=8192
                   -timeout=10 ${corpus}
                   ${CMAKE_CURRENT_LIST_DIR}/lighthouse_json_seeds)
  set_tests_properties(fuzz_lighthouse_json PROPERTIES LABELS fuzz
                       TIMEOUT 120)
endif()
