#!/usr/bin/env bash
# Kueue in front of gpusched, as GPU clusters run it: the real Kueue manager (sigs.k8s.io/kueue
# v0.17.0, built from the pinned module by build-control-plane.sh) with its release manifests
# (config/default rendered by kubectl's kustomize from the module cache: CRDs with their
# conversion webhooks, RBAC, webhook configurations), run as a process outside the cluster
# under its ServiceAccount's name (so the release's RBAC is all it gets), its webhook
# certificates made and injected by its internal cert management (the test copies them from
# their Secret to its cert folder, as the Secret volume of its Deployment would). The API
# server reaches its webhooks through their Service (kube-apiserver
# --enable-aggregator-routing: the Service's EndpointSlice, which names this machine's first
# non-loopback address, where Kueue serves). kube-controller-manager runs the Job controller,
# the ephemeral volume controller and the volume binder; kwok runs the pods and completes the
# Job's.
#
# Three A100 nodes and one H100 node of 8 GPUs, each with a 100Gi local volume of a
# WaitForFirstConsumer class. A ResourceFlavor for the A100s (its nodeLabels, the GPU
# Operator's product label), a StrictFIFO ClusterQueue of 16 GPUs, a LocalQueue in ml:
#   1. a Pod of 8 GPUs under Kueue's pod integration: Kueue's webhook gates it
#      (kueue.x-k8s.io/admission and kueue.x-k8s.io/topology); admitted, ungated, bound by
#      gpusched to an A100
#   2. a Job of 2 pods x 8 GPUs, each with a generic ephemeral volume of the local class:
#      Kueue's webhook suspends it; 8 GPUs short, its Workload is refused ("insufficient unused
#      quota ... 8 more needed"): no pod, no claim
#   3. a second Pod of 8 GPUs (it would fit, but StrictFIFO puts it behind the Job): it stays
#      gated and unbound, and gpusched reports it gated
#   4. the first Pod ends (Succeeded), its Workload finishes: the Job's Workload is admitted,
#      the Job unsuspended, its 2 pods bound by gpusched on two A100s (the flavor's
#      nodeSelector), each claim bound to the volume on its pod's node; kwok completes them,
#      the Workload finishes
#   5. only then is the second Pod admitted (not before the Job's Workload finished), ungated
#      and bound by gpusched
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
# the webhooks' Service resolved to its EndpointSlice, as the API server reaches webhooks on a
# cluster without kube-proxy; an EndpointSlice may not name a loopback address
E2E_APISERVER_ARGS="--enable-aggregator-routing=true"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
KUEUE_VERSION=v0.17.0 # as build-control-plane.sh pins it
KUEUE="$E2E_BIN/kueue-$KUEUE_VERSION"
[ -x "$KUEUE" ] || skip "kueue did not build (see the control plane's build.log)"
KUEUE_MOD="$(cat "$KUEUE.moddir" 2>/dev/null)"
[ -d "$KUEUE_MOD/config/default" ] || skip "kueue's module folder '$KUEUE_MOD' is gone from the Go module cache"
[ "${E2E_KWOK:-0}" = 1 ] || skip "kwok unavailable: the Job's pods would never complete"
HOST_IP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}')
[ -n "$HOST_IP" ] || HOST_IP=$(hostname -I 2>/dev/null | awk '{print $1}')
[ -n "$HOST_IP" ] || skip "no non-loopback IPv4 address for Kueue's webhook endpoint"

"$DRIVER" nodes <<'S' || exit 1
3 a100 A100-80GB 8 whole
1 h100 H100-80GB 8 whole
S
A100=$("$K" get node a100-000 -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.product}')
[ -n "$A100" ] || { echo "FAIL: a100-000 has no nvidia.com/gpu.product label"; exit 1; }

"$E2E_BIN/kube-controller-manager" --kubeconfig "$E2E_DIR/admin.kubeconfig" --leader-elect=false \
    --secure-port 0 \
    --controllers job-controller,ephemeral-volume-controller,persistentvolume-binder-controller \
    > "$E2E_DIR/controller-manager.log" 2>&1 &
echo $! > "$E2E_DIR/kcm.pid"
tn_start || exit 1

# --- Kueue's release manifests, from the module cache: all but its Deployment (the manager runs
# here as a process) and the visibility APIService (its on-demand API is off)
"$K" kustomize "$KUEUE_MOD/config/default" > "$E2E_DIR/kueue-release.yaml" ||
    { echo "FAIL: kubectl kustomize $KUEUE_MOD/config/default"; exit 1; }
python3 - "$E2E_DIR/kueue-release.yaml" > "$E2E_DIR/kueue-apply.yaml" <<'P' || exit 1
import re, sys
docs = re.split(r"(?m)^---$", open(sys.argv[1]).read())
keep = [d for d in docs if d.strip() and not re.search(r"(?m)^kind: (Deployment|APIService)$", d)]
kinds = sorted(set(re.search(r"(?m)^kind: (\w+)$", d).group(1) for d in keep))
print("---".join(keep))
print("kueue: applying %d of %d objects: %s" % (len(keep), len(docs), ", ".join(kinds)), file=sys.stderr)
P
# create, not apply: the Workload CRD is larger than apply's last-applied annotation may be
"$K" create -f "$E2E_DIR/kueue-apply.yaml" > /dev/null || { echo "FAIL: creating Kueue's objects"; exit 1; }
"$K" wait --for condition=established --timeout=60s crd/workloads.kueue.x-k8s.io \
    crd/clusterqueues.kueue.x-k8s.io crd/localqueues.kueue.x-k8s.io \
    crd/resourceflavors.kueue.x-k8s.io > /dev/null || { echo "FAIL: Kueue's CRDs not established"; exit 1; }
WEBHOOK_PORT=$(e2e_free_port); HEALTH_PORT=$(e2e_free_port); METRICS_PORT=$(e2e_free_port)
"$K" create -f - > /dev/null <<O || { echo "FAIL: the webhook Service's EndpointSlice"; exit 1; }
{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
 "metadata": {"name": "kueue-webhook-service-e2e", "namespace": "kueue-system",
              "labels": {"kubernetes.io/service-name": "kueue-webhook-service"}},
 "addressType": "IPv4", "ports": [{"name": "", "port": $WEBHOOK_PORT, "protocol": "TCP"}],
 "endpoints": [{"addresses": ["$HOST_IP"], "conditions": {"ready": true}}]}
O
# Kueue's identity: its ServiceAccount's user name (the release's RBAC binds that account)
e2e_cert kueue system:serviceaccount:kueue-system:kueue-controller-manager system:serviceaccounts
e2e_kubeconfig "$E2E_DIR/kueue.kubeconfig" "$E2E_DIR/kueue.crt" "$E2E_DIR/kueue.key"
cat > "$E2E_DIR/kueue-config.yaml" <<C
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:$HEALTH_PORT
metrics:
  bindAddress: 127.0.0.1:$METRICS_PORT
webhook:
  host: $HOST_IP
  port: $WEBHOOK_PORT
  certDir: $E2E_DIR/kueue-certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: kueue-webhook-service
  webhookSecretName: kueue-webhook-server-cert
manageJobsWithoutQueueName: false
integrations:
  frameworks: [batch/job, pod]
featureGates:
  VisibilityOnDemand: false
C
KUBECONFIG="$E2E_DIR/kueue.kubeconfig" "$KUEUE" --config "$E2E_DIR/kueue-config.yaml" \
    > "$E2E_DIR/kueue.log" 2>&1 &
echo $! > "$E2E_DIR/kueue.pid"

kueue_alive() { kill -0 "$(cat "$E2E_DIR/kueue.pid")" 2>/dev/null; }
kueue_fail() { # MESSAGE: fail and stop, with Kueue's last words
    tn_fail "$*"
    echo "--- kueue log (tail)"; tail -25 "$E2E_DIR/kueue.log" | cut -c1-400
    tn_done
}
# The kubelet's part: in its Deployment, Kueue's certificate Secret is a volume mounted on its
# certDir, and its rotator waits for the files to appear there. Once the rotator has written the
# Secret, its keys become the folder's files, as a Secret volume projects them.
secret_written() {
    "$K" get secret -n kueue-system kueue-webhook-server-cert -o json 2>/dev/null | python3 -c '
import base64, json, os, sys
data, d = json.load(sys.stdin).get("data") or {}, sys.argv[1]
if not all(k in data for k in ("ca.crt", "tls.crt", "tls.key")):
    sys.exit(1)
os.makedirs(d, exist_ok=True)
for k in ("ca.crt", "tls.key", "tls.crt"):
    open(os.path.join(d, "." + k), "wb").write(base64.b64decode(data[k]))
    os.rename(os.path.join(d, "." + k), os.path.join(d, k))' "$E2E_DIR/kueue-certs"
}
tn_wait 60 secret_written || kueue_fail "Kueue wrote no certificate to its Secret in 60 s"

# the objects the test queues (namespace ml: Kueue manages every namespace but its own and
# kube-system)
"$K" create -f - > /dev/null <<O || exit 1
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
O
for n in a100-000 a100-001 a100-002 h100-000; do
    printf '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-%s"},"spec":{"capacity":{"storage":"100Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","storageClassName":"local","local":{"path":"/mnt/data"},"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["%s"]}]}]}}}}\n' "$n" "$n"
done | "$K" create -f - > /dev/null || exit 1

# Kueue is serving once the API server's admission passes through its webhook: a Job dry-run
# (server side) with a queue label comes back suspended
probe_job() {
    printf '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"probe","namespace":"ml","labels":{"kueue.x-k8s.io/queue-name":"team"}},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"registry.invalid/none:1"}]}}}}\n'
}
kueue_serving() {
    kueue_alive && [ "$(probe_job | "$K" create --dry-run=server -f - -o jsonpath='{.spec.suspend}' 2>/dev/null)" = true ]
}
tn_wait 180 kueue_serving || kueue_fail "Kueue's webhook did not suspend a queued Job in 180 s"
echo "ok   Kueue serving: its internal certificates injected, its webhook reached through the Service"

"$K" create -f - > /dev/null <<O || kueue_fail "creating the queues"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec:
  nodeLabels: {nvidia.com/gpu.product: "$A100"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: gpu}
spec:
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: cpu, nominalQuota: 64}
      - {name: memory, nominalQuota: 256Gi}
      - {name: nvidia.com/gpu, nominalQuota: 16}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team, namespace: ml}
spec: {clusterQueue: gpu}
O
cq_active() {
    [ "$("$K" get clusterqueue gpu -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" = True ]
}
tn_wait 60 cq_active || kueue_fail "ClusterQueue gpu not Active"

# the pod template of a GPU worker (8 GPUs), as JSON
worker() { # [VOLUME]
    local mount="" vol=""
    if [ -n "${1:-}" ]; then
        mount=',"volumeMounts":[{"name":"data","mountPath":"/data"}]'
        vol=',"volumes":[{"name":"data","ephemeral":{"volumeClaimTemplate":{"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"local","resources":{"requests":{"storage":"10Gi"}}}}}}]'
    fi
    printf '{"schedulerName":"gpusched","restartPolicy":"Never","containers":[{"name":"main","image":"registry.invalid/train:1","resources":{"requests":{"cpu":"4","memory":"16Gi"},"limits":{"cpu":"4","memory":"16Gi","nvidia.com/gpu":"8"}}%s}]%s}' \
        "$mount" "$vol"
}
# queued_pod NAME: a Pod under Kueue's pod integration; prints its gates as the API server
# stored them (after Kueue's webhook) and its kueue.x-k8s.io/managed label
queued_pod() {
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"ml","labels":{"kueue.x-k8s.io/queue-name":"team"}},"spec":%s}\n' \
        "$1" "$(worker)" | "$K" create -f - \
        -o jsonpath='{range .spec.schedulingGates[*]}{.name}{" "}{end}managed={.metadata.labels.kueue\.x-k8s\.io/managed}'
}
node_of() { "$K" get pod -n ml "$1" -o jsonpath='{.spec.nodeName}'; }
gates_of() { "$K" get pod -n ml "$1" -o jsonpath='{range .spec.schedulingGates[*]}{.name}{" "}{end}'; }
# wl OWNER FIELD: a field of the Workload Kueue made for the object named OWNER in ml:
#   name, cond:TYPE (status/reason/message), time:TYPE (the condition's lastTransitionTime)
wl() {
    "$K" get workloads.kueue.x-k8s.io -n ml -o json | python3 -c '
import json, sys
owner, field = sys.argv[1:3]
for w in json.load(sys.stdin)["items"]:
    if any(r["name"] == owner for r in w["metadata"].get("ownerReferences", [])):
        if field == "name":
            print(w["metadata"]["name"])
        else:
            what, typ = field.split(":")
            for c in w.get("status", {}).get("conditions", []):
                if c["type"] == typ:
                    print("%s/%s/%s" % (c["status"], c["reason"], c["message"]) if what == "cond"
                          else c["lastTransitionTime"])
        break' "$1" "$2"
}
wl_true() { case "$(wl "$1" "cond:$2")" in True/*) true ;; *) false ;; esac; } # OWNER TYPE
# scheduled_by_gpusched POD: a Scheduled Event from gpusched regards it
scheduled_by_gpusched() {
    "$K" get events.events.k8s.io -n ml -o json | python3 -c '
import json, sys
sys.exit(0 if any(e.get("reason") == "Scheduled" and e["regarding"]["name"] == sys.argv[1]
                  and e.get("reportingController") == "gpusched.io/scheduler"
                  for e in json.load(sys.stdin)["items"]) else 1)' "$1"
}
pending_of() { # NAME: gpusched's /debug/pending line for ml/NAME, "reason|message"
    curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if r["namespace"] == "ml" and r["pod"] == sys.argv[1]:
        print("%s|%s" % (r["reason"], r["message"]))' "$1"
}
on_a100() { case "$1" in a100-*) true ;; *) false ;; esac; }

# --- 1. a Pod under the pod integration: gated by Kueue's webhook, admitted, placed
g=$(queued_pod hold) || kueue_fail "creating ml/hold"
# Kueue's webhook gates it for admission, and for topology (TopologyAwareScheduling is on by
# default; admission without a topology lifts both)
GATES="kueue.x-k8s.io/admission kueue.x-k8s.io/topology"
[ "$g" = "$GATES managed=true" ] ||
    tn_fail "ml/hold as stored: '$g', want the gates $GATES and the label managed=true"
tn_wait 60 wl_true hold Admitted || kueue_fail "ml/hold's Workload not admitted: '$(wl hold cond:QuotaReserved)'"
tn_wait 60 eval '[ -n "$(node_of hold)" ]' || tn_fail "ml/hold not bound once admitted (gates '$(gates_of hold)')"
n=$(node_of hold)
on_a100 "$n" || tn_fail "ml/hold on '$n', want an A100 (the flavor's nodeLabels)"
[ -z "$(gates_of hold)" ] || tn_fail "ml/hold bound with gates '$(gates_of hold)'"
tn_wait 30 scheduled_by_gpusched hold || tn_fail "no Scheduled Event from gpusched for ml/hold"
echo "ok   ml/hold gated by Kueue's webhook, Workload $(wl hold name) admitted, ungated, bound by gpusched to $n"

# --- 2. a Job of 2 x 8 GPUs with WaitForFirstConsumer volumes, 8 GPUs short of the quota
job_json() {
    printf '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"train","namespace":"ml","labels":{"kueue.x-k8s.io/queue-name":"team"}},"spec":{"parallelism":2,"completions":2,"template":{"spec":%s}}}\n' \
        "$(worker data)"
}
s=$(job_json | "$K" create -f - -o jsonpath='{.spec.suspend}') || kueue_fail "creating ml/train"
[ "$s" = true ] || tn_fail "ml/train as stored: suspend '$s', want true (Kueue's webhook)"
refused() { case "$(wl train cond:QuotaReserved)" in False/Pending/*"insufficient unused quota for nvidia.com/gpu in flavor a100, 8 more needed"*) true ;; *) false ;; esac; }
tn_wait 60 refused || kueue_fail "ml/train's Workload not refused for quota: '$(wl train cond:QuotaReserved)'"
echo "  ml/train's Workload $(wl train name): $(wl train cond:QuotaReserved)"
[ "$("$K" get job -n ml train -o jsonpath='{.spec.suspend}')" = true ] || tn_fail "ml/train not suspended while refused"
c=$("$K" get pods -n ml -l batch.kubernetes.io/job-name=train -o name | grep -c .)
[ "$c" = 0 ] || tn_fail "ml/train has $c pods while refused"
c=$("$K" get pvc -n ml -o name | grep -c .)
[ "$c" = 0 ] || tn_fail "ml has $c claims while ml/train is refused"
echo "ok   ml/train suspended by Kueue's webhook and refused for quota: no pod, no claim"

# --- 3. a second Pod, behind the Job in the StrictFIFO queue: it stays gated
g=$(queued_pod late) || kueue_fail "creating ml/late"
[ "$g" = "$GATES managed=true" ] || tn_fail "ml/late as stored: '$g'"
cq_pending2() { [ "$("$K" get clusterqueue gpu -o jsonpath='{.status.pendingWorkloads}')" = 2 ]; }
tn_wait 60 cq_pending2 || kueue_fail "ClusterQueue gpu does not count 2 pending Workloads (ml/train, ml/late)"
late_gated() { [ "$(pending_of late)" = "gated|waiting for scheduling gates: [$GATES]" ]; }
tn_wait 60 late_gated || tn_fail "gpusched does not report ml/late gated: '$(pending_of late)'"
wl_true late QuotaReserved && tn_fail "ml/late got quota behind ml/train (StrictFIFO)"
[ -z "$(node_of late)" ] || tn_fail "ml/late (gated) bound to $(node_of late)"
[ "$(gates_of late)" = "$GATES " ] || tn_fail "ml/late's gates: '$(gates_of late)'"
echo "ok   ml/late queued behind ml/train: gated, unbound, gpusched says $(pending_of late)"

# --- 4. the quota freed: the Job admitted, its pods placed, their claims bound on their nodes.
# ml/hold's container exits (the test plays its kubelet, as kwok's pod-complete stage does for
# a Job's pods): Kueue finishes its Workload
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
"$K" patch pod -n ml hold --subresource=status --type=merge -p "{\"status\": {\"phase\": \"Succeeded\",
  \"containerStatuses\": [{\"name\": \"main\", \"image\": \"registry.invalid/train:1\", \"ready\": false,
  \"restartCount\": 0, \"started\": false, \"state\": {\"terminated\": {\"exitCode\": 0,
  \"reason\": \"Completed\", \"startedAt\": \"$now\", \"finishedAt\": \"$now\"}}}]}}" > /dev/null ||
    tn_fail "ending ml/hold"
tn_wait 60 wl_true hold Finished || kueue_fail "ml/hold's Workload not finished: '$(wl hold cond:Finished)'"
tn_wait 120 wl_true train Admitted ||
    kueue_fail "ml/train's Workload not admitted once ml/hold left: '$(wl train cond:QuotaReserved)'"
echo "  ml/train's Workload admitted: $(wl train cond:Admitted)"
job_pods() { "$K" get pods -n ml -l batch.kubernetes.io/job-name=train -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}'; }
two_bound() { [ "$(job_pods | awk 'NF == 2' | grep -c .)" = 2 ]; }
tn_wait 120 two_bound || tn_fail "ml/train's pods not both bound: $(job_pods | tr '\n' ';')"
nodes=""
while read -r p n; do
    [ -n "$n" ] || continue
    on_a100 "$n" || tn_fail "$p on '$n', want an A100 (the flavor's nodeLabels)"
    sel=$("$K" get pod -n ml "$p" -o jsonpath='{.spec.nodeSelector.nvidia\.com/gpu\.product}')
    [ "$sel" = "$A100" ] || tn_fail "$p's nodeSelector product '$sel', want '$A100' (Kueue's flavor)"
    tn_wait 30 scheduled_by_gpusched "$p" || tn_fail "no Scheduled Event from gpusched for $p"
    claim="$p-data"
    tn_wait 60 eval '[ "$("$K" get pvc -n ml "$claim" -o jsonpath="{.status.phase}")" = Bound ]' ||
        tn_fail "claim $claim not Bound"
    pv=$("$K" get pvc -n ml "$claim" -o jsonpath='{.spec.volumeName}')
    pvnode=$("$K" get pv "$pv" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')
    [ "$pvnode" = "$n" ] || tn_fail "$p on $n, its claim $claim bound to $pv on '$pvnode'"
    echo "ok   $p bound by gpusched to $n, its claim $claim bound to $pv (on $pvnode)"
    nodes="$nodes $n"
done < <(job_pods)
[ "$(echo $nodes | tr ' ' '\n' | sort -u | grep -c .)" = 2 ] || tn_fail "ml/train's pods share a node:$nodes"
tn_wait 120 wl_true train Finished || tn_fail "ml/train's Workload did not finish: '$(wl train cond:Finished)'"

# --- 5. the second Pod admitted only once the Job's Workload finished, then placed
tn_wait 120 wl_true late Admitted || kueue_fail "ml/late not admitted once ml/train finished: '$(wl late cond:QuotaReserved)'"
fin=$(wl train time:Finished); adm=$(wl late time:QuotaReserved)
[[ ! "$adm" < "$fin" ]] || tn_fail "ml/late got quota at $adm, before ml/train finished at $fin"
tn_wait 60 eval '[ -n "$(node_of late)" ]' || tn_fail "ml/late not bound once admitted (gates '$(gates_of late)')"
n=$(node_of late)
on_a100 "$n" || tn_fail "ml/late on '$n', want an A100"
tn_wait 30 scheduled_by_gpusched late || tn_fail "no Scheduled Event from gpusched for ml/late"
echo "ok   ml/late admitted at $adm (ml/train finished at $fin), ungated, bound by gpusched to $n"

kueue_alive || tn_fail "the Kueue manager died"
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || tn_fail "the scheduler died"
"$K" get pods -n ml -o wide | sed 's/^/  /'
tn_done
