# bench/alternate.sh - sourced by the bench-e2e scripts that set gpusched beside the stock
# kube-scheduler: ROUNDS rounds of one run each, the order alternated (gpusched first in odd
# rounds) so that the machine's load drifting weighs on both alike. The caller defines
# run NAME SCHEDULER-NAME COMMAND... (one timed run) and sets GS, QPS, BURST, ROUNDS.
alternate_rounds() {
    cat > "$E2E_DIR/ks.yaml" <<Y
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection:
  kubeconfig: $E2E_DIR/admin.kubeconfig
  qps: $QPS
  burst: $BURST
Y
    local round
    for round in $(seq 1 "$ROUNDS"); do
        if [ $((round % 2)) = 1 ]; then alternate_gs; alternate_ks; else alternate_ks; alternate_gs; fi
    done
}
alternate_gs() {
    run gpusched gpusched "$GS" scheduler --kubeconfig "$E2E_DIR/admin.kubeconfig" \
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
