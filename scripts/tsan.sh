#!/usr/bin/env bash
# Runs the threaded tests (ctest label tsan, GS_TSAN_TESTS in CMakeLists.txt) of a GS_TSAN
# build. ThreadSanitizer writes its reports to files (log_path) rather than to stderr, so a
# report from a process that a test kills, or whose output a test throws away, still fails
# the run: after ctest, any report file is printed and fails it. Suppressions
# (scripts/tsan.supp) are for third-party libraries only.
#   usage: scripts/tsan.sh BUILD-DIR [PARALLEL]
set -uo pipefail
build="$(cd "$1" && pwd)"
par="${2:-1}"
src="$(cd "$(dirname "$0")/.." && pwd)"
reports="$build/tsan-reports"
rm -rf "$reports"
mkdir -p "$reports"
TSAN_OPTIONS="log_path=$reports/report suppressions=$src/scripts/tsan.supp"
export TSAN_OPTIONS="$TSAN_OPTIONS second_deadlock_stack=1"

(cd "$build" && ctest --output-on-failure -L tsan -j "$par")
rc=$?
shopt -s nullglob
found=("$reports"/report.*)
if [ "${#found[@]}" -gt 0 ]; then
    echo "tsan: ${#found[@]} process(es) reported (full reports in $reports):"
    for f in "${found[@]}"; do
        echo "---- $f"
        head -60 "$f"
    done
    rc=1
fi
[ "$rc" -eq 0 ] && echo "tsan: the threaded tests ran without a report"
exit "$rc"
