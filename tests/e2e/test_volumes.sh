#!/usr/bin/env bash
# PersistentVolumes' node affinity on the real control plane (kube-scheduler's VolumeBinding
# filter). Two zones of four 8-GPU nodes; a PersistentVolume whose required node affinity is
# zone a, and a claim bound to it (no controller-manager runs here: the claim is created with
# spec.volumeName and its status set Bound by hand). Four 8-GPU pods using the claim fill
# zone a; a fifth waits, its message counting zone b's nodes in kube-scheduler's words
# ("node(s) had volume node affinity conflict"). A pod whose claim does not exist waits with
# upstream's reason; once the claim appears, its class missing, it waits for the class; once the
# class (WaitForFirstConsumer) appears, gpusched writes the node it chose on the claim
# (volume.kubernetes.io/selected-node) and binds the pod there once the claim is bound (the
# test plays the provisioner). Nothing lands outside zone a.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
4 za A100-80GB 8 whole
4 zb A100-80GB 8 whole
S
for i in 0 1 2 3; do
    "$K" label node "za-00$i" topology.kubernetes.io/zone=a > /dev/null || exit 1
    "$K" label node "zb-00$i" topology.kubernetes.io/zone=b > /dev/null || exit 1
done
"$K" create namespace vol > /dev/null
"$K" apply -f - > /dev/null <<'V' || exit 1
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-zone-a}
spec:
  capacity: {storage: 100Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  nfs: {server: nfs.zone-a.invalid, path: /datasets}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: topology.kubernetes.io/zone, operator: In, values: [a]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: datasets, namespace: vol}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: pv-zone-a
  resources: {requests: {storage: 100Gi}}
V
"$K" patch pvc datasets -n vol --subresource=status --type=merge \
    -p '{"status":{"phase":"Bound","accessModes":["ReadWriteMany"],"capacity":{"storage":"100Gi"}}}' \
    > /dev/null || exit 1
[ "$("$K" get pvc datasets -n vol -o jsonpath='{.status.phase}')" = Bound ] ||
    { echo "FAIL: the claim is not Bound"; exit 1; }
tn_start || exit 1
TN_OK=0

# vpods PREFIX FROM TO GPUS CLAIM: pods mounting the claim
vpods() {
    python3 - "$@" <<'P'
import json, sys
prefix, a, b, gpus, claim = sys.argv[1:6]
items = []
for i in range(int(a), int(b)):
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "%s-%d" % (prefix, i), "namespace": "vol"},
                  "spec": {"schedulerName": "gpusched",
                           "containers": [{"name": "c", "image": "registry.invalid/none:1",
                                           "resources": {"limits": {"cpu": "1", "memory": "1Gi",
                                                                    "nvidia.com/gpu": gpus}},
                                           "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                           "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
                           "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
P
}
node_of() { "$K" get pod "$1" -n vol -o jsonpath='{.spec.nodeName}'; }
cond_msg() {
    "$K" get pod "$1" -n vol \
        -o jsonpath='{range .status.conditions[?(@.type=="PodScheduled")]}{.message}{end}'
}
has_msg() { cond_msg "$1" | grep -qF "$2"; } # POD TEXT

vpods train 0 4 8 datasets | "$K" create -f - > /dev/null || exit 1
tn_wait 60 tn_bound_ge vol 4 || tn_fail "$(tn_bound vol) of 4 pods using the claim bound"
for i in 0 1 2 3; do
    n=$(node_of "train-$i")
    case "$n" in
    za-*) ;;
    *) tn_fail "train-$i is on '$n', outside zone a where its volume is" ;;
    esac
done
# zone a is full: a fifth waits although zone b has room
vpods train 4 5 8 datasets | "$K" create -f - > /dev/null || exit 1
tn_wait 30 has_msg train-4 "4 node(s) had volume node affinity conflict" ||
    tn_fail "train-4: message '$(cond_msg train-4)', want 4 nodes with a volume node affinity conflict"
[ -z "$(node_of train-4)" ] || tn_fail "train-4 bound to $(node_of train-4), outside zone a"
echo "train-4 waits: $(cond_msg train-4)"

# a claim that does not exist: the pod waits with upstream's reason
vpods lost 0 1 1 nowhere | "$K" create -f - > /dev/null || exit 1
tn_wait 30 has_msg lost-0 'persistentvolumeclaim "nowhere" not found' ||
    tn_fail "lost-0: message '$(cond_msg lost-0)', want persistentvolumeclaim \"nowhere\" not found"
[ -z "$(node_of lost-0)" ] || tn_fail "lost-0 bound to $(node_of lost-0) without its claim"
echo "lost-0 waits: $(cond_msg lost-0)"
# the claim appears, of a class that does not exist: the pod waits with upstream's reason
"$K" apply -f - > /dev/null <<'C' || exit 1
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: nowhere, namespace: vol}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local-wffc
  resources: {requests: {storage: 1Gi}}
C
tn_wait 30 has_msg lost-0 'storageclass.storage.k8s.io "local-wffc" not found' ||
    tn_fail "lost-0: message '$(cond_msg lost-0)', want the class not found"
# the class appears (WaitForFirstConsumer, a CSI provisioner): gpusched picks a node where the
# pod fits (zone b: zone a is full) and writes it on the claim, as kube-scheduler's PreBind
# does; the pod is not bound while its claim is not
"$K" apply -f - > /dev/null <<'C' || exit 1
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-wffc}
provisioner: csi.example.com
volumeBindingMode: WaitForFirstConsumer
C
sel() { "$K" get pvc nowhere -n vol -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}'; }
tn_wait 30 eval '[ -n "$(sel)" ]' || tn_fail "the claim got no selected-node ($(cond_msg lost-0))"
picked=$(sel)
case "$picked" in
zb-*) ;;
*) tn_fail "selected-node '$picked', want a node of zone b" ;;
esac
[ -z "$(node_of lost-0)" ] || tn_fail "lost-0 bound to $(node_of lost-0) before its claim"
# the provisioner's part (no CSI driver runs here): a volume on that node, the claim bound to it
"$K" apply -f - > /dev/null <<V || exit 1
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-provisioned}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local-wffc
  csi: {driver: csi.example.com, volumeHandle: vol-1}
  claimRef: {namespace: vol, name: nowhere}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [$picked]}
V
"$K" patch pvc nowhere -n vol --type=merge -p '{"spec":{"volumeName":"pv-provisioned"}}' \
    > /dev/null || exit 1
"$K" patch pvc nowhere -n vol --subresource=status --type=merge \
    -p '{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"}}}' \
    > /dev/null || exit 1
tn_wait 60 tn_bound_ge vol 5 || tn_fail "lost-0 did not bind once its claim was bound"
[ "$(node_of lost-0)" = "$picked" ] ||
    tn_fail "lost-0 is on '$(node_of lost-0)', want $picked (its claim's selected node)"
# a bound pod leaves: the waiting one takes its place in zone a
"$K" delete pod train-0 -n vol --grace-period=0 --force > /dev/null 2>&1
# (a pod gone: a waiting pod tries again within 10 s of its last try, whatever its backoff)
tn_wait 30 eval '[ -n "$(node_of train-4)" ]' || tn_fail "train-4 still waits"
case "$(node_of train-4)" in
za-*) ;;
*) tn_fail "train-4 is on '$(node_of train-4)', outside zone a" ;;
esac
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || tn_fail "the scheduler died"
grep -q "PersistentVolume" "$E2E_DIR/scheduler.log" && grep "PersistentVolume" "$E2E_DIR/scheduler.log" | head -3
tn_done
