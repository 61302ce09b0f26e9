package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
)

// difference is one field on which OCM and Fleet disagree about a placement.
type difference struct {
	Scenario  int
	Placement string
	Field     string
	OCM       string
	Fleet     string
	// WrittenDown is the id of the written-down entry it matches, if any.
	WrittenDown string
}

func (d difference) String() string {
	what := "difference"
	if d.WrittenDown != "" {
		what = "written down (" + d.WrittenDown + ")"
	}
	return fmt.Sprintf("%s: scenario %d placement %s: %s:\n  ocm:   %s\n  fleet: %s", what, d.Scenario, d.Placement, d.Field, d.OCM, d.Fleet)
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
	ocm       *observation
	fleet     *observation
}

// facts are the conditions a written-down entry may name.
var facts = map[string]func(subject) bool{
	// OCM left the conditions' observedGeneration unset; Fleet set it to
	// the placement's generation.
	"ocm-leaves-observed-generation-unset": func(s subject) bool {
		for t, c := range s.ocm.Conditions {
			if c.ObservedGeneration != 0 || s.fleet.Conditions[t].ObservedGeneration != s.fleet.Generation {
				return false
			}
		}
		return true
	},
	// The placement has spread constraints.
	"spread-constraints": func(s subject) bool {
		policy, _ := spec(s.placement)["spreadPolicy"].(obj)
		list, _ := policy["spreadConstraints"].([]interface{})
		return len(list) > 0
	},
	// Fleet's last ScoreUpdate gave the totals of the pass that changed
	// the decisions; OCM's gives those of the pass after, once Steady
	// counts the decided clusters: they agree once Steady's weight × 100 is
	// added to Fleet's total of each decided cluster. (A placement that
	// never decided a cluster has none on Fleet.)
	"score-update-after-steady": func(s subject) bool {
		weight := steadyWeight(spec(s.placement))
		if s.fleet.Selected == 0 && lastMessage(s.fleet.Events, "ScoreUpdate") == "" {
			// Fleet never decided a cluster: no change, no ScoreUpdate.
			return true
		}
		decided := map[string]bool{}
		for _, p := range s.fleet.Pages {
			for _, c := range p.Clusters {
				decided[c] = true
			}
		}
		var adjusted []string
		for _, token := range strings.Fields(lastMessage(s.fleet.Events, "ScoreUpdate")) {
			i := strings.LastIndex(token, ":")
			total, err := strconv.ParseInt(token[i+1:], 10, 64)
			if i < 0 || err != nil {
				return false
			}
			if decided[token[:i]] {
				total += 100 * weight
			}
			adjusted = append(adjusted, fmt.Sprintf("%s:%d", token[:i], total))
		}
		return sortedTokens(strings.Join(adjusted, " ")) == sortedTokens(lastMessage(s.ocm.Events, "ScoreUpdate"))
	},
	// OCM emits DecisionUpdate for every page on every pass that leaves it
	// as it is; Fleet only when a page changes: OCM's are exactly its final
	// pages', and Fleet's are among them.
	"decision-update-every-pass": func(s subject) bool {
		ocm := distinct(s.ocm.Events, "DecisionUpdate")
		final := map[string]bool{}
		for _, p := range s.ocm.Pages {
			final[p.Name] = true
		}
		for _, m := range ocm {
			if !final[strings.Fields(m + " x")[1]] {
				return false
			}
		}
		set := map[string]bool{}
		for _, m := range ocm {
			set[m] = true
		}
		for _, m := range distinct(s.fleet.Events, "DecisionUpdate") {
			if !set[m] {
				return false
			}
		}
		return true
	},
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
func compare(index int, p obj, ocm, fleet *observation, list []writtenDown) []difference {
	var out []difference
	add := func(field, a, b string) {
		if a == b {
			return
		}
		d := difference{Scenario: index, Placement: name(p), Field: field, OCM: a, Fleet: b}
		s := subject{placement: p, ocm: ocm, fleet: fleet}
		for _, w := range list {
			if matched, _ := path.Match(w.Field, field); matched && facts[w.When](s) {
				d.WrittenDown = w.ID
				break
			}
		}
		out = append(out, d)
	}
	add("decisions", pagesText(ocm.Pages), pagesText(fleet.Pages))
	add("status.numberOfSelectedClusters", fmt.Sprint(ocm.Selected), fmt.Sprint(fleet.Selected))
	add("status.decisionGroups", groupsText(ocm.Groups), groupsText(fleet.Groups))
	for _, t := range []string{"PlacementSatisfied", "PlacementMisconfigured"} {
		add("status.conditions."+t, condText(ocm.Conditions, t), condText(fleet.Conditions, t))
		add("status.conditions."+t+".observedGeneration",
			fmt.Sprint(ocm.Conditions[t].ObservedGeneration), fmt.Sprint(fleet.Conditions[t].ObservedGeneration))
	}
	for _, reason := range []string{"DecisionCreate", "DecisionUpdate"} {
		add("events."+reason, strings.Join(distinct(ocm.Events, reason), " | "), strings.Join(distinct(fleet.Events, reason), " | "))
	}
	add("events.ScoreUpdate", sortedTokens(lastMessage(ocm.Events, "ScoreUpdate")), sortedTokens(lastMessage(fleet.Events, "ScoreUpdate")))
	return out
}

func pagesText(pages []page) string {
	var parts []string
	for _, p := range pages {
		parts = append(parts, fmt.Sprintf("%s[group %s %q]%v", p.Name, p.GroupIndex, p.GroupName, p.Clusters))
	}
	return strings.Join(parts, " ")
}

func groupsText(groups []interface{}) string {
	var parts []string
	for _, g := range groups {
		m, _ := g.(map[string]interface{})
		parts = append(parts, fmt.Sprintf("{index %v name %q decisions %v count %v}",
			m["decisionGroupIndex"], m["decisionGroupName"], m["decisions"], m["clustersCount"]))
	}
	return strings.Join(parts, " ")
}

func condText(conditions map[string]cond, t string) string {
	c, ok := conditions[t]
	if !ok {
		return "(none)"
	}
	return fmt.Sprintf("%s %s %q", c.Status, c.Reason, c.Message)
}

// distinct lists the distinct messages of a reason, sorted.
func distinct(events []event, reason string) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range events {
		if e.Reason == reason && !seen[e.Message] {
			seen[e.Message] = true
			out = append(out, e.Message)
		}
	}
	sort.Strings(out)
	return out
}

// lastMessage is the message of the latest event of a reason ("" if none).
func lastMessage(events []event, reason string) string {
	text := ""
	for _, e := range events {
		if e.Reason == reason {
			text = e.Message
		}
	}
	return text
}

// sortedTokens puts the space-separated `name:score` items of a
// ScoreUpdate message in name order (OCM writes them in map order).
func sortedTokens(message string) string {
	tokens := strings.Fields(message)
	sort.Strings(tokens)
	return strings.Join(tokens, " ")
}

func spec(p obj) obj {
	s, _ := p["spec"].(obj)
	return s
}

// steadyWeight is Steady's weight in a placement's prioritizer policy.
func steadyWeight(s obj) int64 {
	policy, _ := s["prioritizerPolicy"].(obj)
	weight := int64(1)
	if policy["mode"] == "Exact" {
		weight = 0
	}
	configs, _ := policy["configurations"].([]interface{})
	for _, c := range configs {
		m, _ := c.(obj)
		coordinate, _ := m["scoreCoordinate"].(obj)
		if coordinate["builtIn"] == "Steady" && coordinate["type"] != "AddOn" {
			weight = 1
			if w, ok := m["weight"].(int64); ok {
				weight = w
			}
		}
	}
	return weight
}
