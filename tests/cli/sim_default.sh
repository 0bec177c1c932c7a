#!/usr/bin/env bash
# `gpusched sim` with no arguments runs the embedded default and prints the seven strategies.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" sim && {
    for s in "Exclusive (1 pod = 1 GPU)" "Time-slicing" "MPS" "Static MIG" "MIG + priority" "Dynamic MIG + priority" \
             "All together" "seed 42" "the article states"; do has "$TMP/out" "$s"; done
}
expect 0 "$GS" sim --format json && python3 - "$TMP/out" <<'PY' && ok || fail "json"
import json, sys
d = json.load(open(sys.argv[1]))
names = [s["strategy"] for s in d["strategies"]]
assert names == ["exclusive", "time-slicing", "mps", "static-mig", "mig-priority", "dynamic-mig", "all"], names
for s in d["strategies"]:
    for k in ("allocated_share", "used_share", "online_p99_wait_s", "usd_per_useful_gpu_hour",
              "gpu_hours", "classes"):
        assert k in s, k
    for c in s["classes"]:
        assert {"wait_p50_s", "wait_p95_s", "wait_p99_s"} <= set(c)
assert d["seed"] == 42
PY
expect 0 "$GS" sim --report "$TMP/r.html" && {
    has "$TMP/r.html" "<svg"
    has "$TMP/r.html" "All together"
    if grep -q "http" "$TMP/r.html"; then fail "report loads from the network"; else ok; fi
}
# same seed, same figures
"$GS" sim --format json > "$TMP/a.json" && "$GS" sim --format json > "$TMP/b.json" &&
    cmp -s "$TMP/a.json" "$TMP/b.json" && ok || fail "two runs with one seed differ"
expect 0 "$GS" sim --seed 7
finish
