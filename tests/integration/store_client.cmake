# The store client against the embedded ftc server: threads, processes,
# waits, timeouts, cancel, restarts, 1,024 concurrent clients, barriers.
foreach(t store_client_test store_client_scale_test
          store_client_barrier_test)
  ftc_add_test(${t}
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c
               KITS store_client
               LABELS integration threaded TIMEOUT 300)
endforeach()
ftc_add_test(store_client_bench_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_client_bench_test.c
             ARGS $<TARGET_FILE:ftc_cli>
             LABELS integration TIMEOUT 120)
