# The store client against PyTorch's own TCPStore servers: torch 2.x (libuv
# and legacy servers, 2.x dialect) and torch 1.13 (1.13 dialect). One
# executable, one CTest test per server. A missing interpreter fails.
set(agent ${CMAKE_CURRENT_LIST_DIR}/store_client_torch_agent.py)
ftc_add_test(store_client_interop_torch2
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_client_interop_test.c
  KITS torch store_client
  ARGS ${FTC_TORCH2_PYTHON} ${agent} torch2
  LABELS interop threaded TIMEOUT 600)
foreach(flavour torch2_legacy torch1)
  if(flavour STREQUAL torch1)
    set(py ${FTC_TORCH1_PYTHON})
  else()
    set(py ${FTC_TORCH2_PYTHON})
  endif()
  ftc_add_test(store_client_interop_${flavour}
               COMMAND store_client_interop_torch2 ${py} ${agent} ${flavour}
               LABELS interop threaded TIMEOUT 600)
endforeach()
