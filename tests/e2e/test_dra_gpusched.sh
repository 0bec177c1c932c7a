#!/usr/bin/env bash
# DRA allocated by gpusched itself on the real control plane, from the ResourceSlices the agent
# publishes. Two nodes each run the gpusched agent as the DRA driver gpu.gpusched.io (agent run
# --dra) on fake GPUs; deploy/dra/ gives the DeviceClasses gpu.gpusched.io and mig.gpusched.io
# (they select by type). dra-0 (--dra-dynamic-mig) has a partitionable A100-80GB (GPU 0, in MIG
# mode without instances: a counter set of 7 compute slices and 8 memory slices, the whole GPU
# and its MIG placements consuming them) and a GPU 1 with static MIG 3g.40gb instances at 0 and
# 4; dra-1 has two whole A100-80GB, one H100-80GB, one L40S-48GB and one RTX4090-24GB. Pods with
# schedulerName gpusched name ResourceClaims: a whole H100 (selector on productName), a 3g.40gb
# MIG device, a dynamic 2g.20gb placement, two whole GPUs with matchAttribute productName, and a
# firstAvailable claim whose first alternative (a 7g.80gb placement) cannot fit the counters
# left. Each claim's status.allocation (results, nodeSelector) and reservedFor are checked in
# the API, each pod is bound to its allocation's node, every result is a device the agent
# published, no device is in two claims and no two placements of a GPU overlap. A claim whose
# selector uses .find() (valid CEL that gpusched does not run) stays pending, and
# /debug/pending, gpusched explain and the Event name the expression; a GPUQueue whose limit is
# 1 nvidia.com/gpu keeps a pod claiming 2 whole GPUs pending for quota, with the counts. Then
# claimed devices of bound pods count as the queue's use: a pod of team-q whose claim gets one
# whole GPU binds, a second one-GPU claim's pod stays pending for quota with "used 1 +
# requested 1 > limit 1", and binds once the first pod is deleted.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/tenancy.sh"
"$K" api-resources --api-group=resource.k8s.io 2>/dev/null | grep -q resourceclaims ||
    skip "the API server does not serve resource.k8s.io/v1"
tn_crds || exit 1
show() { echo "  $*"; }

for n in dra-0 dra-1; do
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

# the agent's identity and RBAC as deploy/ ships them (agent.yaml, and deploy/dra/ for DRA:
# its DeviceClasses and the ClusterRole its ServiceAccount is bound to)
tn_dra_agent_user || { tn_fail "the agent's DRA identity and deploy/dra/"; tn_done; }
"$K" get deviceclass gpu.gpusched.io mig.gpusched.io > /dev/null ||
    { tn_fail "DeviceClasses gpu.gpusched.io and mig.gpusched.io not there"; tn_done; }

# the agents, the DRA driver on each node, on fake GPUs
python3 - "$E2E_DIR" <<'G' || exit 1
import json, sys
d = sys.argv[1]
json.dump({"gpus": [{"model": "A100-80GB", "mig": True, "instances": []},
                    {"model": "A100-80GB", "mig": True,
                     "instances": [{"profile": "3g.40gb", "start": 0}, {"profile": "3g.40gb", "start": 4}]}]},
          open(d + "/gpus-dra-0.json", "w"))
json.dump({"gpus": [{"model": "A100-80GB"}, {"model": "A100-80GB"}, {"model": "H100-80GB"},
                    {"model": "L40S-48GB"}, {"model": "RTX4090-24GB"}]}, open(d + "/gpus-dra-1.json", "w"))
G
for n in dra-0 dra-1; do
    mkdir -p "$E2E_DIR/$n/plugins" "$E2E_DIR/$n/registry" "$E2E_DIR/$n/cdi"
    dyn=""
    [ $n = dra-0 ] && dyn=--dra-dynamic-mig
    "$GS" --log-level info agent run --fake "$E2E_DIR/gpus-$n.json" --node $n --interval 0.5 \
        --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port 0 --auto-cordon false \
        --dra $dyn --dra-plugins-dir "$E2E_DIR/$n/plugins" --dra-registry-dir "$E2E_DIR/$n/registry" \
        --cdi-dir "$E2E_DIR/$n/cdi" > "$E2E_DIR/agent-$n.log" 2>&1 &
    echo $! > "$E2E_DIR/agent-$n.pid"
done
# pools NODE DEVICE...: the node's slices form one complete pool (one generation, every slice
# there) with these devices among them
pools() {
    local n="$1"
    shift
    "$K" get resourceslices -o json --field-selector "spec.driver=gpu.gpusched.io,spec.nodeName=$n" |
        python3 -c '
import json, sys
items, node, want = json.load(sys.stdin)["items"], sys.argv[1], set(sys.argv[2:])
names = {d["name"] for s in items for d in s["spec"].get("devices") or []}
ok = items and len({s["spec"]["pool"]["generation"] for s in items}) == 1
ok = ok and {s["spec"]["pool"]["resourceSliceCount"] for s in items} == {len(items)}
ok = ok and all(s["spec"]["pool"]["name"] == node for s in items) and want <= names
sys.exit(0 if ok else 1)' "$n" "$@"
}
tn_wait 30 pools dra-0 gpu-0 gpu-0-part-2g-20gb-0 gpu-0-part-7g-80gb-0 gpu-1-mig-3g-40gb-0 \
    gpu-1-mig-3g-40gb-4 ||
    { tn_fail "the agent of dra-0 did not publish its pool"; tail -20 "$E2E_DIR/agent-dra-0.log"; tn_done; }
tn_wait 30 pools dra-1 gpu-0 gpu-1 gpu-2 gpu-3 gpu-4 ||
    { tn_fail "the agent of dra-1 did not publish its pool"; tail -20 "$E2E_DIR/agent-dra-1.log"; tn_done; }
"$K" get resourceslices -o json > "$E2E_DIR/slices.json"
python3 - "$E2E_DIR/slices.json" <<'P'
import json, sys
by = {}
for s in json.load(open(sys.argv[1]))["items"]:
    b = by.setdefault(s["spec"]["pool"]["name"], {"slices": 0, "devices": [], "sets": []})
    b["slices"] += 1
    b["devices"] += [d["name"] for d in s["spec"].get("devices") or []]
    b["sets"] += [c["name"] for c in s["spec"].get("sharedCounters") or []]
for node, b in sorted(by.items()):
    parts = [n for n in b["devices"] if "-part-" in n]
    print("  the agent of %s published %d ResourceSlices: %d devices (%d partitionable placements), "
          "counter sets %s: %s" % (node, b["slices"], len(b["devices"]), len(parts), b["sets"],
                                  " ".join(sorted(n for n in b["devices"] if "-part-" not in n))))
P

# the claims and the pods
python3 - "$E2E_DIR" <<'P' || exit 1
import json, sys
d = sys.argv[1]
A = "device.attributes['gpu.gpusched.io']"
def exactly(cls, sel=None, count=None):
    e = {"deviceClassName": cls}
    if sel: e["selectors"] = [{"cel": {"expression": sel}}]
    if count: e["count"] = count
    return e
claims = {
  "whole": {"requests": [{"name": "gpu", "exactly": exactly("gpu.gpusched.io", A + ".productName == 'H100-80GB'")}]},
  "mig": {"requests": [{"name": "mig", "exactly": exactly("mig.gpusched.io", A + ".profile == '3g.40gb'")}]},
  "dyn": {"requests": [{"name": "mig", "exactly": exactly("mig.gpusched.io",
          A + ".dynamic == true && " + A + ".profile in ['2g.20gb']")}]},
  "pair": {"requests": [{"name": "gpus", "exactly": exactly("gpu.gpusched.io", None, 2)}],
           "constraints": [{"requests": ["gpus"], "matchAttribute": "gpu.gpusched.io/productName"}]},
  "first": {"requests": [{"name": "acc", "firstAvailable": [
            {"name": "big", "deviceClassName": "mig.gpusched.io",
             "selectors": [{"cel": {"expression": A + ".profile == '7g.80gb'"}}]},
            {"name": "small", "deviceClassName": "mig.gpusched.io",
             "selectors": [{"cel": {"expression": A + ".profile == '1g.10gb' && " +
                            "device.capacity['gpu.gpusched.io'].memory.compareTo(quantity('9Gi')) >= 0"}}]}]}]},
  "bad": {"requests": [{"name": "gpu", "exactly": exactly("gpu.gpusched.io",
          A + ".productName.find('A100') == 'A100'")}]},
}
def claim(ns, name, devices):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns}, "spec": {"devices": devices}}
def pod(ns, name, claim):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": "gpusched",
                     "resourceClaims": [{"name": "acc", "resourceClaimName": claim}],
                     "containers": [{"name": "c", "image": "registry.invalid/none:1",
                                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                   "claims": [{"name": "acc"}]}}]}}
for n, dv in claims.items():
    json.dump({"apiVersion": "v1", "kind": "List", "items": [claim("ai", "c-" + n, dv), pod("ai", "p-" + n, "c-" + n)]},
              open(d + "/dra-%s.json" % n, "w"))
json.dump({"apiVersion": "v1", "kind": "List", "items": [
    claim("team-q", "c-two", {"requests": [{"name": "gpus", "exactly": exactly("gpu.gpusched.io", None, 2)}]}),
    pod("team-q", "p-two", "c-two")]}, open(d + "/dra-quota.json", "w"))
for n in ("one-a", "one-b"):
    json.dump({"apiVersion": "v1", "kind": "List", "items": [
        claim("team-q", "c-" + n, {"requests": [{"name": "gpu", "exactly": exactly("gpu.gpusched.io")}]}),
        pod("team-q", "p-" + n, "c-" + n)]}, open(d + "/dra-%s.json" % n, "w"))
P
"$K" create namespace ai > /dev/null
"$K" create namespace team-q > /dev/null
"$K" apply -f - > /dev/null <<'Q' || exit 1
apiVersion: gpusched.io/v1alpha1
kind: GPUQueue
metadata: {name: team-q}
spec:
  namespaces: [team-q]
  deserved: {nvidia.com/gpu: 1}
  limit: {nvidia.com/gpu: 1}
Q
tn_start || exit 1
bound() { [ -n "$("$K" get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}' 2>/dev/null)" ]; }
for n in whole mig dyn pair first; do
    "$K" create -f "$E2E_DIR/dra-$n.json" > /dev/null || tn_fail "create claim and pod $n"
    tn_wait 30 bound ai p-$n || tn_fail "pod ai/p-$n not bound"
done
"$K" create -f "$E2E_DIR/dra-bad.json" > /dev/null || tn_fail "create claim and pod bad"
"$K" create -f "$E2E_DIR/dra-quota.json" > /dev/null || tn_fail "create claim and pod team-q"
sleep 3
"$K" get resourceclaims -A -o json > "$E2E_DIR/claims.json"
"$K" get pods -A -o json > "$E2E_DIR/pods.json"
curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" > "$E2E_DIR/pending.json" || tn_fail "/debug/pending"
"$GS" explain --kubeconfig "$E2E_DIR/scheduler.kubeconfig" --output json > "$E2E_DIR/explain.json" ||
    tn_fail "gpusched explain failed"
"$K" get events -A -o json > "$E2E_DIR/events.json"
python3 - "$E2E_DIR" <<'P' || TN_OK=1
import json, sys
d = sys.argv[1]
ok = True
def fail(m):
    global ok
    print("FAIL: " + m); ok = False
claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in json.load(open(d + "/claims.json"))["items"]}
pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in json.load(open(d + "/pods.json"))["items"]}
devs = {}
for s in json.load(open(d + "/slices.json"))["items"]:
    for x in s["spec"].get("devices") or []:
        devs[(s["spec"]["pool"]["name"], x["name"])] = x
want = {"whole": lambda r: [x["device"] for x in r] == ["gpu-2"] and r[0]["pool"] == "dra-1",
        "mig": lambda r: len(r) == 1 and r[0]["device"].startswith("gpu-1-mig-3g-40gb-"),
        "dyn": lambda r: len(r) == 1 and r[0]["device"].startswith("gpu-0-part-2g-20gb-"),
        "pair": lambda r: sorted(x["device"] for x in r) == ["gpu-0", "gpu-1"] and r[0]["pool"] == "dra-1",
        "first": lambda r: len(r) == 1 and r[0]["request"] == "acc/small" and "1g-10gb" in r[0]["device"]}
taken = {}
for n, check in want.items():
    c = claims.get(("ai", "c-" + n)); p = pods.get(("ai", "p-" + n))
    a = (c or {}).get("status", {}).get("allocation")
    if not a:
        fail("claim ai/c-%s has no status.allocation" % n); continue
    res = a["devices"]["results"]
    node = a["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
    print("ok   ai/c-%s allocated on %s: %s" % (n, node, ", ".join("%s=%s/%s/%s" % (x["request"], x["driver"], x["pool"], x["device"]) for x in res)))
    if not check(res):
        fail("ai/c-%s: unexpected devices %s" % (n, res))
    rf = c["status"].get("reservedFor") or []
    if [(x["resource"], x["name"], x["uid"]) for x in rf] != [("pods", "p-" + n, p["metadata"]["uid"])]:
        fail("ai/c-%s: reservedFor %s, want pod p-%s" % (n, rf, n))
    else:
        print("ok   ai/c-%s reservedFor pods/p-%s (uid %s)" % (n, n, p["metadata"]["uid"]))
    if p["spec"].get("nodeName") != node:
        fail("ai/p-%s bound to %s, its claim is allocated on %s" % (n, p["spec"].get("nodeName"), node))
    else:
        print("ok   ai/p-%s bound to %s" % (n, node))
    for x in res:
        k = (x["pool"], x["device"])
        if x["driver"] != "gpu.gpusched.io" or k not in devs:
            fail("ai/c-%s: result %s is not a published device" % (n, x))
        if k in taken:
            fail("device %s/%s in two claims: %s and %s" % (k[0], k[1], taken[k], n))
        taken[k] = n
# counters: the placements taken on dra-0 gpu-0 (and the whole GPU) never overlap
slices = {}
for (pool, name), n in taken.items():
    if pool != "dra-0" or not (name == "gpu-0" or name.startswith("gpu-0-part-")):
        continue
    use = devs[(pool, name)]["consumesCounters"][0]["counters"]
    for k in use:
        if k.startswith("memory-slice-"):
            if k in slices:
                fail("dra-0 gpu-0 %s used by %s and %s" % (k, slices[k], name))
            slices[k] = name
print("ok   no device in two claims; dra-0 GPU 0's placements use memory slices %s without overlap" % sorted(slices))
# the unsupported expression and the quota
def entries(src):
    return {(r["namespace"], r["pod"]): r for r in json.load(open(d + "/" + src))}
for src in ("pending.json", "explain.json"):
    rep = entries(src)
    r = rep.get(("ai", "p-bad"))
    if not r or r["reason"] != "dra" or "productName.find('A100')" not in r["message"] or \
            "unsupported CEL: function 'find'" not in r["message"]:
        fail("%s: ai/p-bad: %s" % (src, r))
    else:
        print("ok   %s ai/p-bad: %s: %s" % (src, r["reason"], r["message"]))
    r = rep.get(("team-q", "p-two"))
    if not r or r["reason"] != "quota" or "queue team-q: nvidia.com/gpu used 0 + requested 2 > limit 1" not in r["message"]:
        fail("%s: team-q/p-two: %s" % (src, r))
    else:
        print("ok   %s team-q/p-two: %s: %s" % (src, r["reason"], r["message"]))
for key in (("ai", "p-bad"), ("team-q", "p-two")):
    if pods[key]["spec"].get("nodeName"):
        fail("%s/%s was bound" % key)
    c = claims[(key[0], "c-" + key[1][2:])]
    if c.get("status", {}).get("allocation"):
        fail("claim of %s/%s was allocated" % key)
def note(e): return e.get("note") or e.get("message") or ""
ev = [e for e in json.load(open(d + "/events.json"))["items"] if e.get("reason") == "FailedScheduling"
      and (e.get("regarding") or e.get("involvedObject") or {}).get("name") == "p-bad"]
if not any("unsupported CEL" in note(e) for e in ev):
    fail("no FailedScheduling Event of ai/p-bad names the unsupported expression")
else:
    print("ok   FailedScheduling Event of ai/p-bad: %s" % note(ev[-1]))
sys.exit(0 if ok else 1)
P

# claimed devices of bound pods are the queue's use: p-one-a's claim takes team-q's one GPU,
# p-one-b's claim is then refused for quota with used 1, and admitted once p-one-a is gone
verdict() { # NS POD: the pod's entry in /debug/pending as "reason<TAB>message", or nothing
    curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" | python3 -c '
import json, sys
r = [r for r in json.load(sys.stdin) if (r["namespace"], r["pod"]) == (sys.argv[1], sys.argv[2])]
print("%s\t%s" % (r[0]["reason"], r[0]["message"]) if r else "")' "$1" "$2"
}
# allocated NS CLAIM POD: the claim is allocated and reserved for the pod, which is bound to the
# allocation's node; prints the claim's devices
allocated() {
    "$K" get resourceclaim -n "$1" "$2" -o json > "$E2E_DIR/claim.json" &&
        "$K" get pod -n "$1" "$3" -o json > "$E2E_DIR/pod.json" || return 1
    python3 - "$E2E_DIR/claim.json" "$E2E_DIR/pod.json" <<'P'
import json, sys
c, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a = c.get("status", {}).get("allocation")
if not a:
    sys.exit(1)
node = a["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
rf = [(x["name"], x["uid"]) for x in c["status"].get("reservedFor") or []]
print("%s %s" % (node, ",".join(x["device"] for x in a["devices"]["results"])))
sys.exit(0 if rf == [(p["metadata"]["name"], p["metadata"]["uid"])] and
         p["spec"].get("nodeName") == node else 1)
P
}
quota_used1() { verdict team-q p-one-b | grep -qF "queue team-q: nvidia.com/gpu used 1 + requested 1 > limit 1"; }
"$K" create -f "$E2E_DIR/dra-one-a.json" > /dev/null || tn_fail "create claim and pod one-a"
if tn_wait 30 bound team-q p-one-a && got=$(allocated team-q c-one-a p-one-a); then
    show "team-q/p-one-a bound, its claim c-one-a allocated on $got (team-q: 1 of its limit 1 nvidia.com/gpu)"
    "$K" create -f "$E2E_DIR/dra-one-b.json" > /dev/null || tn_fail "create claim and pod one-b"
    if tn_wait 30 quota_used1; then
        show "team-q/p-one-b: $(verdict team-q p-one-b)"
    else
        tn_fail "team-q/p-one-b: want reason quota with 'used 1 + requested 1 > limit 1', have '$(verdict team-q p-one-b)'"
    fi
    [ "$(verdict team-q p-one-b | cut -f1)" = quota ] || tn_fail "team-q/p-one-b: reason '$(verdict team-q p-one-b | cut -f1)', want quota"
    bound team-q p-one-b && tn_fail "team-q/p-one-b was bound beside p-one-a, over the queue's limit"
    [ -z "$("$K" get resourceclaim -n team-q c-one-b -o jsonpath='{.status.allocation}')" ] ||
        tn_fail "claim team-q/c-one-b was allocated over the queue's limit"
    "$K" delete pod -n team-q p-one-a --grace-period=0 --force > /dev/null 2>&1
    if tn_wait 30 bound team-q p-one-b && got=$(allocated team-q c-one-b p-one-b); then
        show "team-q/p-one-a deleted: team-q/p-one-b bound, its claim c-one-b allocated on $got"
    else
        tn_fail "team-q/p-one-b was not admitted after p-one-a was deleted (/debug/pending: '$(verdict team-q p-one-b)')"
    fi
else
    tn_fail "team-q/p-one-a (one whole GPU, within the queue's limit) was not bound with its claim allocated"
fi
[ "$TN_OK" = 0 ] || { echo "scheduler log:"; tail -30 "$E2E_DIR/scheduler.log"; }
tn_done
