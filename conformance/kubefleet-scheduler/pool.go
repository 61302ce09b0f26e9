package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// poolCluster is one member cluster every scenario reuses: Fleet runs an
// agent on an embedded simulated cluster of this size; KubeFleet gets a
// MemberCluster whose status is what Fleet's agent reported.
type poolCluster struct {
	Name        string
	Nodes       int
	Capacity    string // per node, --sim-capacity
	Allocatable string // per node, --sim-allocatable
	Cost        string // --sim-cost ("" reports no cost properties)
}

// pool holds sizes chosen so that node counts, CPU and memory have ties
// and spreads, and only some clusters report costs.
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

// properties are the pool's properties as Fleet reports them, read once:
// property name → value per cluster, the resource properties included
// (resources.kubernetes-fleet.io/<total|allocatable|available>-<cpu|memory>).
type properties map[string]map[string]string

// capacityNames maps resourceUsage's fields to the property capacity types.
var capacityNames = map[string]string{"capacity": "total", "allocatable": "allocatable", "available": "available"}

// mirrorPool waits until Fleet shows every pool cluster as a MemberCluster
// with its properties and resource usage, then makes KubeFleet's
// MemberCluster of the same name with the same status (what KubeFleet's
// member agent would report, joined and healthy), and returns the
// properties.
func mirrorPool(ctx context.Context, fleet, kf *side) (properties, error) {
	out := properties{}
	for _, c := range pool {
		var status map[string]interface{}
		err := poll(ctx, 120*time.Second, "Fleet's MemberCluster "+c.Name+" with properties and resource usage", func() (bool, string, error) {
			u, err := fleet.get(ctx, gvrMember, "", c.Name)
			if err != nil || u == nil {
				return false, fmt.Sprint(err), nil
			}
			status, _, _ = unstructured.NestedMap(u.Object, "status")
			props, _, _ := unstructured.NestedMap(status, "properties")
			allocatable, _, _ := unstructured.NestedMap(status, "resourceUsage", "allocatable")
			available, _, _ := unstructured.NestedMap(status, "resourceUsage", "available")
			return len(props) > 0 && len(allocatable) > 0 && len(available) > 0, fmt.Sprint(status), nil
		})
		if err != nil {
			return nil, err
		}
		out[c.Name] = map[string]string{}
		props, _, _ := unstructured.NestedMap(status, "properties")
		for name, v := range props {
			m, _ := v.(map[string]interface{})
			value, _ := m["value"].(string)
			// Scenarios select and sort on quantities only: KubeFleet's
			// scheduler fails a whole scheduling cycle on a property that
			// is not one (Fleet's `fleet.kubernetes-fleet.io/target`).
			if _, err := resource.ParseQuantity(value); err == nil {
				out[c.Name][name] = value
			}
		}
		usage, _, _ := unstructured.NestedMap(status, "resourceUsage")
		for field, kind := range capacityNames {
			list, _ := usage[field].(map[string]interface{})
			for resource, v := range list {
				value, _ := v.(string)
				out[c.Name]["resources.kubernetes-fleet.io/"+kind+"-"+resource] = value
			}
		}
		if err := kf.remove(ctx, gvrMember, "", c.Name); err != nil {
			return nil, err
		}
		err = poll(ctx, 30*time.Second, "old MemberCluster "+c.Name+" gone", func() (bool, string, error) {
			u, err := kf.get(ctx, gvrMember, "", c.Name)
			return u == nil, "", err
		})
		if err != nil {
			return nil, err
		}
		if err := kf.ensureNamespace(ctx, "fleet-member-"+c.Name); err != nil {
			return nil, err
		}
		object := map[string]interface{}{
			"apiVersion": clusterGroup + "/v1beta1",
			"kind":       "MemberCluster",
			"metadata":   map[string]interface{}{"name": c.Name},
			"spec": map[string]interface{}{
				"identity":               map[string]interface{}{"kind": "ServiceAccount", "name": "fleet-member-agent-" + c.Name, "namespace": "fleet-system"},
				"heartbeatPeriodSeconds": int64(60),
			},
			"status": memberStatus(props, usage, time.Now()),
		}
		if err := kf.create(ctx, gvrMember, object); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// memberStatus is a joined, healthy member's status with the given
// properties and resource usage, heartbeating at `now`.
func memberStatus(props, usage map[string]interface{}, now time.Time) map[string]interface{} {
	at := now.UTC().Format(time.RFC3339)
	cond := func(kind, reason string) interface{} {
		return map[string]interface{}{"type": kind, "status": "True", "reason": reason, "message": reason, "lastTransitionTime": at, "observedGeneration": int64(1)}
	}
	return map[string]interface{}{
		"conditions":    []interface{}{cond("ReadyToJoin", "MemberClusterReadyToJoin"), cond("Joined", "MemberClusterJoined")},
		"properties":    deepCopyValue(props),
		"resourceUsage": deepCopyValue(usage),
		"agentStatus": []interface{}{map[string]interface{}{
			"type":                  "MemberAgent",
			"conditions":            []interface{}{cond("Joined", "MemberJoined"), cond("Healthy", "MemberHealthy")},
			"lastReceivedHeartbeat": at,
		}},
	}
}

// heartbeat renews the member agent's heartbeat of every pool cluster on
// the KubeFleet side (its scheduler counts a cluster without one in five
// minutes as gone); nothing else changes.
func heartbeat(ctx context.Context, kf *side) error {
	at := time.Now().UTC().Format(time.RFC3339)
	for _, c := range pool {
		for attempt := 0; ; attempt++ {
			u, err := kf.get(ctx, gvrMember, "", c.Name)
			if err != nil || u == nil {
				return fmt.Errorf("KubeFleet's MemberCluster %s: %v", c.Name, err)
			}
			agents, _, _ := unstructured.NestedSlice(u.Object, "status", "agentStatus")
			for _, a := range agents {
				if m, ok := a.(map[string]interface{}); ok {
					m["lastReceivedHeartbeat"] = at
				}
			}
			if err := unstructured.SetNestedSlice(u.Object, agents, "status", "agentStatus"); err != nil {
				return err
			}
			_, err = kf.resource(gvrMember, "").UpdateStatus(ctx, u, metav1.UpdateOptions{})
			if err == nil {
				break
			}
			if attempt > 20 {
				return fmt.Errorf("kubefleet: heartbeat of %s: %w", c.Name, err)
			}
		}
	}
	return nil
}

// names lists every property name any pool cluster has, sorted.
func (p properties) names() []string {
	seen := map[string]bool{}
	for _, m := range p {
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

// values lists the values property `name` takes over the pool, sorted.
func (p properties) values(name string) []string {
	seen := map[string]bool{}
	for _, m := range p {
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

// fleetOwnLabel says whether a label on a MemberCluster is the
// implementation's own (kept when a scenario sets the labels).
func fleetOwnLabel(key string) bool {
	return strings.Contains(key, "kubernetes-fleet.io/")
}
