#!/usr/bin/env bash
# Gangs on the real control plane: a PodGroup (scheduling.x-k8s.io/v1alpha1, the CRD in
# deploy/crds/) of 4 pods x 8 GPUs starts all at once or not at all.
#   1. only 3 of its 4 pods exist: none is bound; explain says "3 of minMember 4".
#   2. the 4th pod arrives but the cluster has 3 free 8-GPU nodes: still none is bound, the
#      Events say the gang holds nothing, and an ordinary 8-GPU pod can still take a node.
#   3. a 4th node joins (the probe pod is gone): all 4 are bound in the same cycle.
#   4. a second PodGroup with scheduleTimeoutSeconds 2 that cannot fit says, once 2 s have
#      passed, that its timeout passed (and still holds nothing).
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
3 h100 H100-80GB 8 whole
S
tn_crds || exit 1
"$K" create namespace ml > /dev/null
"$K" apply -f - > /dev/null <<'G' || exit 1
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: llm-pretrain, namespace: ml}
spec: {minMember: 4, scheduleTimeoutSeconds: 600}
G
tn_start || exit 1
tn_pods ml worker 0 3 - nvidia.com/gpu=8 scheduling.x-k8s.io/pod-group=llm-pretrain |
    "$K" create -f - > /dev/null
sleep 4
[ "$(tn_bound ml)" = 0 ] || tn_fail "an incomplete gang got $(tn_bound ml) pods bound"
"$GS" explain ml/worker-0 --kubeconfig "$E2E_DIR/scheduler.kubeconfig" > "$E2E_DIR/x1.txt"
sed 's/^/  explain: /' "$E2E_DIR/x1.txt"
grep -q "3 of minMember 4" "$E2E_DIR/x1.txt" || tn_fail "explain does not say the gang is incomplete"
tn_pods ml worker 3 4 - nvidia.com/gpu=8 scheduling.x-k8s.io/pod-group=llm-pretrain |
    "$K" create -f - > /dev/null
sleep 4
[ "$(tn_bound ml)" = 0 ] || tn_fail "a gang that cannot fit got $(tn_bound ml) pods bound"
"$GS" explain ml/worker-3 --kubeconfig "$E2E_DIR/scheduler.kubeconfig" > "$E2E_DIR/x2.txt"
sed 's/^/  explain: /' "$E2E_DIR/x2.txt"
grep -q "the gang holds nothing" "$E2E_DIR/x2.txt" || tn_fail "explain does not say the gang holds nothing"
# it holds nothing: an ordinary 8-GPU pod still gets a whole node
"$K" create namespace probe > /dev/null
tn_pods probe p 0 1 - nvidia.com/gpu=8 | "$K" create -f - > /dev/null
tn_wait 20 tn_bound_ge probe 1 || tn_fail "the probe pod did not get a node: the gang held GPUs"
[ "$(tn_bound ml)" = 0 ] || tn_fail "gang pods bound while only 2 nodes are free"
"$K" delete pod -n probe p-0 --grace-period 0 --force > /dev/null 2>&1
tn_wait 20 sh -c "! \"$K\" get pod -n probe p-0 > /dev/null 2>&1"
# room for all: a 4th node; record how many are bound at each poll
"$DRIVER" nodes <<'S' || exit 1
1 h100b H100-80GB 8 whole
S
seen=""
for i in $(seq 1 150); do
    n=$(tn_bound ml)
    case " $seen " in *" $n "*) ;; *) seen="$seen $n" ;; esac
    [ "$n" = 4 ] && break
    sleep 0.1
done
echo "bound counts seen while polling:$seen"
[ "$(tn_bound ml)" = 4 ] || tn_fail "the gang was not bound once it fits ($(tn_bound ml) of 4)"
# one decision binds all four (the API takes one Binding per pod, so a poll may catch the
# moments between the requests): the scheduler placed the gang in one step, once
n=$(grep -c "gang ml/llm-pretrain: 4 pods placed together" "$E2E_DIR/scheduler.log")
[ "$n" = 1 ] || tn_fail "the gang was not placed in one step ($n times 'placed together')"
grep -qE "gang ml/llm-pretrain: [123] pods placed together" "$E2E_DIR/scheduler.log" &&
    tn_fail "members were placed apart"
nodes=$("$K" get pods -n ml -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)
[ "$nodes" = 4 ] || tn_fail "gang members share nodes ($nodes distinct)"
if [ "$E2E_KWOK" = 1 ]; then tn_wait 30 tn_running_ge ml 4 || tn_fail "gang not Running"; fi
"$K" apply -f - > /dev/null <<'G' || exit 1
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: too-big, namespace: ml}
spec: {minMember: 2, scheduleTimeoutSeconds: 2}
G
tn_pods ml huge 0 2 - nvidia.com/gpu=8 scheduling.x-k8s.io/pod-group=too-big |
    "$K" create -f - > /dev/null
sleep 4
"$GS" explain ml/huge-0 --kubeconfig "$E2E_DIR/scheduler.kubeconfig" > "$E2E_DIR/x3.txt"
grep -q "scheduleTimeoutSeconds 2 passed" "$E2E_DIR/x3.txt" ||
    { tn_fail "the timed-out gang does not say so"; cat "$E2E_DIR/x3.txt"; }
[ "$(tn_bound ml)" = 4 ] || tn_fail "the timed-out gang took GPUs"
"$DRIVER" verify --expect-bound 4 > "$E2E_DIR/verify.log" 2>&1 || { tn_fail verify; cat "$E2E_DIR/verify.log"; }
tn_done
