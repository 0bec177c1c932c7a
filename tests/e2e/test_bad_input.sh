#!/usr/bin/env bash
# Bad input gives a clear error and no crash, and loses nothing: a malformed kubeconfig, an
# unreachable API server, a 403 from RBAC, garbage in a device annotation, a node with
# nonsense GPU labels, a pod asking gpusched.io/gpu-milli 1500 (told why: PodScheduled False,
# a FailedScheduling Event and /debug/pending name the field and the range 1 to 999; the other
# pods are placed as before), GPUQueues and PodGroups with bad quantities, unknown resources
# or a missing parent.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
ok=0
check() { # NAME WANT-EXIT TEXT CMD...
    local name="$1" want="$2" text="$3"; shift 3
    "$@" > "$E2E_DIR/out" 2>&1
    local got=$?
    if [ "$got" != "$want" ] || ! grep -qF -- "$text" "$E2E_DIR/out"; then
        echo "FAIL $name: exit $got (want $want), output:"; sed 's/^/    /' "$E2E_DIR/out"; ok=1
    else
        echo "ok   $name: $(head -1 "$E2E_DIR/out")"
    fi
}
printf 'apiVersion: v1\nclusters: [\n' > "$E2E_DIR/broken.kubeconfig"
check malformed-kubeconfig 2 "invalid YAML" \
    "$GS" scheduler --kubeconfig "$E2E_DIR/broken.kubeconfig" --leader-elect false --http-port 0
sed "s#$E2E_SERVER#https://127.0.0.1:1#" "$E2E_DIR/scheduler.kubeconfig" > "$E2E_DIR/down.kubeconfig"
check unreachable 1 "127.0.0.1:1" \
    "$GS" scheduler --kubeconfig "$E2E_DIR/down.kubeconfig" --leader-elect false --http-port 0
e2e_cert nobody nobody ""
e2e_kubeconfig "$E2E_DIR/nobody.kubeconfig" "$E2E_DIR/nobody.crt" "$E2E_DIR/nobody.key"
check forbidden 1 "403 Forbidden" \
    "$GS" scheduler --kubeconfig "$E2E_DIR/nobody.kubeconfig" --leader-elect false --http-port 0
# a node with 2 GPUs that already runs a pod with a garbage device annotation, and a node
# whose GPU labels make no sense
"$DRIVER" nodes <<'S' || exit 1
1 small RTX4090-24GB 2 whole
S
"$K" create namespace e2e >/dev/null
cat <<'Y' | "$K" apply -f - >/dev/null || ok=1
apiVersion: v1
kind: Node
metadata:
  name: weird-000
  labels: {nvidia.com/gpu.product: Banana-9000, nvidia.com/gpu.count: "lots", type: weird}
---
apiVersion: v1
kind: Pod
metadata:
  name: squatter
  namespace: e2e
  annotations: {gpusched.io/devices: "gpu=zz,,9"}
spec:
  nodeName: small-000
  schedulerName: gpusched
  containers:
    - name: c
      image: registry.invalid/none:1
      resources: {limits: {nvidia.com/gpu: "1"}}
Y
"$K" patch node weird-000 --subresource=status --type=merge \
    -p '{"status":{"allocatable":{"cpu":"8","memory":"8Gi","pods":"10","nvidia.com/gpu":"4"}}}' >/dev/null || ok=1
port=$(e2e_free_port)
"$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --leader-elect false --http-port "$port" > "$E2E_DIR/scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/scheduler.pid"
"$DRIVER" pods <<'S' || exit 1
3 one e2e gpu:1 kubernetes.io/hostname=small-000
1 weird e2e gpu:1 type=weird
S
cat <<'Y' | "$K" apply -f - >/dev/null || ok=1
apiVersion: v1
kind: Pod
metadata: {name: too-big-share, namespace: e2e}
spec:
  schedulerName: gpusched
  containers:
    - name: c
      image: registry.invalid/none:1
      resources: {limits: {gpusched.io/gpu-milli: "1500"}}
Y
sleep 6
bound=$("$K" get pods -n e2e -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c small-000)
# the squatter holds one of the two GPUs although its annotation is garbage: one more fits
[ "$bound" = 2 ] || { echo "FAIL garbage-annotation: $bound pods on small-000, want 2"; ok=1; }
grep -q "node 'weird-000': nvidia.com/gpu.count 'lots' is not a number" "$E2E_DIR/scheduler.log" ||
    { echo "FAIL nonsense-labels: not reported"; ok=1; }
"$K" get events.v1.events.k8s.io -n e2e -o json > "$E2E_DIR/events"
grep -q '"reason": "FailedScheduling"' "$E2E_DIR/events" && grep -q "nodes fit" "$E2E_DIR/events" ||
    { echo "FAIL: no FailedScheduling events"; ok=1; }
# a share of 1500 thousandths cannot be read: the pod is told why, in each place
share_told() {
    "$K" get pod too-big-share -n e2e -o json | python3 -c '
import json, sys
c = [c for c in json.load(sys.stdin)["status"].get("conditions", []) if c["type"] == "PodScheduled"]
m = c[0].get("message", "") if c else ""
sys.exit(0 if c and c[0]["status"] == "False" and c[0]["reason"] == "Unschedulable" and
         "gpusched.io/gpu-milli: 1500" in m and "1 to 999" in m else 1)'
}
for i in $(seq 1 100); do share_told && break; sleep 0.1; done
share_told && echo "ok   gpu-milli 1500: PodScheduled False, Unschedulable, the field and the range" ||
    { echo "FAIL gpu-milli 1500: no PodScheduled condition saying why:"; "$K" get pod too-big-share -n e2e -o jsonpath='{.status}'; echo; ok=1; }
share_event() {
    "$K" get events.v1.events.k8s.io -n e2e -o json | python3 -c '
import json, sys
sys.exit(0 if any(e.get("reason") == "FailedScheduling" and e["regarding"]["name"] == "too-big-share"
                  and "gpusched.io/gpu-milli: 1500" in e.get("note", "") for e in json.load(sys.stdin)["items"]) else 1)'
}
for i in $(seq 1 100); do share_event && break; sleep 0.1; done
share_event && echo "ok   gpu-milli 1500: a FailedScheduling Event" ||
    { echo "FAIL gpu-milli 1500: no FailedScheduling Event"; ok=1; }
curl -sf "http://127.0.0.1:$port/debug/pending" | python3 -c '
import json, sys
sys.exit(0 if any(r["pod"] == "too-big-share" and r["reason"] == "request" and
                  "1 to 999" in r["message"] for r in json.load(sys.stdin)) else 1)' &&
    echo "ok   gpu-milli 1500: in /debug/pending (request)" ||
    { echo "FAIL gpu-milli 1500: not in /debug/pending"; ok=1; }
# tenancy objects: the CRDs refuse bad quantities and unknown resources, naming the field; a
# queue whose parent does not exist is reported once, not on every relist
"$K" apply -f "$E2E_SRC/../../deploy/crds/gpuqueue.yaml" \
    -f "$E2E_SRC/../../deploy/crds/migmanager.yaml" > /dev/null || ok=1
"$K" wait --for condition=established crd/gpuqueues.gpusched.io \
    crd/podgroups.scheduling.x-k8s.io crd/migmanagers.nvidia.com --timeout 30s > /dev/null || ok=1
gq() { # NAME SPEC
    printf 'apiVersion: gpusched.io/v1alpha1\nkind: GPUQueue\nmetadata: {name: %s}\nspec: %s\n' \
        "$1" "$2" | "$K" apply -f -
}
pg() { # SPEC
    printf 'apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: e2e}\nspec: %s\n' \
        "$1" | "$K" apply -f -
}
check queue-bad-quantity 1 'spec.deserved.nvidia.com/gpu: Invalid value: "lots"' \
    gq q1 '{deserved: {nvidia.com/gpu: lots}}'
check queue-negative 1 'must not be negative' gq q2 '{deserved: {nvidia.com/gpu: -4}}'
check queue-unknown-resource 1 'unknown resource' gq q3 '{limit: {nvidia.com/gpus: 4}}'
check queue-weight 1 'spec.overQuotaWeight' gq q4 '{overQuotaWeight: 0}'
check podgroup-min-member 1 'spec.minMember' pg '{minMember: 0}'
for q in q1 q2 q3 q4; do
    "$K" get gpuqueue "$q" > /dev/null 2>&1 && { echo "FAIL: GPUQueue $q was stored"; ok=1; }
done
# the tenancy objects are watched, not polled: idle, nothing is listed again (a resync every
# 30 s may fall in the window: at most one list per kind)
lists() { curl -s "http://127.0.0.1:$port/metrics" | awk '/^gpusched_policy_lists_total/ {print $2}'; }
sleep 2
l1=$(lists); sleep 3; l2=$(lists)
echo "tenancy lists while idle for 3 s: $((l2 - l1))"
[ $((l2 - l1)) -le 7 ] || { echo "FAIL: $((l2 - l1)) lists of tenancy objects in 3 s idle"; ok=1; }
check queue-orphan 0 'created' gq orphan '{parent: nowhere, deserved: {nvidia.com/gpu: 2}}'
seen_orphan() { grep -q "GPUQueue orphan: parent 'nowhere' does not exist" "$E2E_DIR/scheduler.log"; }
for i in $(seq 1 20); do seen_orphan && break; sleep 0.1; done
seen_orphan && echo "the new GPUQueue was seen within $((i * 100)) ms" ||
    { echo "FAIL queue-orphan: not seen within 2 s"; ok=1; }
sleep 3
n=$(grep -c "GPUQueue orphan: parent 'nowhere' does not exist" "$E2E_DIR/scheduler.log")
[ "$n" = 1 ] || { echo "FAIL queue-orphan: reported $n times, want once"; ok=1; }
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { echo "FAIL: scheduler not healthy"; ok=1; }
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" || { echo "FAIL: scheduler died"; ok=1; }
[ $ok -eq 0 ] || tail -20 "$E2E_DIR/scheduler.log"
[ $ok -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $ok
