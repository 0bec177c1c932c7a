#!/usr/bin/env bash
# DRA on ResourceSlices shaped as NVIDIA's DRA driver (gpu.nvidia.com) publishes them, the stock
# kube-scheduler v1.37.2 and gpusched in turn on the same objects, and the same outcome. Three
# Ready nodes carry the slices of tests/data/dra/nvidia (as the driver would publish them; no
# driver runs): nv-h100-0 with eight whole H100s, gpu-7 tainted gpu.nvidia.com/xid=79
# NoSchedule as the driver taints a GPU after a fatal XID; nv-a100-mig-0 with an A100 in static
# MIG (3g.40gb, 2g.20gb, 1g.10gb instances, memorySliceN capacities) and a whole A100 gpu-1;
# nv-a100-dyn-0 with two partitionable A100s (a counter set each: multiprocessors, engines,
# memory and memory-slice-0..7; the whole GPU and every MIG placement consume from it). A
# DeviceTaintRule (resource.k8s.io/v1) taints nv-a100-mig-0's gpu-1 example.com/maintenance
# NoExecute. NVIDIA's DeviceClasses gpu.nvidia.com and mig.nvidia.com select by type.
# Each scheduler gets a fresh set of ResourceClaims and pods, in three waves:
#   1. eight H100 claims (productName): seven bound, the eighth pending (only gpu-7 is left, and
#      it is tainted; which of the eight waits is the scheduler's order); a pair of 1g.10gb+me on one GPU (matchAttribute parentUUID): pending, a
#      GPU has one JPEG and one OFA engine; the static 3g.40gb; a whole A100 of nv-a100-mig-0:
#      pending (the rule's taint);
#   2. an H100 claim tolerating gpu.nvidia.com/xid: gpu-7; an A100 claim tolerating the rule's
#      taint: gpu-1; two 4g.40gb: one on each partitionable GPU (its only placement is at 0);
#   3. a third 4g.40gb: pending; three 3g.40gb: two bound (at 4, beside each 4g.40gb: 56 + 42 of
#      98 multiprocessors), the third pending (no memory slice left);
#   4. extended resources backed by a DeviceClass (DRAExtendedResource): the class
#      small-mig.example.com names extendedResourceName example.com/small-mig and selects
#      1g.10gb MIG devices; a pod with limits example.com/small-mig: 1 (no ResourceClaim, and no
#      node has the resource in its allocatable) gets the one left, nv-a100-mig-0's static
#      gpu-0-mig-1g10gb-19-6, through a claim the scheduler makes (annotation
#      resource.kubernetes.io/extended-resource-claim, the pod its controller owner, a request
#      container-0-request-1 of one device of the class), and the pod's
#      status.extendedResourceClaimStatus maps its container to that request; a second such pod
#      stays pending.
# Both schedulers must bind the same pods (the third wave's 3g.40gb: the same count), allocate
# the same devices where only one can fit, every allocation a device of its pod's node, none
# twice, no counter set over its counters; gpusched's reason for the tainted H100 names the
# taint.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/tenancy.sh"
DATA="$E2E_SRC/../data/dra/nvidia"
"$K" api-resources --api-group=resource.k8s.io 2>/dev/null | grep -q devicetaintrules ||
    skip "the API server does not serve resource.k8s.io/v1 devicetaintrules"
show() { echo "  $*"; }

for n in nv-h100-0 nv-a100-mig-0 nv-a100-dyn-0; do
    "$K" create -f - > /dev/null <<Y || exit 1
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$n",
 "labels": {"kubernetes.io/hostname": "$n", "kubernetes.io/os": "linux"}}}
Y
    "$K" patch node $n --subresource=status --type=merge -p '{"status": {
      "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
      "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
      "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                      "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                      "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}' > /dev/null || exit 1
done
for f in deviceclasses slices-h100 slices-a100-static-mig slices-a100-dynamic-mig; do
    "$K" create -f "$DATA/$f.json" > /dev/null || { tn_fail "kubectl create $f.json"; tn_done; }
done
"$K" create -f - > /dev/null <<'Y' || { tn_fail "creating the DeviceTaintRule"; tn_done; }
{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "maintenance"},
 "spec": {"deviceSelector": {"driver": "gpu.nvidia.com", "pool": "nv-a100-mig-0", "device": "gpu-1"},
          "taint": {"key": "example.com/maintenance", "value": "planned", "effect": "NoExecute"}}}
Y
"$K" create -f - > /dev/null <<'Y' || { tn_fail "creating the DeviceClass of example.com/small-mig"; tn_done; }
{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "small-mig.example.com"},
 "spec": {"extendedResourceName": "example.com/small-mig",
          "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]}}
Y
show "$("$K" get resourceslices --no-headers | wc -l) ResourceSlices of gpu.nvidia.com on 3 nodes," \
    "DeviceClasses $("$K" get deviceclasses -o name | tr '\n' ' ')and DeviceTaintRule maintenance"

# objs NS SCHEDULER WAVE: the wave's claims and pods (a List) on stdout
objs() {
    python3 - "$@" <<'P'
import json, sys
ns, sched, wave = sys.argv[1], sys.argv[2], int(sys.argv[3])
A = "device.attributes['gpu.nvidia.com']"
def sel(e): return [{"cel": {"expression": e}}]
def exactly(cls, expr=None, count=None, tol=None):
    e = {"deviceClassName": cls}
    if expr: e["selectors"] = sel(expr)
    if count: e["count"] = count
    if tol: e["tolerations"] = tol
    return {"requests": [{"name": "gpu", "exactly": e}]}
H100 = A + ".productName == 'NVIDIA H100 80GB HBM3'"
A100 = A + ".productName == 'NVIDIA A100-SXM4-80GB'"
prof = lambda p: A + ".profile == '%s'" % p
waves = {1: [("h100-%d" % i, exactly("gpu.nvidia.com", H100), None) for i in range(8)] + [
             ("me-pair", dict(exactly("mig.nvidia.com", prof("1g.10gb+me"), 2),
                              constraints=[{"requests": ["gpu"], "matchAttribute": "gpu.nvidia.com/parentUUID"}]),
              "nv-a100-dyn-0"),
             ("mig-3g", exactly("mig.nvidia.com", prof("3g.40gb")), "nv-a100-mig-0"),
             ("a100-whole", exactly("gpu.nvidia.com", A100), "nv-a100-mig-0")],
         2: [("h100-tol", exactly("gpu.nvidia.com", H100, tol=[{"key": "gpu.nvidia.com/xid", "operator": "Exists"}]), None),
             ("a100-tol", exactly("gpu.nvidia.com", A100, tol=[{"key": "example.com/maintenance",
                                   "operator": "Equal", "value": "planned", "effect": "NoExecute"}]), "nv-a100-mig-0"),
             ("m4-a", exactly("mig.nvidia.com", prof("4g.40gb")), "nv-a100-dyn-0"),
             ("m4-b", exactly("mig.nvidia.com", prof("4g.40gb")), "nv-a100-dyn-0")],
         3: [("m4-c", exactly("mig.nvidia.com", prof("4g.40gb")), "nv-a100-dyn-0")] +
            [("m3-%s" % x, exactly("mig.nvidia.com", prof("3g.40gb")), "nv-a100-dyn-0") for x in "abc"],
         4: [("ext-a", None, None), ("ext-b", None, None)]}
items = []
for name, devices, node in waves[wave]:
    if devices is None: # extended resources, no claim of its own
        items.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                      "spec": {"schedulerName": sched, "containers": [{"name": "cuda",
                               "image": "registry.invalid/cuda:1", "resources": {
                                   "requests": {"cpu": "1"},
                                   "limits": {"cpu": "1", "example.com/small-mig": "1"}}}]}})
        continue
    items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": name, "namespace": ns}, "spec": {"devices": devices}})
    spec = {"schedulerName": sched, "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            "containers": [{"name": "c", "image": "registry.invalid/cuda:1",
                            "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    items.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                  "spec": spec})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
P
}
# settled NS BOUND UNSCHED NAME...: BOUND pods of NS have a node, UNSCHED others are found
# unschedulable, among them each NAME
settled() {
    local ns="$1" want="$2" nun="$3"
    shift 3
    "$K" get pods -n "$ns" -o json | python3 -c '
import json, sys
pods = {p["metadata"]["name"]: p for p in json.load(sys.stdin)["items"]}
want, nun, pending = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
bound = sum(1 for p in pods.values() if p["spec"].get("nodeName"))
def unsched(p):
    return not p["spec"].get("nodeName") and any(
        c["type"] == "PodScheduled" and c["status"] == "False"
        for c in (p.get("status") or {}).get("conditions") or [])
ok = bound == want and sum(1 for p in pods.values() if unsched(p)) == nun
sys.exit(0 if ok and all(n in pods and unsched(pods[n]) for n in pending) else 1)' "$want" "$nun" "$@"
}
# phase NS SCHEDULER-NAME: the three waves under the scheduler already started
phase() {
    local ns="$1" sched="$2"
    "$K" create namespace "$ns" > /dev/null
    objs "$ns" "$sched" 1 | "$K" create -f - > /dev/null || { tn_fail "$ns: wave 1"; return 1; }
    tn_wait 60 settled "$ns" 8 3 me-pair a100-whole ||
        { tn_fail "$ns: wave 1 did not settle (7 H100s and mig-3g bound; an H100, me-pair, a100-whole unschedulable)"; return 1; }
    objs "$ns" "$sched" 2 | "$K" create -f - > /dev/null || { tn_fail "$ns: wave 2"; return 1; }
    tn_wait 60 settled "$ns" 12 3 me-pair a100-whole ||
        { tn_fail "$ns: wave 2 did not settle (h100-tol, a100-tol, m4-a, m4-b bound)"; return 1; }
    objs "$ns" "$sched" 3 | "$K" create -f - > /dev/null || { tn_fail "$ns: wave 3"; return 1; }
    tn_wait 60 settled "$ns" 14 5 me-pair a100-whole m4-c ||
        { tn_fail "$ns: wave 3 did not settle (two 3g.40gb bound, m4-c and one unschedulable)"; return 1; }
    objs "$ns" "$sched" 4 | "$K" create -f - > /dev/null || { tn_fail "$ns: wave 4"; return 1; }
    tn_wait 60 settled "$ns" 15 6 me-pair a100-whole m4-c ||
        { tn_fail "$ns: wave 4 did not settle (one pod of extended resources bound, one unschedulable)"; return 1; }
    "$K" get pods -n "$ns" -o json > "$E2E_DIR/$ns-pods.json"
    "$K" get resourceclaims -n "$ns" -o json > "$E2E_DIR/$ns-claims.json"
}
# the first scheduler's claims and pods go before the second starts (finalizers dropped: no
# resourceclaim controller runs here)
clear_ns() {
    "$K" delete pods --all -n "$1" --grace-period=0 --force --wait=false > /dev/null 2>&1
    "$K" get resourceclaims -n "$1" -o json | python3 -c '
import json, sys
l = json.load(sys.stdin)
for c in l["items"]:
    c["metadata"].pop("finalizers", None)
json.dump(l, sys.stdout)' | "$K" replace -f - > /dev/null 2>&1
    "$K" delete resourceclaims --all -n "$1" --wait=false > /dev/null 2>&1
    gone() { [ "$("$K" get pods,resourceclaims -n "$1" --no-headers 2>/dev/null | wc -l)" = 0 ]; }
    tn_wait 60 gone "$1" || tn_fail "the claims and pods of $1 did not go"
}

# 1. the stock kube-scheduler
printf 'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nclientConnection:\n  kubeconfig: %s\n' \
    "$E2E_DIR/admin.kubeconfig" > "$E2E_DIR/ks.yaml"
"$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0 -v 2 \
    > "$E2E_DIR/kube-scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/kube-scheduler.pid"
phase ks default-scheduler
kill "$(cat "$E2E_DIR/kube-scheduler.pid")"
clear_ns ks

# 2. gpusched, its RBAC as deploy/ ships it (DeviceTaintRules read)
tn_start || tn_done
phase gs gpusched
waiting=$("$K" get pods -n gs -o json | python3 -c '
import json, sys
print(" ".join(p["metadata"]["name"] for p in json.load(sys.stdin)["items"]
               if p["metadata"]["name"].startswith("h100-") and not p["spec"].get("nodeName")))')
msg=$("$K" get pod -n gs "${waiting%% *}" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')
show "gpusched on ${waiting:-none}: $msg"
case "$msg" in *taint*) ;; *) tn_fail "gpusched's reason for the waiting H100 claim does not name the taint" ;; esac

# 3. the outcomes compared
python3 - "$E2E_DIR" "$DATA" <<'P' || tn_fail "the outcomes differ or are wrong"
import json, sys
d, data = sys.argv[1], sys.argv[2]
devs, sets = {}, {}
for f in ("slices-h100", "slices-a100-static-mig", "slices-a100-dynamic-mig"):
    for s in json.load(open("%s/%s.json" % (data, f)))["items"]:
        pool = s["spec"]["pool"]["name"]
        for cs in s["spec"].get("sharedCounters") or []:
            sets[(pool, cs["name"])] = {k: int(v["value"]) for k, v in cs["counters"].items()}
        for x in s["spec"].get("devices") or []:
            devs[(pool, x["name"])] = x
ok = True
out = {}
for ns, who in (("ks", "kube-scheduler"), ("gs", "gpusched")):
    pods = {p["metadata"]["name"]: p for p in json.load(open("%s/%s-pods.json" % (d, ns)))["items"]}
    claims = {c["metadata"]["name"]: c for c in json.load(open("%s/%s-claims.json" % (d, ns)))["items"]}
    res, used, taken = {}, {}, set()
    for name, p in sorted(pods.items()):
        node = p["spec"].get("nodeName")
        claim = claims.get(name)
        if name.startswith("ext-"): # the claim the scheduler made for it
            made = [c for c in claims.values() if any(
                o.get("uid") == p["metadata"]["uid"] and o.get("controller")
                for o in c["metadata"].get("ownerReferences") or [])]
            claim = made[0] if made else {}
            ers = (p.get("status") or {}).get("extendedResourceClaimStatus")
            if node:
                ann = (claim.get("metadata", {}).get("annotations") or {}).get(
                    "resource.kubernetes.io/extended-resource-claim")
                reqs = [(r["name"], r["exactly"]["deviceClassName"], r["exactly"].get("count"))
                        for r in claim.get("spec", {}).get("devices", {}).get("requests", [])]
                want_map = [{"containerName": "cuda", "resourceName": "example.com/small-mig",
                             "requestName": "container-0-request-1"}]
                print("  %s: %s made resourceclaim %s (annotation %s, requests %s), pod status %s" %
                      (who, name, claim.get("metadata", {}).get("name"), ann, reqs, ers))
                if len(made) != 1 or ann != "true" or reqs != [("container-0-request-1", "small-mig.example.com", 1)] \
                        or not ers or ers.get("resourceClaimName") != claim["metadata"]["name"] \
                        or ers.get("requestMappings") != want_map:
                    print("FAIL: %s: %s: the claim of its extended resources or its pod status" % (who, name)); ok = False
            elif made:
                print("FAIL: %s: %s is pending but has a claim %s" % (who, name, [c["metadata"]["name"] for c in made])); ok = False
        al = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
        got = sorted(r["device"] for r in al)
        res[name] = (node, got)
        if bool(node) != bool(al):
            print("FAIL: %s: %s bound to %s with allocation %s" % (who, name, node, got)); ok = False
        for r in al:
            key = (r["pool"], r["device"])
            if r["driver"] != "gpu.nvidia.com" or r["pool"] != node or key not in devs or key in taken:
                print("FAIL: %s: %s: result %s (pod on %s)" % (who, name, r, node)); ok = False
            taken.add(key)
            for cc in devs.get(key, {}).get("consumesCounters") or []:
                u = used.setdefault((r["pool"], cc["counterSet"]), {})
                for k, v in cc["counters"].items():
                    u[k] = u.get(k, 0) + int(v["value"])
    for k, u in used.items():
        for c, v in u.items():
            if v > sets[k][c]:
                print("FAIL: %s: counter set %s/%s counter %s: %d of %d" % (who, k[0], k[1], c, v, sets[k][c])); ok = False
    out[who] = res
    print("  %s:" % who)
    for name, (node, got) in sorted(res.items()):
        print("    %-10s %s" % (name, "%s %s" % (node, " ".join(got)) if node else "pending"))
ks, gs = out["kube-scheduler"], out["gpusched"]
for name in sorted(ks):
    if name.startswith("m3-") or name.startswith("ext-") or name.startswith("h100-") and name != "h100-tol":
        continue
    if bool(ks[name][0]) != bool(gs[name][0]):
        print("FAIL: %s: kube-scheduler %s, gpusched %s" % (name, ks[name][0] or "pending", gs[name][0] or "pending")); ok = False
for prefix, want in (("m3-", 2), ("h100-", 8), ("ext-", 1)):
    count = lambda r: sum(1 for n, v in r.items() if n.startswith(prefix) and v[0])
    if count(ks) != want or count(gs) != want:
        print("FAIL: %s* bound: kube-scheduler %d, gpusched %d, want %d" % (prefix, count(ks), count(gs), want)); ok = False
# where one device only can fit, both took it
for name, dev in (("h100-tol", ["gpu-7"]), ("a100-tol", ["gpu-1"]), ("mig-3g", ["gpu-0-mig-3g40gb-9-0"]),
                  ("ext-", ["gpu-0-mig-1g10gb-19-6"])):
    for who, r in out.items():
        if name == "ext-":
            got = [v[1] for n, v in r.items() if n.startswith("ext-") and v[0]]
            if got != [dev]:
                print("FAIL: %s: the pod of extended resources got %s, want %s" % (who, got, dev)); ok = False
            continue
        if r[name][1] != dev:
            print("FAIL: %s: %s got %s, want %s" % (who, name, r[name][1], dev)); ok = False
for who, r in out.items():
    if sorted(r["m4-a"][1] + r["m4-b"][1]) != ["gpu-0-mig-4g40gb-5-0", "gpu-1-mig-4g40gb-5-0"]:
        print("FAIL: %s: the two 4g.40gb: %s %s" % (who, r["m4-a"][1], r["m4-b"][1])); ok = False
    if any(r["h100-%d" % i][1] == ["gpu-7"] for i in range(8) if "h100-%d" % i in r):
        print("FAIL: %s: an H100 claim without a toleration got the tainted gpu-7" % who); ok = False
print("  the same pods bound by both: %s" % ok)
sys.exit(0 if ok else 1)
P
tn_done
