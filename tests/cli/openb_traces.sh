#!/usr/bin/env bash
# `gpusched sim openb` over every shipped trace (the pod lists in ../shared/data/openb), seeds
# 42-51, tune 1.3: gpusched leaves no more GPU unallocated than fgd on any of them (mean over
# the seeds), and closes on average at least a quarter of fgd's distance to the offline packer.
# Prints the per-trace figures and the average shares of the gaps closed.
. "$(dirname "$0")/lib.sh"
D="$SHARED/data/openb"
[ -f "$D/openb_pod_list_default.csv" ] || skip "$D not present"
expect 0 "$GS" sim openb --nodes "$D/openb_node_list_gpu_node.csv" --pods "$D" \
    --policy fgd,gpusched,offline --seeds 42-51 --tune 1.3 --format json &&
    python3 - "$TMP/out" <<'PY' && ok || fail "gpusched against fgd on the shipped traces"
import json, os, sys
d = json.load(open(sys.argv[1]))
g = d["gpusched_against_fgd"]
rows = g["traces"]
assert len(rows) == len(d["traces"]) >= 11, (len(rows), len(d["traces"]))
worse = []
for r in rows:
    name = os.path.basename(r["pods_file"])
    closed = "-" if r["gap_closed"] is None else f"{100 * r['gap_closed']:.0f} %"
    print(f"{name:34s} fgd {r['fgd']:6.2f}  gpusched {r['gpusched']:6.2f}  "
          f"offline {r['offline']:6.2f}  bound {r['lower_bound']:5.2f}  closed {closed}")
    if r["gpusched"] > r["fgd"]:
        worse.append(name)
won = sum(r["fgd"] - r["gpusched"] for r in rows)
gap = sum(r["fgd"] - r["offline"] for r in rows)
print(f"mean share of the fgd-to-offline gap closed: {100 * g['mean_gap_closed']:.0f} % "
      f"(of the gaps summed: {100 * won / gap:.0f} %; to the offline packer's best candidate "
      f"not made from gpusched's placement: {100 * g['mean_gap_closed_without_gpusched']:.0f} %; "
      f"to the proven bound: {100 * g['mean_gap_closed_to_bound']:.0f} %)")
assert not worse, f"gpusched leaves more unallocated than fgd on {worse}"
assert g["mean_gap_closed"] >= 0.25, g["mean_gap_closed"]
PY
finish
