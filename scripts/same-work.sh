#!/usr/bin/env bash
# same-work.sh OLD-BUILD NEW-BUILD: whether two builds of the benchmarks do the same work, for a
# change that must not cost speed (a refactor). A wall-clock A/B on a shared 2-core machine
# moves by 10-20 % between runs of one binary (code placement, neighbours); the count of
# instructions executed does not. Runs bench_engine, bench_constraints (plain and 30 %
# constrained) and bench_cycle of both build folders under valgrind's cachegrind at reduced
# sizes and prints, per benchmark, the instructions of each, the ratio NEW/OLD, and the ratios of
# first-level data-cache misses and mispredicted branches. Exits 1 when an instruction ratio is
# above 1.02 (the new build does more work), 2 on bad usage. Takes about a minute.
set -u
[ $# -eq 2 ] || { echo "usage: $0 OLD-BUILD-DIR NEW-BUILD-DIR" >&2; exit 2; }
old="$1"; new="$2"
command -v valgrind >/dev/null || { echo "$0: valgrind is needed" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
benches=("bench_engine 2000 4000" "bench_constraints 1000 2000 0" "bench_constraints 1000 2000 30"
         "bench_cycle 1000 2000")
measure() { # BUILD-DIR BENCH ARGS... -> "instr d1miss mispred"
    local dir="$1"; shift
    local bin="$dir/$1"; shift
    [ -x "$bin" ] || { echo "$0: $bin is not built" >&2; exit 2; }
    local f="$out/cg"
    valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes --cachegrind-out-file="$f" \
        "$bin" "$@" > /dev/null 2>&1 || { echo "$0: $bin $* failed" >&2; exit 2; }
    # summary: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim
    awk '/^summary:/ {print $2, $6 + $9, $12 + $14}' "$f"
}
worse=0
printf '%-32s %15s %15s %7s %8s %8s\n' benchmark old-instr new-instr ratio d1-miss mispred
for b in "${benches[@]}"; do
    read -r oi od ob <<< "$(measure "$old" $b)"
    read -r ni nd nb <<< "$(measure "$new" $b)"
    line=$(awk -v oi="$oi" -v ni="$ni" -v od="$od" -v nd="$nd" -v ob="$ob" -v nb="$nb" \
        'BEGIN {printf "%15.0f %15.0f %7.4f %8.4f %8.4f", oi, ni, ni / oi, nd / od, nb / ob}')
    printf '%-32s %s\n' "$b" "$line"
    awk -v oi="$oi" -v ni="$ni" 'BEGIN {exit !(ni / oi > 1.02)}' && worse=1
done
[ $worse = 0 ] && echo "same work: no benchmark executes over 2 % more instructions" ||
    echo "MORE WORK: a benchmark executes over 2 % more instructions in $new"
exit $worse
