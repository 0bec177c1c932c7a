#!/usr/bin/env bash
# A strategy that served nothing (static MIG on a node group with no MIG layout, for a class
# that asks a 7g slice) has no $ per useful GPU-hour: the cost table says "-" and why, not
# "$0.00 / -100 %"; the JSON says null.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/idle.yaml" <<'Y'
name: idle
duration: 4h
warmup: 30m
node_groups:
  - {name: a100, gpu: A100-SXM4-80GB, nodes: 1, gpus: 8}
tenants: [{name: a}]
classes:
  - {name: big, tenant: a, kind: training, priority: gpu-low,
     arrival: {process: poisson, per_hour: 4}, duration: {dist: fixed, mean: 1h},
     request: {gpus: 1, mig: 7g.80gb, gpu_memory: 70Gi}, util: 0.9}
Y
expect 0 "$GS" sim scenario "$TMP/idle.yaml" && {
    if grep -E '^Static MIG ' "$TMP/out" | grep -qE '0\.00|-100%[^%]*-100%'; then
        fail "static MIG shows \$0.00 or -100 % cost"; grep '^Static MIG' "$TMP/out"
    else ok; fi
    grep -E '^Static MIG ' "$TMP/out" | awk '{ exit !($(NF-2) == "-" && $NF == "-") }' && ok ||
        fail "static MIG's \$/useful and cost vs are not '-': $(grep '^Static MIG' "$TMP/out")"
    has "$TMP/out" "the strategy served nothing"
    has "$TMP/out" "static-mig -100%/-;"
    grep -E '^Exclusive ' "$TMP/out" | awk '{ exit !($(NF-2) ~ /^[0-9]+\.[0-9][0-9]$/) }' && ok ||
        fail "exclusive lost its \$/useful: $(grep '^Exclusive' "$TMP/out")"
}
expect 0 "$GS" sim scenario "$TMP/idle.yaml" --format json && python3 - "$TMP/out" <<'PY' && ok || fail "json"
import json, sys
d = {s["strategy"]: s for s in json.load(open(sys.argv[1]))["strategies"]}
assert d["static-mig"]["usd_per_useful_gpu_hour"] is None, d["static-mig"]
assert d["static-mig"]["cost_per_useful_vs_exclusive_pct"] is None
assert d["exclusive"]["usd_per_useful_gpu_hour"] > 0
PY
finish
