// kschedcheck judges gpusched's placements with kube-scheduler's own filter plugins
// (k8s.io/kubernetes v1.37.2, pkg/scheduler/framework/plugins, feature gates at their v1.37
// defaults, plugin arguments as the default KubeSchedulerConfiguration gives them): NodeName,
// NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
// VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, PodTopologySpread and
// InterPodAffinity, in the default profile's order (every filter of it but DynamicResources),
// over a snapshot built by the scheduler's own cache.NewSnapshot, the way the plugins' unit
// tests run them. The volume plugins read claims, volumes and storage classes from informers
// over a fake clientset holding the dump's, as the scheduler's informers would serve them
// (there are no CSINode, CSIDriver or VolumeAttachment objects: no attach limits). For a claim
// bound to a volume (spec.volumeName and the pv.kubernetes.io/bind-completed annotation, as
// the PV controller leaves it) VolumeBinding checks the volume's spec.nodeAffinity with
// k8s.io/component-helpers/storage/volume.CheckNodeAffinity, which sees the node's labels
// only.
//
//	kschedcheck [-scheduler-name gpusched] [-reasons] DUMP.json
//
// DUMP.json is {"nodes": [...], "pods": [...], "namespaces": [...],
// "persistentVolumes": [...], "persistentVolumeClaims": [...], "storageClasses": [...]} with
// the items of `kubectl get nodes|pods|namespaces|pv|pvc|storageclasses -o json` (all but nodes
// and pods optional: namespaces' labels serve namespace selectors in pod affinity terms).
// Two judgements, for the pods of the scheduler:
//
//	bound   P on node N: with a snapshot of every OTHER bound pod, PreFilter and Filter of
//	        every plugin must let P onto N.
//	pending P (no nodeName): with a snapshot of every bound pod, no node passes every filter.
//
// The first is the check at bind time only when the final state does not undo what held
// then. The test that feeds this tool keeps it so: pods are never deleted, so placed pods,
// their labels and host ports only accumulate; each topology spread constraint's selector
// matches only its own Deployment's pods, so its domain counts only grow and the minimum
// that a placement was judged against can only rise; required affinity to other pods that
// existed at bind time still exists; anti-affinity is symmetric; claims, volumes and their
// node affinity are created before the pods and never change. Pods created with
// spec.nodeName (never scheduled) are judged the same way: they must fit too, and
// the test creates them before the scheduler starts.
//
// Every disagreement is printed with the pod, node, plugin and upstream's reason; for every pod
// of the scheduler that uses a claim, a line says which nodes VolumeBinding alone lets it onto
// ("volumes NS/POD: VolumeBinding lets it onto K/N nodes: ..."); then a summary line. The exit
// status is 1 on any disagreement, 2 on bad input.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// The filter plugins of the default profile that judge a pod without DRA claims, in the order
// the profile runs them.
var filterPlugins = []string{
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

type dump struct {
	Nodes          []*v1.Node                  `json:"nodes"`
	Pods           []*v1.Pod                   `json:"pods"`
	Namespaces     []*v1.Namespace             `json:"namespaces"`
	PVs            []*v1.PersistentVolume      `json:"persistentVolumes"`
	PVCs           []*v1.PersistentVolumeClaim `json:"persistentVolumeClaims"`
	StorageClasses []*storagev1.StorageClass   `json:"storageClasses"`
}

type checker struct {
	ctx      context.Context
	registry frameworkruntime.Registry
	args     map[string]runtime.Object
	client   *fake.Clientset
	informer informers.SharedInformerFactory
	csi      fwk.CSIManager
	nodes    []*v1.Node
}

// plugin is one filter plugin made for one snapshot.
type plugin struct {
	name string
	pre  fwk.PreFilterPlugin
	filt fwk.FilterPlugin
}

// pluginsFor makes every filter plugin over a snapshot, as the scheduler makes them for a
// profile: from the in-tree registry (its feature gates are the process's defaults) with the
// default arguments.
func (c *checker) pluginsFor(snap *cache.Snapshot) ([]plugin, error) {
	h, err := frameworkruntime.NewFramework(c.ctx, nil, nil,
		frameworkruntime.WithSnapshotSharedLister(snap),
		frameworkruntime.WithClientSet(c.client),
		frameworkruntime.WithInformerFactory(c.informer),
		frameworkruntime.WithSharedCSIManager(c.csi))
	if err != nil {
		return nil, err
	}
	out := make([]plugin, 0, len(filterPlugins))
	for _, name := range filterPlugins {
		factory, ok := c.registry[name]
		if !ok {
			return nil, fmt.Errorf("plugin %s not in the in-tree registry", name)
		}
		p, err := factory(c.ctx, c.args[name], h)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		pl := plugin{name: name}
		pl.pre, _ = p.(fwk.PreFilterPlugin)
		if pl.filt, ok = p.(fwk.FilterPlugin); !ok {
			return nil, fmt.Errorf("plugin %s has no Filter", name)
		}
		out = append(out, pl)
	}
	return out, nil
}

// verdict is what one plugin says about a pod, before any node (PreFilter).
type verdict struct {
	skip   bool
	status *fwk.Status          // non-nil and not success: the pod fits no node
	only   *fwk.PreFilterResult // nodes the plugin allows; nil: every node
}

type prepared struct {
	pls   []plugin
	state *framework.CycleState
	pre   []verdict
	snap  *cache.Snapshot
}

// prepare runs every plugin's PreFilter for pod over snap.
func (c *checker) prepare(snap *cache.Snapshot, pod *v1.Pod) (*prepared, error) {
	pls, err := c.pluginsFor(snap)
	if err != nil {
		return nil, err
	}
	all, err := snap.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	pr := &prepared{pls: pls, state: framework.NewCycleState(), pre: make([]verdict, len(pls)),
		snap: snap}
	for i, pl := range pls {
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

// judge says whether pod passes every filter on node: "" if so, else the first plugin that
// refuses it and upstream's reason (plugins run in the profile's order and stop at the first
// refusal, as the framework's RunFilterPlugins does).
func (c *checker) judge(pr *prepared, pod *v1.Pod, node string) (string, string) {
	ni, err := pr.snap.NodeInfos().Get(node)
	if err != nil {
		return "snapshot", err.Error()
	}
	for i, pl := range pr.pls {
		v := pr.pre[i]
		if v.skip {
			continue
		}
		if v.status != nil {
			return pl.name, fmt.Sprintf("PreFilter %s: %s", v.status.Code(),
				strings.Join(v.status.Reasons(), "; "))
		}
		if !v.only.AllNodes() && !v.only.NodeNames.Has(node) {
			return pl.name, "PreFilter result excludes the node (node(s) didn't satisfy plugin(s) [" +
				pl.name + "])"
		}
		st := pl.filt.Filter(c.ctx, pr.state, pod, ni)
		if !st.IsSuccess() {
			return pl.name, fmt.Sprintf("%s: %s", st.Code(), strings.Join(st.Reasons(), "; "))
		}
	}
	return "", ""
}

func key(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// volumeNodes lists the nodes that VolumeBinding's PreFilter and Filter alone let pod onto.
func (c *checker) volumeNodes(pr *prepared, pod *v1.Pod) ([]string, error) {
	for i, pl := range pr.pls {
		if pl.name != names.VolumeBinding {
			continue
		}
		var out []string
		v := pr.pre[i]
		for _, n := range c.nodes {
			if v.status != nil || (!v.skip && !v.only.AllNodes() && !v.only.NodeNames.Has(n.Name)) {
				continue
			}
			ni, err := pr.snap.NodeInfos().Get(n.Name)
			if err != nil {
				return nil, err
			}
			if v.skip || pl.filt.Filter(c.ctx, pr.state, pod, ni).IsSuccess() {
				out = append(out, n.Name)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("plugin %s not made", names.VolumeBinding)
}

// overAllocated lists the resources whose requests on a node exceed its allocatable.
func overAllocated(ni fwk.NodeInfo) string {
	req, alloc := ni.GetRequested(), ni.GetAllocatable()
	var out []string
	if req.GetMilliCPU() > alloc.GetMilliCPU() {
		out = append(out, fmt.Sprintf("cpu %dm > %dm", req.GetMilliCPU(), alloc.GetMilliCPU()))
	}
	if req.GetMemory() > alloc.GetMemory() {
		out = append(out, fmt.Sprintf("memory %d > %d", req.GetMemory(), alloc.GetMemory()))
	}
	if req.GetEphemeralStorage() > alloc.GetEphemeralStorage() {
		out = append(out, fmt.Sprintf("ephemeral-storage %d > %d", req.GetEphemeralStorage(),
			alloc.GetEphemeralStorage()))
	}
	if len(ni.GetPods()) > alloc.GetAllowedPodNumber() {
		out = append(out, fmt.Sprintf("pods %d > %d", len(ni.GetPods()), alloc.GetAllowedPodNumber()))
	}
	names := make([]string, 0)
	for r := range req.GetScalarResources() {
		names = append(names, string(r))
	}
	sort.Strings(names)
	for _, r := range names {
		rn := v1.ResourceName(r)
		if q, a := req.GetScalarResources()[rn], alloc.GetScalarResources()[rn]; q > a {
			out = append(out, fmt.Sprintf("%s %d > %d", r, q, a))
		}
	}
	return strings.Join(out, ", ")
}

func main() {
	schedName := flag.String("scheduler-name", "gpusched", "judge the pods of this scheduler")
	verbose := flag.Bool("reasons", false, "print upstream's reasons for every pending pod")
	flag.Parse()
	// the plugins log at V(4) and V(5); errors only
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", "0")
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: kschedcheck [-scheduler-name NAME] [-reasons] DUMP.json")
		os.Exit(2)
	}
	raw, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kschedcheck:", err)
		os.Exit(2)
	}
	var d dump
	if err := json.Unmarshal(raw, &d); err != nil {
		fmt.Fprintln(os.Stderr, "kschedcheck: reading the dump:", err)
		os.Exit(2)
	}
	if len(d.Nodes) == 0 {
		fmt.Fprintln(os.Stderr, "kschedcheck: the dump has no nodes")
		os.Exit(2)
	}
	sort.Slice(d.Nodes, func(i, j int) bool { return d.Nodes[i].Name < d.Nodes[j].Name })
	sort.Slice(d.Pods, func(i, j int) bool { return key(d.Pods[i]) < key(d.Pods[j]) })

	ctx := context.Background()
	metrics.Register() // the parallelizer the plugins use records into the scheduler's metrics
	cfg, err := latest.Default()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kschedcheck: default configuration:", err)
		os.Exit(2)
	}
	c := &checker{ctx: ctx, registry: plugins.NewInTreeRegistry(),
		args: map[string]runtime.Object{}, nodes: d.Nodes}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		c.args[pc.Name] = pc.Args
	}
	objs := make([]runtime.Object, 0, len(d.Namespaces))
	seen := map[string]bool{}
	for _, ns := range d.Namespaces {
		objs = append(objs, ns)
		seen[ns.Name] = true
	}
	for _, p := range d.Pods {
		if !seen[p.Namespace] { // a namespace the dump lacks: its name label only
			seen[p.Namespace] = true
			ns := &v1.Namespace{}
			ns.Name = p.Namespace
			ns.Labels = map[string]string{"kubernetes.io/metadata.name": p.Namespace}
			objs = append(objs, ns)
		}
	}
	for _, pv := range d.PVs {
		objs = append(objs, pv)
	}
	for _, pvc := range d.PVCs {
		objs = append(objs, pvc)
	}
	for _, sc := range d.StorageClasses {
		objs = append(objs, sc)
	}
	c.client = fake.NewClientset(objs...)
	c.informer = informers.NewSharedInformerFactory(c.client, 0)
	// NodeVolumeLimits reads CSINodes through the manager the scheduler shares among profiles
	c.csi = nodevolumelimits.NewCSIManager(c.informer.Storage().V1().CSINodes().Lister())
	// make the plugins once so that every informer they use is registered, then start them
	if _, err := c.pluginsFor(cache.NewSnapshot(nil, d.Nodes)); err != nil {
		fmt.Fprintln(os.Stderr, "kschedcheck:", err)
		os.Exit(2)
	}
	c.informer.Start(ctx.Done())
	c.informer.WaitForCacheSync(ctx.Done())

	nodeNames := map[string]bool{}
	for _, n := range d.Nodes {
		nodeNames[n.Name] = true
	}
	var bound, mine, pending []*v1.Pod
	for _, p := range d.Pods {
		terminal := p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
		if terminal {
			continue // the scheduler's cache holds no terminal pods
		}
		if p.Spec.NodeName != "" {
			bound = append(bound, p)
			if p.Spec.SchedulerName == *schedName {
				mine = append(mine, p)
			}
		} else if p.Spec.SchedulerName == *schedName && p.DeletionTimestamp == nil {
			pending = append(pending, p)
		}
	}

	disagree := 0
	byPlugin := map[string]int{}
	// bound pods: each against every other bound pod
	for _, p := range mine {
		if !nodeNames[p.Spec.NodeName] {
			fmt.Printf("DISAGREE bound %s on %s: no such node in the dump\n", key(p), p.Spec.NodeName)
			disagree++
			continue
		}
		others := make([]*v1.Pod, 0, len(bound))
		for _, o := range bound {
			if o != p {
				others = append(others, o)
			}
		}
		pr, err := c.prepare(cache.NewSnapshot(others, d.Nodes), p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kschedcheck:", err)
			os.Exit(2)
		}
		if pl, why := c.judge(pr, p, p.Spec.NodeName); pl != "" {
			fmt.Printf("DISAGREE bound %s on %s: upstream's %s refuses it: %s\n", key(p),
				p.Spec.NodeName, pl, why)
			disagree++
			byPlugin[pl]++
		}
	}
	// pending pods: against every bound pod, on every node
	snap := cache.NewSnapshot(bound, d.Nodes)
	for _, p := range pending {
		pr, err := c.prepare(snap, p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kschedcheck:", err)
			os.Exit(2)
		}
		var fits []string
		why := map[string]int{}
		for _, n := range d.Nodes {
			pl, r := c.judge(pr, p, n.Name)
			if pl == "" {
				fits = append(fits, n.Name)
			} else {
				why[pl+": "+r]++
			}
		}
		if len(fits) > 0 {
			more := ""
			if len(fits) > 5 {
				more = fmt.Sprintf(" and %d more", len(fits)-5)
				fits = fits[:5]
			}
			fmt.Printf("DISAGREE pending %s: upstream's filters let it onto %s%s\n", key(p),
				strings.Join(fits, ", "), more)
			disagree++
			byPlugin["pending"]++
		} else if *verbose {
			reasons := make([]string, 0, len(why))
			for r, k := range why {
				reasons = append(reasons, fmt.Sprintf("%d× %s", k, r))
			}
			sort.Strings(reasons)
			fmt.Printf("pending %s: 0/%d nodes: %s\n", key(p), len(d.Nodes),
				strings.Join(reasons, " | "))
		}
	}
	// the pods with claims: the nodes their volumes allow, by upstream's VolumeBinding alone
	claimed := 0
	for _, p := range append(append([]*v1.Pod{}, mine...), pending...) {
		uses := false
		for _, vol := range p.Spec.Volumes {
			uses = uses || vol.PersistentVolumeClaim != nil
		}
		if !uses {
			continue
		}
		claimed++
		pr, err := c.prepare(snap, p)
		if err == nil {
			var ok []string
			if ok, err = c.volumeNodes(pr, p); err == nil {
				list := strings.Join(ok, ", ")
				if len(ok) > 5 {
					list = strings.Join(ok[:5], ", ") + fmt.Sprintf(" and %d more", len(ok)-5)
				}
				fmt.Printf("volumes %s: VolumeBinding lets it onto %d/%d nodes: %s\n", key(p),
					len(ok), len(d.Nodes), list)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kschedcheck:", err)
			os.Exit(2)
		}
	}
	// one over-allocated node makes every pod on it a disagreement: say which nodes and by what
	for _, n := range d.Nodes {
		ni, err := snap.NodeInfos().Get(n.Name)
		if err != nil {
			continue
		}
		if over := overAllocated(ni); over != "" {
			fmt.Printf("node %s over allocatable (the sum of its pods' requests as upstream "+
				"counts them): %s\n", n.Name, over)
		}
	}
	kinds := make([]string, 0, len(byPlugin))
	for k, v := range byPlugin {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(kinds)
	detail := ""
	if len(kinds) > 0 {
		detail = " (" + strings.Join(kinds, ", ") + ")"
	}
	fmt.Printf("kschedcheck: %d nodes, %d pods, %d volumes, %d claims: %d bound (%d of %s "+
		"checked), %d pending checked, %d of them with claims; %d disagreements%s\n",
		len(d.Nodes), len(d.Pods), len(d.PVs), len(d.PVCs), len(bound), len(mine), *schedName,
		len(pending), claimed, disagree, detail)
	if disagree > 0 {
		os.Exit(1)
	}
}
