#!/usr/bin/env bash
# Preemption waits for victims that take their time to leave. Two 8-GPU H100 nodes hold one
# gpu-low 8-GPU job each; a finalizer keeps a deleted job Terminating, as a long grace period
# would. A gpu-critical 8-GPU pod arrives: the younger job is evicted and stays Terminating
# for 40 s. All that time the critical pod stays nominated for that node, unbound, and the
# other job is not evicted too (a nomination holds while its victims leave, not just 30 s).
# Once the victim is gone the critical pod is bound to that node.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
[ "$E2E_KWOK" = 1 ] || { echo "kwok is needed for start times: skipped"; exit 77; }
"$DRIVER" nodes <<'S' || exit 1
2 h100 H100-80GB 8 whole
S
"$K" apply -f "$SEED/gpu-priority-class.yaml" > "$E2E_DIR/apply.log" 2>&1
"$K" get priorityclass gpu-critical > /dev/null || exit 1
"$K" create namespace ml > /dev/null
tn_start --min-runtime 0 || exit 1
hold='{"metadata":{"finalizers":["gpusched.io/e2e-hold"]}}'
for i in 0 1; do
    tn_pods ml low $i $((i + 1)) gpu-low nvidia.com/gpu=8 app=low | "$K" create -f - > /dev/null
    "$K" patch pod -n ml low-$i --type=merge -p "$hold" > /dev/null || exit 1
    tn_wait 30 tn_running_ge ml $((i + 1)) || tn_fail "low-$i not Running"
    sleep 2
done
victim_node=$("$K" get pod -n ml low-1 -o jsonpath='{.spec.nodeName}')
tn_pods ml critical 0 1 gpu-critical nvidia.com/gpu=8 | "$K" create -f - > /dev/null
terminating() { [ -n "$("$K" get pod -n ml "$1" -o jsonpath='{.metadata.deletionTimestamp}')" ]; }
tn_wait 10 terminating low-1 || tn_fail "the younger job was not evicted"
nom=$("$K" get pod -n ml critical-0 -o jsonpath='{.status.nominatedNodeName}')
[ "$nom" = "$victim_node" ] || tn_fail "nominatedNodeName '$nom', want $victim_node"
echo "low-1 Terminating (held by a finalizer); critical-0 nominated for $nom; waiting 40 s"
sleep 40
terminating low-0 && tn_fail "the older job was evicted too while the victim was leaving"
[ -z "$("$K" get pod -n ml critical-0 -o jsonpath='{.spec.nodeName}')" ] ||
    tn_fail "critical-0 was bound while its victim still held the GPUs"
"$K" patch pod -n ml low-1 --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' > /dev/null
t0=$(tn_now_ms)
bound_to() { [ "$("$K" get pod -n ml critical-0 -o jsonpath='{.spec.nodeName}')" = "$1" ]; }
if tn_wait 10 bound_to "$victim_node"; then
    echo "critical-0 bound to $victim_node $(( $(tn_now_ms) - t0 )) ms after the victim left"
else
    tn_fail "critical-0 not bound to $victim_node after the victim left"
fi
v=$(curl -s "http://127.0.0.1:$TN_PORT/metrics" | awk '/^gpusched_preemption_victims_total/ {print $2}')
[ "$v" = 1 ] || tn_fail "victims metric $v, want 1"
"$K" patch pod -n ml low-0 --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' > /dev/null
tn_done
