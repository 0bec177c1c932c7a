package main

// A world is the API state one judgement sees: the claims, volumes and ResourceClaims as they
// stood when a pod was placed, served by a fake clientset's informers to one set of filter
// plugins, made the way the scheduler makes them for a profile. The pods are not in it: they
// come from the snapshot a judgement swaps in (swapLister), so one world serves every pod
// judged against the same API state.

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// swapLister is the snapshot the plugins of a world read: each judgement puts its own in.
type swapLister struct{ *cache.Snapshot }

// objects are what differs between worlds; the rest comes from the dump as it is.
type objects struct {
	pvs    []*v1.PersistentVolume
	pvcs   []*v1.PersistentVolumeClaim
	claims []*resourceapi.ResourceClaim
	slices []*resourceapi.ResourceSlice
}

type world struct {
	lister  *swapLister
	pls     []plugin
	vb      *volumebinding.VolumeBinding
	tracker *resourceslicetracker.Tracker
	cancel  context.CancelFunc
}

// plugin is one filter plugin of a world.
type plugin struct {
	name string
	pre  fwk.PreFilterPlugin
	filt fwk.FilterPlugin
}

const sentinel = "kschedcheck-sentinel"

func draEnabled() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation)
}

// newWorld serves o beside the dump's other objects and makes every filter plugin over them;
// it returns once the plugins' own caches hold every object (see settle).
func (c *checker) newWorld(o objects) (*world, error) {
	ctx, cancel := context.WithCancel(c.ctx)
	w := &world{lister: &swapLister{cache.NewSnapshot(nil, c.d.Nodes)}, cancel: cancel}
	objs := make([]runtime.Object, 0, 256)
	for _, x := range c.namespaces {
		objs = append(objs, x)
	}
	for _, x := range c.d.Nodes {
		objs = append(objs, x)
	}
	for _, x := range o.pvs {
		objs = append(objs, x)
	}
	for _, x := range o.pvcs {
		objs = append(objs, x)
	}
	for _, x := range c.d.StorageClasses {
		objs = append(objs, x)
	}
	for _, x := range c.d.CSINodes {
		objs = append(objs, x)
	}
	for _, x := range c.d.CSIDrivers {
		objs = append(objs, x)
	}
	for _, x := range c.d.Capacities {
		objs = append(objs, x)
	}
	if draEnabled() {
		for _, x := range c.d.DeviceClasses {
			objs = append(objs, x)
		}
		for _, x := range o.slices {
			objs = append(objs, x)
		}
		for _, x := range o.claims {
			objs = append(objs, x)
		}
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	// NodeVolumeLimits reads CSINodes through the manager the scheduler shares among profiles;
	// DynamicResources its claims, slices and classes through the DRA manager, as
	// pkg/scheduler/scheduler.go makes them
	csi := nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister())
	opts := []frameworkruntime.Option{
		frameworkruntime.WithSnapshotSharedLister(w.lister),
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSharedCSIManager(csi),
	}
	var claimsSynced toolscache.ResourceEventHandlerRegistration
	if draEnabled() {
		logger := klog.FromContext(ctx)
		claimCache := assumecache.NewAssumeCache(logger,
			factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
		topts := resourceslicetracker.Options{
			EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
			EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
			SliceInformer:            factory.Resource().V1().ResourceSlices(),
			KubeClient:               client,
		}
		if topts.EnableDeviceTaintRules {
			topts.TaintInformer = factory.Resource().V1().DeviceTaintRules()
		}
		tracker, err := resourceslicetracker.StartTracker(ctx, topts)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("resource slice tracker: %w", err)
		}
		w.tracker = tracker
		opts = append(opts, frameworkruntime.WithSharedDRAManager(
			dynamicresources.NewDRAManager(ctx, claimCache, tracker, factory)))
		// the manager's view of allocated devices is fed synchronously by the assume
		// cache's handler: once that handler has seen the initial list, so has the view
		claimsSynced = claimCache.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
	}
	h, err := frameworkruntime.NewFramework(ctx, nil, nil, opts...)
	if err != nil {
		w.close()
		return nil, err
	}
	for _, name := range c.filterPlugins {
		factoryFn, ok := c.registry[name]
		if !ok {
			w.close()
			return nil, fmt.Errorf("plugin %s not in the in-tree registry", name)
		}
		p, err := factoryFn(ctx, c.args[name], h)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		pl := plugin{name: name}
		pl.pre, _ = p.(fwk.PreFilterPlugin)
		if pl.filt, ok = p.(fwk.FilterPlugin); !ok {
			w.close()
			return nil, fmt.Errorf("plugin %s has no Filter", name)
		}
		if vb, ok := p.(*volumebinding.VolumeBinding); ok {
			w.vb = vb
		}
		w.pls = append(w.pls, pl)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if err := w.settle(ctx, client, claimsSynced); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *world) close() {
	if w.tracker != nil {
		w.tracker.Stop()
	}
	w.cancel()
}

// settle waits until the plugins' own caches hold every object. The informers' stores are
// synced by then, but the caches that handlers fill (the volume binder's claims and volumes,
// the DRA manager's claims and slices) are fed by goroutines of their own: a claim and a
// volume bound to each other, created after the initial list, reach the binder's caches after
// every object before them, so once the binder finds them both it has seen them all.
func (w *world) settle(ctx context.Context, client *fake.Clientset,
	claimsSynced toolscache.ResourceEventHandlerRegistration) error {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: sentinel},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: *resourceQuantity("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName:              sentinel,
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/"}},
			ClaimRef:                      &v1.ObjectReference{Namespace: sentinel, Name: sentinel},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: sentinel, Namespace: sentinel,
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: sentinel, StorageClassName: ptrTo(sentinel),
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(sentinel).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return err
	}
	probe := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: sentinel, Namespace: sentinel},
		Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: sentinel}}}}}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: sentinel}}
	logger := klog.FromContext(ctx)
	ready := func() bool {
		if w.vb != nil {
			claims, err := w.vb.Binder.GetPodVolumeClaims(logger, probe)
			if err != nil {
				return false
			}
			if _, reasons, err := w.vb.Binder.FindPodVolumes(logger, probe, claims, node); err != nil || len(reasons) > 0 {
				return false
			}
		}
		if claimsSynced != nil && !claimsSynced.HasSynced() {
			return false
		}
		return w.tracker == nil || w.tracker.HasSynced()
	}
	for end := time.Now().Add(60 * time.Second); !ready(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			return fmt.Errorf("the plugins' caches did not fill in 60 s")
		}
	}
	return nil
}

// prepared is one pod's PreFilter over one snapshot in one world.
type prepared struct {
	w     *world
	state fwk.CycleState
	pre   []verdict
	snap  *cache.Snapshot
}

// verdict is what one plugin says about a pod, before any node (PreFilter).
type verdict struct {
	skip   bool
	status *fwk.Status          // non-nil and not success: the pod fits no node
	only   *fwk.PreFilterResult // nodes the plugin allows; nil: every node
}

// prepare runs every plugin's PreFilter for pod over snap in w.
func (c *checker) prepare(w *world, snap *cache.Snapshot, pod *v1.Pod) (*prepared, error) {
	w.lister.Snapshot = snap
	all, err := snap.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	pr := &prepared{w: w, state: newCycleState(), pre: make([]verdict, len(w.pls)), snap: snap}
	for i, pl := range w.pls {
		if pl.pre == nil {
			continue
		}
		res, st := pl.pre.PreFilter(c.ctx, pr.state, pod, all)
		switch {
		case st.IsSkip():
			pr.pre[i].skip = true
		case !st.IsSuccess():
			pr.pre[i].status = st
		default:
			pr.pre[i].only = res
		}
	}
	return pr, nil
}

// refusal is one plugin's no for a pod on a node, with upstream's reason.
type refusal struct{ plugin, reason string }

// judge lists every plugin that refuses pod on node, in the profile's order: the first is the
// one the framework's RunFilterPlugins reports (it stops there); the others say whether the
// refusal is that plugin's alone. A plugin whose PreFilter failed refuses every node.
func (c *checker) judge(pr *prepared, pod *v1.Pod, node string) []refusal {
	ni, err := pr.snap.NodeInfos().Get(node)
	if err != nil {
		return []refusal{{"snapshot", err.Error()}}
	}
	var out []refusal
	for i, pl := range pr.w.pls {
		v := pr.pre[i]
		switch {
		case v.skip:
		case v.status != nil:
			out = append(out, refusal{pl.name, fmt.Sprintf("PreFilter %s: %s", v.status.Code(),
				joinReasons(v.status.Reasons()))})
		case !v.only.AllNodes() && !v.only.NodeNames.Has(node):
			out = append(out, refusal{pl.name,
				"PreFilter result excludes the node (node(s) didn't satisfy plugin(s) [" + pl.name + "])"})
		default:
			if st := pl.filt.Filter(c.ctx, pr.state, pod, ni); !st.IsSuccess() {
				out = append(out, refusal{pl.name, fmt.Sprintf("%s: %s", st.Code(), joinReasons(st.Reasons()))})
			}
		}
	}
	return out
}

// allows says whether plugin name alone lets pod onto node.
func (c *checker) allows(pr *prepared, pod *v1.Pod, name, node string) (bool, error) {
	for i, pl := range pr.w.pls {
		if pl.name != name {
			continue
		}
		v := pr.pre[i]
		if v.skip {
			return true, nil
		}
		if v.status != nil || (!v.only.AllNodes() && !v.only.NodeNames.Has(node)) {
			return false, nil
		}
		ni, err := pr.snap.NodeInfos().Get(node)
		if err != nil {
			return false, err
		}
		return pl.filt.Filter(c.ctx, pr.state, pod, ni).IsSuccess(), nil
	}
	return false, fmt.Errorf("plugin %s not made", name)
}

// the filter plugins of the default profile in the order it runs them (DynamicResources
// where the DynamicResourceAllocation gate is on, as at v1.37's defaults)
func defaultFilters() []string {
	out := []string{
		names.NodeName,
		names.NodeUnschedulable,
		names.TaintToleration,
		names.NodeAffinity,
		names.NodePorts,
		names.NodeResourcesFit,
		names.VolumeRestrictions,
		names.NodeVolumeLimits,
		names.VolumeBinding,
		names.VolumeZone,
		names.PodTopologySpread,
		names.InterPodAffinity,
	}
	if draEnabled() {
		out = append(out, names.DynamicResources)
	}
	return out
}
