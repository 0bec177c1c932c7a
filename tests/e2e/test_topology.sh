#!/usr/bin/env bash
# Topology-aware gangs on the real control plane, with Kueue's own Topology and ResourceFlavor
# CRDs (sigs.k8s.io/kueue v0.17.0's config/components/crd/bases, from the Go module cache) and
# gangs of gpusched's PodGroup CRD whose pods carry Kueue's podset annotations.
#
# Nodes (kwok-style fakes from e2e_driver, labelled with GFD's and NFD's labels):
#   8 H100 nodes of 8 GPUs in two GKE blocks (cloud.google.com/gce-topology-block b1, b2) of two
#     subblocks each (cloud.google.com/gce-topology-subblock)
#   5 GB200-like nodes of 4 GPUs in two NVLink cliques as GPU feature discovery labels them
#     (nvidia.com/gpu.clique "<clusterUUID>.<cliqueId>"): cliques .1 (2 nodes) and .2 (3 nodes)
#   a node with no GPUs labelled with a third clique (.9)
#   odd-000: an H100 node whose block label is empty; odd-001: one whose block is 63 characters
#     (the longest value the API server takes)
# Topologies: gke [block, subblock, hostname], nvl [clique, hostname]; ResourceFlavors h100 and
# gb200 name them (nodeLabels nvidia.com/gpu.product, as Kueue writes into the pods'
# nodeSelector); the scheduler's --topology-levels gives AWS's layer label for gangs that no
# flavor matches.
#   1. a gang of 4 x 8 GPUs requiring a block: placed in one block
#   2. a gang of 5 x 8 requiring a block (none holds 5): waits with the topology reason (its
#      level and the largest domain's room); a small pod beside it still binds
#   3. a gang of 2 x 8 preferring a block: placed in one block; then one of 3 x 8 preferring a
#      block, which no block holds any more: spread across blocks, bound
#   4. a gang of 3 x 4 GPUs requiring a clique: within clique .2; one of 2 x 4: within clique
#      .1; a third: waits (the GPU-less clique holds none of it)
#   5. bad input: a level no Topology has, a level no node has (the flag's), members that
#      disagree, a level 400 characters long: each gang waits with a clear topology reason;
#      nothing else is held back and the scheduler stays alive
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
KUEUE_MOD="$(cat "$E2E_BIN/kueue-v0.17.0.moddir" 2>/dev/null)"
[ -d "$KUEUE_MOD" ] || KUEUE_MOD="${GOMODCACHE:-$HOME/go/pkg/mod}/sigs.k8s.io/kueue@v0.17.0"
CRDS="$KUEUE_MOD/config/components/crd/bases"
[ -f "$CRDS/kueue.x-k8s.io_topologies.yaml" ] || skip "Kueue's CRDs are not in the Go module cache ($CRDS)"

"$DRIVER" nodes <<'S' || exit 1
8 h100 H100-80GB 8 whole
5 gb B200-180GB 4 whole
1 cpu B200-180GB 0 whole
2 odd H100-80GB 8 whole
S
H100=$("$K" get node h100-000 -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.product}')
GB=$("$K" get node gb-000 -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.product}')
[ -n "$H100" ] && [ -n "$GB" ] || { echo "FAIL: nodes without nvidia.com/gpu.product"; exit 1; }
BLK=cloud.google.com/gce-topology-block
SUB=cloud.google.com/gce-topology-subblock
CLQ=nvidia.com/gpu.clique
UUID=3f1b0c9e-7d2a-4e55-9a61-0b7c2d4e8f10
LONG=$(printf 'b%.0s' $(seq 1 63))
lbl() { "$K" label node "$@" --overwrite > /dev/null || exit 1; }
for i in 0 1 2 3 4 5 6 7; do
    b=b$((i / 4 + 1)); s=s$(((i / 2) % 2 + 1))
    lbl h100-00$i $BLK=$b $SUB=$b-$s cloud.google.com/gke-accelerator=nvidia-h100-80gb \
        feature.node.kubernetes.io/cpu-model.vendor_id=Intel nvidia.com/gpu.deploy.driver=true
done
for i in 0 1 2 3 4; do
    c=$([ $i -lt 2 ] && echo 1 || echo 2)
    lbl gb-00$i $CLQ=$UUID.$c nvidia.com/gpu.family=blackwell \
        feature.node.kubernetes.io/cpu-model.vendor_id=ARM nvidia.com/gpu.deploy.driver=true
done
lbl cpu-000 $CLQ=$UUID.9 nvidia.com/gpu.present-
lbl odd-000 $BLK= $SUB=
lbl odd-001 $BLK=$LONG $SUB=x

"$K" apply -f "$CRDS/kueue.x-k8s.io_topologies.yaml" -f "$CRDS/kueue.x-k8s.io_resourceflavors.yaml" \
    > /dev/null || { echo "FAIL: Kueue's CRDs"; exit 1; }
"$K" wait --for condition=established --timeout=60s crd/topologies.kueue.x-k8s.io \
    crd/resourceflavors.kueue.x-k8s.io > /dev/null || exit 1
tn_crds || exit 1
"$K" apply -f - > /dev/null <<T || { echo "FAIL: Topologies"; exit 1; }
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: gke}
spec:
  levels: [{nodeLabel: $BLK}, {nodeLabel: $SUB}, {nodeLabel: kubernetes.io/hostname}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: nvl}
spec:
  levels: [{nodeLabel: $CLQ}, {nodeLabel: kubernetes.io/hostname}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec: {nodeLabels: {nvidia.com/gpu.product: "$H100"}, topologyName: gke}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gb200}
spec: {nodeLabels: {nvidia.com/gpu.product: "$GB"}, topologyName: nvl}
T
"$K" create namespace ml > /dev/null
tn_start --topology-levels topology.k8s.aws/network-node-layer-1,kubernetes.io/hostname || exit 1

. "$(dirname "$0")/topology.sh"

# 1. required block
gang blk 4 8 required $BLK "$H100"
tn_wait 30 bound blk 4 || tn_fail "the block gang was not bound ($(gang_nodes blk | wc -l) of 4)"
[ "$(values blk $BLK | wc -l)" = 1 ] || tn_fail "the block gang spans blocks: $(values blk $BLK | tr '\n' ' ')"
echo "1. required block: nodes $(gang_nodes blk | tr '\n' ' ')in block $(values blk $BLK)"

# 2. no block holds 5: the topology reason; a small pod still binds
gang big 5 8 required $BLK "$H100"
tn_wait 30 pending_says big-0 "no domain holds it" ||
    tn_fail "the 5-pod gang does not wait with the topology reason"
tn_wait 10 event_says big-0 "topology: gang ml/big (5 pods) requires one domain of level '$BLK' of Topology gke" ||
    tn_fail "no FailedScheduling Event with the topology reason"
event_says big-0 "the largest has room for 4" || tn_fail "the reason does not give the largest block's room"
tn_pods ml small 0 1 - nvidia.com/gpu=1 | python3 -c '
import json, sys
l = json.load(sys.stdin)
for p in l["items"]:
    p["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "odd-000"}
print(json.dumps(l))' | "$K" create -f - > /dev/null
tn_wait 20 sh -c "\"$K\" get pod -n ml small-0 -o jsonpath='{.spec.nodeName}' | grep -q odd-000" ||
    tn_fail "a small pod beside the waiting gang did not bind"
[ "$(gang_nodes big | wc -l)" = 0 ] || tn_fail "the gang no block holds got pods bound"
echo "2. $(curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" | grep -o 'topology: gang ml/big[^"]*' | head -1)"
"$K" delete pods -n ml -l gang=big --grace-period 0 --force > /dev/null 2>&1

# 3. preferred block: one block when one fits, spread when none does
gang pa 2 8 preferred $BLK "$H100"
tn_wait 30 bound pa 2 || tn_fail "the preferring gang was not bound"
[ "$(values pa $BLK | wc -l)" = 1 ] || tn_fail "the preferring gang spans blocks though one holds it"
gang pb 3 8 preferred $BLK "$H100"
tn_wait 30 bound pb 3 || tn_fail "the preferring gang that no block holds was not bound (spread)"
[ "$(values pb $BLK | wc -l)" -ge 2 ] || tn_fail "the 3-pod preferring gang should span blocks"
echo "3. preferred: pa in $(values pa $BLK | tr '\n' ' '); pb spread over $(values pb $BLK | wc -l) blocks"

# 4. cliques (GB200-like, ResourceFlavor gb200 -> Topology nvl)
gang nv3 3 4 required $CLQ "$GB"
tn_wait 30 bound nv3 3 || tn_fail "the 3-node clique gang was not bound"
[ "$(values nv3 $CLQ)" = "$UUID.2" ] || tn_fail "the 3-node gang is not within clique .2: $(values nv3 $CLQ | tr '\n' ' ')"
gang nv2 2 4 required $CLQ "$GB"
tn_wait 30 bound nv2 2 || tn_fail "the 2-node clique gang was not bound"
[ "$(values nv2 $CLQ)" = "$UUID.1" ] || tn_fail "the 2-node gang is not within clique .1: $(values nv2 $CLQ | tr '\n' ' ')"
gang nvx 2 4 required $CLQ "$GB"
tn_wait 30 event_says nvx-0 "requires one domain of level '$CLQ' of Topology nvl: no domain holds it; the largest has room for 0" ||
    tn_fail "the gang no clique holds (the GPU-less clique) does not say so"
echo "4. cliques: nv3 in $(values nv3 $CLQ), nv2 in $(values nv2 $CLQ); nvx waits"

# 5. bad input
gang nolvl 2 8 required example.com/rack "$H100"
gang noaws 2 8 required topology.k8s.aws/network-node-layer-1 -
gang split 2 8 required,preferred $BLK "$H100"
gang huge 2 8 required "$(printf 'r%.0s' $(seq 1 400))" "$H100"
tn_wait 30 event_says nolvl-0 "asks level 'example.com/rack' (required), which Topology gke does not have" ||
    tn_fail "a level no Topology has: no clear reason"
tn_wait 30 event_says noaws-0 "requires one domain of level 'topology.k8s.aws/network-node-layer-1' of --topology-levels: no domain holds it" ||
    tn_fail "a level no node has: no clear reason"
tn_wait 30 event_says split-0 "the gang's pods disagree" || tn_fail "disagreeing members: no clear reason"
tn_wait 30 event_says huge-0 "is longer than 316 characters" || tn_fail "a 400-character level: no clear reason"
for g in nolvl noaws split huge nvx; do
    [ "$(gang_nodes $g | wc -l)" = 0 ] || tn_fail "gang $g got pods bound"
done
# nothing else held back: a plain pod and a gang without topology bind beside them
tn_pods ml plain 0 1 - nvidia.com/gpu=4 | "$K" create -f - > /dev/null
tn_wait 20 sh -c "\"$K\" get pod -n ml plain-0 -o jsonpath='{.spec.nodeName}' | grep -q ." ||
    tn_fail "a plain pod did not bind beside the waiting gangs"
curl -sf "http://127.0.0.1:$TN_PORT/healthz" > /dev/null || tn_fail "the scheduler is not healthy"
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || tn_fail "the scheduler died"
"$GS" explain ml/noaws-0 --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --topology-levels topology.k8s.aws/network-node-layer-1,kubernetes.io/hostname > "$E2E_DIR/x.txt"
sed 's/^/  explain: /' "$E2E_DIR/x.txt"
grep -q "topology" "$E2E_DIR/x.txt" || tn_fail "explain does not say topology"
"$DRIVER" verify --expect-bound 16 > "$E2E_DIR/verify.log" 2>&1 || { tn_fail verify; cat "$E2E_DIR/verify.log"; }
tn_done
