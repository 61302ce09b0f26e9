// Command ocm-placement runs Open Cluster Management's own placement
// controller (open-cluster-management.io/ocm, pinned in go.mod) in this
// process against a real kube-apiserver holding OCM's CRDs, and compares
// it with Fleet on random but valid OCM scenarios: each is applied to both,
// and the PlacementDecisions, the Placement status and conditions, and
// the events' text are compared. It ends with one line:
//
//	ocm-placement: S scenarios, D differences, W written down
//
// where W counts differences that match an entry of the written-down list
// (written-down.json) and D the others. See docs/conformance.md.
//
// Usage:
//
//	ocm-placement --pool
//	    prints the pool clusters, one per line: name, then fleet-agent flags
//	ocm-placement --ocm-kubeconfig K --fleet-kubeconfig K [--seed N] [--scenarios M] [--only I]
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

	"k8s.io/klog/v2"
)

func main() {
	showPool := flag.Bool("pool", false, "print the pool clusters (name, then fleet-agent flags) and exit")
	ocmKubeconfig := flag.String("ocm-kubeconfig", "", "kubeconfig of the kube-apiserver OCM's controller runs against")
	fleetKubeconfig := flag.String("fleet-kubeconfig", "", "kubeconfig of Fleet's Kubernetes API")
	seed := flag.Int64("seed", 1, "the generator's seed")
	scenarios := flag.Int("scenarios", 100, "how many scenarios to run")
	only := flag.String("only", "", "run only these scenarios of the seed (comma-separated indexes)")
	quiet := flag.Duration("quiet", 150*time.Millisecond, "how long both sides must stay unchanged to count as settled")
	exe, _ := os.Executable()
	crds := flag.String("crds", filepath.Join(filepath.Dir(exe), "crds"), "directory of OCM's CRD files")
	listPath := flag.String("written-down", "", "the written-down list (JSON)")
	verbose := flag.Bool("verbose", false, "print each scenario and what both sides showed")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", "0")
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	flag.Parse()

	if *showPool {
		printPool()
		return
	}
	if err := run(*ocmKubeconfig, *fleetKubeconfig, *crds, *listPath, *seed, *scenarios, *only, *quiet, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "ocm-placement:", err)
		os.Exit(2)
	}
}

func run(ocmKubeconfig, fleetKubeconfig, crds, listPath string, seed int64, scenarios int, only string, quiet time.Duration, verbose bool) error {
	if ocmKubeconfig == "" || fleetKubeconfig == "" || listPath == "" {
		return fmt.Errorf("--ocm-kubeconfig, --fleet-kubeconfig and --written-down are required")
	}
	list, err := loadWrittenDown(listPath)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ocm, ocmConfig, err := newSide("ocm", ocmKubeconfig)
	if err != nil {
		return err
	}
	fleet, _, err := newSide("fleet", fleetKubeconfig)
	if err != nil {
		return err
	}
	started := time.Now()
	if err := installCRDs(ctx, ocmConfig, crds); err != nil {
		return err
	}
	if err := ocmSets(ctx, ocm); err != nil {
		return err
	}
	poolClaims, err := mirrorPool(ctx, fleet, ocm)
	if err != nil {
		return err
	}
	for _, c := range pool {
		for _, sd := range []*side{ocm, fleet} {
			if err := sd.ensureNamespace(ctx, c.Name); err != nil {
				return err
			}
		}
	}
	caches, err := startOCM(ctx, ocmConfig)
	if err != nil {
		return err
	}
	fmt.Printf("ocm-placement: pool of %d clusters ready in %.1fs; seed %d\n", len(pool), time.Since(started).Seconds(), seed)

	// Taints were added two hours before the run: tolerations of one hour
	// have run out, those of ten days have not.
	g := &generator{seed: seed, claims: poolClaims, taintAdded: time.Now().Add(-2 * time.Hour).Truncate(time.Second)}
	var indexes []int
	for i := 0; i < scenarios && only == ""; i++ {
		indexes = append(indexes, i)
	}
	for _, item := range strings.Split(only, ",") {
		if i, err := strconv.Atoi(strings.TrimSpace(item)); err == nil {
			indexes = append(indexes, i)
		} else if item != "" {
			return fmt.Errorf("--only: %q is not a scenario index", item)
		}
	}
	run, found, written := 0, 0, 0
	for _, i := range indexes {
		s := g.scenario(i)
		diffs, err := runScenario(ctx, s, ocm, fleet, caches, list, quiet, verbose)
		if err != nil {
			return fmt.Errorf("scenario %d: %w", i, err)
		}
		run++
		for _, d := range diffs {
			fmt.Println(d)
			if d.WrittenDown != "" {
				written++
			} else {
				found++
			}
		}
	}
	var times []string
	for _, phase := range []string{"set up", "OCM caches", "settle", "tear down"} {
		times = append(times, fmt.Sprintf("%s %.1fs", phase, phases[phase].Seconds()))
	}
	fmt.Printf("ocm-placement: compared %d placements: %d deciding %d clusters in all, %d with several decision groups\n",
		tally.placements, tally.deciding, tally.clusters, tally.grouped)
	fmt.Printf("ocm-placement: ran in %.1fs (%s)\n", time.Since(started).Seconds(), strings.Join(times, ", "))
	fmt.Printf("ocm-placement: %d scenarios, %d differences, %d written down\n", run, found, written)
	return nil
}

// runScenario applies a scenario to both sides, compares each batch of
// placements once settled, and cleans up.
func jsonIndent(v interface{}) (string, error) {
	text, err := json.MarshalIndent(v, "", "  ")
	return string(text), err
}

// phases adds up how long each phase of the scenarios took.
var phases = map[string]time.Duration{}

// tally counts what was compared, so a run shows it compared something:
// placements, those OCM had decide clusters, those with several decision
// groups, and the clusters decided in all.
var tally struct{ placements, deciding, grouped, clusters int }

func count(o *observation) {
	tally.placements++
	if o.Selected > 0 {
		tally.deciding++
	}
	if len(o.Groups) > 1 {
		tally.grouped++
	}
	tally.clusters += int(o.Selected)
}

// timed adds the time since `start` to a phase.
func timed(phase string, start time.Time) {
	phases[phase] += time.Since(start)
}

func runScenario(ctx context.Context, s *scenario, ocm, fleet *side, caches *ocmCaches, list []writtenDown, quiet time.Duration, verbose bool) ([]difference, error) {
	if verbose {
		text, _ := jsonIndent(s)
		fmt.Printf("scenario %d:\n%s\n", s.Index, text)
	}
	// What OCM's controller must have seen before a batch is scheduled:
	// the previous scenario gone, this one's setup.
	var ocmWrites []written
	start := time.Now()
	err := applyBoth(ocm, fleet, func(sd *side) error {
		writes, err := setUp(ctx, s, sd)
		if sd == ocm {
			ocmWrites = writes
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	diffs, err := clustersAlike(ctx, s, ocm, fleet)
	if err != nil {
		return nil, err
	}
	timed("set up", start)
	for _, batch := range s.Placements {
		start = time.Now()
		if err := caches.caughtUp(ctx, ocm, ocmWrites); err != nil {
			return nil, err
		}
		timed("OCM caches", start)
		start = time.Now()
		err := applyBoth(ocm, fleet, func(sd *side) error {
			for _, p := range batch {
				if _, err := sd.create(ctx, gvrPlacement, p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		var seen [2]map[string]*observation
		var errs [2]error
		_ = applyBoth(ocm, fleet, func(sd *side) error {
			i := 0
			if sd == fleet {
				i = 1
			}
			seen[i], errs[i] = settle(ctx, sd, s.Namespace, batch, quiet)
			return nil
		})
		timed("settle", start)
		for i, err := range errs {
			if err != nil {
				d := difference{Scenario: s.Index, Placement: "*", Field: "settled", OCM: "settled", Fleet: "settled"}
				if i == 0 {
					d.OCM = err.Error()
				} else {
					d.Fleet = err.Error()
				}
				diffs = append(diffs, d)
			}
		}
		for _, p := range batch {
			a, b := seen[0][name(p)], seen[1][name(p)]
			if a == nil || b == nil {
				continue
			}
			if verbose {
				text, _ := jsonIndent(map[string]interface{}{"placement": name(p), "ocm": a, "fleet": b})
				fmt.Println(text)
			}
			count(a)
			diffs = append(diffs, compare(s.Index, p, a, b, list)...)
		}
	}
	start = time.Now()
	defer timed("tear down", start)
	err = applyBoth(ocm, fleet, func(sd *side) error {
		writes, err := tearDown(ctx, s, sd)
		if sd == ocm && err == nil {
			err = caches.caughtUp(ctx, ocm, writes)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return diffs, nil
}
