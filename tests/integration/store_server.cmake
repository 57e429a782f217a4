# The store server against raw-socket clients (tests/lib/store_kit).
ftc_add_test(store_server_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_test.c
             KITS store store_server
             LABELS integration threaded TIMEOUT 120)
ftc_add_test(store_server_hostile_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_hostile_test.c
             KITS store store_server
             LABELS integration threaded TIMEOUT 180)
ftc_add_test(store_server_scale_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_scale_test.c
             KITS store store_server
             LABELS integration threaded TIMEOUT 300)
ftc_add_test(store_server_cli_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_cli_test.c
             KITS store
             ARGS $<TARGET_FILE:ftc_cli>
             LABELS integration TIMEOUT 120)
ftc_add_test(store_server_api_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_api_test.c
             KITS store store_server
             LABELS integration threaded TIMEOUT 120)
ftc_add_test(store_auth_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_auth_test.c
             KITS store store_server
             LABELS integration threaded TIMEOUT 120)
ftc_add_test(store_server_memory_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_memory_test.c
             KITS store
             LABELS integration threaded TIMEOUT 300)
