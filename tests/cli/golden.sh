#!/usr/bin/env bash
# Golden scenarios (tests/golden/*.yaml): tenancy in the simulator against figures worked out
# by hand in each file's header. Strategies with priority (mig-priority, dynamic-mig, all) run queues,
# preemption and reclaim; the others do not, and must show the difference.
. "$(dirname "$0")/lib.sh"
G="$SRC/tests/golden"
for f in reclaim priority-mig gang gang-preempt; do
    expect 0 "$GS" sim scenario "$G/$f.yaml" --format json && cp "$TMP/out" "$TMP/$f.json"
done
python3 - "$TMP" <<'PY' && ok || fail "golden figures"
import json, sys
d = {f: {s["strategy"]: s for s in json.load(open("%s/%s.json" % (sys.argv[1], f)))["strategies"]}
     for f in ("reclaim", "priority-mig", "gang", "gang-preempt")}
bad = []
def cls(s, name):
    return [c for c in s["classes"] if c["class"] == name][0]
def check(cond, what):
    if not cond:
        bad.append(what)
# reclaim: 8 victims, ~8 GPU-hours (each ran 1 h less the seconds it took to start), halves
for st in ("mig-priority", "dynamic-mig", "all"):
    s = d["reclaim"][st]; t = s["tenancy"]
    check(t["preemptions"] == 8 and t["victims"] == 8, "%s reclaim: %d preemptions" % (st, t["preemptions"]))
    check(7.95 < t["lost_gpu_hours"] <= 8.0, "%s reclaim: lost %.4f GPU-h" % (st, t["lost_gpu_hours"]))
    a, b = t["teams"]
    check(b["share_over_time"][10] == 1.0 and a["share_over_time"][10] == 0.0, "%s: before 1h team-b holds all" % st)
    check(a["share_over_time"][-1] == 0.5 and b["share_over_time"][-1] == 0.5, "%s: after reclaim 50/50" % st)
    check(cls(s, "a-train")["started"] == 8 and cls(s, "a-train")["wait_p99_s"] == 0, "%s: team-a waits" % st)
for st in ("exclusive", "static-mig"):
    check("tenancy" not in d["reclaim"][st] and cls(d["reclaim"][st], "a-train")["started"] == 0,
          "%s: without tenancy team-a must wait" % st)
# priority on MIG slots, minimum run time 50m: the job started at 10m goes
for st in ("mig-priority", "dynamic-mig", "all"):
    s = d["priority-mig"][st]; t = s["tenancy"]
    check(t["preemptions"] == 1 and t["victims"] == 1, "%s mig: %d preemptions" % (st, t["preemptions"]))
    check(abs(t["lost_gpu_hours"] - 3000 / 3600 * 0.5) < 1e-6, "%s mig: lost %.6f" % (st, t["lost_gpu_hours"]))
    check(cls(s, "online")["started"] == 1 and cls(s, "online")["wait_p99_s"] == 0, "%s: online waits" % st)
check(cls(d["priority-mig"]["static-mig"], "online")["started"] == 0, "static-mig must not preempt")
# gangs: 4 x 8 GPUs never starts and holds nothing; 3 x 8 starts at once on arrival
for st, s in d["gang"].items():
    check(cls(s, "gang4")["started"] == 0 and cls(s, "gang4")["waiting_at_end"] == 4, "%s gang4" % st)
    check(cls(s, "gang3")["started"] == 3 and cls(s, "gang3")["wait_p99_s"] == 0, "%s gang3" % st)
# a gang preempts whole: 4 x 8 never fits and evicts nobody; 2 x 8 evicts the two youngest
for st, s in d["gang-preempt"].items():
    t = s.get("tenancy")
    if st in ("mig-priority", "dynamic-mig", "all"):
        check(t["preemptions"] == 1 and t["victims"] == 2, "%s gang-preempt: %d preemptions" % (st, t["preemptions"]))
        check(abs(t["lost_gpu_hours"] - 12.0) < 1e-6, "%s gang-preempt: lost %.6f" % (st, t["lost_gpu_hours"]))
        check(cls(s, "gang2")["started"] == 2 and cls(s, "gang2")["wait_p99_s"] == 0, "%s: gang2 waits" % st)
    else:
        check(t is None and cls(s, "gang2")["started"] == 0, "%s: without priority gang2 must wait" % st)
    check(cls(s, "gang4")["started"] == 0, "%s: gang4 must never start" % st)
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY
finish
