// kschedcheck judges a scheduler's placements with kube-scheduler's own filter plugins
// (k8s.io/kubernetes v1.37.2, pkg/scheduler/framework/plugins, feature gates at their v1.37
// defaults, plugin arguments as the default KubeSchedulerConfiguration gives them): NodeName,
// NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
// VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, PodTopologySpread,
// InterPodAffinity and DynamicResources, in the default profile's order, over snapshots built
// by the scheduler's own cache.NewSnapshot, the way the plugins' unit tests run them. The
// volume and DRA plugins read claims, volumes, storage classes, CSINodes, CSIDrivers,
// CSIStorageCapacities, DeviceClasses, ResourceSlices and ResourceClaims from informers over a
// fake clientset holding the dump's, through the CSI and DRA managers the scheduler makes.
//
//	kschedcheck [-scheduler-name gpusched] [-order FILE] [-reasons] DUMP.json
//
// DUMP.json is {"nodes": [...], "pods": [...], "namespaces": [...], "persistentVolumes": [...],
// "persistentVolumeClaims": [...], "storageClasses": [...], "csiNodes": [...],
// "csiDrivers": [...], "csiStorageCapacities": [...], "deviceClasses": [...],
// "resourceSlices": [...], "resourceClaims": [...], "initialPersistentVolumes": [...],
// "initialPersistentVolumeClaims": [...], "initialResourceClaims": [...]} with the items of
// `kubectl get ... -o json` (all but nodes and pods optional). The initial lists are the
// claims and volumes before the scheduler started: a claim whose volume, bind-completed or
// selected-node annotation, or whose allocation, differs between the two was bound or
// allocated for a pod of the scheduler.
//
// FILE lists the scheduler's binds in the order it decided them, one "NAMESPACE/POD NODE" a
// line (a pod listed twice counts where it is listed last). The judgements, for the pods of
// the scheduler:
//
//	bind i  pod P on node N (the file's node; P as the dump has it, so that a pod whose
//	        spec.nodeName is another node fails NodeName): with a snapshot of the pinned
//	        pods (bound pods the file does not list: created with spec.nodeName, or another
//	        scheduler's) and of binds 1..i-1 on their nodes, and the claims and volumes as
//	        they stood then (the claims first used by bind i or later as the initial lists
//	        have them, with the volumes they are bound to; every other claim as the dump has
//	        it), PreFilter and Filter of every plugin must let P onto N. Then, where P's
//	        claims were bound or allocated for it: with its claims as the dump has them,
//	        VolumeBinding, VolumeZone and NodeVolumeLimits must let it onto N (the volumes the
//	        scheduler chose), a selected-node annotation it got must name N, and with the
//	        ResourceSlices cut down to the devices its claims got (beside those other claims
//	        hold) DynamicResources must let it onto N (the devices are a valid allocation).
//	pending P (no nodeName, not gated): with a snapshot of every bound pod and the dump's
//	        objects, no node passes every filter.
//
// A listed pod that the dump does not show bound (its bind failed or timed out) is left out.
// Without -order every bound pod of the scheduler is judged against every other bound pod and
// the dump's objects (the final state stands for the state at each bind only where nothing
// placed earlier was undone).
//
// Output: every disagreement ("DISAGREE bound|volumes|devices|pending ...") with the pod, node,
// the first plugin that refuses (the framework stops there) and upstream's reason, then
// "[refused by A, B]": every plugin that refuses it; for every pod of the scheduler that uses
// a claim, the nodes VolumeBinding alone lets it onto ("volumes NS/POD: VolumeBinding lets it
// onto K/N nodes: ..."); with -reasons upstream's reasons for each pending pod; for each
// plugin how many nodes it refused the judged binds at their turn and the pending pods
// ("refuses PLUGIN: R node(s) for M of B binds judged; R' node(s) for M' of P pending pods";
// NodeName left out: a bound pod names its node); the nodes whose requests exceed their
// allocatable; and a summary line. The exit status is 1 on any disagreement, 2 on bad input.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

type dump struct {
	Nodes          []*v1.Node                      `json:"nodes"`
	Pods           []*v1.Pod                       `json:"pods"`
	Namespaces     []*v1.Namespace                 `json:"namespaces"`
	PVs            []*v1.PersistentVolume          `json:"persistentVolumes"`
	PVCs           []*v1.PersistentVolumeClaim     `json:"persistentVolumeClaims"`
	StorageClasses []*storagev1.StorageClass       `json:"storageClasses"`
	CSINodes       []*storagev1.CSINode            `json:"csiNodes"`
	CSIDrivers     []*storagev1.CSIDriver          `json:"csiDrivers"`
	Capacities     []*storagev1.CSIStorageCapacity `json:"csiStorageCapacities"`
	DeviceClasses  []*resourceapi.DeviceClass      `json:"deviceClasses"`
	Slices         []*resourceapi.ResourceSlice    `json:"resourceSlices"`
	Claims         []*resourceapi.ResourceClaim    `json:"resourceClaims"`
	InitialPVs     *[]*v1.PersistentVolume         `json:"initialPersistentVolumes"`
	InitialPVCs    *[]*v1.PersistentVolumeClaim    `json:"initialPersistentVolumeClaims"`
	InitialClaims  *[]*resourceapi.ResourceClaim   `json:"initialResourceClaims"`
}

type checker struct {
	ctx           context.Context
	d             *dump
	registry      frameworkruntime.Registry
	args          map[string]runtime.Object
	filterPlugins []string
	namespaces    []*v1.Namespace
	worlds        map[string]*world
	// claims bound or allocated for a pod of the scheduler: key -> the initial object
	changedPVC   map[string]*v1.PersistentVolumeClaim
	changedClaim map[string]*resourceapi.ResourceClaim
	initialPV    map[string]*v1.PersistentVolume
}

func key(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func joinReasons(r []string) string { return strings.Join(r, "; ") }

func newCycleState() fwk.CycleState { return framework.NewCycleState() }

func resourceQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func ptrTo[T any](v T) *T { return &v }

func refusedBy(rs []refusal) string {
	n := make([]string, len(rs))
	for i, r := range rs {
		n[i] = r.plugin
	}
	return "[refused by " + strings.Join(n, ", ") + "]"
}

// podClaims lists the keys (namespace/name) of the PersistentVolumeClaims (generic ephemeral
// volumes' too) and of the ResourceClaims the pod uses.
func podClaims(p *v1.Pod) (pvcs, claims []string) {
	for i := range p.Spec.Volumes {
		vol := &p.Spec.Volumes[i]
		switch {
		case vol.PersistentVolumeClaim != nil:
			pvcs = append(pvcs, p.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName)
		case vol.Ephemeral != nil:
			pvcs = append(pvcs, p.Namespace+"/"+ephemeral.VolumeClaimName(p, vol))
		}
	}
	made := map[string]string{}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			made[s.Name] = *s.ResourceClaimName
		}
	}
	for _, rc := range p.Spec.ResourceClaims {
		switch {
		case rc.ResourceClaimName != nil:
			claims = append(claims, p.Namespace+"/"+*rc.ResourceClaimName)
		case made[rc.Name] != "":
			claims = append(claims, p.Namespace+"/"+made[rc.Name])
		}
	}
	return pvcs, claims
}

func pvcChanged(a, b *v1.PersistentVolumeClaim) bool {
	ann := func(c *v1.PersistentVolumeClaim, k string) string { return c.Annotations[k] }
	return a.Spec.VolumeName != b.Spec.VolumeName ||
		ann(a, "pv.kubernetes.io/bind-completed") != ann(b, "pv.kubernetes.io/bind-completed") ||
		ann(a, "volume.kubernetes.io/selected-node") != ann(b, "volume.kubernetes.io/selected-node")
}

// noteChanges finds the claims bound or allocated since the initial lists.
func (c *checker) noteChanges() {
	c.changedPVC = map[string]*v1.PersistentVolumeClaim{}
	c.changedClaim = map[string]*resourceapi.ResourceClaim{}
	c.initialPV = map[string]*v1.PersistentVolume{}
	if c.d.InitialPVs != nil {
		for _, pv := range *c.d.InitialPVs {
			c.initialPV[pv.Name] = pv
		}
	}
	if c.d.InitialPVCs != nil {
		init := map[string]*v1.PersistentVolumeClaim{}
		for _, x := range *c.d.InitialPVCs {
			init[x.Namespace+"/"+x.Name] = x
		}
		for _, x := range c.d.PVCs {
			k := x.Namespace + "/" + x.Name
			if i := init[k]; i != nil && pvcChanged(i, x) {
				c.changedPVC[k] = i
			}
		}
	}
	if c.d.InitialClaims != nil {
		init := map[string]*resourceapi.ResourceClaim{}
		for _, x := range *c.d.InitialClaims {
			init[x.Namespace+"/"+x.Name] = x
		}
		for _, x := range c.d.Claims {
			k := x.Namespace + "/" + x.Name
			if i := init[k]; i != nil && x.Status.Allocation != nil && i.Status.Allocation == nil {
				c.changedClaim[k] = i
			}
		}
	}
}

// objectsAt gives the claims and volumes with the changed claims for which reverted is true
// as the initial lists have them (a volume bound to one: as it was, or absent if it was
// provisioned since), and slices cut down to keep (nil: all).
func (c *checker) objectsAt(reverted func(string) bool, keep map[string]bool) objects {
	var o objects
	back := map[string]bool{}
	for _, x := range c.d.PVCs {
		k := x.Namespace + "/" + x.Name
		if i := c.changedPVC[k]; i != nil && reverted(k) {
			o.pvcs = append(o.pvcs, i)
			back[k] = true
		} else {
			o.pvcs = append(o.pvcs, x)
		}
	}
	for _, x := range c.d.PVs {
		if r := x.Spec.ClaimRef; r != nil && back[r.Namespace+"/"+r.Name] {
			if i := c.initialPV[x.Name]; i != nil {
				o.pvs = append(o.pvs, i)
			}
			continue
		}
		o.pvs = append(o.pvs, x)
	}
	for _, x := range c.d.Claims {
		k := x.Namespace + "/" + x.Name
		if i := c.changedClaim[k]; i != nil && reverted(k) {
			o.claims = append(o.claims, i)
		} else {
			o.claims = append(o.claims, x)
		}
	}
	for _, s := range c.d.Slices {
		if keep == nil {
			o.slices = append(o.slices, s)
			continue
		}
		cut := s.DeepCopy()
		cut.Spec.Devices = nil
		for _, dev := range s.Spec.Devices {
			if keep[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+dev.Name] {
				cut.Spec.Devices = append(cut.Spec.Devices, dev)
			}
		}
		o.slices = append(o.slices, cut)
	}
	return o
}

// worldFor makes (or reuses) the world of the objects objectsAt gives; id names it.
func (c *checker) worldFor(id string, reverted func(string) bool, keep map[string]bool) (*world, error) {
	if w := c.worlds[id]; w != nil {
		return w, nil
	}
	w, err := c.newWorld(c.objectsAt(reverted, keep))
	if err != nil {
		return nil, err
	}
	c.worlds[id] = w
	return w, nil
}

// bind is one placement of the scheduler: the pod as the dump has it, the node it was put on.
type bind struct {
	pod  *v1.Pod
	node string
	at   *v1.Pod // the pod on that node, as later snapshots hold it
}

// readOrder reads FILE: the binds in the order decided, each pod where it is listed last.
func readOrder(path string) ([][2]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	last := map[string]int{}
	var lines [][2]string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		w := strings.Fields(t)
		if len(w) != 2 || !strings.Contains(w[0], "/") {
			return nil, fmt.Errorf("%s:%d: want NAMESPACE/POD NODE, have %q", path, n, t)
		}
		last[w[0]] = len(lines)
		lines = append(lines, [2]string{w[0], w[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(last))
	for i, l := range lines {
		if last[l[0]] == i {
			out = append(out, l)
		}
	}
	return out, nil
}

type tally struct {
	disagree int
	byKind   map[string]int
	refuses  map[string][2]int // plugin -> nodes refused, binds with a node refused
	pending  map[string][2]int // the same for the pending pods
}

// count adds a pod's refusals on one node; hit holds the plugins that refused it a node before.
func count(m map[string][2]int, rs []refusal, hit map[string]bool) {
	for _, r := range rs {
		if r.plugin == names.NodeName {
			continue
		}
		x := m[r.plugin]
		x[0]++
		if !hit[r.plugin] {
			hit[r.plugin] = true
			x[1]++
		}
		m[r.plugin] = x
	}
}

func (t *tally) add(kind string) {
	t.disagree++
	t.byKind[kind]++
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "kschedcheck: "+format+"\n", a...)
	os.Exit(2)
}

func main() {
	schedName := flag.String("scheduler-name", "gpusched", "judge the pods of this scheduler")
	orderFile := flag.String("order", "", "the scheduler's binds in the order decided (NAMESPACE/POD NODE a line)")
	verbose := flag.Bool("reasons", false, "print upstream's reasons for every pending pod")
	flag.Parse()
	// the plugins log at V(4) and V(5); errors only
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", "0")
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: kschedcheck [-scheduler-name NAME] [-order FILE] [-reasons] DUMP.json")
		os.Exit(2)
	}
	raw, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fail("%v", err)
	}
	var d dump
	if err := json.Unmarshal(raw, &d); err != nil {
		fail("reading the dump: %v", err)
	}
	if len(d.Nodes) == 0 {
		fail("the dump has no nodes")
	}
	sort.Slice(d.Nodes, func(i, j int) bool { return d.Nodes[i].Name < d.Nodes[j].Name })
	sort.Slice(d.Pods, func(i, j int) bool { return key(d.Pods[i]) < key(d.Pods[j]) })

	ctx := context.Background()
	metrics.Register() // the parallelizer the plugins use records into the scheduler's metrics
	cfg, err := latest.Default()
	if err != nil {
		fail("default configuration: %v", err)
	}
	c := &checker{ctx: ctx, d: &d, registry: plugins.NewInTreeRegistry(),
		args: map[string]runtime.Object{}, filterPlugins: defaultFilters(), worlds: map[string]*world{}}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		c.args[pc.Name] = pc.Args
	}
	seen := map[string]bool{}
	c.namespaces = append(c.namespaces, d.Namespaces...)
	for _, ns := range d.Namespaces {
		seen[ns.Name] = true
	}
	for _, p := range d.Pods {
		if !seen[p.Namespace] { // a namespace the dump lacks: its name label only
			seen[p.Namespace] = true
			ns := &v1.Namespace{}
			ns.Name = p.Namespace
			ns.Labels = map[string]string{"kubernetes.io/metadata.name": p.Namespace}
			c.namespaces = append(c.namespaces, ns)
		}
	}
	c.noteChanges()

	nodeNames := map[string]bool{}
	for _, n := range d.Nodes {
		nodeNames[n.Name] = true
	}
	byKey := map[string]*v1.Pod{}
	var bound, pending []*v1.Pod
	gated := 0
	for _, p := range d.Pods {
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue // the scheduler's cache holds no terminal pods
		}
		byKey[key(p)] = p
		switch {
		case p.Spec.NodeName != "":
			bound = append(bound, p)
		case p.Spec.SchedulerName != *schedName || p.DeletionTimestamp != nil:
		case len(p.Spec.SchedulingGates) > 0:
			gated++ // kube-scheduler does not try a gated pod (SchedulingGates' PreEnqueue)
		default:
			pending = append(pending, p)
		}
	}

	// the binds to judge, in order, and the pods bound before any of them
	var binds []bind
	unbound := 0
	if *orderFile != "" {
		order, err := readOrder(*orderFile)
		if err != nil {
			fail("%v", err)
		}
		for _, o := range order {
			p := byKey[o[0]]
			if p == nil || p.Spec.NodeName == "" {
				unbound++
				continue
			}
			at := p.DeepCopy()
			at.Spec.NodeName = o[1]
			binds = append(binds, bind{pod: p, node: o[1], at: at})
		}
	} else {
		for _, p := range bound {
			if p.Spec.SchedulerName == *schedName {
				binds = append(binds, bind{pod: p, node: p.Spec.NodeName, at: p})
			}
		}
	}
	listed := map[string]bool{}
	for _, b := range binds {
		listed[key(b.pod)] = true
	}
	var pinned []*v1.Pod
	pinnedMine := 0
	for _, p := range bound {
		if !listed[key(p)] {
			pinned = append(pinned, p)
			if p.Spec.SchedulerName == *schedName {
				pinnedMine++
			}
		}
	}
	// where each changed claim is first used
	first := map[string]int{}
	for i, b := range binds {
		pvcs, claims := podClaims(b.pod)
		for _, k := range append(pvcs, claims...) {
			if _, ok := first[k]; !ok {
				first[k] = i
			}
		}
	}
	changed := func(p *v1.Pod) (pvc, dra bool) {
		pvcs, claims := podClaims(p)
		for _, k := range pvcs {
			pvc = pvc || c.changedPVC[k] != nil
		}
		for _, k := range claims {
			dra = dra || c.changedClaim[k] != nil
		}
		return pvc, dra
	}
	// claims first used at bind from or later (or by no bind) as they were
	since := func(from int) func(string) bool {
		return func(k string) bool {
			i, ok := first[k]
			return !ok || i >= from
		}
	}
	none := func(string) bool { return false }

	t := &tally{byKind: map[string]int{}, refuses: map[string][2]int{}, pending: map[string][2]int{}}
	claimed := 0
	for i, b := range binds {
		p := b.pod
		if !nodeNames[b.node] {
			fmt.Printf("DISAGREE bound %s on %s: no such node in the dump\n", key(p), b.node)
			t.add("bound")
			continue
		}
		var others []*v1.Pod
		if *orderFile != "" {
			others = make([]*v1.Pod, 0, len(pinned)+i)
			others = append(others, pinned...)
			for _, e := range binds[:i] {
				others = append(others, e.at)
			}
		} else {
			others = make([]*v1.Pod, 0, len(bound))
			for _, o := range bound {
				if o != p {
					others = append(others, o)
				}
			}
		}
		snap := cache.NewSnapshot(others, d.Nodes)
		pvcChg, draChg := changed(p)
		w, err := c.worldFor("final", none, nil)
		if *orderFile != "" && (pvcChg || draChg) {
			w, err = c.worldFor(fmt.Sprintf("at %d", i), since(i), nil)
		}
		if err != nil {
			fail("%v", err)
		}
		pr, err := c.prepare(w, snap, p)
		if err != nil {
			fail("%v", err)
		}
		if rs := c.judge(pr, p, b.node); len(rs) > 0 {
			fmt.Printf("DISAGREE bound %s on %s (bind %d of %d): upstream's %s refuses it: %s %s\n",
				key(p), b.node, i+1, len(binds), rs[0].plugin, rs[0].reason, refusedBy(rs))
			t.add("bound")
		}
		// what the plugins refuse at this bind, on every node
		hit := map[string]bool{}
		for _, n := range d.Nodes {
			count(t.refuses, c.judge(pr, p, n.Name), hit)
		}
		if pvcs, _ := podClaims(p); len(pvcs) > 0 {
			claimed++
			if err := c.printVolumeNodes(pr, p); err != nil {
				fail("%v", err)
			}
		}
		if *orderFile == "" {
			continue
		}
		if pvcChg {
			c.checkChosenVolumes(t, i, b, snap, since(i+1))
		}
		if draChg {
			c.checkDevices(t, i, b, snap, since(i))
		}
	}

	// pending pods: against every bound pod, on every node
	snap := cache.NewSnapshot(bound, d.Nodes)
	wf, err := c.worldFor("final", none, nil)
	if err != nil {
		fail("%v", err)
	}
	for _, p := range pending {
		pr, err := c.prepare(wf, snap, p)
		if err != nil {
			fail("%v", err)
		}
		var fits []string
		why := map[string]int{}
		hit := map[string]bool{}
		for _, n := range d.Nodes {
			rs := c.judge(pr, p, n.Name)
			count(t.pending, rs, hit)
			if len(rs) == 0 {
				fits = append(fits, n.Name)
			} else {
				why[rs[0].plugin+": "+rs[0].reason]++
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
			t.add("pending")
		} else if *verbose {
			reasons := make([]string, 0, len(why))
			for r, k := range why {
				reasons = append(reasons, fmt.Sprintf("%d× %s", k, r))
			}
			sort.Strings(reasons)
			fmt.Printf("pending %s: 0/%d nodes: %s\n", key(p), len(d.Nodes), strings.Join(reasons, " | "))
		}
		if pvcs, _ := podClaims(p); len(pvcs) > 0 {
			claimed++
			if err := c.printVolumeNodes(pr, p); err != nil {
				fail("%v", err)
			}
		}
	}
	c.report(t, snap, len(binds), len(pinned), pinnedMine, unbound, len(pending), gated, claimed,
		*schedName)
	if t.disagree > 0 {
		os.Exit(1)
	}
}

// printVolumeNodes prints the nodes VolumeBinding alone lets pod onto.
func (c *checker) printVolumeNodes(pr *prepared, p *v1.Pod) error {
	var ok []string
	for _, n := range c.d.Nodes {
		yes, err := c.allows(pr, p, names.VolumeBinding, n.Name)
		if err != nil {
			return err
		}
		if yes {
			ok = append(ok, n.Name)
		}
	}
	list := strings.Join(ok, ", ")
	if len(ok) > 5 {
		list = strings.Join(ok[:5], ", ") + fmt.Sprintf(" and %d more", len(ok)-5)
	}
	fmt.Printf("volumes %s: VolumeBinding lets it onto %d/%d nodes: %s\n", key(p), len(ok),
		len(c.d.Nodes), list)
	return nil
}

// checkChosenVolumes judges bind i's claims as the scheduler bound them: the volume plugins
// must let the pod onto its node, and a selected-node annotation must name the node.
func (c *checker) checkChosenVolumes(t *tally, i int, b bind, snap *cache.Snapshot, reverted func(string) bool) {
	w, err := c.worldFor(fmt.Sprintf("after %d", i), reverted, nil)
	if err != nil {
		fail("%v", err)
	}
	pr, err := c.prepare(w, snap, b.pod)
	if err != nil {
		fail("%v", err)
	}
	var rs []refusal
	for _, r := range c.judge(pr, b.pod, b.node) {
		switch r.plugin {
		case names.VolumeBinding, names.VolumeZone, names.NodeVolumeLimits:
			rs = append(rs, r)
		}
	}
	if len(rs) > 0 {
		fmt.Printf("DISAGREE volumes %s on %s (bind %d): with the volumes it got, upstream's %s refuses it: %s %s\n",
			key(b.pod), b.node, i+1, rs[0].plugin, rs[0].reason, refusedBy(rs))
		t.add("volumes")
	}
	pvcs, _ := podClaims(b.pod)
	for _, k := range pvcs {
		for _, x := range c.d.PVCs {
			sel := x.Annotations["volume.kubernetes.io/selected-node"]
			if x.Namespace+"/"+x.Name == k && c.changedPVC[k] != nil && sel != "" && sel != b.node {
				fmt.Printf("DISAGREE volumes %s on %s (bind %d): claim %s has selected-node %s\n",
					key(b.pod), b.node, i+1, k, sel)
				t.add("volumes")
			}
		}
	}
}

// checkDevices judges bind i's ResourceClaims' allocations: with the slices cut down to the
// devices they got and those other claims then held, DynamicResources must still let the pod
// onto its node (its allocator finds an allocation from those devices alone).
func (c *checker) checkDevices(t *tally, i int, b bind, snap *cache.Snapshot, reverted func(string) bool) {
	keep := map[string]bool{}
	_, mine := podClaims(b.pod)
	own := map[string]bool{}
	for _, k := range mine {
		own[k] = true
	}
	for _, x := range c.d.Claims {
		k := x.Namespace + "/" + x.Name
		held := x.Status.Allocation != nil && (c.changedClaim[k] == nil || !reverted(k))
		if (own[k] || held) && x.Status.Allocation != nil {
			for _, r := range x.Status.Allocation.Devices.Results {
				keep[r.Driver+"/"+r.Pool+"/"+r.Device] = true
			}
		}
	}
	w, err := c.newWorld(c.objectsAt(reverted, keep))
	if err != nil {
		fail("%v", err)
	}
	defer w.close()
	pr, err := c.prepare(w, snap, b.pod)
	if err != nil {
		fail("%v", err)
	}
	for _, r := range c.judge(pr, b.pod, b.node) {
		if r.plugin == names.DynamicResources {
			fmt.Printf("DISAGREE devices %s on %s (bind %d): from the devices its claims got, upstream's %s finds no allocation: %s\n",
				key(b.pod), b.node, i+1, r.plugin, r.reason)
			t.add("devices")
		}
	}
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
	rs := make([]string, 0)
	for r := range req.GetScalarResources() {
		rs = append(rs, string(r))
	}
	sort.Strings(rs)
	for _, r := range rs {
		rn := v1.ResourceName(r)
		if q, a := req.GetScalarResources()[rn], alloc.GetScalarResources()[rn]; q > a {
			out = append(out, fmt.Sprintf("%s %d > %d", r, q, a))
		}
	}
	return strings.Join(out, ", ")
}

func (c *checker) report(t *tally, snap *cache.Snapshot, nbinds, npinned, pinnedMine, unbound,
	npending, gated, claimed int, schedName string) {
	// one over-allocated node makes every pod on it a disagreement: say which nodes and by what
	for _, n := range c.d.Nodes {
		ni, err := snap.NodeInfos().Get(n.Name)
		if err != nil {
			continue
		}
		if over := overAllocated(ni); over != "" {
			fmt.Printf("node %s over allocatable (the sum of its pods' requests as upstream "+
				"counts them): %s\n", n.Name, over)
		}
	}
	for _, pl := range c.filterPlugins {
		if pl == names.NodeName {
			continue
		}
		x, y := t.refuses[pl], t.pending[pl]
		fmt.Printf("refuses %s: %d node(s) for %d of %d binds judged; %d node(s) for %d of %d "+
			"pending pods\n", pl, x[0], x[1], nbinds, y[0], y[1], npending)
	}
	kinds := make([]string, 0, len(t.byKind))
	for k, v := range t.byKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(kinds)
	detail := ""
	if len(kinds) > 0 {
		detail = " (" + strings.Join(kinds, ", ") + ")"
	}
	fmt.Printf("kschedcheck: %d nodes, %d pods, %d volumes, %d claims, %d ResourceClaims, "+
		"%d filter plugins: %d binds of %s judged in order against %d pinned pods (%d of them "+
		"%s's), %d listed but not bound, %d pending checked, %d gated, %d with claims; "+
		"%d disagreements%s\n",
		len(c.d.Nodes), len(c.d.Pods), len(c.d.PVs), len(c.d.PVCs), len(c.d.Claims),
		len(c.filterPlugins), nbinds, schedName, npinned, pinnedMine, schedName, unbound, npending,
		gated, claimed, t.disagree, detail)
}
