#!/usr/bin/env bash
# Volume binding end to end, gpusched against the stock kube-scheduler v1.37.2 on the same
# objects, with the real volume controller (kube-controller-manager's
# persistentvolume-binder-controller) completing the bindings each scheduler asks for.
#
# Two groups of four 8-GPU nodes (two in zone a, two in zone b), one per scheduler (pods select
# their group); in each group the same objects:
#   fit      a 60Gi claim of a WaitForFirstConsumer class of local volumes: only the 100Gi
#            volume on a-000 fits: the pod goes there and the claim is bound to it
#   small    a 5Gi claim, the pod pinned to a-001, which holds a 10Gi and a 50Gi volume: the
#            smallest that fits (10Gi) is chosen
#   none     a 500Gi claim: no volume fits and the class cannot provision: it waits
#   imm      an unbound claim of an Immediate class: it waits
#   rwop1/2  two pods of one ReadWriteOncePod claim: the first binds, the second waits
#   prov     a 10Gi claim of a CSI class (capacity tracking, zone b only) where the CSINode of
#            b-000 allows no volume of its driver: the claim gets selected-node b-001, the test
#            plays the provisioner, the volume controller binds, the pod binds to b-001
#   toolarge a 30Gi claim of that class: the CSIStorageCapacity (20Gi) is short: it waits
#   zoned    a claim pre-bound to a volume labelled zone b: the pod goes to zone b
# and in gpusched's group alone, with --volume-bind-timeout 20s:
#   stuck    a claim of the CSI class no provisioner serves: selected-node written, the pod not
#            bound, a FailedScheduling Event says the bind timed out waiting for the claim
# Each group's outcomes are asserted, then compared between the two schedulers (which pods bind,
# on which node of their group, which volume each claim gets, which selected-node, which reason
# each waiting pod gives).
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
2 gsa A100-80GB 8 whole
2 gsb A100-80GB 8 whole
2 ksa A100-80GB 8 whole
2 ksb A100-80GB 8 whole
S
for g in gs ks; do
    for i in 0 1; do
        "$K" label node "${g}a-00$i" topology.kubernetes.io/zone=a e2e.gpusched.io/group=$g > /dev/null || exit 1
        "$K" label node "${g}b-00$i" topology.kubernetes.io/zone=b e2e.gpusched.io/group=$g > /dev/null || exit 1
    done
done
"$E2E_BIN/kube-controller-manager" --kubeconfig "$E2E_DIR/admin.kubeconfig" --leader-elect=false \
    --secure-port 0 --controllers persistentvolume-binder-controller \
    > "$E2E_DIR/controller-manager.log" 2>&1 &
echo $! > "$E2E_DIR/kcm.pid"
printf 'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nclientConnection:\n  kubeconfig: %s\n' \
    "$E2E_DIR/admin.kubeconfig" > "$E2E_DIR/ks.yaml"
"$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0 \
    > "$E2E_DIR/kube-scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/kube-scheduler.pid"

# the classes, the CSI driver with capacity tracking, its capacity (zone b), the attach limits
"$K" apply -f - > /dev/null <<'O' || exit 1
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: imm}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: Immediate
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: csi}
provisioner: csi.example.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.kubernetes.io/zone, values: [b]}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csi.example.com}
spec: {storageCapacity: true, attachRequired: true}
---
apiVersion: v1
kind: Namespace
metadata: {name: gs}
---
apiVersion: v1
kind: Namespace
metadata: {name: ks}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: csi-zone-b, namespace: kube-system}
storageClassName: csi
capacity: 20Gi
nodeTopology:
  matchLabels: {topology.kubernetes.io/zone: b}
O
for g in gs ks; do
    "$K" apply -f - > /dev/null <<O || exit 1
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: ${g}b-000}
spec:
  drivers:
  - {name: csi.example.com, nodeID: ${g}b-000, allocatable: {count: 0}}
O
done

# pv NAME SIZE NODE [ACCESS]: a local volume on a node
pv() {
    printf '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"%s"},"spec":{"capacity":{"storage":"%s"},"accessModes":["%s"],"persistentVolumeReclaimPolicy":"Retain","storageClassName":"local","local":{"path":"/mnt/%s"},"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["%s"]}]}]}}}}\n' \
        "$1" "$2" "${4:-ReadWriteOnce}" "$1" "$3"
}
# pvc NS NAME CLASS SIZE [ACCESS] [VOLUME]
pvc() {
    printf '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"%s","namespace":"%s"},"spec":{"accessModes":["%s"],"storageClassName":"%s","resources":{"requests":{"storage":"%s"}}%s}}\n' \
        "$2" "$1" "${5:-ReadWriteOnce}" "$3" "$4" "${6:+,\"volumeName\":\"$6\"}"
}
# pod NS NAME SCHEDULER CLAIM [HOSTNAME]
pod() {
    local sel="\"e2e.gpusched.io/group\":\"$1\""
    [ -n "${5:-}" ] && sel="$sel,\"kubernetes.io/hostname\":\"$5\""
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"%s"},"spec":{"schedulerName":"%s","nodeSelector":{%s},"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}],"containers":[{"name":"c","image":"registry.invalid/none:1","resources":{"limits":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"}},"volumeMounts":[{"name":"d","mountPath":"/d"}]}],"volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"%s"}}]}}\n' \
        "$2" "$1" "$3" "$sel" "$4"
}
# the objects of one group (g: gs or ks) for scheduler s
objects() {
    local g="$1" s="$2"
    pv "$g-big" 100Gi "${g}a-000"
    pv "$g-small" 10Gi "${g}a-001"
    pv "$g-mid" 50Gi "${g}a-001"
    pv "$g-rwop" 1Gi "${g}b-000" ReadWriteOncePod
    printf '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"%s-zone","labels":{"topology.kubernetes.io/zone":"b"}},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"storageClassName":"","claimRef":{"namespace":"%s","name":"czone"},"nfs":{"server":"nfs.invalid","path":"/z"}}}\n' "$g" "$g"
    pvc "$g" cfit local 60Gi; pod "$g" fit "$s" cfit
    pvc "$g" csmall local 5Gi; pod "$g" small "$s" csmall "${g}a-001"
    pvc "$g" cnone local 500Gi; pod "$g" none "$s" cnone
    pvc "$g" cimm imm 1Gi; pod "$g" imm "$s" cimm
    pvc "$g" crwop local 1Gi ReadWriteOncePod; pod "$g" rwop1 "$s" crwop
    pvc "$g" cprov csi 10Gi; pod "$g" prov "$s" cprov
    pvc "$g" clarge csi 30Gi; pod "$g" toolarge "$s" clarge
    pvc "$g" czone "" 1Gi ReadWriteOnce "$g-zone"; pod "$g" zoned "$s" czone
}
tn_start --volume-bind-timeout 20s || exit 1
TN_OK=0
{ objects gs gpusched; objects ks default-scheduler; pvc gs cstuck csi 1Gi; pod gs stuck gpusched cstuck; } \
    > "$E2E_DIR/objects.json"
"$K" create -f "$E2E_DIR/objects.json" > /dev/null || { tn_fail "creating the objects"; tn_done; }

node_of() { "$K" get pod "$2" -n "$1" -o jsonpath='{.spec.nodeName}'; }
vol_of() { "$K" get pvc "$2" -n "$1" -o jsonpath='{.spec.volumeName}'; }
phase_of() { "$K" get pvc "$2" -n "$1" -o jsonpath='{.status.phase}'; }
sel_of() { "$K" get pvc "$2" -n "$1" -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}'; }
cond_msg() {
    "$K" get pod "$2" -n "$1" \
        -o jsonpath='{range .status.conditions[?(@.type=="PodScheduled")]}{.message}{end}'
}
has_msg() { cond_msg "$1" "$2" | grep -qF "$3"; } # NS POD TEXT
bound_to() { [ "$(node_of "$1" "$2")" = "$3" ]; } # NS POD NODE

# the second pod of the ReadWriteOncePod claim once the first is bound
for g in gs ks; do
    s=gpusched; [ $g = ks ] && s=default-scheduler
    tn_wait 60 eval '[ -n "$(node_of $g rwop1)" ]' || tn_fail "$g: rwop1 did not bind"
    pod "$g" rwop2 "$s" crwop | "$K" create -f - > /dev/null
done
# the provisioner's part: a volume on the node the scheduler selected, claimRef to the claim
for g in gs ks; do
    tn_wait 60 eval '[ -n "$(sel_of $g cprov)" ]' || tn_fail "$g: claim cprov got no selected-node"
    n=$(sel_of $g cprov)
    [ "$n" = "${g}b-001" ] || tn_fail "$g: cprov's selected-node is '$n', want ${g}b-001 (b-000 allows no volume of the driver, zone a is not allowed)"
    [ -z "$(node_of $g prov)" ] || tn_fail "$g: prov bound to $(node_of $g prov) before its claim"
    printf '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"%s-provisioned"},"spec":{"capacity":{"storage":"10Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Delete","storageClassName":"csi","csi":{"driver":"csi.example.com","volumeHandle":"%s-h"},"claimRef":{"namespace":"%s","name":"cprov"},"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["%s"]}]}]}}}}\n' \
        "$g" "$g" "$g" "$n" | "$K" create -f - > /dev/null || tn_fail "$g: creating the provisioned volume"
done

for g in gs ks; do
    tn_wait 120 bound_to $g fit "${g}a-000" || tn_fail "$g: fit on '$(node_of $g fit)', want ${g}a-000"
    tn_wait 60 eval '[ "$(phase_of $g cfit)" = Bound ]' || tn_fail "$g: cfit not bound"
    [ "$(vol_of $g cfit)" = "$g-big" ] || tn_fail "$g: cfit bound to '$(vol_of $g cfit)', want $g-big"
    tn_wait 60 bound_to $g small "${g}a-001" || tn_fail "$g: small on '$(node_of $g small)'"
    tn_wait 60 eval '[ "$(phase_of $g csmall)" = Bound ]' || tn_fail "$g: csmall not bound"
    [ "$(vol_of $g csmall)" = "$g-small" ] ||
        tn_fail "$g: csmall bound to '$(vol_of $g csmall)', want $g-small (the smallest that fits)"
    tn_wait 60 bound_to $g prov "${g}b-001" || tn_fail "$g: prov on '$(node_of $g prov)', want ${g}b-001"
    tn_wait 60 eval 'case "$(node_of $g zoned)" in ${g}b-*) true;; *) false;; esac' ||
        tn_fail "$g: zoned on '$(node_of $g zoned)', want zone b (its volume's zone)"
    tn_wait 60 has_msg $g none "didn't find available persistent volumes to bind" ||
        tn_fail "$g: none: '$(cond_msg $g none)'"
    tn_wait 60 has_msg $g imm "pod has unbound immediate PersistentVolumeClaims" ||
        tn_fail "$g: imm: '$(cond_msg $g imm)'"
    tn_wait 60 has_msg $g rwop2 "ReadWriteOncePod access mode" ||
        tn_fail "$g: rwop2: '$(cond_msg $g rwop2)'"
    tn_wait 60 has_msg $g toolarge "did not have enough free storage" ||
        tn_fail "$g: toolarge: '$(cond_msg $g toolarge)'"
    for p in none imm rwop2 toolarge; do
        [ -z "$(node_of $g $p)" ] || tn_fail "$g: $p bound to $(node_of $g $p)"
    done
done

# the bind that waits for a claim no one provisions: it times out with the claim named
stuck_event() {
    "$K" get events.events.k8s.io -n gs -o json | python3 -c '
import json, sys
evs = [e for e in json.load(sys.stdin)["items"]
       if e["regarding"]["name"] == "stuck" and e.get("reason") == "FailedScheduling"]
sys.exit(0 if any("timed out after 20 s waiting for persistentvolumeclaim \"cstuck\"" in e.get("note", "") for e in evs) else 1)'
}
tn_wait 90 eval '[ -n "$(sel_of gs cstuck)" ]' || tn_fail "cstuck got no selected-node"
tn_wait 120 stuck_event || tn_fail "no FailedScheduling Event for stuck's timed-out volume binding"
[ -z "$(node_of gs stuck)" ] || tn_fail "stuck bound to $(node_of gs stuck) without its claim"

# the two schedulers' outcomes, node names without their group
outcome() {
    local g="$1" p c
    for p in fit small none imm rwop1 rwop2 prov toolarge zoned; do
        printf '%s node=%s' "$p" "$(node_of $g $p | sed "s/^$g//; s/-00[01]$//")"
        # why a pod waits (a bound pod's last message may predate its claim's binding)
        if [ -n "$(node_of $g $p)" ]; then echo; continue; fi
        has_msg $g $p "didn't find available" && printf ' why=no-volume'
        has_msg $g $p "unbound immediate" && printf ' why=immediate'
        has_msg $g $p "ReadWriteOncePod" && printf ' why=rwop'
        has_msg $g $p "enough free storage" && printf ' why=capacity'
        echo
    done
    for c in cfit csmall cnone cimm crwop cprov clarge czone; do
        echo "$c phase=$(phase_of $g $c) volume=$(vol_of $g $c | sed "s/^$g-//") selected=$(sel_of $g $c | sed "s/^$g//")"
    done
}
outcome gs > "$E2E_DIR/outcome.gs"
outcome ks > "$E2E_DIR/outcome.ks"
sed 's/^/  /' "$E2E_DIR/outcome.gs"
if diff "$E2E_DIR/outcome.ks" "$E2E_DIR/outcome.gs" > "$E2E_DIR/outcome.diff"; then
    echo "gpusched and kube-scheduler agree on all $(wc -l < "$E2E_DIR/outcome.gs") outcomes"
else
    tn_fail "gpusched (>) and kube-scheduler (<) differ:"; cat "$E2E_DIR/outcome.diff"
fi
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || tn_fail "the scheduler died"
tn_done
