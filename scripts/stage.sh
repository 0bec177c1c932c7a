#!/usr/bin/env bash
# Times the stages of `make test` (Makefile: STAGE_LOG is set for `test` and its
# prerequisites) and prints their wall seconds at the end, so a slow run says where its time
# went.
#   scripts/stage.sh LOG NAME COMMAND...     run COMMAND, then add "NAME" and its seconds to
#                                            LOG; exits with COMMAND's status (a failure
#                                            prints the table so far)
#   scripts/stage.sh LOG --reset             start a new LOG (the run's clock starts here)
#   scripts/stage.sh LOG --background NAME COMMAND...
#                                            start COMMAND in the background, its output in
#                                            LOG.NAME.out; its line is added when it ends
#   scripts/stage.sh LOG --report            print the table: each stage's start (seconds
#                                            after --reset), its wall seconds and status,
#                                            and the total
# LOG lines: NAME<TAB>START<TAB>SECONDS<TAB>STATUS. Stages that overlap (a background one)
# show it in their start and end; the total is the wall time since --reset.
set -uo pipefail
log="$1"
shift
now() { date +%s.%N; }

t0() { # the run's start: LOG.start, or now (a stage run on its own)
    if [ -f "$log.start" ]; then cat "$log.start"; else now; fi
}

add() { # NAME START END STATUS
    awk -v n="$1" -v t="$(t0)" -v s="$2" -v e="$3" -v rc="$4" \
        'BEGIN { printf "%s\t%.0f\t%.1f\t%s\n", n, s - t, e - s, rc }' >> "$log"
}

report() {
    [ -f "$log" ] || return 0
    local total
    total="$(awk -v t="$(t0)" -v e="$(now)" 'BEGIN { printf "%.1f", e - t }')"
    echo
    echo "make test: stage timings (wall seconds; a background stage overlaps the others)"
    awk -F'\t' '{ printf "  %-34s start %6ss  %8.1f s  %s\n", $1, "+" $2, $3,
                   ($4 == 0 ? "ok" : "FAILED (" $4 ")") }' "$log"
    awk -v t="$total" 'BEGIN { printf "  %-34s %15s %8.1f s (%.1f min)\n", "total", "", t, t / 60 }' 
}

case "${1:-}" in
--reset)
    mkdir -p "$(dirname "$log")"
    rm -f "$log" "$log".*.out
    now > "$log.start"
    ;;
--report)
    report
    ;;
--background)
    name="$2"
    shift 2
    mkdir -p "$(dirname "$log")"
    out="$log.${name//[^A-Za-z0-9_-]/_}.out"
    start="$(now)"
    echo "stage: $name started in the background (output: $out)"
    (
        "$@" > "$out" 2>&1
        rc=$?
        add "$name (background)" "$start" "$(now)" "$rc"
    ) < /dev/null &
    ;;
*)
    name="$1"
    shift
    mkdir -p "$(dirname "$log")"
    start="$(now)"
    "$@"
    rc=$?
    add "$name" "$start" "$(now)" "$rc"
    if [ "$rc" -ne 0 ]; then report; fi
    exit "$rc"
    ;;
esac
