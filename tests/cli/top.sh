#!/usr/bin/env bash
# `gpusched top` without a cluster: --help, bad flags (exit 2), a scheduler that cannot be
# reached or is not one (exit 1, saying which URL and why), and one frame (--once) drawn from
# a /ui/state document served by a plain HTTP server: MIG slices with their holders, the pods
# sharing a GPU, a queue's shares, a pending pod's reason and message, the latest events, each
# line within --width. The live frames against a real scheduler are e2e_test_top (tmux).
. "$(dirname "$0")/lib.sh"
command -v python3 > /dev/null || skip "no python3"
expect 0 "$GS" top --help && has "$TMP/out" "usage: gpusched top" && has "$TMP/out" "--interval"
expect 0 "$GS" --help && has "$TMP/out" "top "
expect 2 "$GS" top --frob && has "$TMP/err" "unknown argument '--frob'"
expect 2 "$GS" top --interval 0 && has "$TMP/err" "--interval '0': expected a number in 0.2..3600"
expect 2 "$GS" top --interval soon
expect 2 "$GS" top --width 10
expect 2 "$GS" top --server && has "$TMP/err" "missing value for '--server'"
expect 2 "$GS" top --server ftp://127.0.0.1:1 && has "$TMP/err" "expected an http:// or https:// URL"
expect 2 "$GS" top extra
# nothing listens there
PORT=$("$SRC/tests/free-port.py")
expect 1 "$GS" top --once --server "http://127.0.0.1:$PORT" &&
    has "$TMP/err" "gpusched top: cannot read the scheduler's state: GET http://127.0.0.1:$PORT/ui/state:"
expect 1 "$GS" top --once --server "http://127.0.0.1:$PORT" --interval 1
# a plain HTTP server: 404, then a document that is not the state, then the state
mkdir -p "$TMP/www/ui" "$TMP/www2/ui"
python3 -m http.server --bind 127.0.0.1 --directory "$TMP/www" "$PORT" > "$TMP/http.log" 2>&1 &
HTTP=$!
trap 'st=$?; kill $HTTP 2>/dev/null; (exit $st); gs__cli_exit' EXIT
for i in $(seq 1 50); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
    sleep 0.1
done
expect 1 "$GS" top --once --server "http://127.0.0.1:$PORT/" && has "$TMP/err" "ui/state: HTTP 404"
echo '{"nodes": []}' > "$TMP/www/ui/state"
expect 1 "$GS" top --once --server "http://127.0.0.1:$PORT" && has "$TMP/err" "not a gpusched /ui/state document"
echo '{"version": 1, "nodes": [' > "$TMP/www/ui/state"
expect 1 "$GS" top --once --server "http://127.0.0.1:$PORT" && has "$TMP/err" "invalid JSON"
cat > "$TMP/www/ui/state" <<'J'
{"version": 1, "generation": 7, "time": 1764000000, "scheduler": "gpusched", "mode": "scheduler",
 "leader": true, "synced": true, "dynamic_mig": false,
 "nodes": [
  {"name": "h100-000", "model": "H100-80GB", "ready": true, "cordoned": false, "layout_guessed": false,
   "gpus": [{"index": 0, "model": "H100-80GB", "mode": "mig", "healthy": true, "recarving": false,
             "memory_mib": 81559, "allocated": 0.43, "memory_slices": 8,
             "slices": [{"profile": "3g.40gb", "start": 0, "size": 4, "holder": "team-a/infer-0", "held": false},
                        {"profile": "3g.40gb", "start": 4, "size": 4, "holder": null, "held": false}]},
            {"index": 1, "model": "H100-80GB", "mode": "mig", "healthy": true, "recarving": true,
             "memory_mib": 81559, "allocated": 0, "memory_slices": 8,
             "slices": [{"profile": "7g.80gb", "start": 0, "size": 8, "holder": null, "held": true}]}]},
  {"name": "l40s-000", "model": "L40S", "ready": false, "cordoned": true, "layout_guessed": false,
   "gpus": [{"index": 0, "model": "L40S", "mode": "timeslice", "healthy": true, "recarving": false,
             "memory_mib": 49152, "allocated": 0.5, "replicas": 4, "replicas_used": 2,
             "holders": [{"pod": "team-b/nb-0", "share": "replica"}, {"pod": "team-b/nb-1", "share": "replica"}]}]}],
 "queues": [{"name": "team-a", "parent": "", "weight": 1, "priority": 0, "borrowing": true,
             "resources": [{"resource": "gpusched.io/gpu-units", "unit": "GPU-equivalents",
                            "deserved": 1, "used": 1.5, "borrowed": 0.5, "limit": null}]}],
 "pending": [{"namespace": "team-a", "pod": "b200", "queue": "team-a", "priority": 0, "reason": "selector",
              "message": "0/2 nodes fit: 2 node selector mismatch", "nominated": ""}],
 "events": [{"seq": 1, "time": 1764000000, "kind": "bind", "namespace": "team-a", "pod": "infer-0",
             "node": "h100-000", "devices": "mig=0:3g.40gb@0"},
            {"seq": 2, "time": 1764000001, "kind": "preempt", "namespace": "team-a", "pod": "crit",
             "node": "h100-000", "priority": 1000, "victims": ["team-b/low-0", "team-b/low-1"],
             "gpu_hours": 0.5, "recarving": true},
            {"seq": 3, "time": 1764000002, "kind": "recarve", "node": "h100-000", "gpu": 1,
             "from": "3g.40gb@0,3g.40gb@4", "to": "7g.80gb@0", "generation": 3}]}
J
expect 0 "$GS" top --once --width 90 --server "http://127.0.0.1:$PORT"
for want in "gpusched top  http://127.0.0.1:$PORT" "generation 7" "NODES (2)" "h100-000  H100-80GB  Ready" \
    "[0:3g.40gb@0 team-a/infer-0]" "[0:3g.40gb@4 free]" "re-carving [1:7g.80gb@0 in use]" \
    "l40s-000  L40S  NotReady  cordoned" "timeslice x4" "team-b/nb-0 (replica)" "QUEUES (1)" \
    "team-a  weight 1  priority 0  borrowing" \
    "gpusched.io/gpu-units    [============|+++++++] used 1.5 of 1 deserved, 0.5 borrowed" \
    "PENDING (1)" "team-a/b200  queue team-a  priority 0  selector" \
    "      0/2 nodes fit: 2 node selector mismatch" "EVENTS (3)" \
    "bind    team-a/infer-0 -> h100-000 mig=0:3g.40gb@0" \
    "preempt team-a/crit on h100-000 (re-carving): evicted team-b/low-0" \
    "recarve h100-000 GPU 1: 3g.40gb@0,3g.40gb@4 -> 7g.80gb@0"; do
    has "$TMP/out" "$want"
done
# newest event first; no colour into a file; every line within the width
[ "$(grep -n 'recarve h100' "$TMP/out" | cut -d: -f1)" -lt "$(grep -n 'bind    team-a' "$TMP/out" | cut -d: -f1)" ] &&
    ok || fail "events are not newest first"
grep -q $'\x1b' "$TMP/out" && fail "escape sequences in a file" || ok
awk 'length($0) > 90 { bad = 1; print "line over 90 columns: " $0 } END { exit bad }' "$TMP/out" && ok ||
    fail "lines over the width"
finish
