# The dashboard in headless Chromium against a real `ftc lighthouse` and a
# live `ftc run` job (lighthouse_page_test.mjs, over cdp.mjs). node and
# chromium come from scripts/deps.sh; a missing one fails the test rather
# than skipping it. The screenshot it takes is left in the build folder.
find_program(FTC_NODE node)
if(NOT FTC_NODE)
  set(FTC_NODE node)
endif()
ftc_add_test(lighthouse_page_test
             COMMAND ${FTC_NODE} ${CMAKE_CURRENT_LIST_DIR}/lighthouse_page_test.mjs
                     $<TARGET_FILE:ftc_cli> $<TARGET_FILE:train_ddp>
                     ${CMAKE_BINARY_DIR}/lighthouse_page.png
             TIMEOUT 240 LABELS integration)
