#!/usr/bin/env bash
# Why a pod waits, on the real control plane, by category, from `gpusched explain` and the
# running scheduler's /debug/pending alike: fragmentation (6 GPUs free in the cluster, none
# with 4 on one node), selector (a GPU model no node has), taint (every GPU node tainted and
# not tolerated), priority (only pods of equal priority hold the GPUs), and a pod that fits.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
2 a100 A100-80GB 8 whole
S
"$K" create namespace x > /dev/null
tn_start || exit 1
tn_pods x big 0 2 - nvidia.com/gpu=5 | "$K" create -f - > /dev/null
tn_wait 30 tn_bound_ge x 2 || tn_fail "the two 5-GPU pods"
tn_pods x four 0 1 - nvidia.com/gpu=4 | "$K" create -f - > /dev/null
python3 - <<'P' | "$K" create -f - > /dev/null
import json
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b200", "namespace": "x"},
  "spec": {"schedulerName": "gpusched", "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-B200"},
           "containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}))
P
sleep 3
"$GS" explain --kubeconfig "$E2E_DIR/scheduler.kubeconfig" --output json > "$E2E_DIR/x1.json" || tn_fail explain
# the live verdicts before the taint: once every node is tainted, a retry of four-0 (its
# backoff may end while the taint lands, the sooner on a loaded machine) would say taint
curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" > "$E2E_DIR/pending0.json" || tn_fail /debug/pending
curl -sf "http://127.0.0.1:$TN_PORT/metrics" > "$E2E_DIR/metrics0.txt" || tn_fail /metrics
# taint every node: a pod that does not tolerate it waits for the taint
"$K" taint nodes a100-000 a100-001 dedicated=infra:NoSchedule > /dev/null
python3 - <<'P' | "$K" create -f - > /dev/null
import json
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "untolerated", "namespace": "x"},
  "spec": {"schedulerName": "gpusched", "containers": [{"name": "c", "image": "i",
           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}))
P
sleep 3
"$GS" explain x/untolerated --kubeconfig "$E2E_DIR/scheduler.kubeconfig" --output json > "$E2E_DIR/x2.json" ||
    tn_fail "explain x/untolerated"
curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" > "$E2E_DIR/pending.json" || tn_fail /debug/pending
curl -sf "http://127.0.0.1:$TN_PORT/metrics" > "$E2E_DIR/metrics.txt" || tn_fail /metrics
for r in fragmentation:metrics0 taint:metrics; do
    grep -q "^gpusched_pending_pods_by_reason{reason=\"${r%:*}\"} [1-9]" "$E2E_DIR/${r#*:}.txt" &&
        echo "ok   /metrics counts pods pending for ${r%:*}" ||
        tn_fail "/metrics counts no pod pending for ${r%:*}"
done
python3 - "$E2E_DIR" <<'P' || TN_OK=1
import json, sys
d = sys.argv[1]
x1 = {r["pod"]: r for r in json.load(open(d + "/x1.json"))}
x2 = {r["pod"]: r for r in json.load(open(d + "/x2.json"))}
live = {r["pod"]: r for r in json.load(open(d + "/pending.json"))}
live0 = {r["pod"]: r for r in json.load(open(d + "/pending0.json"))}
want = [(x1, "four-0", "fragmentation", "6 whole GPUs are free in the cluster but no node has 4 free"),
        (x1, "b200-0" if "b200-0" in x1 else "b200", "selector", "node selector"),
        (x2, "untolerated", "taint", ""),
        (live, "untolerated", "taint", ""),
        (live0, "four-0", "fragmentation", "no node has 4 free")]
bad = 0
for src, pod, reason, text in want:
    r = src.get(pod)
    ok = r is not None and r["reason"] == reason and text in r["message"]
    print("  %-12s %-14s %s%s" % (pod, r and r["reason"], r and r["message"], "" if ok else "   <- want %s" % reason))
    bad += not ok
sys.exit(1 if bad else 0)
P
tn_done
