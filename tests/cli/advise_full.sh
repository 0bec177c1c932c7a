#!/usr/bin/env bash
# Advice weighs the article's full set and says what it cannot place. On a cluster whose MIG
# layout misfits LLM inference, dynamic MIG is tried (JSON dynamic_mig) and the text says what
# the recommendation sets; a class whose pods ask more GPUs than any node has is reported as
# one the recommended setup cannot place, by name and why, not left out silently.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/s.yaml" <<'Y'
name: stranded
seed: 42
duration: 6h
warmup: 1h
node_groups:
  - {name: a100, gpu: A100-80GB, nodes: 2, gpus: 4, cpu: 128, memory: 1Ti, mig_config: all-1g.10gb}
classes:
  - name: llm
    kind: online-inference
    priority: gpu-critical
    arrival: {process: poisson, per_hour: 4}
    duration: {dist: lognormal, median: 1h, sigma: 0.5}
    request: {gpus: 1, cpu: 8, memory: 64Gi, gpu_memory: 30Gi, mig: 3g.40gb}
    util: 0.35
  - name: big-training
    kind: training
    priority: gpu-low
    arrival: {process: poisson, per_hour: 1}
    duration: {dist: lognormal, median: 2h, sigma: 0.4}
    request: {gpus: 8, cpu: 64, memory: 512Gi, gpu_memory: 70Gi}
    util: 0.9
Y
expect 0 "$GS" advise scenario "$TMP/s.yaml" --budget 6 && {
    has "$TMP/out" "dynamic MIG (the scheduler re-carves MIG GPUs for what is pending"
    has "$TMP/out" "the recommended setup cannot place class big-training: its pods ask 8 GPUs each; no node has more than 4"
}
expect 0 "$GS" advise scenario "$TMP/s.yaml" --budget 6 --format json &&
    python3 - "$TMP/out" <<'PY' && ok || fail "json"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["current"]["dynamic_mig"] is False, a["current"]["dynamic_mig"]
assert isinstance(a["recommended"]["dynamic_mig"], bool)
# dynamic MIG re-carves the all-1g.10gb GPUs for the 3g.40gb pods: it wins here
assert a["recommended"]["dynamic_mig"] is True, a["recommended"]
u = a["unplaced_classes"]
assert [x["class"] for x in u] == ["big-training"] and u[0]["pods"] > 0, u
PY
finish
