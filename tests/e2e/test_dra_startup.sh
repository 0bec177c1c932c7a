#!/usr/bin/env bash
# gpusched waits for every feed's first list before its first cycle, as kube-scheduler waits for
# its informers' caches: pods with ResourceClaims that exist when it starts are not judged on
# ResourceSlices it has not read yet. Node st-0 publishes two H100s as NVIDIA's DRA driver does
# (gpu.nvidia.com); three pods each name a claim for one of them. gpusched starts behind a plain
# HTTP front (holdproxy.py) that holds its list of ResourceSlices back until the test lets it go:
#   1. while held: gpusched has listed pods and claims and kept watching (its probes of the
#      kinds the API server does not serve came round again), yet it ran no scheduling cycle,
#      no pod is bound and none has a FailedScheduling Event or an Unschedulable condition;
#   2. let go: two pods bind, each claim on st-0, and the third waits (two GPUs), the only one
#      with FailedScheduling, and for the GPUs, not for DRA that was "not listed yet".
# /readyz says 503 while held (the DRA feed not listed) and 200 after.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/tenancy.sh"
"$K" api-resources --api-group=resource.k8s.io 2>/dev/null | grep -q resourceslices ||
    skip "the API server does not serve resource.k8s.io/v1"

e2e_ready_node st-0 || exit 1
python3 - <<'P' | "$K" create -f - > /dev/null || exit 1
import json
D = "gpu.nvidia.com"
items = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": D},
          "spec": {"selectors": [{"cel": {"expression":
              "device.driver == '%s' && device.attributes['%s'].type == 'gpu'" % (D, D)}}]}},
         {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}]
devs = [{"name": "gpu-%d" % m, "attributes": {
            "type": {"string": "gpu"}, "index": {"int": m},
            "uuid": {"string": "GPU-7d2c0a41-%04d-4e5f-8a9b-00000000000%d" % (m, m)},
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "architecture": {"string": "Hopper"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "driverVersion": {"version": "570.133.20"}},
         "capacity": {"memory": {"value": "80Gi"}}} for m in range(2)]
items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
              "metadata": {"name": "st-0-%s-8kq2w" % D},
              "spec": {"driver": D, "nodeName": "st-0",
                       "pool": {"name": "st-0", "generation": 1, "resourceSliceCount": 1},
                       "devices": devs}})
for i in range(3):
    items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": "train-%d-gpu" % i, "namespace": "ml"},
                  "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                      "deviceClassName": D, "selectors": [{"cel": {"expression":
                          "device.attributes['%s'].productName == 'NVIDIA H100 80GB HBM3'" % D}}]}}]}}})
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "train-%d" % i, "namespace": "ml"},
                  "spec": {"schedulerName": "gpusched",
                           "resourceClaims": [{"name": "gpu", "resourceClaimName": "train-%d-gpu" % i}],
                           "containers": [{"name": "c", "image": "registry.invalid/train:1",
                                           "resources": {"requests": {"cpu": "1"},
                                                         "claims": [{"name": "gpu"}]}}]}})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
P

# the front: gpusched's own identity upstream, its ResourceSlices list held
HOLD="$E2E_DIR/hold-slices"
LOG="$E2E_DIR/proxy.log"
touch "$HOLD" "$LOG"
e2e_front /apis/resource.k8s.io/v1/resourceslices "$HOLD" "$LOG" ||
    { tn_fail "the front did not come up"; tn_done; }
TN_PORT=$(e2e_free_port)
"$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/front.kubeconfig" --leader-elect false \
    --http-port "$TN_PORT" --http-bind 127.0.0.1 > "$E2E_DIR/scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/scheduler.pid"

metric() { # NAME: its value on gpusched's /metrics (empty when not served)
    curl -sf "http://127.0.0.1:$TN_PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'
}
# lines of the front's log that start with WORDS
seen() { grep -c "^$1" "$LOG"; }
listed_rest() { # pods and claims listed, the slices' list held, and a probe repeated
    [ "$(seen 'GET /api/v1/pods?')" -ge 1 ] &&
        [ "$(seen 'GET /apis/resource.k8s.io/v1/resourceclaims?')" -ge 1 ] &&
        [ "$(seen 'held /apis/resource.k8s.io/v1/resourceslices')" -ge 1 ] &&
        [ "$(seen 'GET /apis/nvidia.com/v1alpha1/migmanagers?')" -ge 3 ] &&
        [ -n "$(metric gpusched_scheduling_cycles_total)" ]
}
failed_events() { # the FailedScheduling Events in ml, "pod: note" per line
    "$K" get events.v1.events.k8s.io -n ml -o json | python3 -c '
import json, sys
for e in json.load(sys.stdin)["items"]:
    if e.get("reason") == "FailedScheduling":
        print("%s: %s" % (e["regarding"]["name"], e.get("note", "")))'
}
node_of() { "$K" get pod -n ml "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
conditions() { # POD: its PodScheduled reason, or -
    local r
    r=$("$K" get pod -n ml "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}' 2>/dev/null)
    echo "${r:--}"
}

# 1. held: every other feed listed, the daemon alive for a while (its probes of unserved kinds
#    repeat with a backoff of 1, 2, 4 s), and yet no cycle and no verdict
tn_wait 90 listed_rest || { tn_fail "gpusched did not list pods and claims through the front in 90 s"; sed 's/^/  front: /' "$LOG" | tail -20; tn_done; }
echo "ok   ResourceSlices held; pods, claims and $(seen 'GET /apis/nvidia.com/v1alpha1/migmanagers?') probes of MigManagers went through"
cyc=$(metric gpusched_scheduling_cycles_total)
[ "$cyc" = 0 ] && echo "ok   no scheduling cycle before the ResourceSlices are listed" ||
    tn_fail "gpusched ran $cyc scheduling cycles before it had listed the ResourceSlices"
ev=$(failed_events)
[ -z "$ev" ] && echo "ok   no FailedScheduling Event meanwhile" ||
    tn_fail "FailedScheduling Events before the ResourceSlices were listed: $ev"
for i in 0 1 2; do
    c=$(conditions train-$i)
    [ "$c" = - ] && [ -z "$(node_of train-$i)" ] || tn_fail "ml/train-$i: PodScheduled $c, node '$(node_of train-$i)' while held"
done
ready() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TN_PORT/readyz"; }
r=$(ready)
[ "$r" = 503 ] && echo "ok   /readyz 503 while the ResourceSlices are not listed" ||
    tn_fail "/readyz answered $r while the ResourceSlices were not listed, want 503"

# 2. let go: two pods bind, the third waits for the GPUs
rm -f "$HOLD"
nbound() { local n=0 i; for i in 0 1 2; do [ -n "$(node_of train-$i)" ] && n=$((n + 1)); done; echo $n; }
two_bound() { [ "$(nbound)" = 2 ]; }
third_waits() { [ "$(failed_events | wc -l)" -ge 1 ]; }
tn_wait 60 two_bound || tn_fail "$(nbound) of the pods bound after the list went through, want 2"
r=$(ready)
[ "$r" = 200 ] && echo "ok   /readyz 200 once listed" || tn_fail "/readyz answered $r once listed, want 200"
tn_wait 60 third_waits || tn_fail "the third pod has no FailedScheduling Event"
for i in 0 1 2; do
    n=$(node_of train-$i)
    a=$("$K" get resourceclaim -n ml train-$i-gpu -o jsonpath='{.status.allocation.devices.results[0].pool}/{.status.allocation.devices.results[0].device}' 2>/dev/null)
    echo "  ml/train-$i: node '${n:--}', claim $a, PodScheduled $(conditions train-$i)"
    [ -z "$n" ] || [ "${a%%/*}" = st-0 ] || tn_fail "ml/train-$i on $n, its claim on '$a'"
done
failed_events | sed 's/^/  FailedScheduling /'
[ "$(failed_events | wc -l)" = 1 ] || tn_fail "want exactly one FailedScheduling Event (the pod left without a GPU)"
failed_events | grep -q 'not listed yet\|not served' &&
    tn_fail "a FailedScheduling Event says DRA was not listed yet"
echo "ok   after the list: 2 bound on st-0, the third waits for a GPU"
tn_done
