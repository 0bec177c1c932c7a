// devicemanager runs the kubelet's own device manager (k8s.io/kubernetes v1.37.2,
// pkg/kubelet/cm/devicemanager) for gpusched's device plugin test: it serves Registration
// on the kubelet's socket, connects to registering plugins, follows ListAndWatch and
// allocates devices to pods exactly as the kubelet does. Commands on stdin drive it; every
// observation is a JSON line on stdout:
//
//	allocate RESOURCE N   a pod with one container asking N of RESOURCE: Allocate, then the
//	                      container's run options (environment, mounts) and device IDs
//	restart               kubelet restart: stop the manager, start a new one (it removes
//	                      every socket in the plugin directory and serves a new kubelet.sock)
//	quit
//
// Capacity and allocatable per resource are printed whenever they change. The kubelet's
// pod-resources server (pkg/kubelet/apis/podresources, API v1) is served on
// /var/lib/kubelet/pod-resources/kubelet.sock over the same device manager, so a client sees
// the pods and devices the manager allocated.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubernetes/pkg/kubelet/apis/podresources"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
)

var (
	outMu sync.Mutex
	mu    sync.Mutex
	pods  []*v1.Pod
)

func emit(v map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func start(logger klog.Logger) *devicemanager.ManagerImpl {
	m, err := devicemanager.NewManagerImpl(logger, nil, topologymanager.NewFakeManager(logger))
	if err != nil {
		emit(map[string]any{"event": "error", "error": err.Error()})
		os.Exit(1)
	}
	active := func() []*v1.Pod { mu.Lock(); defer mu.Unlock(); return append([]*v1.Pod(nil), pods...) }
	ready := config.NewSourcesReady(func(sets.Set[string]) bool { return true })
	if err := m.Start(logger, active, ready, containermap.NewContainerMap(), sets.New[string]()); err != nil {
		emit(map[string]any{"event": "error", "error": err.Error()})
		os.Exit(1)
	}
	return m
}

// The providers the pod-resources server asks: pods from the harness, devices from the
// device manager of the moment, no CPUs, memory or dynamic resources.
type provider struct {
	m  func() *devicemanager.ManagerImpl
	lg klog.Logger
}

func (p provider) GetActivePods() []*v1.Pod { mu.Lock(); defer mu.Unlock(); return append([]*v1.Pod(nil), pods...) }
func (p provider) GetPods() []*v1.Pod       { return p.GetActivePods() }
func (p provider) GetPodByName(ns, name string) (*v1.Pod, bool) {
	for _, x := range p.GetActivePods() {
		if x.Namespace == ns && x.Name == name {
			return x, true
		}
	}
	return nil, false
}
func (p provider) UpdateAllocatedDevices(logger klog.Logger) { p.m().UpdateAllocatedDevices(logger) }
func convert(devs devicemanager.ResourceDeviceInstances) []*podresourcesv1.ContainerDevices {
	var out []*podresourcesv1.ContainerDevices
	for res, d := range devs {
		var ids []string
		for id := range d {
			ids = append(ids, id)
		}
		out = append(out, &podresourcesv1.ContainerDevices{ResourceName: res, DeviceIds: ids})
	}
	return out
}
func (p provider) GetDevices(podUID, container string) []*podresourcesv1.ContainerDevices {
	return convert(p.m().GetDevices(podUID, container))
}
func (p provider) GetAllocatableDevices(logger klog.Logger) []*podresourcesv1.ContainerDevices {
	return convert(p.m().GetAllocatableDevices(logger))
}
func (p provider) GetCPUs(*v1.Pod, *v1.Container) []int64 { return nil }
func (p provider) GetPodCPUs(string) []int64              { return nil }
func (p provider) GetAllocatableCPUs() []int64            { return nil }
func (p provider) GetMemory(klog.Logger, *v1.Pod, *v1.Container) []*podresourcesv1.ContainerMemory {
	return nil
}
func (p provider) GetPodMemory(klog.Logger, string) []*podresourcesv1.ContainerMemory { return nil }
func (p provider) GetAllocatableMemory(klog.Logger) []*podresourcesv1.ContainerMemory {
	return nil
}
func (p provider) GetDynamicResources(klog.Logger, *v1.Pod, *v1.Container) []*podresourcesv1.DynamicResource {
	return nil
}

func servePodResources(p provider) {
	dir := "/var/lib/kubelet/pod-resources"
	os.MkdirAll(dir, 0o755)
	sock := dir + "/kubelet.sock"
	os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		emit(map[string]any{"event": "error", "error": err.Error()})
		return
	}
	s := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(s, podresources.NewV1PodResourcesServer(
		klog.NewContext(context.Background(), p.lg),
		podresources.PodResourcesProviders{Pods: p, Devices: p, Cpus: p, Memory: p, DynamicResources: p}))
	go s.Serve(l)
}

func counts(l v1.ResourceList) map[string]int64 {
	out := map[string]int64{}
	for k, v := range l {
		out[string(k)] = v.Value()
	}
	return out
}

func main() {
	logger := klog.Background()
	var m *devicemanager.ManagerImpl
	var mmu sync.Mutex
	m = start(logger)
	// the manager of the moment (a restart swaps it); never held across a call into it, as the
	// kubelet holds no lock of its own around Allocate: pod-resources answers meanwhile
	cur := func() *devicemanager.ManagerImpl { mmu.Lock(); defer mmu.Unlock(); return m }
	servePodResources(provider{m: cur, lg: logger})
	emit(map[string]any{"event": "ready"})
	go func() {
		var last map[string]any
		for {
			mmu.Lock()
			c, a, _ := m.GetCapacity(logger)
			mmu.Unlock()
			cur := map[string]any{"event": "capacity", "capacity": counts(c), "allocatable": counts(a)}
			if !reflect.DeepEqual(cur, last) && len(c)+len(a) > 0 {
				emit(cur)
				last = cur
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	n := 0
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "allocate":
			count, _ := strconv.Atoi(f[2])
			n++
			q := resource.NewQuantity(int64(count), resource.DecimalSI)
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", n), Namespace: "default",
					UID: types.UID(fmt.Sprintf("uid-%d", n))},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main",
					Resources: v1.ResourceRequirements{
						Limits:   v1.ResourceList{v1.ResourceName(f[1]): *q},
						Requests: v1.ResourceList{v1.ResourceName(f[1]): *q}}}}},
			}
			mu.Lock()
			pods = append(pods, pod)
			mu.Unlock()
			m := cur()
			err := m.Allocate(context.Background(), pod, &pod.Spec.Containers[0], lifecycle.AddOperation)
			var envs = map[string]string{}
			var mounts []string
			if err == nil {
				opts, oerr := m.GetDeviceRunContainerOptions(context.Background(), pod, &pod.Spec.Containers[0])
				if oerr != nil {
					err = oerr
				} else if opts != nil {
					for _, e := range opts.Envs {
						envs[e.Name] = e.Value
					}
					for _, mt := range opts.Mounts {
						mounts = append(mounts, mt.HostPath+":"+mt.ContainerPath)
					}
				}
			}
			ids := m.GetDevices(string(pod.UID), "main")
			ev := map[string]any{"event": "allocate", "resource": f[1], "pod": pod.Name, "envs": envs, "mounts": mounts}
			if err != nil {
				ev["error"] = err.Error()
			}
			var devIDs []string
			for _, devs := range ids {
				for id := range devs {
					devIDs = append(devIDs, id)
				}
			}
			ev["devices"] = devIDs
			emit(ev)
		case "restart":
			mmu.Lock()
			m.Stop(logger)
			time.Sleep(200 * time.Millisecond)
			m = start(logger)
			mmu.Unlock()
			emit(map[string]any{"event": "restarted"})
		case "quit":
			return
		}
	}
}
