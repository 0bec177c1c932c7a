#!/usr/bin/env bash
# One rule for input files across every command that reads one: a missing or oversized file the
# user names is bad input, exit 2 with the file in the message (docs/reference/commands.md);
# and each command's errors carry its own name (explain's are not "gpusched scheduler").
. "$(dirname "$0")/lib.sh"
# sparse: larger than every reader's bound (8 MiB YAML, 64 MiB openb CSV, 512 MiB --from JSON)
truncate -s 600M "$TMP/big.yaml" || skip "no sparse files here"
printf '{"gpus": [{"model": "H100-80GB"}]}\n' > "$TMP/gpus.json"
for f in "$TMP/missing.yaml" "$TMP/big.yaml"; do
    n="$(basename "$f")"
    while IFS= read -r cmd; do
        # shellcheck disable=SC2086 # the command's words split on purpose
        expect 2 "$GS" ${cmd//FILE/$f} && has "$TMP/err" "$n"
    done <<C
sim scenario FILE
sim openb --nodes FILE --pods FILE
sim openb-variant --nodes FILE --pods FILE --variant gpushare=10 --out $TMP/v.csv
advise scenario FILE
advise cluster --from FILE
mig validate FILE
dpconfig validate FILE
scheduler --kubeconfig FILE
scheduler --mig-config FILE
extender --kubeconfig FILE
explain --kubeconfig FILE
agent inspect --fake FILE
agent run --fake $TMP/gpus.json --dp-config FILE --duration 1
agent run --fake $TMP/gpus.json --mig-config FILE --duration 1
agent run --fake $TMP/gpus.json --monitor-config FILE --duration 1
agent mig-plan --fake $TMP/gpus.json --mig-config FILE --config mixed
C
done
# each command names itself
expect 2 "$GS" explain --kubeconfig "$TMP/missing.yaml" && has "$TMP/err" "gpusched explain: kubeconfig:"
expect 2 "$GS" explain --policy nope && has "$TMP/err" "gpusched explain: --policy 'nope'"
expect 2 "$GS" extender --kubeconfig "$TMP/missing.yaml" && has "$TMP/err" "gpusched extender:"
expect 2 "$GS" scheduler --kubeconfig "$TMP/missing.yaml" && has "$TMP/err" "gpusched scheduler:"
if grep -q "gpusched scheduler" "$TMP/err" && "$GS" explain --kubeconfig "$TMP/missing.yaml" 2>&1 |
    grep -q "gpusched scheduler"; then
    fail "explain's errors say gpusched scheduler"
else ok; fi
finish
