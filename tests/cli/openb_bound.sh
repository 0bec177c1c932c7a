#!/usr/bin/env bash
# `gpusched sim openb --policy offline`: the lower bound is a bound. On 30 nodes of 8 GPUs
# with 30 pods of 8 GPUs and two sharing pods (600 and 450 milli), 1050 milli more than fits
# arrive; the optimum idles nothing (it leaves a share or a whole pod out) and the offline
# packer finds it on every seed, so the bound must be 0.00 there, never the 600 pod's room.
# Needs no trace: the instance is written here.
. "$(dirname "$0")/lib.sh"
{
    echo "sn,cpu_milli,memory_mib,gpu,model"
    for i in $(seq 0 29); do printf 'openb-node-%04d,96000,393216,8,G2\n' "$i"; done
} > "$TMP/nodes.csv"
{
    echo "name,cpu_milli,memory_mib,num_gpu,gpu_milli"
    for i in $(seq 0 29); do printf 'whole-%d,8000,16384,8,1000\n' "$i"; done
    echo "share-600,4000,8192,1,600"
    echo "share-450,4000,8192,1,450"
} > "$TMP/pods.csv"
for tune in 1.3 0; do
    expect 0 "$GS" sim openb --nodes "$TMP/nodes.csv" --pods "$TMP/pods.csv" \
        --policy offline --seeds 42-51 --tune "$tune" --format json &&
        python3 - "$TMP/out" <<'PY' && ok || fail "tune $tune: the bound is above the optimum"
import json, sys
off = json.load(open(sys.argv[1]))["results"][0]
for s in off["runs"]:
    assert s["lower_bound_unallocated_gpu_pct_at_100"] == 0, s
    assert s["unallocated_gpu_pct_at_100"] == 0, s
PY
done
expect 0 "$GS" sim openb --nodes "$TMP/nodes.csv" --pods "$TMP/pods.csv" --policy offline \
    --seeds 42-51 && has "$TMP/out" "0.00     0.00          -  lower bound (proven)"
finish
