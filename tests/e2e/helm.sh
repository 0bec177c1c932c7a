#!/usr/bin/env bash
# gpusched installed with its Helm chart on the real node of node.sh: the images built by
# scripts/image.py and imported into the node's containerd, then `helm install` of
# charts/gpusched with the fake GPU backend. Source after cluster.sh and node.sh, with GS (the
# gpusched binary under test: the image holds this very binary).
#     e2e_node_prepare; e2e_up; gs_node_up; gs_helm_install; ...
GS_CHART="$E2E_SRC/../../charts/gpusched"
GS_NS=gpusched
GS_RELEASE=gs
GS_VERSION="$(sed -En 's/^project.gpusched VERSION ([0-9.]+) .*/\1/p' "$E2E_SRC/../../CMakeLists.txt")"

helm_() { "$E2E_BIN/helm-v4.3.1" --kubeconfig "$KUBECONFIG" "$@"; }
k() { "$E2E_BIN/kubectl" "$@"; }

# gs_images: the gpusched image of $GS, and the sandbox's pause and gs-probe (built beside it)
gs_images() {
    local b d="$E2E_DIR/images"
    b="$(dirname "$GS")"
    mkdir -p "$d"
    python3 "$E2E_SRC/../../scripts/image.py" --binary "$GS" --path /usr/local/bin/gpusched \
        --ref "gpusched.local/gpusched:$GS_VERSION" --ca-certs /etc/ssl/certs/ca-certificates.crt \
        --out "$d/gpusched.tar" > "$d/gpusched.txt" &&
        python3 "$E2E_SRC/../../scripts/image.py" --binary "$b/gs-pause" --path /pause \
            --ref gpusched.local/pause:3.10 --user pause:65535:65535 --out "$d/pause.tar" \
            > /dev/null &&
        python3 "$E2E_SRC/../../scripts/image.py" --binary "$b/gs-probe" --path /gs-probe \
            --ref gpusched.local/gpu-probe:1 --out "$d/probe.tar" > /dev/null ||
        { echo "e2e: image build failed"; return 1; }
    echo "images: $(head -1 "$d/gpusched.txt"), $(du -h "$d/gpusched.tar" | cut -f1) archive"
}

# gs_setup: the control plane, the real node and the images (exits the test on failure)
gs_setup() {
    e2e_node_prepare
    e2e_up || exit 1
    gs_node_up || exit 1
}

# gs_node_up: the node labelled as NFD and the GPU Operator would before any GPU label (the
# chart's fake-GPU example selects gpusched.io/fake-gpus=true), with the images imported
gs_node_up() {
    E2E_NODE_LABELS="kubernetes.io/os=linux,feature.node.kubernetes.io/pci-10de.present=true"
    E2E_NODE_LABELS+=",feature.node.kubernetes.io/kernel-version.major=6"
    E2E_NODE_LABELS+=",nvidia.com/gpu.deploy.device-plugin=false,gpusched.io/fake-gpus=true"
    e2e_node_up || return 1
    gs_images || return 1
    e2e_node_images "$E2E_DIR/images/pause.tar" "$E2E_DIR/images/probe.tar" \
        "$E2E_DIR/images/gpusched.tar"
}

# gs_values: the test's values over the chart's fake-GPU example
gs_values() {
    cat > "$E2E_DIR/values.yaml" <<V
image:
  tag: "$GS_VERSION"
  pullPolicy: Never
agent:
  kubeletDir: /var/lib/kubelet
V
}

# gs_helm_install [HELM ARGS...]: install the release and wait for its pods
gs_helm_install() {
    gs_values
    local t0=$SECONDS
    if ! helm_ install "$GS_RELEASE" "$GS_CHART" -n "$GS_NS" --create-namespace \
        -f "$GS_CHART/examples/fake-gpus.yaml" -f "$E2E_DIR/values.yaml" "$@" \
        --wait --timeout 300s > "$E2E_DIR/helm-install.log" 2>&1; then
        echo "e2e: helm install failed:"; tail -20 "$E2E_DIR/helm-install.log"
        gs_debug
        return 1
    fi
    echo "helm install: $((SECONDS - t0)) s"
}

# gs_debug: what a failed step needs to be understood
gs_debug() {
    k get pods -A -o wide
    k get events -A --sort-by=.lastTimestamp | tail -25
    local p
    for p in $(k get pods -n "$GS_NS" -o name); do
        echo "--- $p"; k logs -n "$GS_NS" "$p" --all-containers --tail 15 2>&1
    done
    grep -E "^E" "$E2E_NODE/kubelet.log" | tail -15
}

# gs_wait SECONDS DESCRIPTION CMD...: poll CMD every second until it succeeds
gs_wait() {
    local s="$1" what="$2"
    shift 2
    for _ in $(seq 1 "$s"); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 1
    done
    echo "FAIL: $what (after $s s)"
    return 1
}

# gs_running NAMESPACE OP N: the count of Running pods in NAMESPACE compares OP N (-ge, =)
gs_running() {
    [ "$(k get pods -n "$1" --field-selector=status.phase=Running -o name | wc -l)" "$2" "$3" ]
}

# gs_alloc RESOURCE: the node's allocatable RESOURCE (0 when absent)
gs_alloc() {
    local v
    v="$(k get node "$E2E_NODE_NAME" -o jsonpath="{.status.allocatable['${1//./\\.}']}")"
    echo "${v:-0}"
}

# gs_uuid DEVICES: the device UUID the annotation gpusched.io/devices names, from what the
# agent's backend shows for the same fake GPUs (`gpusched agent inspect`): gpu=N (replica=N,
# milli=N:SHARE) is GPU N's UUID, mig=N:PROFILE@START the instance of PROFILE at START on GPU N
gs_uuid() {
    python3 - "$1" "$E2E_DIR/inspect.txt" <<'P'
import re, sys
ann, text = sys.argv[1], open(sys.argv[2]).read()
gpus = {}
cur = None
for line in text.splitlines():
    m = re.match(r"GPU (\d+): .*?, (GPU-[^,\s]+),", line)
    if m:
        cur = int(m.group(1)); gpus[cur] = {"uuid": m.group(2), "mig": {}}
        continue
    m = re.match(r"\s+instance GI \d+: (\S+) at start (\d+) .*? (MIG-[^\s;,]+)", line)
    if m and cur is not None:
        gpus[cur]["mig"][(m.group(1), int(m.group(2)))] = m.group(3)
m = re.fullmatch(r"(?:gpu|replica)=(\d+)|milli=(\d+):\d+", ann)
if m:
    print(gpus[int(m.group(1) or m.group(2))]["uuid"]); sys.exit(0)
m = re.fullmatch(r"mig=(\d+):(\S+)@(\d+)", ann)
if m:
    print(gpus[int(m.group(1))]["mig"][(m.group(2), int(m.group(3)))]); sys.exit(0)
sys.exit("unknown devices annotation " + ann)
P
}

# gs_inspect: what the agent's fake backend shows (`gpusched agent inspect`) for the spec the
# release gave the agent (its ConfigMap)
gs_inspect() {
    local cm
    cm="$(k get configmap -n "$GS_NS" -o name | grep 'fake-gpus$')" || return 1
    k get -n "$GS_NS" "$cm" -o jsonpath='{.data.gpus\.json}' > "$E2E_DIR/fake.json" &&
        "$GS" agent inspect --fake "$E2E_DIR/fake.json" > "$E2E_DIR/inspect.txt"
}

# gs_workloads: GPU pods as a Deployment and a Job write them, scheduled by gpusched, each
# printing the NVIDIA_* variables the device plugin gave it
gs_workloads() {
    k create namespace e2e >/dev/null 2>&1
    k apply -f - >/dev/null <<'Y'
apiVersion: apps/v1
kind: Deployment
metadata: {name: infer, namespace: e2e, labels: {app: infer}}
spec:
  replicas: 2
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      schedulerName: gpusched
      priorityClassName: gpu-high
      terminationGracePeriodSeconds: 2
      containers:
        - name: server
          image: gpusched.local/gpu-probe:1
          imagePullPolicy: Never
          ports: [{containerPort: 8000, name: http}]
          resources:
            limits: {nvidia.com/mig-3g.40gb: 1, cpu: 100m, memory: 32Mi}
Y
    gs_job train nvidia.com/gpu gpu-low
}

# gs_job NAME RESOURCE[=AMOUNT] [PRIORITYCLASS]: a Job of one GPU pod asking AMOUNT (1) of
# RESOURCE, scheduled by gpusched, printing the NVIDIA_* variables the device plugin gave it
gs_job() {
    local res="${2%%=*}" n=1
    [ "$res" = "$2" ] || n="${2#*=}"
    k apply -f - >/dev/null <<Y
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: e2e}
spec:
  backoffLimit: 0
  template:
    spec:
      schedulerName: gpusched
      ${3:+priorityClassName: $3}
      restartPolicy: Never
      terminationGracePeriodSeconds: 2
      containers:
        - name: trainer
          image: gpusched.local/gpu-probe:1
          imagePullPolicy: Never
          resources:
            limits: {$res: $n, cpu: 100m, memory: 32Mi}
Y
}

# gs_bound_pod NAME DEVICES RESOURCE[=AMOUNT]: a pod of gs-probe asking AMOUNT (1) of RESOURCE,
# bound to the node by hand (no scheduler) with the gpusched.io/devices annotation DEVICES
gs_bound_pod() {
    local res="${3%%=*}" n=1
    [ "$res" = "$3" ] || n="${3#*=}"
    k apply -f - >/dev/null <<Y
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: e2e
  annotations: {gpusched.io/devices: "$2"}
spec:
  nodeName: $E2E_NODE_NAME
  terminationGracePeriodSeconds: 2
  containers:
    - name: server
      image: gpusched.local/gpu-probe:1
      imagePullPolicy: Never
      resources: {limits: {$res: $n}}
Y
}

# gs_corrections: the agent's gpusched_agent_device_corrections_total (annotations it rewrote
# because the kubelet gave a pod other devices than the scheduler recorded), from its /metrics
gs_corrections() {
    local ip
    ip="$(k get pods -n "$GS_NS" -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].status.podIP}')"
    curl -sf "http://$ip:9400/metrics" | sed -n 's/^gpusched_agent_device_corrections_total{.*} //p'
}

# gs_check_devices N [POD...]: N GPU pods in e2e run on the node, each seeing as
# NVIDIA_VISIBLE_DEVICES the device its gpusched.io/devices annotation recorded as the
# scheduler wrote it (the agent corrects nothing: the scheduler's choice is the kubelet's), no
# two the same; the PODs named were bound by hand naming a device another pod holds, so the
# kubelet gives them another and the agent corrects their annotation (waited for here); prints
# "pod uuid containerID" lines into $E2E_DIR/devices.txt
gs_check_devices() {
    local want="$1" p ann dev seen uuid cid bad=0 corrected
    shift
    gs_wait 120 "$want GPU pods running" gs_running e2e -ge "$want" || { gs_debug; return 1; }
    : > "$E2E_DIR/devices.txt"
    for p in $(k get pods -n e2e --field-selector=status.phase=Running -o name); do
        p="${p#pod/}"
        ann="$(k get pod -n e2e "$p" -o jsonpath='{.metadata.annotations.gpusched\.io/devices}')"
        uuid="$(gs_uuid "$ann")" || { echo "FAIL: $p: devices annotation '$ann'"; bad=1; continue; }
        gs_wait 30 "$p prints its environment" bash -c \
            "'$E2E_BIN/kubectl' logs -n e2e $p | grep -q '^NVIDIA_VISIBLE_DEVICES='" || bad=1
        seen="$(k logs -n e2e "$p" | sed -n 's/^NVIDIA_VISIBLE_DEVICES=//p')"
        corrected=no
        for q in "$@"; do [ "$q" = "$p" ] && corrected=yes; done
        # a pod bound by hand onto another's device: the agent makes its annotation say which
        # device the kubelet gave (within its interval)
        for _ in $(seq 1 30); do
            [ $corrected = yes ] && [ "$seen" != "$uuid" ] || break
            sleep 1
            ann="$(k get pod -n e2e "$p" -o jsonpath='{.metadata.annotations.gpusched\.io/devices}')"
            uuid="$(gs_uuid "$ann")" || break
        done
        cid="$(k get pod -n e2e "$p" -o jsonpath='{.status.containerStatuses[0].containerID}')"
        if [ "$seen" != "$uuid" ]; then
            echo "FAIL: $p: annotation $ann is $uuid, the container sees NVIDIA_VISIBLE_DEVICES=$seen"
            bad=1
        else
            echo "ok   $p: $ann -> NVIDIA_VISIBLE_DEVICES=$seen"
        fi
        echo "$p $seen $cid" >> "$E2E_DIR/devices.txt"
    done
    if [ "$(cut -d' ' -f2 "$E2E_DIR/devices.txt" | sort | uniq -d | wc -l)" -ne 0 ]; then
        echo "FAIL: two pods were given the same device:"; cat "$E2E_DIR/devices.txt"; bad=1
    fi
    return $bad
}
