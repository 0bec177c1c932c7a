#!/usr/bin/env bash
# gpusched installed for real: `helm install` of charts/gpusched (Helm from its pinned module)
# on the real control plane with a real node (kubelet v1.37.2, containerd and runc, node.sh),
# the image built by scripts/image.py from the binary under test and imported into the node's
# containerd. The scheduler runs as two Pods with in-cluster config and the chart's RBAC, one
# wins the Lease and places pods; the agent Pod (fake GPU backend, from the chart's example
# values) registers its device plugin with the real kubelet, so the Node's allocatable shows
# the GPUs and MIG slices; GPU pods of a Deployment and a Job start as real containers and
# see NVIDIA_VISIBLE_DEVICES of the device their gpusched.io/devices annotation records as the
# scheduler wrote it: the agent steers the kubelet to it and corrects nothing
# (gpusched_agent_device_corrections_total stays 0) but for a pod bound by hand naming a
# device another pod holds.
# Then `helm upgrade` with changed values rolls the agent and the scheduler (the GPU pods keep
# running, a new one is placed), and `helm uninstall` removes what the chart made and nothing
# else.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/node.sh"
. "$(dirname "$0")/helm.sh"
gs_setup
ok=0
fail() { echo "FAIL: $*"; ok=1; }

# what exists before: every object of every listable kind, by kind, namespace and name (but
# the node's heartbeat Lease and what controllers make and remove on their own)
snapshot() { # FILE
    local kinds
    kinds="$(k api-resources --verbs=list -o name | grep -vE '^(events|events\.events\.k8s\.io)$' |
        paste -sd, -)"
    k get "$kinds" -A --no-headers \
        -o custom-columns='K:.kind,A:.apiVersion,N:.metadata.namespace,M:.metadata.name' |
        grep -vE '^(Event|Pod|ReplicaSet|ControllerRevision|EndpointSlice|Endpoints) ' |
        grep -vE '^Lease +\S+ +kube-node-lease ' |
        sort > "$1"
}
# an object the chart must leave alone at uninstall, though it looks like one of its own
k create namespace "$GS_NS" >/dev/null
k create configmap -n "$GS_NS" user-notes --from-literal=owner=platform-team >/dev/null
k label configmap -n "$GS_NS" user-notes app.kubernetes.io/name=gpusched \
    app.kubernetes.io/part-of=gpusched >/dev/null
k create clusterrole gpu-viewer --verb=get,list --resource=nodes >/dev/null
k label clusterrole gpu-viewer app.kubernetes.io/name=gpusched >/dev/null
snapshot "$E2E_DIR/before.txt"

# 1. install
gs_helm_install || exit 1
gs_inspect || { echo "FAIL: no fake-gpus ConfigMap in the release"; exit 1; }
sched_pods="$(k get pods -n "$GS_NS" -l app.kubernetes.io/component=scheduler -o name)"
[ "$(echo "$sched_pods" | grep -c .)" = 2 ] || fail "want 2 scheduler pods, got: $sched_pods"
for p in $sched_pods; do
    [ "$(k get -n "$GS_NS" "$p" -o jsonpath='{.status.containerStatuses[0].ready}')" = true ] ||
        fail "$p is not ready"
    k logs -n "$GS_NS" "$p" | grep -q "using in-cluster" || fail "$p does not use in-cluster config"
done
holder=""
gs_wait 60 "a scheduler pod holds the Lease" bash -c \
    "'$E2E_BIN/kubectl' get lease -n $GS_NS -o jsonpath='{.items[*].spec.holderIdentity}' | grep -q ." ||
    ok=1
holder="$(k get lease -n "$GS_NS" -o jsonpath='{.items[*].spec.holderIdentity}')"
echo "$sched_pods" | grep -q "pod/$holder\$" && echo "ok   the Lease is held by $holder" ||
    fail "the Lease holder '$holder' is not one of the scheduler pods"
agent="$(k get pods -n "$GS_NS" -l app.kubernetes.io/component=agent -o name)"
[ -n "$agent" ] && [ "$(k get -n "$GS_NS" "$agent" -o jsonpath='{.spec.nodeName}')" = "$E2E_NODE_NAME" ] ||
    fail "no agent pod on $E2E_NODE_NAME"
# the device plugin, registered with the real kubelet: the Node's allocatable
gs_wait 60 "the Node's allocatable shows the fake GPUs" bash -c \
    "[ \"\$('$E2E_BIN/kubectl' get node $E2E_NODE_NAME -o jsonpath='{.status.allocatable.nvidia\\.com/mig-3g\\.40gb}')\" = 2 ]" ||
    { gs_debug; ok=1; }
for r in nvidia.com/gpu nvidia.com/mig-3g.40gb nvidia.com/mig-1g.10gb; do
    echo "allocatable $r: $(gs_alloc "$r")"
done
[ "$(gs_alloc nvidia.com/mig-1g.10gb)" = 7 ] || fail "want 7 nvidia.com/mig-1g.10gb"
[ "$(gs_alloc nvidia.com/gpu)" -ge 2 ] || fail "want whole GPUs in nvidia.com/gpu"
grep -q 'Registered endpoint\|Got registration request from device plugin' "$E2E_NODE/kubelet.log" ||
    fail "the kubelet log shows no device plugin registration"

# 2. GPU pods, scheduled by gpusched (no other scheduler runs here), started by the kubelet
gs_workloads
gs_check_devices 3 || ok=1
cp "$E2E_DIR/devices.txt" "$E2E_DIR/devices-before.txt"

# 3. upgrade with changed values: the agent and the scheduler roll, GPU pods keep running
old_pods="$(k get pods -n "$GS_NS" -o jsonpath='{.items[*].metadata.uid}')"
if helm_ upgrade "$GS_RELEASE" "$GS_CHART" -n "$GS_NS" -f "$GS_CHART/examples/fake-gpus.yaml" \
    -f "$E2E_DIR/values.yaml" --set agent.health.checkInterval=7 --set scheduler.logLevel=debug \
    --wait --timeout 300s > "$E2E_DIR/helm-upgrade.log" 2>&1; then
    echo "ok   helm upgrade"
else
    fail "helm upgrade:"; tail -10 "$E2E_DIR/helm-upgrade.log"
fi
gs_wait 120 "the old release pods are gone" bash -c "! '$E2E_BIN/kubectl' get pods -n $GS_NS \
    -o jsonpath='{.items[*].metadata.uid}' | tr ' ' '\n' | grep -qxF -f <(echo '$old_pods' | tr ' ' '\n')" ||
    ok=1
k get daemonset -n "$GS_NS" -o jsonpath='{.items[0].spec.template.spec.containers[0].env}' |
    grep -q '"CHECK_INTERVAL","value":"7"' && echo "ok   the agent rolled with CHECK_INTERVAL=7" ||
    fail "the agent's DaemonSet does not carry the new value"
for p in $(k get pods -n "$GS_NS" -l app.kubernetes.io/component=scheduler -o name); do
    k get -n "$GS_NS" "$p" -o jsonpath='{.spec.containers[0].args}' | grep -q debug ||
        fail "$p was not rolled with the new log level"
done
gs_wait 60 "the device plugin is registered again after the agent rolled" bash -c \
    "[ \"\$('$E2E_BIN/kubectl' get node $E2E_NODE_NAME -o jsonpath='{.status.allocatable.nvidia\\.com/mig-1g\\.10gb}')\" = 7 ]" ||
    ok=1
while read -r p uuid cid; do
    now="$(k get pod -n e2e "$p" -o jsonpath='{.status.containerStatuses[0].containerID}')"
    [ "$now" = "$cid" ] || fail "$p: container $cid replaced by '$now' during the upgrade"
done < "$E2E_DIR/devices-before.txt"
# the new scheduler still places pods: a Job on a 1g.10gb slice
gs_job embed nvidia.com/mig-1g.10gb
gs_check_devices 4 || ok=1
[ "$(gs_corrections)" = 0 ] && echo "ok   the agent corrected no annotation: every device is the scheduler's choice" ||
    fail "the agent corrected annotations: gpusched_agent_device_corrections_total '$(gs_corrections)'"
# a pod whose annotation names a device another pod holds (bound by hand, as a race between
# two pods of one profile would leave it): the kubelet gives it a free slice, and the agent
# makes its annotation say which
held="$(k get pods -n e2e -l job-name=embed -o jsonpath='{.items[0].metadata.annotations.gpusched\.io/devices}')"
gs_bound_pod stray "$held" nvidia.com/mig-1g.10gb
gs_check_devices 5 stray || ok=1
[ "$(gs_corrections)" = 1 ] && echo "ok   one correction counted: stray's" ||
    fail "gpusched_agent_device_corrections_total '$(gs_corrections)', want 1 (stray)"
now="$(k get pod -n e2e stray -o jsonpath='{.metadata.annotations.gpusched\.io/devices}')"
[ "$now" != "$held" ] && echo "ok   stray: annotation $held (held by embed) corrected to $now" ||
    fail "stray's annotation still names embed's slice $held"

# 4. uninstall: what the chart made goes, nothing else
k delete namespace e2e --wait=true --timeout=120s >/dev/null
if helm_ uninstall "$GS_RELEASE" -n "$GS_NS" --wait --timeout 180s > "$E2E_DIR/helm-uninstall.log" 2>&1; then
    echo "ok   helm uninstall"
else
    fail "helm uninstall:"; tail -10 "$E2E_DIR/helm-uninstall.log"
fi
gs_wait 120 "the release's pods are gone" bash -c \
    "[ -z \"\$('$E2E_BIN/kubectl' get pods -n $GS_NS -o name)\" ]" || ok=1
snapshot "$E2E_DIR/after.txt"
# Helm keeps a chart's CRDs at uninstall (custom resources of users would go with them), and
# the API server serves their groups (an APIService per group version)
groups="$(awk '$1 == "CustomResourceDefinition" {sub(/^[^.]*\./, "", $4); print $4}' "$E2E_DIR/after.txt")"
extra="$(comm -13 "$E2E_DIR/before.txt" "$E2E_DIR/after.txt" | grep -v '^CustomResourceDefinition ' |
    while read -r kind api ns name; do
        if [ "$kind" = APIService ] && echo "$groups" | grep -qxF "${name#*.}"; then continue; fi
        echo "$kind $api $ns $name"
    done)"
gone="$(comm -23 "$E2E_DIR/before.txt" "$E2E_DIR/after.txt")"
[ -z "$extra" ] && echo "ok   uninstall left no object behind" ||
    { fail "left behind after uninstall:"; echo "$extra" | sed 's/^/    /'; }
[ -z "$gone" ] && echo "ok   uninstall removed nothing it did not make" ||
    { fail "removed by uninstall though the chart did not make it:"; echo "$gone" | sed 's/^/    /'; }
[ $ok -eq 0 ] && echo "1 passed, 0 failed" || { gs_debug; echo "0 passed, 1 failed"; }
exit $ok
