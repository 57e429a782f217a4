# The store server against raw-socket clients (tests/lib/store_raw.c).
set(STORE_SERVER_KIT ${PROJECT_SOURCE_DIR}/tests/lib/store_raw.c
    ${CMAKE_CURRENT_LIST_DIR}/store_server_kit.c)
ftc_add_test(store_server_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_test.c
                     ${STORE_SERVER_KIT}
             LABELS integration threaded TIMEOUT 120)
ftc_add_test(store_server_hostile_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_hostile_test.c
                     ${STORE_SERVER_KIT}
             LABELS integration threaded TIMEOUT 180)
ftc_add_test(store_server_scale_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_scale_test.c
                     ${STORE_SERVER_KIT}
             LABELS integration threaded TIMEOUT 300)
ftc_add_test(store_server_cli_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_cli_test.c
                     ${PROJECT_SOURCE_DIR}/tests/lib/store_raw.c
             ARGS $<TARGET_FILE:ftc_cli>
             LABELS integration TIMEOUT 120)
ftc_add_test(store_server_api_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_api_test.c
                     ${STORE_SERVER_KIT}
             LABELS integration threaded TIMEOUT 120)
