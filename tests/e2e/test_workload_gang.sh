#!/usr/bin/env bash
# The Job controller's gang through the Workload API (Kubernetes v1.37.2), end to end: the real
# kube-controller-manager's Job controller (feature gates GenericWorkload and WorkloadWithJob;
# kube-apiserver serving scheduling.k8s.io/v1beta1) turns a Job with spec.scheduling's gang
# policy into a Workload and a PodGroup (minCount defaulted to the Job's parallelism) and
# stamps spec.schedulingGroup.podGroupName on its pods (pkg/controller/job/
# job_scheduling_manager.go); gpusched places them on fake GPU nodes.
#   1. parallelism 4, 8 GPUs a pod, priority class gpu-high (the PodGroup's priority is the
#      pods', resolved by the Priority admission plugin), three free 8-GPU nodes: no pod is
#      bound (all or nothing),
#      gpusched writes PodGroupInitiallyScheduled=False (Unschedulable) on the PodGroup as
#      kube-scheduler does, explain says the gang holds nothing;
#   2. a 4th node joins: the 4 pods are bound together in one step, on 4 nodes, and the
#      condition turns True (Scheduled);
#   3. a Job without spec.scheduling gets the controller's basic PodGroup: its pods are placed
#      one by one, as kube-scheduler places them.
# No fake kubelet: kwok's stages complete a Job's pods as soon as they run (pod-complete), which
# would free a gang's GPUs before the next step; bound pods stay Pending and hold their GPUs.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
GATES="GenericWorkload=true,WorkloadWithJob=true"
export GS_E2E_KWOK=0
export E2E_APISERVER_ARGS="--feature-gates $GATES --runtime-config scheduling.k8s.io/v1beta1=true"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$K" get --raw /apis/scheduling.k8s.io/v1beta1 > /dev/null ||
    { echo "FAIL: kube-apiserver does not serve scheduling.k8s.io/v1beta1"; exit 1; }
"$DRIVER" nodes <<'S' || exit 1
3 h100 H100-80GB 8 whole
S
# the Job controller alone, with the gates that make it create Workloads and PodGroups
"$E2E_BIN/kube-controller-manager" --kubeconfig "$E2E_DIR/admin.kubeconfig" \
    --leader-elect=false --secure-port 0 --use-service-account-credentials=false \
    --controllers job --feature-gates "$GATES" > "$E2E_DIR/controller-manager.log" 2>&1 &
echo $! > "$E2E_DIR/kcm.pid"
tn_start || exit 1
"$K" create namespace ml > /dev/null

"$K" create priorityclass gpu-high --value 1000 > /dev/null

# job NAME PARALLELISM GPUS [gang]: a Job of GPU pods for gpusched; a gang of gpu-high pods
# when asked
job() {
    python3 - "$@" <<'P' | "$K" create -f - > /dev/null
import json, sys
name, par, gpus = sys.argv[1], int(sys.argv[2]), sys.argv[3]
spec = {"parallelism": par, "completions": par, "backoffLimit": 0,
        "template": {"spec": {
            "schedulerName": "gpusched", "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "registry.invalid/train:1",
                            "resources": {"limits": {"cpu": "1", "memory": "1Gi",
                                                     "nvidia.com/gpu": gpus}}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}}
if len(sys.argv) > 4:
    spec["scheduling"] = {"schedulingPolicy": {"gang": {}}}  # minCount: the parallelism
    spec["template"]["spec"]["priorityClassName"] = "gpu-high"
print(json.dumps({"apiVersion": "batch/v1", "kind": "Job",
                  "metadata": {"name": name, "namespace": "ml"}, "spec": spec}))
P
}
# pg_of JOB: the name of the PodGroup the Job controller made for the Job (owner: the Job)
pg_of() {
    "$K" get podgroups.v1beta1.scheduling.k8s.io -n ml -o json | python3 -c '
import json, sys
for g in json.load(sys.stdin)["items"]:
    if any(o.get("kind") == "Job" and o.get("name") == sys.argv[1] and o.get("controller")
           for o in g["metadata"].get("ownerReferences", [])):
        print(g["metadata"]["name"])' "$1"
}
# cond PODGROUP: its PodGroupInitiallyScheduled condition as "status reason"
cond() {
    "$K" get podgroups.v1beta1.scheduling.k8s.io -n ml "$1" -o \
        jsonpath='{range .status.conditions[?(@.type=="PodGroupInitiallyScheduled")]}{.status} {.reason}{end}'
}
cond_is() { [ "$(cond "$1")" = "$2" ]; }
# grouped JOB PODGROUP N: the Job has N pods, each naming the PodGroup
grouped() {
    [ "$("$K" get pods -n ml -l "batch.kubernetes.io/job-name=$1" \
        -o jsonpath='{range .items[*]}{.spec.schedulingGroup.podGroupName}{"\n"}{end}' |
        grep -cx "$2")" = "$3" ]
}
bound_of() { tn_bound ml "batch.kubernetes.io/job-name=$1"; }
bound_is() { [ "$(bound_of "$1")" = "$2" ]; }
pg_made() { [ -n "$(pg_of "$1")" ]; }
workload_made() { [ -n "$("$K" get workloads.v1beta1.scheduling.k8s.io -n ml -o name)" ]; }

# 1. a gang of 4 x 8 GPUs where 3 fit
job train 4 8 gang || { tn_fail "the Job was refused"; tn_done; }
tn_wait 60 workload_made ||
    { tn_fail "the Job controller made no Workload"; tail -20 "$E2E_DIR/controller-manager.log"; tn_done; }
tn_wait 60 pg_made train ||
    { tn_fail "the Job controller made no PodGroup"; tail -20 "$E2E_DIR/controller-manager.log"; tn_done; }
PG=$(pg_of train)
echo "the Job controller made PodGroup ml/$PG:"
"$K" get podgroups.v1beta1.scheduling.k8s.io -n ml "$PG" -o jsonpath='{.spec}' | sed 's/^/  /'; echo
[ "$("$K" get podgroups.v1beta1.scheduling.k8s.io -n ml "$PG" \
    -o jsonpath='{.spec.schedulingPolicy.gang.minCount}')" = 4 ] ||
    tn_fail "the PodGroup's minCount is not the Job's parallelism"
[ "$("$K" get podgroups.v1beta1.scheduling.k8s.io -n ml "$PG" -o jsonpath='{.spec.priority}')" = 1000 ] ||
    tn_fail "the PodGroup's priority is not gpu-high's"
tn_wait 60 grouped train "$PG" 4 || tn_fail "the Job's 4 pods do not name PodGroup $PG"
# gpusched tried the whole gang and said so on the PodGroup; nothing of it is bound
tn_wait 60 cond_is "$PG" "False Unschedulable" ||
    tn_fail "PodGroup $PG: PodGroupInitiallyScheduled is '$(cond "$PG")', want False Unschedulable"
[ "$(bound_of train)" = 0 ] || tn_fail "a gang that cannot fit got $(bound_of train) pods bound"
"$K" get podgroups.v1beta1.scheduling.k8s.io -n ml "$PG" \
    -o jsonpath='{.status.conditions[0].message}' | sed 's/^/  condition message: /'; echo
pod0=$("$K" get pods -n ml -l batch.kubernetes.io/job-name=train -o jsonpath='{.items[0].metadata.name}')
"$GS" explain "ml/$pod0" --kubeconfig "$E2E_DIR/scheduler.kubeconfig" > "$E2E_DIR/x1.txt"
sed 's/^/  explain: /' "$E2E_DIR/x1.txt"
grep -q "gang ml/$PG (4 pods, minCount 4).*the gang holds nothing" "$E2E_DIR/x1.txt" ||
    tn_fail "explain does not say the gang holds nothing"
[ "$(bound_of train)" = 0 ] || tn_fail "gang pods bound while only 3 nodes are free"

# 2. room for all: a 4th node; record how many are bound at each poll
"$DRIVER" nodes <<'S' || exit 1
1 h100b H100-80GB 8 whole
S
seen=""
for i in $(seq 1 300); do
    n=$(bound_of train)
    case " $seen " in *" $n "*) ;; *) seen="$seen $n" ;; esac
    [ "$n" = 4 ] && break
    sleep 0.1
done
echo "bound counts seen while polling:$seen"
[ "$(bound_of train)" = 4 ] || tn_fail "the gang was not bound once it fits ($(bound_of train) of 4)"
# one decision binds all four (the API takes one Binding per pod, so a poll may catch the
# moments between the requests): the scheduler placed the gang in one step, once
n=$(grep -c "gang ml/$PG: 4 pods placed together" "$E2E_DIR/scheduler.log")
[ "$n" = 1 ] || tn_fail "the gang was not placed in one step ($n times 'placed together')"
grep -qE "gang ml/$PG: [123] pods placed together" "$E2E_DIR/scheduler.log" &&
    tn_fail "members were placed apart"
nodes=$("$K" get pods -n ml -l batch.kubernetes.io/job-name=train \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)
[ "$nodes" = 4 ] || tn_fail "gang members share nodes ($nodes distinct)"
tn_wait 30 cond_is "$PG" "True Scheduled" ||
    tn_fail "PodGroup $PG: PodGroupInitiallyScheduled is '$(cond "$PG")', want True Scheduled"

# 3. a Job without spec.scheduling: the controller's basic PodGroup, pods one by one
"$DRIVER" nodes <<'S' || exit 1
1 h100c H100-80GB 8 whole
S
job single 2 1 || tn_fail "the basic Job was refused"
tn_wait 60 pg_made single || tn_fail "the Job controller made no PodGroup for the basic Job"
BPG=$(pg_of single)
[ -n "$("$K" get podgroups.v1beta1.scheduling.k8s.io -n ml "$BPG" \
    -o jsonpath='{.spec.schedulingPolicy.basic}')" ] || tn_fail "PodGroup $BPG is not basic"
tn_wait 60 grouped single "$BPG" 2 || tn_fail "the basic Job's pods do not name $BPG"
tn_wait 30 bound_is single 2 ||
    tn_fail "the basic Job's pods were not placed ($(bound_of single) of 2)"
grep -q "gang ml/$BPG" "$E2E_DIR/scheduler.log" && tn_fail "a basic PodGroup was placed as a gang"
tn_wait 30 cond_is "$BPG" "True Scheduled" ||
    tn_fail "PodGroup $BPG: PodGroupInitiallyScheduled is '$(cond "$BPG")', want True Scheduled"
"$DRIVER" verify --expect-bound 6 > "$E2E_DIR/verify.log" 2>&1 ||
    { tn_fail verify; cat "$E2E_DIR/verify.log"; }
tn_done
