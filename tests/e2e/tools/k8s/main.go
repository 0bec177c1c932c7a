// Command k8s builds the upstream Kubernetes binaries gpusched's end-to-end tests run
// against, from pinned Go modules: one binary that runs as kube-apiserver, kube-scheduler,
// kube-controller-manager, kube-proxy, kubelet or kubectl depending on the name it is called
// by (a busybox-style multi-call binary keeps the build to one link). Test infrastructure
// only; nothing here ships.
package main

import (
	"context"
	"os"
	"path/filepath"

	"k8s.io/component-base/cli"
	kubectl "k8s.io/kubectl/pkg/cmd"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	switch filepath.Base(os.Args[0]) {
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-proxy":
		os.Exit(cli.Run(proxy.NewProxyCommand()))
	case "kubelet":
		os.Exit(cli.Run(kubelet.NewKubeletCommand(context.Background())))
	default:
		os.Exit(cli.Run(kubectl.NewDefaultKubectlCommand()))
	}
}
