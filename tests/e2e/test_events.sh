#!/usr/bin/env bash
# Events as kube-scheduler writes them, read back from the real API server: a pod that cannot
# be placed (its nodeSelector names a GPU model no node has) is tried again and again with
# backoff; after 5 attempts (gpusched's own counter of unschedulable attempts, not a sleep) it
# has exactly one FailedScheduling Event (events.k8s.io/v1), whose series.count grew with the
# attempts, keeping its name and eventTime, its series.lastObservedTime later. A second pod
# waiting for another reason has its own Event. Deleted (as the API server's TTL deletes
# Events), the Event is written again whole, series and all, at the next attempt. A pod that
# fits gets one Scheduled Event with no series.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
1 a100 A100-80GB 8 whole
S
"$K" create namespace ml > /dev/null
"$K" create namespace other > /dev/null
tn_start || exit 1
pod() { # NAME PRODUCT|- GPUS: a pod asking GPUS whole GPUs (of the product: nodeSelector)
    python3 - "$@" <<'P'
import json, sys
name, product, gpus = sys.argv[1:4]
spec = {"schedulerName": "gpusched",
        "containers": [{"name": "main", "image": "registry.invalid/train:1",
                        "resources": {"limits": {"cpu": "2", "memory": "8Gi",
                                                 "nvidia.com/gpu": gpus}}}]}
if product != "-":
    spec["nodeSelector"] = {"nvidia.com/gpu.product": product}
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": name, "namespace": "ml"}, "spec": spec}))
P
}
attempts() {
    curl -sf "http://127.0.0.1:$TN_PORT/metrics" |
        awk '/^gpusched_schedule_attempts_total\{result="unschedulable"\}/ {print $2}'
}
attempts_ge() { [ "$(attempts)" -ge "$1" ] 2>/dev/null; }
# events REASON: the Events of that reason in ml, one line each: "pod name count eventTime last"
events() {
    "$K" get events.v1.events.k8s.io -n ml -o json | python3 -c '
import json, sys
for e in json.load(sys.stdin)["items"]:
    if e.get("reason") != sys.argv[1]:
        continue
    s = e.get("series") or {}
    print(e["regarding"]["name"], e["metadata"]["name"], s.get("count", 1), e.get("eventTime"),
          s.get("lastObservedTime", "-"))' "$1"
}
# count_ge POD N: the pod's one FailedScheduling Event has series.count >= N
count_ge() {
    local c
    c=$(events FailedScheduling | awk -v p="$1" '$1 == p {print $3}')
    [ -n "$c" ] && [ "$(echo "$c" | wc -l)" = 1 ] && [ "$c" -ge "$2" ]
}

pod b200 NVIDIA-B200 1 | "$K" create -f - > /dev/null || tn_fail "creating ml/b200"
tn_wait 120 attempts_ge 5 || tn_fail "fewer than 5 unschedulable attempts in 120 s ($(attempts))"
echo "ok   $(attempts) unschedulable attempts of ml/b200"
tn_wait 30 count_ge b200 5 || tn_fail "ml/b200 has no single FailedScheduling Event with series.count >= 5"
events FailedScheduling > "$E2E_DIR/ev1.txt"
sed 's/^/  FailedScheduling: /' "$E2E_DIR/ev1.txt"
n=$(awk '$1 == "b200"' "$E2E_DIR/ev1.txt" | wc -l)
[ "$n" = 1 ] || tn_fail "ml/b200 has $n FailedScheduling Events, want exactly 1"
read -r _ name1 count1 time1 last1 < <(awk '$1 == "b200"' "$E2E_DIR/ev1.txt")
[ "${count1:-0}" -ge 2 ] || tn_fail "series.count $count1, want >= 2"
[[ "$last1" > "$time1" ]] || tn_fail "series.lastObservedTime $last1 is not after eventTime $time1"
echo "ok   ml/b200: one FailedScheduling Event $name1, series.count $count1 ($time1 .. $last1)"

# another reason, another Event: 9 GPUs fit no node
pod big - 9 | "$K" create -f - > /dev/null || tn_fail "creating ml/big"
a=$(attempts)
tn_wait 60 attempts_ge $((a + 3)) || tn_fail "no 3 more attempts"
tn_wait 30 count_ge big 2 || tn_fail "ml/big has no single FailedScheduling Event with series.count >= 2"
events FailedScheduling > "$E2E_DIR/ev2.txt"
sed 's/^/  FailedScheduling: /' "$E2E_DIR/ev2.txt"
[ "$(awk '$1 == "b200"' "$E2E_DIR/ev2.txt" | wc -l)" = 1 ] || tn_fail "ml/b200 got a second Event"
read -r _ name2 count2 time2 _ < <(awk '$1 == "b200"' "$E2E_DIR/ev2.txt")
[ "$name2" = "$name1" ] && [ "$time2" = "$time1" ] || tn_fail "ml/b200's Event changed name or eventTime"
echo "ok   ml/big has its own Event; ml/b200's is the same one, series.count $count2"

# the Event deleted (the API server's TTL does it to old Events): written again whole
"$K" delete events.v1.events.k8s.io -n ml "$name1" > /dev/null || tn_fail "deleting $name1"
count_back() {
    local c
    c=$(events FailedScheduling | awk '$1 == "b200" && $2 == n {print $3}' n="$name1")
    [ -n "$c" ] && [ "$c" -gt "$count2" ]
}
# a tenancy change gives every pending pod another look now (rather than at its 60 s backoff)
"$K" create quota q -n other --hard=pods=10 > /dev/null
tn_wait 60 count_back || tn_fail "ml/b200's Event was not written again after it was deleted"
events FailedScheduling | awk '$1 == "b200"' | sed 's/^/  again: /'

# a pod that fits: one Scheduled Event, no series
pod fits - 1 | "$K" create -f - > /dev/null || tn_fail "creating ml/fits"
tn_wait 30 sh -c "[ -n \"\$(\"$K\" get pod -n ml fits -o jsonpath='{.spec.nodeName}')\" ]" ||
    tn_fail "ml/fits was not bound"
tn_wait 10 sh -c "\"$K\" get events.v1.events.k8s.io -n ml -o json | grep -q '\"Scheduled\"'"
s=$(events Scheduled | awk '$1 == "fits"')
echo "  Scheduled: $s"
[ "$(echo "$s" | grep -c .)" = 1 ] && [ "$(echo "$s" | awk '{print $3}')" = 1 ] ||
    tn_fail "ml/fits: want one Scheduled Event without a series"
tn_done
