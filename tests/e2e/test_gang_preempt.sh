#!/usr/bin/env bash
# A gang preempts as a whole on the real control plane. Three 8-GPU H100 nodes, the article's
# PriorityClasses as they are. Low-priority training (gpu-low, 8 GPUs each) fills every
# node, one job a few seconds after the other.
#   1. a gpu-high PodGroup of 4 pods x 8 GPUs arrives: even evicting everything leaves 24
#      GPUs, so nobody is evicted and the gang holds nothing.
#   2. a gpu-high PodGroup of 2 pods x 8 GPUs arrives: the two youngest training pods get
#      DisruptionTarget and go; both members are bound together (never one without the other)
#      within 10 s; the oldest training pod keeps running.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
[ "$E2E_KWOK" = 1 ] || { echo "kwok is needed for victims to finish terminating: skipped"; exit 77; }
"$DRIVER" nodes <<'S' || exit 1
3 h100 H100-80GB 8 whole
S
tn_crds || exit 1
"$K" apply -f "$SEED/gpu-priority-class.yaml" > "$E2E_DIR/apply.log" 2>&1
"$K" get priorityclass gpu-high > /dev/null || exit 1
"$K" create namespace ml > /dev/null
tn_start --min-runtime 0 || exit 1
for i in 0 1 2; do
    tn_pods ml train $i $((i + 1)) gpu-low nvidia.com/gpu=8 app=train | "$K" create -f - > /dev/null
    tn_wait 30 tn_running_ge ml $((i + 1)) || tn_fail "train-$i not Running"
    sleep 2
done
tn_watch ml
"$K" apply -f - > /dev/null <<'G' || exit 1
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: too-big, namespace: ml}
spec: {minMember: 4}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: finetune, namespace: ml}
spec: {minMember: 2}
G
# 1. a gang that cannot fit even by preempting evicts nobody
tn_pods ml big 0 4 gpu-high nvidia.com/gpu=8 scheduling.x-k8s.io/pod-group=too-big |
    "$K" create -f - > /dev/null
sleep 4
[ "$(tn_bound ml app=train)" = 3 ] || tn_fail "a gang that cannot fit evicted training pods"
[ "$(tn_bound ml scheduling.x-k8s.io/pod-group=too-big)" = 0 ] || tn_fail "the 4-pod gang got GPUs"
"$GS" explain ml/big-0 --kubeconfig "$E2E_DIR/scheduler.kubeconfig" > "$E2E_DIR/x1.txt"
sed 's/^/  explain: /' "$E2E_DIR/x1.txt"
grep -q "the gang holds nothing" "$E2E_DIR/x1.txt" || tn_fail "explain does not say the gang holds nothing"
"$K" delete pods -n ml -l scheduling.x-k8s.io/pod-group=too-big --grace-period 0 --force > /dev/null 2>&1
tn_wait 20 sh -c "[ -z \"\$(\"$K\" get pods -n ml -l scheduling.x-k8s.io/pod-group=too-big -o name)\" ]"
# 2. a gang of 2 x 8 preempts the two youngest jobs and starts whole
t0=$(tn_now_ms)
tn_pods ml ft 0 2 gpu-high nvidia.com/gpu=8 scheduling.x-k8s.io/pod-group=finetune |
    "$K" create -f - > /dev/null
seen=""
for i in $(seq 1 100); do
    n=$(tn_bound ml scheduling.x-k8s.io/pod-group=finetune)
    case " $seen " in *" $n "*) ;; *) seen="$seen $n" ;; esac
    [ "$n" = 2 ] && break
    sleep 0.1
done
echo "gang bound counts seen while polling:$seen"
if [ "$(tn_bound ml scheduling.x-k8s.io/pod-group=finetune)" = 2 ]; then
    echo "gang bound after $(( $(tn_now_ms) - t0 )) ms"
else
    tn_fail "the gang was not bound within 10 s"
    "$K" get pods -n ml -o wide
fi
# one decision binds both members (the API takes one Binding per pod, so a poll may catch
# the moment between the two requests): the scheduler placed the gang in one step, once
n=$(grep -c "gang ml/finetune: 2 pods placed together" "$E2E_DIR/scheduler.log")
[ "$n" = 1 ] || tn_fail "the gang was not placed in one step ($n times 'placed together')"
grep -q "gang ml/finetune: 1 pods placed together" "$E2E_DIR/scheduler.log" &&
    tn_fail "a member was placed on its own"
tn_wait 20 tn_running_ge ml 3 || tn_fail "the gang is not Running"
left=$("$K" get pods -n ml -l app=train -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
[ "$left" = train-0 ] || tn_fail "want only the oldest training pod left, got: $(echo $left)"
grep -q "gang ml/finetune (2 pods): preempting 2 pods" "$E2E_DIR/scheduler.log" ||
    tn_fail "the scheduler log does not show one preemption for the whole gang"
grep "preempting 2 pods" "$E2E_DIR/scheduler.log" | head -1 | sed 's/^/  log: /'
tn_disrupted train-1 train-2 || TN_OK=1
v=$(curl -s "http://127.0.0.1:$TN_PORT/metrics" | awk '/^gpusched_preemption_victims_total/ {print $2}')
[ "$v" = 2 ] || tn_fail "victims metric $v, want 2"
tn_done
