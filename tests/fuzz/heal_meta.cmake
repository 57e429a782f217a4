# The healing metadata decoder (src/ft/heal/heal_format.c).
ftc_add_fuzz(heal_meta_fuzz
             SOURCE ${CMAKE_CURRENT_LIST_DIR}/heal_meta_fuzz.c
             SEEDS ${CMAKE_CURRENT_LIST_DIR}/corpus/heal_meta SECONDS 20)
