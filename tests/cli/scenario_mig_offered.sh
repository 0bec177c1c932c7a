#!/usr/bin/env bash
# A MIG profile no node group offers is an error at its line, in sim and advise alike, naming
# the profile, where it is, the node groups' real profiles and the closest; the article's H200
# sizes ("7 x 20 GB", "2 x 70 GB") get NVIDIA's names.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/h200.yaml" <<'Y'
name: h200
duration: 4h
warmup: 30m
node_groups:
  - {name: h200, gpu: H200-141GB, nodes: 1, gpus: 8, mig_layout: {"1g.18gb": 7}}
tenants: [{name: a}]
classes:
  - {name: small, tenant: a, kind: online-inference, priority: gpu-low,
     arrival: {process: poisson, per_hour: 4}, duration: {dist: fixed, mean: 1h},
     request: {gpus: 1, mig: 1g.18gb, gpu_memory: 10Gi}, util: 0.5}
  - {name: big, tenant: a, kind: training, priority: gpu-low,
     arrival: {process: poisson, per_hour: 1}, duration: {dist: fixed, mean: 1h},
     request: {gpus: 1, mig: 3g.70gb, gpu_memory: 60Gi}, util: 0.9}
Y
want="h200.yaml:13: classes[1].request.mig: '3g.70gb': no node group offers it"
hint="3g.70gb is not an H200-141GB profile; H200-141GB offers 1g.18gb, 1g.18gb+me, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb (closest: 3g.71gb)"
expect 2 "$GS" sim scenario "$TMP/h200.yaml" && { has "$TMP/err" "$want"; has "$TMP/err" "$hint"; }
expect 2 "$GS" advise scenario "$TMP/h200.yaml" && { has "$TMP/err" "$want"; has "$TMP/err" "$hint"; }
sed 's/mig: 3g.70gb/mig: 3g.71gb/' "$TMP/h200.yaml" > "$TMP/ok.yaml"
expect 0 "$GS" sim scenario "$TMP/ok.yaml"
# a profile that no MIG-capable group has at all: the groups' GPUs do not do MIG
sed 's/gpu: H200-141GB, nodes: 1, gpus: 8, mig_layout: {"1g.18gb": 7}/gpu: L40S, nodes: 1, gpus: 4/' \
    "$TMP/ok.yaml" > "$TMP/l40s.yaml"
expect 2 "$GS" sim scenario "$TMP/l40s.yaml" &&
    has "$TMP/err" "'1g.18gb': no node group offers it, so no MIG strategy can serve the class (L40S-48GB does not support MIG)"
# the article's 7 x 20 GB written as a node group's layout
sed 's/mig_layout: {"1g.18gb": 7}/mig_layout: {"1g.20gb": 7}/' "$TMP/ok.yaml" > "$TMP/layout.yaml"
expect 2 "$GS" sim scenario "$TMP/layout.yaml" && {
    has "$TMP/err" "layout.yaml:5:"
    has "$TMP/err" "1g.20gb is not an H200-141GB profile"
    has "$TMP/err" "(closest: 1g.18gb)"
}
finish
