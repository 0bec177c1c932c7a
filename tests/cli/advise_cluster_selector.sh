#!/usr/bin/env bash
# gpusched advise cluster keeps pods' node constraints: a Job's 8-GPU pods pinned by
# nodeSelector to the H100 product, a Deployment held by required node affinity to zone a (the
# A100 nodes), and a pod whose nodeSelector no node satisfies. The saved scenario's node groups
# carry the labels those constraints read and its classes the constraints; the simulator binds
# each class only where they hold; advise names the class nothing can place and why.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/gen.py" <<'PY'
import json, sys, time
now = time.time()
def ts(t): return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
def node(name, product, zone, alloc):
    labels = {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": product, "nvidia.com/gpu.count": "8",
              "topology.kubernetes.io/zone": zone}
    a = {"cpu": "96", "memory": "1000Gi", "pods": "110"}
    a.update(alloc)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": {},
            "status": {"allocatable": a, "capacity": a, "conditions": [{"type": "Ready", "status": "True"}]}}
def pod(name, owner_kind, owner, gpus, spec_extra, phase="Pending", created=None, node=None):
    md = {"name": name, "namespace": "ml", "creationTimestamp": ts(created or now - 1800),
          "ownerReferences": [{"apiVersion": "apps/v1" if owner_kind == "ReplicaSet" else "batch/v1",
                               "kind": owner_kind, "name": owner, "uid": "u-" + owner, "controller": True}]}
    res = {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": str(gpus)}
    spec = {"schedulerName": "gpusched", "containers": [{"name": "c", "image": "i",
            "resources": {"requests": res, "limits": res}}]}
    spec.update(spec_extra)
    if node: spec["nodeName"] = node
    st = {"phase": phase}
    if phase == "Running": st["startTime"] = ts(now - 1700)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": st}
items = [node("h100-0", "NVIDIA-H100-80GB-HBM3", "b", {"nvidia.com/gpu": "8"})]
for i in range(2):
    items.append(node("a100-%d" % i, "NVIDIA-A100-SXM4-80GB", "a", {"nvidia.com/gpu": "8"}))
pin = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}
for j in range(4):
    items.append(pod("train-%d-x" % j, "Job", "train-%d" % j, 8, pin, created=now - 3000 + j * 600))
zone = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}]}}}}
for r in range(4):
    items.append(pod("serve-6c9f-%d" % r, "ReplicaSet", "serve-6c9f", 1, zone, "Running", node="a100-0"))
items.append(pod("lost-x", "Job", "lost", 1, {"nodeSelector": {"topology.kubernetes.io/zone": "c"}}))
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[1], "w"))
PY
python3 "$TMP/gen.py" "$TMP/cluster.json"
expect 0 "$GS" advise cluster --from "$TMP/cluster.json" --budget 8 --out "$TMP/cfg" \
    --save-scenario "$TMP/live.yaml" && cp "$TMP/out" "$TMP/advice.txt"
python3 - "$TMP/live.yaml" <<'PY' && ok || fail "the scenario's labels and constraints"
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
zones = {g["gpu"]: g.get("labels", {}).get("topology.kubernetes.io/zone") for g in d["node_groups"]}
assert zones == {"H100-80GB": "b", "A100-80GB": "a"}, zones
cls = {c["name"]: c for c in d["classes"]}
train = [c for n, c in cls.items() if n.startswith("ml-train")]
assert train and all(c["node_selector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"} for c in train), train
serve = cls["ml-serve"]
assert serve["node_affinity"] == [{"matchExpressions": [
    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}], serve
assert cls["ml-lost"]["node_selector"] == {"topology.kubernetes.io/zone": "c"}
PY
# the simulator binds each class only where its constraints hold
expect 0 "$GS" sim scenario "$TMP/live.yaml" --decisions exclusive
python3 - "$TMP/out" <<'PY' && ok || fail "binds outside the constraints"
import sys
seen = set()
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) > 3 and f[1] == "BIND":
        cls, node = f[2], f[3]
        seen.add(cls.split("-")[1])
        if cls.startswith("ml-train"): assert node.startswith("h100"), l
        if cls.startswith("ml-serve"): assert node.startswith("a100"), l
        assert not cls.startswith("ml-lost"), l
assert {"train", "serve"} <= seen, seen
PY
has "$TMP/advice.txt" "cannot place class ml-lost: its node selector and affinity match no node group"
# bad constraints in a scenario file: file:line and the field path
sed 's/operator: In/operator: Near/' "$TMP/live.yaml" > "$TMP/bad.yaml"
expect 2 "$GS" sim scenario "$TMP/bad.yaml" && has "$TMP/err" "node_affinity[0].matchExpressions[0].operator: 'Near': expected In, NotIn"
finish
