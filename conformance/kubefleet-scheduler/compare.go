package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
)

// difference is one field on which KubeFleet and Fleet disagree about a
// placement.
type difference struct {
	Scenario  int
	Placement string
	Field     string
	KubeFleet string
	Fleet     string
	// WrittenDown is the id of the written-down entry it matches, if any.
	WrittenDown string
}

func (d difference) String() string {
	what := "difference"
	if d.WrittenDown != "" {
		what = "written down (" + d.WrittenDown + ")"
	}
	return fmt.Sprintf("%s: scenario %d placement %s: %s:\n  kubefleet: %s\n  fleet:     %s", what, d.Scenario, d.Placement, d.Field, d.KubeFleet, d.Fleet)
}

// writtenDown is one entry of the written-down list: differences in a
// field (its name, or a pattern of path.Match where `*` stands for any
// text) that are expected when a fact about the placement holds, and why.
type writtenDown struct {
	ID     string `json:"id"`
	Field  string `json:"field"`
	When   string `json:"when"`
	Reason string `json:"reason"`
}

// subject is what a fact looks at: the placement as generated and what
// each side shows of it.
type subject struct {
	placement obj
	// edit is the policy the placement was given, once it was edited.
	edit  obj
	kf    *observation
	fleet *observation
	// shown is what each side showed of the field (set by matched).
	shown [2]string
}

// facts are the conditions a written-down entry may name.
var facts = map[string]func(subject) bool{
	// Always: the difference is explained whatever the placement.
	"always": func(subject) bool { return true },
	// KubeFleet lists the filtered clusters in the order its parallel
	// filters finished: the ScheduleFailed entries (one per missing
	// cluster, reasons taken in the policy snapshot's order) agree as far
	// as that order does not matter: as many on both sides, the same
	// not-picked ones (those come first, sorted by score), and every other
	// one the reason of a cluster its side filtered.
	"filtered-order": func(s subject) bool {
		if s.kf == nil || s.fleet == nil || len(s.kf.Failed) != len(s.fleet.Failed) {
			return false
		}
		notPicked := func(o *observation) []string {
			var out []string
			for _, f := range o.Failed {
				if strings.Contains(f.Message, "does not score high enough") {
					out = append(out, f.Message)
				}
			}
			return out
		}
		if strings.Join(notPicked(s.kf), "|") != strings.Join(notPicked(s.fleet), "|") {
			return false
		}
		for _, o := range []*observation{s.kf, s.fleet} {
			reasons := map[string]bool{}
			for _, d := range o.Decisions {
				if !d.Selected {
					reasons[d.Reason] = true
				}
			}
			for _, f := range o.Failed {
				if !reasons[f.Message] {
					return false
				}
			}
		}
		return true
	},
}

// kubefleetReportsBindingsOnly: KubeFleet's policy snapshot lists only
// the chosen clusters (a run with nothing to pick rewrites the decisions
// from the bindings), the same chosen clusters with the same decisions as
// Fleet's, under the same Scheduled condition; Fleet's also lists
// clusters it left out.
func kubefleetReportsBindingsOnly(s subject) bool {
	if s.kf == nil || s.fleet == nil || len(s.kf.Decisions) == 0 {
		return false
	}
	fleetChosen := map[string]decision{}
	for _, d := range s.fleet.Decisions {
		if d.Selected {
			fleetChosen[d.Cluster] = d
		}
	}
	if len(fleetChosen) != len(s.kf.Decisions) || len(s.fleet.Decisions) == len(s.kf.Decisions) {
		return false
	}
	for _, d := range s.kf.Decisions {
		if !d.Selected || fleetChosen[d.Cluster] != d {
			return false
		}
	}
	return condText(s.kf.SnapshotScheduled) == condText(s.fleet.SnapshotScheduled)
}

// heartbeatReasons: the field is one cluster's decision, not selected on
// either side, which KubeFleet filtered for its stale heartbeat and Fleet
// for its heartbeat timeout.
var heartbeatReasons = [2]*regexp.Regexp{
	regexp.MustCompile(`^selected=false score=null reason="ClusterUnschedulable, cluster is not connected to the fleet: no recent heartbeat signals \(last received [0-9]+\.[0-9]{2} minutes ago\)"$`),
	regexp.MustCompile(`^selected=false score=null reason="ClusterUnschedulable, cluster is not eligible: cluster is not healthy \(HeartbeatTimeout\)"$`),
}

func heartbeatTimedOut(s subject) bool {
	return heartbeatReasons[0].MatchString(s.shown[0]) && heartbeatReasons[1].MatchString(s.shown[1])
}

// defaultPolicyGiven: the placement was made without a policy and edited
// to exactly the default one ({placementType: PickAll}); KubeFleet made a
// second policy snapshot for it and Fleet kept its first.
func defaultPolicyGiven(s subject) bool {
	spec, _ := s.placement["spec"].(obj)
	if spec["policy"] != nil || len(s.edit) != 1 || s.edit["placementType"] != "PickAll" || s.kf == nil || s.fleet == nil {
		return false
	}
	return s.kf.Snapshot == name(s.placement)+"-1" && s.fleet.Snapshot == name(s.placement)+"-0"
}

func init() {
	facts["kubefleet-reports-bindings-only"] = kubefleetReportsBindingsOnly
	facts["heartbeat-timed-out"] = heartbeatTimedOut
	facts["default-policy-given"] = defaultPolicyGiven
}

// loadWrittenDown reads the written-down list and checks every entry
// names a known fact.
func loadWrittenDown(file string) ([]writtenDown, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var list []writtenDown
	if err := json.Unmarshal(text, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, w := range list {
		if _, ok := facts[w.When]; !ok {
			return nil, fmt.Errorf("%s: entry %s: unknown fact %q", file, w.ID, w.When)
		}
		if w.Reason == "" || w.Field == "" {
			return nil, fmt.Errorf("%s: entry %s needs a field and a reason", file, w.ID)
		}
		if _, err := path.Match(w.Field, ""); err != nil {
			return nil, fmt.Errorf("%s: entry %s: field %q: %w", file, w.ID, w.Field, err)
		}
	}
	return list, nil
}

// compare lists every difference between the two sides' observations of
// one placement, each matched against the written-down list.
func compare(index int, p, edit obj, kf, fleet *observation, list []writtenDown) []difference {
	var out []difference
	add := func(field, a, b string) {
		if a == b {
			return
		}
		d := difference{Scenario: index, Placement: name(p), Field: field, KubeFleet: a, Fleet: b}
		out = append(out, matched(d, subject{placement: p, edit: edit, kf: kf, fleet: fleet}, list))
	}
	add("status.conditions."+kindOf(p).scheduled, condText(kf.Scheduled), condText(fleet.Scheduled))
	add("status.placementStatuses.ScheduleFailed", failedText(kf.Failed), failedText(fleet.Failed))
	add("policySnapshot.name", kf.Snapshot, fleet.Snapshot)
	add("policySnapshot.conditions.Scheduled", condText(kf.SnapshotScheduled), condText(fleet.SnapshotScheduled))
	add("policySnapshot.selected", strings.Join(kf.selected(), " "), strings.Join(fleet.selected(), " "))
	byCluster := func(o *observation) map[string]decision {
		m := map[string]decision{}
		for _, d := range o.Decisions {
			m[d.Cluster] = d
		}
		return m
	}
	a, b := byCluster(kf), byCluster(fleet)
	names := map[string]bool{}
	for c := range a {
		names[c] = true
	}
	for c := range b {
		names[c] = true
	}
	var sorted []string
	for c := range names {
		sorted = append(sorted, c)
	}
	sort.Strings(sorted)
	for _, c := range sorted {
		da, oka := a[c]
		db, okb := b[c]
		if !oka && !okb {
			continue
		}
		add("policySnapshot.targetClusters."+c, decisionText(da, oka), decisionText(db, okb))
	}
	add("bindings", bindingsText(kf.Bindings), bindingsText(fleet.Bindings))
	return out
}

// matched marks a difference with the first written-down entry whose
// field pattern matches and whose fact holds.
func matched(d difference, s subject, list []writtenDown) difference {
	s.shown = [2]string{d.KubeFleet, d.Fleet}
	for _, w := range list {
		if ok, _ := path.Match(w.Field, d.Field); ok && facts[w.When](s) {
			d.WrittenDown = w.ID
			break
		}
	}
	return d
}

func condText(c *cond) string {
	if c == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s %s %q", c.Status, c.Reason, c.Message)
}

func failedText(list []failed) string {
	var parts []string
	for _, f := range list {
		parts = append(parts, fmt.Sprintf("{cluster %q %s %q}", f.Cluster, f.Reason, f.Message))
	}
	return strings.Join(parts, " ")
}

func decisionText(d decision, ok bool) string {
	if !ok {
		return "(none)"
	}
	return fmt.Sprintf("selected=%v score=%s reason=%q", d.Selected, d.Score, d.Reason)
}

// bindingsText lists the bindings that are not being removed, with their
// target cluster and decision. Their state (Scheduled, then Bound) is
// rollout's, not the scheduler's, and is not compared: KubeFleet's rollout
// controller binds in its own time.
func bindingsText(list []binding) string {
	var parts []string
	for _, b := range list {
		if b.State != "Unscheduled" {
			parts = append(parts, fmt.Sprintf("{%s %s}", b.Cluster, decisionText(b.Decision, true)))
		}
	}
	return strings.Join(parts, " ")
}
