# Turns the dashboard page into a C header at build time:
#   cmake -DIN=page.html -DOUT=page.h -DNAME=symbol -P embed.cmake
# (a byte array, so the page needs no escaping and no tool beyond CMake).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT}
  "/* Generated from ${IN} by embed.cmake; do not edit. */\n"
  "static const char ${NAME}[] = {\n${bytes}0x00};\n")
