package main

import (
	"fmt"
	"math/rand"
	"sort"
	"time"
)

// obj is an object as JSON (what both sides are sent).
type obj = map[string]interface{}

// clusterSetup is what a scenario sets on one pool cluster.
type clusterSetup struct {
	Labels map[string]string
	Taints []interface{}
}

// scenario is one random but valid OCM situation: the pool clusters'
// labels and taints, cluster sets, bindings, add-on scores, and
// placements created in batches (each batch settles before the next).
type scenario struct {
	Index      int
	Namespace  string
	Clusters   map[string]clusterSetup
	Sets       []obj
	Bindings   []obj
	Scores     []obj
	Placements [][]obj
}

// The label vocabulary of the generated clusters and selectors.
var labelValues = map[string][]string{
	"env":  {"prod", "dev", "test"},
	"tier": {"gold", "silver"},
	"zone": {"a", "b", "c"},
}

var labelKeys = []string{"env", "tier", "zone"}

// generator draws scenarios from a seed; scenario i depends only on the
// seed and i, so any one can be run again alone.
type generator struct {
	seed   int64
	claims claims
	// taintAdded is the timeAdded of every generated taint: far enough in
	// the past that a toleration of taintExpired seconds has run out and
	// one of taintValid seconds has not, during any run.
	taintAdded time.Time
}

const (
	taintExpired = 3600
	taintValid   = 864000
)

func (g *generator) scenario(index int) *scenario {
	r := rand.New(rand.NewSource(g.seed*1_000_003 + int64(index)))
	// CEL selectors draw from their own source, so that adding them left
	// every other draw of a scenario as it was.
	rc := rand.New(rand.NewSource(g.seed*1_000_003 + int64(index) + 500_000_000_000))
	s := &scenario{Index: index, Namespace: fmt.Sprintf("oracle-%d-%d", g.seed, index), Clusters: map[string]clusterSetup{}}
	prefix := fmt.Sprintf("s%d-%d", g.seed, index)

	// Sets: 1-3 of this scenario, each by set label or by label selector.
	var exclusive, setNames []string
	for i := 0; i < 1+r.Intn(3); i++ {
		name := fmt.Sprintf("%s-%c", prefix, 'a'+i)
		setNames = append(setNames, name)
		selector := obj{"selectorType": "ExclusiveClusterSetLabel"}
		if r.Intn(10) < 4 {
			selector = obj{"selectorType": "LabelSelector", "labelSelector": g.labelSelector(r, false)}
		} else {
			exclusive = append(exclusive, name)
		}
		s.Sets = append(s.Sets, obj{
			"apiVersion": clusterGroup + "/v1beta2", "kind": "ManagedClusterSet",
			"metadata": obj{"name": name}, "spec": obj{"clusterSelector": selector},
		})
	}

	// Clusters: labels (every cluster carries a set label, as OCM's hub
	// gives one to each), taints.
	for _, c := range pool {
		labels := map[string]string{}
		for _, k := range labelKeys {
			if r.Intn(10) < 7 {
				labels[k] = pick(r, labelValues[k])
			}
		}
		labels[setLabel] = "default"
		if len(exclusive) > 0 && r.Intn(4) != 0 {
			labels[setLabel] = pick(r, exclusive)
		}
		var taints []interface{}
		if r.Intn(10) < 3 {
			for i := 0; i < 1+r.Intn(2); i++ {
				taint := obj{
					"key":       pick(r, []string{"maintenance", "gpu", "spot"}),
					"effect":    pick(r, []string{"NoSelect", "NoSelectIfNew", "PreferNoSelect"}),
					"timeAdded": g.taintAdded.UTC().Format(time.RFC3339),
				}
				if r.Intn(2) == 0 {
					taint["value"] = pick(r, []string{"true", "soon"})
				}
				if !sameTaint(taints, taint) {
					taints = append(taints, taint)
				}
			}
		}
		s.Clusters[c.Name] = clusterSetup{Labels: labels, Taints: taints}
	}

	// Bindings in the scenario's namespace: some of its sets, maybe
	// global or default, maybe one to a set that does not exist.
	candidates := append(append([]string{}, setNames...), "global", "default", prefix+"-missing")
	bound := map[string]bool{}
	for _, name := range candidates {
		chance := 6
		if name == "global" || name == "default" || name == prefix+"-missing" {
			chance = 2
		}
		if r.Intn(10) < chance {
			bound[name] = true
			s.Bindings = append(s.Bindings, obj{
				"apiVersion": clusterGroup + "/v1beta2", "kind": "ManagedClusterSetBinding",
				"metadata": obj{"name": name, "namespace": s.Namespace}, "spec": obj{"clusterSet": name},
			})
		}
	}

	// Add-on scores: 0-2 resources, on most clusters, some expired.
	var resources []string
	for i := 0; i < r.Intn(3); i++ {
		resources = append(resources, fmt.Sprintf("%s-res%d", prefix, i))
	}
	for _, res := range resources {
		for _, c := range pool {
			if r.Intn(10) < 3 {
				continue
			}
			var scores []interface{}
			for _, name := range []string{"alpha", "beta"} {
				if r.Intn(10) < 8 {
					scores = append(scores, obj{"name": name, "value": int64(r.Intn(201) - 100)})
				}
			}
			status := obj{"scores": scores}
			switch r.Intn(4) {
			case 0:
				status["validUntil"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
			case 1:
				status["validUntil"] = time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
			}
			s.Scores = append(s.Scores, obj{
				"apiVersion": clusterGroup + "/v1alpha1", "kind": "AddOnPlacementScore",
				"metadata": obj{"name": res, "namespace": c.Name}, "status": status,
			})
		}
	}

	// Placements: 1-3; all but the last are created first, together, and
	// do not weight Balance (which reads other placements' decisions, so
	// that each settles before a placement that reads them).
	count := 1 + r.Intn(3)
	var first []obj
	for i := 0; i < count; i++ {
		last := i == count-1
		choices := append(append([]string{}, setNames...), "global", "default")
		p := g.placement(r, rc, fmt.Sprintf("p%d", i+1), s.Namespace, choices, resources, !last)
		if last {
			if len(first) > 0 {
				s.Placements = append(s.Placements, first)
			}
			s.Placements = append(s.Placements, []obj{p})
		} else {
			first = append(first, p)
		}
	}
	return s
}

func (g *generator) placement(r, rc *rand.Rand, name, namespace string, sets, resources []string, noBalance bool) obj {
	spec := obj{}
	if r.Intn(10) < 3 {
		var chosen []interface{}
		for _, s := range sets {
			if r.Intn(3) == 0 {
				chosen = append(chosen, s)
			}
		}
		if len(chosen) > 0 {
			spec["clusterSets"] = chosen
		}
	}
	if r.Intn(10) < 6 {
		spec["numberOfClusters"] = int64(r.Intn(len(pool) + 2))
	}
	if r.Intn(10) < 6 {
		var predicates []interface{}
		for i := 0; i < 1+r.Intn(2); i++ {
			selector := obj{}
			if r.Intn(10) < 7 {
				selector["labelSelector"] = g.labelSelector(r, true)
			}
			if r.Intn(10) < 5 {
				selector["claimSelector"] = obj{"matchExpressions": g.claimExpressions(r)}
			}
			if rc.Intn(10) < 3 {
				selector["celSelector"] = obj{"celExpressions": celExpressions(rc, resources)}
			}
			predicates = append(predicates, obj{"requiredClusterSelector": selector})
		}
		spec["predicates"] = predicates
	}
	spec["prioritizerPolicy"] = g.prioritizers(r, resources, noBalance)
	if r.Intn(10) < 4 {
		var tolerations []interface{}
		for i := 0; i < 1+r.Intn(2); i++ {
			t := obj{}
			if r.Intn(6) != 0 {
				t["key"] = pick(r, []string{"maintenance", "gpu", "spot"})
			}
			if t["key"] == nil || r.Intn(2) == 0 {
				t["operator"] = "Exists"
			} else {
				t["operator"] = "Equal"
				t["value"] = pick(r, []string{"true", "soon"})
			}
			if r.Intn(3) == 0 {
				t["effect"] = pick(r, []string{"NoSelect", "NoSelectIfNew", "PreferNoSelect"})
			}
			if r.Intn(3) == 0 {
				t["tolerationSeconds"] = int64(pick(r, []int{taintExpired, taintValid}))
			}
			tolerations = append(tolerations, t)
		}
		spec["tolerations"] = tolerations
	}
	// Spread only on the last placement: OCM does not implement it, and
	// what a placement decides feeds later ones' Balance.
	if !noBalance && r.Intn(10) < 2 {
		var constraints []interface{}
		for i := 0; i < 1+r.Intn(2); i++ {
			c := obj{"topologyKey": pick(r, labelKeys), "topologyKeyType": "Label"}
			if r.Intn(3) == 0 {
				c = obj{"topologyKey": pick(r, g.claims.names()), "topologyKeyType": "Claim"}
			}
			if r.Intn(2) == 0 {
				c["maxSkew"] = int64(1 + r.Intn(2))
			}
			if r.Intn(2) == 0 {
				c["whenUnsatisfiable"] = pick(r, []string{"DoNotSchedule", "ScheduleAnyway"})
			}
			constraints = append(constraints, c)
		}
		spec["spreadPolicy"] = obj{"spreadConstraints": constraints}
	}
	if r.Intn(10) < 4 {
		groups := obj{}
		var decisionGroups []interface{}
		for i := 0; i < r.Intn(3); i++ {
			decisionGroups = append(decisionGroups, obj{
				"groupName":            fmt.Sprintf("g%d", i+1),
				"groupClusterSelector": obj{"labelSelector": g.labelSelector(r, true)},
			})
		}
		if len(decisionGroups) > 0 {
			groups["decisionGroups"] = decisionGroups
		}
		switch r.Intn(3) {
		case 0:
			groups["clustersPerDecisionGroup"] = int64(1 + r.Intn(3))
		case 1:
			groups["clustersPerDecisionGroup"] = pick(r, []string{"25%", "34%", "50%", "100%"})
		}
		spec["decisionStrategy"] = obj{"groupStrategy": groups}
	}
	return obj{
		"apiVersion": clusterGroup + "/v1beta1", "kind": "Placement",
		"metadata": obj{"name": name, "namespace": namespace}, "spec": spec,
	}
}

// prioritizers draws a prioritizer policy: a mode and 0-3 configurations
// over the built-in prioritizers and the scenario's add-on scores (and one
// that no cluster has).
func (g *generator) prioritizers(r *rand.Rand, resources []string, noBalance bool) obj {
	policy := obj{}
	mode := pick(r, []string{"", "Additive", "Exact"})
	if mode != "" {
		policy["mode"] = mode
	}
	var configs []interface{}
	used := map[string]bool{}
	for i := 0; i < r.Intn(4); i++ {
		var coordinate obj
		var key string
		if len(resources) > 0 && r.Intn(3) == 0 {
			res := pick(r, append(resources, "absent"))
			score := pick(r, []string{"alpha", "beta"})
			coordinate = obj{"type": "AddOn", "addOn": obj{"resourceName": res, "scoreName": score}}
			key = res + "/" + score
		} else {
			builtIn := pick(r, []string{"Balance", "Steady", "ResourceAllocatableCPU", "ResourceAllocatableMemory"})
			coordinate = obj{"builtIn": builtIn}
			if r.Intn(2) == 0 {
				coordinate["type"] = "BuiltIn"
			}
			key = builtIn
		}
		if used[key] {
			continue
		}
		used[key] = true
		config := obj{"scoreCoordinate": coordinate}
		if r.Intn(3) != 0 {
			config["weight"] = int64(r.Intn(21) - 10)
		}
		if noBalance && key == "Balance" {
			config["weight"] = int64(0)
		}
		// A negative Steady makes OCM's own controller flip its decisions
		// on every reconcile, for ever: nothing to compare.
		if w, ok := config["weight"].(int64); ok && key == "Steady" && w < 0 {
			config["weight"] = -w
		}
		configs = append(configs, config)
	}
	if noBalance && mode != "Exact" && !used["Balance"] {
		configs = append(configs, obj{"scoreCoordinate": obj{"builtIn": "Balance"}, "weight": int64(0)})
	}
	if len(configs) > 0 {
		policy["configurations"] = configs
	}
	return policy
}

// labelSelector draws a selector over the label vocabulary (and, for
// sets, never an empty one: that would be `global` again).
func (g *generator) labelSelector(r *rand.Rand, mayBeEmpty bool) obj {
	selector := obj{}
	if r.Intn(2) == 0 {
		k := pick(r, labelKeys)
		selector["matchLabels"] = obj{k: pick(r, labelValues[k])}
	}
	if r.Intn(2) == 0 || (!mayBeEmpty && len(selector) == 0) {
		k := pick(r, labelKeys)
		selector["matchExpressions"] = []interface{}{expression(r, k, labelValues[k])}
	}
	return selector
}

// claimExpressions draws 1-2 requirements over the pool's claim names
// (and one no cluster has) and values they take.
func (g *generator) claimExpressions(r *rand.Rand) []interface{} {
	var out []interface{}
	names := append(g.claims.names(), "region.example.com")
	for i := 0; i < 1+r.Intn(2); i++ {
		name := pick(r, names)
		values := g.claims.values(name)
		if len(values) == 0 {
			values = []string{"east"}
		}
		out = append(out, expression(r, name, append(values, "other")))
	}
	return out
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

// celExpressions draws 1-2 CEL expressions over what both sides' clusters
// show: labels, allocatable resources (OCM's quantity library), add-on
// scores (OCM's scores, of the scenario's resources and one no cluster
// has) and a JSON document (OCM's parseJSON).
func celExpressions(r *rand.Rand, resources []string) []interface{} {
	var out []interface{}
	for i := 0; i < 1+r.Intn(2); i++ {
		var e string
		switch r.Intn(5) {
		case 0:
			e = fmt.Sprintf("quantity(managedCluster.status.allocatable.cpu).isGreaterThan(quantity('%s'))",
				pick(r, []string{"1", "2", "2500m", "3500m", "4"}))
		case 1:
			e = fmt.Sprintf("quantity(managedCluster.status.allocatable.memory).compareTo(quantity('%s')) %s 0",
				pick(r, []string{"4Gi", "8Gi", "15Gi", "16G"}), pick(r, []string{">=", "<", "=="}))
		case 2:
			e = fmt.Sprintf("managedCluster.scores('%s').exists(s, s.name == '%s' && s.value > %d)",
				pick(r, append(append([]string{}, resources...), "absent")), pick(r, []string{"alpha", "beta"}), r.Intn(201)-100)
		case 3:
			k := pick(r, labelKeys)
			e = fmt.Sprintf("'%s' in managedCluster.metadata.labels && managedCluster.metadata.labels['%s'].startsWith('%s')",
				k, k, pick(r, labelValues[k])[:1])
		default:
			e = fmt.Sprintf("'{\"cores\": %d}'.parseJSON().cores <= quantity(managedCluster.status.allocatable.cpu).asApproximateFloat()",
				1+r.Intn(8))
		}
		out = append(out, e)
	}
	return out
}

func sameTaint(taints []interface{}, t obj) bool {
	for _, x := range taints {
		o, _ := x.(obj)
		if o["key"] == t["key"] && o["effect"] == t["effect"] {
			return true
		}
	}
	return false
}

func pick[T any](r *rand.Rand, from []T) T {
	return from[r.Intn(len(from))]
}
