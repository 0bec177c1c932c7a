#!/usr/bin/env bash
# Runs every benchmark of bench/ and prints their JSON lines.
set -euo pipefail
build="${1:-build}"
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${GS_SHARED_DIR:-$root/../shared}"
"$build/bench_engine"
"$build/bench_cycle"
"$build/bench_topo"
"$build/bench_constraints"
"$build/bench_tenancy"
"$build/bench_volumes"
"$build/bench_snapshot" "$root/tests/data/nodes/a100-whole.json"
"$build/bench_sim" "$shared"
"$root/bench/agent_footprint.sh" "$build/gpusched"
