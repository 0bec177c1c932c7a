#!/usr/bin/env bash
# Day one on a GPU cluster shaped like a real one. Nodes are the API objects NFD and the GPU
# Operator produce (tests/data/nodes: ~95 labels each, NoSchedule taint, allocatable as the
# device plugin reports it): whole A100 nodes in three zones, the article's `mixed` MIG node
# and an `all-1g.10gb` node run by NVIDIA's mig-manager (their layout comes from the
# mig-parted config the scheduler is given), a `mixed` node whose gpusched agent publishes its
# inventory, a model the catalog lacks, and a node whose allocatable disagrees with its
# labels. Pods are written as Deployments and Jobs write them (owner references, template
# labels, tolerations): MIG slices, whole GPUs, required anti-affinity across hosts, spread
# across zones, pod affinity, node affinity and host ports. Checked from the API alone:
# every placement honours the pod's constraints, no node's nvidia.com resources are
# over-allocated and no device is handed out twice, MIG annotations name the physical GPU,
# pods left pending say why, the mismatched node is reported once (log and Event), and the
# scheduler stays alive throughout.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
DATA="$E2E_SRC/../data/nodes"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# the article's mig-parted config (the ConfigMap, first document of its manifest)
sed '/^---/q' "$E2E_SRC/../../deploy/article/nvidia-mig-config.yaml" | grep -v '^---' \
    > "$E2E_DIR/mig-config.yaml"

# nodes: the fixtures as they are, and copies of the whole-GPU one in each zone
python3 - "$DATA" "$E2E_DIR/nodes" <<'PY' || exit 1
import copy, json, os, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
def load(f): return json.load(open(os.path.join(src, f)))
nodes = []
whole = load("a100-whole.json")
for i, zone in enumerate(["eu-west-1a", "eu-west-1a", "eu-west-1b", "eu-west-1b", "eu-west-1c", "eu-west-1c"]):
    n = copy.deepcopy(whole)
    name = "gpu-a100-w%d" % i
    n["metadata"]["name"] = name
    L = n["metadata"]["labels"]
    L["kubernetes.io/hostname"] = name
    L["topology.kubernetes.io/zone"] = L["failure-domain.beta.kubernetes.io/zone"] = zone
    nodes.append(n)
for f in ["a100-mixed.json", "a100-all-1g.json", "unknown-model.json", "mig-mismatch.json"]:
    nodes.append(load(f))
# the mixed node once more, run by the gpusched agent: its inventory names the physical layout
inv = copy.deepcopy(load("a100-mixed.json"))
inv["metadata"]["name"] = inv["metadata"]["labels"]["kubernetes.io/hostname"] = "gpu-a100-agent"
inv["metadata"]["annotations"]["gpusched.io/inventory"] = json.dumps({"v": 1, "gpus": [
    {"i": 0, "uuid": "GPU-9d1c0000-0000-0000-0000-000000000000", "model": "A100-80GB", "mem": 81920,
     "mig": ["3g.40gb@0", "3g.40gb@4"]},
    {"i": 1, "uuid": "GPU-9d1c0000-0000-0000-0000-000000000001", "model": "A100-80GB", "mem": 81920,
     "mig": ["1g.10gb@%d" % s for s in range(7)]},
    {"i": 2, "uuid": "GPU-9d1c0000-0000-0000-0000-000000000002", "model": "A100-80GB", "mem": 81920},
    {"i": 3, "uuid": "GPU-9d1c0000-0000-0000-0000-000000000003", "model": "A100-80GB", "mem": 81920}]},
    separators=(",", ":"))
nodes.append(inv)
for n in nodes:
    status = n.pop("status")
    json.dump(n, open(os.path.join(out, n["metadata"]["name"] + ".json"), "w"))
    json.dump({"status": status}, open(os.path.join(out, n["metadata"]["name"] + ".status"), "w"))
PY
for f in "$E2E_DIR"/nodes/*.json; do
    n="$(basename "$f" .json)"
    "$K" create -f "$f" >/dev/null || exit 1
    "$K" patch node "$n" --subresource=status --type=merge \
        -p "$(cat "$E2E_DIR/nodes/$n.status")" >/dev/null || exit 1
done
labels=$("$K" get node gpu-a100-w0 -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["metadata"]["labels"]))')
[ "$labels" -ge 90 ] || fail "the whole-GPU node carries $labels labels, expected the fixture's ~95"

port=$(e2e_free_port)
"$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --leader-elect false --http-port "$port" --mig-config "$E2E_DIR/mig-config.yaml" \
    > "$E2E_DIR/scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/scheduler.pid"

# pods as a Deployment's ReplicaSet (or a Job) writes them
python3 - "$E2E_DIR/pods.json" <<'PY' || exit 1
import json, sys
items = []
def pod(name, app, limits, kind="ReplicaSet", owner=None, affinity=None, spread=None, ports=None,
        node_selector=None, extra_labels=None):
    labels = {"app.kubernetes.io/name": app, "app": app, "pod-template-hash": "7d9f8b6c5d"}
    if kind == "Job":
        labels = {"app": app, "batch.kubernetes.io/job-name": app, "job-name": app,
                  "batch.kubernetes.io/controller-uid": "5f0c3a1e-0000-4000-8000-000000000001"}
    labels.update(extra_labels or {})
    c = {"name": "main", "image": "registry.example.com/%s:1.0" % app,
         "imagePullPolicy": "IfNotPresent",
         "resources": {"requests": dict(limits, cpu="2", memory="8Gi"),
                       "limits": dict(limits, memory="8Gi")},
         "terminationMessagePath": "/dev/termination-log",
         "terminationMessagePolicy": "File"}
    if ports:
        c["ports"] = ports
    spec = {"schedulerName": "gpusched", "containers": [c], "restartPolicy": "Always" if kind != "Job" else "Never",
            "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "enableServiceLinks": True,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}]}
    if affinity: spec["affinity"] = affinity
    if spread: spec["topologySpreadConstraints"] = spread
    if node_selector: spec["nodeSelector"] = node_selector
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": name, "namespace": "ai", "labels": labels,
                               "ownerReferences": [{"apiVersion": "apps/v1" if kind != "Job" else "batch/v1",
                                                    "kind": kind, "name": owner or app + "-7d9f8b6c5d",
                                                    "uid": "0b6e3c1a-0000-4000-8000-00000000%04d" % len(items),
                                                    "controller": True, "blockOwnerDeletion": True}]},
                  "spec": spec})
host = "kubernetes.io/hostname"
zone = "topology.kubernetes.io/zone"
# inference replicas that must not share a host (4 pods, 1 GPU each)
for i in range(4):
    pod("llm-%d" % i, "llm", {"nvidia.com/gpu": "1"}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "llm"}}, "topologyKey": host}]}})
# replicas spread across zones (6 pods: 2 per zone), only on A100 nodes outside MIG
for i in range(6):
    pod("web-%d" % i, "web", {"nvidia.com/gpu": "1"},
        spread=[{"maxSkew": 1, "topologyKey": zone, "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": "web"}}}],
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]},
                {"key": "nvidia.com/mig.config", "operator": "In", "values": ["all-disabled"]}]}]}}})
# a cache next to an llm replica (pod affinity)
pod("cache-0", "cache", {}, affinity={"podAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["llm"]}]},
        "topologyKey": host}]}})
# node affinity: a zone excluded
for i in range(2):
    pod("batch-%d" % i, "batch", {"nvidia.com/gpu": "2"}, kind="Job", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": zone, "operator": "NotIn", "values": ["eu-west-1a"]}]}]}}})
# host ports: three pods on one node asking the same port: one binds
for i in range(3):
    pod("exporter-%d" % i, "exporter", {}, ports=[{"containerPort": 9400, "hostPort": 9400, "protocol": "TCP"}],
        node_selector={"kubernetes.io/hostname": "gpu-a100-w5"})
# MIG slices: on the mixed nodes and the all-1g node
for i in range(4):
    pod("llm70b-%d" % i, "llm70b", {"nvidia.com/mig-3g.40gb": "1"})
for i in range(10):
    pod("embed-%d" % i, "embed", {"nvidia.com/mig-1g.10gb": "1"})
# a whole GPU on the model the catalog lacks, by its product label
pod("x200-0", "x200", {"nvidia.com/gpu": "4"},
    node_selector={"nvidia.com/gpu.product": "NVIDIA-Future-X200-144GB"})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[1], "w"))
PY
"$K" create namespace ai >/dev/null
"$K" create -f "$E2E_DIR/pods.json" >/dev/null || exit 1
total=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$E2E_DIR/pods.json")
# two exporters stay pending (port taken); everything else binds
want=$((total - 2))
"$DRIVER" wait-bound "$want" 120 || fail "not every schedulable pod was bound"
# the two pending exporters' FailedScheduling Events (Events give way to binds: up to 5 s)
pending_noted() {
    [ "$("$K" get events.events.k8s.io -n ai -o json | python3 -c '
import json, sys
print(len({e["regarding"]["name"] for e in json.load(sys.stdin)["items"]
           if e.get("reason") == "FailedScheduling" and e["regarding"]["name"].startswith("exporter-")}))')" -ge 2 ]
}
for i in $(seq 1 300); do pending_noted && break; sleep 0.2; done
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || fail "the scheduler died"

"$K" get nodes -o json > "$E2E_DIR/nodes.out"
"$K" get pods -n ai -o json > "$E2E_DIR/pods.out"
"$K" get events.events.k8s.io -n ai -o json > "$E2E_DIR/events.out"
python3 - "$E2E_DIR/nodes.out" "$E2E_DIR/pods.out" "$E2E_DIR/events.out" <<'PY' || fail "placements (see above)"
import collections, json, sys
nodes = {n["metadata"]["name"]: n for n in json.load(open(sys.argv[1]))["items"]}
pods = json.load(open(sys.argv[2]))["items"]
events = json.load(open(sys.argv[3]))["items"]
bad = []
def lab(node, k): return nodes[node]["metadata"]["labels"].get(k)
def where(prefix): return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods
                           if p["metadata"]["name"].startswith(prefix)}
def annot(p): return p["metadata"].get("annotations", {}).get("gpusched.io/devices", "")
# resources: the sum of each nvidia.com resource on a node within its allocatable
use = collections.defaultdict(collections.Counter)
devs = collections.defaultdict(list)
for p in pods:
    n = p["spec"].get("nodeName")
    if not n:
        continue
    for c in p["spec"]["containers"]:
        for r, v in c["resources"].get("limits", {}).items():
            if r.startswith("nvidia.com/"):
                use[n][r] += int(v)
    a = annot(p)
    if a:
        kind, _, lst = a.partition("=")
        for d in lst.split(","):
            devs[n].append(d if kind == "mig" else "gpu " + d)
for n, u in use.items():
    alloc = nodes[n]["status"]["allocatable"]
    for r, v in u.items():
        if v > int(alloc.get(r, "0")):
            bad.append("%s: %s %d used > %s allocatable" % (n, r, v, alloc.get(r, "0")))
for n, d in devs.items():
    dup = [x for x, k in collections.Counter(d).items() if k > 1]
    if dup:
        bad.append("%s: devices handed out twice: %s" % (n, dup))
# anti-affinity: 4 llm replicas on 4 hosts
llm = where("llm-")
if None in llm.values() or len(set(llm.values())) != 4:
    bad.append("llm anti-affinity: %s" % llm)
# spread: 2 web replicas per zone
web = where("web-")
zones = collections.Counter(lab(n, "topology.kubernetes.io/zone") for n in web.values() if n)
if sorted(zones.values()) != [2, 2, 2]:
    bad.append("web spread over zones: %s" % dict(zones))
for n in web.values():
    if n and (lab(n, "nvidia.com/gpu.product") != "NVIDIA-A100-SXM4-80GB" or lab(n, "nvidia.com/mig.config") != "all-disabled"):
        bad.append("web node affinity broken on %s" % n)
# pod affinity: the cache sits with an llm replica
c = where("cache-")["cache-0"]
if c not in llm.values():
    bad.append("cache pod affinity: on %s, llm on %s" % (c, sorted(llm.values())))
# node affinity: no batch pod in zone a
for p, n in where("batch-").items():
    if not n or lab(n, "topology.kubernetes.io/zone") == "eu-west-1a":
        bad.append("%s node affinity: on %s" % (p, n))
# host ports: one exporter bound, two pending with kube-scheduler's reason
exp = where("exporter-")
if sum(1 for n in exp.values() if n) != 1:
    bad.append("host ports: %s" % exp)
notes = {e["regarding"]["name"]: e.get("note", "") for e in events if e.get("reason") == "FailedScheduling"}
for p, n in exp.items():
    if not n and "didn't have free ports" not in notes.get(p, ""):
        bad.append("%s pending without the port reason: %r" % (p, notes.get(p)))
# MIG: on the agent's node every 3g.40gb slice is on physical GPU 0, every 1g.10gb on GPU 1;
# on nodes run by NVIDIA's stack the layout from the mig-parted config gives the same
for p in pods:
    n, a = p["spec"].get("nodeName"), annot(p)
    name = p["metadata"]["name"]
    if name.startswith(("llm70b-", "embed-")):
        if not n:
            bad.append("%s not bound" % name)
            continue
        cfg = lab(n, "nvidia.com/mig.config")
        want = {"3g.40gb": "0", "1g.10gb": "1"} if cfg == "mixed" else None
        prof = "3g.40gb" if name.startswith("llm70b") else "1g.10gb"
        if not a.startswith("mig="):
            bad.append("%s on %s: devices annotation %r" % (name, n, a))
        elif want and a[4:].split(":")[0] != want[prof]:
            bad.append("%s on %s (%s): %s is not on physical GPU %s" % (name, n, cfg, a, want[prof]))
        if n == "gpu-a100-04":
            bad.append("%s on the node whose allocatable disagrees with its labels" % name)
x = where("x200-")["x200-0"]
if x != "gpu-x-01":
    bad.append("the model the catalog lacks got no whole-GPU pod: x200-0 on %s" % x)
for b in bad:
    print("VIOLATION:", b)
print("checked %d pods on %d nodes: %d violations" % (len(pods), len(nodes), len(bad)))
sys.exit(1 if bad else 0)
PY
# the node whose allocatable disagrees with its labels is reported once, not every cycle
n=$(grep -c "node 'gpu-a100-04'.*offers no GPUs" "$E2E_DIR/scheduler.log")
[ "$n" -eq 1 ] || fail "the mismatched node was reported $n times"
ev=$("$K" get events.events.k8s.io -n default -o json | python3 -c '
import json, sys
ev = [e for e in json.load(sys.stdin)["items"] if e["regarding"]["kind"] == "Node"
      and e["regarding"]["name"] == "gpu-a100-04" and e["reason"] == "GPUsUnusable"]
print(len(ev), ev[0]["note"] if ev else "")')
echo "node Events: $ev"
[ "${ev%% *}" = 1 ] || fail "one GPUsUnusable Event regarding the mismatched node, got: $ev"
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || fail "/healthz"
if [ $fails -ne 0 ]; then
    echo "--- scheduler log (tail)"; tail -30 "$E2E_DIR/scheduler.log"
fi
[ $fails -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
[ $fails -eq 0 ]
