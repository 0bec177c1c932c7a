#!/usr/bin/env bash
# Borrowing and reclaim on the real control plane. Two GPUQueues deserve 8 GPUs each of a
# 16-GPU cluster. team-b submits 16 one-GPU pods while team-a is idle: all 16 run (8 of
# them on team-a's share). Then team-a's 8 pods arrive, at the same gpu-low priority: team-a
# reclaims its share within seconds, exactly 8 of team-b's pods are evicted (team-b keeps its
# deserved 8, never fewer), and a new team-b pod waits as a borrower with nothing idle.
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
"$K" apply -f "$SEED/gpu-priority-class.yaml" > /dev/null 2>&1
for ns in team-a team-b; do
    "$K" create namespace $ns > /dev/null
    "$K" apply -f - > /dev/null <<Q || exit 1
apiVersion: gpusched.io/v1alpha1
kind: GPUQueue
metadata: {name: $ns}
spec:
  namespaces: [$ns]
  deserved: {nvidia.com/gpu: 8}
  overQuotaWeight: 1
Q
done
tn_start || exit 1
tn_pods team-b train 0 16 gpu-low nvidia.com/gpu=1 | "$K" create -f - > /dev/null
tn_wait 60 tn_bound_ge team-b 16 || tn_fail "team-b borrowed $(tn_bound team-b) GPUs, want all 16"
if [ "$E2E_KWOK" = 1 ]; then tn_wait 60 tn_running_ge team-b 16 || tn_fail "team-b not Running"; fi
echo "team-a idle: team-b runs $(tn_bound team-b) one-GPU pods (8 borrowed)"
sleep 2
t0=$(tn_now_ms)
tn_pods team-a train 0 8 gpu-low nvidia.com/gpu=1 | "$K" create -f - > /dev/null
tn_wait 30 tn_bound_ge team-a 8 || tn_fail "team-a got $(tn_bound team-a) of its 8 deserved GPUs back"
echo "team-a reclaimed its 8 GPUs in $(( $(tn_now_ms) - t0 )) ms"
sleep 3
nb=$("$K" get pods -n team-b --no-headers | wc -l)
[ "$nb" = 8 ] || tn_fail "team-b has $nb pods left, want its deserved 8"
[ "$(tn_bound team-b)" = 8 ] || tn_fail "team-b has $(tn_bound team-b) bound"
[ "$(tn_bound team-a)" = 8 ] || tn_fail "team-a has $(tn_bound team-a) bound"
# a new borrower waits: nothing is idle and team-b is at its deserved share
tn_pods team-b late 0 1 gpu-low nvidia.com/gpu=1 | "$K" create -f - > /dev/null
sleep 3
[ "$(tn_bound team-b)" = 8 ] || tn_fail "a team-b borrower took a GPU from team-a's share"
"$GS" explain team-b/late-0 --kubeconfig "$E2E_DIR/scheduler.kubeconfig" > "$E2E_DIR/explain.txt" ||
    tn_fail "explain"
sed 's/^/  explain: /' "$E2E_DIR/explain.txt"
grep -q "deserved 8 (borrowing)" "$E2E_DIR/explain.txt" || tn_fail "explain does not say team-b is borrowing"
"$K" get events -n team-b -o json | python3 -c '
import json, sys
ev = [e for e in json.load(sys.stdin)["items"] if e.get("reason") == "Preempted"]
print("team-b pods reclaimed: %d" % len(ev))
sys.exit(0 if len(ev) == 8 else 1)' || tn_fail "want 8 Preempted events in team-b"
"$DRIVER" verify --expect-bound 16 > "$E2E_DIR/verify.log" 2>&1 || { tn_fail verify; cat "$E2E_DIR/verify.log"; }
tn_done
