#!/usr/bin/env bash
# `gpusched sim` with no arguments runs the embedded default and prints the seven strategies,
# and the article's inference pool under its HPA against a fixed replica count.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" sim && {
    for s in "Exclusive (1 pod = 1 GPU)" "Time-slicing" "MPS" "Static MIG" "MIG + priority" "Dynamic MIG + priority" \
             "All together" "seed 42" "the article states" "elastic scaling, service llm-70b-awq" \
             "the article states elastic scaling adds" \
             "All together: dynamic MIG (the cycle re-carves MIG GPUs for what is pending)" \
             "where idle GPU goes"; do has "$TMP/out" "$s"; done
    # the full set re-carves: its tenancy line counts its re-carves
    if grep -E "^tenancy, All together: .*; [1-9][0-9]* MIG re-carves" "$TMP/out" >/dev/null; then ok
    else fail "All together does not re-carve MIG"; fi
}
expect 0 "$GS" sim --format json && python3 - "$TMP/out" <<'PY' && ok || fail "json"
import json, sys
d = json.load(open(sys.argv[1]))
names = [s["strategy"] for s in d["strategies"]]
assert names == ["exclusive", "time-slicing", "mps", "static-mig", "mig-priority", "dynamic-mig", "all"], names
for s in d["strategies"]:
    for k in ("allocated_share", "used_share", "online_p99_wait_s", "usd_per_useful_gpu_hour",
              "gpu_hours", "classes"):
        assert k in s, k
    for c in s["classes"]:
        assert {"wait_p50_s", "wait_p95_s", "wait_p99_s"} <= set(c)
    # the pool autoscaled and at its fixed count serve one load; the autoscaler holds fewer
    # GPU-hours within maxReplicas
    a, f = s["services"][0], s["fixed_replicas"]["services"][0]
    assert a["class"] == f["class"] == "llm-70b-awq", a
    assert a["requests"] == f["requests"] > 0, (a, f)
    assert a["gpu_hours"] < f["gpu_hours"] and a["replicas_max"] <= 20, (s["strategy"], a, f)
    assert f["scale_ups"] == 0 and f["replicas_max"] == a["fixed_replicas"], f
assert d["seed"] == 42
# the full set is dynamic MIG: it re-carves, as dynamic-mig does
by = {s["strategy"]: s for s in d["strategies"]}
assert by["all"]["mig_recarves"] > 0, by["all"].get("mig_recarves")
# where idle GPU goes: the causes sum to the unallocated GPU-hours, which are gpu_hours x (1 - alloc)
causes = ["no_demand", "fragmentation", "quota", "too_little", "recarving", "unhealthy"]
for s in d["strategies"]:
    idle = s["idle_gpu_hours"]
    assert sorted(s["idle_gpu_hours_by_cause"]) == sorted(causes), s["idle_gpu_hours_by_cause"]
    total = sum(s["idle_gpu_hours_by_cause"].values())
    # JSON reals carry 6 significant digits
    assert abs(total - idle) <= 1e-4 * max(1, idle), (s["strategy"], total, idle)
    assert abs(idle - s["gpu_hours"] * (1 - s["allocated_share"])) <= 1e-4 * s["gpu_hours"], s["strategy"]
    assert all(v >= 0 for v in s["idle_gpu_hours_by_cause"].values()), s
PY
expect 0 "$GS" sim --report "$TMP/r.html" && {
    has "$TMP/r.html" "<svg"
    has "$TMP/r.html" "All together"
    if grep -q "http" "$TMP/r.html"; then fail "report loads from the network"; else ok; fi
}
# same seed, same figures
"$GS" sim --format json > "$TMP/a.json" && "$GS" sim --format json > "$TMP/b.json" &&
    cmp -s "$TMP/a.json" "$TMP/b.json" && ok || fail "two runs with one seed differ"
expect 0 "$GS" sim --seed 7
finish
