#!/usr/bin/env bash
# bench-e2e, DRA: scheduling throughput of pods with ResourceClaims on the real control plane,
# gpusched against the stock kube-scheduler (its DynamicResources plugin) in the same run, with
# the same client QPS and burst, signed in with the same ServiceAccount token. NODES fake
# nodes (kwok) each publish one ResourceSlice shaped as NVIDIA's DRA driver publishes it
# (driver gpu.nvidia.com, pool = node, devices gpu-0..7:
# whole H100s with NVIDIA's attributes and their memory capacity), with NVIDIA's DeviceClass
# gpu.nvidia.com. Each run gets a fresh set: PODS ResourceClaims (one GPU each, a CEL selector
# on productName), made beforehand as the resourceclaim controller makes them from a template,
# and a pod naming each; then the scheduler starts and the clock runs until every pod is bound
# (a list of the unbound pods, then a watch: polling lists of all pods weighed on the API server
# and rounded each run up to the next half second);
# then the pods and claims go. ROUNDS rounds (default 2) alternate the order (gpusched first,
# then kube-scheduler first), so that the machine's load drifting weighs on both alike. One
# JSON line per run (with the CPU seconds the scheduler and the API server used in it, and the
# claims the API server re-read from etcd to retry a write that met a stale cache, and the CPU
# seconds the hypervisor took from the machine's cores for other guests), then
# one per scheduler over its runs (pods over seconds) and the ratio.
set -u
GS="$1"; DRIVER="$2"; NODES="${3:-500}"; PODS="${4:-1000}"; QPS="${QPS:-1000}"; BURST="${BURST:-2000}"
ROUNDS="${ROUNDS:-2}"
# no fake kubelet: the bound pods stay Pending, as in kube-scheduler's own scheduler_perf. With
# kwok, each bound pod's status writes fell inside the faster scheduler's window, on the same
# two cores, and weighed on it alone.
export GS_E2E_KWOK=0
. "$(dirname "$0")/../tests/e2e/cluster.sh"
. "$(dirname "$0")/alternate.sh"
e2e_up >&2 || exit 1
echo "$NODES dra H100-80GB 0 whole" | "$DRIVER" nodes || exit 1
K="$E2E_BIN/kubectl"
now() { date +%s.%N; }
# the DeviceClass and each node's slice, as NVIDIA's driver publishes them
python3 - "$NODES" > "$E2E_DIR/slices.json" <<'P'
import json, sys
D = "gpu.nvidia.com"
items = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": D},
          "spec": {"selectors": [{"cel": {"expression":
              "device.driver == '%s' && device.attributes['%s'].type == 'gpu'" % (D, D)}}]}}]
for n in range(int(sys.argv[1])):
    node = "dra-%03d" % n
    devs = []
    for m in range(8):
        s = lambda v: {"string": v}
        devs.append({"name": "gpu-%d" % m, "attributes": {
            "type": s("gpu"), "uuid": s("GPU-%08x-1c2d-4e5f-8a9b-%012x" % (n, m)),
            "minor": {"int": m}, "index": {"int": m}, "productName": s("NVIDIA H100 80GB HBM3"),
            "brand": s("Nvidia"), "architecture": s("Hopper"),
            "cudaComputeCapability": {"version": "9.0.0"}, "driverVersion": {"version": "570.133.20"},
            "cudaDriverVersion": {"version": "12.8.0"},
            "resource.kubernetes.io/pciBusID": s("0000:%02x:00.0" % (0x18 + 0x10 * m)),
            "resource.kubernetes.io/pcieRoot": s("pci0000:%02x" % (0x10 * (m // 2)))},
            "capacity": {"memory": {"value": "85520809984"}}})
    items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                  "metadata": {"name": "%s-%s-x7k2q" % (node, D)},
                  "spec": {"driver": D, "nodeName": node,
                           "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                           "devices": devs}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
P
create "$E2E_DIR/slices.json" || exit 1
"$K" create namespace dra > /dev/null || exit 1
# both schedulers sign in as a scheduler deployed in the cluster does, with a ServiceAccount's
# bearer token (TokenRequest; bound to cluster-admin as the admin certificate was): the API
# server verifies a client certificate's chain on every request (9 % of its CPU in gpusched's
# runs), a token once per its cache's lifetime
"$K" -n kube-system create serviceaccount bench-scheduler > /dev/null || exit 1
"$K" create clusterrolebinding bench-scheduler --clusterrole cluster-admin \
    --serviceaccount kube-system:bench-scheduler > /dev/null || exit 1
TOKEN=$("$K" -n kube-system create token bench-scheduler --duration 4h) || exit 1
e2e_kubeconfig "$E2E_DIR/sched.kubeconfig" --token "$TOKEN"
export SCHED_KUBECONFIG="$E2E_DIR/sched.kubeconfig"
# settle: until the API server and etcd are idle (under 0.05 CPU seconds in a second, twice in
# a row; 60 s at most), so that no run starts while the last one's clean-up is still being
# worked off
settle() {
    local i calm=0 a e a1 e1
    for i in $(seq 1 60); do
        a=$(cpu "$(cat "$E2E_DIR/apiserver.pid")"); e=$(cpu "$(cat "$E2E_DIR/etcd.pid")")
        sleep 1
        a1=$(cpu "$(cat "$E2E_DIR/apiserver.pid")"); e1=$(cpu "$(cat "$E2E_DIR/etcd.pid")")
        if python3 -c "import sys; sys.exit(0 if $a1 - $a + $e1 - $e < 0.05 else 1)"; then
            calm=$((calm + 1)); [ "$calm" -ge 2 ] && return 0
        else calm=0; fi
    done
    echo "  the API server did not settle in 60 s" >&2
}
# steal: the CPU seconds the machine's hypervisor has given other guests so far, over all cores
# (/proc/stat): in a run, how much of the two cores it lost to its neighbours
steal() {
    awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "%.2f\n", $9 / hz }' /proc/stat
}
# rereads: the claims the API server has read from etcd so far; in a scheduler's run, the
# writes that met a stale claim in its watch cache and were retried (a write sent before the
# watch showed the scheduler's previous write of the same claim)
rereads() {
    "$K" get --raw /metrics | awk '/^etcd_request_duration_seconds_count\{/ &&
        /operation="get"/ && /resource="resourceclaims"/ { n += $2 } END { printf "%d\n", n }'
}
run() { # NAME SCHEDULER-NAME COMMAND...
    local name="$1" sched="$2"; shift 2
    local label="${name}-$round"
    python3 - "$PODS" "$label" "$sched" > "$E2E_DIR/$label-objs.json" <<'P'
import json, sys
n, name, sched = int(sys.argv[1]), sys.argv[2], sys.argv[3]
sel = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"
items = []
for i in range(n):
    c = "%s-%04d-gpu" % (name, i)
    items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": c, "namespace": "dra"},
                  "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                      "deviceClassName": "gpu.nvidia.com",
                      "selectors": [{"cel": {"expression": sel}}]}}]}}})
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "%s-%04d" % (name, i), "namespace": "dra"},
                  "spec": {"schedulerName": sched,
                           "resourceClaims": [{"name": "gpu", "resourceClaimName": c}],
                           "containers": [{"name": "c", "image": "registry.invalid/none:1",
                                           "resources": {"requests": {"cpu": "100m"},
                                                         "claims": [{"name": "gpu"}]}}]}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
P
    create "$E2E_DIR/$label-objs.json" || exit 1
    local reread0 reread1
    reread0=$(rereads)
    settle
    local t0 t1 api0 api1 cpus st0 st1
    api0=$(cpu "$(cat "$E2E_DIR/apiserver.pid")")
    st0=$(steal)
    t0=$(now)
    "$@" > "$E2E_DIR/$label.log" 2>&1 &
    local pid=$!
    E2E_SCHEDULER="$sched" "$DRIVER" wait-none-pending 900 >&2 || { tail -5 "$E2E_DIR/$label.log" >&2; exit 1; }
    t1=$(now)
    st1=$(steal)
    cpus=$(cpu "$pid")
    api1=$(cpu "$(cat "$E2E_DIR/apiserver.pid")")
    reread1=$(rereads)
    kill "$pid"; wait "$pid" 2>/dev/null
    # every claim allocated once, on its pod's node, no device twice
    "$K" get resourceclaims -n dra -o json > "$E2E_DIR/$label-claims.json"
    "$K" get pods -n dra -o json > "$E2E_DIR/$label-pods.json"
    python3 - "$E2E_DIR/$label-claims.json" "$E2E_DIR/$label-pods.json" "$PODS" <<'P' >&2 || exit 1
import json, sys
claims = json.load(open(sys.argv[1]))["items"]
pods = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[2]))["items"]}
seen, bad = set(), 0
for c in claims:
    res = ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    pod = pods.get(c["metadata"]["name"][:-len("-gpu")])
    node = pod and pod["spec"].get("nodeName")
    if len(res) != 1 or res[0]["pool"] != node or (res[0]["pool"], res[0]["device"]) in seen:
        bad += 1
    for r in res:
        seen.add((r["pool"], r["device"]))
print("  %d claims allocated, %d devices, %d wrong" % (len(claims) - bad, len(seen), bad))
sys.exit(0 if bad == 0 and len(claims) == int(sys.argv[3]) else 1)
P
    python3 -c "import sys; print('{\"bench\":\"e2e_dra\",\"scheduler\":\"%s\",\"round\":%d,\"nodes\":%d,\"devices\":%d,\"pods\":%d,\"qps\":%d,\"burst\":%d,\"seconds\":%.2f,\"pods_per_s\":%.1f,\"cpu_s\":%s,\"apiserver_cpu_s\":%.1f,\"claim_rereads\":%d,\"steal_s\":%.2f}' % ('$name', $round, $NODES, 8 * $NODES, $PODS, $QPS, $BURST, $t1 - $t0, $PODS / ($t1 - $t0), '$cpus', $api1 - $api0, $reread1 - $reread0, $st1 - $st0))" | tee "$E2E_DIR/$label.rate"
    # a fresh set for the next: the pods and their claims go (finalizers dropped: no
    # resourceclaim controller runs here to drop them)
    "$K" delete pods --all -n dra --grace-period=0 --force --wait=false > /dev/null 2>&1
    "$K" get resourceclaims -n dra -o json | python3 -c '
import json, sys
l = json.load(sys.stdin)
for c in l["items"]:
    c["metadata"].pop("finalizers", None)
json.dump(l, sys.stdout)' > "$E2E_DIR/$label-unfin.json"
    "$K" replace -f "$E2E_DIR/$label-unfin.json" > /dev/null 2>&1
    "$K" delete resourceclaims --all -n dra --wait=false > /dev/null 2>&1
    for i in $(seq 1 120); do
        [ "$("$K" get pods,resourceclaims -n dra --no-headers 2>/dev/null | wc -l)" = 0 ] && break
        sleep 1
    done
}
alternate_rounds
python3 - "$E2E_DIR" <<'P'
import glob, json, sys
runs = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/*.rate"))]
rate = {}
for who in ("gpusched", "kube-scheduler"):
    mine = [r for r in runs if r["scheduler"] == who]
    rate[who] = sum(r["pods"] for r in mine) / sum(r["seconds"] for r in mine)
    print(json.dumps({"bench": "e2e_dra", "scheduler": who, "runs": len(mine),
                      "pods": sum(r["pods"] for r in mine), "pods_per_s": round(rate[who], 1)}))
print(json.dumps({"bench": "e2e_dra", "ratio_gpusched_to_kube_scheduler":
                  round(rate["gpusched"] / rate["kube-scheduler"], 1)}))
P
