#!/usr/bin/env bash
# Multi-GPU pods get well-linked GPUs through the kubelet's own device manager
# (k8s.io/kubernetes v1.37.2 pkg/kubelet/cm/devicemanager, built by build-control-plane.sh), in a
# private mount namespace as test_device_manager.sh runs it. The agent's 8 fake H100s form 4
# NVLink pairs (0-1, 2-3, 4-5, 6-7; a PCIe switch each) over 2 NUMA nodes; no scheduler record
# steers these pods, so the kubelet takes what the device plugin's GetPreferredAllocation
# prefers. A 1-GPU pod takes GPU 0; a 2-GPU pod then gets a whole pair on GPU 0's NUMA node
# (2-3, not 1 and a GPU of another pair); a 4-GPU pod gets the two whole pairs left (4-5 and
# 6-7), never GPU 1 (whose partner is busy) with three of another pair.
# Each asserted from the NVIDIA_VISIBLE_DEVICES the kubelet's Allocate gave the container.
# agent inspect shows the links the agent publishes in its inventory (NUMA node, PCIe path,
# NVLink peers).
# Skipped (77) where no mount namespace can be made.
set -u
DM_NAME=links
. "$(dirname "$0")/devicemanager.sh"
mkfifo "$D/cmd"
. "$E2E_SRC/devices.sh"
"$H" < "$D/cmd" > "$D/h.log" 2> "$D/h.err" &
hpid=$!
exec 3> "$D/cmd"
wait_for 20 'any(e["event"] == "ready" for e in ev)' || { fail "device manager not ready"; tail "$D/h.err"; exit 1; }
python3 - > "$D/gpus.json" <<'P'
import json
print(json.dumps({"gpus": [{"model": "H100-80GB"} for _ in range(8)],
                  "topology": {"nvlink": "pairs", "links": 4, "numa_nodes": 2}}))
P
echo '{"items": []}' > "$D/pods.json"
"$GS" agent inspect --fake "$D/gpus.json" > "$D/inspect.txt"
uuid() { sed -n "s/^GPU $1: .*, \(GPU-[^,]*\),.*/\1/p" "$D/inspect.txt"; }
for i in 0 1 2 3 4 5 6 7; do eval "U$i=$(uuid $i)"; done
# what the backend sees, as the inventory publishes it: each GPU's NUMA node, PCIe path and peer
python3 - "$D/inspect.txt" <<'P' && echo "ok   agent inspect: each GPU's NUMA node, PCIe switch and NVLink partner" || fail "agent inspect lacks the links: $(grep links: "$D/inspect.txt" | head -3)"
import re, sys
links = re.findall(r"^  links: NUMA node (\d+), PCIe (\S+), NVLink (.*)$", open(sys.argv[1]).read(), re.M)
assert len(links) == 8, links
for i, (numa, pci, nv) in enumerate(links):
    assert int(numa) == i // 4 and pci.startswith("pci0000:") and nv == "GPU %d x4" % (i ^ 1), (i, numa, pci, nv)
P
"$GS" --log-level info agent run --fake "$D/gpus.json" --device-plugin-dir "$DIR" \
    --interval 0.5 --pods-file "$D/pods.json" > "$D/agent.log" 2>&1 &
apid=$!
wait_for 20 'last["capacity"].get("nvidia.com/gpu") == 8 and last["allocatable"].get("nvidia.com/gpu") == 8' ||
    fail "the kubelet's capacity: want nvidia.com/gpu 8"
# got POD UUID...: the pod's NVIDIA_VISIBLE_DEVICES holds exactly these GPUs
got() {
    local pod=$1
    shift
    local want
    want="$(printf '%s\n' "$@" | sort | paste -sd, -)"
    wait_for 10 "any(e['event'] == 'allocate' and e['pod'] == '$pod' and ','.join(sorted(e['envs'].get('NVIDIA_VISIBLE_DEVICES', '').split(','))) == '$want' for e in ev)"
}
seen() { # POD: what the pod was given, for the failure message
    python3 - "$D/h.log" "$1" <<'P'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print([e["envs"].get("NVIDIA_VISIBLE_DEVICES") or e.get("error") for e in ev if e["event"] == "allocate" and e["pod"] == sys.argv[2]])
P
}
echo "allocate nvidia.com/gpu 1" >&3
got pod-1 "$U0" && echo "ok   pod-1 (1 GPU): GPU 0" || fail "pod-1 (1 GPU): want GPU 0, got $(seen pod-1)"
echo "allocate nvidia.com/gpu 2" >&3
got pod-2 "$U2" "$U3" && echo "ok   pod-2 (2 GPUs): the NVLink pair 2-3, beside GPU 0 on NUMA node 0" ||
    fail "pod-2 (2 GPUs): want the pair 2-3, got $(seen pod-2)"
echo "allocate nvidia.com/gpu 4" >&3
got pod-3 "$U4" "$U5" "$U6" "$U7" && echo "ok   pod-3 (4 GPUs): two whole NVLink pairs, 4-5 and 6-7" ||
    fail "pod-3 (4 GPUs): want the pairs 4-5 and 6-7, got $(seen pod-3)"
echo "quit" >&3
python3 - "$D/h.log" <<'P'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{") and '"allocate"' in l:
        print("  " + l.strip())
P
if [ $OK = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; tail -20 "$D/agent.log"; tail -5 "$D/h.err"; fi
exit $OK
