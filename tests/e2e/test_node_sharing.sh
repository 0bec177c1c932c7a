#!/usr/bin/env bash
# GPU sharing delivered on the real node (node.sh: kubelet v1.37.2, containerd, runc), gpusched
# installed with its chart (helm.sh) from a test image: the product image of the binary under
# test plus our fake nvidia-cuda-mps-control (tests/fake) where the chart's sharing.mpsControl
# looks for NVIDIA's, and GS_FAKE_MPS_STATE in its environment (the product image has neither:
# cli_image_reproducible checks its files). Two fake H100s at 80 % utilization and 91 C.
#  1. Fractions (sharing.fractions): the agent's first /metrics answer after it starts already
#     shows 80 and 91; two gpusched.io/gpu-milli pods (300, 500) share one GPU as clients of its
#     live MPS control daemon, each seeing the device its annotation records (no correction),
#     the daemon's pipe (its control socket the very one the daemon listens on) and a pinned
#     memory limit and thread percentage of its own share; 1500 milli is refused with the
#     reason on the pod, no container started. The two fraction pods are Jobs gpusched places
#     (the agent's inventory offers its GPUs as fractions); the 1500 one is bound by hand with
#     the annotation a scheduler would write, as gpusched itself never places it.
#  2. MPS (sharing.mode mps, NVIDIA's device-plugin config, 2 replicas): a pod asking
#     nvidia.com/gpu is a client of its GPU's live daemon with half the threads and memory, the
#     daemon's defaults set so; a daemon killed that cannot start again, then daemons that hang:
#     the kubelet's allocatable drops to 0, a new pod waits unscheduled (no container with a dead
#     pipe), and runs as a live daemon's client once the daemons are back.
#  3. MPS on a P100 (compute capability 6.0): the agent refuses to start, saying why, and no GPU
#     pod starts.
# The MIG side (the annotation as the scheduler wrote it is the container's device, no
# correction) is e2e_test_helm_install's.
set -u
GS="$1"
ok=0
fail() { echo "FAIL: $*"; ok=1; }
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/node.sh"
. "$(dirname "$0")/helm.sh"
TAG="$GS_VERSION-fakemps"
gs_setup
MPS="$E2E_DIR/mps"
STATE="$MPS/fake-state"
python3 "$E2E_SRC/../../scripts/image.py" --binary "$GS" --path /usr/local/bin/gpusched \
    --add "$(dirname "$GS")/fake-mps/nvidia-cuda-mps-control:/usr/local/nvidia/bin/nvidia-cuda-mps-control" \
    --env "GS_FAKE_MPS_STATE=$STATE" --ref "gpusched.local/gpusched:$TAG" \
    --ca-certs /etc/ssl/certs/ca-certificates.crt --out "$E2E_DIR/images/fakemps.tar" > /dev/null &&
    e2e_node_images "$E2E_DIR/images/fakemps.tar" || { echo "e2e: the test image failed"; exit 1; }

# sharing MODE FRACTIONS MODEL: values for the test image, MODE and FRACTIONS on two fake MODELs
sharing() {
    cat > "$E2E_DIR/sharing.yaml" <<V
image: {tag: "$TAG"}
sharing: {mode: $1, replicas: 2, fractions: $2, migStrategy: none, mpsRoot: "$MPS"}
# no MIG advertised (migStrategy none), so no MIG to carve or manage (examples/mps.yaml)
scheduler: {dynamicMig: {enabled: false}}
agent:
  migManager: {enabled: false}
  health: {temperatureThreshold: 95}
  fake:
    spec:
      gpus:
        - {model: $3, util: 80, temp_c: 91}
        - {model: $3, util: 80, temp_c: 91}
V
}
agent_ip() {
    k get pods -n "$GS_NS" -l app.kubernetes.io/component=agent \
        -o jsonpath="{range .items[?(@.metadata.uid!='$1')]}{.status.podIP}{end}"
}
# first_scrape OLD-UID: the first /metrics answer of the agent pod that replaces OLD-UID, into
# $E2E_DIR/first.txt (asked as soon as the pod has an address, until it answers)
first_scrape() {
    local ip=""
    for _ in $(seq 1 600); do
        ip="$(agent_ip "$1")"
        [ -n "$ip" ] && break
        sleep 0.2
    done
    [ -n "$ip" ] || return 1
    for _ in $(seq 1 3000); do
        curl -sf --max-time 5 "http://$ip:9400/metrics" > "$E2E_DIR/first.txt" && return 0
        sleep 0.02
    done
    return 1
}
# pod_of NAME: the pod of Job NAME, or the pod NAME
pod_of() {
    local p
    p="$(k get pods -n e2e -l "job-name=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null)"
    echo "${p:-$1}"
}
# alloc_is RESOURCE QUANTITY: the Node's allocatable RESOURCE is QUANTITY (as the API server
# writes it: 2000 is 2k)
alloc_is() { [ "$(gs_alloc "$1")" = "$2" ]; }
# why_waiting JOB: the message of its pod's PodScheduled condition
why_waiting() {
    local p
    p="$(pod_of "$1")"
    k get pod -n e2e "$p" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}'
}
running() { [ "$(k get pod -n e2e "$(pod_of "$1")" -o jsonpath='{.status.phase}')" = Running ]; }
# unscheduled NAME: its pod waits, refused by the scheduler, and has no container
unscheduled() {
    local p
    p="$(pod_of "$1")" &&
        [ "$(k get pod -n e2e "$p" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}')" = False ] &&
        [ -z "$(k get pod -n e2e "$p" -o jsonpath='{.spec.nodeName}{.status.containerStatuses}')" ]
}
# client_ok NAME PCT MIB DAEMON-PCT DAEMON-MIB: the container of NAME (a Job's pod, or a pod) runs as an MPS client of the
# live daemon of the GPU its gpusched.io/devices annotation names: NVIDIA_VISIBLE_DEVICES is
# that GPU, its pipe folder holds the control socket the daemon listens on in the host's
# folder (same inode), PCT % of the threads and MIB MiB pinned are its limits, and the daemon
# answered it from inside the container with its defaults DAEMON-PCT and DAEMON-MIB
client_ok() {
    local job="$1" p ann uuid pipe pid log miss=""
    gs_wait 120 "$job runs" running "$job" || { gs_debug; return 1; }
    p="$(pod_of "$job")"
    ann="$(k get pod -n e2e "$p" -o jsonpath='{.metadata.annotations.gpusched\.io/devices}')"
    uuid="$(gs_uuid "$ann")" || { fail "$job: devices annotation '$ann'"; return 1; }
    gs_wait 30 "$job prints what it was given" bash -c \
        "'$E2E_BIN/kubectl' logs -n e2e $p | grep -q '^mps-control: get_default_device'" || return 1
    log="$(k logs -n e2e "$p")"
    pipe="$MPS/$uuid/pipe"
    pid="$(cat "$pipe/nvidia-cuda-mps-control.pid" 2>/dev/null)"
    [ -n "$pid" ] && grep -q nvidia-cuda-mps-control "/proc/$pid/cmdline" 2>/dev/null ||
        miss+=" (no live daemon $pid on the host)"
    for want in "NVIDIA_VISIBLE_DEVICES=$uuid" "CUDA_MPS_PIPE_DIRECTORY=$pipe" \
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$2" "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=${3}M" \
        "mps-pipe: control socket $(stat -c %i "$pipe/control" 2>/dev/null)" \
        "mps-control: get_default_active_thread_percentage: $4" \
        "mps-control: get_default_device_pinned_mem_limit 0: $5"; do
        grep -qxF -- "$want" <<< "$log" || miss+=" '$want'"
    done
    if [ -n "$miss" ]; then
        fail "$job ($ann): not in its log:$miss; the log:"; sed 's/^/    /' <<< "$log"
        return 1
    fi
    echo "ok   $job ($ann): client of $uuid's live daemon, $2 % of the threads, 0=${3}M pinned"
    CLIENT_GPU="$uuid"
}
# down_then_back HOW: the fake daemons HOW (a state line), the allocatable nvidia.com/gpu drops
# to 0, a new MPS pod waits unscheduled, then the daemons are back and it runs as a client
down_then_back() {
    local job="mps-$1"
    gs_wait 120 "the daemons $1: nvidia.com/gpu drops to 0" alloc_is nvidia.com/gpu 0 ||
        { ok=1; k logs -n "$GS_NS" -l app.kubernetes.io/component=agent --tail=-1 | grep mps | tail -5; }
    gs_job "$job" nvidia.com/gpu
    gs_wait 120 "$job waits unscheduled while no daemon runs" unscheduled "$job" &&
        echo "ok   the daemons $1: allocatable nvidia.com/gpu 0, $job unscheduled: $(why_waiting "$job")" ||
        ok=1
    : > "$STATE"
    gs_wait 180 "the daemons run again: nvidia.com/gpu 4" alloc_is nvidia.com/gpu 4 || ok=1
    client_ok "$job" 50 "$half" 50.0 "${half}M" || ok=1
}

# 1. fractions
sharing none true H100-80GB
gs_helm_install -f "$E2E_DIR/sharing.yaml" || exit 1
gs_inspect || exit 1
mem="$(sed -n 's/^GPU 0: .*, \([0-9]*\) MiB, .*/\1/p' "$E2E_DIR/inspect.txt")"
half=$((mem / 2))
old="$(k get pods -n "$GS_NS" -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].metadata.uid}')"
k delete pods -n "$GS_NS" -l app.kubernetes.io/component=agent --wait=false > /dev/null
if first_scrape "$old"; then
    util="$(awk '/^gpu_utilization\{/ {printf "%s ", $NF}' "$E2E_DIR/first.txt")"
    temp="$(awk '/^gpu_temperature_celsius\{/ {printf "%s ", $NF}' "$E2E_DIR/first.txt")"
    [ "$util" = "80 80 " ] && [ "$temp" = "91 91 " ] &&
        echo "ok   the restarted agent's first /metrics answer: gpu_utilization $util, gpu_temperature_celsius $temp" ||
        { fail "the first /metrics answer after the agent started: gpu_utilization '$util', gpu_temperature_celsius '$temp' (want 80 and 91 for both GPUs)"
          grep -E '^gpu_(utilization|temperature)' "$E2E_DIR/first.txt"; }
else
    fail "the restarted agent never answered /metrics"; gs_debug
fi
gs_wait 120 "the Node's allocatable gpusched.io/gpu-milli 2000" alloc_is gpusched.io/gpu-milli 2k ||
    { gs_debug; ok=1; }
k create namespace e2e > /dev/null
# 1500 milli (all 2000 free, so the kubelet asks the agent): its Allocate refuses, the pod fails
# admission with the agent's reason
gs_bound_pod frac-big milli=0:1500 gpusched.io/gpu-milli=1500
failed() { [ "$(k get pod -n e2e frac-big -o jsonpath='{.status.phase}')" = Failed ]; }
gs_wait 60 "frac-big (1500 milli) is refused" failed || ok=1
why="$(k get pod -n e2e frac-big -o jsonpath='{.status.reason}: {.status.message}')"
grep -q "a fraction is 1..999 of one GPU" <<< "$why" &&
    [ -z "$(k get pod -n e2e frac-big -o jsonpath='{.status.containerStatuses[*].containerID}')" ] &&
    echo "ok   frac-big (1500 milli) refused, no container: $why" ||
    fail "frac-big: not refused with a clear reason, or a container started: '$why'"
# the scheduler places the fractions: the inventory says the GPUs are served as fractions
frac_inv() {
    k get node "$E2E_NODE_NAME" -o jsonpath='{.metadata.annotations.gpusched\.io/inventory}' |
        grep -q '"sharing":"fractions"'
}
gs_wait 60 "the inventory offers the GPUs as fractions" frac_inv || { gs_debug; ok=1; }
gs_job frac-a gpusched.io/gpu-milli=300
gs_job frac-b gpusched.io/gpu-milli=500
client_ok frac-a 30 $((mem * 3 / 10)) 100.0 0 && gpu_a="$CLIENT_GPU" || ok=1
client_ok frac-b 50 "$half" 100.0 0 && gpu_b="$CLIENT_GPU" || ok=1
[ "${gpu_a:-a}" = "${gpu_b:-b}" ] && echo "ok   frac-a and frac-b share $gpu_a, each with its own limit" ||
    fail "frac-a (${gpu_a:-}) and frac-b (${gpu_b:-}) are not on one GPU"
[ "$(gs_corrections)" = 0 ] && echo "ok   no annotation corrected: each fraction got the GPU its annotation records" ||
    fail "gpusched_agent_device_corrections_total '$(gs_corrections)', want 0"

# 2. MPS replicas, then daemons that die or hang
k delete jobs,pods -n e2e --all --wait=true --timeout=120s > /dev/null
sharing mps false H100-80GB
helm_ upgrade "$GS_RELEASE" "$GS_CHART" -n "$GS_NS" -f "$GS_CHART/examples/fake-gpus.yaml" \
    -f "$E2E_DIR/values.yaml" -f "$E2E_DIR/sharing.yaml" --wait --timeout 300s \
    > "$E2E_DIR/helm-upgrade.log" 2>&1 || { fail "helm upgrade to MPS:"; tail -10 "$E2E_DIR/helm-upgrade.log"; }
gs_wait 120 "the Node's allocatable nvidia.com/gpu 4 (2 GPUs x 2 MPS replicas)" alloc_is nvidia.com/gpu 4 ||
    { gs_debug; ok=1; }
gs_job mps-a nvidia.com/gpu
client_ok mps-a 50 "$half" 50.0 "${half}M" || ok=1
# a daemon that dies (killed) and cannot start again: every GPU's
echo nostart > "$STATE"
for f in "$MPS"/*/pipe/nvidia-cuda-mps-control.pid; do
    pid="$(cat "$f")"
    grep -q nvidia-cuda-mps-control "/proc/$pid/cmdline" && kill -9 "$pid" && echo "killed the MPS daemon $pid ($f)"
done
down_then_back die
# daemons that hang: they take connections and never answer
echo hang > "$STATE"
down_then_back hang
k delete jobs,pods -n e2e --all --wait=true --timeout=120s > /dev/null

# 3. MPS on a P100: refused
sharing mps false P100
old="$(k get pods -n "$GS_NS" -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].metadata.uid}')"
helm_ upgrade "$GS_RELEASE" "$GS_CHART" -n "$GS_NS" -f "$GS_CHART/examples/fake-gpus.yaml" \
    -f "$E2E_DIR/values.yaml" -f "$E2E_DIR/sharing.yaml" > "$E2E_DIR/helm-upgrade.log" 2>&1 ||
    { fail "helm upgrade to P100:"; tail -10 "$E2E_DIR/helm-upgrade.log"; }
# the new agent pod (not OLD's) exited with an error, saying why
refused() {
    local p st
    p="$(k get pods -n "$GS_NS" -l app.kubernetes.io/component=agent \
        -o jsonpath="{range .items[?(@.metadata.uid!='$old')]}{.metadata.name}{end}")"
    [ -n "$p" ] || return 1
    st="$(k get pod -n "$GS_NS" "$p" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}{.status.containerStatuses[0].lastState.terminated.exitCode}')"
    [ -n "$st" ] && [ "${st//0/}" != "" ] &&
        { k logs -n "$GS_NS" "$p"; k logs -n "$GS_NS" "$p" --previous; } 2>/dev/null |
        grep -m1 "MPS needs Volta or newer" > "$E2E_DIR/refused.txt"
}
gs_wait 180 "the agent exits refusing MPS on a P100" refused &&
    echo "ok   the agent exits: $(cat "$E2E_DIR/refused.txt")" || { ok=1; gs_debug; }
gs_job mps-p100 nvidia.com/gpu
gs_wait 120 "mps-p100 waits unscheduled" unscheduled mps-p100 && echo "ok   no GPU pod starts on the P100 node" ||
    ok=1
[ $ok -eq 0 ] && echo "1 passed, 0 failed" || { gs_debug; echo "0 passed, 1 failed"; }
exit $ok
