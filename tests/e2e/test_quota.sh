#!/usr/bin/env bash
# Quotas on the real control plane. The article's gpu-resource-quota.yaml is applied as it is
# (gpu-quota-team-a and gpu-quota-team-b, with per-MIG-profile limits); a GPUQueue adds a
# queue limit. The cluster has room for everything, so every pod that waits, waits for quota:
# team-b gets 4 of 5 one-GPU pods and 2 of 3 3g.40gb pods, team-a 8 of 9 one-GPU pods, the
# queue-limited team-c 2 of 3; each waiting pod's FailedScheduling Event, `gpusched explain`
# and /debug/pending name the quota, its hard value and the overshoot. Deleting a bound
# team-b pod lets its waiting pod in. Nothing is over-allocated.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
3 a100 A100-80GB 8 whole
1 h100mig H100-80GB 8 mig:all-3g.40gb
S
tn_crds || exit 1
for ns in team-a team-b team-c; do "$K" create namespace $ns > /dev/null; done
"$K" apply -f "$SEED/gpu-resource-quota.yaml" > /dev/null || exit 1
"$K" apply -f - > /dev/null <<'Q' || exit 1
apiVersion: gpusched.io/v1alpha1
kind: GPUQueue
metadata: {name: team-c}
spec:
  namespaces: [team-c]
  deserved: {nvidia.com/gpu: 1}
  limit: {nvidia.com/gpu: 2}
Q
tn_start || exit 1
tn_pods team-b gpu 0 5 - nvidia.com/gpu=1 | "$K" create -f - > /dev/null
tn_pods team-b mig 0 3 - nvidia.com/mig-3g.40gb=1 | "$K" create -f - > /dev/null
tn_pods team-a gpu 0 9 - nvidia.com/gpu=1 | "$K" create -f - > /dev/null
tn_pods team-c gpu 0 3 - nvidia.com/gpu=1 | "$K" create -f - > /dev/null
tn_wait 60 tn_bound_ge team-b 6 || tn_fail "team-b: $(tn_bound team-b) bound, want 6"
tn_wait 30 tn_bound_ge team-a 8 || tn_fail "team-a: $(tn_bound team-a) bound, want 8"
tn_wait 30 tn_bound_ge team-c 2 || tn_fail "team-c: $(tn_bound team-c) bound, want 2"
sleep 3 # more cycles: still no more
[ "$(tn_bound team-b)" = 6 ] || tn_fail "team-b has $(tn_bound team-b) bound, the quota allows 6"
[ "$(tn_bound team-a)" = 8 ] || tn_fail "team-a has $(tn_bound team-a) bound, the quota allows 8"
[ "$(tn_bound team-c)" = 2 ] || tn_fail "team-c has $(tn_bound team-c) bound, its queue limit is 2"
bmig=$("$K" get pods -n team-b -o json | python3 -c '
import json,sys
print(sum(1 for p in json.load(sys.stdin)["items"] if p["metadata"]["name"].startswith("mig") and p["spec"].get("nodeName")))')
[ "$bmig" = 2 ] || tn_fail "team-b has $bmig 3g.40gb pods bound, the quota allows 2"
# why: explain, /debug/pending and the Events
"$GS" explain --kubeconfig "$E2E_DIR/scheduler.kubeconfig" --output json > "$E2E_DIR/explain.json" ||
    tn_fail "gpusched explain failed"
curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" > "$E2E_DIR/pending.json" || tn_fail "/debug/pending"
# the same count on /metrics, for an alert on pods waiting for a quota
q="$(curl -sf "http://127.0.0.1:$TN_PORT/metrics" | sed -n 's/^gpusched_pending_pods_by_reason{reason="quota"} //p')"
[ "$q" = 4 ] && echo "ok   gpusched_pending_pods_by_reason{reason=\"quota\"} 4" ||
    tn_fail "gpusched_pending_pods_by_reason{reason=\"quota\"} is '$q', want 4"
"$K" get events -A -o json > "$E2E_DIR/events.json"
python3 - "$E2E_DIR/explain.json" "$E2E_DIR/pending.json" "$E2E_DIR/events.json" <<'P' || TN_OK=1
import json, sys
ok = True
want = {
  "team-b": ["ResourceQuota team-b/gpu-quota-team-b: nvidia.com/gpu used 4 + requested 1 > hard 4",
             "ResourceQuota team-b/gpu-quota-team-b: nvidia.com/mig-3g.40gb used 2 + requested 1 > hard 2"],
  "team-a": ["ResourceQuota team-a/gpu-quota-team-a: nvidia.com/gpu used 8 + requested 1 > hard 8"],
  "team-c": ["queue team-c: nvidia.com/gpu used 2 + requested 1 > limit 2"],
}
for src in sys.argv[1:3]:
    rep = json.load(open(src))
    waiting = [r for r in rep if r["reason"] != "fits"]
    if len(waiting) != 4:
        print("FAIL: %s: %d pending pods, want 4: %s" % (src, len(waiting), waiting)); ok = False
    for r in waiting:
        if r["reason"] != "quota" or not any(w in r["message"] for w in want[r["namespace"]]):
            print("FAIL: %s: %s/%s: %s: %s" % (src, r["namespace"], r["pod"], r["reason"], r["message"])); ok = False
    print("%s:" % src.split("/")[-1]); [print("  %s/%s: %s" % (r["namespace"], r["pod"], r["message"])) for r in waiting]
ev = [e for e in json.load(open(sys.argv[3]))["items"] if e.get("reason") == "FailedScheduling"]
def who(e):
    o = e.get("regarding") or e.get("involvedObject") or {}
    return (o.get("namespace"), o.get("name"))
notes = {who(e) for e in ev if (e.get("note") or e.get("message") or "").startswith("quota: ")}
if len(notes) != 4:
    print("FAIL: %d pods with a quota FailedScheduling Event, want 4" % len(notes)); ok = False
sys.exit(0 if ok else 1)
P
"$GS" explain team-b/gpu-4 --kubeconfig "$E2E_DIR/scheduler.kubeconfig" | sed 's/^/  explain: /'
# freeing quota lets the waiting pod in
victim=$("$K" get pods -n team-b -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name}{"\n"}{end}' | grep '^gpu-' | head -1)
"$K" delete pod -n team-b "$victim" --grace-period 0 --force > /dev/null 2>&1
gpu_bound_b() {
    [ "$("$K" get pods -n team-b -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' |
        grep '^gpu-' | awk 'NF == 2' | wc -l)" = 4 ]
}
tn_wait 30 gpu_bound_b ||
    tn_fail "after deleting $victim the waiting team-b pod was not bound"
"$DRIVER" verify --expect-bound 16 --expect-unschedulable 3 > "$E2E_DIR/verify.log" 2>&1 ||
    { tn_fail "verify"; cat "$E2E_DIR/verify.log"; }
tn_done
