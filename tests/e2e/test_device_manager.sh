#!/usr/bin/env bash
# The agent's device plugin against the kubelet's own device manager (k8s.io/kubernetes
# v1.37.2 pkg/kubelet/cm/devicemanager, built from pinned modules by build-control-plane.sh)
# in a private mount namespace, so the manager's fixed socket directory
# /var/lib/kubelet/device-plugins is a fresh tmpfs and no real kubelet is touched. On 4 fake
# H100s (2 whole, 2 in all-3g.40gb) with migStrategy mixed: both resources register and show
# up in the kubelet's capacity (nvidia.com/gpu 2, nvidia.com/mig-3g.40gb 4); the kubelet's
# Allocate gives a pod's container NVIDIA_VISIBLE_DEVICES with the device's UUID; an XID 79
# on GPU 0 drops nvidia.com/gpu allocatable to 1 (capacity stays 2) and it returns once
# cleared; after a kubelet restart (a new manager wipes the directory) the plugins register
# again and capacity comes back. The agent reads the kubelet's pod-resources API (served by
# the same harness with the kubelet's own server code) and labels /metrics with those pods. Skipped (77) where no mount namespace can be made.
set -u
if [ -z "${GS_DM_NS:-}" ]; then
    if [ "$(id -u)" = 0 ]; then ns=(unshare -m); else ns=(unshare -Urm); fi
    "${ns[@]}" true 2>/dev/null || { echo "no mount namespace here: skipped"; exit 77; }
    exec "${ns[@]}" env GS_DM_NS=1 bash "$0" "$@"
fi
GS="$1"
E2E_SRC="$(cd "$(dirname "$0")" && pwd)"
BIN="$("$E2E_SRC/build-control-plane.sh")" || { echo "tools build failed"; exit 1; }
H="$BIN/devicemanager-v1.37.2"
[ -x "$H" ] || { echo "the kubelet device manager did not build: skipped"; exit 77; }
mkdir -p /var/lib/kubelet 2>/dev/null
mount --make-rprivate / 2>/dev/null
mount -t tmpfs tmpfs /var/lib/kubelet 2>/dev/null || { echo "cannot mount /var/lib/kubelet: skipped"; exit 77; }
mkdir -p /var/lib/kubelet/device-plugins
DIR=/var/lib/kubelet/device-plugins
D="$(mktemp -d /tmp/gpusched-dm.XXXXXX)"
OK=0
fail() { echo "FAIL: $*"; OK=1; }
cleanup() { kill $apid $hpid 2>/dev/null; sleep 0.2; rm -rf "$D"; }
trap cleanup EXIT
mkfifo "$D/cmd"
. "$E2E_SRC/devices.sh"
"$H" < "$D/cmd" > "$D/h.log" 2> "$D/h.err" &
hpid=$!
exec 3> "$D/cmd"
wait_for 20 'any(e["event"] == "ready" for e in ev)' || { fail "device manager not ready"; tail "$D/h.err"; exit 1; }
printf 'version: v1\nflags:\n  migStrategy: mixed\n' > "$D/dp.yaml"
gpus '{}'
PORT=$("$E2E_SRC/../free-port.py")
"$GS" --log-level info agent run --fake "$D/gpus.json" --dp-config "$D/dp.yaml" \
    --device-plugin-dir "$DIR" --interval 0.5 --xid-hold 2 --metrics-port "$PORT" \
    --metrics-bind 127.0.0.1 --pod-resources-socket /var/lib/kubelet/pod-resources/kubelet.sock \
    > "$D/agent.log" 2>&1 &
apid=$!
wait_for 20 'last["capacity"].get("nvidia.com/gpu") == 2 and last["capacity"].get("nvidia.com/mig-3g.40gb") == 4 and last["allocatable"].get("nvidia.com/gpu") == 2' ||
    fail "the kubelet's capacity: want nvidia.com/gpu 2 and nvidia.com/mig-3g.40gb 4"
echo "allocate nvidia.com/gpu 1" >&3
echo "allocate nvidia.com/mig-3g.40gb 1" >&3
wait_for 10 'any(e["event"] == "allocate" and e["resource"] == "nvidia.com/gpu" and e["envs"].get("NVIDIA_VISIBLE_DEVICES", "").startswith("GPU-") and e["envs"]["NVIDIA_VISIBLE_DEVICES"] in e.get("devices", []) for e in ev)' ||
    fail "kubelet Allocate of nvidia.com/gpu: NVIDIA_VISIBLE_DEVICES is the allocated GPU"
wait_for 10 'any(e["event"] == "allocate" and e["resource"] == "nvidia.com/mig-3g.40gb" and e["envs"].get("NVIDIA_VISIBLE_DEVICES", "").startswith("MIG-") for e in ev)' ||
    fail "kubelet Allocate of nvidia.com/mig-3g.40gb: a MIG device"
# the kubelet's pod-resources says who holds what: /metrics carries those pods
per_pod() {
    curl -s "http://127.0.0.1:$PORT/metrics" > "$D/m.txt"
    grep -q "^gpu_utilization{gpu=\"[01]\".*pod=\"pod-1\",namespace=\"default\",container=\"main\"" "$D/m.txt" &&
        grep -q '^gpu_memory_total_bytes{.*mig_profile="3g.40gb".*pod="pod-2"' "$D/m.txt"
}
wait_for 10 'True' && for i in $(seq 1 30); do per_pod && break; sleep 0.3; done
per_pod || { fail "/metrics does not show the pods the kubelet's pod-resources lists"; grep pod= "$D/m.txt" | head -5; }
gpus '{"xids": [79]}'
wait_for 6 'last["allocatable"].get("nvidia.com/gpu") == 1 and last["capacity"].get("nvidia.com/gpu") == 2' ||
    fail "XID 79: allocatable nvidia.com/gpu did not drop to 1"
gpus '{}'
wait_for 8 'last["allocatable"].get("nvidia.com/gpu") == 2' || fail "GPU 0 not allocatable again once cleared"
n=$(grep -c '"capacity"' "$D/h.log")
echo "restart" >&3
wait_for 20 'any(e["event"] == "restarted" for e in ev) and last["capacity"].get("nvidia.com/gpu") == 2 and last["capacity"].get("nvidia.com/mig-3g.40gb") == 4 and [e["event"] for e in ev].index("restarted") < len(ev) - 1' ||
    fail "no registration after the kubelet restart"
grep -c "serving and registering again" "$D/agent.log" | sed 's/^/re-registrations logged by the agent: /'
echo "quit" >&3
python3 - "$D/h.log" <<'P'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{"):
        print("  " + l.strip())
P
if [ $OK = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; tail -20 "$D/agent.log"; tail -5 "$D/h.err"; fi
exit $OK
