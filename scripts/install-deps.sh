#!/usr/bin/env bash
# Installs the Debian packages gpusched needs to build and test. Idempotent: it only
# calls apt-get when a package is missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev
      libfyaml-dev libjansson-dev libcriterion-dev libcurl4-openssl-dev libmicrohttpd-dev
      libgrpc-dev libprotobuf-c-dev protobuf-c-compiler
      openssl python3
      ca-certificates
      containerd runc containernetworking-plugins iptables conntrack iproute2
      chromium chromium-driver tmux)
# the line before: the real node of the end-to-end suite (tests/e2e/node.sh): Debian's containerd
# (1.6, accepted by the v1.37 kubelet) and runc, the CNI plugins, and what kube-proxy needs;
# ca-certificates: the bundle `make image` puts in the image; the last line: the browser and
# the terminal the dashboard's tests drive (e2e_test_dashboard: headless Chromium through
# chromedriver; e2e_test_top: gpusched top in tmux)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
