#!/usr/bin/env bash
# Runs every libFuzzer binary of a GS_FUZZ build (build-dir/fuzzer_*) for a fixed time on its
# seed corpus (fuzz/corpus/NAME, read only) and a working corpus kept in the build folder. A
# crash, a sanitizer report, a leak, an input that runs longer than -timeout or a process that
# outlives its time fails the run; the failing target's log (with its seed and the saved
# input under build-dir/artifacts-NAME/) is printed. `make test` runs this briefly, `make fuzz`
# for longer.
# FUZZ_SEED=N gives every target libFuzzer's -seed=N: the same mutations in the same order on
# every run, which then differ only in how many inputs fit in the time (`make test` fixes the
# seed, so its fuzzing is the same gate on every machine and a finding replays; `make fuzz`
# draws a new seed each run and explores). Each target's log names the seed it ran with.
#   usage: [FUZZ_SEED=N] scripts/fuzz.sh BUILD-DIR SECONDS-PER-TARGET [PARALLEL]
set -uo pipefail
build="$1"
secs="$2"
par="${3:-1}"
src="$(cd "$(dirname "$0")/.." && pwd)"
# UBSan reports count as crashes, as in the ASan+UBSan test build
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS="detect_leaks=1"
# a known leak inside libfyaml itself (see the file) is not ours to fail on
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan-fuzz.supp"

targets=("$build"/fuzzer_*)
if [ ! -x "${targets[0]}" ]; then
    echo "fuzz: no fuzzer_* binaries in $build (configure with clang and -DGS_FUZZ=ON)" >&2
    exit 1
fi

# run_one BINARY: fuzz it for $secs seconds; the log goes to $build/fuzz-NAME.log
run_one() {
    local t="$1" n="${1##*/fuzzer_}"
    mkdir -p "$build/corpus-$n" "$build/artifacts-$n"
    # the outer timeout catches a process that ignores -max_total_time (a hang outside an input)
    local seed=()
    [ -n "${FUZZ_SEED:-}" ] && seed=(-seed="$FUZZ_SEED")
    timeout -k 5 $((secs + 30)) "$t" "${seed[@]}" -max_total_time="$secs" -timeout=10 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$build/artifacts-$n/" \
        "$build/corpus-$n" "$src/fuzz/corpus/$n" >"$build/fuzz-$n.log" 2>&1
}

declare -A pid_of=()
failed=()
reap() { # wait for one running target and note a failure
    local p n
    wait -n -p p
    local rc=$?
    n="${pid_of[$p]}"
    unset "pid_of[$p]"
    local runs
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-$n.log" |
        grep -o '[0-9]*$')"
    if [ "$rc" -eq 0 ]; then
        echo "fuzz: $n: ${runs:-?} runs in ${secs} s, no finding"
    else
        echo "fuzz: $n: FAILED (exit $rc), log $build/fuzz-$n.log:"
        local what='^(INFO: Seed|==[0-9]+==|SUMMARY|ALARM|.*runtime error|artifact_prefix|Base64)'
        grep -E "$what" "$build/fuzz-$n.log" | head -20 | sed 's/^/    /'
        grep -A25 '^==[0-9]*==ERROR' "$build/fuzz-$n.log" | head -30 | sed 's/^/    /'
        failed+=("$n")
    fi
}

for t in "${targets[@]}"; do
    while [ "${#pid_of[@]}" -ge "$par" ]; do reap; done
    run_one "$t" &
    pid_of[$!]="${t##*/fuzzer_}"
done
while [ "${#pid_of[@]}" -gt 0 ]; do reap; done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}"
    exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${secs} s each, no finding"
