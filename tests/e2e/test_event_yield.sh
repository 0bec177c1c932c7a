#!/usr/bin/env bash
# Events give way to binds (sched/binder.h): while a bind is in flight, gpusched's Events wait,
# up to GS_EVENT_YIELD_S (5 s) after they were queued, so that a burst of binds has the API
# server to itself and its Events follow. gpusched runs behind a plain HTTP front
# (holdproxy.py) that holds the Binding of pod ev/held-K while the test lets it:
#   1. held-K is decided and its Binding held at the front; then free-K is created, and binds;
#   2. through the hold, no Event was POSTed (free-K's Scheduled Event waits for held-K's bind);
#   3. let go: held-K binds, and both pods' Scheduled Events are written after it.
# The order is judged only when the hold was let go within 4.5 s of free-K's creation (the Event
# may go after 5 s); a slower attempt is tried again with new pods, three times at most.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/tenancy.sh"

e2e_ready_node ev-0 || exit 1
"$K" create namespace ev > /dev/null || exit 1

# the front: gpusched's own identity upstream, the held pods' Bindings held
HOLD="$E2E_DIR/hold-binding"
LOG="$E2E_DIR/proxy.log"
touch "$LOG"
e2e_front "POST /api/v1/namespaces/ev/pods/held-" "$HOLD" "$LOG" ||
    { tn_fail "the front did not come up"; tn_done; }
"$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/front.kubeconfig" --leader-elect false \
    --http-port 0 > "$E2E_DIR/scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/scheduler.pid"

pod() { # NAME: a pod for gpusched, as a Deployment writes one
    "$K" create -f - > /dev/null <<Y
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "$1", "namespace": "ev", "labels": {"app": "web"}},
 "spec": {"schedulerName": "gpusched",
          "containers": [{"name": "web", "image": "registry.invalid/web:1",
                          "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                          "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}
Y
}
bound() { [ -n "$("$K" get pod -n ev "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null)" ]; }
logged() { grep -qxF "$1" "$LOG"; }
# EVENTS-POSTed between the line FROM and the line TO of the front's log (TO empty: to the end)
posts_between() {
    awk -v f="$1" -v t="$2" '$0 == f { on = 1; next } t != "" && $0 == t { on = 0 }
        on && index($0, "POST /apis/events.k8s.io/v1/namespaces/ev/events") == 1 { n++ }
        END { print n + 0 }' "$LOG"
}
scheduled_event() { # POD: it has a Scheduled Event
    "$K" get events.v1.events.k8s.io -n ev -o json | python3 -c '
import json, sys
sys.exit(0 if any(e.get("reason") == "Scheduled" and e["regarding"]["name"] == sys.argv[1]
                  for e in json.load(sys.stdin)["items"]) else 1)' "$1"
}

judged=0
for k in 1 2 3; do
    H="/api/v1/namespaces/ev/pods/held-$k/binding"
    touch "$HOLD"
    pod "held-$k" || exit 1
    tn_wait 60 logged "held $H" || { tn_fail "the Binding of held-$k never reached the front"; break; }
    t1=$(tn_now_ms)
    pod "free-$k" || exit 1
    tn_wait 60 bound "free-$k" || { tn_fail "free-$k was not bound while held-$k's Binding was held"; break; }
    rm -f "$HOLD"
    t2=$(tn_now_ms)
    during=$(posts_between "held $H" "released $H")
    tn_wait 60 bound "held-$k" || { tn_fail "held-$k was not bound once let go"; break; }
    both_written() { [ "$(posts_between "held $H" "")" -ge 2 ]; }
    tn_wait 60 both_written || { tn_fail "the two Scheduled Events were not written"; break; }
    for p in "held-$k" "free-$k"; do
        tn_wait 30 scheduled_event "$p" || tn_fail "$p has no Scheduled Event"
    done
    echo "  attempt $k: let go $((t2 - t1)) ms after free-$k was created; Events POSTed while held: $during, after: $(posts_between "released $H" "")"
    if [ $((t2 - t1)) -ge 4500 ]; then
        echo "  (let go too late to judge the order: the Event may go after 5 s; again with new pods)"
        continue
    fi
    judged=1
    [ "$during" = 0 ] && echo "ok   no Event written while held-$k's bind was in flight; free-$k's Scheduled Event followed it" ||
        tn_fail "$during Events POSTed while held-$k's Binding was held (free-$k's Scheduled Event did not wait for the bind)"
    break
done
[ "$judged" = 1 ] || tn_fail "no attempt let the hold go within 4.5 s of the free pod's creation"
tn_done
