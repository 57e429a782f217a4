# The dashboard's JavaScript, run by node against a real `ftc lighthouse`
# (lighthouse_page_test.mjs). node comes from scripts/deps.sh; a missing
# node fails the test rather than skipping it.
find_program(FTC_NODE node)
if(NOT FTC_NODE)
  set(FTC_NODE node)
endif()
ftc_add_test(lighthouse_page_test
             COMMAND ${FTC_NODE} ${CMAKE_CURRENT_LIST_DIR}/lighthouse_page_test.mjs
                     $<TARGET_FILE:ftc_cli>
             TIMEOUT 120 LABELS integration)
