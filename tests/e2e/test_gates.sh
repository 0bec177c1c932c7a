#!/usr/bin/env bash
# Scheduling gates (spec.schedulingGates, as Kueue gates every pod it has not admitted) on the
# real control plane, with gpusched and the stock kube-scheduler side by side on the same
# nodes (two A100 nodes of 8 whole GPUs, as the e2e driver writes GPU Operator nodes):
#   1. a Job's pod asking one GPU, gated by kueue.x-k8s.io/admission, stays unbound while
#      gpusched runs 5 cycles (its /metrics counter, not a sleep); /debug/pending and explain
#      say reason "gated" and name the gate; it gets no FailedScheduling Event and keeps the
#      API server's PodScheduled=False/SchedulingGated condition. The gate removed (a JSON
#      patch, as Kueue removes it), it is bound within 5 cycles.
#   2. a pod with two gates, removed one at a time: unbound (pending names the gate left)
#      after the first, bound after the last.
#   3. a gang (PodGroup minMember 2) with one member gated: neither member is bound, the other
#      says the gang waits and counts the gated one; ungated, both are bound.
#   4. the stock kube-scheduler v1.37.2 given the same pods (schedulerName default-scheduler):
#      the gated ones stay unbound with the same condition and no Event, the ungated bound.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
2 a100 A100-80GB 8 whole
S
tn_crds || exit 1
"$K" create namespace ml > /dev/null
"$K" create namespace ks > /dev/null
tn_start || exit 1
printf 'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nclientConnection:\n  kubeconfig: %s\n' \
    "$E2E_DIR/admin.kubeconfig" > "$E2E_DIR/ks.yaml"
"$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0 -v 2 \
    > "$E2E_DIR/kube-scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/kube-scheduler.pid"

# job NS NAME SCHEDULER [GATE...]: a suspended Job (no controller runs here) and its pod as the
# Job controller writes one (owner reference, Job labels, restartPolicy Never), gated
job() {
    local ns="$1" name="$2" sched="$3"
    shift 3
    "$K" create -n "$ns" -f - > /dev/null <<J || return 1
{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "$name"},
 "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
   "containers": [{"name": "main", "image": "registry.invalid/train:1"}]}}}}
J
    local uid
    uid=$("$K" get job -n "$ns" "$name" -o jsonpath='{.metadata.uid}')
    python3 - "$ns" "$name" "$sched" "$uid" "$@" <<'P' | "$K" create -f - > /dev/null
import json, sys
ns, name, sched, uid = sys.argv[1:5]
gates = sys.argv[5:]
labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
          "controller-uid": uid, "job-name": name,
          "batch.kubernetes.io/job-completion-index": "0"}
if name.startswith("gang"):
    labels["scheduling.x-k8s.io/pod-group"] = "pair"
spec = {"schedulerName": sched, "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "registry.invalid/train:1",
                        "resources": {"requests": {"cpu": "4", "memory": "16Gi"},
                                      "limits": {"cpu": "4", "memory": "16Gi",
                                                 "nvidia.com/gpu": "1"}}}]}
if gates:
    spec["schedulingGates"] = [{"name": g} for g in gates]
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": name + "-0", "namespace": ns, "labels": labels,
                 "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                      "uid": uid, "controller": True,
                                      "blockOwnerDeletion": True}]},
    "spec": spec}))
P
}

node_of() { "$K" get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}'; }
bound() { [ -n "$(node_of "$1" "$2")" ]; }
cycles() { curl -sf "http://127.0.0.1:$TN_PORT/metrics" | awk '/^gpusched_scheduling_cycles_total / {print $2}'; }
cycles_ge() { [ "$(cycles)" -ge "$1" ] 2>/dev/null; }
# wait_cycles N: until gpusched has run N more cycles
wait_cycles() {
    local c0
    c0=$(cycles)
    tn_wait 120 cycles_ge $((c0 + $1)) || tn_fail "gpusched ran no $1 cycles in 120 s (at $(cycles))"
}
# pending NS/NAME: the pod's line of /debug/pending, as "reason|message"
pending() {
    curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" | python3 -c '
import json, sys
ns, name = sys.argv[1].split("/")
for r in json.load(sys.stdin):
    if r["namespace"] == ns and r["pod"] == name:
        print("%s|%s" % (r["reason"], r["message"]))' "$1"
}
# bound_within NS NAME N: the pod is bound before gpusched runs N more cycles; prints how many
bound_within() {
    local c0 c
    c0=$(cycles)
    while c=$(cycles) && [ "$c" -le $((c0 + $3)) ]; do
        if bound "$1" "$2"; then
            echo "ok   $1/$2 bound to $(node_of "$1" "$2") $((c - c0)) cycle(s) after its last gate went"
            return 0
        fi
        sleep 0.1
    done
    tn_fail "$1/$2 not bound within $3 cycles of its last gate going"
}
# failed_events NS NAME: how many FailedScheduling Events regard the pod
failed_events() {
    "$K" get events.v1.events.k8s.io -n "$1" -o json | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["items"]
          if e.get("reason") == "FailedScheduling" and e["regarding"]["name"] == sys.argv[1]))' "$2"
}
# condition NS NAME: PodScheduled as "status/reason"
condition() {
    "$K" get pod -n "$1" "$2" -o jsonpath='{range .status.conditions[?(@.type=="PodScheduled")]}{.status}/{.reason}{end}'
}
ungate_all() { "$K" patch pod -n "$1" "$2" --type=json -p '[{"op": "remove", "path": "/spec/schedulingGates"}]' > /dev/null; }
ungate_first() { "$K" patch pod -n "$1" "$2" --type=json -p '[{"op": "remove", "path": "/spec/schedulingGates/0"}]' > /dev/null; }

# --- 1. one gate
job ml train gpusched kueue.x-k8s.io/admission || tn_fail "creating ml/train"
job ks train default-scheduler kueue.x-k8s.io/admission || tn_fail "creating ks/train"
job ks plain default-scheduler || tn_fail "creating ks/plain"
wait_cycles 5
bound ml train-0 && tn_fail "ml/train-0 (gated) was bound to $(node_of ml train-0)"
p=$(pending ml/train-0)
echo "  /debug/pending ml/train-0: $p"
[ "$p" = "gated|waiting for scheduling gates: [kueue.x-k8s.io/admission]" ] ||
    tn_fail "/debug/pending does not say ml/train-0 is gated by kueue.x-k8s.io/admission"
"$GS" explain ml/train-0 --kubeconfig "$E2E_DIR/scheduler.kubeconfig" > "$E2E_DIR/x1.txt" ||
    tn_fail "explain ml/train-0"
sed 's/^/  explain: /' "$E2E_DIR/x1.txt"
grep -q "reason: gated" "$E2E_DIR/x1.txt" && grep -q "kueue.x-k8s.io/admission" "$E2E_DIR/x1.txt" ||
    tn_fail "explain does not say ml/train-0 is gated and by what"
curl -sf "http://127.0.0.1:$TN_PORT/metrics" | grep -q '^gpusched_pending_pods_by_reason{reason="gated"} 1$' ||
    tn_fail "/metrics does not count one pod pending for gated"
# kube-scheduler, on the same cluster meanwhile
tn_wait 30 bound ks plain-0 || tn_fail "kube-scheduler did not bind ks/plain-0 (is it running?)"
bound ks train-0 && tn_fail "kube-scheduler bound the gated ks/train-0"
for x in ml/train-0 ks/train-0; do
    c=$(condition "${x%/*}" "${x#*/}")
    [ "$c" = "False/SchedulingGated" ] || tn_fail "$x: PodScheduled $c, want False/SchedulingGated"
    n=$(failed_events "${x%/*}" "${x#*/}")
    [ "$n" = 0 ] || tn_fail "$x (gated) has $n FailedScheduling Events"
done
echo "ok   gated: ml/train-0 and ks/train-0 unbound, PodScheduled False/SchedulingGated, no Event"
ungate_all ml train-0 || tn_fail "removing the gate of ml/train-0"
bound_within ml train-0 5
ungate_all ks train-0 || tn_fail "removing the gate of ks/train-0"
tn_wait 30 bound ks train-0 && echo "ok   kube-scheduler bound ks/train-0 once ungated" ||
    tn_fail "kube-scheduler did not bind ks/train-0 once ungated"

# --- 2. two gates, removed one at a time
job ml two gpusched example.com/a example.com/b || tn_fail "creating ml/two"
job ks two default-scheduler example.com/a example.com/b || tn_fail "creating ks/two"
wait_cycles 3
ungate_first ml two-0 && ungate_first ks two-0 || tn_fail "removing the first gates"
wait_cycles 5
bound ml two-0 && tn_fail "ml/two-0 bound with a gate left"
bound ks two-0 && tn_fail "kube-scheduler bound ks/two-0 with a gate left"
p=$(pending ml/two-0)
echo "  /debug/pending ml/two-0: $p"
[ "$p" = "gated|waiting for scheduling gates: [example.com/b]" ] ||
    tn_fail "/debug/pending does not name the gate left on ml/two-0"
ungate_first ml two-0 && ungate_first ks two-0 || tn_fail "removing the last gates"
bound_within ml two-0 5
tn_wait 30 bound ks two-0 && echo "ok   kube-scheduler bound ks/two-0 after its last gate" ||
    tn_fail "kube-scheduler did not bind ks/two-0 after its last gate"

# --- 3. a gang with a gated member waits whole
"$K" apply -f - > /dev/null <<'G' || tn_fail "creating the PodGroup"
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: pair, namespace: ml}
spec: {minMember: 2}
G
job ml gang-a gpusched || tn_fail "creating ml/gang-a"
job ml gang-b gpusched kueue.x-k8s.io/admission || tn_fail "creating ml/gang-b"
wait_cycles 5
bound ml gang-a-0 && tn_fail "ml/gang-a-0 bound while its gang's other member is gated"
p=$(pending ml/gang-a-0)
echo "  /debug/pending ml/gang-a-0: $p"
case "$p" in
    "gang|gang ml/pair: 1 of minMember 2 pods exist; waiting for the rest (1 more wait for their scheduling gates)"*) ;;
    *) tn_fail "/debug/pending does not say the gang waits for its gated member" ;;
esac
[ "$(pending ml/gang-b-0)" = "gated|waiting for scheduling gates: [kueue.x-k8s.io/admission]" ] ||
    tn_fail "ml/gang-b-0 is not reported gated"
ungate_all ml gang-b-0 || tn_fail "removing the gate of ml/gang-b-0"
bound_within ml gang-b-0 5
bound ml gang-a-0 && echo "ok   the gang ml/pair bound whole once ungated" || tn_fail "ml/gang-a-0 not bound with its gang"

"$K" get pods -A -o wide | sed 's/^/  /'
tn_done
