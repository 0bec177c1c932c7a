#!/usr/bin/env bash
# same-decisions.sh OLD NEW [SHARED]: whether two gpusched binaries decide alike, for a change
# that must not change behaviour (a refactor). Runs both on the same inputs and diffs what they
# print: the decisions of every strategy (`sim --decisions`) on the embedded default scenario
# and on examples/*.yaml, the strategy tables (text and JSON), `sim dra`, the openb experiment
# on two shipped traces and a variant, `advise scenario`, `mig profiles` and every command's
# usage. Lines that measure the run itself ("wall time") are left out. Prints one line per
# output ("same" or "DIFFERS") and the diffs; exits 0 when every output is the same, 1 when
# any differs, 2 on bad usage. Takes a few minutes (openb and advise dominate).
set -u
[ $# -ge 2 ] || { echo "usage: $0 OLD-GPUSCHED NEW-GPUSCHED [SHARED-DIR]" >&2; exit 2; }
old="$1"; new="$2"
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${3:-${GS_SHARED_DIR:-$root/../shared}}"
openb="$shared/data/openb"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
strategies="exclusive time-slicing mps static-mig mig-priority dynamic-mig all"
capture() { # BIN DIR
    local b="$1" d="$2"
    mkdir -p "$d"
    run() { local n="$1"; shift; (cd "$d" && "$@") > "$d/$n.out" 2>&1; echo "rc=$?" >> "$d/$n.out"; }
    run sim "$b" sim
    run sim_json "$b" sim --format json
    for s in $strategies; do
        run "decisions_default_$s" "$b" sim --decisions "$s"
        for f in "$root"/examples/*.yaml; do
            run "decisions_$(basename "$f" .yaml)_$s" "$b" sim scenario "$f" --decisions "$s"
        done
    done
    for f in "$root"/examples/*.yaml; do
        run "scenario_$(basename "$f" .yaml)" "$b" sim scenario "$f"
        run "advise_$(basename "$f" .yaml)" "$b" advise scenario "$f"
    done
    run sim_dra "$b" sim dra --seeds 1-3
    if [ -d "$openb" ]; then
        run openb_default "$b" sim openb --nodes "$openb/openb_node_list_gpu_node.csv" \
            --pods "$openb/openb_pod_list_default.csv" --policy all --seeds 42-43 --threads 1
        run openb_gpuspec20 "$b" sim openb --nodes "$openb/openb_node_list_gpu_node.csv" \
            --pods "$openb/openb_pod_list_gpuspec20.csv" --policy gpusched,fgd,offline \
            --seeds 42-43 --threads 1
        run openb_variant "$b" sim openb --nodes "$openb/openb_node_list_gpu_node.csv" \
            --pods "$openb/openb_pod_list_default.csv" --policy gpusched,fgd \
            --variant gpuspec=30 --seeds 42 --threads 1
    fi
    run mig_profiles "$b" mig profiles --gpu A100-SXM4-80GB
    run usage "$b"
    for c in scheduler extender explain top agent sim mig advise dpconfig; do
        run "help_$c" "$b" "$c" --help
    done
    sed -i '/wall time/d' "$d"/*.out
}
capture "$old" "$out/old" &
capture "$new" "$out/new"
wait
rc=0
for f in "$out"/old/*.out; do
    n="$(basename "$f" .out)"
    if cmp -s "$f" "$out/new/$n.out"; then
        echo "same     $n ($(wc -l < "$f") lines)"
    else
        echo "DIFFERS  $n"
        diff "$f" "$out/new/$n.out" | head -20
        rc=1
    fi
done
exit $rc
