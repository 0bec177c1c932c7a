#!/usr/bin/env bash
# Conformance of gpusched's CEL for DRA device selectors (src/formats/cel.h) to upstream's: the
# corpus tests/data/cel/conformance.txt (devices shaped as NVIDIA's DRA driver, gpusched's own
# and a device of every value kind; over a thousand expressions: every function, operator and
# macro, edge cases, errors, costly ones, and the upstream compile_test.go cases in spirit) is
# judged case by case by upstream (tools/celcheck, built from k8s.io/dynamic-resource-allocation
# v0.37.2 by build-control-plane.sh: the API server's validation, then kube-scheduler's
# evaluation) and by gpusched (celrun, beside e2e_driver: the device read by formats/draobj.c
# as the scheduler reads it). Each verdict is true, false, compile, cost or runtime; a case
# marked "!" is one gpusched refuses by design and must get "unsupported" from gpusched (its
# upstream verdict is shown, not compared). Any other difference fails the test. No cluster is
# started.
set -u
DRIVER="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/cluster.sh"
CORPUS="$HERE/../data/cel/conformance.txt"
RUN="$(dirname "$DRIVER")/celrun"
[ -x "$RUN" ] || { echo "FAIL: $RUN was not built"; echo "0 passed, 1 failed"; exit 1; }
BIN="$("$HERE/build-control-plane.sh")" || { echo "FAIL: control plane build failed"; exit 1; }
CHECK="$BIN/celcheck-v0.37.2"
[ -x "$CHECK" ] || { echo "FAIL: $CHECK was not built"; echo "0 passed, 1 failed"; exit 1; }
TMP="$(mktemp -d /tmp/gpusched-e2e.celconf.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
"$CHECK" "$CORPUS" > "$TMP/upstream.txt" || { echo "FAIL: celcheck failed on the corpus"; exit 1; }
"$RUN" "$CORPUS" > "$TMP/gpusched.txt" || { echo "FAIL: celrun failed on the corpus"; exit 1; }
python3 - "$CORPUS" "$TMP/upstream.txt" "$TMP/gpusched.txt" <<'P'
import collections, sys
corpus = open(sys.argv[1], encoding="utf-8").read().split("\n")
def verdicts(path):
    out = {}
    for line in open(path, encoding="utf-8").read().splitlines():
        num, rest = line.split(" ", 1)
        v, _, msg = rest.partition("\t")
        out[int(num)] = (v, msg)
    return out
up, us = verdicts(sys.argv[2]), verdicts(sys.argv[3])
agree, by_design, bad = collections.Counter(), 0, []
for num in sorted(up):
    uv, um = up[num]
    ov, om = us.get(num, ("missing", ""))
    text = corpus[num - 1].strip()
    if text.startswith("!"):
        if ov == "unsupported":
            by_design += 1
        else:
            bad.append((num, text, "unsupported (by design)", "", ov, om))
        continue
    if uv == ov:
        agree[uv] += 1
    else:
        bad.append((num, text, uv, um, ov, om))
if set(us) - set(up):
    bad.append((0, "cases only gpusched judged: %s" % sorted(set(us) - set(up)), "", "", "", ""))
for num, text, uv, um, ov, om in bad:
    print("FAIL: line %d: %s\n      upstream: %s %s\n      gpusched: %s %s" %
          (num, text[:300], uv, um[:200], ov, om[:200]))
total = sum(agree.values())
print("cases %d: agreed %d (%s), refused by design %d, disagreed %d" %
      (len(up), total, ", ".join("%s %d" % kv for kv in sorted(agree.items())), by_design,
       len(bad)))
if total < 1000 or not bad and min(agree.get(k, 0) for k in
                                   ("true", "false", "compile", "runtime", "cost")) == 0:
    print("FAIL: the corpus lost its breadth")
    bad.append(None)
print("1 passed, 0 failed" if not bad else "0 passed, 1 failed")
sys.exit(1 if bad else 0)
P
