# The store server's request decoder and its state.
ftc_add_fuzz(store_wire_fuzz
             SOURCE ${CMAKE_CURRENT_LIST_DIR}/store_wire_fuzz.c
             SEEDS ${CMAKE_CURRENT_LIST_DIR}/corpus/store_wire SECONDS 25)
ftc_add_fuzz(store_kv_fuzz
             SOURCE ${CMAKE_CURRENT_LIST_DIR}/store_kv_fuzz.c
             SEEDS ${CMAKE_CURRENT_LIST_DIR}/corpus/store_kv SECONDS 20)
