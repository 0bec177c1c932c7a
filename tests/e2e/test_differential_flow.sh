#!/usr/bin/env bash
# The whole flow, gpusched against the stock kube-scheduler v1.37.2: each on its own group of
# four identical nodes (zones a and b, two each) with the same objects in its own namespace,
# at the same time, with the real volume controller (kube-controller-manager's
# persistentvolume-binder-controller) and a stand-in CSI provisioner (this test: a volume on
# the node a claim's selected-node names). Per group:
#   web       6 pods of 1 CPU: all bound
#   huge      32 CPUs: waits (insufficient cpu)
#   solo      5 pods, hostname anti-affinity among them: 4 bound, 1 waits (anti-affinity)
#   spread    4 pods, zone spread maxSkew 1 DoNotSchedule: all bound, 2 per zone
#   fit       a 60Gi WaitForFirstConsumer claim of local volumes: the 100Gi one on a-0
#   small     a 5Gi claim, the pod pinned to a-1 (10Gi and 50Gi volumes): the 10Gi one
#   none      a 500Gi claim: no volume fits, none can be provisioned: waits
#   imm       an unbound claim of an Immediate class: waits
#   rwop-1/2  one ReadWriteOncePod claim (the second pod made once the first is bound): the
#             first bound, the second waits
#   prov      a 10Gi claim of a CSI class whose CSIStorageCapacity covers zone b only:
#             selected-node in zone b, provisioned there, bound, the pod on that node
#   zoned     a claim bound to a volume labelled zone b: the pod in zone b
#   a100-0..2 a ResourceClaim each for an A100 (a DRA driver's slices: 2 A100 on a-0, 1 A100
#             and 1 L4 on b-0): all allocated, each pod on its devices' node
#   l4-0/1    a claim each for the L4 (the second made once the first is bound): the first
#             allocated, the second waits (its claim unallocated)
#   gated-0/1 scheduling gates: unbound, PodScheduled False/SchedulingGated, no
#             FailedScheduling Event, while gated; bound once the gates are removed
# The outcomes (which pods bind and where it is determined, why each waiting pod waits, each
# claim's phase, volume, selected-node zone, each ResourceClaim's allocation: valid, of the
# model asked, on the pod's node, no device twice; the gated pods before and after) are
# written per group without the group's prefix and compared line by line: each group's must
# be the expected one, and the two must agree on every line (the count asserted).
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/tenancy.sh"
"$K" api-resources --api-group=resource.k8s.io 2>/dev/null | grep -q resourceclaims ||
    skip "the API server does not serve resource.k8s.io/v1"

for g in gs ks; do
    for n in a-0 a-1 b-0 b-1; do
        "$K" create -f - > /dev/null <<Y || exit 1
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$g-$n", "labels": {
  "kubernetes.io/hostname": "$g-$n", "kubernetes.io/os": "linux",
  "topology.kubernetes.io/zone": "${n%%-*}", "e2e.gpusched.io/group": "$g"}}}
Y
        "$K" patch node "$g-$n" --subresource=status --type=merge -p '{"status": {
          "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
          "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
          "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}' \
            > /dev/null || exit 1
    done
done

python3 - "$E2E_DIR" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
shared = [
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
     "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "imm"},
     "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "csi"},
     "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "csi.example.com"},
     "spec": {"storageCapacity": True, "attachRequired": True}},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
     "metadata": {"name": "csi-zone-b", "namespace": "kube-system"}, "storageClassName": "csi",
     "capacity": "20Gi", "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "b"}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
     "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}},
]
json.dump({"apiVersion": "v1", "kind": "List", "items": shared}, open(d + "/shared.json", "w"))

def group(g, sched):
    items, later = [], []
    def pv(name, size, host=None, mode="ReadWriteOnce", cls="local", claim=None, labels=None, src=None):
        v = {"apiVersion": "v1", "kind": "PersistentVolume",
             "metadata": {"name": "%s-%s" % (g, name), "labels": labels or {}},
             "spec": {"capacity": {"storage": size}, "accessModes": [mode], "storageClassName": cls,
                      "persistentVolumeReclaimPolicy": "Retain"}}
        v["spec"].update(src or {"local": {"path": "/mnt/" + name}})
        if host:
            v["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["%s-%s" % (g, host)]}]}]}}
        if claim:
            v["spec"]["claimRef"] = {"namespace": g, "name": claim}
        items.append(v)
    def pvc(name, cls, size, mode="ReadWriteOnce", volume=None):
        c = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": g},
             "spec": {"accessModes": [mode], "storageClassName": cls, "resources": {"requests": {"storage": size}}}}
        if volume:
            c["spec"]["volumeName"] = "%s-%s" % (g, volume)
        items.append(c)
    def dra(name, model):
        items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                      "metadata": {"name": name, "namespace": g},
                      "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                          "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression":
                              "device.attributes['gpu.example.com'].model == '%s'" % model}}]}}]}}})
    def pod(name, cpu="1", labels=None, claim=None, rc=None, host=None, extra=None, into=None):
        sel = {"e2e.gpusched.io/group": g}
        if host:
            sel["kubernetes.io/hostname"] = "%s-%s" % (g, host)
        c = {"name": "c", "image": "registry.invalid/none:1",
             "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
        spec = {"schedulerName": sched, "nodeSelector": sel, "containers": [c]}
        if claim:
            spec["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]
            c["volumeMounts"] = [{"name": "d", "mountPath": "/d"}]
        if rc:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": rc}]
            c["resources"]["claims"] = [{"name": "gpu"}]
        spec.update(extra or {})
        (items if into is None else into).append({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": g, "labels": labels or {}}, "spec": spec})
    items.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": g}})
    pv("big", "100Gi", "a-0"); pv("mid", "50Gi", "a-1"); pv("small", "10Gi", "a-1")
    pv("rwop", "1Gi", mode="ReadWriteOncePod", cls="", claim="crwop", src={"nfs": {"server": "nfs.invalid", "path": "/r"}})
    pv("zone", "1Gi", cls="", claim="czone", labels={"topology.kubernetes.io/zone": "b"},
       src={"nfs": {"server": "nfs.invalid", "path": "/z"}})
    pvc("cfit", "local", "60Gi"); pvc("csmall", "local", "5Gi"); pvc("cnone", "local", "500Gi")
    pvc("cimm", "imm", "1Gi"); pvc("crwop", "", "1Gi", "ReadWriteOncePod", "rwop")
    pvc("cprov", "csi", "10Gi"); pvc("czone", "", "1Gi", volume="zone")
    for node, models in (("a-0", ["A100", "A100"]), ("b-0", ["A100", "L4"])):
        items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                      "metadata": {"name": "%s-%s-gpus" % (g, node)},
                      "spec": {"driver": "gpu.example.com", "nodeName": "%s-%s" % (g, node),
                               "pool": {"name": "%s-%s" % (g, node), "generation": 1, "resourceSliceCount": 1},
                               "devices": [{"name": "gpu-%d" % k, "attributes": {"model": {"string": m}}}
                                           for k, m in enumerate(models)]}})
    for i in range(3):
        dra("a100-%d" % i, "A100")
    for i in range(2):
        dra("l4-%d" % i, "L4")
    for i in range(6):
        pod("web-%d" % i)
    pod("huge", cpu="32")
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    for i in range(5):
        pod("solo-%d" % i, labels={"app": "solo"}, extra=anti)
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
              "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "spread"}}}]}
    for i in range(4):
        pod("spread-%d" % i, labels={"app": "spread"}, extra=spread)
    pod("fit", claim="cfit"); pod("small", claim="csmall", host="a-1"); pod("none", claim="cnone")
    pod("imm", claim="cimm"); pod("rwop-1", claim="crwop"); pod("prov", claim="cprov")
    pod("zoned", claim="czone")
    for i in range(3):
        pod("a100-%d" % i, rc="a100-%d" % i)
    pod("l4-0", rc="l4-0")
    for i in range(2):
        pod("gated-%d" % i, extra={"schedulingGates": [{"name": "example.com/admission"}]})
    pod("rwop-2", claim="crwop", into=later)
    pod("l4-1", rc="l4-1", into=later)
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open("%s/%s.json" % (d, g), "w"))
    for p in later:
        json.dump(p, open("%s/%s-%s.json" % (d, g, p["metadata"]["name"]), "w"))
group("gs", "gpusched")
group("ks", "default-scheduler")
PY
"$K" create -f "$E2E_DIR/shared.json" > /dev/null || exit 1
# the volume controller; a stand-in CSI provisioner: a volume on the selected node for each
# claim of class csi that has one, bound to the claim (the controller completes the bind)
"$E2E_BIN/kube-controller-manager" --kubeconfig "$E2E_DIR/admin.kubeconfig" --leader-elect=false \
    --secure-port 0 --controllers persistentvolume-binder-controller \
    > "$E2E_DIR/controller-manager.log" 2>&1 &
echo $! > "$E2E_DIR/kcm.pid"
provisioner() {
    while :; do
        "$K" get pvc -A -o json | python3 -c '
import json, sys
for c in json.load(sys.stdin)["items"]:
    node = c["metadata"].get("annotations", {}).get("volume.kubernetes.io/selected-node")
    if c["spec"].get("storageClassName") == "csi" and node and not c["spec"].get("volumeName"):
        ns, name = c["metadata"]["namespace"], c["metadata"]["name"]
        print(json.dumps({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "%s-provisioned-%s" % (ns, name),
                         "annotations": {"pv.kubernetes.io/provisioned-by": "csi.example.com"}},
            "spec": {"capacity": c["spec"]["resources"]["requests"], "accessModes": c["spec"]["accessModes"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "csi",
                     "csi": {"driver": "csi.example.com", "volumeHandle": "%s-%s" % (ns, name)},
                     "claimRef": {"namespace": ns, "name": name, "uid": c["metadata"]["uid"]},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}}))' |
            while read -r pv; do echo "$pv" | "$K" create -f - 2>/dev/null; done
        sleep 0.5
    done
}
provisioner > "$E2E_DIR/provisioner.log" 2>&1 &
echo $! > "$E2E_DIR/provisioner.pid"
tn_start || exit 1
printf 'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nclientConnection:\n  kubeconfig: %s\n' \
    "$E2E_DIR/admin.kubeconfig" > "$E2E_DIR/ks.yaml"
"$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0 \
    > "$E2E_DIR/kube-scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/kube-scheduler.pid"
for g in gs ks; do
    "$K" create -f "$E2E_DIR/$g.json" > /dev/null || { tn_fail "creating $g's objects"; tn_done; }
done

node_of() { "$K" get pod "$2" -n "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
bound() { [ -n "$(node_of "$1" "$2")" ]; }
cond_msg() {
    "$K" get pod "$2" -n "$1" \
        -o jsonpath='{range .status.conditions[?(@.type=="PodScheduled")]}{.reason}: {.message}{end}'
}
waits() { cond_msg "$1" "$2" | grep -qi "$3"; } # NS POD TEXT: PodScheduled False says TEXT
# the second pod of the ReadWriteOncePod claim and of the L4 once the first is bound
for g in gs ks; do
    for p in rwop l4; do
        tn_wait 90 bound $g $p-$([ $p = rwop ] && echo 1 || echo 0) || tn_fail "$g: the first $p pod is not bound"
        "$K" create -f "$E2E_DIR/$g-$p-$([ $p = rwop ] && echo 2 || echo 1).json" > /dev/null ||
            tn_fail "$g: creating the second $p pod"
    done
done
# everything determined: the pods that bind, bound; those that wait, told why
settled() {
    local g="$1" p
    for p in web-0 web-1 web-2 web-3 web-4 web-5 spread-0 spread-1 spread-2 spread-3 fit small \
        rwop-1 prov zoned a100-0 a100-1 a100-2 l4-0; do
        bound $g $p || return 1
    done
    [ "$("$K" get pods -n $g -l app=solo -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' |
        grep -c .)" = 4 ] || return 1
    waits $g huge "insufficient cpu" && waits $g none "didn't find available persistent volumes" &&
        waits $g imm "unbound immediate" && waits $g rwop-2 "ReadWriteOncePod" &&
        waits $g l4-1 "allocate"
}
for g in gs ks; do
    tn_wait 180 settled $g || tn_fail "$g: the outcomes did not settle in 180 s"
done
# the gated pods: still gated, untouched; then ungated, bound
gated_state() { # NS POD
    local n ev
    n=$(node_of "$1" "$2")
    ev=$("$K" get events.events.k8s.io -n "$1" -o json | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["items"]
          if e["regarding"]["name"] == sys.argv[1] and e.get("reason") == "FailedScheduling"))' "$2")
    echo "gated: node=${n:-none} condition=$("$K" get pod "$2" -n "$1" -o jsonpath='{range .status.conditions[?(@.type=="PodScheduled")]}{.status}/{.reason}{end}') failed-events=$ev"
}
for g in gs ks; do
    for i in 0 1; do gated_state $g gated-$i > "$E2E_DIR/$g.gated-$i"; done
    for i in 0 1; do
        "$K" patch pod gated-$i -n $g --type=json -p '[{"op": "remove", "path": "/spec/schedulingGates"}]' \
            > /dev/null || tn_fail "$g: removing gated-$i's gates"
    done
done
for g in gs ks; do
    for i in 0 1; do tn_wait 60 bound $g gated-$i || tn_fail "$g: gated-$i not bound once ungated"; done
done

# the outcomes, node names without the group's prefix
"$K" get pods,pvc,pv,resourceclaims,resourceslices -A -o json > "$E2E_DIR/state.json" || tn_fail "reading the state"
python3 - "$E2E_DIR" <<'PY' || tn_fail "outcomes"
import json, re, sys
d = sys.argv[1]
st = json.load(open(d + "/state.json"))["items"]
def kind(k): return [o for o in st if o["kind"] == k]
devices = {(s["spec"]["pool"]["name"], x["name"]): x["attributes"]["model"]["string"]
           for s in kind("ResourceSlice") for x in s["spec"].get("devices") or []}
pvs = {v["metadata"]["name"]: v for v in kind("PersistentVolume")}
REASONS = (("insufficient cpu", "cpu"), ("anti-affinity", "anti-affinity"),
           ("didn't find available persistent volumes", "no-volume"), ("unbound immediate", "immediate"),
           ("readwriteoncepod", "rwop"), ("allocate", "dra"))
def outcome(g):
    out = []
    pods = {p["metadata"]["name"]: p for p in kind("Pod") if p["metadata"]["namespace"] == g}
    def node(p): return (pods[p]["spec"].get("nodeName") or "").replace(g + "-", "", 1)
    def why(p):
        c = [c for c in pods[p].get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"]
        m = (c[0].get("message") or "").lower() if c else ""
        return ",".join(w for k, w in REASONS if k in m) or "?"
    def zone(n): return n.split("-")[0] if n else "none"
    def line(p, where="any"): # where it is bound: the node, the zone, or anywhere (scoring)
        n = node(p)
        if not n:
            return "%s waits (%s)" % (p, why(p))
        return "%s bound%s" % (p, {"node": " " + n, "zone": " zone " + zone(n), "any": ""}[where])
    for p in sorted(x for x in pods if x.startswith("web-")):
        out.append(line(p))
    out.append(line("huge"))
    solo = [node(p) for p in sorted(pods) if p.startswith("solo-")]
    out.append("solo: %d bound on distinct nodes %s, %d wait (%s)" % (
        sum(1 for n in solo if n), len({n for n in solo if n}) == sum(1 for n in solo if n),
        sum(1 for n in solo if not n), ",".join(sorted({why(p) for p in pods if p.startswith("solo-") and not node(p)}))))
    sp = [zone(node(p)) for p in sorted(pods) if p.startswith("spread-")]
    out.append("spread: %d bound, zone a %d, zone b %d" % (sum(1 for z in sp if z != "none"), sp.count("a"), sp.count("b")))
    for p in ("fit", "small", "none", "imm", "rwop-1", "rwop-2", "zoned", "prov"):
        out.append(line(p, {"fit": "node", "small": "node", "zoned": "zone", "prov": "zone"}.get(p, "any")))
    claims = {c["metadata"]["name"]: c for c in kind("PersistentVolumeClaim") if c["metadata"]["namespace"] == g}
    for c in ("cfit", "csmall", "cnone", "cimm", "crwop", "cprov", "czone"):
        x = claims[c]
        v = x["spec"].get("volumeName") or ""
        sel = x["metadata"].get("annotations", {}).get("volume.kubernetes.io/selected-node", "")
        pv = pvs.get(v)
        host = pv and pv["spec"].get("nodeAffinity", {}).get("required", {}).get("nodeSelectorTerms", [{}])[0].get(
            "matchExpressions", [{}])[0].get("values", [""])[0]
        user = {"cfit": "fit", "csmall": "small", "cprov": "prov"}.get(c)
        out.append("%s %s volume=%s selected-node=%s bind-completed=%s%s" % (
            c, x.get("status", {}).get("phase"), v.replace(g + "-", "", 1).replace("provisioned-" + c, "provisioned"),
            "zone " + zone(sel.replace(g + "-", "", 1)) if sel else "-",
            x["metadata"].get("annotations", {}).get("pv.kubernetes.io/bind-completed", "-"),
            " volume-on-pod's-node=%s" % (host == pods[user]["spec"].get("nodeName")) if user and host else ""))
    if node("prov"):
        sel = claims["cprov"]["metadata"].get("annotations", {}).get("volume.kubernetes.io/selected-node")
        out.append("prov on its claim's selected node: %s" % (sel == pods["prov"]["spec"]["nodeName"]))
    taken = {}
    rcs = {c["metadata"]["name"]: c for c in kind("ResourceClaim") if c["metadata"]["namespace"] == g}
    for p in ("a100-0", "a100-1", "a100-2", "l4-0", "l4-1"):
        c = rcs[p]
        a = c.get("status", {}).get("allocation")
        if not a:
            out.append("%s: claim unallocated; %s" % (p, line(p)))
            continue
        res = a["devices"]["results"]
        sel = a["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
        models = sorted(devices.get((r["pool"], r["device"]), "?") for r in res)
        rf = [x["name"] for x in c["status"].get("reservedFor") or []]
        valid = all(r["driver"] == "gpu.example.com" and r["pool"] == sel and (r["pool"], r["device"]) in devices
                    and (r["pool"], r["device"]) not in taken for r in res)
        for r in res:
            taken[(r["pool"], r["device"])] = p
        out.append("%s: claim allocated %d device(s) %s, valid %s, on the pod's node %s, reserved for %s; %s" % (
            p, len(res), ",".join(models), valid, sel == pods[p]["spec"].get("nodeName"), ",".join(rf),
            line(p, "zone" if p.startswith("l4") else "any")))
    out.append("A100 claims' pods in zones %s" % ",".join(sorted(zone(node(p)) for p in ("a100-0", "a100-1", "a100-2"))))
    for i in (0, 1):
        out.append(open("%s/%s.gated-%d" % (d, g, i)).read().strip().replace("gated:", "gated-%d while gated:" % i))
        out.append("gated-%d once ungated: %s" % (i, "bound" if node("gated-%d" % i) else "unbound"))
    return out
want = ["web-%d bound" % i for i in range(6)] + [
    "huge waits (cpu)",
    "solo: 4 bound on distinct nodes True, 1 wait (anti-affinity)",
    "spread: 4 bound, zone a 2, zone b 2",
    "fit bound a-0", "small bound a-1", "none waits (no-volume)", "imm waits (immediate)",
    "rwop-1 bound", "rwop-2 waits (rwop)", "zoned bound zone b", "prov bound zone b",
    "cfit Bound volume=big selected-node=- bind-completed=yes volume-on-pod's-node=True",
    "csmall Bound volume=small selected-node=- bind-completed=yes volume-on-pod's-node=True",
    "cnone Pending volume= selected-node=- bind-completed=-",
    "cimm Pending volume= selected-node=- bind-completed=-",
    "crwop Bound volume=rwop selected-node=- bind-completed=yes",
    "cprov Bound volume=provisioned selected-node=zone b bind-completed=yes volume-on-pod's-node=True",
    "czone Bound volume=zone selected-node=- bind-completed=yes",
    "prov on its claim's selected node: True",
    "a100-0: claim allocated 1 device(s) A100, valid True, on the pod's node True, reserved for a100-0; a100-0 bound",
    "a100-1: claim allocated 1 device(s) A100, valid True, on the pod's node True, reserved for a100-1; a100-1 bound",
    "a100-2: claim allocated 1 device(s) A100, valid True, on the pod's node True, reserved for a100-2; a100-2 bound",
    "l4-0: claim allocated 1 device(s) L4, valid True, on the pod's node True, reserved for l4-0; l4-0 bound zone b",
    "l4-1: claim unallocated; l4-1 waits (dra)",
    "A100 claims' pods in zones a,a,b",
    "gated-0 while gated: node=none condition=False/SchedulingGated failed-events=0", "gated-0 once ungated: bound",
    "gated-1 while gated: node=none condition=False/SchedulingGated failed-events=0", "gated-1 once ungated: bound",
]
outs = {g: outcome(g) for g in ("gs", "ks")}
ok = True
for g, o in outs.items():
    open("%s/outcome.%s" % (d, g), "w").write("\n".join(o) + "\n")
    for k, w in enumerate(want):
        if k >= len(o) or o[k] != w:
            print("FAIL: %s: %r, want %r" % (g, o[k] if k < len(o) else None, w)); ok = False
    if len(o) != len(want):
        print("FAIL: %s: %d outcomes, want %d" % (g, len(o), len(want))); ok = False
agree = sum(1 for a, b in zip(outs["gs"], outs["ks"]) if a == b)
for a, b in zip(outs["gs"], outs["ks"]):
    if a != b:
        print("DIFFER gpusched: %s\n       kube-scheduler: %s" % (a, b))
for l in outs["gs"]:
    print("  " + l)
print("gpusched and kube-scheduler agree on %d of %d outcomes (want all %d)" % (agree, len(outs["gs"]), len(want)))
if agree != len(want) or len(outs["ks"]) != len(want):
    ok = False
sys.exit(0 if ok else 1)
PY
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || tn_fail "gpusched died"
tn_done
