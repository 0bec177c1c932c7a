#!/usr/bin/env bash
# The article's elastic scaling, end to end: its gpu-hpa.yaml as it is (autoscaling/v2, per-pod
# gpu_utilization target 70 and request_latency_ms target 200, its scale-up and scale-down
# behavior) on its time-sliced inference-pool Deployment (given an image: gs-probe --serve,
# which plays an inference server's request_latency_ms), on the real node of node.sh with
# gpusched installed by its chart (fake GPUs). The metrics path is the one users run:
# Prometheus (built from github.com/prometheus/prometheus) scrapes the agent with the chart's
# scrape config and the inference pods; prometheus-adapter (sigs.k8s.io/prometheus-adapter, as
# a Pod behind the APIService v1beta1.custom.metrics.k8s.io) serves them with the chart's
# rules; kube-controller-manager's HPA controller scales the Deployment.
#  - each pod's gpu_utilization is its own: the fake backend is told each pod's processes (the
#    containers' real PIDs) use a different share of their time-sliced GPU, the agent
#    attributes them by PID -> container -> pod, and the custom metrics API serves every pod
#    its own value (a PID matched to the wrong pod fails there, though the mean would agree);
#  - the HPA reads the pods' mean as the controller computes it: at 60 and 90 % (mean 75,
#    within the 10 % tolerance of 70) and 150 and 170 ms (mean 160) it keeps 2 replicas;
#  - utilization and latency raised: the HPA scales 2 -> 3, no further within the scale-up
#    policy's period though the metrics ask more (Percent 50 per 120 s: ScalingLimited,
#    ScaleUpLimit);
#  - lowered: the scale-down stabilization window holds it first (ScaleDownStabilized;
#    shortened here to 30 s, the article's 300 s would take five minutes), then it scales back
#    to minReplicas 2.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/node.sh"
. "$(dirname "$0")/helm.sh"
ok=0
fail() { echo "FAIL: $*"; ok=1; }
gs_setup
PROM="$E2E_BIN/prometheus-v0.316.0"
ADAPTER="$E2E_BIN/prometheus-adapter-v0.12.0"
[ -x "$PROM" ] && [ -x "$ADAPTER" ] || skip "prometheus or prometheus-adapter did not build"
python3 "$E2E_SRC/../../scripts/image.py" --binary "$ADAPTER" --path /adapter \
    --ref gpusched.local/prometheus-adapter:v0.12.0 --out "$E2E_DIR/images/adapter.tar" >/dev/null &&
    e2e_node_images "$E2E_DIR/images/adapter.tar" || exit 1
gs_helm_install --set monitor.scrapeInterval=5s || exit 1
gs_inspect || exit 1

# Prometheus on the node, with the chart's scrape config (its kubernetes_sd reaches the API
# server through a kubeconfig, as it runs outside the cluster) and the inference pods' job
pport=$(e2e_free_port)
k get configmap -n "$GS_NS" "$GS_RELEASE-gpusched-scrape-config" \
    -o jsonpath='{.data.gpusched-scrape\.yaml}' > "$E2E_DIR/chart-scrape.yaml"
python3 - "$E2E_DIR" "$KUBECONFIG" <<'P' || exit 1
import sys, yaml
d, kc = sys.argv[1], sys.argv[2]
c = yaml.safe_load(open(d + "/chart-scrape.yaml"))
for j in c["scrape_configs"]:
    for sd in j["kubernetes_sd_configs"]:
        sd["kubeconfig_file"] = kc
c["scrape_configs"].append({
    "job_name": "inference", "scrape_interval": "5s",
    "kubernetes_sd_configs": [{"role": "pod", "kubeconfig_file": kc,
                               "namespaces": {"names": ["ai-inference"]}}],
    "relabel_configs": [
        {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": "http", "action": "keep"},
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"}]})
yaml.safe_dump({"global": {"scrape_interval": "5s", "evaluation_interval": "5s"},
                "scrape_configs": c["scrape_configs"]}, open(d + "/prometheus.yml", "w"))
P
"$PROM" --config.file "$E2E_DIR/prometheus.yml" --storage.tsdb.path "$E2E_DIR/prom" \
    --web.listen-address "0.0.0.0:$pport" > "$E2E_DIR/prometheus.log" 2>&1 &
echo $! > "$E2E_DIR/prometheus.pid"

# prometheus-adapter as a Pod behind the custom metrics APIService, with the chart's rules
k create namespace monitoring >/dev/null
k get configmap -n "$GS_NS" "$GS_RELEASE-gpusched-adapter-rules" -o json |
    python3 -c 'import json,sys; c=json.load(sys.stdin); print(json.dumps({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"adapter-rules","namespace":"monitoring"},"data":c["data"]}))' |
    k apply -f - >/dev/null
k apply -f - >/dev/null <<Y
apiVersion: v1
kind: ServiceAccount
metadata: {name: prometheus-adapter, namespace: monitoring}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: prometheus-adapter:system:auth-delegator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects: [{kind: ServiceAccount, name: prometheus-adapter, namespace: monitoring}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: prometheus-adapter-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{kind: ServiceAccount, name: prometheus-adapter, namespace: monitoring}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: prometheus-adapter-resource-reader}
rules:
  - {apiGroups: [""], resources: [namespaces, pods, services, configmaps], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: prometheus-adapter-resource-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: prometheus-adapter-resource-reader}
subjects: [{kind: ServiceAccount, name: prometheus-adapter, namespace: monitoring}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: prometheus-adapter, namespace: monitoring}
spec:
  replicas: 1
  selector: {matchLabels: {app: prometheus-adapter}}
  template:
    metadata: {labels: {app: prometheus-adapter}}
    spec:
      serviceAccountName: prometheus-adapter
      containers:
        - name: adapter
          image: gpusched.local/prometheus-adapter:v0.12.0
          imagePullPolicy: Never
          args: [--secure-port=6443, --cert-dir=/var/run/serving-cert,
                 --prometheus-url=http://$E2E_NODE_IP:$pport/, --metrics-relist-interval=5s,
                 --config=/etc/adapter/config.yaml, --v=2]
          ports: [{name: https, containerPort: 6443}]
          volumeMounts:
            - {name: config, mountPath: /etc/adapter, readOnly: true}
            - {name: certs, mountPath: /var/run/serving-cert}
      volumes:
        - {name: config, configMap: {name: adapter-rules}}
        - {name: certs, emptyDir: {}}
---
apiVersion: v1
kind: Service
metadata: {name: prometheus-adapter, namespace: monitoring}
spec:
  selector: {app: prometheus-adapter}
  ports: [{name: https, port: 443, targetPort: 6443}]
Y
for v in v1beta1 v1beta2; do
    k apply -f - >/dev/null <<Y
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: $v.custom.metrics.k8s.io}
spec:
  service: {name: prometheus-adapter, namespace: monitoring}
  group: custom.metrics.k8s.io
  version: $v
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
Y
done

# the article's inference-pool (time-sliced nvidia.com/gpu: 1), given gs-probe as its image and
# starting at the HPA's minReplicas, and its gpu-hpa.yaml as it is (but the scale-down window)
k create namespace ai-inference >/dev/null
k apply -f - >/dev/null <<'Y'
apiVersion: apps/v1
kind: Deployment
metadata: {name: inference-pool, namespace: ai-inference}
spec:
  replicas: 2
  selector: {matchLabels: {app: inference}}
  template:
    metadata: {labels: {app: inference}}
    spec:
      schedulerName: gpusched
      terminationGracePeriodSeconds: 2
      containers:
        - name: inference
          image: gpusched.local/gpu-probe:1
          imagePullPolicy: Never
          args: [--serve, "8000"]
          ports: [{name: http, containerPort: 8000}]
          resources:
            limits:
              nvidia.com/gpu: 1
          env:
            - {name: MODEL_NAME, value: "Qwen/Qwen2.5-7B-Instruct"}
Y
sed -n '/^apiVersion: autoscaling/,$p' "$E2E_SRC/../../../shared/seed/examples/gpu-hpa.yaml" > "$E2E_DIR/hpa.yaml"
[ -s "$E2E_DIR/hpa.yaml" ] || skip "the article's gpu-hpa.yaml is not in ../shared/seed/examples"
python3 - "$E2E_DIR/hpa.yaml" <<'P'
import sys, yaml
h = yaml.safe_load(open(sys.argv[1]))
assert h["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 300
h["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] = 30
yaml.safe_dump(h, open(sys.argv[1], "w"))
P
gs_wait 120 "inference-pool's 2 pods running" gs_running ai-inference = 2 || { gs_debug; exit 1; }

# pod_pid POD: the host PID of the pod's container (containerd's task)
pod_pid() {
    local cid
    cid="$(k get pod -n ai-inference "$1" -o jsonpath='{.status.containerStatuses[0].containerID}')"
    ctr -a "$E2E_NODE/containerd.sock" -n k8s.io tasks ls | awk -v c="${cid#containerd://}" '$1 == c {print $2}'
}
# load "UTIL..." "LATENCY...": the inference pods, by name, get the next UTIL % and LATENCY
# ms of the lists (the last one for the pods past its end): the fake backend is told each
# container's PID uses its UTIL % of its GPU, the pod's server reports its LATENCY. What each
# pod should read is kept in $E2E_DIR/want-gpu_utilization and want-request_latency_ms.
load() {
    local p gpus="" i=0 u l
    local -a us=($1) ls=($2)
    : > "$E2E_DIR/want-gpu_utilization"
    : > "$E2E_DIR/want-request_latency_ms"
    for p in $(k get pods -n ai-inference -l app=inference --field-selector=status.phase=Running -o name | LC_ALL=C sort); do
        p="${p#pod/}"
        u=${us[$((i < ${#us[@]} ? i : ${#us[@]} - 1))]}
        l=${ls[$((i < ${#ls[@]} ? i : ${#ls[@]} - 1))]}
        i=$((i + 1))
        # the GPU the kubelet gave it (its NVIDIA_VISIBLE_DEVICES), not the annotation, which
        # the agent may not have corrected yet
        gpus+="$p $(pod_pid "$p") $(k logs -n ai-inference "$p" | sed -n 's/^NVIDIA_VISIBLE_DEVICES=//p') $u"$'\n'
        curl -sf "http://$(k get pod -n ai-inference "$p" -o jsonpath='{.status.podIP}'):8000/set?request_latency_ms=$l" >/dev/null ||
            echo "could not set $p's latency"
        echo "$p $u" >> "$E2E_DIR/want-gpu_utilization"
        echo "$p $l" >> "$E2E_DIR/want-request_latency_ms"
    done
    python3 - "$E2E_DIR/fake.json" "$gpus" "$E2E_DIR/inspect.txt" > "$E2E_DIR/fake-new.json" <<'P'
import json, re, sys
spec = json.load(open(sys.argv[1]))
index = {m.group(2): int(m.group(1)) for m in re.finditer(r"^GPU (\d+): .*?, (GPU-[^,\s]+),", open(sys.argv[3]).read(), re.M)}
for g in spec["gpus"]:
    g.pop("processes", None)
for line in sys.argv[2].splitlines():
    pod, pid, uuid, util = line.split()
    gpu = index[uuid]
    spec["gpus"][gpu].setdefault("processes", []).append(
        {"pid": int(pid), "util": int(util), "mem_used_mib": 1024})
print(json.dumps(spec))
P
    local cm
    cm="$(k get configmap -n "$GS_NS" -o name | grep 'fake-gpus$')"
    k create configmap -n "$GS_NS" "${cm#configmap/}" --from-file=gpus.json="$E2E_DIR/fake-new.json" \
        --dry-run=client -o yaml | k replace -f - >/dev/null
}
replicas() { k get deployment -n ai-inference inference-pool -o jsonpath='{.status.replicas}'; }
replicas_are() { [ "$(replicas)" "$1" "$2" ]; } # OP N
hpa_reason() { # CONDITION: the reason of the HPA's status condition
    k get hpa -n ai-inference inference-hpa -o jsonpath="{.status.conditions[?(@.type==\"$1\")].reason}"
}
metric() { # NAME: the custom metrics API's value for the pods (their mean), or nothing
    k get --raw "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ai-inference/pods/*/$1" 2>/dev/null |
        python3 -c 'import json,sys
from decimal import Decimal
it = json.load(sys.stdin)["items"]
q = lambda v: Decimal(v[:-1]) / 1000 if v.endswith("m") else Decimal(v)
print(round(sum(q(i["value"]) for i in it) / len(it)) if it else "")' 2>/dev/null
}
metric_is() { [ "$(metric "$1")" = "$2" ]; } # NAME VALUE
per_pod() { # NAME: each pod's own value in the custom metrics API, "POD VALUE" by pod name
    k get --raw "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ai-inference/pods/*/$1" 2>/dev/null |
        python3 -c 'import json,sys
from decimal import Decimal
q = lambda v: Decimal(v[:-1]) / 1000 if v.endswith("m") else Decimal(v)
for i in sorted(json.load(sys.stdin)["items"], key=lambda i: i["describedObject"]["name"].encode()):
    print(i["describedObject"]["name"], round(q(i["value"])))' 2>/dev/null
}
per_pod_ok() { [ "$(per_pod "$1")" = "$(cat "$E2E_DIR/want-$1")" ]; } # NAME: as load gave
# wait_per_pod NAME: every pod reads its own value (a PID matched to the wrong pod, or one
# pod's value served for another, fails here though the mean may agree)
wait_per_pod() {
    gs_wait 120 "custom.metrics.k8s.io serves each pod its own $1 ($(tr '\n' ' ' < "$E2E_DIR/want-$1"| sed 's/ $//'))" \
        per_pod_ok "$1" || { echo "served:"; per_pod "$1"; ok=1; return; }
    echo "ok   each pod reads its own $1: $(per_pod "$1" | paste -sd, | sed 's/,/, /g')"
}
# the HPA's own reading of a metric: status.currentMetrics' averageValue
hpa_current() {
    k get hpa -n ai-inference inference-hpa -o json | python3 -c 'import json,sys
from decimal import Decimal
q = lambda v: Decimal(v[:-1]) / 1000 if v.endswith("m") else Decimal(v)
for m in json.load(sys.stdin).get("status", {}).get("currentMetrics") or []:
    if m.get("type") == "Pods" and m["pods"]["metric"]["name"] == sys.argv[1]:
        v = q(m["pods"]["current"]["averageValue"])
        print(int(v) if v == int(v) else v)' "$1" 2>/dev/null
}
hpa_reads() { [ "$(hpa_current gpu_utilization)" = "$1" ] && [ "$(hpa_current request_latency_ms)" = "$2" ]; }

# each pod its own utilization (60 and 90) and latency (150 and 170): the HPA's mean is 75
# (ratio 75/70 = 1.07, within its 10 % tolerance) and 160 (0.8: ceil(0.8 x 2) = 2), so it
# keeps 2 replicas; the highest pod's 90 (1.29: ceil(2.57) = 3) or a sum would scale up
load "60 90" "150 170"
wait_per_pod gpu_utilization
wait_per_pod request_latency_ms
echo "custom metrics: gpu_utilization $(metric gpu_utilization), request_latency_ms $(metric request_latency_ms)"
k apply -f "$E2E_DIR/hpa.yaml" >/dev/null
gs_wait 120 "the HPA reads the pods' means (gpu_utilization 75, request_latency_ms 160)" hpa_reads 75 160 ||
    { k get hpa -n ai-inference inference-hpa -o yaml | tail -30; ok=1; }
desired="$(k get hpa -n ai-inference inference-hpa -o jsonpath='{.status.desiredReplicas}')"
[ "$desired" = 2 ] && [ "$(replicas)" = 2 ] &&
    echo "ok   the HPA keeps 2 replicas on the means (75/70 within the tolerance, 160/200 -> 2)" ||
    fail "the HPA wants $desired replicas ($(replicas) now) at the means 75 and 160, want 2"

# raised, each pod differently (80 and 100: mean 90; 500 and 700 ms: mean 600)
load "80 100" "500 700"
wait_per_pod gpu_utilization
wait_per_pod request_latency_ms
gs_wait 60 "the HPA reads the new means (90, 600)" hpa_reads 90 600 || ok=1
t0=$SECONDS
gs_wait 180 "the HPA scales inference-pool up" replicas_are -gt 2 ||
    { k describe hpa -n ai-inference inference-hpa | tail -15; ok=1; }
up=$((SECONDS - t0))
echo "scaled up to $(replicas) after $up s (scale-up stabilization 60 s, HPA sync 15 s)"
[ "$(replicas)" = 3 ] || fail "the first scale-up went to $(replicas), want 3 (Percent 50 of 2)"
# the metrics ask for more (600/200 x 3 = 9), the policy allows 50 % per 120 s: it stays at 3,
# and the HPA says why (ScalingLimited: ScaleUpLimit)
limited=""
for _ in $(seq 1 30); do
    [ "$(replicas)" -le 3 ] || break
    [ "$(hpa_reason ScalingLimited)" = ScaleUpLimit ] && limited=yes
    sleep 1
done
[ "$(replicas)" = 3 ] && echo "ok   still 3 replicas 30 s later though the metrics ask more (scale-up policy)" ||
    fail "scaled to $(replicas) within the scale-up policy's 120 s"
[ -n "$limited" ] && echo "ok   the HPA reports ScalingLimited/ScaleUpLimit" ||
    fail "the HPA never reported ScalingLimited/ScaleUpLimit"
# lowered: back to minReplicas only after the (shortened) scale-down window
gs_wait 120 "the third pod running" gs_running ai-inference = 3 || ok=1
t1=$SECONDS
load "5 10 15" "40 50 60"
# held by the stabilization window first (AbleToScale: ScaleDownStabilized), then scaled down;
# meanwhile (the window is short: no waiting before it) each of the 3 pods reads its own value
stabilized="" own=""
for _ in $(seq 1 180); do
    [ "$(replicas)" -lt 3 ] && break
    [ "$(hpa_reason AbleToScale)" = ScaleDownStabilized ] && stabilized=yes
    [ -z "$own" ] && per_pod_ok gpu_utilization && own="$(per_pod gpu_utilization | paste -sd, | sed 's/,/, /g')"
    sleep 1
done
down=$((SECONDS - t1))
echo "scaled down to $(replicas) $down s after the load fell (scale-down window 30 s here)"
[ -n "$own" ] && echo "ok   each pod reads its own gpu_utilization: $own" ||
    fail "the 3 pods did not read their own gpu_utilization ($(tr '\n' ' ' < "$E2E_DIR/want-gpu_utilization")) before the scale-down: $(per_pod gpu_utilization | paste -sd,)"
[ -n "$stabilized" ] && echo "ok   the stabilization window held the scale-down first (ScaleDownStabilized)" ||
    fail "the HPA never reported AbleToScale/ScaleDownStabilized before scaling down"
[ "$(replicas)" = 2 ] || fail "scaled down to $(replicas), want 2 (minReplicas)"
echo "custom metrics after: gpu_utilization $(metric gpu_utilization), request_latency_ms $(metric request_latency_ms)"
[ $ok -eq 0 ] && echo "1 passed, 0 failed" || { gs_debug; echo "0 passed, 1 failed"; }
exit $ok
