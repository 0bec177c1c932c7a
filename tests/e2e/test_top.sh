#!/usr/bin/env bash
# `gpusched top` in a real terminal: tmux (a detached session of fixed size, 160x50) runs
# `gpusched top --interval 1` against gpusched scheduling on the real control plane: an H100
# carved all-3g.40gb and a time-sliced L40S, a MIG pod, a time-sliced pod and a pod that waits
# for a GPU model no node has. The captured screen (tmux capture-pane) shows every Node, each
# MIG slice as the API says (the pod its gpusched.io/devices annotation names on it, the other
# slice free), the time-sliced pod on its GPU, and the waiting pod with the reason and message
# /debug/pending gives. A pod that fits is created: the next frames show it on the slice its
# annotation names and list its bind, without restarting top. The scheduler is then stopped:
# top keeps the last state and says the connection is lost; Ctrl-C ends it.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
command -v tmux > /dev/null || skip "no tmux (scripts/install-deps.sh)"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
T="tmux -L gpusched-e2e-$$"
SESSION=top
stop_tmux() { $T kill-server > /dev/null 2>&1; }
trap 'rc=$?; stop_tmux; (exit $rc); e2e_down' EXIT

"$DRIVER" nodes <<'S' || exit 1
1 h100 H100-80GB 1 mig:all-3g.40gb
1 l40s L40S 1 ts:2
S
"$K" create namespace team-a > /dev/null
tn_start || exit 1
tn_pods team-a infer 0 1 - nvidia.com/mig-3g.40gb=1 | "$K" create -f - > /dev/null
tn_pods team-a notebook 0 1 - nvidia.com/gpu=1 | "$K" create -f - > /dev/null
python3 - <<'P' | "$K" create -f - > /dev/null
import json
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b200", "namespace": "team-a"},
  "spec": {"schedulerName": "gpusched", "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-B200"},
           "containers": [{"name": "c", "image": "registry.invalid/none:1",
                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}))
P
tn_wait 60 tn_bound_ge team-a 2 || { tn_fail "$(tn_bound team-a) pods bound, want 2"; tn_done; }
verdict() { # POD FIELD: /debug/pending's
    curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" | python3 -c '
import json, sys
r = [x for x in json.load(sys.stdin) if x["pod"] == sys.argv[1]]
print(r[0][sys.argv[2]] if r else "")
sys.exit(0 if r else 1)' "$1" "$2"
}
tn_wait 30 verdict b200 reason > /dev/null || { tn_fail "no verdict for team-a/b200"; tn_done; }
REASON="$(verdict b200 reason)"
MESSAGE="$(verdict b200 message)"

$T new-session -d -s $SESSION -x 160 -y 50 \
    "$GS top --server http://127.0.0.1:$TN_PORT --interval 1 2> $E2E_DIR/top.err" || {
    tn_fail "tmux new-session"; tn_done; }
screen() { $T capture-pane -p -t $SESSION > "$E2E_DIR/screen.txt" 2>/dev/null; }
shows() { # TEXT...: the screen holds every one
    screen || return 1
    local t
    for t in "$@"; do grep -qF -- "$t" "$E2E_DIR/screen.txt" || return 1; done
}
check_shows() { # WHAT TEXT...
    local what="$1"; shift
    if tn_wait 20 shows "$@"; then echo "ok   $what"; else
        tn_fail "$what: the screen lacks one of: $*"; sed 's/^/    | /' "$E2E_DIR/screen.txt"
    fi
}
devices() { "$K" get pod -n team-a "$1" -o jsonpath='{.metadata.annotations.gpusched\.io/devices}'; }
# mig=0:3g.40gb@4 -> [0:3g.40gb@4 team-a/POD]
slice_of() { echo "[${2#mig=} team-a/$1]"; }
INFER="$(devices infer-0)"
NB="$(devices notebook-0)"
OTHER="0:3g.40gb@0"; [ "${INFER#mig=}" = "$OTHER" ] && OTHER="0:3g.40gb@4"
check_shows "every Node" "h100-000  H100-80GB" "l40s-000  L40S"
check_shows "team-a/infer-0 on the slice its annotation names ($INFER), the other free" \
    "$(slice_of infer-0 "$INFER")" "[$OTHER free]"
check_shows "team-a/notebook-0 on the time-sliced GPU its annotation names ($NB)" \
    "GPU ${NB#replica=}  timeslice x2 team-a/notebook-0 (replica)"
check_shows "team-a/b200 waits for '$REASON', with /debug/pending's message" \
    "team-a/b200  queue -  priority 0  $REASON" "${MESSAGE:0:60}"
# a pod that fits: the running top shows it
tn_pods team-a late 0 1 - nvidia.com/mig-3g.40gb=1 | "$K" create -f - > /dev/null
tn_wait 30 tn_bound_ge team-a 3 || tn_fail "team-a/late-0 not bound"
LATE="$(devices late-0)"
check_shows "the next frames show team-a/late-0 on $LATE and its bind" \
    "$(slice_of late-0 "$LATE")" "bind    team-a/late-0 -> h100-000 $LATE"
grep -q "PENDING (1)" "$E2E_DIR/screen.txt" && echo "ok   one pod still pending" || tn_fail "pending count"
echo "--- the screen"
awk 'NF { n = NR } { l[NR] = $0 } END { for (i = 1; i <= n; i++) print "    | " l[i] }' "$E2E_DIR/screen.txt"
# the scheduler goes away: top keeps its last state and says so
kill "$(cat "$E2E_DIR/scheduler.pid")"
check_shows "the scheduler stopped: the last state is kept, the connection said lost" \
    "connection lost (showing the last state)" "$(slice_of late-0 "$LATE")"
$T send-keys -t $SESSION C-c
gone() { ! $T has-session -t $SESSION 2> /dev/null; }
tn_wait 10 gone && echo "ok   Ctrl-C ends top" || tn_fail "top still runs after Ctrl-C"
[ -s "$E2E_DIR/top.err" ] && { tn_fail "top wrote to stderr:"; cat "$E2E_DIR/top.err"; }
tn_done
