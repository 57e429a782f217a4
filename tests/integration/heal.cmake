# The healing server under hostile streams while a healer fetches from it
# (raw sockets and libcurl on loopback, in one process).
ftc_add_test(heal_hostile_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/heal_hostile_test.c
             KITS lighthouse
             LABELS integration threaded TIMEOUT 300)
