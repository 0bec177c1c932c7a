#!/usr/bin/env bash
# A real Kubernetes node on this machine, beside the control plane of cluster.sh: the kubelet
# (k8s.io/kubernetes v1.37.2, built by build-control-plane.sh), Debian's containerd and runc,
# Debian's CNI plugins on a bridge, kube-proxy (so Pods reach the kubernetes Service) and
# kube-controller-manager (Deployments, DaemonSets, ServiceAccounts, garbage collection) and
# kube-scheduler (the default scheduler, for the Pods gpusched does not schedule).
# Source it after cluster.sh:
#     . cluster.sh; . node.sh; e2e_node_prepare; e2e_up; e2e_node_up; ...
# e2e_down (the exit trap) stops the node and removes what it made: containers, mounts,
# network namespaces, cgroups, iptables rules, the bridge.
#
# How the runtime is set up, and why (see also docs/e2e-tests.md, "The real node"):
#   containerd  own root, state and socket under $E2E_DIR/node (no system service touched);
#               CRI plugin with the cgroupfs driver (SystemdCgroup=false: no systemd here),
#               sandbox image gpusched.local/pause:3.10 (built by scripts/image.py from
#               tests/e2e/images/gs-pause.c; nothing is pulled), CNI from /usr/lib/cni,
#               restrict_oom_score_adj (no CAP_SYS_RESOURCE here to lower a score)
#   CNI         bridge gse2e0 10.88.0.1/16 with host-local IPAM; the apiserver listens on the
#               bridge address too, which is the node's InternalIP and the kubernetes
#               Service's endpoint
#   kubelet     cgroupDriver cgroupfs; failCgroupV1=false (this machine mounts cgroup v1
#               controllers, which v1.37 refuses by default); failSwapOn=false; its root is
#               /var/lib/kubelet, as the device plugin API fixes the kubelet's socket at
#               /var/lib/kubelet/device-plugins/kubelet.sock (emptied at the end); pod logs
#               and volume plugins under $E2E_DIR; image GC and disk eviction off (the
#               local images cannot be pulled again); x509 client auth from the cluster CA,
#               its client identity system:node:NAME (Node authorizer, NodeRestriction)
#   kube-proxy  iptables mode; conntrack sysctls left alone; its rules removed at the end
E2E_NODE_IP=10.88.0.1
E2E_NODE_NAME=gpu-worker-0
E2E_NODE_BRIDGE=gse2e0
export E2E_NODE_IP E2E_NODE_NAME

# e2e_node_prepare: before e2e_up; skips (a failure under CI=true) where a node cannot run
e2e_node_prepare() {
    local t
    [ "$(id -u)" = 0 ] || skip "a real kubelet needs root"
    for t in containerd containerd-shim-runc-v2 ctr runc iptables ip; do
        command -v "$t" >/dev/null || skip "$t is not installed (scripts/install-deps.sh)"
    done
    [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] ||
        skip "Debian's containernetworking-plugins are not installed"
    # this machine's /var/lib/kubelet becomes the test node's: never on a machine that is a node
    if pgrep -x kubelet >/dev/null && ! pgrep -f 'kubelet --config /tmp/gpusched-e2e\.' >/dev/null; then
        skip "a kubelet of this machine's own runs here"
    fi
    # one real node at a time on this machine: a second test (another build folder's run)
    # waits for the first; a crashed run's leftovers are cleared first
    exec 8>/tmp/gpusched-e2e-node.lock
    flock 8
    e2e_node_clear
    export E2E_REAL_NODE=1
}

# e2e_node_images FILE...: import OCI archives into the node's containerd (namespace k8s.io)
e2e_node_images() {
    local f
    for f in "$@"; do
        ctr -a "$E2E_NODE/containerd.sock" -n k8s.io images import --all-platforms "$f" \
            >> "$E2E_NODE/ctr.log" 2>&1 || { echo "e2e: image import of $f failed"; return 1; }
    done
}

e2e_node_containerd() {
    local n="$E2E_NODE"
    mkdir -p "$n/cni" "$n/cni-ipam"
    cat > "$n/containerd.toml" <<T
version = 2
root = "$n/containerd/root"
state = "$n/containerd/state"
[grpc]
  address = "$n/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "gpusched.local/pause:3.10"
  # the kubelet asks -998 for sandboxes and its critical pods; a process here may not lower
  # its oom_score_adj (no CAP_SYS_RESOURCE), so containerd caps it at its own
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$n/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$n/cni"
T
    cat > "$n/cni/10-gpusched-e2e.conflist" <<C
{"cniVersion": "0.4.0", "name": "gpusched-e2e", "plugins": [
  {"type": "bridge", "bridge": "$E2E_NODE_BRIDGE", "isGateway": true, "ipMasq": false,
   "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$n/cni-ipam",
            "ranges": [[{"subnet": "10.88.0.0/16", "gateway": "$E2E_NODE_IP",
                         "rangeStart": "10.88.0.10"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}}]}
C
    containerd --config "$n/containerd.toml" > "$n/containerd.log" 2>&1 &
    echo $! > "$E2E_DIR/node-containerd.pid"
    local i
    for i in $(seq 1 60); do
        ctr -a "$n/containerd.sock" version >/dev/null 2>&1 && return 0
        sleep 0.25
    done
    echo "e2e: containerd did not start"; tail -20 "$n/containerd.log"
    return 1
}

# the kubelet, started again by e2e_node_kubelet_restart with the same flags
e2e_node_kubelet() {
    local n="$E2E_NODE"
    "$E2E_BIN/kubelet" --config "$n/kubelet.yaml" --kubeconfig "$n/kubelet.kubeconfig" \
        --root-dir /var/lib/kubelet --cert-dir "$n/kubelet-pki" \
        --hostname-override "$E2E_NODE_NAME" --node-ip "$E2E_NODE_IP" \
        --node-labels "$E2E_NODE_LABELS" -v 2 >> "$n/kubelet.log" 2>&1 &
    echo $! > "$E2E_DIR/node-kubelet.pid"
}

# e2e_node_up: controller-manager, containerd, kubelet and kube-proxy; returns once the Node
# is Ready. E2E_NODE_LABELS (comma-separated k=v) labels the Node as NFD and the GPU Operator
# would before any GPU label exists.
e2e_node_up() {
    E2E_NODE="$E2E_DIR/node"
    export E2E_NODE
    mkdir -p "$E2E_NODE"
    E2E_NODE_UP=1
    local n="$E2E_NODE" kp hz kh kph kpm
    ip link add "$E2E_NODE_BRIDGE" type bridge 2>/dev/null
    ip addr add "$E2E_NODE_IP/16" dev "$E2E_NODE_BRIDGE" 2>/dev/null
    ip link set "$E2E_NODE_BRIDGE" up || { echo "e2e: bridge $E2E_NODE_BRIDGE failed"; return 1; }
    "$E2E_BIN/kube-controller-manager" --kubeconfig "$E2E_DIR/admin.kubeconfig" \
        --leader-elect=false --secure-port 0 --use-service-account-credentials=false \
        --root-ca-file "$E2E_DIR/ca.crt" --service-account-private-key-file "$E2E_DIR/sa.key" \
        --controllers '*' --concurrent-gc-syncs 5 > "$n/controller-manager.log" 2>&1 &
    echo $! > "$E2E_DIR/node-kcm.pid"
    # the cluster's default scheduler: the chart's own Pods (and DaemonSets') use it
    "$E2E_BIN/kube-scheduler" --kubeconfig "$E2E_DIR/admin.kubeconfig" --leader-elect=false \
        --secure-port 0 > "$n/kube-scheduler.log" 2>&1 &
    echo $! > "$E2E_DIR/node-ksched.pid"
    e2e_node_containerd || return 1
    # the kubelet's client identity: a Node, as the Node authorizer knows it
    e2e_cert "node" "system:node:$E2E_NODE_NAME" system:nodes
    e2e_kubeconfig "$n/kubelet.kubeconfig" "$E2E_DIR/node.crt" "$E2E_DIR/node.key"
    kp=$(e2e_free_port); hz=$(e2e_free_port)
    cat > "$n/kubelet.yaml" <<K
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $E2E_NODE_IP
port: $kp
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $hz
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $E2E_DIR/ca.crt}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$n/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
podLogsDir: $n/pod-logs
volumePluginDir: $n/volume-plugins
staticPodPath: ""
resolvConf: ""
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
evictionPressureTransitionPeriod: 5s
nodeStatusUpdateFrequency: 2s
syncFrequency: 5s
serializeImagePulls: false
K
    E2E_NODE_LABELS="${E2E_NODE_LABELS:-kubernetes.io/os=linux}"
    e2e_node_kubelet
    kph=$(e2e_free_port); kpm=$(e2e_free_port)
    "$E2E_BIN/kube-proxy" --kubeconfig "$E2E_DIR/admin.kubeconfig" --proxy-mode iptables \
        --hostname-override "$E2E_NODE_NAME" --cluster-cidr 10.88.0.0/16 \
        --healthz-bind-address "127.0.0.1:$kph" --metrics-bind-address "127.0.0.1:$kpm" \
        --conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 \
        --conntrack-tcp-timeout-close-wait 0 > "$n/kube-proxy.log" 2>&1 &
    echo $! > "$E2E_DIR/node-proxy.pid"
    e2e_node_wait_ready 120 || return 1
}

# e2e_node_wait_ready SECONDS: the Node reports Ready
e2e_node_wait_ready() {
    local i
    for i in $(seq 1 $(($1 * 2))); do
        [ "$("$E2E_BIN/kubectl" get node "$E2E_NODE_NAME" \
            -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] &&
            return 0
        sleep 0.5
    done
    echo "e2e: node $E2E_NODE_NAME did not become Ready; kubelet log:"
    grep -E "^E|error|fail" "$E2E_NODE/kubelet.log" | tail -25
    return 1
}

# e2e_node_kubelet_stop: SIGTERM, as a kubelet restart by systemd does; containers keep running
e2e_node_kubelet_stop() {
    local p
    p="$(cat "$E2E_DIR/node-kubelet.pid" 2>/dev/null)" || return 0
    kill "$p" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null
    rm -f "$E2E_DIR/node-kubelet.pid"
}

# e2e_node_clear: everything a node leaves on this machine, from this run or a crashed one
e2e_node_clear() {
    local p d ns
    # the node's processes: kubelet, kube-proxy, controller-manager and containerd by pid file;
    # the shims and every container process by their cgroups and command lines
    for p in "${E2E_DIR:-/nonexistent}"/node-*.pid; do
        [ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null && rm -f "$p"
    done
    pkill -9 -f 'containerd-shim-runc-v2 .*-address /tmp/gpusched-e2e\.' 2>/dev/null
    for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/unified/kubepods; do
        [ -d "$d" ] || continue
        find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
    done
    pkill -9 -f 'containerd --config /tmp/gpusched-e2e\.' 2>/dev/null
    sleep 0.3
    # kubelet volumes, container root filesystems, network namespaces
    grep -oE ' (/tmp/gpusched-e2e\.|/var/lib/kubelet|/run/containerd/|/var/run/netns/)[^ ]*' \
        /proc/self/mounts | sort -r | while read -r d; do
        umount -l "$d" 2>/dev/null
    done
    rm -rf /var/lib/kubelet
    for ns in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do
        ip netns delete "$ns" 2>/dev/null
    done
    for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/unified/kubepods; do
        [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    [ -x "${E2E_BIN:-}/kube-proxy" ] && "$E2E_BIN/kube-proxy" --cleanup >/dev/null 2>&1
    ip link del "$E2E_NODE_BRIDGE" 2>/dev/null
    return 0
}

# called by e2e_down
e2e_node_down() {
    [ -n "${E2E_NODE_UP:-}" ] || return 0
    e2e_node_kubelet_stop
    e2e_node_clear
}
