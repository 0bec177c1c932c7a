#!/usr/bin/env bash
# Advice built on the catalog: a B200's 3g.90gb and 4g.90gb slices have their memory (they
# had 0 MiB, so a 60Gi class was kept on whole GPUs although a slice holds it).
. "$(dirname "$0")/lib.sh"
cat > "$TMP/b200.yaml" <<'Y'
name: b200
duration: 6h
warmup: 30m
node_groups:
  - {name: b200, gpu: B200, nodes: 2, gpus: 8}
tenants: [{name: a}]
classes:
  - {name: llm, tenant: a, kind: online-inference, priority: gpu-critical,
     arrival: {process: poisson, per_hour: 30}, duration: {dist: exponential, mean: 30m},
     request: {gpus: 1, gpu_memory: 60Gi}, util: 0.3}
Y
expect 0 "$GS" advise scenario "$TMP/b200.yaml" --out "$TMP/a" && {
    has "$TMP/out" "decision tree: B200-180GB supports MIG? yes"
    if grep -q "whole GPUs kept for llm" "$TMP/out"; then
        fail "a 60Gi class is kept on whole B200s although a 3g.90gb slice holds it"
    else ok; fi
}
# more than half the largest slice: whole GPUs, as before
sed 's/gpu_memory: 60Gi/gpu_memory: 100Gi/' "$TMP/b200.yaml" > "$TMP/big.yaml"
expect 0 "$GS" advise scenario "$TMP/big.yaml" --out "$TMP/b" &&
    has "$TMP/out" "whole GPUs kept for llm (more memory or GPUs than a slice holds)"
# a class that asks the slice gets a MIG layout of it
sed 's/request: {gpus: 1, gpu_memory: 60Gi}/request: {gpus: 1, mig: 3g.90gb, gpu_memory: 60Gi}/' \
    "$TMP/b200.yaml" > "$TMP/slice.yaml"
expect 0 "$GS" advise scenario "$TMP/slice.yaml" --out "$TMP/c" && has "$TMP/out" "MIG 2x3g.90gb"
finish
