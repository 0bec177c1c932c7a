#!/usr/bin/env bash
# Every C file follows .clang-format (skipped when clang-format is not installed).
. "$(dirname "$0")/lib.sh"
command -v clang-format >/dev/null || { echo "skipped: no clang-format"; exit 77; }
cd "$SRC"
for f in $(find src tests fuzz bench -name '*.c' -o -name '*.h'); do
    if clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then ok; else fail "$f is not formatted (make format)"; fi
done
finish
