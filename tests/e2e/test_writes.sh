#!/usr/bin/env bash
# The API writes beyond binding that preemption and the node agent rely on, through
# gpusched's client against the real kube-apiserver: a delete with a stale UID precondition
# is refused with 409 and the pod stays; the pod's status takes a nominatedNodeName; a node
# takes a label and a cordon (spec.unschedulable) and gives both back; a delete with the
# pod's own UID succeeds.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
echo "1 w A100-80GB 8 whole" | "$DRIVER" nodes || exit 1
if "$DRIVER" writes w-000; then echo "1 passed, 0 failed"; exit 0; fi
echo "0 passed, 1 failed"
exit 1
