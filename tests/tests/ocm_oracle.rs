//! Open Cluster Management's own placement controller as an oracle
//! (docs/conformance.md): OCM's controller (open-cluster-management.io/ocm,
//! pinned) runs against a real kube-apiserver with OCM's CRDs, Fleet is a
//! real trio with one agent per pool cluster, and the oracle program of
//! `conformance/ocm-placement/` applies a fixed seed's random OCM scenarios
//! to both and compares the PlacementDecisions, the Placement status and
//! conditions, and the events' text. Every difference not on the
//! written-down list (`conformance/ocm-placement/written-down.json`, each
//! with its reason) fails the test, printed.

use std::time::Instant;

use fleet_tests::oracle::OCM;

/// The generator's seed for the test suite.
const SEED: u64 = 1;
/// How many scenarios the test suite runs.
const SCENARIOS: u64 = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_decides_as_ocms_own_placement_controller() {
    let started = Instant::now();
    let sides = OCM.start_sides("ocm").await;
    let (success, stdout, stderr) = OCM.run(&sides, "--ocm-kubeconfig", SEED, SCENARIOS);
    let differences: Vec<&str> = stdout.split("\ndifference: ").skip(1).collect();
    assert!(success, "the oracle failed:\n{stdout}\n{stderr}");
    let (scenarios, found, written) = OCM.summary(&stdout).unwrap_or_else(|| panic!("no summary line:\n{stdout}"));
    for line in stdout.lines().filter(|l| l.starts_with("ocm-placement: ")) {
        eprintln!("{line}");
    }
    assert_eq!(scenarios, SCENARIOS, "{stdout}");
    assert_eq!(found, 0, "differences not written down:\n{}", differences.join("\ndifference: "));
    // The comparison was about something: most placements decided clusters.
    let numbers = OCM.numbers(&stdout, "compared");
    assert!(
        matches!(numbers[..], [placements, deciding, _, grouped] if placements >= SCENARIOS && deciding * 3 > placements && grouped > 0),
        "{numbers:?}"
    );
    eprintln!("{written} written-down differences; the test took {:.1?}", started.elapsed());
}
