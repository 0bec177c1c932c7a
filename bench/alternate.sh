# bench/alternate.sh - sourced by the bench-e2e scripts that set gpusched beside the stock
# kube-scheduler: ROUNDS rounds of one run each, the order alternated (gpusched first in odd
# rounds) so that the machine's load drifting weighs on both alike; both sign in with
# SCHED_KUBECONFIG when the caller sets it (the admin's certificate otherwise). The caller defines
# run NAME SCHEDULER-NAME COMMAND... (one timed run) and sets GS, QPS, BURST, ROUNDS. Also
# the helpers both use: create (a List made four at a time) and cpu (a process's CPU seconds).
alternate_rounds() {
    cat > "$E2E_DIR/ks.yaml" <<Y
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection:
  kubeconfig: ${SCHED_KUBECONFIG:-$E2E_DIR/admin.kubeconfig}
  qps: $QPS
  burst: $BURST
Y
    local round
    for round in $(seq 1 "$ROUNDS"); do
        if [ $((round % 2)) = 1 ]; then alternate_gs; alternate_ks; else alternate_ks; alternate_gs; fi
    done
}
alternate_gs() {
    run gpusched gpusched "$GS" scheduler --kubeconfig "${SCHED_KUBECONFIG:-$E2E_DIR/admin.kubeconfig}" \
        --leader-elect false --http-port 0 --qps "$QPS" --burst "$BURST"
}
alternate_ks() {
    run kube-scheduler default-scheduler "$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" \
        --secure-port 0
}
# cpu PID: the CPU seconds (user and system) the process has used so far
cpu() {
    python3 -c 'import os, sys
f = open("/proc/%s/stat" % sys.argv[1]).read().rsplit(")", 1)[1].split()
print("%.1f" % ((int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")))' "$1" 2>/dev/null || echo 0
}
# create FILE: kubectl create of a List, four at a time
create() {
    python3 - "$1" <<'P' || return 1
import json, sys
items = json.load(open(sys.argv[1]))["items"]
for k in range(4):
    json.dump({"apiVersion": "v1", "kind": "List", "items": items[k::4]},
              open("%s.%d" % (sys.argv[1], k), "w"))
P
    local k pids=()
    for k in 0 1 2 3; do "$K" create -f "$1.$k" > /dev/null & pids+=($!); done
    for k in "${pids[@]}"; do wait "$k" || return 1; done
}
