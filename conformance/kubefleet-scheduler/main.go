// Command kubefleet-scheduler runs KubeFleet's own hub agent
// (github.com/kubefleet-dev/kubefleet, pinned in go.mod: its placement
// controller, which makes the policy snapshots, and its scheduler) in this
// process against a real kube-apiserver holding KubeFleet's CRDs, and
// compares it with Fleet on random but valid scenarios: each is applied to
// both, and the policy snapshots' cluster decisions, the bindings, the
// placement's Scheduled condition and its per-cluster ScheduleFailed
// entries are compared. It ends with one line:
//
//	kubefleet-scheduler: S scenarios, D differences, W written down
//
// where W counts differences that match an entry of the written-down list
// (written-down.json) and D the others. See docs/conformance.md.
//
// Usage:
//
//	kubefleet-scheduler --pool
//	    prints the pool clusters, one per line: name, then fleet-agent flags
//	kubefleet-scheduler --kubefleet-kubeconfig K --fleet-kubeconfig K --written-down F [--seed N] [--scenarios M] [--only I]
//
// Scenarios with a member of their own run fleetctl and fleet-agent from
// the directory $FLEET_BIN against $FLEET_ENDPOINTS with $FLEET_TLS_DIR.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// config is what a run is told.
type config struct {
	kfKubeconfig, fleetKubeconfig, crds, listPath string
	seed                                          int64
	scenarios                                     int
	only                                          string
	quiet                                         time.Duration
	verbose                                       bool
}

func main() {
	var c config
	showPool := flag.Bool("pool", false, "print the pool clusters (name, then fleet-agent flags) and exit")
	flag.StringVar(&c.kfKubeconfig, "kubefleet-kubeconfig", "", "kubeconfig of the kube-apiserver KubeFleet's hub agent runs against")
	flag.StringVar(&c.fleetKubeconfig, "fleet-kubeconfig", "", "kubeconfig of Fleet's Kubernetes API")
	flag.Int64Var(&c.seed, "seed", 1, "the generator's seed")
	flag.IntVar(&c.scenarios, "scenarios", 100, "how many scenarios to run")
	flag.StringVar(&c.only, "only", "", "run only these scenarios of the seed (comma-separated indexes)")
	flag.DurationVar(&c.quiet, "quiet", 300*time.Millisecond, "how long both sides must stay unchanged to count as settled")
	exe, _ := os.Executable()
	flag.StringVar(&c.crds, "crds", filepath.Join(filepath.Dir(exe), "crds"), "directory of KubeFleet's CRD files")
	flag.StringVar(&c.listPath, "written-down", "", "the written-down list (JSON)")
	flag.BoolVar(&c.verbose, "verbose", false, "print each scenario and what both sides showed")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", "0")
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(discard{})
	ctrl.SetLogger(logr.Discard())
	flag.Parse()

	if *showPool {
		printPool()
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "kubefleet-scheduler:", err)
		os.Exit(2)
	}
}

// discard drops the hub agent's logs.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func run(c config) error {
	if c.kfKubeconfig == "" || c.fleetKubeconfig == "" || c.listPath == "" {
		return fmt.Errorf("--kubefleet-kubeconfig, --fleet-kubeconfig and --written-down are required")
	}
	list, err := loadWrittenDown(c.listPath)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kf, kfConfig, err := newSide("kubefleet", c.kfKubeconfig)
	if err != nil {
		return err
	}
	fleet, _, err := newSide("fleet", c.fleetKubeconfig)
	if err != nil {
		return err
	}
	started := time.Now()
	if err := installCRDs(ctx, kfConfig, c.crds); err != nil {
		return err
	}
	if err := kf.ensureNamespace(ctx, "fleet-system"); err != nil {
		return err
	}
	props, err := mirrorPool(ctx, fleet, kf)
	if err != nil {
		return err
	}
	if hubCache, err = startHubAgent(ctx, kfConfig); err != nil {
		return err
	}
	fmt.Printf("kubefleet-scheduler: pool of %d clusters ready in %.1fs; seed %d\n", len(pool), time.Since(started).Seconds(), c.seed)

	g := &generator{seed: c.seed, props: props}
	var indexes []int
	for i := 0; i < c.scenarios && c.only == ""; i++ {
		indexes = append(indexes, i)
	}
	for _, item := range strings.Split(c.only, ",") {
		if i, err := strconv.Atoi(strings.TrimSpace(item)); err == nil {
			indexes = append(indexes, i)
		} else if item != "" {
			return fmt.Errorf("--only: %q is not a scenario index", item)
		}
	}
	defer func() {
		if tools != nil {
			_ = os.RemoveAll(tools.work)
		}
	}()
	runs, found, written := 0, 0, 0
	lastBeat := time.Now()
	for _, i := range indexes {
		// KubeFleet counts a member silent for five minutes as gone.
		if time.Since(lastBeat) > time.Minute {
			if err := heartbeat(ctx, kf); err != nil {
				return err
			}
			lastBeat = time.Now()
		}
		s := g.scenario(i)
		diffs, err := runScenario(ctx, s, kf, fleet, list, c.quiet, c.verbose)
		if err != nil {
			return fmt.Errorf("scenario %d: %w", i, err)
		}
		runs++
		for _, d := range diffs {
			fmt.Println(d)
			if d.WrittenDown != "" {
				written++
			} else {
				found++
			}
		}
	}
	fmt.Printf("kubefleet-scheduler: compared %d placements: %d selecting %d clusters in all, %d unfulfilled, %d with spread constraints\n",
		tally.placements, tally.selecting, tally.clusters, tally.unfulfilled, tally.spread)
	fmt.Printf("kubefleet-scheduler: of which ResourcePlacements: %d\n", tally.resourcePlacements)
	fmt.Printf("kubefleet-scheduler: after changes: compared %d placements again (clusters relabelled or retainted, PickN scaled)\n", tally.changed)
	fmt.Printf("kubefleet-scheduler: after policy edits: compared %d placements again\n", tally.edited)
	fmt.Printf("kubefleet-scheduler: after a member left or went silent: compared %d placements again\n", tally.members)
	fmt.Printf("kubefleet-scheduler: ran in %.1fs\n", time.Since(started).Seconds())
	fmt.Printf("kubefleet-scheduler: %d scenarios, %d differences, %d written down\n", runs, found, written)
	return nil
}

// tally counts what was compared, so a run shows it compared something.
var tally struct {
	placements, resourcePlacements, selecting, clusters, unfulfilled, spread, changed, edited, members int
}

func count(p obj, o *observation) {
	tally.placements++
	if p["kind"] == "ResourcePlacement" {
		tally.resourcePlacements++
	}
	if n := len(o.selected()); n > 0 {
		tally.selecting++
		tally.clusters += n
	}
	if o.Scheduled != nil && o.Scheduled.Status == "False" {
		tally.unfulfilled++
	}
	if spec, _ := p["spec"].(obj); spec != nil {
		if policy, _ := spec["policy"].(obj); policy != nil && policy["topologySpreadConstraints"] != nil {
			tally.spread++
		}
	}
}

func jsonIndent(v interface{}) string {
	text, _ := json.MarshalIndent(v, "", "  ")
	return string(text)
}

// hubCache is KubeFleet's hub agent's cache, once started.
var hubCache *agentCache

// runScenario applies a scenario to both sides, compares its placements
// once settled, and cleans up.

func runScenario(ctx context.Context, s *scenario, kf, fleet *side, list []writtenDown, quiet time.Duration, verbose bool) ([]difference, error) {
	if verbose {
		fmt.Printf("scenario %d:\n%s\n", s.Index, jsonIndent(s))
	}
	var written map[string]string
	err := applyBoth(kf, fleet, func(sd *side) error {
		versions, err := setUp(ctx, s, sd)
		if sd == kf {
			written = versions
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var agent *runningAgent
	if s.Member != nil {
		if tools == nil {
			if tools, err = newFleetTools(); err != nil {
				return nil, err
			}
		}
		var version string
		agent, version, err = joinMember(ctx, s.Member, kf, fleet)
		if err != nil {
			return nil, err
		}
		defer agent.stop()
		written[s.Member.Name] = version
	}
	diffs, err := clustersAlike(ctx, s, kf, fleet, list)
	if err != nil {
		return nil, err
	}
	// KubeFleet's scheduler reads the clusters from its manager's cache:
	// they must be as set up there before a placement is made.
	if err := hubCache.caughtUp(ctx, written); err != nil {
		return nil, err
	}
	// A placement one side refuses is a difference; the other side's is
	// removed again and neither is compared.
	var refused [2]map[string]string
	_ = applyBoth(kf, fleet, func(sd *side) error {
		i := sideIndex(sd, kf)
		refused[i] = map[string]string{}
		for _, p := range s.Placements {
			if err := sd.create(ctx, kindOf(p).placement, p); err != nil {
				refused[i][name(p)] = err.Error()
			}
		}
		return nil
	})
	var placements []obj
	for _, p := range s.Placements {
		a, b := refused[0][name(p)], refused[1][name(p)]
		if a == "" && b == "" {
			placements = append(placements, p)
			continue
		}
		diffs = append(diffs, matched(difference{Scenario: s.Index, Placement: name(p), Field: "created",
			KubeFleet: orText(a, "created"), Fleet: orText(b, "created")}, subject{placement: p}, list))
		for _, sd := range []*side{kf, fleet} {
			if err := sd.remove(ctx, kindOf(p).placement, kindOf(p).namespace, name(p)); err != nil {
				return nil, err
			}
		}
	}
	var seen [2]map[string]*observation
	var errs [2]error
	_ = applyBoth(kf, fleet, func(sd *side) error {
		i := sideIndex(sd, kf)
		seen[i], errs[i] = settle(ctx, sd, placements, quiet)
		return nil
	})
	diffs = append(diffs, settleFailures(s, "*", errs)...)
	for _, p := range placements {
		a, b := seen[0][name(p)], seen[1][name(p)]
		if a == nil || b == nil {
			continue
		}
		if verbose {
			fmt.Println(jsonIndent(map[string]interface{}{"placement": name(p), "kubefleet": a, "fleet": b}))
		}
		count(p, a)
		diffs = append(diffs, compare(s.Index, p, nil, a, b, list)...)
	}
	if len(placements) > 0 && errs[0] == nil && errs[1] == nil {
		changed, err := runChange(ctx, s, kf, fleet, placements, list, quiet, verbose)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, changed...)
		if len(s.Edit) > 0 && !settleFailed(changed) {
			edited, err := runEdit(ctx, s, kf, fleet, placements, list, quiet, verbose)
			if err != nil {
				return nil, err
			}
			diffs = append(diffs, edited...)
		}
		if s.Member != nil && !settleFailed(diffs) {
			ended, err := runMemberEnd(ctx, s, agent, kf, fleet, placements, list, quiet, verbose)
			if err != nil {
				return nil, fmt.Errorf("%w\nthe agent of %s:\n%s", err, s.Member.Name, agent.tail())
			}
			diffs = append(diffs, ended...)
		}
	}
	if err := applyBoth(kf, fleet, func(sd *side) error { return tearDown(ctx, s, sd) }); err != nil {
		return nil, err
	}
	if s.Member != nil {
		agent.stop()
		if err := removeMember(ctx, s.Member, kf, fleet); err != nil {
			return nil, err
		}
	}
	return diffs, nil
}

// runMemberEnd makes a scenario's member leave or go silent once the
// placements settled and their bindings are bound on both sides, and
// compares them all again; their differences name the placement "(after
// the member left)" or "(after the member went silent)".
func runMemberEnd(ctx context.Context, s *scenario, agent *runningAgent, kf, fleet *side, placements []obj, list []writtenDown, quiet time.Duration, verbose bool) ([]difference, error) {
	suffix := " (after the member went silent)"
	if s.Member.Leaves {
		suffix = " (after the member left)"
	}
	if diffs := bothBound(ctx, s, "*"+suffix, kf, fleet, placements); diffs != nil {
		return diffs, nil
	}
	if s.Member.Leaves {
		if err := removeMember(ctx, s.Member, kf, fleet); err != nil {
			return nil, err
		}
	} else {
		version, err := silenceMember(ctx, s.Member, agent, kf, fleet)
		if err != nil {
			return nil, err
		}
		if err := hubCache.caughtUp(ctx, map[string]string{s.Member.Name: version}); err != nil {
			return nil, err
		}
	}
	if quiet < changeQuiet {
		quiet = changeQuiet
	}
	return settleAndCompare(ctx, s, kf, fleet, placements, list, quiet, verbose, suffix, &tally.members)
}

// afterTheChange names the placements compared after a scenario's change.
const afterTheChange = "* (after the change)"

// changeQuiet is the least quiet time after a change: a cluster change
// moves no placement's generation, so only time tells that both
// schedulers have looked at it.
const changeQuiet = time.Second

// runChange applies a scenario's change to both sides once its placements
// settled, and compares them again; their differences name the placement
// "(after the change)".
func runChange(ctx context.Context, s *scenario, kf, fleet *side, placements []obj, list []writtenDown, quiet time.Duration, verbose bool) ([]difference, error) {
	if quiet < changeQuiet {
		quiet = changeQuiet
	}
	// Scaling in drops Scheduled bindings before Bound ones, and each
	// side binds in its own time: the change starts from bindings bound on
	// both, and scaling waits for the bindings the cluster change made.
	if diffs := bothBound(ctx, s, afterTheChange, kf, fleet, placements); diffs != nil {
		return diffs, nil
	}
	written := map[string]string{}
	err := applyBoth(kf, fleet, func(sd *side) error {
		for _, c := range pool {
			setup, ok := s.Change.Clusters[c.Name]
			if !ok {
				continue
			}
			version, err := sd.setMember(ctx, c.Name, setup.Labels, setup.Taints, fleetOwnLabel)
			if err != nil {
				return err
			}
			if sd == kf {
				written[c.Name] = version
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := hubCache.caughtUp(ctx, written); err != nil {
		return nil, err
	}
	if len(s.Change.Scale) > 0 {
		var errs [2]error
		_ = applyBoth(kf, fleet, func(sd *side) error {
			_, errs[sideIndex(sd, kf)] = settle(ctx, sd, placements, quiet)
			return nil
		})
		if diffs := settleFailures(s, afterTheChange, errs); diffs != nil {
			return diffs, nil
		}
		if diffs := bothBound(ctx, s, afterTheChange, kf, fleet, placements); diffs != nil {
			return diffs, nil
		}
	}
	err = applyBoth(kf, fleet, func(sd *side) error {
		for _, p := range placements {
			if n, ok := s.Change.Scale[name(p)]; ok {
				if err := sd.scale(ctx, p, n); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return settleAndCompare(ctx, s, kf, fleet, placements, list, quiet, verbose, " (after the change)", &tally.changed)
}

// afterTheEdit names the placements compared after a scenario's policy
// edits.
const afterTheEdit = "* (after the policy edit)"

// runEdit gives some placements new policies once the change settled and
// their bindings are bound on both sides, and compares them all again;
// their differences name the placement "(after the policy edit)".
func runEdit(ctx context.Context, s *scenario, kf, fleet *side, placements []obj, list []writtenDown, quiet time.Duration, verbose bool) ([]difference, error) {
	if diffs := bothBound(ctx, s, afterTheEdit, kf, fleet, placements); diffs != nil {
		return diffs, nil
	}
	// An edit one side refuses is a difference.
	var refused [2]map[string]string
	_ = applyBoth(kf, fleet, func(sd *side) error {
		i := sideIndex(sd, kf)
		refused[i] = map[string]string{}
		for _, p := range placements {
			if policy, ok := s.Edit[name(p)]; ok {
				if err := sd.setPolicy(ctx, p, policy); err != nil {
					refused[i][name(p)] = err.Error()
				}
			}
		}
		return nil
	})
	var diffs []difference
	for _, p := range placements {
		if a, b := refused[0][name(p)], refused[1][name(p)]; a != "" || b != "" {
			diffs = append(diffs, matched(difference{Scenario: s.Index, Placement: name(p), Field: "edited",
				KubeFleet: orText(a, "edited"), Fleet: orText(b, "edited")}, subject{placement: p}, list))
		}
	}
	if diffs != nil {
		return diffs, nil
	}
	s.edited = true
	return settleAndCompare(ctx, s, kf, fleet, placements, list, quiet, verbose, " (after the policy edit)", &tally.edited)
}

// settleAndCompare waits until the placements settled on both sides and
// compares them, naming each difference's placement with `suffix` and
// counting the placements compared in `counter`.
func settleAndCompare(ctx context.Context, s *scenario, kf, fleet *side, placements []obj, list []writtenDown, quiet time.Duration, verbose bool, suffix string, counter *int) ([]difference, error) {
	var seen [2]map[string]*observation
	var errs [2]error
	_ = applyBoth(kf, fleet, func(sd *side) error {
		i := sideIndex(sd, kf)
		seen[i], errs[i] = settle(ctx, sd, placements, quiet)
		return nil
	})
	diffs := settleFailures(s, "*"+suffix, errs)
	for _, p := range placements {
		a, b := seen[0][name(p)], seen[1][name(p)]
		if a == nil || b == nil {
			continue
		}
		if verbose {
			fmt.Println(jsonIndent(map[string]interface{}{"placement": name(p) + suffix, "kubefleet": a, "fleet": b}))
		}
		*counter++
		var edit obj
		if s.edited {
			edit = s.Edit[name(p)]
		}
		for _, d := range compare(s.Index, p, edit, a, b, list) {
			d.Placement += suffix
			diffs = append(diffs, d)
		}
	}
	return diffs, nil
}

// settleFailed says whether differences include a side that did not settle.
func settleFailed(diffs []difference) bool {
	for _, d := range diffs {
		if d.Field == "settled" {
			return true
		}
	}
	return false
}

// settleFailures turns each side's failure to settle into a difference
// about `placements`.
func settleFailures(s *scenario, placements string, errs [2]error) []difference {
	var diffs []difference
	for i, err := range errs {
		if err != nil {
			d := difference{Scenario: s.Index, Placement: placements, Field: "settled", KubeFleet: "settled", Fleet: "settled"}
			if i == 0 {
				d.KubeFleet = err.Error()
			} else {
				d.Fleet = err.Error()
			}
			diffs = append(diffs, d)
		}
	}
	return diffs
}

// bothBound waits until every binding of the placements is Bound (or being
// removed) on both sides; a side that does not get there is a difference.
func bothBound(ctx context.Context, s *scenario, phase string, kf, fleet *side, placements []obj) []difference {
	var errs [2]error
	_ = applyBoth(kf, fleet, func(sd *side) error {
		errs[sideIndex(sd, kf)] = poll(ctx, settleTimeout, sd.name+": every binding Bound", func() (bool, string, error) {
			for _, p := range placements {
				bindings, err := sd.list(ctx, kindOf(p).binding, kindOf(p).namespace, parentLabel+"="+name(p))
				if err != nil {
					return false, "", err
				}
				for _, b := range bindings {
					if state, _, _ := unstructured.NestedString(b.Object, "spec", "state"); state == "Scheduled" {
						return false, b.GetName() + " is Scheduled", nil
					}
				}
			}
			return true, "", nil
		})
		return nil
	})
	return settleFailures(s, phase, errs)
}

// sideIndex is 0 for KubeFleet's side, 1 for Fleet's.
func sideIndex(sd, kf *side) int {
	if sd == kf {
		return 0
	}
	return 1
}

// orText is text, or `otherwise` when text is empty.
func orText(text, otherwise string) string {
	if text == "" {
		return otherwise
	}
	return text
}
