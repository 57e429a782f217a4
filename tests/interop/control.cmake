ftc_add_test(control_mixed_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/control_mixed_test.c
             LABELS interop TIMEOUT 300
             ENV "FTC_TORCH2_PYTHON=${FTC_TORCH2_PYTHON};FTC_CONTROL_PEER_PY=${CMAKE_CURRENT_LIST_DIR}/control_peer.py")
