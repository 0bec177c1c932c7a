#!/usr/bin/env bash
# The kubelet restarted under running GPU pods (as `systemctl restart kubelet` does it: SIGTERM,
# then a new process on the same root): the agent's device plugin registers again with the new
# kubelet, the Node's allocatable returns, and no pod loses its device: the containers keep
# running untouched, the kubelet's pod-resources lists every pod with the device it held
# before, and a pod placed after the restart gets a free device, not a held one.
# gpusched is installed with its chart on the real node of node.sh (as e2e_test_helm_install).
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/node.sh"
. "$(dirname "$0")/helm.sh"
gs_setup
gs_helm_install || exit 1
gs_inspect || exit 1
ok=0
fail() { echo "FAIL: $*"; ok=1; }
SOCK=/var/lib/kubelet/pod-resources/kubelet.sock
# held FILE: what the kubelet's pod-resources says each e2e pod holds ("ns/pod device" lines)
held() {
    "$GS" agent inspect --fake "$E2E_DIR/fake.json" --pod-resources-socket "$SOCK" 2>/dev/null |
        sed -n 's#^  pod \(e2e/[^ ]*\) container [^ ]*: [^ ]* \(.*\)$#\1 \2#p' | sort > "$1"
}
registrations() { grep -c 'Got registration request from device plugin' "$E2E_NODE/kubelet.log"; }

gs_workloads
gs_check_devices 3 || ok=1
held "$E2E_DIR/held-before.txt"
echo "pod-resources before the restart:"; sed 's/^/    /' "$E2E_DIR/held-before.txt"
[ "$(wc -l < "$E2E_DIR/held-before.txt")" = 3 ] || fail "pod-resources does not list the 3 GPU pods"
alloc_before="$(gs_alloc nvidia.com/gpu) $(gs_alloc nvidia.com/mig-3g.40gb) $(gs_alloc nvidia.com/mig-1g.10gb)"
[ "$alloc_before" = "0 0 0" ] && fail "no GPU in the Node's allocatable before the restart"
reg_before="$(registrations)"

# the restart
e2e_node_kubelet_stop
running="$(ctr -a "$E2E_NODE/containerd.sock" -n k8s.io tasks ls | grep -c RUNNING)"
echo "kubelet stopped; containerd still runs $running tasks"
sleep 3
e2e_node_kubelet
e2e_node_wait_ready 120 || ok=1
gs_wait 90 "the device plugin registers again with the new kubelet" bash -c \
    "[ \$(grep -c 'Got registration request from device plugin' '$E2E_NODE/kubelet.log') -gt $reg_before ]" ||
    ok=1
echo "device plugin registrations: $reg_before before the restart, $(registrations) after"
alloc3() { echo "$(gs_alloc nvidia.com/gpu) $(gs_alloc nvidia.com/mig-3g.40gb) $(gs_alloc nvidia.com/mig-1g.10gb)"; }
for _ in $(seq 1 90); do [ "$(alloc3)" = "$alloc_before" ] && break; sleep 1; done
echo "allocatable (gpu, mig-3g.40gb, mig-1g.10gb): $alloc_before before, $(alloc3) after"
[ "$(alloc3)" = "$alloc_before" ] || fail "the Node's allocatable did not return"

# no pod lost its device: same containers, never restarted, same devices in pod-resources
while read -r p uuid cid; do
    now="$(k get pod -n e2e "$p" -o jsonpath='{.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount} {.status.phase}')"
    [ "$now" = "$cid 0 Running" ] && echo "ok   $p keeps container ${cid:13:12} and $uuid" ||
        fail "$p: was '$cid 0 Running', now '$now'"
done < "$E2E_DIR/devices.txt"
gs_wait 30 "pod-resources lists the pods again" bash -c \
    "'$GS' agent inspect --fake '$E2E_DIR/fake.json' --pod-resources-socket $SOCK 2>/dev/null | grep -c '^  pod e2e/' | grep -qx 3" ||
    ok=1
held "$E2E_DIR/held-after.txt"
if cmp -s "$E2E_DIR/held-before.txt" "$E2E_DIR/held-after.txt"; then
    echo "ok   the kubelet's pod-resources lists each pod with the device it held before"
else
    fail "pod-resources changed across the restart:"; diff "$E2E_DIR/held-before.txt" "$E2E_DIR/held-after.txt"
fi

# a pod placed after the restart gets a free device, never one a running pod holds
gs_job train2 nvidia.com/mig-1g.10gb
gs_check_devices 4 || ok=1
[ $ok -eq 0 ] && echo "1 passed, 0 failed" || { gs_debug; echo "0 passed, 1 failed"; }
exit $ok
