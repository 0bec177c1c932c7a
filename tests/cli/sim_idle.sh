#!/usr/bin/env bash
# Where idle GPU goes: examples/idle-causes.yaml puts every cause to work (a GPU down, MIG
# re-carved, 4-GPU jobs the 1-GPU ones split the nodes under, a capped team): under the full
# set each cause holds idle GPU-hours, and for every strategy the causes sum to the idle total.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" sim scenario "$SRC/examples/idle-causes.yaml" && {
    has "$TMP/out" "where idle GPU goes"
    for c in "no demand" fragmentation quota "too little" recarving unhealthy; do has "$TMP/out" "$c"; done
}
expect 0 "$GS" sim scenario "$SRC/examples/idle-causes.yaml" --format json &&
    python3 - "$TMP/out" <<'PY' && ok || fail "idle causes"
import json, sys
d = json.load(open(sys.argv[1]))
causes = ["no_demand", "fragmentation", "quota", "too_little", "recarving", "unhealthy"]
for s in d["strategies"]:
    by = s["idle_gpu_hours_by_cause"]
    assert abs(sum(by.values()) - s["idle_gpu_hours"]) <= 1e-4 * max(1, s["idle_gpu_hours"]), s
    # one H100 of 14 GPUs is unhealthy the whole measured window (12 h): 12 GPU-hours
    assert abs(by["unhealthy"] - 12.0) < 1e-4, (s["strategy"], by)
full = {s["strategy"]: s for s in d["strategies"]}["all"]["idle_gpu_hours_by_cause"]
for c in causes:
    assert full[c] > 0, (c, full)
# without dynamic MIG nothing is ever being re-carved
for s in d["strategies"]:
    if s["strategy"] in ("exclusive", "time-slicing", "mps", "static-mig", "mig-priority"):
        assert s["idle_gpu_hours_by_cause"]["recarving"] == 0, s["strategy"]
PY
# a group cannot have more unhealthy GPUs than GPUs
sed 's/unhealthy: 1}/unhealthy: 13}/' "$SRC/examples/idle-causes.yaml" > "$TMP/bad.yaml"
expect 2 "$GS" sim scenario "$TMP/bad.yaml" && has "$TMP/err" "unhealthy: 13 is more than the 12 GPUs"
finish
