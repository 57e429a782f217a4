# Lighthouse integration tests: real HTTP on loopback, in one process
# (api), old and new clients on one lighthouse (compact), the job's
# committed step (mark), groups left out as unreachable (exclude), across
# processes killed and stopped (chaos), and
# three lighthouses elected through a real etcd (ha).
set(FTC_LH_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
foreach(t api chaos compact exclude ha mark)
  ftc_add_test(lighthouse_${t}_test
               SOURCES ${FTC_LH_TEST_DIR}/lighthouse_${t}_test.c
               KITS lighthouse DEPENDS ftc_cli
               LABELS integration threaded TIMEOUT 300)
  target_compile_definitions(lighthouse_${t}_test PRIVATE
                             FTC_CLI_PATH="$<TARGET_FILE:ftc_cli>")
endforeach()
