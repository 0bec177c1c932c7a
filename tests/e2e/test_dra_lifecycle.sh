#!/usr/bin/env bash
# A ResourceClaim's whole life with the real resourceclaim controller beside the scheduler: the
# stock kube-scheduler v1.37.2 and gpusched in turn, each in its own namespace, the same steps
# and the same checks. kube-controller-manager runs the resourceclaim controller (it makes a
# pod's claims from its ResourceClaimTemplate, drops the reservations of pods that are gone,
# deallocates claims no pod uses any more and takes their finalizer off) and the garbage
# collector (it deletes the claims of deleted pods). One Ready node, lc-0, publishes two H100s
# as NVIDIA's DRA driver does (gpu.nvidia.com).
#   1. pods a and b claim one GPU each from the template one-h100: bound, each generated claim
#      allocated on lc-0, reserved for its pod and carrying the finalizer
#      resource.kubernetes.io/delete-protection, which a scheduler adds before it writes an
#      allocation (the controller deallocates only claims that carry it); pod c then waits;
#   2. a is deleted: its claim is deallocated and deleted (its finalizer does not hold it), and
#      c gets the freed GPU;
#   3. a named claim (no owner) of a pod m: allocated with the finalizer; once m is deleted the
#      claim stays, deallocated and without the finalizer, and deleting it then completes.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/tenancy.sh"
"$K" api-resources --api-group=resource.k8s.io 2>/dev/null | grep -q resourceclaimtemplates ||
    skip "the API server does not serve resource.k8s.io/v1"
show() { echo "  $*"; }
F=resource.kubernetes.io/delete-protection

e2e_ready_node lc-0 || exit 1
"$K" create -f - > /dev/null <<'Y' || exit 1
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
  "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}},
 {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
  "metadata": {"name": "lc-0-gpu.nvidia.com-4xq7z"},
  "spec": {"driver": "gpu.nvidia.com", "nodeName": "lc-0",
           "pool": {"name": "lc-0", "generation": 1, "resourceSliceCount": 1},
           "devices": [
    {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}, "index": {"int": 0},
      "uuid": {"string": "GPU-4f1e2c3d-0000-4e5f-8a9b-000000000000"},
      "productName": {"string": "NVIDIA H100 80GB HBM3"}, "architecture": {"string": "Hopper"},
      "cudaComputeCapability": {"version": "9.0.0"}, "driverVersion": {"version": "570.133.20"}},
     "capacity": {"memory": {"value": "80Gi"}}},
    {"name": "gpu-1", "attributes": {"type": {"string": "gpu"}, "index": {"int": 1},
      "uuid": {"string": "GPU-4f1e2c3d-0001-4e5f-8a9b-000000000001"},
      "productName": {"string": "NVIDIA H100 80GB HBM3"}, "architecture": {"string": "Hopper"},
      "cudaComputeCapability": {"version": "9.0.0"}, "driverVersion": {"version": "570.133.20"}},
     "capacity": {"memory": {"value": "80Gi"}}}]}}]}
Y

"$E2E_BIN/kube-controller-manager" --kubeconfig "$E2E_DIR/admin.kubeconfig" --leader-elect=false \
    --secure-port 0 --controllers resourceclaim-controller,garbage-collector-controller \
    > "$E2E_DIR/controller-manager.log" 2>&1 &
echo $! > "$E2E_DIR/kcm.pid"

# pod NS NAME SCHEDULER CLAIM-SOURCE-JSON: a pod whose container uses its claim "gpu"
pod() {
    python3 -c '
import json, sys
ns, name, sched, src = sys.argv[1:5]
rc = dict(json.loads(src), name="gpu")
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
    "spec": {"schedulerName": sched, "resourceClaims": [rc],
             "containers": [{"name": "cuda", "image": "registry.invalid/cuda:12",
                             "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}]}}))' \
        "$@" | "$K" create -f - > /dev/null
}
TPL='{"resourceClaimTemplateName": "one-h100"}'
node_of() { "$K" get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
bound() { [ -n "$(node_of "$1" "$2")" ]; }
unsched() {
    [ "$("$K" get pod -n "$1" "$2" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}' 2>/dev/null)" = Unschedulable ]
}
# the claim the controller made for pod NS/NAME (status.resourceClaimStatuses)
claim_of() {
    "$K" get pod -n "$1" "$2" -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}' 2>/dev/null
}
# claim_state NS CLAIM: "allocated=NODE/DEVICE reserved=POD,... finalizer=yes|no", or "gone"
claim_state() {
    "$K" get resourceclaim -n "$1" "$2" -o json 2>/dev/null | python3 -c '
import json, sys
c = json.load(sys.stdin)
st = c.get("status") or {}
res = ((st.get("allocation") or {}).get("devices") or {}).get("results") or []
print("allocated=%s reserved=%s finalizer=%s" % (
    ",".join("%s/%s" % (r["pool"], r["device"]) for r in res) or "-",
    ",".join(r["name"] for r in st.get("reservedFor") or []) or "-",
    "yes" if sys.argv[1] in (c["metadata"].get("finalizers") or []) else "no"))' "$F" 2>/dev/null || echo gone
}
state_is() { case "$(claim_state "$1" "$2")" in $3) return 0 ;; esac; return 1; }

# the steps for one scheduler (its pods in namespace NS)
steps() {
    local ns="$1" sched="$2" c
    "$K" create namespace "$ns" > /dev/null || { tn_fail "namespace $ns"; return; }
    "$K" create -f - > /dev/null <<Y || { tn_fail "$ns: the ResourceClaimTemplate"; return; }
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
 "metadata": {"name": "one-h100", "namespace": "$ns"},
 "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
   "deviceClassName": "gpu.nvidia.com",
   "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')"}}]}}]}}}}
Y
    # 1. two pods, one GPU each, then a third
    pod "$ns" a "$sched" "$TPL" && pod "$ns" b "$sched" "$TPL" || { tn_fail "$ns: pods a and b"; return; }
    tn_wait 60 bound "$ns" a && tn_wait 60 bound "$ns" b || { tn_fail "$ns: a and b not bound"; return; }
    for p in a b; do
        c=$(claim_of "$ns" $p)
        show "$sched: pod $p on $(node_of "$ns" $p), claim $c: $(claim_state "$ns" "$c")"
        # (the watch may show the Binding before the controller's status)
        tn_wait 30 state_is "$ns" "$c" "allocated=lc-0/gpu-? reserved=$p finalizer=yes" ||
            tn_fail "$sched: claim $c of pod $p is $(claim_state "$ns" "$c"), want allocated on lc-0, reserved for $p, with $F"
    done
    local ca
    ca=$(claim_of "$ns" a)
    pod "$ns" c "$sched" "$TPL" || { tn_fail "$ns: pod c"; return; }
    tn_wait 60 unsched "$ns" c || tn_fail "$sched: pod c is not unschedulable with both GPUs taken"
    # 2. a goes: its claim is deallocated and deleted, c takes the GPU
    "$K" delete pod -n "$ns" a --grace-period=0 --force > /dev/null 2>&1
    tn_wait 60 bound "$ns" c || tn_fail "$sched: pod c not bound after a was deleted (claim $ca: $(claim_state "$ns" "$ca"))"
    tn_wait 60 state_is "$ns" "$ca" gone || tn_fail "$sched: claim $ca of the deleted pod a is $(claim_state "$ns" "$ca"), want deleted"
    c=$(claim_of "$ns" c)
    show "$sched: after a was deleted: its claim $ca $(claim_state "$ns" "$ca"); pod c on $(node_of "$ns" c), claim $c: $(claim_state "$ns" "$c")"
    tn_wait 30 state_is "$ns" "$c" "allocated=lc-0/gpu-? reserved=c finalizer=yes" ||
        tn_fail "$sched: claim $c of pod c is $(claim_state "$ns" "$c")"
    # 3. a named claim outlives its pod, deallocated and unprotected, then can be deleted
    "$K" delete pod -n "$ns" b c --grace-period=0 --force > /dev/null 2>&1
    "$K" create -f - > /dev/null <<Y || { tn_fail "$ns: claim manual"; return; }
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "manual", "namespace": "$ns"},
 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
Y
    pod "$ns" m "$sched" '{"resourceClaimName": "manual"}' || { tn_fail "$ns: pod m"; return; }
    tn_wait 60 bound "$ns" m || { tn_fail "$sched: pod m not bound"; return; }
    tn_wait 30 state_is "$ns" manual "allocated=lc-0/gpu-? reserved=m finalizer=yes" ||
        tn_fail "$sched: claim manual is $(claim_state "$ns" manual)"
    show "$sched: pod m on $(node_of "$ns" m), claim manual: $(claim_state "$ns" manual)"
    "$K" delete pod -n "$ns" m --grace-period=0 --force > /dev/null 2>&1
    tn_wait 60 state_is "$ns" manual "allocated=- reserved=- finalizer=no" ||
        tn_fail "$sched: claim manual after its pod went is $(claim_state "$ns" manual), want deallocated without $F"
    show "$sched: after m was deleted: claim manual: $(claim_state "$ns" manual)"
    "$K" delete resourceclaim -n "$ns" manual --wait=false > /dev/null 2>&1
    tn_wait 30 state_is "$ns" manual gone || tn_fail "$sched: deleting claim manual did not complete: $(claim_state "$ns" manual)"
    gone_all() { [ "$("$K" get pods,resourceclaims -n "$1" --no-headers 2>/dev/null | wc -l)" = 0 ]; }
    tn_wait 60 gone_all "$ns" || tn_fail "$sched: pods or claims of $ns left: $("$K" get pods,resourceclaims -n "$ns" --no-headers 2>&1 | tr '\n' ';')"
}

# 1. the stock kube-scheduler
printf 'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nclientConnection:\n  kubeconfig: %s\n' \
    "$E2E_DIR/admin.kubeconfig" > "$E2E_DIR/ks.yaml"
"$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0 -v 2 \
    > "$E2E_DIR/kube-scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/kube-scheduler.pid"
steps ks default-scheduler
kill "$(cat "$E2E_DIR/kube-scheduler.pid")"

# 2. gpusched, its RBAC as deploy/ ships it
tn_start || tn_done
steps gs gpusched
tn_done
