#!/usr/bin/env bash
# Dynamic MIG where a static layout misfits the demand (examples/mig-misfit.yaml: A100s carved
# all-1g.10gb, demand mostly 3g.40gb and whole GPUs): dynamic-mig at least doubles the used
# share of static MIG, with under 10 % of online pods missing their SLA; static MIG and MIG +
# priority never re-carve. Also: the reconfig block is read, and a bad value is refused with
# its field path.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" sim scenario "$SRC/examples/mig-misfit.yaml" --format json && cp "$TMP/out" "$TMP/m.json"
python3 - "$TMP/m.json" <<'PY' && ok || fail "misfit figures"
import json, sys
d = {s["strategy"]: s for s in json.load(open(sys.argv[1]))["strategies"]}
st, dy, mp = d["static-mig"], d["dynamic-mig"], d["mig-priority"]
print("static-mig used %.1f%%, dynamic-mig used %.1f%% (online SLA miss %.1f%%, p99 wait %.0fs, %d re-carves)"
      % (100 * st["used_share"], 100 * dy["used_share"], dy["online_sla_miss_pct"],
         dy["online_p99_wait_s"], dy["mig_recarves"]))
assert dy["used_share"] >= 2 * st["used_share"], "dynamic-mig must double static MIG's used share"
assert dy["online_sla_miss_pct"] < 10, dy["online_sla_miss_pct"]
assert dy["mig_recarves"] > 0
assert "mig_recarves" not in st and "mig_recarves" not in mp
PY
# reconfiguration time is configurable, and slower changes cost waiting time
sed 's/^seed: 42$/seed: 42\nreconfig: {destroy: 5s, create: 20s, mode_change: 2m, notice: 5s, hold: 30m}/' \
    "$SRC/examples/mig-misfit.yaml" > "$TMP/slow.yaml"
expect 0 "$GS" sim scenario "$TMP/slow.yaml" --format json && cp "$TMP/out" "$TMP/s.json"
python3 - "$TMP/m.json" "$TMP/s.json" <<'PY' && ok || fail "slow reconfiguration"
import json, sys
f = [{s["strategy"]: s for s in json.load(open(p))["strategies"]} for p in sys.argv[1:]]
a, b = f[0]["dynamic-mig"], f[1]["dynamic-mig"]
print("online p99 wait: default reconfig %.0fs, slow reconfig %.0fs" % (a["online_p99_wait_s"], b["online_p99_wait_s"]))
assert b["online_p99_wait_s"] > a["online_p99_wait_s"]
PY
sed 's/^seed: 42$/seed: 42\nreconfig: {create: -1s}/' "$SRC/examples/mig-misfit.yaml" > "$TMP/bad.yaml"
expect 2 "$GS" sim scenario "$TMP/bad.yaml" && has "$TMP/err" "reconfig.create"
sed 's/^seed: 42$/seed: 42\nreconfig: {crate: 1s}/' "$SRC/examples/mig-misfit.yaml" > "$TMP/bad2.yaml"
expect 2 "$GS" sim scenario "$TMP/bad2.yaml" && has "$TMP/err" "crate"
# a burst (fixed arrivals at interval 0s) needs max_jobs
sed 's/arrival: {process: poisson, per_hour: 8}/arrival: {process: fixed, interval: 0s}/' \
    "$SRC/examples/mig-misfit.yaml" > "$TMP/burst.yaml"
expect 2 "$GS" sim scenario "$TMP/burst.yaml" && has "$TMP/err" "a burst) need max_jobs"
finish
