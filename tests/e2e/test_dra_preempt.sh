#!/usr/bin/env bash
# Preemption and claim cleanup for DRA claims allocated by gpusched, on the real control
# plane. Node dra-0 (kwok's, so that deletions finish as on a kubelet) publishes ResourceSlices
# of gpu.gpusched.io in the agent's shape: two partitionable A100-80GB, each a counter set of
# 7 compute and 8 memory slices and its placements (3g.40gb at 0 and 4 among them). The
# article's PriorityClasses are applied as they are. Four gpu-low pods, a second apart, claim
# a 3g.40gb each and fill both GPUs. A fifth gpu-low pod with the same claim stays pending
# (equal priority never preempts) and nobody is evicted. A gpu-critical pod with a 3g.40gb
# claim then evicts exactly one pod, the youngest (DisruptionTarget seen on a watch,
# Preempted/Preempting Events naming it); the victim's claim loses its allocation and
# reservedFor; the critical pod's claim gets the victim's placement and the pod binds. A pod
# deleted normally has its claim released too, and the pending gpu-low pod gets its device.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/tenancy.sh"
"$K" api-resources --api-group=resource.k8s.io 2>/dev/null | grep -q resourceclaims ||
    skip "the API server does not serve resource.k8s.io/v1"
show() { echo "  $*"; }

"$K" create -f - > /dev/null <<'Y' || exit 1
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "dra-0",
 "annotations": {"kwok.x-k8s.io/node": "fake"},
 "labels": {"kubernetes.io/hostname": "dra-0", "kubernetes.io/os": "linux"}}}
Y
"$K" patch node dra-0 --subresource=status --type=merge -p '{"status": {
  "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
  "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
  "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                  "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                  "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}' > /dev/null || exit 1
"$K" apply -f "$SEED/gpu-priority-class.yaml" > "$E2E_DIR/apply.log" 2>&1
for pc in gpu-critical gpu-low; do
    "$K" get priorityclass "$pc" > /dev/null || tn_fail "PriorityClass $pc was not created"
done

python3 - "$E2E_DIR" <<'P' || exit 1
import json, sys
d = sys.argv[1]
DRV = "gpu.gpusched.io"
def s(v): return {"string": v}
def i(v): return {"int": v}
PROFILES = [("1g.10gb", 1, 1, range(7)), ("2g.20gb", 2, 2, [0, 2, 4]),
            ("3g.40gb", 3, 4, [0, 4]), ("4g.40gb", 4, 4, [0]), ("7g.80gb", 7, 8, [0])]
sets, devs = [], []
for g in (0, 1):
    cs = "gpu-%d-counters" % g
    counters = {"compute-slices": {"value": "7"}}
    counters.update({"memory-slice-%d" % k: {"value": "1"} for k in range(8)})
    sets.append({"name": cs, "counters": counters})
    uuid = "GPU-dra0-%d" % g
    devs.append({"name": "gpu-%d" % g, "attributes": {"type": s("gpu"), "uuid": s(uuid),
                 "productName": s("A100-80GB"), "index": i(g)},
                 "capacity": {"memory": {"value": "80Gi"}},
                 "consumesCounters": [{"counterSet": cs, "counters": counters}]})
    for prof, c, m, starts in PROFILES:
        for st in starts:
            use = {"compute-slices": {"value": str(c)}}
            use.update({"memory-slice-%d" % k: {"value": "1"} for k in range(st, st + m)})
            devs.append({"name": "gpu-%d-part-%s-%d" % (g, prof.replace(".", "-"), st),
                         "attributes": {"type": s("mig"), "profile": s(prof), "parentUUID": s(uuid),
                                        "productName": s("A100-80GB"), "placementStart": i(st),
                                        "dynamic": {"bool": True}},
                         "capacity": {"memory": {"value": "%dGi" % (10 * m)}},
                         "consumesCounters": [{"counterSet": cs, "counters": use}]})
def slice_(name, spec):
    spec.update({"driver": DRV, "pool": {"name": "dra-0", "generation": 1, "resourceSliceCount": 2},
                 "nodeName": "dra-0"})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name}, "spec": spec}
objs = [slice_("dra-0-counters", {"sharedCounters": sets}), slice_("dra-0-devices", {"devices": devs})]
objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "mig.gpusched.io"},
             "spec": {"selectors": [{"cel": {"expression":
                 "device.driver == '%s' && device.attributes['%s'].type == 'mig'" % (DRV, DRV)}}]}})
json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, open(d + "/dra-setup.json", "w"))
def pair(name, pc):
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c-" + name, "namespace": "ai"},
             "spec": {"devices": {"requests": [{"name": "mig", "exactly": {
                 "deviceClassName": "mig.gpusched.io", "selectors": [{"cel": {"expression":
                     "device.attributes['gpu.gpusched.io'].profile == '3g.40gb'"}}]}}]}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ai"},
           "spec": {"schedulerName": "gpusched", "priorityClassName": pc,
                    "resourceClaims": [{"name": "acc", "resourceClaimName": "c-" + name}],
                    "containers": [{"name": "c", "image": "registry.invalid/none:1",
                                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                  "claims": [{"name": "acc"}]}}]}}
    json.dump({"apiVersion": "v1", "kind": "List", "items": [claim, pod]}, open(d + "/%s.json" % name, "w"))
for k in range(4):
    pair("low-%d" % k, "gpu-low")
pair("peer", "gpu-low")
pair("crit", "gpu-critical")
P
"$K" create namespace ai > /dev/null
"$K" create -f "$E2E_DIR/dra-setup.json" > /dev/null || { tn_fail "the API refused the slices or class"; tn_done; }
show "node dra-0: 2 partitionable A100-80GB published as ResourceSlices (4 placements of 3g.40gb)"
tn_start --min-runtime 0 || exit 1

bound() { [ -n "$("$K" get pod -n ai "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null)" ]; }
gone() { ! "$K" get pod -n ai "$1" > /dev/null 2>&1; }
alloc() { # CLAIM: its allocated device, or nothing
    "$K" get resourceclaim -n ai "$1" -o jsonpath='{.status.allocation.devices.results[0].device}' 2>/dev/null
}
reserved() { "$K" get resourceclaim -n ai "$1" -o jsonpath='{.status.reservedFor[*].name}' 2>/dev/null; }
released() { [ -z "$(alloc "$1")" ] && [ -z "$(reserved "$1")" ]; }
# without kwok nothing finishes a deletion: do what the kubelet would
finish_deletions() {
    [ "$E2E_KWOK" = 1 ] && return 0
    local p
    for p in $("$K" get pods -n ai -o jsonpath='{range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name}{" "}{end}'); do
        "$K" delete pod -n ai "$p" --grace-period=0 --force > /dev/null 2>&1
    done
}
gone_or_finish() { finish_deletions; gone "$1"; }

# four gpu-low pods, a second apart (startTime's resolution): both GPUs full
for k in 0 1 2 3; do
    "$K" create -f "$E2E_DIR/low-$k.json" > /dev/null || tn_fail "create low-$k"
    tn_wait 30 bound low-$k || tn_fail "ai/low-$k not bound"
    [ "$E2E_KWOK" = 1 ] && { tn_wait 30 tn_running_ge ai $((k + 1)) || tn_fail "ai/low-$k not Running"; }
    show "ai/low-$k (gpu-low) bound; claim c-low-$k allocated $(alloc c-low-$k)"
    sleep 1.1
done
declare -A dev
for k in 0 1 2 3; do dev[low-$k]=$(alloc c-low-$k); done
[ "$(printf '%s\n' "${dev[@]}" | sort -u | grep -c 3g-40gb)" = 4 ] ||
    tn_fail "want four distinct 3g.40gb placements, got: ${dev[*]}"

# equal priority: never preempts
tn_watch ai
"$K" create -f "$E2E_DIR/peer.json" > /dev/null || tn_fail "create peer"
sleep 4
if bound peer; then tn_fail "ai/peer (gpu-low) was bound on a full node"; fi
for k in 0 1 2 3; do gone low-$k && tn_fail "ai/low-$k was evicted for a pod of equal priority"; done
r=$(curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if r["pod"] == "peer": print(r["reason"] + ": " + r["message"])')
show "ai/peer (gpu-low, equal priority) pending, nobody evicted: $r"
case "$r" in dra:*) ;; *) tn_fail "ai/peer: want reason dra, got: $r" ;; esac

# the critical pod: exactly the youngest low pod goes
t0=$(tn_now_ms)
"$K" create -f "$E2E_DIR/crit.json" > /dev/null || tn_fail "create crit"
if tn_wait 30 gone_or_finish low-3; then
    show "ai/low-3 (the youngest) deleted $(( $(tn_now_ms) - t0 )) ms after ai/crit arrived"
else
    tn_fail "ai/low-3 was not evicted"
fi
if tn_wait 30 bound crit; then
    show "ai/crit (gpu-critical) bound to $("$K" get pod -n ai crit -o jsonpath='{.spec.nodeName}') after $(( $(tn_now_ms) - t0 )) ms; claim c-crit allocated $(alloc c-crit), reservedFor $(reserved c-crit)"
else
    tn_fail "ai/crit not bound"
fi
[ "$(alloc c-crit)" = "${dev[low-3]}" ] ||
    tn_fail "c-crit allocated '$(alloc c-crit)', want the victim's placement ${dev[low-3]}"
[ "$(reserved c-crit)" = crit ] || tn_fail "c-crit reservedFor '$(reserved c-crit)'"
tn_wait 10 released c-low-3 || tn_fail "c-low-3 keeps allocation '$(alloc c-low-3)' reservedFor '$(reserved c-low-3)'"
released c-low-3 && show "claim c-low-3 (the victim's): status.allocation and reservedFor cleared"
for k in 0 1 2; do
    gone low-$k && tn_fail "ai/low-$k was evicted too"
    [ "$(alloc c-low-$k)" = "${dev[low-$k]}" ] || tn_fail "c-low-$k lost its allocation"
done
bound peer && tn_fail "ai/peer took the freed placement"
show "ai/low-0..2 and their claims untouched; ai/peer still pending"
"$K" get events -n ai -o json > "$E2E_DIR/events.json"
python3 - "$E2E_DIR/events.json" <<'P' || TN_OK=1
import json, sys
ev = json.load(open(sys.argv[1]))["items"]
def note(e): return e.get("note") or e.get("message") or ""
def who(e): return (e.get("regarding") or e.get("involvedObject") or {}).get("name")
pre = [e for e in ev if e.get("reason") == "Preempted"]
ing = [e for e in ev if e.get("reason") == "Preempting"]
for e in pre + ing:
    print("  %s %s: %s" % (e.get("reason"), who(e), note(e)))
ok = [who(e) for e in pre] == ["low-3"] and [who(e) for e in ing] == ["crit"] and \
    "preempting 1 pod" in note(ing[0]) and "ai/low-3" in note(ing[0])
if not ok:
    print("FAIL: want one Preempted Event on low-3 and one Preempting on crit naming it")
sys.exit(0 if ok else 1)
P
tn_disrupted low-3 || TN_OK=1

# a pod deleted normally: its claim is released and the pending pod gets the device
t0=$(tn_now_ms)
"$K" delete pod -n ai low-0 --wait=false > /dev/null
tn_wait 30 gone_or_finish low-0 || tn_fail "ai/low-0 not deleted"
if tn_wait 30 bound peer; then
    show "ai/low-0 deleted; ai/peer bound $(( $(tn_now_ms) - t0 )) ms later with $(alloc c-peer)"
else
    tn_fail "ai/peer not bound after ai/low-0 left"
fi
tn_wait 10 released c-low-0 || tn_fail "c-low-0 keeps allocation '$(alloc c-low-0)'"
released c-low-0 && show "claim c-low-0: status.allocation and reservedFor cleared"
[ "$(alloc c-peer)" = "${dev[low-0]}" ] || tn_fail "c-peer allocated '$(alloc c-peer)', want ${dev[low-0]}"
v=$(curl -s "http://127.0.0.1:$TN_PORT/metrics" | awk '/^gpusched_preemption_victims_total/ {print $2}')
show "gpusched_preemption_victims_total $v"
[ "$v" = 1 ] || tn_fail "victims metric $v, want 1"
tn_done
