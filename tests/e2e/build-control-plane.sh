#!/usr/bin/env bash
# Builds the upstream control plane that gpusched's end-to-end tests run against, from pinned
# Go modules, into a cache outside the repository keyed by version (GS_E2E_CACHE, default
# ~/.cache/gpusched-e2e). Idempotent: a complete cache is reused. Prints the bin folder.
#   kube-apiserver, kube-scheduler,          k8s.io/kubernetes v1.37.2 (staging v0.37.2), one
#   kube-controller-manager, kube-proxy,     multi-call binary
#   kubelet, kubectl
#   etcd                                     go.etcd.io/etcd/server/v3 v3.6.16
#   kwok                                     sigs.k8s.io/kwok v0.8.0 and its "fast" stages
#                                            (optional but under CI=true: without it bound
#                                            pods stay Pending)
#   promcheck                                github.com/prometheus/common v0.70.0 (expfmt's
#                                            text parser, for the agent's /metrics)
#   devicemanager                            the kubelet's device manager from k8s.io/kubernetes
#                                            v1.37.2 pkg/kubelet/cm/devicemanager
#   draharness                               the kubelet's DRA manager (pkg/kubelet/cm/dra) and
#                                            plugin manager from k8s.io/kubernetes v1.37.2
#   dpharness                                k8s.io/kubelet v0.37.2 deviceplugin v1beta1 and
#                                            google.golang.org/grpc: the kubelet's side of the
#                                            device plugin protocol
#   helm                                     helm.sh/helm/v4 v4.3.1 (the chart's tests)
#   prometheus                               github.com/prometheus/prometheus v0.316.0
#                                            cmd/prometheus (the HPA test's metrics path)
#   prometheus-adapter                       sigs.k8s.io/prometheus-adapter v0.12.0 cmd/adapter
#   promqlcheck                              github.com/prometheus/prometheus v0.316.0
#                                            promql/parser: the chart's alert, dashboard and
#                                            adapter queries parsed, their metric names listed
#   celcheck                                 k8s.io/dynamic-resource-allocation v0.37.2 cel:
#                                            upstream's verdict on DRA device selectors
#   kueue                                    sigs.k8s.io/kueue v0.17.0 cmd/kueue, the manager
#                                            (its release manifests stay in the Go module
#                                            cache: kueue-v0.17.0.moddir names the folder);
#                                            optional even under CI=true (its test then fails)
# Each build prints the seconds it took on stderr; a cached tool prints nothing.
set -euo pipefail
K8S=v1.37.2
STAGING=v0.37.2
ETCD=v3.6.16
KWOK=v0.8.0
PROMCOMMON=v0.70.0
HELM=v4.3.1
PROMETHEUS=v0.316.0
ADAPTER=v0.12.0
KUEUE=v0.17.0
here="$(cd "$(dirname "$0")" && pwd)"
cache="${GS_E2E_CACHE:-$HOME/.cache/gpusched-e2e}"
out="$cache/k8s-$K8S-etcd-$ETCD-kwok-$KWOK"
bin="$out/bin"
mkdir -p "$bin" "$out/src"
# one builder at a time (parallel ctest runs, two build folders): the others wait, then reuse
exec 9>"$out/.lock"
flock 9
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
log="$out/build.log"

staging="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
cloud-provider cluster-bootstrap code-generator component-base component-helpers
controller-manager cri-api cri-client cri-streaming csi-translation-lib
dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils
pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming"

# gomod NAME REQUIRE [k8s]: the go.mod of a tool (with k8s: the staging modules pinned)
gomod() {
    printf 'module gpusched.local/e2e/%s\n\ngo 1.26\n\nrequire %s\n' "$1" "$2"
    if [ "${3:-}" = k8s ]; then
        echo
        for m in $staging; do echo "replace k8s.io/$m => k8s.io/$m $STAGING"; done
    fi
}

# go_tool TOOL BINARY [LDFLAGS...]: build tools/TOOL/*.go with the go.mod on stdin into
# $bin/BINARY
go_tool() {
    local tool="$1" binary="$2"
    shift 2
    local src="$out/src/$tool"
    mkdir -p "$src"
    rm -f "$src"/*.go # a stale file of another version of the tool would be built with it
    cp "$here/tools/$tool/"*.go "$src/"
    cat > "$src/go.mod"
    local t0=$SECONDS
    (cd "$src" && go mod tidy && go build -trimpath -ldflags "-s -w $*" -o "$bin/$binary" .) \
        >>"$log" 2>&1 || return 1
    echo "build-control-plane: built $binary in $((SECONDS - t0)) s" >&2
}

# go_pkg NAME PACKAGE BINARY [LDFLAGS...]: build an upstream main package as it is, from the
# module the go.mod on stdin requires, into $bin/BINARY (with GO_TAGS, its build tags)
go_pkg() {
    local name="$1" pkg="$2" binary="$3"
    shift 3
    local src="$out/src/$name"
    mkdir -p "$src"
    cat > "$src/go.mod"
    local t0=$SECONDS
    (cd "$src" && go build -mod=mod -trimpath ${GO_TAGS:+-tags "$GO_TAGS"} -ldflags "-s -w $*" \
        -o "$bin/$binary" "$pkg") \
        >>"$log" 2>&1 || return 1
    echo "build-control-plane: built $binary in $((SECONDS - t0)) s" >&2
}

build_k8s() {
    local c
    for c in kube-apiserver kube-scheduler kube-controller-manager kube-proxy kubelet kubectl; do
        [ -x "$bin/$c" ] || c=
        [ -n "$c" ] || break
    done
    [ -n "$c" ] && return 0
    { gomod k8s "k8s.io/kubernetes $K8S" k8s; echo "replace k8s.io/kubernetes => k8s.io/kubernetes $K8S"; } |
        go_tool k8s k8s-multi "-X k8s.io/component-base/version.gitVersion=$K8S" \
            "-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" ||
        return 1
    for c in kube-apiserver kube-scheduler kube-controller-manager kube-proxy kubelet kubectl; do
        ln -sf k8s-multi "$bin/$c"
    done
}

build_promqlcheck() {
    [ -x "$bin/promqlcheck-$PROMETHEUS" ] && return 0
    gomod promqlcheck "github.com/prometheus/prometheus $PROMETHEUS" |
        go_tool promqlcheck "promqlcheck-$PROMETHEUS"
}

build_prometheus() {
    [ -x "$bin/prometheus-$PROMETHEUS" ] && return 0
    # Prometheus' own build tags: of the service discoveries, only Kubernetes' (the others
    # pull in every cloud's SDK)
    printf 'module gpusched.local/e2e/prometheus\n\ngo 1.26\n\nrequire github.com/prometheus/prometheus %s\n' \
        "$PROMETHEUS" | GO_TAGS=remove_all_sd,enable_kubernetes_sd go_pkg prometheus \
        github.com/prometheus/prometheus/cmd/prometheus "prometheus-$PROMETHEUS"
}

build_adapter() {
    [ -x "$bin/prometheus-adapter-$ADAPTER" ] && return 0
    printf 'module gpusched.local/e2e/adapter\n\ngo 1.26\n\nrequire sigs.k8s.io/prometheus-adapter %s\n' \
        "$ADAPTER" | go_pkg adapter sigs.k8s.io/prometheus-adapter/cmd/adapter \
        "prometheus-adapter-$ADAPTER"
}

build_helm() {
    [ -x "$bin/helm-$HELM" ] && return 0
    printf 'module gpusched.local/e2e/helm\n\ngo 1.26\n\nrequire helm.sh/helm/v4 %s\n' "$HELM" |
        go_pkg helm helm.sh/helm/v4/cmd/helm "helm-$HELM" \
            "-X helm.sh/helm/v4/internal/version.version=$HELM"
}

# Kueue's manager; the test applies its release manifests (config/default, through kubectl's
# kustomize) from the module's folder in the Go module cache, recorded beside the binary
build_kueue() {
    [ -x "$bin/kueue-$KUEUE" ] && [ -d "$(cat "$bin/kueue-$KUEUE.moddir" 2>/dev/null)/config" ] &&
        return 0
    printf 'module gpusched.local/e2e/kueue\n\ngo 1.26\n\nrequire sigs.k8s.io/kueue %s\n' "$KUEUE" |
        go_pkg kueue sigs.k8s.io/kueue/cmd/kueue "kueue-$KUEUE" \
            "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE" || return 1
    (cd "$out/src/kueue" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue) > "$bin/kueue-$KUEUE.moddir"
}

build_etcd() {
    [ -x "$bin/etcd" ] && return 0
    gomod etcd "go.etcd.io/etcd/server/v3 $ETCD" | go_tool etcd etcd
}

build_kwok() {
    [ -x "$bin/kwok" ] && [ -f "$bin/kwok-stages.yaml" ] && return 0
    # a failed build is tried again next time (a marker from older versions is ignored)
    rm -f "$out/kwok.unavailable"
    gomod kwok "sigs.k8s.io/kwok $KWOK" | go_tool kwok kwok || return 1
    # kwok's own "fast" stages from the same module: nodes turn Ready, pods Running, deletions
    # finish
    local dir
    dir="$(cd "$out/src/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)" || return 1
    local f
    for f in node/fast/node-initialize.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml \
        pod/fast/pod-delete.yaml; do
        cat "$dir/kustomize/stage/$f"
        echo "---"
    done > "$bin/kwok-stages.yaml"
}

build_promcheck() {
    [ -x "$bin/promcheck-$PROMCOMMON" ] && return 0
    gomod promcheck "github.com/prometheus/common $PROMCOMMON" | go_tool promcheck "promcheck-$PROMCOMMON"
}

# The kubelet's device manager (pkg/kubelet/cm/devicemanager) from the same k8s.io/kubernetes
build_devicemanager() {
    local sum
    sum="$(sha256sum "$here/tools/devicemanager/main.go" | cut -c1-16)"
    [ -x "$bin/devicemanager-$K8S" ] && [ "$(cat "$bin/devicemanager-$K8S.src" 2>/dev/null)" = "$sum" ] &&
        return 0
    gomod devicemanager "k8s.io/kubernetes $K8S" k8s | go_tool devicemanager "devicemanager-$K8S" &&
        echo "$sum" > "$bin/devicemanager-$K8S.src"
}

# The kubelet's DRA manager (pkg/kubelet/cm/dra) and plugin manager, from the same
# k8s.io/kubernetes (e2e test_dra_kube_scheduler)
build_draharness() {
    # rebuilt when its source changes (the stamp holds the source's hash)
    local sum
    sum="$(sha256sum "$here/tools/draharness/main.go" | cut -c1-16)"
    [ -x "$bin/draharness-$K8S" ] && [ "$(cat "$bin/draharness-$K8S.src" 2>/dev/null)" = "$sum" ] &&
        return 0
    gomod draharness "k8s.io/kubernetes $K8S" k8s | go_tool draharness "draharness-$K8S" &&
        echo "$sum" > "$bin/draharness-$K8S.src"
}

build_dpharness() {
    [ -x "$bin/dpharness-$STAGING" ] && return 0
    gomod dpharness "k8s.io/kubelet $STAGING" | go_tool dpharness "dpharness-$STAGING"
}

# kschedcheck: kube-scheduler's own filter plugins (k8s.io/kubernetes v1.37.2
# pkg/scheduler/framework/plugins) judging placements (e2e test_differential*), named by its
# source's hash (tests/e2e/kschedcheck.sh finds it): checkouts with other sources share the
# cache without replacing each other's
build_kschedcheck() {
    local sum
    sum="$(cat "$here/tools/kschedcheck/"*.go | sha256sum | cut -c1-16)"
    [ -x "$bin/kschedcheck-$K8S-$sum" ] && return 0
    gomod kschedcheck "k8s.io/kubernetes $K8S" k8s | go_tool kschedcheck "kschedcheck-$K8S-$sum"
}

# celcheck: upstream's verdict on DRA device selectors (k8s.io/dynamic-resource-allocation
# v0.37.2 cel, e2e test_cel_conformance)
build_celcheck() {
    local sum
    sum="$(sha256sum "$here/tools/celcheck/main.go" | cut -c1-16)"
    [ -x "$bin/celcheck-$STAGING" ] && [ "$(cat "$bin/celcheck-$STAGING.src" 2>/dev/null)" = "$sum" ] &&
        return 0
    gomod celcheck "k8s.io/dynamic-resource-allocation $STAGING" k8s |
        go_tool celcheck "celcheck-$STAGING" && echo "$sum" > "$bin/celcheck-$STAGING.src"
}

if ! command -v go >/dev/null; then
    echo "build-control-plane: no Go toolchain found" >&2
    exit 1
fi
build_etcd || { echo "build-control-plane: etcd build failed, see $log" >&2; exit 1; }
build_k8s || { echo "build-control-plane: kubernetes build failed, see $log" >&2; exit 1; }
build_promcheck || { echo "build-control-plane: promcheck build failed, see $log" >&2; exit 1; }
build_dpharness || { echo "build-control-plane: dpharness build failed, see $log" >&2; exit 1; }
build_kschedcheck || { echo "build-control-plane: kschedcheck build failed, see $log" >&2; exit 1; }
build_helm || { echo "build-control-plane: helm build failed, see $log" >&2; exit 1; }
build_promqlcheck || { echo "build-control-plane: promqlcheck build failed, see $log" >&2; exit 1; }
build_celcheck || { echo "build-control-plane: celcheck build failed, see $log" >&2; exit 1; }
# kwok, the device manager, the DRA manager, Prometheus and its adapter are optional on a
# workstation (the tests that need them skip);
# under CI=true nothing may skip, so they must build
optional_failed() { # WHAT
    echo "build-control-plane: $1, see $log" >&2
    if [ "${CI:-}" = true ]; then
        echo "build-control-plane: CI=true needs every tool" >&2
        exit 1
    fi
}
build_devicemanager || optional_failed "the kubelet device manager did not build"
build_draharness || optional_failed "the kubelet DRA manager did not build (the DRA test skips)"
build_prometheus || optional_failed "prometheus did not build (the HPA test skips)"
build_adapter || optional_failed "prometheus-adapter did not build (the HPA test skips)"
build_kwok || optional_failed "kwok unavailable (bound pods will stay Pending)"
# Kueue serves one test: its failure breaks nothing else, even under CI=true, where that test
# fails rather than skips
build_kueue || echo "build-control-plane: kueue did not build (the Kueue test cannot run), see $log" >&2
echo "$bin"
