#!/usr/bin/env bash
# bench-e2e at scale: NODES fake nodes (default 5,000, kwok) and PODS pods (default 10,000),
# gpusched against the stock kube-scheduler in the same run with the same client QPS and burst.
# Nodes are the whole-A100 fixture (tests/data/nodes/a100-whole.json: the ~95 labels NFD and
# the GPU Operator write, the NoSchedule taint, allocatable as the device plugin reports it) in
# three zones. Each run gets a fresh set of pods written as controllers write them: 70 % as a
# Deployment's ReplicaSets write them (1 GPU each), 20 % and 10 % as Indexed Jobs write them
# (2 and 4 GPUs), with their ReplicaSets and Jobs in the API (no controller runs, so they stay
# as made). kwok plays the kubelets without its pod-complete stage (training Jobs run for
# hours, not instantly), so every pod bound stays on its node. The pods are made first, then
# the scheduler starts and the clock runs until none is pending; its peak RSS (VmHWM, sampled
# each second from /proc) is read before it stops. Every bind is checked: on each node the
# requests of its pods within allocatable (nvidia.com/gpu, cpu, memory, pods), and gpusched's
# device annotation naming each GPU once. ROUNDS rounds (default 2) alternate the order. One
# JSON line per run (with the CPU seconds the scheduler used, from /proc), then one per
# scheduler over its runs and the ratio.
set -u
GS="$1"; DRIVER="$2"; NODES="${3:-5000}"; PODS="${4:-10000}"; QPS="${QPS:-1000}"; BURST="${BURST:-2000}"
ROUNDS="${ROUNDS:-2}"
DATA="$(cd "$(dirname "$0")/../tests/data/nodes" && pwd)"
export GS_E2E_KWOK=0 # started below, with its stages less pod-complete
. "$(dirname "$0")/../tests/e2e/cluster.sh"
. "$(dirname "$0")/alternate.sh"
e2e_up >&2 || exit 1
K="$E2E_BIN/kubectl"
NS=scale
now() { date +%s.%N; }

python3 - "$E2E_BIN/kwok-stages.yaml" > "$E2E_DIR/kwok-stages.yaml" <<'P' || exit 1
import sys
docs = open(sys.argv[1]).read().split("\n---\n")
print("\n---\n".join(d for d in docs if "name: pod-complete\n" not in d))
P
"$E2E_BIN/kwok" --kubeconfig "$E2E_DIR/admin.kubeconfig" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --config "$E2E_DIR/kwok-stages.yaml" --cidr 10.64.0.0/12 > "$E2E_DIR/kwok.log" 2>&1 &
echo $! > "$E2E_DIR/kwok.pid"

# the nodes: the fixture with its name, host, instance and zone changed
python3 - "$DATA/a100-whole.json" "$NODES" > "$E2E_DIR/nodes.json" <<'P' || exit 1
import copy, json, sys
src, n = json.load(open(sys.argv[1])), int(sys.argv[2])
items = []
for i in range(n):
    node = copy.deepcopy(src)
    name = "gpu-a100-%04d" % i
    zone = "eu-west-1" + "abc"[i % 3]
    md = node["metadata"]
    md["name"] = name
    md["annotations"]["kwok.x-k8s.io/node"] = "fake"
    L = md["labels"]
    L["kubernetes.io/hostname"] = name
    L["topology.kubernetes.io/zone"] = L["failure-domain.beta.kubernetes.io/zone"] = zone
    node["spec"]["providerID"] = "aws:///%s/i-0%016x" % (zone, 0x5ca1e0000 + i)
    items.append(node)
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
P
t=$(now)
create "$E2E_DIR/nodes.json" || exit 1
"$K" create namespace "$NS" > /dev/null || exit 1
# kwok marks each node Ready (one status write per node): wait for all before any clock runs
for i in $(seq 1 600); do
    ready=$("$K" get nodes --no-headers 2>/dev/null | grep -c ' Ready ')
    [ "$ready" -ge "$NODES" ] && break
    sleep 2
done
[ "$ready" -ge "$NODES" ] || { echo "e2e_scale: only $ready of $NODES nodes Ready" >&2; exit 1; }
"$K" get nodes -o json > "$E2E_DIR/nodes-api.json" || exit 1
echo "e2e_scale: $NODES nodes Ready in $(python3 -c "print('%.0f' % ($(now) - $t))") s" >&2

# owners LABEL: the ReplicaSets and Jobs of one run, as JSON on stdout
owners() {
    python3 - "$PODS" "$1" <<'P'
import json, sys
n, run = int(sys.argv[1]), sys.argv[2]
def tmpl(app, gpus, job):
    c = {"name": "main", "image": "registry.example.com/%s:1.0" % app,
         "imagePullPolicy": "IfNotPresent",
         "resources": {"requests": {"cpu": str(4 * gpus), "memory": "%dGi" % (32 * gpus),
                                    "nvidia.com/gpu": str(gpus)},
                       "limits": {"memory": "%dGi" % (32 * gpus), "nvidia.com/gpu": str(gpus)}}}
    return {"containers": [c], "restartPolicy": "Never" if job else "Always",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
# as pods() deals them: 70 % over 20 ReplicaSets, 20 % over ten Jobs, the rest over five
shares = [(20, n * 7 // 10), (10, n * 2 // 10)]
shares.append((5, n - shares[0][1] - shares[1][1]))
each = lambda k, i: shares[k][1] // shares[k][0] + (i < shares[k][1] % shares[k][0])
items = []
for d in range(20):
    app = "%s-infer-%02d" % (run, d)
    labels = {"app": app, "app.kubernetes.io/name": app, "pod-template-hash": "7d9f8b6c5d"}
    items.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                  "metadata": {"name": app + "-7d9f8b6c5d", "namespace": "scale",
                               "labels": dict(labels, run=run)},
                  "spec": {"replicas": each(0, d), "selector": {"matchLabels": labels},
                           "template": {"metadata": {"labels": dict(labels, run=run)},
                                        "spec": tmpl(app, 1, False)}}})
for j, k, gpus in [(j, 1, 2) for j in range(10)] + [(j, 2, 4) for j in range(5)]:
    app = "%s-train-%dg-%02d" % (run, gpus, j)
    c = each(k, j)
    items.append({"apiVersion": "batch/v1", "kind": "Job",
                  "metadata": {"name": app, "namespace": "scale", "labels": {"run": run}},
                  "spec": {"completionMode": "Indexed", "completions": c, "parallelism": c,
                           "backoffLimit": 0,
                           "template": {"metadata": {"labels": {"app": app, "run": run}},
                                        "spec": tmpl(app, gpus, True)}}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
P
}

# pods LABEL SCHEDULER OWNERS-JSON: PODS pods, 70 % spread over the 20 ReplicaSets, 20 % over
# the ten 2-GPU Jobs, 10 % over the five 4-GPU ones, as their controllers write them
pods() {
    python3 - "$PODS" "$1" "$2" "$3" <<'P'
import copy, json, sys
n, run, sched = int(sys.argv[1]), sys.argv[2], sys.argv[3]
owners = json.load(open(sys.argv[4]))["items"]
rs = sorted((o for o in owners if o["kind"] == "ReplicaSet"), key=lambda o: o["metadata"]["name"])
jobs = lambda g: sorted((o for o in owners if o["kind"] == "Job" and "-train-%dg-" % g in
                         o["metadata"]["name"]), key=lambda o: o["metadata"]["name"])
counts = [(rs, n * 7 // 10), (jobs(2), n * 2 // 10)]
counts.append((jobs(4), n - counts[0][1] - counts[1][1]))
items = []
alnum = "bcdfghjklmnpqrstvwxz2456789"
for group, total in counts:
    for i in range(total):
        o = group[i % len(group)]
        k = i // len(group)
        ref = {"apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"],
               "uid": o["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        t = o["spec"]["template"]
        md = {"namespace": "scale", "labels": dict(t["metadata"]["labels"]),
              "ownerReferences": [ref]}
        spec = copy.deepcopy(t["spec"])
        spec["schedulerName"] = sched
        if o["kind"] == "ReplicaSet":
            s = "".join(alnum[(k // len(alnum) ** c) % len(alnum)] for c in range(5))
            md["generateName"] = o["metadata"]["name"] + "-"
            md["name"] = o["metadata"]["name"] + "-" + s
        else:
            s = "".join(alnum[(k * 7 + c) % len(alnum)] for c in range(5))
            md["generateName"] = "%s-%d-" % (o["metadata"]["name"], k)
            md["name"] = md["generateName"] + s
            md["labels"]["batch.kubernetes.io/job-completion-index"] = str(k)
            md["annotations"] = {"batch.kubernetes.io/job-completion-index": str(k)}
            spec["hostname"] = "%s-%d" % (o["metadata"]["name"], k)
            spec["subdomain"] = o["metadata"]["name"]
        items.append({"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
P
}

# check LABEL: every bind of the run within its node's allocatable, no GPU of gpusched's twice
check() {
    "$K" get pods -n "$NS" -l run="$1" -o json > "$E2E_DIR/$1-pods.json" || return 1
    python3 - "$E2E_DIR/nodes-api.json" "$E2E_DIR/$1-pods.json" "$PODS" <<'P'
import collections, json, sys
def qty(v):
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9}
    for u in sorted(units, key=len, reverse=True):
        if v.endswith(u):
            return float(v[:-len(u)]) * units[u]
    return float(v)
nodes = {n["metadata"]["name"]: n["status"]["allocatable"] for n in json.load(open(sys.argv[1]))["items"]}
pods = json.load(open(sys.argv[2]))["items"]
use = collections.defaultdict(collections.Counter)
gpus = collections.defaultdict(collections.Counter)
bad, bound = [], 0
for p in pods:
    node = p["spec"].get("nodeName")
    if not node:
        continue
    bound += 1
    use[node]["pods"] += 1
    for c in p["spec"]["containers"]:
        for r, v in c["resources"].get("requests", {}).items():
            use[node][r] += qty(v)
    dev = (p["metadata"].get("annotations") or {}).get("gpusched.io/devices", "")
    if dev:
        kind, _, lst = dev.partition("=")
        got = lst.split(",")
        want = int(p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"])
        if kind != "gpu" or len(got) != want:
            bad.append("%s: devices %s for %d GPUs" % (p["metadata"]["name"], dev, want))
        for g in got:
            gpus[node][g] += 1
for node, u in use.items():
    alloc = nodes.get(node)
    if alloc is None:
        bad.append("%s: no such node" % node)
        continue
    for r, v in u.items():
        if v > qty(alloc.get(r, "0")) + 1e-6:
            bad.append("%s: %s %g requested > %s allocatable" % (node, r, v, alloc.get(r, "0")))
for node, c in gpus.items():
    for g, k in c.items():
        if k > 1 or not 0 <= int(g) < int(qty(nodes[node]["nvidia.com/gpu"])):
            bad.append("%s: GPU %s given %d times" % (node, g, k))
for b in bad[:10]:
    print("  VIOLATION: " + b)
print("  %d of %d pods bound on %d nodes, %d violations" % (bound, len(pods), len(use), len(bad)))
sys.exit(0 if not bad and bound == len(pods) == int(sys.argv[3]) else 1)
P
}

hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

run() { # NAME SCHEDULER-NAME COMMAND...
    local name="$1" sched="$2"; shift 2
    local label="${name/kube-scheduler/ks}"
    label="${label/gpusched/gs}$round"
    owners "$label" > "$E2E_DIR/$label-owners.json" || exit 1
    "$K" create -f "$E2E_DIR/$label-owners.json" > /dev/null || exit 1
    "$K" get rs,jobs -n "$NS" -l run="$label" -o json > "$E2E_DIR/$label-owned.json" || exit 1
    pods "$label" "$sched" "$E2E_DIR/$label-owned.json" > "$E2E_DIR/$label-objs.json" || exit 1
    create "$E2E_DIR/$label-objs.json" || exit 1
    local t0 t1 peak=0 v
    t0=$(now)
    "$@" > "$E2E_DIR/$label.log" 2>&1 &
    local pid=$!
    ( while kill -0 "$pid" 2>/dev/null; do hwm "$pid" > "$E2E_DIR/$label.hwm.new" &&
        mv "$E2E_DIR/$label.hwm.new" "$E2E_DIR/$label.hwm"; sleep 1; done ) &
    local sampler=$!
    E2E_SCHEDULER="$sched" "$DRIVER" wait-none-pending 1800 >&2 ||
        { tail -5 "$E2E_DIR/$label.log" >&2; exit 1; }
    t1=$(now)
    v=$(hwm "$pid")
    local cpus
    cpus=$(cpu "$pid")
    # stopped alike: SIGTERM, then SIGKILL after 5 s (gpusched would post the Events it still
    # has queued before it exits, and those would weigh on the next run)
    kill "$pid"
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
    peak=$(cat "$E2E_DIR/$label.hwm" 2>/dev/null || echo 0)
    [ -n "$v" ] && [ "$v" -gt "${peak:-0}" ] && peak=$v
    check "$label" >&2 || { echo "e2e_scale: $name's binds failed the check" >&2; exit 1; }
    python3 -c "import sys; print('{\"bench\":\"e2e_scale\",\"scheduler\":\"%s\",\"round\":%d,\"nodes\":%d,\"pods\":%d,\"qps\":%d,\"burst\":%d,\"seconds\":%.2f,\"pods_per_s\":%.1f,\"peak_rss_kb\":%d,\"cpu_s\":%s}' % ('$name', $round, $NODES, $PODS, $QPS, $BURST, $t1 - $t0, $PODS / ($t1 - $t0), ${peak:-0}, '$cpus'))" | tee "$E2E_DIR/$label.rate"
    # a fresh set for the next run
    "$K" delete pods,rs,jobs -n "$NS" -l run="$label" --grace-period=0 --force --wait=false \
        > /dev/null 2>&1
    for i in $(seq 1 300); do
        [ "$("$K" get pods -n "$NS" --no-headers 2>/dev/null | wc -l)" = 0 ] && break
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
    print(json.dumps({"bench": "e2e_scale", "scheduler": who, "runs": len(mine),
                      "nodes": mine[0]["nodes"], "pods": sum(r["pods"] for r in mine),
                      "pods_per_s": round(rate[who], 1),
                      "peak_rss_kb": max(r["peak_rss_kb"] for r in mine),
                      "cpu_ms_per_pod": round(1e3 * sum(r["cpu_s"] for r in mine) /
                                              sum(r["pods"] for r in mine), 2)}))
print(json.dumps({"bench": "e2e_scale", "ratio_gpusched_to_kube_scheduler":
                  round(rate["gpusched"] / rate["kube-scheduler"], 2)}))
P
