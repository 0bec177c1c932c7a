#!/usr/bin/env bash
# Bad storage input, end to end, with the real volume controller (kube-controller-manager's
# persistentvolume-binder-controller): each pod waits with a reason that says which of its
# claims and why, the pods beside it in the same cycles bind, and the scheduler keeps running.
#   ghost-0..9  claims of a WaitForFirstConsumer class naming a provisioner no CSIDriver
#               registers and nothing runs: each gets selected-node, its pod is not bound, and
#               after --volume-bind-timeout a FailedScheduling Event names the claim, the class
#               and its provisioner; more of them than the binder has volume workers, so a bind
#               that waits must not hold back the binds behind it
#   nothing     a 500Gi claim of a local class: no volume fits and the class cannot provision
#   wide        a claim whose selector lists five values (the API server takes it; gpusched
#               keeps four): the pod says gpusched cannot read the claim, and where
#   good        a claim matched to the one local volume that fits: bound and its pod bound
#   plain-0..3  pods without volumes
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
2 vb A100-80GB 8 whole
S
"$E2E_BIN/kube-controller-manager" --kubeconfig "$E2E_DIR/admin.kubeconfig" --leader-elect=false \
    --secure-port 0 --controllers persistentvolume-binder-controller \
    > "$E2E_DIR/controller-manager.log" 2>&1 &
echo $! > "$E2E_DIR/kcm.pid"
"$K" apply -f - > /dev/null <<'O' || exit 1
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: ghost}
provisioner: csi.ghost.example.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: Namespace
metadata: {name: vb}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: good-pv}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: local
  local: {path: /mnt/good}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [vb-000]}
O

# pvc NAME CLASS SIZE [SELECTOR-JSON]
pvc() {
    printf '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"%s","namespace":"vb"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"%s","resources":{"requests":{"storage":"%s"}}%s}}\n' \
        "$1" "$2" "$3" "${4:+,\"selector\":$4}"
}
# pod NAME [CLAIM]
pod() {
    local vols='' mounts=''
    if [ -n "${2:-}" ]; then
        vols=",\"volumes\":[{\"name\":\"d\",\"persistentVolumeClaim\":{\"claimName\":\"$2\"}}]"
        mounts=",\"volumeMounts\":[{\"name\":\"d\",\"mountPath\":\"/d\"}]"
    fi
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"vb"},"spec":{"schedulerName":"gpusched","tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}],"containers":[{"name":"c","image":"registry.invalid/none:1","resources":{"limits":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"}}%s}]%s}}\n' \
        "$1" "$mounts" "$vols"
}
{
    for i in $(seq 0 9); do pvc "ghost-$i" ghost 1Gi; pod "ghost-$i" "ghost-$i"; done
    pvc nothing local 500Gi; pod nothing nothing
    pvc wide local 1Gi '{"matchExpressions":[{"key":"rack","operator":"In","values":["r1","r2","r3","r4","r5"]}]}'
    pod wide wide
    pvc good local 5Gi; pod good good
    for i in 0 1 2 3; do pod "plain-$i"; done
} > "$E2E_DIR/objects.json"
"$K" create -f "$E2E_DIR/objects.json" > /dev/null || exit 1
tn_start --volume-bind-timeout 30s || exit 1
TN_OK=0

node_of() { "$K" get pod "$1" -n vb -o jsonpath='{.spec.nodeName}'; }
sel_of() { "$K" get pvc "$1" -n vb -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}'; }
cond_msg() {
    "$K" get pod "$1" -n vb \
        -o jsonpath='{range .status.conditions[?(@.type=="PodScheduled")]}{.message}{end}'
}
has_msg() { cond_msg "$1" | grep -qF "$2"; } # POD TEXT
# the FailedScheduling Event notes of pod $1, one a line
notes() {
    "$K" get events.events.k8s.io -n vb -o json | python3 -c '
import json, sys
for e in json.load(sys.stdin)["items"]:
    if e["regarding"]["name"] == sys.argv[1] and e.get("reason") == "FailedScheduling":
        print(e.get("note", ""))' "$1"
}
timed_out() { notes "$1" | grep -qF "timed out after 30 s waiting for persistentvolumeclaim \"$1\""; }
any_timed_out() { for i in $(seq 0 9); do timed_out "ghost-$i" && return 0; done; return 1; }
all_bound() { for p in good plain-0 plain-1 plain-2 plain-3; do [ -n "$(node_of $p)" ] || return 1; done; }

# what does not wait for the ghost's provisioner binds before any ghost bind times out
tn_wait 60 all_bound || tn_fail "good and plain pods not all bound: $(for p in good plain-0 plain-1 plain-2 plain-3; do printf '%s=%s ' $p "$(node_of $p)"; done)"
any_timed_out && tn_fail "a ghost bind timed out before the other pods were bound: they waited behind it"
[ "$(node_of good)" = vb-000 ] || tn_fail "good on '$(node_of good)', want vb-000 (its volume's node)"
[ "$("$K" get pvc good -n vb -o jsonpath='{.spec.volumeName}')" = good-pv ] ||
    tn_fail "claim good not bound to good-pv"

tn_wait 60 has_msg nothing "didn't find available persistent volumes to bind" ||
    tn_fail "nothing: '$(cond_msg nothing)'"
tn_wait 60 has_msg wide "gpusched cannot read persistentvolumeclaim \"wide\": spec.selector.matchExpressions[0].values" ||
    tn_fail "wide: '$(cond_msg wide)'"
grep -q "not usable: PersistentVolumeClaim wide: spec.selector" "$E2E_DIR/scheduler.log" ||
    tn_fail "the claim gpusched cannot read is not in its log"
for i in $(seq 0 9); do
    tn_wait 60 eval '[ -n "$(sel_of ghost-'$i')" ]' || tn_fail "ghost-$i got no selected-node"
done

# each ghost bind times out naming its claim, the class and the provisioner
for i in $(seq 0 9); do
    tn_wait 120 timed_out "ghost-$i" || { tn_fail "no FailedScheduling Event for ghost-$i's bind timeout"; notes "ghost-$i"; continue; }
    notes "ghost-$i" | grep -qF "storageclass \"ghost\" provisions it with \"csi.ghost.example.com\"" ||
        tn_fail "ghost-$i: the class and provisioner are not named: $(notes ghost-$i | head -1)"
    notes "ghost-$i" | grep -qF "no CSIDriver \"csi.ghost.example.com\" is registered" ||
        tn_fail "ghost-$i: the missing CSIDriver is not said: $(notes ghost-$i | head -1)"
    [ -z "$(node_of ghost-$i)" ] || tn_fail "ghost-$i bound to $(node_of ghost-$i) without its claim"
done
notes ghost-0 | head -1 | sed 's/^/  ghost-0: /'
for p in nothing wide; do
    [ -z "$(node_of $p)" ] || tn_fail "$p bound to $(node_of $p)"
done
curl -sf "http://127.0.0.1:$TN_PORT/healthz" > /dev/null || tn_fail "the scheduler is not healthy"
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || tn_fail "the scheduler died"
tn_done
