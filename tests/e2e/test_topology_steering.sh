#!/usr/bin/env bash
# Small work kept out of the block a waiting topology gang needs, on the real control plane
# (the daemon's steering: sched/cyclein.c gives core/topo.h the shapes of the cycle's gangs
# that ask a level, and pods outside them go to the domains those shapes break least).
#
# Nodes (kwok-style fakes from e2e_driver): 6 H100 nodes of 8 GPUs in two blocks
# (cloud.google.com/gce-topology-block, levels from --topology-levels): block a of 4 nodes
# (h100-000..003, the only block that holds 4 x 8 GPUs) and block b of 2 (h100-004, 005).
# A busy pod of 1 GPU runs on h100-000, so block a has 31 free GPUs and b 16: ordinary
# scoring packs small pods beside the busy one, into block a.
#   1. control: 6 pods of 1 GPU, no gang: at least one lands in block a (ordinary scoring);
#      they go away
#   2. steering: a gang of 4 x 8 GPUs requiring a block waits (no block holds it while the
#      busy pod runs); the same 6 pods arrive: every one lands in block b; the busy pod goes
#      away and the gang is placed whole in block a
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
. "$(dirname "$0")/topology.sh"

"$DRIVER" nodes <<'S' || exit 1
6 h100 H100-80GB 8 whole
S
BLK=cloud.google.com/gce-topology-block
for i in 0 1 2 3 4 5; do
    "$K" label node h100-00$i $BLK=$([ $i -lt 4 ] && echo a || echo b) --overwrite > /dev/null ||
        exit 1
done
tn_crds || exit 1
"$K" create namespace ml > /dev/null
tn_start --topology-levels $BLK,kubernetes.io/hostname || exit 1

# pods NAME N GPUS [NODE]: N pods NAME-i of GPUS GPUs labelled role=NAME (on NODE by its
# hostname label)
pods() {
    tn_pods ml "$1" 0 "$2" - nvidia.com/gpu="$3" role="$1" | python3 -c '
import json, sys
l = json.load(sys.stdin)
for p in l["items"]:
    if sys.argv[1]:
        p["spec"]["nodeSelector"] = {"kubernetes.io/hostname": sys.argv[1]}
print(json.dumps(l))' "${4:-}" | "$K" create -f - > /dev/null || exit 1
}
role_bound() { [ "$(tn_bound ml role="$1")" = "$2" ]; } # ROLE N
# blocks ROLE: "a=N b=M", where the pods of ROLE are, by block
blocks() {
    local a=0 b=0 n
    for n in $("$K" get pods -n ml -l role="$1" -o jsonpath='{.items[*].spec.nodeName}'); do
        case "$("$K" get node "$n" -o jsonpath="{.metadata.labels.${BLK//./\\.}}")" in
        a) a=$((a + 1)) ;;
        b) b=$((b + 1)) ;;
        esac
    done
    echo "a=$a b=$b"
}
where() { # ROLE: its pods' nodes, "node xN" each
    "$K" get pods -n ml -l role="$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' |
        sort | uniq -c | awk '{printf "%s x%s ", $2, $1}'
}

pods busy 1 1 h100-000
tn_wait 30 role_bound busy 1 || { tn_fail "the busy pod was not bound"; tn_done; }

# 1. control: no gang asks a level, so nothing steers
pods ctl 6 1
tn_wait 30 role_bound ctl 6 || tn_fail "the control's small pods were not bound ($(tn_bound ml role=ctl) of 6)"
CTL=$(blocks ctl)
echo "1. control (no gang): small pods by block: $CTL (on $(where ctl))"
[ "${CTL%% *}" != "a=0" ] ||
    tn_fail "ordinary scoring put no small pod into block a, so the steering case proves nothing"
"$K" delete pods -n ml -l role=ctl --grace-period 0 --force > /dev/null 2>&1
tn_wait 30 role_bound ctl 0 || tn_fail "the control's pods did not go"

# 2. steering: the gang waits for block a; the small pods keep out of it
gang train 4 8 required $BLK -
tn_wait 30 event_says train-0 "requires one domain of level '$BLK' of --topology-levels: no domain holds it; the largest has room for 3" ||
    tn_fail "the gang does not wait for a block (room 3 in block a)"
pods st 6 1
tn_wait 30 role_bound st 6 || tn_fail "the small pods beside the waiting gang were not bound ($(tn_bound ml role=st) of 6)"
ST=$(blocks st)
echo "2. steering (gang of 4 x 8 waiting for block a): small pods by block: $ST (on $(where st))"
[ "$ST" = "a=0 b=6" ] || tn_fail "small pods went into the block the waiting gang needs: $ST"
[ "$(gang_nodes train | wc -l)" = 0 ] || tn_fail "the gang got pods bound while no block held it"
"$K" delete pods -n ml -l role=busy --grace-period 0 --force > /dev/null 2>&1
tn_wait 30 bound train 4 || tn_fail "the gang was not placed once the busy pod went ($(gang_nodes train | wc -l) of 4)"
echo "   busy pod gone: the gang on $(gang_nodes train | tr '\n' ' ')in block $(values train $BLK | tr '\n' ' ')"
[ "$(values train $BLK)" = a ] || tn_fail "the gang is not whole in block a: $(values train $BLK | tr '\n' ' ')"
[ "$(blocks st)" = "a=0 b=6" ] || tn_fail "the small pods moved: $(blocks st)"

curl -sf "http://127.0.0.1:$TN_PORT/healthz" > /dev/null || tn_fail "the scheduler is not healthy"
"$DRIVER" verify --expect-bound 10 > "$E2E_DIR/verify.log" 2>&1 || { tn_fail verify; cat "$E2E_DIR/verify.log"; }
tn_done
