#!/usr/bin/env bash
# Starts a real control plane on loopback for gpusched's end-to-end tests: etcd and
# kube-apiserver (TLS, RBAC, a service-account issuer) built from pinned Go modules by
# build-control-plane.sh. Source it:  . cluster.sh; e2e_up; ...; (e2e_down runs on exit).
# Exports KUBECONFIG (admin, system:masters), E2E_DIR, E2E_BIN, E2E_SERVER and writes
# $E2E_DIR/scheduler.kubeconfig for the gpusched-scheduler user (RBAC from deploy/).
# E2E_APISERVER_ARGS (words) go to kube-apiserver too: feature gates, --runtime-config.
E2E_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# a loopback port outside the kernel's ephemeral range, reserved against parallel tests
e2e_free_port() {
    "$E2E_SRC/../free-port.py"
}

# skip REASON: this test cannot run here. Exit 77 is ctest's skip; under CI=true nothing may
# skip, and e2e_down (the exit trap once e2e_up ran) turns a 77 into a failure.
skip() {
    echo "skipped: $*"
    [ "${CI:-}" = true ] && { echo "FAIL: a test may not skip under CI=true"; exit 1; }
    exit 77
}

e2e_down() {
    local rc=$? pids
    # a real node (node.sh) first: its containers, mounts and network go before the API server
    if declare -F e2e_node_down >/dev/null; then e2e_node_down; fi
    pids="$(cat "$E2E_DIR"/*.pid 2>/dev/null)"
    [ -n "$pids" ] && kill $pids 2>/dev/null
    sleep 0.3
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    if [ -n "${E2E_KEEP:-}" ]; then echo "e2e: kept $E2E_DIR"; else rm -rf "$E2E_DIR"; fi
    if [ "$rc" -eq 77 ] && [ "${CI:-}" = true ]; then
        echo "FAIL: a test may not skip under CI=true"
        exit 1
    fi
}

# e2e_front [METHOD ]PATH-PREFIX HOLD-FILE LOG: a plain-HTTP front (holdproxy.py) for the API
# server as gpusched's own identity (deploy/'s RBAC), holding what PATH-PREFIX names while
# HOLD-FILE exists and logging each request to LOG; writes $E2E_DIR/front.kubeconfig for it and
# returns once it answers (1 if it did not in 30 s)
e2e_front() {
    local port i
    port=$(e2e_free_port)
    python3 "$E2E_SRC/holdproxy.py" "$port" "$E2E_SERVER" "$E2E_DIR/ca.crt" \
        "$E2E_DIR/scheduler.crt" "$E2E_DIR/scheduler.key" "$1" "$2" "$3" \
        > "$E2E_DIR/proxy.out" 2>&1 &
    echo $! > "$E2E_DIR/proxy.pid"
    cat > "$E2E_DIR/front.kubeconfig" <<K
apiVersion: v1
kind: Config
clusters:
- {name: front, cluster: {server: "http://127.0.0.1:$port"}}
users:
- {name: u, user: {}}
contexts:
- {name: front, context: {cluster: front, user: u}}
current-context: front
K
    for i in $(seq 1 150); do
        curl -s "http://127.0.0.1:$port/version" > /dev/null && return 0
        sleep 0.2
    done
    cat "$E2E_DIR/proxy.out"
    return 1
}

# e2e_ready_node NAME: a Node as a kubelet registers one (hostname and os labels) with 64 CPUs,
# 512 GiB and 110 pods allocatable and a Ready condition; no kubelet plays it
e2e_ready_node() {
    "$E2E_BIN/kubectl" create -f - > /dev/null <<Y || return 1
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$1",
 "labels": {"kubernetes.io/hostname": "$1", "kubernetes.io/os": "linux"}}}
Y
    "$E2E_BIN/kubectl" patch node "$1" --subresource=status --type=merge -p '{"status": {
      "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
      "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
      "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                      "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                      "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}' > /dev/null
}

e2e_kubeconfig() { # FILE USER-CERT USER-KEY, or FILE --token TOKEN
    local user
    if [ "$2" = --token ]; then
        user="    token: $3"
    else
        user="    client-certificate-data: $(base64 -w0 "$2")
    client-key-data: $(base64 -w0 "$3")"
    fi
    cat > "$1" <<K
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: $E2E_SERVER
    certificate-authority-data: $(base64 -w0 "$E2E_DIR/ca.crt")
users:
- name: u
  user:
$user
contexts:
- name: e2e
  context: {cluster: e2e, user: u}
current-context: e2e
K
}

e2e_cert() { # NAME CN ORG
    openssl req -newkey rsa:2048 -nodes -keyout "$E2E_DIR/$1.key" -out "$E2E_DIR/$1.csr" \
        -subj "/CN=$2${3:+/O=$3}" >/dev/null 2>&1
    openssl x509 -req -in "$E2E_DIR/$1.csr" -CA "$E2E_DIR/ca.crt" -CAkey "$E2E_DIR/ca.key" \
        -CAcreateserial -days 1 -out "$E2E_DIR/$1.crt" ${4:+-extfile "$4"} >/dev/null 2>&1
}

# kwok, the fake kubelet, for the nodes the driver annotates: bound pods turn Running and
# deletions finish, as on a real node. Optional: without it pods stay bound but Pending.
e2e_kwok() {
    E2E_KWOK=0
    [ -x "$E2E_BIN/kwok" ] && [ -f "$E2E_BIN/kwok-stages.yaml" ] && [ "${GS_E2E_KWOK:-1}" != 0 ] || return 0
    "$E2E_BIN/kwok" --kubeconfig "$E2E_DIR/admin.kubeconfig" \
        --manage-all-nodes=false \
        --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
        --config "$E2E_BIN/kwok-stages.yaml" --cidr 10.64.0.0/12 > "$E2E_DIR/kwok.log" 2>&1 &
    echo $! > "$E2E_DIR/kwok.pid"
    E2E_KWOK=1
    export E2E_KWOK
}

# etcd and kube-apiserver on fresh ports; returns once both are started (not yet ready)
e2e_start_apiserver() {
    local ep pp ap
    ep=$(e2e_free_port); pp=$(e2e_free_port); ap=$(e2e_free_port)
    "$E2E_BIN/etcd" --data-dir "$E2E_DIR/etcd" --listen-client-urls "http://127.0.0.1:$ep" \
        --advertise-client-urls "http://127.0.0.1:$ep" --listen-peer-urls "http://127.0.0.1:$pp" \
        --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
        --initial-cluster "default=http://127.0.0.1:$pp" --unsafe-no-fsync \
        > "$E2E_DIR/etcd.log" 2>&1 &
    echo $! > "$E2E_DIR/etcd.pid"
    # without a real node (the default) nothing runs Pods: no service-account tokens (no
    # controller-manager makes the default ServiceAccounts), no Endpoints for the kubernetes
    # Service; with E2E_REAL_NODE=1 (node.sh) Pods run for real on the node's bridge, so the
    # apiserver listens on it too, reconciles its Endpoints for kube-proxy, authorizes the
    # kubelet as a Node, reaches it for logs, and proxies aggregated APIs (custom metrics) to
    # their pods
    local mode=(--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --authorization-mode RBAC
        --disable-admission-plugins ServiceAccount,TaintNodesByCondition
        --endpoint-reconciler-type none)
    if [ "${E2E_REAL_NODE:-0}" = 1 ]; then
        mode=(--bind-address 0.0.0.0 --advertise-address "$E2E_NODE_IP"
            --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction
            --endpoint-reconciler-type lease
            --kubelet-client-certificate "$E2E_DIR/admin.crt"
            --kubelet-client-key "$E2E_DIR/admin.key"
            --kubelet-preferred-address-types InternalIP
            --requestheader-client-ca-file "$E2E_DIR/ca.crt"
            --requestheader-allowed-names front-proxy-client
            --requestheader-username-headers X-Remote-User
            --requestheader-group-headers X-Remote-Group
            --requestheader-extra-headers-prefix X-Remote-Extra-
            --proxy-client-cert-file "$E2E_DIR/front-proxy-client.crt"
            --proxy-client-key-file "$E2E_DIR/front-proxy-client.key"
            --enable-aggregator-routing=true)
    fi
    "$E2E_BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ep" "${mode[@]}" \
        --secure-port "$ap" --cert-dir "$E2E_DIR" \
        --tls-cert-file "$E2E_DIR/apiserver.crt" --tls-private-key-file "$E2E_DIR/apiserver.key" \
        --client-ca-file "$E2E_DIR/ca.crt" \
        --service-account-issuer "https://127.0.0.1:$ap" \
        --service-account-key-file "$E2E_DIR/sa.pub" \
        --service-account-signing-key-file "$E2E_DIR/sa.key" \
        --service-cluster-ip-range 10.0.0.0/24 --allow-privileged=true \
        --max-requests-inflight 1000 --max-mutating-requests-inflight 500 \
        ${E2E_APISERVER_ARGS:-} > "$E2E_DIR/apiserver.log" 2>&1 &
    echo $! > "$E2E_DIR/apiserver.pid"
    export E2E_SERVER="https://127.0.0.1:$ap"
}

e2e_up() {
    E2E_BIN="$("$E2E_SRC/build-control-plane.sh")" || { echo "e2e: control plane build failed"; return 1; }
    export E2E_BIN
    E2E_DIR="$(mktemp -d /tmp/gpusched-e2e.XXXXXX)"
    export E2E_DIR
    trap e2e_down EXIT
    # certificates: a CA, the serving cert for 127.0.0.1, users, the service-account key
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$E2E_DIR/ca.key" -out "$E2E_DIR/ca.crt" \
        -subj "/CN=gpusched-e2e-ca" -days 1 >/dev/null 2>&1
    # 10.0.0.1: the kubernetes Service, as in-cluster clients reach it; E2E_NODE_IP: the real
    # node's bridge (node.sh)
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,IP:%s\n' \
        "${E2E_NODE_IP:-127.0.0.1}" > "$E2E_DIR/san.ext"
    e2e_cert apiserver kube-apiserver "" "$E2E_DIR/san.ext"
    e2e_cert admin e2e-admin system:masters
    e2e_cert scheduler gpusched-scheduler ""
    [ "${E2E_REAL_NODE:-0}" = 1 ] && e2e_cert front-proxy-client front-proxy-client ""
    openssl genrsa -out "$E2E_DIR/sa.key" 2048 >/dev/null 2>&1
    openssl rsa -in "$E2E_DIR/sa.key" -pubout -out "$E2E_DIR/sa.pub" >/dev/null 2>&1
    e2e_start_apiserver
    e2e_kubeconfig "$E2E_DIR/admin.kubeconfig" "$E2E_DIR/admin.crt" "$E2E_DIR/admin.key"
    e2e_kubeconfig "$E2E_DIR/scheduler.kubeconfig" "$E2E_DIR/scheduler.crt" "$E2E_DIR/scheduler.key"
    export KUBECONFIG="$E2E_DIR/admin.kubeconfig"
    local i tries=0
    for i in $(seq 1 120); do
        if ! kill -0 "$(cat "$E2E_DIR/apiserver.pid")" 2>/dev/null ||
            ! kill -0 "$(cat "$E2E_DIR/etcd.pid")" 2>/dev/null; then
            # a port taken between our check and the bind: start again on other ports
            if [ $tries -lt 3 ] && grep -qs "address already in use" "$E2E_DIR/apiserver.log" "$E2E_DIR/etcd.log"; then
                tries=$((tries + 1))
                echo "e2e: a control-plane port was taken; starting again on other ports" >&2
                kill "$(cat "$E2E_DIR/apiserver.pid")" "$(cat "$E2E_DIR/etcd.pid")" 2>/dev/null
                wait "$(cat "$E2E_DIR/apiserver.pid")" "$(cat "$E2E_DIR/etcd.pid")" 2>/dev/null
                rm -rf "$E2E_DIR/etcd"
                e2e_start_apiserver
                e2e_kubeconfig "$E2E_DIR/admin.kubeconfig" "$E2E_DIR/admin.crt" "$E2E_DIR/admin.key"
                e2e_kubeconfig "$E2E_DIR/scheduler.kubeconfig" "$E2E_DIR/scheduler.crt" "$E2E_DIR/scheduler.key"
                continue
            fi
            break
        fi
        if curl -sf --cacert "$E2E_DIR/ca.crt" --cert "$E2E_DIR/admin.crt" \
            --key "$E2E_DIR/admin.key" "$E2E_SERVER/readyz" >/dev/null 2>&1; then
            # RBAC for the scheduler user, as deploy/ ships it
            "$E2E_BIN/kubectl" apply -f "$E2E_SRC/../../deploy/rbac.yaml" >/dev/null &&
                "$E2E_BIN/kubectl" create clusterrolebinding gpusched-e2e-user \
                    --clusterrole gpusched-scheduler --user gpusched-scheduler >/dev/null &&
                "$E2E_BIN/kubectl" create rolebinding gpusched-e2e-lease -n kube-system \
                    --role gpusched-scheduler-lease --user gpusched-scheduler >/dev/null &&
                e2e_kwok && return 0
            echo "e2e: RBAC setup failed"
            return 1
        fi
        sleep 0.5
    done
    echo "e2e: kube-apiserver did not become ready; last log lines:"
    tail -20 "$E2E_DIR/apiserver.log"
    return 1
}
