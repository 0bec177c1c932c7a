#!/usr/bin/env bash
# The article's MigManager mapping of workloads to MIG types on the real control plane: its
# MigManager object (from nvidia-mig-config.yaml, as it is, with gpusched's CRD for the kind)
# says pods labelled workload=llm-inference in ai-inference get a 3g.40gb and
# workload=light-inference a 1g.10gb. Pods asking one whole nvidia.com/gpu are placed on a
# free slot of that MIG type (the devices annotation says so) on the A100 `mixed` and H100
# all-3g.40gb nodes; a pod outside the mapping gets a whole GPU.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
1 a100mig A100-80GB 8 mig:mixed
1 h100mig H100-80GB 8 mig:all-3g.40gb
1 h100 H100-80GB 8 whole
S
"$K" apply -f "$E2E_SRC/../../deploy/crds/migmanager.yaml" > /dev/null || exit 1
"$K" wait --for condition=established --timeout=60s crd/migmanagers.nvidia.com > /dev/null
python3 -c '
import sys
docs = open(sys.argv[1]).read().split("\n---")
print([d for d in docs if "kind: MigManager" in d][0])' "$SEED/nvidia-mig-config.yaml" |
    "$K" apply -f - > /dev/null || { tn_fail "the article's MigManager was not accepted"; tn_done; }
"$K" create namespace ai-inference > /dev/null
tn_start || exit 1
tn_pods ai-inference llm 0 2 - nvidia.com/gpu=1 workload=llm-inference | "$K" create -f - > /dev/null
tn_pods ai-inference light 0 3 - nvidia.com/gpu=1 workload=light-inference | "$K" create -f - > /dev/null
tn_pods ai-inference plain 0 1 - nvidia.com/gpu=1 workload=batch | "$K" create -f - > /dev/null
tn_wait 30 tn_bound_ge ai-inference 6 || tn_fail "$(tn_bound ai-inference) of 6 pods bound"
"$K" get pods -n ai-inference -o json | python3 -c '
import json, sys
bad = 0
for p in json.load(sys.stdin)["items"]:
    n, node = p["metadata"]["name"], p["spec"].get("nodeName", "")
    dev = p["metadata"].get("annotations", {}).get("gpusched.io/devices", "")
    want = "3g.40gb" if n.startswith("llm") else "1g.10gb" if n.startswith("light") else "gpu="
    ok = want in dev
    print("  %-8s %-12s %-22s %s" % (n, node, dev, "ok" if ok else "WRONG, want " + want))
    bad += not ok
sys.exit(1 if bad else 0)' || tn_fail "pods not on the MIG type the MigManager maps them to"
tn_done
