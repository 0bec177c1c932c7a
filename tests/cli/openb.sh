#!/usr/bin/env bash
# `gpusched sim openb`: JSON per policy with the headline figure, its spread and the curve.
. "$(dirname "$0")/lib.sh"
D="$SHARED/data/openb"
if [ ! -f "$D/openb_pod_list_default.csv" ]; then
    echo "skipped: $D not present"
    exit 77
fi
expect 0 "$GS" sim openb --nodes "$D/openb_node_list_gpu_node.csv" \
    --pods "$D/openb_pod_list_default.csv" --policy gpusched,fgd,bestfit --seeds 42-43 \
    --tune 1.3 --format json && python3 - "$TMP/out" <<'PY' && ok || fail "json"
import json, sys
d = json.load(open(sys.argv[1]))
pols = [r["policy"] for r in d["results"]]
assert pols == ["gpusched", "fgd", "bestfit"], pols
for r in d["results"]:
    assert 0 < r["unallocated_gpu_pct_at_100"] < 30
    assert r["unallocated_gpu_pct_at_100_std"] >= 0
    assert len(r["curve"]) == 131 and r["curve"][100]["arrived_pct"] == 100
    assert [x["seed"] for x in r["runs"]] == [42, 43]
PY
expect 2 "$GS" sim openb --nodes "$D/openb_node_list_gpu_node.csv" --pods "$TMP/none.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,x,1,0,0\n' > "$TMP/bad.csv"
expect 2 "$GS" sim openb --nodes "$D/openb_node_list_gpu_node.csv" --pods "$TMP/bad.csv" &&
    has "$TMP/err" "bad.csv:2:"
expect 2 "$GS" sim openb --nodes "$D/openb_node_list_gpu_node.csv" \
    --pods "$D/openb_pod_list_default.csv" --policy magic
expect 2 "$GS" sim openb --nodes "$D/openb_node_list_gpu_node.csv" \
    --pods "$D/openb_pod_list_default.csv" --seeds 51-42
finish
