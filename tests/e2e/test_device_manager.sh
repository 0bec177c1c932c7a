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
# the same harness with the kubelet's own server code) and labels /metrics with those pods.
# The device the scheduler recorded is the device the container gets: each pod's
# gpusched.io/devices (a pods file here, as the annotation on a cluster) names a device the
# kubelet would not pick by itself (the second whole GPU, the last 3g.40gb slot), and the
# kubelet's own Allocate gives exactly that one, with no correction. Fractions
# (gpusched.io/gpu-milli, 1000 per whole GPU) run as MPS clients of their GPU's control
# daemon (our fake nvidia-cuda-mps-control, started and watched by the agent): a 300-milli
# pod gets its GPU, a live daemon's pipe, 30 % of the threads and 30 % of the memory; a
# fraction of 1500 is refused; a daemon that dies or hangs turns its GPU's thousandths
# Unhealthy until it runs again. Skipped (77) where no mount namespace can be made.
set -u
DM_NAME=dm
. "$(dirname "$0")/devicemanager.sh"
mkfifo "$D/cmd"
. "$E2E_SRC/devices.sh"
"$H" < "$D/cmd" > "$D/h.log" 2> "$D/h.err" &
hpid=$!
exec 3> "$D/cmd"
wait_for 20 'any(e["event"] == "ready" for e in ev)' || { fail "device manager not ready"; tail "$D/h.err"; exit 1; }
printf 'version: v1\nflags:\n  migStrategy: mixed\n' > "$D/dp.yaml"
gpus '{}'
# what the scheduler recorded for the harness's pods (pod-N, in the order they are allocated)
cat > "$D/pods.json" <<'J'
{"items": [
 {"metadata": {"name": "pod-1", "namespace": "default"}, "devices": "gpu=1"},
 {"metadata": {"name": "pod-2", "namespace": "default"}, "devices": "mig=3:3g.40gb@4"},
 {"metadata": {"name": "pod-4", "namespace": "default"}, "devices": "mig=3:3g.40gb@0"},
 {"metadata": {"name": "pod-3", "namespace": "default"}, "devices": "mig=2:3g.40gb@4"},
 {"metadata": {"name": "pod-5", "namespace": "default"}, "devices": "milli=0:300"}]}
J
"$GS" agent inspect --fake "$D/gpus.json" > "$D/inspect.txt"
UUID1="$(sed -n 's/^GPU 1: .*, \(GPU-[^,]*\),.*/\1/p' "$D/inspect.txt")"
UUID0="$(sed -n 's/^GPU 0: .*, \(GPU-[^,]*\),.*/\1/p' "$D/inspect.txt")"
mig() { # GPU START: the MIG UUID of GPU's 3g.40gb at START
    sed -n "/^GPU $1:/,\$p" "$D/inspect.txt" | sed -n "s/.*3g.40gb at start $2 (size 4) \(MIG-[^;]*\);.*/\1/p" | head -1
}
MIG34="$(mig 3 4)" MIG30="$(mig 3 0)" MIG24="$(mig 2 4)"
export GS_FAKE_MPS_STATE="$D/mps-state"
PORT=$("$E2E_SRC/../free-port.py")
"$GS" --log-level info agent run --fake "$D/gpus.json" --dp-config "$D/dp.yaml" \
    --device-plugin-dir "$DIR" --interval 0.5 --xid-hold 2 --metrics-port "$PORT" \
    --metrics-bind 127.0.0.1 --pod-resources-socket /var/lib/kubelet/pod-resources/kubelet.sock \
    --pods-file "$D/pods.json" --fractions --mps-root "$D/mps" --mps-timeout 1 \
    --mps-check-interval 0.3 --mps-control "$(dirname "$GS")/fake-mps/nvidia-cuda-mps-control" \
    > "$D/agent.log" 2>&1 &
apid=$!
wait_for 20 'last["capacity"].get("nvidia.com/gpu") == 2 and last["capacity"].get("nvidia.com/mig-3g.40gb") == 4 and last["allocatable"].get("nvidia.com/gpu") == 2 and last["allocatable"].get("gpusched.io/gpu-milli") == 2000' ||
    fail "the kubelet's capacity: want nvidia.com/gpu 2, nvidia.com/mig-3g.40gb 4, gpusched.io/gpu-milli 2000"
echo "allocate nvidia.com/gpu 1" >&3
echo "allocate nvidia.com/mig-3g.40gb 1" >&3
wait_for 10 'any(e["event"] == "allocate" and e["resource"] == "nvidia.com/gpu" and e["envs"].get("NVIDIA_VISIBLE_DEVICES", "").startswith("GPU-") and e["envs"]["NVIDIA_VISIBLE_DEVICES"] in e.get("devices", []) for e in ev)' ||
    fail "kubelet Allocate of nvidia.com/gpu: NVIDIA_VISIBLE_DEVICES is the allocated GPU"
wait_for 10 'any(e["event"] == "allocate" and e["resource"] == "nvidia.com/mig-3g.40gb" and e["envs"].get("NVIDIA_VISIBLE_DEVICES", "").startswith("MIG-") for e in ev)' ||
    fail "kubelet Allocate of nvidia.com/mig-3g.40gb: a MIG device"
# the scheduler's choice, not the kubelet's: the recorded device, exactly
wait_for 5 "any(e['event'] == 'allocate' and e['pod'] == 'pod-1' and e['envs'].get('NVIDIA_VISIBLE_DEVICES') == '$UUID1' for e in ev)" &&
    echo "ok   pod-1 recorded gpu=1: the kubelet allocated $UUID1" ||
    fail "pod-1 recorded gpu=1 ($UUID1), the kubelet gave another"
wait_for 5 "any(e['event'] == 'allocate' and e['pod'] == 'pod-2' and e['envs'].get('NVIDIA_VISIBLE_DEVICES') == '$MIG34' for e in ev)" &&
    echo "ok   pod-2 recorded mig=3:3g.40gb@4: the kubelet allocated $MIG34" ||
    fail "pod-2 recorded mig=3:3g.40gb@4 ($MIG34), the kubelet gave another"
# two pods asking the same, the one listed first admitted second: the kubelet's pod-resources
# names the pod it admits (it holds no device yet), so each gets its own recorded slot
echo "allocate nvidia.com/mig-3g.40gb 1" >&3
echo "allocate nvidia.com/mig-3g.40gb 1" >&3
wait_for 5 "any(e['event'] == 'allocate' and e['pod'] == 'pod-3' and e['envs'].get('NVIDIA_VISIBLE_DEVICES') == '$MIG24' for e in ev) and any(e['event'] == 'allocate' and e['pod'] == 'pod-4' and e['envs'].get('NVIDIA_VISIBLE_DEVICES') == '$MIG30' for e in ev)" &&
    echo "ok   pod-3 and pod-4 (same request, listed in the other order) got their own slots" ||
    fail "pod-3 (mig=2:3g.40gb@4, $MIG24) and pod-4 (mig=3:3g.40gb@0, $MIG30) did not get their own"
# a fraction: an MPS client of its GPU's live daemon, with the limits of its share
echo "allocate gpusched.io/gpu-milli 300" >&3
wait_for 10 'any(e["event"] == "allocate" and e["pod"] == "pod-5" for e in ev)' || fail "no allocation of pod-5"
python3 - "$D/h.log" "$UUID0" "$D/mps" <<'P' && echo "ok   pod-5 (milli=0:300): MPS client of GPU 0's live daemon, 30 % threads, 0=24576M" || fail "pod-5's fraction"
import json, os, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
e = [x for x in ev if x["event"] == "allocate" and x["pod"] == "pod-5"][-1]
env, uuid, root = e["envs"], sys.argv[2], sys.argv[3]
pipe = root + "/" + uuid + "/pipe"
want = {"NVIDIA_VISIBLE_DEVICES": uuid, "CUDA_MPS_PIPE_DIRECTORY": pipe,
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=24576M"}
bad = {k: (env.get(k), v) for k, v in want.items() if env.get(k) != v}
if "error" in e or bad or pipe + ":" + pipe not in e["mounts"]:
    sys.exit(print("   ", e.get("error"), bad, e["mounts"]) or 1)
pid = int(open(pipe + "/nvidia-cuda-mps-control.pid").read())
os.kill(pid, 0)  # the daemon behind the pipe is alive
P
# a fraction of more than a GPU is refused
echo "allocate gpusched.io/gpu-milli 1500" >&3
wait_for 10 'any(e["event"] == "allocate" and e["resource"] == "gpusched.io/gpu-milli" and "a fraction is 1..999 of one GPU" in e.get("error", "") for e in ev)' &&
    echo "ok   gpusched.io/gpu-milli 1500: refused" || fail "a fraction of 1500 was not refused"
# a daemon that dies, then one that hangs: GPU 0's thousandths Unhealthy, back once it runs
for how in die hang; do
    echo "$how $UUID0" > "$GS_FAKE_MPS_STATE"
    wait_for 10 'last["allocatable"].get("gpusched.io/gpu-milli", 0) == 1000 and last["capacity"].get("gpusched.io/gpu-milli") == 2000' &&
        echo "ok   GPU 0's MPS daemon ${how}s: its thousandths are Unhealthy" ||
        fail "GPU 0's MPS daemon ${how}s: allocatable gpusched.io/gpu-milli did not drop"
    : > "$GS_FAKE_MPS_STATE"
    wait_for 15 'last["allocatable"].get("gpusched.io/gpu-milli") == 2000' &&
        echo "ok   GPU 0's MPS daemon runs again: its thousandths are back" ||
        fail "GPU 0's MPS daemon did not come back after it ${how}d"
done
grep -q "corrected to" "$D/agent.log" && fail "the agent corrected an annotation: $(grep 'corrected to' "$D/agent.log")" || true
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
