package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// settleTimeout bounds how long one scenario's placements may take to settle.
const settleTimeout = 60 * time.Second

// cond is a status condition as compared (no transition time).
type cond struct {
	Status             string
	Reason             string
	Message            string
	ObservedGeneration int64
}

// decision is one cluster decision as compared.
type decision struct {
	Cluster  string
	Selected bool
	// Score is clusterScore as JSON, as the side wrote it ("null" if unset).
	Score  string
	Reason string
}

// binding is one ClusterResourceBinding as compared.
type binding struct {
	Cluster  string
	State    string
	Decision decision
}

// failed is one per-cluster ScheduleFailed entry of the placement's status.
type failed struct {
	Cluster string
	Reason  string
	Message string
}

// observation is what one side shows of one placement.
type observation struct {
	Generation int64
	Scheduled  *cond
	Failed     []failed
	// Snapshot is the latest policy snapshot's name, its Scheduled
	// condition, the placement generation it observed, and its decisions.
	Snapshot          string
	SnapshotScheduled *cond
	SnapshotGen       int64
	ObservedGen       int64
	Decisions         []decision
	Bindings          []binding
}

// applyBoth runs f on both sides at once.
func applyBoth(kf, fleet *side, f func(*side) error) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*side{kf, fleet} {
		wg.Add(1)
		go func(i int, s *side) {
			defer wg.Done()
			errs[i] = f(s)
		}(i, s)
	}
	wg.Wait()
	if errs[0] != nil {
		return errs[0]
	}
	return errs[1]
}

// setUp writes a scenario's cluster labels and taints and its namespace;
// returns the MemberClusters' resourceVersions written, by name.
func setUp(ctx context.Context, s *scenario, sd *side) (map[string]string, error) {
	if err := sd.ensureNamespace(ctx, s.Namespace); err != nil {
		return nil, err
	}
	cm := obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj{"name": configMap, "namespace": s.Namespace}, "data": obj{"k": "v"}}
	if err := sd.create(ctx, gvrConfigMap, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	versions := map[string]string{}
	for _, c := range pool {
		setup := s.Clusters[c.Name]
		version, err := sd.setMember(ctx, c.Name, setup.Labels, setup.Taints, fleetOwnLabel)
		if err != nil {
			return nil, err
		}
		versions[c.Name] = version
	}
	return versions, nil
}

// tearDown deletes a scenario's placements and namespace and waits until
// the placements and their bindings are gone.
func tearDown(ctx context.Context, s *scenario, sd *side) error {
	for _, p := range s.Placements {
		if err := sd.remove(ctx, kindOf(p).placement, kindOf(p).namespace, name(p)); err != nil {
			return err
		}
	}
	if err := sd.remove(ctx, gvrNamespace, "", s.Namespace); err != nil {
		return err
	}
	return poll(ctx, settleTimeout, sd.name+": the placements of scenario "+fmt.Sprint(s.Index)+" gone", func() (bool, string, error) {
		for _, p := range s.Placements {
			k := kindOf(p)
			u, err := sd.get(ctx, k.placement, k.namespace, name(p))
			if err != nil || u != nil {
				return false, name(p) + " left", err
			}
			bindings, err := sd.list(ctx, k.binding, k.namespace, parentLabel+"="+name(p))
			if err != nil || len(bindings) > 0 {
				return false, fmt.Sprintf("%d bindings of %s left", len(bindings), name(p)), err
			}
		}
		return true, "", nil
	})
}

// condition reads a condition of a type from a condition list.
func condition(list []interface{}, kind string) *cond {
	for _, c := range list {
		m, _ := c.(map[string]interface{})
		if t, _ := m["type"].(string); t != kind {
			continue
		}
		gen, _ := m["observedGeneration"].(int64)
		str := func(k string) string { v, _ := m[k].(string); return v }
		return &cond{Status: str("status"), Reason: str("reason"), Message: str("message"), ObservedGeneration: gen}
	}
	return nil
}

// readDecision reads a clusterDecision object.
func readDecision(m map[string]interface{}) decision {
	d := decision{}
	d.Cluster, _ = m["clusterName"].(string)
	d.Selected, _ = m["selected"].(bool)
	d.Reason, _ = m["reason"].(string)
	score, _ := json.Marshal(m["clusterScore"])
	d.Score = string(score)
	return d
}

// observe reads one placement on one side: its status, latest policy
// snapshot and bindings.
func observe(ctx context.Context, sd *side, p obj) (*observation, error) {
	k, placement := kindOf(p), name(p)
	u, err := sd.get(ctx, k.placement, k.namespace, placement)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, fmt.Errorf("%s: placement %s is gone", sd.name, placement)
	}
	o := &observation{Generation: u.GetGeneration()}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	o.Scheduled = condition(conditions, k.scheduled)
	statuses, _, _ := unstructured.NestedSlice(u.Object, "status", "placementStatuses")
	for _, item := range statuses {
		m, _ := item.(map[string]interface{})
		list, _ := m["conditions"].([]interface{})
		c := condition(list, "Scheduled")
		if c == nil || c.Status != "False" {
			continue
		}
		cluster, _ := m["clusterName"].(string)
		o.Failed = append(o.Failed, failed{Cluster: cluster, Reason: c.Reason, Message: c.Message})
	}
	sort.Slice(o.Failed, func(i, j int) bool { return o.Failed[i].Message < o.Failed[j].Message })
	snapshots, err := sd.list(ctx, k.snapshot, k.namespace, parentLabel+"="+placement+","+latestLabel+"=true")
	if err != nil {
		return nil, err
	}
	if len(snapshots) == 1 {
		snap := snapshots[0]
		o.Snapshot = snap.GetName()
		o.SnapshotGen = snap.GetGeneration()
		list, _, _ := unstructured.NestedSlice(snap.Object, "status", "conditions")
		o.SnapshotScheduled = condition(list, "Scheduled")
		o.ObservedGen, _, _ = unstructured.NestedInt64(snap.Object, "status", "observedCRPGeneration")
		decisions, _, _ := unstructured.NestedSlice(snap.Object, "status", "targetClusters")
		for _, d := range decisions {
			m, _ := d.(map[string]interface{})
			o.Decisions = append(o.Decisions, readDecision(m))
		}
		sort.Slice(o.Decisions, func(i, j int) bool { return o.Decisions[i].Cluster < o.Decisions[j].Cluster })
	}
	bindings, err := sd.list(ctx, k.binding, k.namespace, parentLabel+"="+placement)
	if err != nil {
		return nil, err
	}
	for _, b := range bindings {
		spec, _, _ := unstructured.NestedMap(b.Object, "spec")
		target, _ := spec["targetCluster"].(string)
		state, _ := spec["state"].(string)
		d, _ := spec["clusterDecision"].(map[string]interface{})
		o.Bindings = append(o.Bindings, binding{Cluster: target, State: state, Decision: readDecision(d)})
	}
	sort.Slice(o.Bindings, func(i, j int) bool { return o.Bindings[i].Cluster < o.Bindings[j].Cluster })
	return o, nil
}

// selected lists the clusters the policy snapshot selected.
func (o *observation) selected() []string {
	var out []string
	for _, d := range o.Decisions {
		if d.Selected {
			out = append(out, d.Cluster)
		}
	}
	return out
}

// bound lists the clusters of the bindings that are not being removed.
func (o *observation) bound() []string {
	var out []string
	for _, b := range o.Bindings {
		if b.State != "Unscheduled" {
			out = append(out, b.Cluster)
		}
	}
	return out
}

// consistent says whether an observation is a finished scheduling pass:
// the placement's Scheduled condition is known for its generation, the
// latest policy snapshot's is for its own, it observed the placement's
// generation, and the bindings are the selected clusters.
func (o *observation) consistent() bool {
	if o.Scheduled == nil || o.Scheduled.Status == "Unknown" || o.Scheduled.ObservedGeneration != o.Generation {
		return false
	}
	if o.SnapshotScheduled == nil || o.SnapshotScheduled.Status == "Unknown" || o.SnapshotScheduled.ObservedGeneration != o.SnapshotGen {
		return false
	}
	if o.ObservedGen != o.Generation {
		return false
	}
	return strings.Join(o.selected(), ",") == strings.Join(o.bound(), ",")
}

func (o *observation) fingerprint() string {
	text, _ := json.Marshal(o)
	return string(text)
}

// settle waits until every placement of a scenario is consistent on a
// side and nothing about them changed for `quiet`; returns the
// observations.
func settle(ctx context.Context, sd *side, placements []obj, quiet time.Duration) (map[string]*observation, error) {
	deadline := time.Now().Add(settleTimeout)
	var stableSince time.Time
	last := ""
	for {
		out := map[string]*observation{}
		all := true
		var prints []string
		for _, p := range placements {
			o, err := observe(ctx, sd, p)
			if err != nil {
				return nil, err
			}
			out[name(p)] = o
			all = all && o.consistent()
			prints = append(prints, o.fingerprint())
		}
		now := time.Now()
		print := strings.Join(prints, "\n")
		if !all || print != last {
			last, stableSince = print, now
		} else if now.Sub(stableSince) >= quiet {
			return out, nil
		}
		if now.After(deadline) {
			return out, fmt.Errorf("%s: placements not settled within %s", sd.name, settleTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func name(o obj) string {
	m, _ := o["metadata"].(map[string]interface{})
	n, _ := m["name"].(string)
	return n
}

// clustersAlike lists how the two sides' MemberClusters differ after a
// scenario's setup: labels (each side's own left out) and taints; a
// difference in the taints' timeAdded alone is its own field.
func clustersAlike(ctx context.Context, s *scenario, kf, fleet *side, list []writtenDown) ([]difference, error) {
	var out []difference
	for _, c := range pool {
		var shown, bare [2]string
		for i, sd := range []*side{kf, fleet} {
			u, err := sd.get(ctx, gvrMember, "", c.Name)
			if err != nil {
				return nil, err
			}
			if u == nil {
				return nil, fmt.Errorf("%s: MemberCluster %s is gone", sd.name, c.Name)
			}
			labels := map[string]string{}
			for k, v := range u.GetLabels() {
				if !fleetOwnLabel(k) {
					labels[k] = v
				}
			}
			taints, _, _ := unstructured.NestedSlice(u.Object, "spec", "taints")
			text, _ := json.Marshal(map[string]interface{}{"labels": labels, "taints": taints})
			shown[i] = string(text)
			for _, t := range taints {
				if m, ok := t.(map[string]interface{}); ok {
					delete(m, "timeAdded")
				}
			}
			text, _ = json.Marshal(map[string]interface{}{"labels": labels, "taints": taints})
			bare[i] = string(text)
		}
		field := "cluster " + c.Name
		if bare[0] == bare[1] {
			field += ".taints.timeAdded"
		}
		if shown[0] != shown[1] {
			out = append(out, matched(difference{Scenario: s.Index, Placement: "-", Field: field, KubeFleet: shown[0], Fleet: shown[1]}, subject{}, list))
		}
	}
	return out, nil
}
