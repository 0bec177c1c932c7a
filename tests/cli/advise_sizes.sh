#!/usr/bin/env bash
# gpusched advise sizes: the article's cluster-size table measured, dynamic MIG among the setups
# weighed (the article's full set). A short search (--budget)
# keeps the test quick; the table in docs/simulator.md is the default run. Each size is in its
# range, the recommendation never does worse than the cluster as written (the search starts
# there), and the article's recommendation stands beside it.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" advise sizes --budget 8 --format json && cp "$TMP/out" "$TMP/s.json"
python3 - "$TMP/s.json" <<'PY' && ok || fail "sizes"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["cluster"] for r in rows] == ["< 8 GPUs", "8-32 GPUs", "32-128 GPUs", "> 128 GPUs"]
g = [r["gpus"] for r in rows]
assert g[0] < 8 and 8 <= g[1] <= 32 and 32 < g[2] <= 128 and g[3] > 128, g
assert [r["article_recommendation"] for r in rows] == ["Time Slicing", "MIG + Time Slicing",
    "MIG + priority scheduling", "the full set"]
for r in rows:
    print("%-12s %4d GPUs: %-45s used %.1f%% (exclusive %.1f%%, as written %.1f%%), online p99 %.0fs"
          % (r["cluster"], r["gpus"], r["recommendation"], 100 * r["used_share"],
             100 * r["exclusive_used_share"], 100 * r["as_written_used_share"], r["online_p99_wait_s"]))
    assert r["simulations"] <= 9
    if r["sla_met"]:
        continue
    # not within the SLA: at least no worse a wait than the cluster as written
    assert r["online_p99_wait_s"] <= r["as_written_online_p99_wait_s"] + 1e-6, r
# the small cluster has no MIG-capable GPU: no MIG in its recommendation
assert "MIG" not in rows[0]["recommendation"] and rows[0]["dynamic_mig"] is False
# the full set is weighed: dynamic MIG is recommended where it wins (the 8-32 GPU cluster's
# mixed A100s re-carved for its LLM and embedding pods), and named so
for r in rows:
    assert r["dynamic_mig"] == ("Dynamic MIG" in r["recommendation"]), r
assert rows[1]["dynamic_mig"], rows[1]
PY
expect 0 "$GS" advise sizes --print-scenario medium && has "$TMP/out" "mig_config: mixed"
expect 0 "$GS" advise sizes --print-scenario medium
cp "$TMP/out" "$TMP/medium.yaml"
expect 0 "$GS" sim scenario "$TMP/medium.yaml" --format json
expect 2 "$GS" advise sizes --print-scenario huge && has "$TMP/err" "huge"
expect 2 "$GS" advise sizes --report x.html && has "$TMP/err" "only --format"
finish
