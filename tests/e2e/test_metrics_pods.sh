#!/usr/bin/env bash
# The node agent's /metrics on the real control plane. Pods on the node (bound with the
# gpusched.io/devices annotation: a whole GPU, a 3g.40gb MIG instance, two pods sharing a
# time-sliced GPU) appear as pod/namespace/container labels on their GPU's series, each with
# its own utilization and memory used: two MIG pods their instances' (20 and 65 where the GPU
# says 55), two time-sliced pods their processes' (10 and 45 where the GPU says 33), matched
# by PID through cgroup files under --proc-root (systemd's and cgroupfs' names) to the pods'
# UIDs the API server gave them; the
# article's gpu-monitor-config (metrics, cluster and region labels) is read as it is from its
# ConfigMap. Every scrape passes the upstream Prometheus text parser (expfmt, built from
# pinned Go modules), in the article's names and in DCGM's. Pods come and go, and so do
# their series. The MIG manager follows nvidia.com/mig.config: a config that would take a
# GPU a pod holds fails (state failed, nothing changed); once the pod is gone it succeeds.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
PROMCHECK="$E2E_BIN/promcheck-v0.70.0"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
1 h100 H100-80GB 4 whole
S
NODE=h100-000
tn_agent_user || exit 1
# the article's monitor config and MIG config: its manifest files as they are (the agent reads
# the ConfigMap in each; the other objects there are not its business)
ART="$E2E_SRC/../../../shared/seed/examples"
[ -f "$ART/gpu-monitor.yaml" ] || ART="$E2E_SRC/../../deploy/article"
cat > "$E2E_DIR/gpus.json" <<'G'
{"gpus": [{"model": "H100-80GB", "util": 71, "mem_used_mib": 30000, "power_w": 410, "temp_c": 61},
          {"model": "H100-80GB", "mig": true, "util": 55,
           "instances": [{"profile": "3g.40gb", "start": 0, "util": 20, "mem_used_mib": 12000},
                         {"profile": "3g.40gb", "start": 4, "util": 65, "mem_used_mib": 30000}]},
          {"model": "H100-80GB", "util": 33, "mem_used_mib": 21000,
           "processes": [{"pid": 4242, "util": 10, "mem_used_mib": 1000},
                         {"pid": 4343, "util": 45, "mem_used_mib": 20000}]},
          {"model": "H100-80GB"}]}
G
"$K" create namespace ai > /dev/null
mkpod() { # NAME DEVICES
    "$K" create -f - > /dev/null <<Y
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: ai, annotations: {gpusched.io/devices: "$2"}}
spec:
  nodeName: $NODE
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers: [{name: main, image: registry.invalid/none:1}]
Y
}
mkpod trainer "gpu=0"
mkpod llm "mig=1:3g.40gb@4"
mkpod embed "mig=1:3g.40gb@0"
mkpod chat-a "replica=2"
mkpod chat-b "replica=2"
# the chat pods' processes as the host's /proc shows them: 4242 in chat-a's container (the
# kubelet's systemd cgroup driver), 4343 in chat-b's (cgroupfs)
uid() { "$K" get pod -n ai "$1" -o jsonpath='{.metadata.uid}'; }
UA=$(uid chat-a); UB=$(uid chat-b)
[ -n "$UA" ] && [ -n "$UB" ] || tn_fail "no UIDs for the chat pods"
mkdir -p "$E2E_DIR/proc/4242" "$E2E_DIR/proc/4343"
CID=3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071829
echo "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UA//-/_}.slice/cri-containerd-$CID.scope" \
    > "$E2E_DIR/proc/4242/cgroup"
echo "0::/kubepods/besteffort/pod$UB/$CID" > "$E2E_DIR/proc/4343/cgroup"
PORT=$(e2e_free_port); PORT2=$(e2e_free_port)
"$GS" --log-level info agent run --fake "$E2E_DIR/gpus.json" --node $NODE --interval 1 \
    --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port $PORT --metrics-bind 127.0.0.1 \
    --monitor-config "$ART/gpu-monitor.yaml" --mig-config "$ART/nvidia-mig-config.yaml" \
    --proc-root "$E2E_DIR/proc" > "$E2E_DIR/agent.log" 2>&1 &
echo $! > "$E2E_DIR/agent.pid"
"$GS" agent run --fake "$E2E_DIR/gpus.json" --node $NODE --interval 1 --dcgm-names \
    --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port $PORT2 --metrics-bind 127.0.0.1 \
    --auto-cordon false --proc-root "$E2E_DIR/proc" > "$E2E_DIR/agent2.log" 2>&1 &
echo $! > "$E2E_DIR/agent2.pid"
scrape() { curl -sf "http://127.0.0.1:$1/metrics" > "$E2E_DIR/m.txt" &&
    "$PROMCHECK" < "$E2E_DIR/m.txt" > "$E2E_DIR/series.txt" 2> "$E2E_DIR/promcheck.err"; }
has_series() { grep -q "$1" "$E2E_DIR/series.txt"; }
pods_seen() { scrape $PORT && has_series 'pod=chat-b'; }
tn_wait 30 pods_seen || { tn_fail "no per-pod series"; cat "$E2E_DIR/promcheck.err"; head -5 "$E2E_DIR/m.txt"; }
scrape $PORT || { tn_fail "the upstream parser refused /metrics: $(cat "$E2E_DIR/promcheck.err")"; }
cat "$E2E_DIR/promcheck.err"
for m in gpu_utilization gpu_memory_utilization gpu_memory_used_bytes gpu_memory_total_bytes \
         gpu_power_usage_watts gpu_temperature_celsius gpu_sm_clock_mhz gpu_mem_clock_mhz; do
    has_series "^$m .*cluster=production.*region=cn-east" || tn_fail "$m with cluster and region"
done
has_series '^gpu_utilization .*gpu=0.*namespace=ai,pod=trainer.* 71$' || tn_fail "trainer on GPU 0"
# 40448 MiB, the 3g.40gb instance of an H100-80GB
has_series '^gpu_memory_total_bytes .*gpu=1,gpu_instance_id=2,.*mig_profile=3g.40gb.*pod=llm.* 4.2412802048e+10$' ||
    { tn_fail "llm on the 3g.40gb instance at start 4, with the instance's memory"; grep "^gpu_memory_total" "$E2E_DIR/series.txt"; }
has_series '^gpu_utilization .*gpu=2.*pod=chat-a' && has_series '^gpu_utilization .*gpu=2.*pod=chat-b' ||
    tn_fail "both chat pods on the shared GPU 2"
# each pod's own utilization and memory used: MIG pods their instances' (the GPU says 55),
# time-sliced pods their processes' (the GPU says 33)
own() { # METRIC GPU POD VALUE
    has_series "^$1 .*gpu=$2,.*pod=$3\( \|,.* \)$4\$" ||
        { tn_fail "$3 on GPU $2: $1 is not $4"; grep "^$1 .*pod=$3," "$E2E_DIR/series.txt"; }
}
own gpu_utilization 1 embed 20
own gpu_utilization 1 llm 65
own gpu_memory_used_bytes 1 embed 1.2582912e+10
own gpu_memory_used_bytes 1 llm 3.145728e+10
own gpu_utilization 2 chat-a 10
own gpu_utilization 2 chat-b 45
own gpu_memory_used_bytes 2 chat-a 1.048576e+09
own gpu_memory_used_bytes 2 chat-b 2.097152e+10
own gpu_utilization 0 trainer 71
grep -q '^# HELP gpu_utilization .*A100 and A30 measure none.*Attributed' "$E2E_DIR/m.txt" ||
    tn_fail "the HELP text of gpu_utilization does not say what is measured"
grep '^gpu_utilization ' "$E2E_DIR/series.txt" | sed 's/^/  /'
# DCGM names
scrape $PORT2 || tn_fail "DCGM names: the parser refused /metrics: $(cat "$E2E_DIR/promcheck.err")"
has_series '^DCGM_FI_DEV_GPU_UTIL .*UUID=GPU-.*modelName=H100-80GB.*pod=trainer' || tn_fail "DCGM_FI_DEV_GPU_UTIL"
has_series '^DCGM_FI_DEV_FB_USED .*gpu=0.* 30000$' || tn_fail "DCGM_FI_DEV_FB_USED in MiB"
has_series '^DCGM_FI_DEV_FB_USED .*gpu=2,.*pod=chat-b\( \|,.* \)20000$' || tn_fail "chat-b's DCGM_FI_DEV_FB_USED, its process's, in MiB"
has_series '^DCGM_FI_DEV_GPU_UTIL .*GPU_I_ID=2,.*pod=llm\( \|,.* \)65$' || tn_fail "llm's DCGM_FI_DEV_GPU_UTIL, its instance's"
# pods come and go
"$K" delete pod -n ai trainer --grace-period 0 --force > /dev/null 2>&1
gone() { scrape $PORT && ! has_series 'pod=trainer' && has_series '^gpu_utilization .*gpu=0,.*pod=,.* 71$'; }
tn_wait 10 gone || { tn_fail "the trainer's series did not go with it"; grep '^gpu_utilization' "$E2E_DIR/series.txt"; "$K" get pods -A -o wide; }
# the MIG manager: all-1g.10gb would destroy the 3g.40gb instance llm holds
state() { "$K" get node $NODE -o jsonpath='{.metadata.labels.nvidia\.com/mig\.config\.state}'; }
"$K" label node $NODE nvidia.com/mig.config=all-1g.10gb --overwrite > /dev/null
tn_wait 10 sh -c "[ \"\$(\"$K\" get node $NODE -o jsonpath='{.metadata.labels.nvidia\\.com/mig\\.config\\.state}')\" = failed ]" ||
    tn_fail "mig.config.state is '$(state)', want failed (an instance in use)"
grep -q "that a pod holds" "$E2E_DIR/agent.log" || tn_fail "the agent does not say why the MIG config failed"
"$K" delete pod -n ai llm embed chat-a chat-b --grace-period 0 --force > /dev/null 2>&1
sleep 2
"$K" label node $NODE nvidia.com/mig.config=all-3g.40gb --overwrite > /dev/null
tn_wait 15 sh -c "[ \"\$(\"$K\" get node $NODE -o jsonpath='{.metadata.labels.nvidia\\.com/mig\\.config\\.state}')\" = success ]" ||
    tn_fail "mig.config.state is '$(state)', want success"
applied() {
    curl -s "http://127.0.0.1:$PORT/status" | python3 -c '
import json, sys
st = json.load(sys.stdin)
n = [g["instances"] for g in st]
if n == [2, 2, 2, 2]:
    print("instances per GPU after all-3g.40gb:", n)
sys.exit(0 if n == [2, 2, 2, 2] else 1)'
}
tn_wait 5 applied || tn_fail "all-3g.40gb not applied on every GPU"
[ "$TN_OK" = 0 ] || tail -20 "$E2E_DIR/agent.log"
tn_done
