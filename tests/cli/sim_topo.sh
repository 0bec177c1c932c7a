#!/usr/bin/env bash
# gpusched sim topo: data-parallel training gangs (8 to 64 GPUs) beside small work on blocks,
# subblocks and nodes, the step time an all-reduce over the slowest link the gang spans. On
# the shipped scenario (examples/topo/training.yaml, the built-in default), gpusched's
# topology-aware placement puts at least 95 % of required gangs inside their domain whenever
# one has room, and its mean job completion time is at least 20 % below topology-blind
# placement on the same arrivals (Kueue's BestFit beside it). Bad flags and bad scenario
# files are refused.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" sim topo --scenario "$SRC/examples/topo/training.yaml" --seeds 1-3 --format json &&
    cp "$TMP/out" "$TMP/t.json"
python3 - "$TMP/t.json" <<'PY' && ok || fail "gpusched against blind"
import json, sys
d = json.load(open(sys.argv[1]))
p = {x["policy"]: x for x in d["policies"]}
for n, x in p.items():
    print("%-9s in-domain %.1f%% of %d, JCT mean %.2fh p95 %.2fh, wait %.2fh, vs blind %+.1f%%"
          % (n, x["inside_required_pct"], x["gangs_fit"], x["jct_mean_s"] / 3600,
             x["jct_p95_s"] / 3600, x["wait_mean_s"] / 3600, x["jct_vs_blind_pct"]))
g, b, k = p["gpusched"], p["blind"], p["kueue"]
assert d["gpus"] == 256
assert g["gangs_fit"] > 100, g
assert g["inside_required_pct"] >= 95, g
assert g["jct_mean_s"] <= 0.8 * b["jct_mean_s"], (g["jct_mean_s"], b["jct_mean_s"])
assert g["jct_mean_s"] <= k["jct_mean_s"], "gpusched no slower than Kueue's BestFit"
assert b["inside_required_pct"] < 50, "blind placement ignores the domains"
assert g["jobs"] == b["jobs"] == k["jobs"] and g["pending_end"] == 0
PY
# the file is the default: the same figures without it
expect 0 "$GS" sim topo --seeds 1-3 --format json && cmp -s "$TMP/out" "$TMP/t.json" && ok ||
    fail "the shipped scenario is not the default"
# flags over the file
expect 0 "$GS" sim topo --scenario "$SRC/examples/topo/training.yaml" --seeds 1 --blocks 2 \
    --hours 4 && has "$TMP/out" "2 blocks x 2 subblocks x 4 nodes"
has "$TMP/out" "kueue"
expect 2 "$GS" sim topo --blocks 0 && has "$TMP/err" "--blocks"
expect 2 "$GS" sim topo --seeds 9-3 && has "$TMP/err" "--seeds"
expect 2 "$GS" sim topo --frob 1 && has "$TMP/err" "unknown option"
# a bad scenario: its line and field path, and nothing run
sed 's/^hours: 48$/hours: 48\nblcks: 2/' "$SRC/examples/topo/training.yaml" > "$TMP/bad.yaml"
expect 2 "$GS" sim topo --scenario "$TMP/bad.yaml" && has "$TMP/err" "bad.yaml:10: blcks: unexpected field"
sed 's|required: kubernetes.io/hostname|required: nvidia.com/gpu.clique|' \
    "$SRC/examples/topo/training.yaml" > "$TMP/lvl.yaml"
expect 2 "$GS" sim topo --scenario "$TMP/lvl.yaml" && has "$TMP/err" "classes[0].required: 'nvidia.com/gpu.clique' is not a level"
expect 1 "$GS" sim topo --scenario "$TMP/none.yaml" && has "$TMP/err" "none.yaml"
finish
