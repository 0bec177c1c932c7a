#!/usr/bin/env bash
# Two replicas with Lease leader election: only the leader schedules; when it is killed the
# other takes over within the lease time and schedules. A leader stopped cleanly (SIGTERM)
# hands the Lease back: a standby with a 60 s lease takes over at its next retry.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
"$DRIVER" nodes <<'S' || exit 1
10 a100 A100-80GB 8 whole
S
K="$E2E_BIN/kubectl"
for id in replica-a replica-b; do
    "$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
        --leader-elect true --lease-duration 6 --renew-deadline 4 --retry-period 1 \
        --identity "$id" --http-port 0 > "$E2E_DIR/$id.log" 2>&1 &
    echo $! > "$E2E_DIR/$id.pid"
done
leader=""
for i in $(seq 1 40); do
    leader=$("$K" get lease gpusched -n kube-system -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)
    [ -n "$leader" ] && break
    sleep 0.5
done
ok=0
[ -n "$leader" ] || { echo "no leader elected"; ok=1; }
"$DRIVER" pods <<'S' || exit 1
20 first e2e gpu:1
S
"$DRIVER" wait-bound 20 60 || ok=1
other=replica-a; [ "$leader" = replica-a ] && other=replica-b
if grep -q " -> " "$E2E_DIR/$other.log"; then echo "the standby $other scheduled pods"; ok=1; fi
echo "leader $leader; killing it"
kill -9 "$(cat "$E2E_DIR/$leader.pid")"
t0=$(date +%s)
"$DRIVER" pods <<'S' || exit 1
20 second e2e gpu:1
S
"$DRIVER" wait-bound 40 60 || ok=1
t1=$(date +%s)
new=$("$K" get lease gpusched -n kube-system -o jsonpath='{.spec.holderIdentity}')
echo "new leader $new after $((t1 - t0)) s (lease 6 s)"
[ "$new" = "$other" ] || { echo "lease holder is '$new', expected $other"; ok=1; }
# within the lease time plus a retry period and the bind itself
[ $((t1 - t0)) -le 12 ] || { echo "takeover took $((t1 - t0)) s"; ok=1; }
"$DRIVER" verify --expect-bound 40 --expect-unschedulable 0 || ok=1
# a clean stop releases the Lease: a standby that would wait out 60 s takes it at once
"$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --leader-elect true --lease-duration 60 --renew-deadline 40 --retry-period 1 \
    --identity replica-c --http-port 0 > "$E2E_DIR/replica-c.log" 2>&1 &
echo $! > "$E2E_DIR/replica-c.pid"
sleep 2
t0=$(date +%s)
kill -TERM "$(cat "$E2E_DIR/$other.pid")"
holder=""
for i in $(seq 1 60); do
    holder=$("$K" get lease gpusched -n kube-system -o jsonpath='{.spec.holderIdentity}')
    [ "$holder" = replica-c ] && break
    sleep 0.5
done
t1=$(date +%s)
echo "after a clean stop of $other: holder '$holder' after $((t1 - t0)) s (replica-c's lease 60 s)"
grep -q "released lease" "$E2E_DIR/$other.log" || { echo "$other did not release the lease"; ok=1; }
[ "$holder" = replica-c ] && [ $((t1 - t0)) -le 15 ] ||
    { echo "replica-c did not take the released lease at once"; ok=1; }
kill "$(cat "$E2E_DIR/replica-c.pid")" 2>/dev/null
[ $ok -eq 0 ] || tail -20 "$E2E_DIR/$other.log"
[ $ok -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $ok
