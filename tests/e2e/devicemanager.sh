# tests/e2e/devicemanager.sh - sourced first by the tests that run the kubelet's own device
# manager (tools/devicemanager, built by build-control-plane.sh) against our device plugin:
# the test runs again in a mount namespace of its own with a tmpfs at /var/lib/kubelet, so that
# no real kubelet's sockets are touched (exits 77, skipped, where none can be made). Sets GS,
# E2E_SRC, BIN, H (the harness), DIR (device-plugins), D (a scratch folder named after
# DM_NAME), OK and fail; removes D and stops $apid and $hpid at exit.
if [ -z "${GS_DM_NS:-}" ]; then
    if [ "$(id -u)" = 0 ]; then ns=(unshare -m); else ns=(unshare -Urm); fi
    "${ns[@]}" true 2>/dev/null || { echo "no mount namespace here: skipped"; exit 77; }
    exec "${ns[@]}" env GS_DM_NS=1 bash "$0" "$@"
fi
GS="$1"
E2E_SRC="$(cd "$(dirname "$0")" && pwd)"
BIN="$("$E2E_SRC/build-control-plane.sh")" || { echo "tools build failed"; exit 1; }
H="$BIN/devicemanager-v1.37.2"
[ -x "$H" ] || { echo "the kubelet device manager did not build: skipped"; exit 77; }
mkdir -p /var/lib/kubelet 2>/dev/null
mount --make-rprivate / 2>/dev/null
mount -t tmpfs tmpfs /var/lib/kubelet 2>/dev/null || { echo "cannot mount /var/lib/kubelet: skipped"; exit 77; }
mkdir -p /var/lib/kubelet/device-plugins
DIR=/var/lib/kubelet/device-plugins
D="$(mktemp -d "/tmp/gpusched-${DM_NAME:-dm}.XXXXXX")"
OK=0
fail() { echo "FAIL: $*"; OK=1; }
apid=
hpid=
cleanup() { kill $apid $hpid 2>/dev/null; wait $apid 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
