#!/usr/bin/env bash
# gpusched advise cluster --from: a cluster snapshot (`kubectl get nodes,pods -A -o json`) as
# NVIDIA's stack and Kubernetes controllers write it (dozens of NFD/GFD labels, MIG allocatable,
# Deployment pods owned by ReplicaSets, finished Job pods with their container's termination
# time, a CPU-only pod) becomes a scenario: node groups by model and layout, classes by owner
# and shape, durations fitted to the finished pods; then it is advised like a scenario file.
# Bad snapshots are refused with the file and field.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/gen.py" <<'PY'
import json, sys, time
now = time.time()
def ts(t): return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
def nfd_labels(name, product, count, mem, extra):
    l = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
         "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
         "node.kubernetes.io/instance-type": "p4d.24xlarge", "topology.kubernetes.io/zone": "us-east-1a",
         "feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true", "feature.node.kubernetes.io/kernel-version.full": "6.1.0",
         "feature.node.kubernetes.io/pci-10de.present": "true", "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
         "nvidia.com/cuda.driver.major": "550", "nvidia.com/cuda.driver.minor": "127", "nvidia.com/cuda.runtime.major": "12",
         "nvidia.com/gfd.timestamp": "1733000000", "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0",
         "nvidia.com/gpu.count": str(count), "nvidia.com/gpu.deploy.container-toolkit": "true",
         "nvidia.com/gpu.deploy.dcgm-exporter": "true", "nvidia.com/gpu.deploy.device-plugin": "true",
         "nvidia.com/gpu.deploy.gpu-feature-discovery": "true", "nvidia.com/gpu.deploy.mig-manager": "true",
         "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.machine": "p4d.24xlarge", "nvidia.com/gpu.memory": str(mem),
         "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product, "nvidia.com/mig.capable": "true"}
    l.update(extra); return l
def node(name, product, count, mem, extra, alloc):
    a = {"cpu": "95", "memory": "1056000000Ki", "pods": "110", "ephemeral-storage": "7500000000Ki"}
    a.update(alloc)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": nfd_labels(name, product, count, mem, extra)},
            "spec": {}, "status": {"allocatable": a, "capacity": a, "conditions": [{"type": "Ready", "status": "True"}]}}
items = []
for i in range(2):  # A100 nodes carved all-1g.10gb
    items.append(node("gpu-a100-%d" % i, "NVIDIA-A100-SXM4-80GB", 8, 81920,
        {"nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config.state": "success"},
        {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"}))
items.append(node("gpu-l40s-0", "NVIDIA-L40S", 4, 46068, {"nvidia.com/mig.capable": "false"}, {"nvidia.com/gpu": "4"}))
def pod(ns, name, owner_kind, owner, res, phase, created, start=None, fin=None, prio=0, node=None, labels=None):
    md = {"name": name, "namespace": ns, "creationTimestamp": ts(created), "labels": labels or {"app": owner}}
    if owner_kind:
        md["ownerReferences"] = [{"apiVersion": "apps/v1" if owner_kind == "ReplicaSet" else "batch/v1", "kind": owner_kind,
                                  "name": owner, "uid": "u-" + owner, "controller": True}]
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": md,
         "spec": {"schedulerName": "gpusched", "priority": prio, "containers": [{"name": "c", "image": "i",
                  "resources": {"requests": dict(res), "limits": dict(res)}}]},
         "status": {"phase": phase}}
    if node: p["spec"]["nodeName"] = node
    if start: p["status"]["startTime"] = ts(start)
    if fin: p["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {"exitCode": 0, "startedAt": ts(start), "finishedAt": ts(fin)}}}]
    return p
# a Deployment of 10 LLM replicas asking 3g.40gb (pending: no such slice), running since yesterday
for r in range(10):
    items.append(pod("inference", "llm-13b-7d9f8c6b5-%05d" % r, "ReplicaSet", "llm-13b-7d9f8c6b5",
        {"cpu": "8", "memory": "64Gi", "nvidia.com/mig-3g.40gb": "1"}, "Pending", now - 20 * 3600, prio=1000000))
# embeddings on 1g.10gb, running
for r in range(6):
    items.append(pod("inference", "embed-5c8d7b9f4-%05d" % r, "ReplicaSet", "embed-5c8d7b9f4",
        {"cpu": "2", "memory": "8Gi", "nvidia.com/mig-1g.10gb": "1"}, "Running", now - 20 * 3600, now - 20 * 3600 + 5, prio=900000, node="gpu-a100-0"))
# fine-tuning Jobs: 30 finished over the last day, 3 hours each, 2 pending
import random
rnd = random.Random(1)
for j in range(30):
    c = now - 23 * 3600 + j * 2600
    d = 3 * 3600 * rnd.uniform(0.6, 1.5)
    items.append(pod("training", "ft-%d-abcde" % j, "Job", "ft-%d" % j, {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "1"},
        "Succeeded", c, c + 10, min(c + 10 + d, now - 60), prio=100000, node="gpu-l40s-0", labels={"gpusched.io/workload-kind": "training", "job-name": "ft"}))
for j in range(2):
    items.append(pod("training", "ft-new-%d-xyz" % j, "Job", "ft-new-%d" % j, {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "1"},
        "Pending", now - 600, prio=100000, labels={"gpusched.io/workload-kind": "training"}))
# a CPU-only pod: ignored
items.append(pod("default", "web-0", None, None, {"cpu": "1", "memory": "1Gi"}, "Running", now - 3600, now - 3600))
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[1], "w"))
PY
python3 "$TMP/gen.py" "$TMP/cluster.json"
expect 0 "$GS" advise cluster --from "$TMP/cluster.json" --format json --out "$TMP/cfg" \
    --save-scenario "$TMP/live.yaml" --budget 40 && cp "$TMP/out" "$TMP/a.json"
python3 - "$TMP/a.json" "$TMP/live.yaml" <<'PY' && ok || fail "advice from the snapshot"
import json, re, sys
a = json.load(open(sys.argv[1]))
y = open(sys.argv[2]).read()
g = {x["name"]: x for x in a["node_groups"]}
assert sorted(g) == ["a100-80gb", "l40s-48gb"], sorted(g)
assert g["a100-80gb"]["nodes"] == 2 and g["a100-80gb"]["gpus_per_node"] == 8
assert g["a100-80gb"]["current"]["layout"] == ["7x1g.10gb"] * 8
assert g["l40s-48gb"]["nodes"] == 1 and g["l40s-48gb"]["current"]["mig_gpus"] == 0
classes = re.findall(r"^  - name: (\S+)$", y, re.M)
print("classes:", classes)
assert set(classes) == {"inference-llm-13b", "inference-embed", "training-ft", "training-ft-new"}, classes
llm = y.split("name: inference-llm-13b", 1)[1].split("  - name:", 1)[0]
assert "kind: online-inference" in llm and "max_jobs: 10" in llm and "mig: 3g.40gb" in llm, llm
assert "priority: 1000000" in llm
ft = y.split("name: training-ft\n", 1)[1].split("  - name:", 1)[0]
assert "kind: training" in ft and "dist: lognormal" in ft and "per_hour: 1.25" in ft, ft
med = float(re.search(r"median: (\d+)s", ft).group(1))
assert 2 * 3600 < med < 4.5 * 3600, med   # the finished Jobs ran about 3 h
assert "gpu-a100-0 gpu-a100-1" in y and "web" not in y
cur, rec = a["current"], a["recommended"]
print("current used %.1f%%, recommended used %.1f%% (online p99 %.0fs), A100: %s"
      % (100 * cur["used_share"], 100 * rec["used_share"], rec["online_p99_wait_s"],
         g["a100-80gb"]["summary"]))
assert rec["used_share"] >= 1.5 * cur["used_share"]
assert any("3g.40gb" in l for l in g["a100-80gb"]["layout"])
# the LLM replicas no slot fits now wait the whole window: the current setup misses the SLA
print("online SLA: current p99 %.0fs, %.1f%% late; recommended %.1f%% late"
      % (cur["online_p99_wait_s"], cur["online_sla_miss_pct"], rec["online_sla_miss_pct"]))
assert not cur["sla_met"] and cur["online_p99_wait_s"] >= 86400 - 1
assert rec["sla_met"]
assert "warmup: 0s" in y
PY
expect 0 "$GS" mig validate "$TMP/cfg/mig-parted-config.yaml" --gpu A100-80GB --config gpusched-a100-80gb
expect 0 "$GS" dpconfig validate "$TMP/cfg/device-plugin/a100-80gb.yaml" "$TMP/cfg/device-plugin/l40s-48gb.yaml"
has "$TMP/cfg/node-labels.sh" "kubectl label --overwrite nodes gpu-a100-0 gpu-a100-1 nvidia.com/mig.config=gpusched-a100-80gb"
# the saved scenario is a scenario file like any other
expect 0 "$GS" sim scenario "$TMP/live.yaml" --format json
# bad snapshots: exit 2, the file and what was wrong
printf '{"kind": "List", "items": [' > "$TMP/trunc.json"
expect 2 "$GS" advise cluster --from "$TMP/trunc.json" --out "$TMP/x" && has "$TMP/err" "trunc.json:1:"
[ ! -e "$TMP/x" ] && ok || fail "configs written for a bad snapshot"
printf '{"kind": "List", "items": {}}' > "$TMP/noitems.json"
expect 2 "$GS" advise cluster --from "$TMP/noitems.json" && has "$TMP/err" "items"
python3 - "$TMP/cluster.json" "$TMP/cpu.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["items"] = [i for i in d["items"] if i["kind"] == "Pod" or "l40s" not in i["metadata"]["name"]]
for i in d["items"]:
    if i["kind"] == "Node":
        i["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-Future-GPU-999"
json.dump(d, open(sys.argv[2], "w"))
PY
expect 2 "$GS" advise cluster --from "$TMP/cpu.json" && has "$TMP/err" "no GPU node of a known model"
expect 2 "$GS" advise cluster --from "$TMP/cluster.json" --window 1m && has "$TMP/err" "--window"
expect 2 "$GS" advise cluster --from "$TMP/cluster.json" --kubeconfig /dev/null && has "$TMP/err" "exclude"
expect 2 "$GS" advise cluster --from "$TMP/missing.json" && has "$TMP/err" "missing.json"
finish
