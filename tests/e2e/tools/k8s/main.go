// Command k8s builds the upstream Kubernetes binaries gpusched's end-to-end tests run
// against, from pinned Go modules: one binary that runs as kube-apiserver, kube-scheduler or
// kubectl depending on the name it is called by (a busybox-style multi-call binary keeps the
// build to one link). Test infrastructure only; nothing here ships.
package main

import (
	"os"
	"path/filepath"

	"k8s.io/component-base/cli"
	kubectl "k8s.io/kubectl/pkg/cmd"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	switch filepath.Base(os.Args[0]) {
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	default:
		os.Exit(cli.Run(kubectl.NewDefaultKubectlCommand()))
	}
}
