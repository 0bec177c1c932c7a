# embed.cmake - a file as a C array, for text the binary serves (the scheduler's dashboard
# page): cmake -DIN=FILE -DOUT=FILE.c -DNAME=SYMBOL -DHEADER=INCLUDE -P embed.cmake
# writes `const char SYMBOL[]` (the bytes and a NUL) and `const size_t SYMBOL_len` (without
# the NUL). HEADER, the header that declares them, is included so that the compiler checks
# the two agree.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REPEAT "[0-9a-f]" 32 line) # 16 bytes a line (CMake's regex has no {n})
string(REGEX REPLACE "(${line})" "\\1\n" hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}.tmp"
     "/* generated from ${IN} by scripts/embed.cmake: do not edit */\n"
     "#include \"${HEADER}\"\n\n"
     "const char ${NAME}[] = {\n${bytes}0};\n"
     "const size_t ${NAME}_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
