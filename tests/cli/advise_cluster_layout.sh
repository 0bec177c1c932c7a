#!/usr/bin/env bash
# gpusched advise cluster reads MIG layouts as the scheduler does (sched/cache.h): the
# article's `mixed` node (nvidia.com/mig.config=mixed, state success; allocatable 2 whole GPUs,
# 2 x 3g.40gb, 7 x 1g.10gb) with --mig-config (the article's nvidia-mig-config) is its real
# layout, GPU 0 2x3g.40gb, GPU 1 7x1g.10gb, GPUs 2-3 whole, not the counts packed otherwise;
# a --mig-config that cannot be read is refused.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/gen.py" <<'PY'
import json, time
now = time.time()
def ts(t): return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
labels = {"kubernetes.io/hostname": "gpu-node-1", "nvidia.com/gpu.product": "A100-SXM4-80GB",
          "nvidia.com/gpu.count": "4", "nvidia.com/mig.config": "mixed",
          "nvidia.com/mig.config.state": "success", "nvidia.com/mig.strategy": "mixed"}
alloc = {"cpu": "96", "memory": "1000Gi", "pods": "110", "nvidia.com/gpu": "2",
         "nvidia.com/mig-3g.40gb": "2", "nvidia.com/mig-1g.10gb": "7"}
items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1", "labels": labels},
          "spec": {}, "status": {"allocatable": alloc, "capacity": alloc,
                                 "conditions": [{"type": "Ready", "status": "True"}]}}]
for i in range(2):
    items.append({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "llm-%d" % i, "namespace": "ai", "creationTimestamp": ts(now - 3600),
                     "labels": {"app": "llm"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "llm-6c9f7b8d54",
                                          "uid": "u1", "controller": True}]},
        "spec": {"schedulerName": "gpusched", "nodeName": "gpu-node-1",
                 "containers": [{"name": "m", "image": "x", "resources": {"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/mig-3g.40gb": "1"},
                                                                         "limits": {"nvidia.com/mig-3g.40gb": "1"}}}]},
        "status": {"phase": "Running", "startTime": ts(now - 3500)}})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
python3 "$TMP/gen.py" > "$TMP/mixed.json"
expect 0 "$GS" advise cluster --from "$TMP/mixed.json" --budget 2 --out "$TMP/o" \
    --mig-config "$SRC/deploy/article/nvidia-mig-config.yaml" --save-scenario "$TMP/s.yaml" &&
    python3 - "$TMP/s.yaml" <<'PY' && ok || fail "the mixed node's layout"
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
cfg = d["mig_configs"]["mig-configs"]["live-a100-80gb"]
by = {e["devices"][0]: (e["mig-enabled"], e.get("mig-devices")) for e in cfg}
assert by == {0: (True, {"3g.40gb": 2}), 1: (True, {"1g.10gb": 7}), 2: (False, None),
              3: (False, None)}, by
PY
echo "not: yaml" > "$TMP/bad.yaml"
expect 2 "$GS" advise cluster --from "$TMP/mixed.json" --budget 2 --out "$TMP/o2" \
    --mig-config "$TMP/bad.yaml" && has "$TMP/err" "--mig-config"
finish
