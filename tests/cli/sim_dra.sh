#!/usr/bin/env bash
# gpusched sim dra: DRA on partitionable GPUs, kube-scheduler's first fit against gpusched's
# scheduler (its cycle with the daemon's DRA hooks, core/dra.c's allocator) on the same arrivals,
# through the agent's slices and the scheduler's claim reader. At 100 % arrived demand (the FGD
# measure) gpusched's choice strands fewer compute slices than first fit, per seed and on
# average; both serve the same pods. Bad flags are refused.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" sim dra --seeds 42-45 --format json && cp "$TMP/out" "$TMP/d.json"
python3 - "$TMP/d.json" <<'PY' && ok || fail "firstfit against gpusched"
import json, sys
d = json.load(open(sys.argv[1]))
p = {x["policy"]: x for x in d["policies"]}
ff, gs = p["firstfit"], p["gpusched"]
for n, x in p.items():
    print("%-9s unallocated at 100%% demand %.2f%% (sd %.2f), allocated %.1f%%, wait p99 %.0fs, started %.0f"
          % (n, 100 * x["unallocated_at_full_demand_mean"], 100 * x["unallocated_at_full_demand_sd"],
             100 * x["allocated_share_mean"], x["wait_p99_s_mean"], x["started_mean"]))
assert gs["unallocated_at_full_demand_mean"] < ff["unallocated_at_full_demand_mean"]
assert d["nodes"] == 4 and d["gpus_per_node"] == 8 and gs["seeds"] == 4
assert [c["class"] for c in gs["classes"]][-1] == "training-gpu"
assert abs(gs["started_mean"] - ff["started_mean"]) <= 0.02 * ff["started_mean"]
PY
# one seed: the same figure on its own, so the comparison is not an artefact of averaging
for s in 42 43 44 45; do
    expect 0 "$GS" sim dra --seeds $s --format json
    python3 -c '
import json, sys
p = {x["policy"]: x for x in json.load(open(sys.argv[1]))["policies"]}
assert p["gpusched"]["unallocated_at_full_demand_mean"] <= p["firstfit"]["unallocated_at_full_demand_mean"], p
' "$TMP/out" && ok || fail "seed $s: gpusched strands more than first fit"
done
expect 0 "$GS" sim dra --seeds 42 --nodes 2 --gpus 4 --model H100-80GB && has "$TMP/out" "2 nodes x 4 H100-80GB"
expect 2 "$GS" sim dra --model L40S && has "$TMP/err" "not a MIG-capable"
expect 2 "$GS" sim dra --seeds 9-3 && has "$TMP/err" "--seeds"
expect 2 "$GS" sim dra --gpus 17 && has "$TMP/err" "--gpus"
expect 2 "$GS" sim dra --frob 1 && has "$TMP/err" "unknown option"
finish
