package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// settleTimeout bounds how long one batch of placements may take to settle.
const settleTimeout = 60 * time.Second

// page is one PlacementDecision as compared: name, group labels, clusters in order.
type page struct {
	Name       string
	GroupIndex string
	GroupName  string
	Clusters   []string
}

// condition is a status condition as compared (no transition time).
type cond struct {
	Status             string
	Reason             string
	Message            string
	ObservedGeneration int64
}

// observation is what one side shows of one placement.
type observation struct {
	Generation int64
	Selected   int64
	Groups     []interface{}
	Conditions map[string]cond
	Pages      []page
	Events     []event
}

// applyBoth runs f on both sides at once.
func applyBoth(ocm, fleet *side, f func(*side) error) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*side{ocm, fleet} {
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

// parallel runs the steps at once and returns what they wrote, or the
// first error.
func parallel(steps []func() (written, error)) ([]written, error) {
	out := make([]written, len(steps))
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = step()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// setUp writes a scenario's clusters, namespace, sets, bindings and
// scores, and returns the writes.
func setUp(ctx context.Context, s *scenario, sd *side) ([]written, error) {
	keep := func(string) bool { return false }
	if sd.name == "fleet" {
		keep = fleetOwnLabel
	}
	if err := sd.ensureNamespace(ctx, s.Namespace); err != nil {
		return nil, err
	}
	var steps []func() (written, error)
	for name, c := range s.Clusters {
		steps = append(steps, func() (written, error) { return sd.setCluster(ctx, name, c.Labels, c.Taints, keep) })
	}
	for _, o := range s.Sets {
		steps = append(steps, func() (written, error) { return sd.create(ctx, gvrSet, o) })
	}
	for _, o := range s.Bindings {
		steps = append(steps, func() (written, error) { return sd.create(ctx, gvrBinding, o) })
	}
	for _, o := range s.Scores {
		steps = append(steps, func() (written, error) { return sd.create(ctx, gvrAddOnScore, o) })
	}
	return parallel(steps)
}

// tearDown deletes what a scenario made (its namespace stays, with its
// events), waits until no PlacementDecision of it is left, and returns
// the deletions.
func tearDown(ctx context.Context, s *scenario, sd *side) ([]written, error) {
	var steps []func() (written, error)
	for _, batch := range s.Placements {
		for _, p := range batch {
			steps = append(steps, func() (written, error) { return sd.remove(ctx, gvrPlacement, s.Namespace, name(p)) })
		}
	}
	for _, o := range s.Bindings {
		steps = append(steps, func() (written, error) { return sd.remove(ctx, gvrBinding, s.Namespace, name(o)) })
	}
	for _, o := range s.Sets {
		steps = append(steps, func() (written, error) { return sd.remove(ctx, gvrSet, "", name(o)) })
	}
	for _, o := range s.Scores {
		steps = append(steps, func() (written, error) { return sd.remove(ctx, gvrAddOnScore, namespace(o), name(o)) })
	}
	deleted, err := parallel(steps)
	if err != nil {
		return nil, err
	}
	err = poll(ctx, settleTimeout, sd.name+": the decisions of "+s.Namespace+" gone", func() (bool, string, error) {
		pages, err := sd.list(ctx, gvrDecision, s.Namespace, "")
		if err != nil {
			return false, "", err
		}
		for _, p := range pages {
			if _, err := sd.remove(ctx, gvrDecision, s.Namespace, p.GetName()); err != nil {
				return false, "", err
			}
		}
		return len(pages) == 0, fmt.Sprintf("%d left", len(pages)), nil
	})
	return deleted, err
}

// clustersAlike lists how the two sides' ManagedClusters differ after a
// scenario's setup: labels (Fleet's own left out) and taints, compared as
// both sides show them.
func clustersAlike(ctx context.Context, s *scenario, ocm, fleet *side) ([]difference, error) {
	var out []difference
	for _, c := range pool {
		var shown [2]string
		for i, sd := range []*side{ocm, fleet} {
			u, err := sd.get(ctx, gvrCluster, "", c.Name)
			if err != nil {
				return nil, err
			}
			if u == nil {
				return nil, fmt.Errorf("%s: ManagedCluster %s is gone", sd.name, c.Name)
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
		}
		if shown[0] != shown[1] {
			out = append(out, difference{Scenario: s.Index, Placement: "-", Field: "cluster " + c.Name, OCM: shown[0], Fleet: shown[1]})
		}
	}
	return out, nil
}

// observe reads one placement on one side.
func observe(ctx context.Context, sd *side, ns, placement string) (*observation, error) {
	u, err := sd.get(ctx, gvrPlacement, ns, placement)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, fmt.Errorf("%s: placement %s/%s is gone", sd.name, ns, placement)
	}
	o := &observation{Generation: u.GetGeneration(), Conditions: map[string]cond{}}
	o.Selected, _, _ = unstructured.NestedInt64(u.Object, "status", "numberOfSelectedClusters")
	o.Groups, _, _ = unstructured.NestedSlice(u.Object, "status", "decisionGroups")
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]interface{})
		t, _ := m["type"].(string)
		gen, _ := m["observedGeneration"].(int64)
		str := func(k string) string { v, _ := m[k].(string); return v }
		o.Conditions[t] = cond{Status: str("status"), Reason: str("reason"), Message: str("message"), ObservedGeneration: gen}
	}
	pages, err := sd.list(ctx, gvrDecision, ns, placementLabel+"="+placement)
	if err != nil {
		return nil, err
	}
	for _, p := range pages {
		labels := p.GetLabels()
		pg := page{Name: p.GetName(), GroupIndex: labels[groupIndex], GroupName: labels[groupNameLabel]}
		decisions, _, _ := unstructured.NestedSlice(p.Object, "status", "decisions")
		for _, d := range decisions {
			m, _ := d.(map[string]interface{})
			c, _ := m["clusterName"].(string)
			pg.Clusters = append(pg.Clusters, c)
		}
		o.Pages = append(o.Pages, pg)
	}
	sort.Slice(o.Pages, func(i, j int) bool { return pageNumber(o.Pages[i].Name) < pageNumber(o.Pages[j].Name) })
	o.Events, err = sd.placementEvents(ctx, ns, placement)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// pageNumber is n of `<placement>-decision-<n>`, for ordering pages.
func pageNumber(name string) int {
	i := strings.LastIndex(name, "-")
	n := 0
	fmt.Sscanf(name[i+1:], "%d", &n)
	return n
}

// consistent says whether an observation is a finished pass: the
// Satisfied condition is there (observing the placement's generation, on
// Fleet: OCM leaves observedGeneration unset), the pages the status names
// exist and hold as many decisions as it counts, and (OCM always, Fleet
// when it decided any cluster) a ScoreUpdate was emitted.
func (o *observation) consistent(sideName string) bool {
	c, ok := o.Conditions["PlacementSatisfied"]
	if !ok || (sideName == "fleet" && c.ObservedGeneration != o.Generation) {
		return false
	}
	named := map[string]bool{}
	for _, g := range o.Groups {
		m, _ := g.(map[string]interface{})
		list, _ := m["decisions"].([]interface{})
		for _, n := range list {
			s, _ := n.(string)
			named[s] = true
		}
	}
	total := int64(0)
	for _, p := range o.Pages {
		if !named[p.Name] {
			return false
		}
		delete(named, p.Name)
		total += int64(len(p.Clusters))
	}
	if len(named) != 0 || total != o.Selected {
		return false
	}
	wantScore := sideName == "ocm" || total > 0
	if !wantScore {
		return true
	}
	for _, e := range o.Events {
		if e.Reason == "ScoreUpdate" {
			return true
		}
	}
	return false
}

func (o *observation) fingerprint() string {
	text, _ := json.Marshal(o)
	var events []string
	for _, e := range o.Events {
		events = append(events, e.Reason+"|"+e.Message)
	}
	return string(text) + strings.Join(events, "\n")
}

// settle waits until every placement of a batch is consistent on a side
// and nothing about them changed for `quiet`; returns the observations.
func settle(ctx context.Context, sd *side, ns string, batch []obj, quiet time.Duration) (map[string]*observation, error) {
	deadline := time.Now().Add(settleTimeout)
	var stableSince time.Time
	last := ""
	for {
		out := map[string]*observation{}
		all := true
		var prints []string
		for _, p := range batch {
			o, err := observe(ctx, sd, ns, name(p))
			if err != nil {
				return nil, err
			}
			out[name(p)] = o
			all = all && o.consistent(sd.name)
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
			return out, fmt.Errorf("%s: placements of %s not settled within %s", sd.name, ns, settleTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func name(o obj) string {
	m, _ := o["metadata"].(map[string]interface{})
	n, _ := m["name"].(string)
	return n
}

func namespace(o obj) string {
	m, _ := o["metadata"].(map[string]interface{})
	n, _ := m["namespace"].(string)
	return n
}
