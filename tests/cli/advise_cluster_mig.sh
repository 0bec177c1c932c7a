#!/usr/bin/env bash
# advise cluster: a pod asking a MIG profile no node's GPU has (an H200 name on an A100 cluster)
# cannot run there; its workload is left out of the scenario with a note, and the rest advised
# (the scenario reader refuses a class no node group can serve).
. "$(dirname "$0")/lib.sh"
python3 - "$TMP/live.json" <<'PY'
import json, sys, time
now = time.time()
def ts(t): return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
alloc = {"cpu": "95", "memory": "1000Gi", "pods": "110", "nvidia.com/gpu": "0",
         "nvidia.com/mig-1g.10gb": "56"}
node = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "a100-0", "labels": {
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "8",
            "nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.strategy": "mixed"}},
        "spec": {}, "status": {"allocatable": alloc, "capacity": alloc,
                               "conditions": [{"type": "Ready", "status": "True"}]}}
def pod(name, res, phase, node=None):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": "ml", "creationTimestamp": ts(now - 600),
                      "labels": {"app": name}},
         "spec": {"containers": [{"name": "c", "resources": {
             "requests": {res: "1", "cpu": "1", "memory": "1Gi"}, "limits": {res: "1"}}}]},
         "status": {"phase": phase}}
    if node:
        p["spec"]["nodeName"] = node
        p["status"]["startTime"] = ts(now - 600)
    return p
items = [node, pod("small", "nvidia.com/mig-1g.10gb", "Running", "a100-0"),
         pod("h200style", "nvidia.com/mig-1g.18gb", "Pending")]
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[1], "w"))
PY
expect 0 "$GS" advise cluster --from "$TMP/live.json" --save-scenario "$TMP/live.yaml" \
    --out "$TMP/advice" && {
    has "$TMP/live.yaml" "asks nvidia.com/mig-1g.18gb, which no node's GPU has"
    has "$TMP/out" "node group a100-80gb: 1 node x 8 A100-80GB"
    if grep -q "mig: 1g.18gb" "$TMP/live.yaml"; then fail "the unservable class is in the scenario"; else ok; fi
}
finish
