#!/usr/bin/env bash
# The agent's device plugin against the kubelet's side of the protocol, built from the
# upstream API package (k8s.io/kubelet v0.37.2 deviceplugin/v1beta1) and grpc-go
# (tests/e2e/tools/dpharness). On 4 fake H100 GPUs, two of them in MIG (all-3g.40gb) and the
# device-plugin config `migStrategy: mixed` with time-slicing x4 (the article's config):
# registration of nvidia.com/gpu (8 replica IDs) and nvidia.com/mig-3g.40gb (4 MIG devices),
# ListAndWatch lists them Healthy; Allocate answers NVIDIA_VISIBLE_DEVICES with the GPU or
# MIG UUIDs; GetPreferredAllocation packs replicas on one GPU; an injected XID 79 turns that
# GPU's devices Unhealthy in a new ListAndWatch message, and healthy again once cleared; a
# kubelet restart (sockets removed, a new kubelet.sock) brings both registrations back. The
# article's time-slicing config (4 replicas, migStrategy none) advertises 8 replicas of the
# two whole GPUs; migStrategy single advertises MIG devices as nvidia.com/gpu;
# GetPreferredAllocation picks the GPU the scheduler recorded for a pod waiting on the node;
# with the article's MPS config (2 replicas) each GPU gets its MPS control daemon and Allocate
# adds that daemon's pipe directory, its mount and the per-client thread and memory limits.
set -u
GS="$1"; DRIVER="$2"
E2E_SRC="$(cd "$(dirname "$0")" && pwd)"
BIN="$("$E2E_SRC/build-control-plane.sh")" || { echo "control plane tools build failed"; exit 1; }
H="$BIN/dpharness-v0.37.2"
D="$(mktemp -d /tmp/gpusched-dp.XXXXXX)"
OK=0
fail() { echo "FAIL: $*"; OK=1; }
cleanup() { kill $apid $hpid 2>/dev/null; wait $apid 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
mkfifo "$D/cmd"
. "$E2E_SRC/devices.sh"
"$H" "$D" < "$D/cmd" >> "$D/h.log" 2>&1 &  # appended: the test adds marks
hpid=$!
exec 3> "$D/cmd"
mark() { echo "{\"event\": \"mark\", \"name\": \"$1\"}" >> "$D/h.log"; }
since() { echo "ev[max(i for i, e in enumerate(ev) if e['event'] == 'mark' and e['name'] == '$1'):]"; }
wait_for 10 'any(e["event"] == "ready" for e in ev)' || { fail "harness not ready"; cat "$D/h.log"; exit 1; }
cat > "$D/dp.yaml" <<'Y'
version: v1
flags:
  migStrategy: mixed
sharing:
  timeSlicing:
    resources:
      - name: nvidia.com/gpu
        replicas: 4
Y
gpus '{}'
"$GS" --log-level info agent run --fake "$D/gpus.json" --dp-config "$D/dp.yaml" \
    --device-plugin-dir "$D" --interval 0.5 --xid-hold 2 --metrics-port 0 > "$D/agent.log" 2>&1 &
apid=$!
wait_for 15 'len({e["resource"] for e in ev if e["event"] == "registered"}) == 2' ||
    fail "registration of nvidia.com/gpu and nvidia.com/mig-3g.40gb"
wait_for 10 'any(e["event"] == "devices" and e["resource"] == "nvidia.com/gpu" and len(e["devices"]) == 8 and all(d["health"] == "Healthy" for d in e["devices"]) for e in ev)' ||
    fail "ListAndWatch: 8 healthy nvidia.com/gpu replicas"
wait_for 10 'any(e["event"] == "devices" and e["resource"] == "nvidia.com/mig-3g.40gb" and len(e["devices"]) == 4 for e in ev)' ||
    fail "ListAndWatch: 4 nvidia.com/mig-3g.40gb devices"
python3 - "$D/h.log" > "$D/ids" <<'P'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
g = [e for e in ev if e["event"] == "devices" and e["resource"] == "nvidia.com/gpu"][-1]["devices"]
m = [e for e in ev if e["event"] == "devices" and e["resource"] == "nvidia.com/mig-3g.40gb"][-1]["devices"]
print(",".join(d["id"] for d in g)); print(m[0]["id"])
P
GPU_IDS=$(sed -n 1p "$D/ids"); MIG_ID=$(sed -n 2p "$D/ids")
FIRST=${GPU_IDS%%,*}
echo "allocate nvidia.com/gpu $FIRST" >&3
echo "allocate nvidia.com/mig-3g.40gb $MIG_ID" >&3
echo "preferred nvidia.com/gpu 2 $GPU_IDS" >&3
wait_for 10 "any(e['event'] == 'allocate' and e['resource'] == 'nvidia.com/gpu' and e.get('envs', {}).get('NVIDIA_VISIBLE_DEVICES') == '${FIRST%%::*}' for e in ev)" ||
    fail "Allocate nvidia.com/gpu: NVIDIA_VISIBLE_DEVICES is the GPU's UUID"
wait_for 10 "any(e['event'] == 'allocate' and e['resource'] == 'nvidia.com/mig-3g.40gb' and e.get('envs', {}).get('NVIDIA_VISIBLE_DEVICES') == '$MIG_ID' for e in ev)" ||
    fail "Allocate nvidia.com/mig-3g.40gb: NVIDIA_VISIBLE_DEVICES is the MIG device"
wait_for 10 'any(e["event"] == "preferred" and len(e["ids"]) == 2 and len({i.split("::")[0] for i in e["ids"]}) == 1 for e in ev)' ||
    fail "GetPreferredAllocation: two replicas of one GPU"
# malformed requests get InvalidArgument with the reason, and the plugin goes on serving: one
# ID 200 times (the packing used to write past its 128 slots), an allocation larger than the
# available devices, an Allocate naming a device twice
mark bad
echo "preferred nvidia.com/gpu 200 $(python3 -c 'import sys; print(",".join([sys.argv[1]] * 200))' "$FIRST")" >&3
echo "preferred nvidia.com/gpu 50 $GPU_IDS" >&3
echo "allocate nvidia.com/gpu $FIRST,$FIRST" >&3
wait_for 10 "sum(1 for e in $(since bad) if e['event'] in ('preferred', 'allocate') and 'code = InvalidArgument' in e.get('error', '')) == 3" ||
    fail "malformed GetPreferredAllocation and Allocate: not 3 InvalidArgument errors"
wait_for 5 "any('appears twice' in e.get('error', '') for e in $(since bad)) and any('allocation size 50' in e.get('error', '') for e in $(since bad))" ||
    fail "malformed requests: the errors do not say what was wrong"
echo "preferred nvidia.com/gpu 2 $GPU_IDS" >&3
wait_for 10 "any(e['event'] == 'preferred' and len(e.get('ids', [])) == 2 for e in $(since bad))" ||
    fail "GetPreferredAllocation after malformed requests"
# health: XID 79 on GPU 0 turns its 4 replicas Unhealthy, then healthy again
gpus '{"xids": [79]}'
wait_for 5 'any(e["event"] == "devices" and e["resource"] == "nvidia.com/gpu" and sum(d["health"] == "Unhealthy" for d in e["devices"]) == 4 for e in ev)' ||
    fail "XID 79: GPU 0's devices not Unhealthy in ListAndWatch"
gpus '{}'
n=$(grep -c '"nvidia.com/gpu"' "$D/h.log")
wait_for 8 'any(e["event"] == "devices" and e["resource"] == "nvidia.com/gpu" and all(d["health"] == "Healthy" for d in e["devices"]) for e in ev[-6:])' ||
    fail "GPU 0's devices not Healthy again"
# kubelet restart
echo "restart" >&3
wait_for 15 'sum(1 for e in ev if e["event"] == "registered") >= 4' ||
    fail "no re-registration after the kubelet restart"
wait_for 10 'sum(1 for e in ev if e["event"] == "devices" and e["resource"] == "nvidia.com/gpu") >= 4' ||
    fail "no ListAndWatch after re-registration"
ART="$E2E_SRC/../../../shared/seed/examples"
[ -f "$ART/gpu-mps-config.yaml" ] || ART="$E2E_SRC/../../deploy/article"
configmap_data() { # FILE: the config.yaml of the article's ConfigMap, as it is
    python3 - "$1" <<'P'
import sys
lines = open(sys.argv[1]).read().split("\n")
i = next(k for k, l in enumerate(lines) if l.strip() == "config.yaml: |")
ind = len(lines[i + 1]) - len(lines[i + 1].lstrip())
for l in lines[i + 1:]:
    if l.strip() and len(l) - len(l.lstrip()) < ind:
        break
    print(l[ind:])
P
}
restart_agent() { # DP-CONFIG [more flags]: the agent again with another device-plugin config
    kill $apid; wait $apid 2>/dev/null
    local cfg="$1"; shift
    "$GS" --log-level info agent run --fake "$D/gpus.json" --dp-config "$cfg" \
        --device-plugin-dir "$D" --interval 0.5 --metrics-port 0 "$@" >> "$D/agent2.log" 2>&1 &
    apid=$!
}
# the article's time-slicing config (migStrategy none, 4 replicas) as it is: the two whole GPUs
# as 8 replicas, the MIG GPUs not advertised
configmap_data "$ART/gpu-time-slicing.yaml" > "$D/ts.yaml"
mark ts
restart_agent "$D/ts.yaml"
wait_for 15 "any(e['event'] == 'devices' and e['resource'] == 'nvidia.com/gpu' and len(e['devices']) == 8 for e in $(since ts))" ||
    fail "the article's time-slicing config: 8 nvidia.com/gpu replicas"
# migStrategy single: MIG devices are nvidia.com/gpu
printf 'version: v1\nflags:\n  migStrategy: single\n' > "$D/single.yaml"
mark single
restart_agent "$D/single.yaml"
wait_for 15 "any(e['event'] == 'devices' and e['resource'] == 'nvidia.com/gpu' and sum(d['id'].startswith('MIG-') for d in e['devices']) == 4 for e in $(since single))" ||
    fail "migStrategy single: the 4 MIG devices as nvidia.com/gpu"
# the scheduler's choice: a pod waiting on this node with gpusched.io/devices gpu=1 gets
# GPU 1's replicas from GetPreferredAllocation
echo '[{"metadata": {"namespace": "ai", "name": "waiting"}, "status": {"phase": "Pending"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "devices": "gpu=1"}]' > "$D/pods.json"
mark pick
restart_agent "$D/ts.yaml" --pods-file "$D/pods.json"
wait_for 15 "any(e['event'] == 'devices' and e['resource'] == 'nvidia.com/gpu' and len(e['devices']) == 8 for e in $(since pick))" ||
    fail "time-slicing again"
TS_IDS=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(",".join(d["id"] for d in [e for e in ev if e["event"] == "devices" and e["resource"] == "nvidia.com/gpu"][-1]["devices"]))' "$D/h.log")
sleep 1
echo "preferred nvidia.com/gpu 1 $TS_IDS" >&3
wait_for 10 "any(e['event'] == 'preferred' and len(e.get('ids', [])) == 1 and e['ids'][0].endswith('000000000001::0') for e in $(since pick))" ||
    fail "GetPreferredAllocation does not prefer GPU 1, the one the scheduler recorded"
# MPS: the article's gpu-mps-config (2 replicas) as it is, each GPU's control daemon run by
# the agent (our fake nvidia-cuda-mps-control): Allocate adds the daemon's pipe directory, its
# mount and the per-client limits
configmap_data "$ART/gpu-mps-config.yaml" > "$D/mps.yaml"
restart_agent "$D/mps.yaml" --mps-root "$D/mps" \
    --mps-control "$(dirname "$GS")/fake-mps/nvidia-cuda-mps-control"
wait_for 15 'sum(1 for e in ev if e["event"] == "devices" and e["resource"] == "nvidia.com/gpu" and len(e["devices"]) == 4 and all(d["health"] == "Healthy" for d in e["devices"])) >= 1' ||
    fail "MPS: 2 replicas x 2 whole GPUs, Healthy once their daemons run"
MPS_ID=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print([e for e in ev if e["event"] == "devices" and len(e["devices"]) == 4 and e["resource"] == "nvidia.com/gpu"][-1]["devices"][0]["id"])' "$D/h.log")
echo "allocate nvidia.com/gpu $MPS_ID" >&3
wait_for 10 "any(e['event'] == 'allocate' and e.get('envs', {}).get('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE') == '50' and e['envs'].get('CUDA_MPS_PIPE_DIRECTORY') and e['envs'].get('CUDA_MPS_PINNED_DEVICE_MEM_LIMIT', '').endswith('=40960M') and e.get('mounts') for e in ev)" ||
    fail "MPS Allocate: pipe directory, mount, 50 % threads, half the memory"
echo "quit" >&3
python3 - "$D/h.log" <<'P'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{"):
        e = json.loads(l)
        if e["event"] == "devices":
            e["devices"] = "%d devices, %d Unhealthy" % (len(e["devices"]), sum(d["health"] != "Healthy" for d in e["devices"]))
        print("  " + json.dumps(e))
P
if [ $OK = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; tail -20 "$D/agent.log"; fi
exit $OK
