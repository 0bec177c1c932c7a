#!/usr/bin/env bash
# The differential test's checker must be able to fail: kschedcheck (kube-scheduler v1.37.2's
# filter plugins, tests/e2e/tools/kschedcheck) judges fabricated binds, one planted violation
# per filter plugin, on a real API server (no scheduler runs: every "bind" is a pod created
# with spec.nodeName, and the bind order is a file, as the differential test derives it from
# gpusched's log). Nodes: two clean ones (zones a and b), a cordoned one, a tainted one, a
# small one (4 CPUs), one whose CSINode allows one volume of the EBS driver, two with two DRA
# devices each. Each plugin's planted bind breaks only that plugin's rule, and must be refused
# by exactly that plugin and no other:
#   NodeName            a pod created on cl-b that the order says was put on cl-a
#   NodeUnschedulable   a pod on the cordoned node
#   TaintToleration     a pod on the tainted node without the toleration
#   NodeAffinity        a pod whose nodeSelector the node lacks
#   NodePorts           the second pod with host port 8080 on one node
#   NodeResourcesFit    2 CPUs on the small node after a pinned pod's 1 and an earlier bind's 3
#   VolumeRestrictions  the second pod of a ReadWriteOncePod claim
#   NodeVolumeLimits    a second EBS volume where the CSINode allows one
#   VolumeBinding       a claim bound to a volume pinned to cl-b, the pod on cl-a
#   VolumeZone          a volume labelled zone b, the pod in zone a
#   PodTopologySpread   a second pod of a zone spread (maxSkew 1) in zone a, none in b
#   InterPodAffinity    anti-affinity (hostname) to a pod bound before it on that node
#   DynamicResources    a pod whose unallocated claim no device of its node can satisfy
# and three judgements beside the filters:
#   volumes             a WaitForFirstConsumer claim that a volume on its node could take at
#                       its turn, then bound to a volume pinned to another node
#   devices             a claim its node's free device could satisfy at its turn (the other
#                       is an earlier claim's), then allocated the other node's device
#   pending             a pod of gpusched left pending that fits a clean node
# The earlier binds the plants need (and a control per plant: the same rule kept) must pass:
# every disagreement is a planted one, and every planted one is there, refused as planted.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/kschedcheck.sh"
CHECK="$KS_CHECK"
[ -x "$CHECK" ] || { echo "FAIL: $CHECK was not built"; echo "0 passed, 1 failed"; exit 1; }
"$K" api-resources --api-group=resource.k8s.io 2>/dev/null | grep -q resourceclaims ||
    skip "the API server does not serve resource.k8s.io/v1"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# node NAME ZONE CPU [SPEC-JSON] [LABELS-JSON]
node() {
    "$K" create -f - > /dev/null <<Y || return 1
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$1", "labels": {
  "kubernetes.io/hostname": "$1", "kubernetes.io/os": "linux",
  "topology.kubernetes.io/zone": "$2"${5:+, $5}}}, "spec": ${4:-{\}}}
Y
    "$K" patch node "$1" --subresource=status --type=merge -p "{\"status\": {
      \"capacity\": {\"cpu\": \"$3\", \"memory\": \"64Gi\", \"pods\": \"110\"},
      \"allocatable\": {\"cpu\": \"$3\", \"memory\": \"64Gi\", \"pods\": \"110\"},
      \"conditions\": [{\"type\": \"Ready\", \"status\": \"True\", \"reason\": \"KubeletReady\",
        \"lastHeartbeatTime\": \"2026-01-01T00:00:00Z\", \"lastTransitionTime\": \"2026-01-01T00:00:00Z\"}]}}" \
        > /dev/null
}
node cl-a a 32 || exit 1
node cl-b b 32 || exit 1
node cordoned a 32 '{"unschedulable": true}' || exit 1
node tainted a 32 '{"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}' || exit 1
node small b 4 || exit 1
node csi a 32 || exit 1
node ports a 32 || exit 1
node anti b 32 || exit 1
node dra-a a 32 || exit 1
node dra-b b 32 || exit 1
"$K" create namespace st > /dev/null || exit 1

# storage: classes, the CSINode limit, volumes and claims (pre-bound as the PV controller
# leaves them, but for the WaitForFirstConsumer one)
python3 - "$E2E_DIR" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
items = [
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
     "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "csi"},
     "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "csi", "allocatable": {"count": 1}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
     "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}},
]
for n in ("dra-a", "dra-b"):
    items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                  "metadata": {"name": n + "-gpus"},
                  "spec": {"driver": "gpu.example.com", "nodeName": n,
                           "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                           "devices": [{"name": "gpu-%d" % i, "attributes": {"model": {"string": "A100"}}}
                                       for i in range(2)]}})
def pv(name, source, mode="ReadWriteOnce", host=None, labels=None, claim=None, cls=""):
    v = {"apiVersion": "v1", "kind": "PersistentVolume",
         "metadata": {"name": name, "labels": labels or {}},
         "spec": dict(source, capacity={"storage": "10Gi"}, accessModes=[mode],
                      persistentVolumeReclaimPolicy="Retain", storageClassName=cls)}
    if host:
        v["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}
    if claim:
        v["spec"]["claimRef"] = {"namespace": "st", "name": claim}
    items.append(v)
def pvc(name, volume=None, mode="ReadWriteOnce", cls=""):
    c = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "st"},
         "spec": {"accessModes": [mode], "resources": {"requests": {"storage": "1Gi"}},
                  "storageClassName": cls}}
    if volume:
        c["spec"]["volumeName"] = volume
        c["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    items.append(c)
nfs = lambda p: {"nfs": {"server": "nfs.invalid", "path": p}}
ebs = lambda h: {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": h}}
pv("pv-rwop", nfs("/rwop"), "ReadWriteOncePod", claim="c-rwop"); pvc("c-rwop", "pv-rwop", "ReadWriteOncePod")
pv("pv-ebs-1", ebs("vol-1"), claim="c-ebs-1"); pvc("c-ebs-1", "pv-ebs-1")
pv("pv-ebs-2", ebs("vol-2"), claim="c-ebs-2"); pvc("c-ebs-2", "pv-ebs-2")
pv("pv-pinned", nfs("/pinned"), host="cl-b", claim="c-pinned"); pvc("c-pinned", "pv-pinned")
pv("pv-pinned-ok", nfs("/pinned-ok"), host="cl-a", claim="c-pinned-ok"); pvc("c-pinned-ok", "pv-pinned-ok")
pv("pv-zone-b", nfs("/zone"), labels={"topology.kubernetes.io/zone": "b"}, claim="c-zone-b"); pvc("c-zone-b", "pv-zone-b")
pv("pv-local-a", {"local": {"path": "/mnt/a"}}, host="cl-a", cls="local")
pv("pv-local-b", {"local": {"path": "/mnt/b"}}, host="cl-b", cls="local")
pvc("c-wffc", cls="local")
for n in ("c-dra", "c-dev", "c-dev-ok"):
    items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": n, "namespace": "st"},
                  "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(d + "/storage.json", "w"))

# the binds, in the order the checker replays them (ORDER: its node; NODE: spec.nodeName when
# it differs, for the NodeName plant), and the one pinned pod the order does not list
def pod(name, node, cpu="100m", labels=None, extra=None, order=None, claims=(), dra=None):
    spec = {"schedulerName": "gpusched", "nodeName": node,
            "containers": [{"name": "c", "image": "registry.invalid/none:1",
                            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}
    spec.update(extra or {})
    if claims:
        spec["volumes"] = [{"name": "v%d" % i, "persistentVolumeClaim": {"claimName": c}}
                           for i, c in enumerate(claims)]
    if dra:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": dra}]
        spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    if node is None:
        del spec["nodeName"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "st", "labels": labels or {}},
            "spec": spec}, (name, order or node)
port = lambda: {"containers": [{"name": "c", "image": "registry.invalid/none:1",
                                "ports": [{"containerPort": 8080, "hostPort": 8080}],
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
          "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "spread"}}}]}
anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "target"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
binds = [
    # controls and the earlier binds the plants need
    pod("ok-a", "cl-a"), pod("ok-b", "cl-b"),
    pod("ok-cordoned", "cordoned", extra={"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}),
    pod("ok-tainted", "tainted", extra={"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "x"}]}),
    pod("ok-selector", "cl-a", extra={"nodeSelector": {"topology.kubernetes.io/zone": "a"}}),
    pod("ports-1", "ports", extra=port()), pod("ports-other", "cl-a", extra=port()),
    pod("fit-1", "small", cpu="3"),
    pod("rwop-1", "cl-a", claims=["c-rwop"]),
    pod("limits-1", "csi", claims=["c-ebs-1"]), pod("limits-same", "csi", claims=["c-ebs-1"]),
    pod("ok-pinned", "cl-a", claims=["c-pinned-ok"]),
    pod("ok-zone", "cl-b", claims=["c-zone-b"]),
    pod("spread-1", "cl-a", labels={"app": "spread"}, extra=spread),
    pod("target", "anti", labels={"app": "target"}),
    pod("anti-ok", "cl-b", extra=anti),
    pod("ok-dra", "dra-a", dra="c-dev-ok"),
    # the plants
    pod("nodename", "cl-b", order="cl-a"),
    pod("unschedulable", "cordoned"),
    pod("taint", "tainted"),
    pod("affinity", "cl-a", extra={"nodeSelector": {"disk": "ssd"}}),
    pod("ports-2", "ports", extra=port()),
    pod("fit-2", "small", cpu="2"),
    pod("rwop-2", "cl-b", claims=["c-rwop"]),
    pod("limits-2", "csi", claims=["c-ebs-2"]),
    pod("volbind", "cl-a", claims=["c-pinned"]),
    pod("zone", "cl-a", claims=["c-zone-b"]),
    pod("spread-2", "cl-a", labels={"app": "spread"}, extra=spread),
    pod("anti", "anti", extra=anti),
    pod("dra", "cl-b", dra="c-dra"),
    pod("wffc", "cl-a", claims=["c-wffc"]),
    pod("dev", "dra-a", dra="c-dev"),
]
pods = [p for p, _ in binds]
pods.append(pod("pinned", "small", cpu="1")[0])
pods.append(pod("pend", None)[0])
json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, open(d + "/pods.json", "w"))
with open(d + "/order.txt", "w") as f:
    for _, (name, node) in binds:
        f.write("st/%s %s\n" % (name, node))
PY
"$K" create -f "$E2E_DIR/storage.json" > /dev/null || exit 1
# the volumes without a claim Available, as the PV controller makes them (none runs here)
for v in pv-local-a pv-local-b; do
    "$K" patch pv $v --subresource=status --type=merge -p '{"status": {"phase": "Available"}}' > /dev/null || exit 1
done
"$K" create -f "$E2E_DIR/pods.json" > /dev/null || exit 1
echo "  $(grep -c . "$E2E_DIR/order.txt") binds in order, 1 pinned pod, 1 pending pod of gpusched"
ks_dump "$E2E_DIR/initial.json" || exit 1

# then what a scheduler would have written for two of them: c-wffc bound to cl-b's volume
# (its pod is on cl-a), c-dev allocated dra-b's device (its pod is on dra-a), c-dev-ok
# allocated dra-a's device (its pod's own)
"$K" patch pv pv-local-b --type=merge -p '{"spec": {"claimRef": {"namespace": "st", "name": "c-wffc"}}}' > /dev/null &&
    "$K" patch pvc c-wffc -n st --type=merge \
        -p '{"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}}, "spec": {"volumeName": "pv-local-b"}}' \
        > /dev/null || exit 1
allocate() { # CLAIM POD NODE
    local uid
    uid=$("$K" get pod "$2" -n st -o jsonpath='{.metadata.uid}')
    "$K" patch resourceclaim "$1" -n st --subresource=status --type=merge -p "{\"status\": {
      \"allocation\": {\"devices\": {\"results\": [{\"request\": \"gpu\", \"driver\": \"gpu.example.com\",
        \"pool\": \"$3\", \"device\": \"gpu-0\"}]},
        \"nodeSelector\": {\"nodeSelectorTerms\": [{\"matchFields\": [{\"key\": \"metadata.name\",
          \"operator\": \"In\", \"values\": [\"$3\"]}]}]}},
      \"reservedFor\": [{\"resource\": \"pods\", \"name\": \"$2\", \"uid\": \"$uid\"}]}}" > /dev/null
}
allocate c-dev dev dra-b || exit 1
allocate c-dev-ok ok-dra dra-a || exit 1
ks_dump "$E2E_DIR/dump.json" "$E2E_DIR/initial.json" || exit 1

"$CHECK" -order "$E2E_DIR/order.txt" "$E2E_DIR/dump.json" > "$E2E_DIR/check.out" 2>&1
rc=$?
grep -v '^volumes ' "$E2E_DIR/check.out" | sed 's/^/  /'
[ $rc -eq 1 ] || fail "kschedcheck exited $rc, want 1 (disagreements)"
python3 - "$E2E_DIR/check.out" "$(grep -c . "$E2E_DIR/order.txt")" <<'PY' || fail "the planted violations"
import re, sys
want = {
    ("bound", "nodename"): "NodeName", ("bound", "unschedulable"): "NodeUnschedulable",
    ("bound", "taint"): "TaintToleration", ("bound", "affinity"): "NodeAffinity",
    ("bound", "ports-2"): "NodePorts", ("bound", "fit-2"): "NodeResourcesFit",
    ("bound", "rwop-2"): "VolumeRestrictions", ("bound", "limits-2"): "NodeVolumeLimits",
    ("bound", "volbind"): "VolumeBinding", ("bound", "zone"): "VolumeZone",
    ("bound", "spread-2"): "PodTopologySpread", ("bound", "anti"): "InterPodAffinity",
    ("bound", "dra"): "DynamicResources",
    ("volumes", "wffc"): "VolumeBinding", ("devices", "dev"): "DynamicResources",
    ("pending", "pend"): "a node",
}
got, ok = {}, True
for line in open(sys.argv[1]):
    m = re.match(r"DISAGREE (\w+) st/([^\s:]+)", line)
    if not m:
        continue
    k = (m.group(1), m.group(2))
    by = re.search(r"\[refused by ([^\]]*)\]$", line.strip())
    first = re.search(r"upstream's (\w+)", line)
    got[k] = "a node" if k[0] == "pending" else by.group(1) if by else (first.group(1) if first else None)
    if k not in want:
        print("FAIL: not planted, yet refused: " + line.strip()); ok = False
    elif got[k] != want[k]:
        print("FAIL: %s %s refused by %s, want exactly %s" % (k[0], k[1], got[k], want[k])); ok = False
for k, v in want.items():
    if k not in got:
        print("FAIL: planted %s %s (%s) not refused" % (k[0], k[1], v)); ok = False
plugins = {v for (kind, _), v in want.items() if kind == "bound"}
print("planted %d violations, %d refused as planted; each of the %d filter plugins refused its own and no other" % (
    len(want), sum(1 for k in want if got.get(k) == want[k]), len(plugins)) if ok else "")
sum_ = [l for l in open(sys.argv[1]) if l.startswith("kschedcheck: ")]
m = re.search(r"(\d+) filter plugins: (\d+) binds of gpusched judged in order against (\d+) pinned pods", sum_[0] if sum_ else "")
if not m or (int(m.group(1)), int(m.group(2)), int(m.group(3))) != (13, int(sys.argv[2]), 1):
    print("FAIL: want 13 filter plugins, %s binds judged against 1 pinned pod: %s" % (sys.argv[2], sum_[0].strip() if sum_ else "no summary")); ok = False
m = re.search(r"(\d+) disagreements", sum_[0] if sum_ else "")
if not m or int(m.group(1)) != len(want):
    print("FAIL: want %d disagreements" % len(want)); ok = False
sys.exit(0 if ok else 1)
PY
[ $fails -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
[ $fails -eq 0 ]
