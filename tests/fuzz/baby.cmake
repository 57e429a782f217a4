# The Baby backend's child side: its config and request ring
# (src/pg/baby/check.c, ring.c).
ftc_add_fuzz(baby_fuzz
             SOURCE ${CMAKE_CURRENT_LIST_DIR}/baby_fuzz.c
             SEEDS ${CMAKE_CURRENT_LIST_DIR}/corpus/baby SECONDS 20)
