package main

import (
	"fmt"
	"math/rand"
	"sort"
)

// obj is an object as JSON (what both sides are sent).
type obj = map[string]interface{}

// clusterSetup is what a scenario sets on one pool cluster.
type clusterSetup struct {
	Labels map[string]string
	Taints []interface{}
}

// scenario is one random but valid KubeFleet situation: the pool
// clusters' labels and taints, a namespace to place, and 1-3
// ClusterResourcePlacements of it or ResourcePlacements in it, created
// together; then, once they settled, a change to some clusters and
// placements.
type scenario struct {
	Index      int
	Namespace  string
	Clusters   map[string]clusterSetup
	Placements []obj
	Change     change
	// Edit is the policy each edited placement gets once the change
	// settled, by name (in about a third of the scenarios).
	Edit map[string]obj
	// edited is set once the edits were made on both sides.
	edited bool
	// Member is a cluster beyond the pool that joins before the
	// placements are made and, once they settled, leaves or stops
	// heartbeating (in about one scenario in six).
	Member *member
}

// member is a scenario's own cluster: an agent on an embedded cluster of
// a pool cluster's size, joining with labels and taints, and then either
// leaving (its MemberCluster deleted) or going silent (its agent stopped,
// then relabelled, which makes both schedulers look again).
type member struct {
	Name  string
	Like  string // the pool cluster whose size it has
	Setup clusterSetup
	// Leaves: deleted; otherwise silent, with new labels.
	Leaves  bool
	Relabel map[string]string
}

// drawMember draws a scenario's own cluster, or none.
func drawMember(r *rand.Rand, seed int64, index int) *member {
	if r.Intn(6) != 0 {
		return nil
	}
	m := &member{Name: fmt.Sprintf("m%d-%d", seed, index), Like: pick(r, pool).Name, Setup: drawCluster(r), Leaves: r.Intn(2) == 0}
	if !m.Leaves {
		m.Relabel = drawCluster(r).Labels
	}
	return m
}

// The label vocabulary of the generated clusters and selectors.
var labelValues = map[string][]string{
	"env":  {"prod", "dev", "test"},
	"tier": {"gold", "silver"},
	"zone": {"a", "b", "c"},
}

var labelKeys = []string{"env", "tier", "zone"}

var taintKeys = []string{"maintenance", "gpu", "spot"}

// generator draws scenarios from a seed; scenario i depends only on the
// seed and i, so any one can be run again alone.
type generator struct {
	seed  int64
	props properties
}

func (g *generator) scenario(index int) *scenario {
	r := rand.New(rand.NewSource(g.seed*1_000_003 + int64(index)))
	s := &scenario{Index: index, Namespace: fmt.Sprintf("kf-oracle-%d-%d", g.seed, index), Clusters: map[string]clusterSetup{}}
	for _, c := range pool {
		s.Clusters[c.Name] = drawCluster(r)
	}
	for i := 0; i < 1+r.Intn(3); i++ {
		name := fmt.Sprintf("s%d-%d-p%d", g.seed, index, i+1)
		s.Placements = append(s.Placements, g.placement(r, name, s.Namespace))
	}
	// Drawn last, so a scenario's first phase is what it was before
	// changes were drawn.
	s.Change = drawChange(r, s.Placements)
	// Drawn after the change, so the change is what it was before edits
	// were drawn.
	s.Edit = g.drawEdit(r, s.Placements, s.Change.Scale)
	// Drawn last, for the same reason.
	s.Member = drawMember(r, g.seed, index)
	// And last again: some placements are ResourcePlacements.
	for i, p := range s.Placements {
		if r.Intn(3) == 0 {
			s.Placements[i] = resourcePlacement(p, s.Namespace)
		}
	}
	return s
}

// configMap is the object a scenario's ResourcePlacements select, in its
// namespace.
const configMap = "kf-oracle"

// resourcePlacement turns a ClusterResourcePlacement into a
// ResourcePlacement in the namespace, with the same policy, selecting
// the namespace's ConfigMap.
func resourcePlacement(p obj, namespace string) obj {
	rp := deepCopy(p)
	rp["kind"] = "ResourcePlacement"
	rp["metadata"] = obj{"name": name(p), "namespace": namespace}
	spec, _ := rp["spec"].(obj)
	spec["resourceSelectors"] = []interface{}{obj{"group": "", "version": "v1", "kind": "ConfigMap", "name": configMap}}
	return rp
}

// drawCluster draws one pool cluster's labels and taints.
func drawCluster(r *rand.Rand) clusterSetup {
	labels := map[string]string{}
	for _, k := range labelKeys {
		if r.Intn(10) < 7 {
			labels[k] = pick(r, labelValues[k])
		}
	}
	var taints []interface{}
	if r.Intn(10) < 3 {
		seen := map[string]bool{}
		for i := 0; i < 1+r.Intn(2); i++ {
			taint := obj{"key": pick(r, taintKeys), "effect": "NoSchedule"}
			if r.Intn(2) == 0 {
				taint["value"] = pick(r, []string{"true", "soon"})
			}
			if !seen[taint["key"].(string)] {
				seen[taint["key"].(string)] = true
				taints = append(taints, taint)
			}
		}
	}
	return clusterSetup{Labels: labels, Taints: taints}
}

// change is what happens once a scenario's placements settled: 1-3
// clusters get new labels and taints, and some PickN placements a new
// numberOfClusters. Both schedulers then work from bindings that exist,
// which is where "IgnoredDuringExecution", taints that do not evict and
// scaling that keeps the clusters chosen show.
type change struct {
	Clusters map[string]clusterSetup
	Scale    map[string]int64
}

func drawChange(r *rand.Rand, placements []obj) change {
	c := change{Clusters: map[string]clusterSetup{}, Scale: map[string]int64{}}
	for i := 0; i < 1+r.Intn(3); i++ {
		c.Clusters[pick(r, pool).Name] = drawCluster(r)
	}
	for _, p := range placements {
		spec, _ := p["spec"].(obj)
		policy, _ := spec["policy"].(obj)
		if policy != nil && policy["placementType"] == "PickN" && r.Intn(2) == 0 {
			c.Scale[name(p)] = int64(r.Intn(len(pool) + 2))
		}
	}
	return c
}

// placement draws a ClusterResourcePlacement of the scenario's namespace
// with a policy valid under KubeFleet's validation (what its webhook
// accepts): PickAll with required affinity and tolerations, PickFixed with
// names only, PickN with all of affinity, spread and tolerations.
func (g *generator) placement(r *rand.Rand, name, namespace string) obj {
	policy := g.policy(r, r.Intn(20))
	spec := obj{"resourceSelectors": []interface{}{obj{"group": "", "version": "v1", "kind": "Namespace", "name": namespace}}}
	if policy != nil {
		spec["policy"] = policy
	}
	return obj{
		"apiVersion": placementGroup + "/v1beta1", "kind": "ClusterResourcePlacement",
		"metadata": obj{"name": name}, "spec": spec,
	}
}

// The policy kinds, as policy draws them from 0..19.
const (
	kindNone     = 0
	kindPickAll  = 1
	kindPickFix  = 6
	kindPickN    = 9
	policyKinds  = 20
	pickAllKinds = kindPickFix - kindPickAll
)

// policy draws a policy of a kind (0..19: none, PickAll, PickFixed, PickN).
func (g *generator) policy(r *rand.Rand, kind int) obj {
	policy := obj{}
	switch {
	case kind < kindPickAll:
		policy = nil
	case kind < kindPickFix:
		policy["placementType"] = "PickAll"
	case kind < kindPickN:
		policy["placementType"] = "PickFixed"
		chosen := map[string]bool{}
		var names []interface{}
		for i := 0; i < 1+r.Intn(4); i++ {
			n := pick(r, append(poolNames(), "c9"))
			if !chosen[n] {
				chosen[n] = true
				names = append(names, n)
			}
		}
		policy["clusterNames"] = names
	default:
		policy["placementType"] = "PickN"
		policy["numberOfClusters"] = int64(r.Intn(len(pool) + 2))
	}
	if policy != nil && policy["placementType"] != "PickFixed" {
		affinity := obj{}
		if r.Intn(10) < 6 {
			var terms []interface{}
			for i := 0; i < 1+r.Intn(2); i++ {
				// A term has a label selector, a property selector or
				// both (Fleet refuses a term with neither).
				term := obj{}
				if r.Intn(10) < 5 {
					term["propertySelector"] = obj{"matchExpressions": g.propertyExpressions(r)}
				}
				if r.Intn(10) < 7 || term["propertySelector"] == nil {
					term["labelSelector"] = labelSelector(r)
				}
				terms = append(terms, term)
			}
			affinity["requiredDuringSchedulingIgnoredDuringExecution"] = obj{"clusterSelectorTerms": terms}
		}
		if policy["placementType"] == "PickN" && r.Intn(10) < 7 {
			var terms []interface{}
			for i := 0; i < 1+r.Intn(3); i++ {
				preference := obj{}
				if r.Intn(10) < 4 {
					preference["labelSelector"] = labelSelector(r)
				}
				if r.Intn(10) < 7 {
					preference["propertySorter"] = obj{
						"name":      pick(r, append(g.props.names(), "example.com/absent")),
						"sortOrder": pick(r, []string{"Ascending", "Descending"}),
					}
				}
				terms = append(terms, obj{"weight": int64(r.Intn(201) - 100), "preference": preference})
			}
			affinity["preferredDuringSchedulingIgnoredDuringExecution"] = terms
		}
		if len(affinity) > 0 {
			policy["affinity"] = obj{"clusterAffinity": affinity}
		}
		if policy["placementType"] == "PickN" && r.Intn(10) < 3 {
			var constraints []interface{}
			used := map[string]bool{}
			for i := 0; i < 1+r.Intn(2); i++ {
				key := pick(r, labelKeys)
				if used[key] {
					continue
				}
				used[key] = true
				c := obj{"topologyKey": key}
				if r.Intn(2) == 0 {
					c["maxSkew"] = int64(1 + r.Intn(2))
				}
				if r.Intn(3) != 0 {
					c["whenUnsatisfiable"] = pick(r, []string{"DoNotSchedule", "ScheduleAnyway"})
				}
				constraints = append(constraints, c)
			}
			policy["topologySpreadConstraints"] = constraints
		}
		if r.Intn(10) < 4 {
			var tolerations []interface{}
			seen := map[string]bool{}
			for i := 0; i < 1+r.Intn(2); i++ {
				t := obj{}
				if r.Intn(6) != 0 {
					t["key"] = pick(r, taintKeys)
				}
				if t["key"] == nil || r.Intn(2) == 0 {
					t["operator"] = "Exists"
				} else {
					if r.Intn(2) == 0 {
						t["operator"] = "Equal"
					}
					t["value"] = pick(r, []string{"true", "soon"})
				}
				if r.Intn(3) == 0 {
					t["effect"] = "NoSchedule"
				}
				key := tolerationKey(t)
				if !seen[key] {
					seen[key] = true
					tolerations = append(tolerations, t)
				}
			}
			policy["tolerations"] = tolerations
		}
	}
	return policy
}

// propertyExpressions draws 1-2 requirements over the pool's property
// names (and one no cluster has), each with one value the property takes
// or a value next to them.
func (g *generator) propertyExpressions(r *rand.Rand) []interface{} {
	var out []interface{}
	names := append(g.props.names(), "example.com/absent")
	for i := 0; i < 1+r.Intn(2); i++ {
		name := pick(r, names)
		values := append(g.props.values(name), "1", "3", "8Gi")
		out = append(out, obj{
			"name":     name,
			"operator": pick(r, []string{"Gt", "Ge", "Eq", "Ne", "Lt", "Le"}),
			"values":   []interface{}{pick(r, values)},
		})
	}
	return out
}

// labelSelector draws a selector over the label vocabulary (maybe empty).
func labelSelector(r *rand.Rand) obj {
	selector := obj{}
	if r.Intn(2) == 0 {
		k := pick(r, labelKeys)
		selector["matchLabels"] = obj{k: pick(r, labelValues[k])}
	}
	if r.Intn(2) == 0 {
		k := pick(r, labelKeys)
		selector["matchExpressions"] = []interface{}{expression(r, k, labelValues[k])}
	}
	return selector
}

func expression(r *rand.Rand, key string, values []string) obj {
	op := pick(r, []string{"In", "NotIn", "Exists", "DoesNotExist"})
	e := obj{"key": key, "operator": op}
	if op == "In" || op == "NotIn" {
		chosen := map[string]bool{}
		for i := 0; i < 1+r.Intn(2); i++ {
			chosen[pick(r, values)] = true
		}
		var list []string
		for v := range chosen {
			list = append(list, v)
		}
		sort.Strings(list)
		var vs []interface{}
		for _, v := range list {
			vs = append(vs, v)
		}
		e["values"] = vs
	}
	return e
}

func poolNames() []string {
	var out []string
	for _, c := range pool {
		out = append(out, c.Name)
	}
	return out
}

func pick[T any](r *rand.Rand, from []T) T {
	return from[r.Intn(len(from))]
}

// drawEdit draws, for about a third of the scenarios, new policies for some of
// their placements (at least one), each valid as an update under
// KubeFleet's validation: the placement type stays (no policy becomes a
// PickAll one), tolerations are only added, and a policy is never
// removed. A PickAll gets new required terms, a PickFixed new names, a
// PickN any of new required and preferred terms, spread constraints and
// numberOfClusters; `scale` is the numberOfClusters the change set.
func (g *generator) drawEdit(r *rand.Rand, placements []obj, scale map[string]int64) map[string]obj {
	edits := map[string]obj{}
	if r.Intn(3) != 0 {
		return edits
	}
	for i, p := range placements {
		if r.Intn(10) >= 6 && (len(edits) > 0 || i < len(placements)-1) {
			continue
		}
		spec, _ := p["spec"].(obj)
		old, _ := deepCopyValue(spec["policy"]).(obj)
		if n, ok := scale[name(p)]; ok {
			old["numberOfClusters"] = n
		}
		kind := kindPickAll + r.Intn(pickAllKinds)
		switch {
		case old == nil:
		case old["placementType"] == "PickFixed":
			kind = kindPickFix + r.Intn(kindPickN-kindPickFix)
		case old["placementType"] == "PickN":
			kind = kindPickN + r.Intn(policyKinds-kindPickN)
		}
		drawn := g.policy(r, kind)
		edited := drawn
		if old != nil && old["placementType"] == "PickN" {
			// Some of the PickN's fields are new, at least one.
			edited = deepCopy(old)
			changed := false
			for _, field := range []string{"numberOfClusters", "affinity", "topologySpreadConstraints"} {
				if r.Intn(2) == 0 {
					continue
				}
				changed = true
				if v, ok := drawn[field]; ok {
					edited[field] = v
				} else {
					delete(edited, field)
				}
			}
			if !changed {
				edited["affinity"] = drawn["affinity"]
				if drawn["affinity"] == nil {
					delete(edited, "affinity")
				}
			}
		}
		if old != nil {
			// Tolerations may only be added.
			var tolerations []interface{}
			seen := map[string]bool{}
			for _, list := range []interface{}{old["tolerations"], drawn["tolerations"]} {
				items, _ := list.([]interface{})
				for _, t := range items {
					if key := tolerationKey(t); !seen[key] {
						seen[key] = true
						tolerations = append(tolerations, t)
					}
				}
			}
			delete(edited, "tolerations")
			if len(tolerations) > 0 {
				edited["tolerations"] = tolerations
			}
		}
		edits[name(p)] = edited
	}
	return edits
}

// tolerationKey tells tolerations apart as stored (the operator defaults
// to Equal).
func tolerationKey(t interface{}) string {
	m, _ := deepCopyValue(t).(obj)
	if m["operator"] == nil {
		m["operator"] = "Equal"
	}
	return fmt.Sprint(m)
}
