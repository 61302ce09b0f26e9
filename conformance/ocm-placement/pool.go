package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// poolCluster is one member cluster every scenario reuses: Fleet runs an
// agent on an embedded simulated cluster of this size; OCM gets a
// ManagedCluster whose status is what Fleet's agent reported.
type poolCluster struct {
	Name        string
	Nodes       int
	Capacity    string // per node, --sim-capacity
	Allocatable string // per node, --sim-allocatable
	Cost        string // --sim-cost ("" reports no cost properties)
}

// pool holds sizes chosen so that allocatable CPU and memory have ties,
// spreads and millicores, and claims (node count, costs) differ.
var pool = []poolCluster{
	{"c1", 1, "cpu=2,memory=8Gi", "cpu=2,memory=8Gi", "per-cpu-core=0.045,per-gb-memory=0.006"},
	{"c2", 2, "cpu=4,memory=16Gi", "cpu=3500m,memory=15Gi", "per-cpu-core=0.05"},
	{"c3", 3, "cpu=2,memory=4Gi", "cpu=2,memory=4Gi", ""},
	{"c4", 1, "cpu=8,memory=32Gi", "cpu=8,memory=32Gi", "per-cpu-core=0.045,per-gb-memory=0.005"},
	{"c5", 2, "cpu=2,memory=8Gi", "cpu=2,memory=8Gi", ""},
	{"c6", 4, "cpu=1,memory=4Gi", "cpu=1,memory=4Gi", "per-gb-memory=0.006"},
	{"c7", 1, "cpu=4,memory=16Gi", "cpu=4,memory=16Gi", ""},
	{"c8", 2, "cpu=3,memory=6Gi", "cpu=2900m,memory=6Gi", "per-cpu-core=0.06"},
}

// printPool writes one line per pool cluster: its name, then the
// fleet-agent flags of its embedded cluster.
func printPool() {
	for _, c := range pool {
		line := fmt.Sprintf("%s --sim-nodes %d --sim-capacity %s --sim-allocatable %s", c.Name, c.Nodes, c.Capacity, c.Allocatable)
		if c.Cost != "" {
			line += " --sim-cost " + c.Cost
		}
		fmt.Println(line)
	}
}

// claims are the pool's cluster claims as Fleet reports them, read once:
// name → value per cluster.
type claims map[string]map[string]string

// mirrorPool waits until Fleet shows every pool cluster as a ManagedCluster
// with its resources and claims, then makes OCM's ManagedCluster of the
// same name with the same status (what OCM's registration agent would
// report), and returns the claims.
func mirrorPool(ctx context.Context, fleet, ocm *side) (claims, error) {
	out := claims{}
	for _, c := range pool {
		var status map[string]interface{}
		err := poll(ctx, 120*time.Second, "Fleet's ManagedCluster "+c.Name+" with resources and claims", func() (bool, string, error) {
			u, err := fleet.get(ctx, gvrCluster, "", c.Name)
			if err != nil || u == nil {
				return false, fmt.Sprint(err), nil
			}
			status, _, _ = unstructured.NestedMap(u.Object, "status")
			allocatable, _, _ := unstructured.NestedMap(status, "allocatable")
			claimList, _, _ := unstructured.NestedSlice(status, "clusterClaims")
			return len(allocatable) > 0 && len(claimList) > 0, fmt.Sprint(status), nil
		})
		if err != nil {
			return nil, err
		}
		out[c.Name] = map[string]string{}
		claimList, _, _ := unstructured.NestedSlice(status, "clusterClaims")
		for _, item := range claimList {
			m, _ := item.(map[string]interface{})
			name, _ := m["name"].(string)
			value, _ := m["value"].(string)
			out[c.Name][name] = value
		}
		now := time.Now().UTC().Format(time.RFC3339)
		mirrored := map[string]interface{}{
			"capacity":      status["capacity"],
			"allocatable":   status["allocatable"],
			"clusterClaims": claimList,
			"conditions": []interface{}{
				condition("HubAcceptedManagedCluster", "HubClusterAdminAccepted", now),
				condition("ManagedClusterJoined", "ManagedClusterJoined", now),
				condition("ManagedClusterConditionAvailable", "ManagedClusterAvailable", now),
			},
		}
		existing, err := ocm.get(ctx, gvrCluster, "", c.Name)
		if err != nil {
			return nil, err
		}
		if existing != nil {
			if _, err := ocm.remove(ctx, gvrCluster, "", c.Name); err != nil {
				return nil, err
			}
			err := poll(ctx, 30*time.Second, "old ManagedCluster "+c.Name+" gone", func() (bool, string, error) {
				u, err := ocm.get(ctx, gvrCluster, "", c.Name)
				return u == nil, "", err
			})
			if err != nil {
				return nil, err
			}
		}
		object := map[string]interface{}{
			"apiVersion": clusterGroup + "/v1",
			"kind":       "ManagedCluster",
			"metadata":   map[string]interface{}{"name": c.Name},
			"spec":       map[string]interface{}{"hubAcceptsClient": true},
			"status":     mirrored,
		}
		if _, err := ocm.create(ctx, gvrCluster, object); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func condition(kind, reason, now string) map[string]interface{} {
	return map[string]interface{}{"type": kind, "status": "True", "reason": reason, "message": reason, "lastTransitionTime": now}
}

// claimNames lists every claim name any pool cluster has, sorted.
func (c claims) names() []string {
	seen := map[string]bool{}
	for _, m := range c {
		for k := range m {
			seen[k] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// values lists the values claim `name` takes over the pool, sorted.
func (c claims) values(name string) []string {
	seen := map[string]bool{}
	for _, m := range c {
		if v, ok := m[name]; ok {
			seen[v] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ocmSets makes the two sets OCM's hub keeps by itself (its
// clusterset controller): `global` (every cluster) and `default` (the
// clusters labelled with it).
func ocmSets(ctx context.Context, ocm *side) error {
	for name, selector := range map[string]map[string]interface{}{
		"global":  {"selectorType": "LabelSelector", "labelSelector": map[string]interface{}{}},
		"default": {"selectorType": "ExclusiveClusterSetLabel"},
	} {
		existing, err := ocm.get(ctx, gvrSet, "", name)
		if err != nil {
			return err
		}
		if existing != nil {
			continue
		}
		set := map[string]interface{}{
			"apiVersion": clusterGroup + "/v1beta2", "kind": "ManagedClusterSet",
			"metadata": map[string]interface{}{"name": name},
			"spec":     map[string]interface{}{"clusterSelector": selector},
		}
		if _, err := ocm.create(ctx, gvrSet, set); err != nil {
			return err
		}
	}
	return nil
}

// fleetOwnLabel says whether a label on Fleet's ManagedCluster is Fleet's
// own (kept when a scenario sets the labels).
func fleetOwnLabel(key string) bool {
	return strings.Contains(key, "kubernetes-fleet.io/")
}
