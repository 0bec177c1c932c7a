// draharness runs the kubelet's own DRA manager (k8s.io/kubernetes v1.37.2,
// pkg/kubelet/cm/dra) wired as the kubelet wires it: the kubelet's plugin manager
// (pkg/kubelet/pluginmanager, its plugin watcher) watches the plugin registry folder for
// registration sockets and hands DRAPlugin registrations to the manager's handler; the manager
// reads ResourceClaims from the API server (a real clientset from --kubeconfig), calls the
// driver's NodePrepareResources / NodeUnprepareResources over gRPC and keeps its checkpoint in
// --root-dir. At start, as the kubelet does, it deletes the node's ResourceSlices (no driver
// has registered yet). Commands on stdin drive it; every observation is a JSON line on stdout:
//
//	prepare NAMESPACE POD    GET the pod, PrepareResources(pod) as the kubelet does before it
//	                         starts the pod's containers, then per container the CDI device
//	                         IDs GetResources gives the runtime, and per claim the devices the
//	                         driver reported (driver, pool, device, CDI IDs)
//	unprepare NAMESPACE POD  UnprepareResources(pod), as the kubelet does once the pod is done
//	                         (the pod from the API, or the one prepared if it is gone)
//	quit
//
// Events: ready; validate / register / deregister (the plugin manager's calls into the DRA
// handler, with the driver name, endpoint and versions, and the handler's error if any); api
// (every request the manager makes that is not a read: method, path, status code); prepare;
// unprepare; error.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	pluginwatcherapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
)

var outMu sync.Mutex

func emit(v map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func errStr(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

// handler passes the plugin manager's calls to the DRA manager's handler unchanged and
// reports them
type handler struct{ inner cache.PluginHandler }

func (h handler) ValidatePlugin(ctx context.Context, name, endpoint string, versions []string) error {
	err := h.inner.ValidatePlugin(ctx, name, endpoint, versions)
	emit(map[string]any{"event": "validate", "driver": name, "endpoint": endpoint, "versions": versions, "error": errStr(err)})
	return err
}

func (h handler) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string, timeout *time.Duration) error {
	err := h.inner.RegisterPlugin(ctx, name, endpoint, versions, timeout)
	emit(map[string]any{"event": "register", "driver": name, "endpoint": endpoint, "versions": versions, "error": errStr(err)})
	return err
}

func (h handler) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	h.inner.DeRegisterPlugin(ctx, name, endpoint)
	emit(map[string]any{"event": "deregister", "driver": name, "endpoint": endpoint})
}

// writes reports every request that is not a read (the kubelet's ResourceSlice wipes)
type writes struct{ rt http.RoundTripper }

func (w writes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.rt.RoundTrip(r)
	if r.Method != http.MethodGet {
		ev := map[string]any{"event": "api", "method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery}
		if resp != nil {
			ev["code"] = resp.StatusCode
		}
		if err != nil {
			ev["error"] = err.Error()
		}
		emit(ev)
	}
	return resp, err
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (the kubelet's)")
	node := flag.String("node", "", "the node this kubelet is")
	registry := flag.String("registry-dir", "/var/lib/kubelet/plugins_registry", "plugin registration folder the plugin watcher watches")
	root := flag.String("root-dir", "/var/lib/kubelet", "the kubelet's root folder (the DRA manager's checkpoint)")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" || *node == "" {
		fmt.Fprintln(os.Stderr, "usage: draharness --kubeconfig FILE --node NAME [--registry-dir DIR] [--root-dir DIR]")
		os.Exit(2)
	}
	fail := func(err error) {
		emit(map[string]any{"event": "error", "error": err.Error()})
		os.Exit(1)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	cfg.UserAgent = "draharness (kubelet DRA manager)"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return writes{rt} })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(*root, 0o750); err != nil {
		fail(err)
	}

	logger := klog.Background()
	ctx := klog.NewContext(context.Background(), logger)

	// the pods this kubelet runs: prepared and not yet unprepared
	var mu sync.Mutex
	active := map[string]*v1.Pod{}
	activePods := func() []*v1.Pod {
		mu.Lock()
		defer mu.Unlock()
		out := make([]*v1.Pod, 0, len(active))
		for _, p := range active {
			out = append(out, p)
		}
		return out
	}
	getNode := func(ctx context.Context) (*v1.Node, error) {
		return client.CoreV1().Nodes().Get(ctx, *node, metav1.GetOptions{})
	}
	ready := config.NewSourcesReady(func(sets.Set[string]) bool { return true })

	// as pkg/kubelet/cm.NewContainerManager and containerManagerImpl.Start do
	m, err := dra.NewManager(logger, client, *root)
	if err != nil {
		fail(err)
	}
	if err := m.Start(ctx, dra.ActivePodsFunc(activePods), dra.GetNodeFunc(getNode), ready); err != nil {
		fail(err)
	}
	// as pkg/kubelet.NewMainKubelet and Kubelet.initializeRuntimeDependentModules do
	pm := pluginmanager.NewPluginManager(*registry, &record.FakeRecorder{})
	pm.AddHandler(pluginwatcherapi.DRAPlugin, handler{m.GetWatcherHandler()})
	stop := make(chan struct{})
	go pm.Run(ctx, ready, stop)
	emit(map[string]any{"event": "ready", "node": *node, "registry_dir": *registry, "root_dir": *root})

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "prepare", "unprepare":
			if len(f) != 3 {
				emit(map[string]any{"event": "error", "error": "usage: " + f[0] + " NAMESPACE POD"})
				continue
			}
			key := f[1] + "/" + f[2]
			ev := map[string]any{"event": f[0], "namespace": f[1], "pod": f[2]}
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			pod, gerr := client.CoreV1().Pods(f[1]).Get(cctx, f[2], metav1.GetOptions{})
			if gerr != nil && f[0] == "unprepare" {
				mu.Lock()
				if p := active[key]; p != nil {
					pod, gerr = p, nil
				}
				mu.Unlock()
			}
			if gerr != nil {
				cancel()
				ev["error"] = gerr.Error()
				emit(ev)
				continue
			}
			ev["uid"] = string(pod.UID)
			ev["node"] = pod.Spec.NodeName
			if f[0] == "prepare" {
				mu.Lock()
				active[key] = pod
				mu.Unlock()
				t0 := time.Now()
				err := m.PrepareResources(cctx, pod)
				ev["seconds"] = time.Since(t0).Seconds()
				if err != nil {
					ev["error"] = err.Error()
				} else {
					containers := map[string][]string{}
					var claims []map[string]any
					seen := map[string]bool{}
					for i := range pod.Spec.Containers {
						c := &pod.Spec.Containers[i]
						info, rerr := m.GetResources(pod, c)
						if rerr != nil {
							ev["error"] = rerr.Error()
							break
						}
						ids := []string{}
						for _, d := range info.CDIDevices {
							ids = append(ids, d.Name)
						}
						containers[c.Name] = ids
						cis, cerr := m.GetContainerClaimInfos(pod, c)
						if cerr != nil {
							ev["error"] = cerr.Error()
							break
						}
						for _, ci := range cis {
							if seen[ci.ClaimName] {
								continue
							}
							seen[ci.ClaimName] = true
							for drv, st := range ci.DriverState {
								for _, d := range st.Devices {
									claims = append(claims, map[string]any{"claim": ci.ClaimName,
										"claim_uid": string(ci.ClaimUID), "driver": drv,
										"pool": d.PoolName, "device": d.DeviceName,
										"requests": d.RequestNames, "cdi": d.CDIDeviceIDs})
								}
							}
						}
					}
					ev["containers"] = containers
					ev["claims"] = claims
				}
			} else {
				t0 := time.Now()
				err := m.UnprepareResources(cctx, pod)
				ev["seconds"] = time.Since(t0).Seconds()
				if err != nil {
					ev["error"] = err.Error()
				} else {
					mu.Lock()
					delete(active, key)
					mu.Unlock()
				}
			}
			cancel()
			emit(ev)
		case "quit":
			close(stop)
			m.Stop()
			return
		default:
			emit(map[string]any{"event": "error", "error": "unknown command " + f[0]})
		}
	}
}
